//! kwire: a Kafka wire-protocol inspector.
