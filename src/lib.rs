//! kwire: a Kafka wire-protocol inspector, as a library under its command line.
//!
//! The data's path: [`input`] (pcap/pcapng captures, TCP reassembly, TLS, hex dumps, Kafka
//! framing) -> [`session`] (pairing responses with requests, what a connection learned)
//! -> [`decode`] (a schema-driven walk of each frame) -> [`tree`] (the annotated object
//! tree with byte offsets) -> the sinks: [`render`] and [`page`] (text, JSON, summaries,
//! byte grids, Markdown/HTML pages), [`filter`] (the display filter), [`export`]
//! (Parquet), [`traffic`] (statistics). [`run`] drives a capture through that path on one
//! thread or a pool ([`pipeline`], [`memory`]) into a sink. Below everything: [`schema`]
//! (Kafka's message definitions), [`wire`] (nom parsers of Kafka's primitives), [`text`]
//! (hex, quoting, base64 ids), [`errors`] (Kafka's error codes). Beside the path: [`log`]
//! (Kafka log directories), [`values`] and [`encode`] (a message's fields as JSON values
//! and back to bytes), [`diff`] (what changes between versions), [`wireshark`] (a Lua
//! dissector). On top: [`cli`], the command line. docs/architecture.md draws the tree.

pub mod cli;
pub mod decode;
pub mod diff;
pub mod encode;
pub mod errors;
pub mod export;
pub mod filter;
pub mod input;
pub mod log;
pub mod memory;
pub mod page;
pub mod pipeline;
pub mod render;
pub mod run;
pub mod schema;
pub mod session;
pub mod text;
pub mod traffic;
pub mod tree;
pub mod values;
pub mod wire;
pub mod wireshark;
