//! kwire: a Kafka wire-protocol inspector.
//!
//! The data's path: [`schema`] (Kafka's message definitions) -> [`wire`] (nom parsers
//! for Kafka's primitives) -> [`decode`] (a schema-driven walk of a frame into a
//! [`tree`]) -> [`render`] (text, JSON, summaries). Inputs (captures, hex dumps) sit on
//! the side in [`input`]; [`values`] and [`encode`] turn a decoded message into plain
//! JSON values and back into bytes; [`page`] lays out the reference pages.

pub mod cli;
pub mod decode;
pub mod diff;
pub mod encode;
pub mod errors;
pub mod explore;
pub mod export;
pub mod filter;
pub mod input;
pub mod log;
pub mod memory;
pub mod page;
pub mod pipeline;
pub mod render;
pub mod schema;
pub mod session;
pub mod stats;
pub mod tree;
pub mod values;
pub mod wire;
pub mod wireshark;
