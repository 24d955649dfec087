//! kwire: a Kafka wire-protocol inspector.
pub mod input;
