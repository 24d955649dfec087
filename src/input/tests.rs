//! Tests for the input layer.
