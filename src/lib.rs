//! kwire: a Kafka wire-protocol inspector, as a library.
//!
//! kwire decodes Kafka frames (requests and responses of every API key and version Kafka
//! has shipped) by walking Kafka's own message definitions over the bytes, and gives each
//! message as a tree of named, typed values with byte offsets and lengths. The `kwire`
//! command line is one user of this crate; the terminal explorer, live capture and the
//! capture report are others.
//!
//! # The data's path
//!
//! ```text
//!  capture file ──> input ──> session ──> decode ──> tree ──> render / filter / export / traffic
//!  (pcap, pcapng)   records,   pairing,    schema-    Message,  text, JSON, summary, values,
//!  hex, raw bytes   IP, TCP,   topic       driven     Node:     hexdump, pages; display
//!                   framing,   names,      walk       offsets,  filters; Parquet; counts
//!                   TLS        guesses                 values
//!                       │
//!                       └──> index: every message's place, for random access
//!
//!  below them all:  schema (Kafka's message definitions)   wire (nom parsers of primitives)
//! ```
//!
//! - [`input`]: capture files to whole Kafka frames with their context
//!   ([`input::read_capture`]: pcap/pcapng records, link/IP/TCP, reassembly, Kafka framing,
//!   resynchronisation, TLS decryption with key logs, SASL tokens); hex dumps to bytes.
//! - [`session`]: frames to decoded messages in capture order, each response paired with
//!   its request so it decodes with the request's api_key and api_version
//!   ([`session::Session`]).
//! - [`decode`]: one frame to a [`tree::Message`] ([`decode::decode`]), records,
//!   compression and nested protocols included.
//! - [`tree`]: the message tree every output reads ([`tree::Message`], [`tree::Node`],
//!   [`tree::Value`]) and the arena its decompressed buffers live in ([`tree::Buffers`]).
//! - [`index`]: a capture opened for random access ([`index::Capture`]): any message,
//!   by its number, decoded alone.
//! - [`schema`]: Kafka's message definitions, embedded ([`schema::Schema::embedded`]) or
//!   loaded from Kafka's JSON files; [`wire`]: the primitives' parsers.
//! - [`run`]: the capture engine: inputs and options driven through the session and the
//!   decoder into a sink (one thread or a pool: [`pipeline`], [`memory`]).
//! - [`render`]: the printers (text with byte grid, NDJSON, summary, values, hexdump);
//!   [`filter`] (display filters), [`export`] (Parquet), [`traffic`] (statistics),
//!   [`encode`] (values to frames), [`page`] (reference pages), [`log`] (Kafka log
//!   directories), [`diff`] (what changed between versions), [`text`] (hex, quoting,
//!   base64 ids), [`errors`] (Kafka's error codes), [`wireshark`] (a Lua dissector).
//!
//! The public API is what these modules export; `cli` (the command line's argument
//! parsing, its choice of sinks and exit statuses: the only code that writes to stderr)
//! is the binary's own and hidden from these docs. `docs/architecture.md` draws the
//! tree of `src/`.
//!
//! # Examples
//!
//! Decode one frame from its bytes (a DeleteTopics v6 request, size prefix included) and
//! print its tree:
//!
//! ```
//! use kwire::decode::{decode, DecodeOptions, Known};
//! use kwire::render::{text, RenderOptions};
//! use kwire::schema::Schema;
//! use kwire::tree::Buffers;
//!
//! let frame: Vec<u8> = (0..78)
//!     .step_by(2)
//!     .map(|i| u8::from_str_radix(&"000000230014000600000000000000020100000000000000000000000000000000000000000000"[i..i + 2], 16).unwrap())
//!     .collect();
//! let schema = Schema::embedded();
//! let opts = DecodeOptions::default();
//! let arena = Buffers::new();
//! let message = decode(&schema, &opts, &arena, &frame, &Known::request());
//! assert_eq!((message.api_name, message.api_version), (Some("DeleteTopics"), 6));
//! assert!(message.errors().is_empty());
//! let mut out = Vec::new();
//! text::tree(&mut out, &message, &RenderOptions::default())?;
//! assert!(String::from_utf8_lossy(&out).contains("TimeoutMs"));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Open a capture through the index and decode its last message alone:
//!
//! ```
//! use kwire::index::Capture;
//!
//! let capture = Capture::open("captures/demo.pcap")?;
//! let last = capture.len() - 1;
//! let info = capture.info(last)?;
//! println!("{} messages; the last is on connection {}", capture.len(), info.connection);
//! capture.with_message(last, |message, context| {
//!     println!("{} v{}, frames {:?}", message.api_key, message.api_version, context.frames);
//! })?;
//! # Ok::<(), kwire::index::IndexError>(())
//! ```
//!
//! Stream a whole capture in capture order (what `kwire read` does on one thread):
//!
//! ```
//! use kwire::decode::DecodeOptions;
//! use kwire::input::{read_capture, CaptureOptions, Event};
//! use kwire::schema::Schema;
//! use kwire::session::{SchemaPlausibility, Session};
//! use kwire::tree::Buffers;
//!
//! let schema = Schema::embedded();
//! let opts = DecodeOptions::default();
//! let mut session = Session::new(&schema, &opts);
//! let file = std::fs::File::open("captures/demo.pcap")?;
//! let mut count = 0;
//! read_capture(file, &CaptureOptions::default(), &SchemaPlausibility(&schema), |event| {
//!     if let Event::Frame(frame) = event {
//!         let arena = Buffers::new();
//!         let (message, _context) = session.decode(&frame, &arena);
//!         count += usize::from(message.errors().is_empty());
//!     }
//! })
//! .map_err(std::io::Error::other)?;
//! assert!(count > 0);
//! # Ok::<(), std::io::Error>(())
//! ```

#[doc(hidden)]
pub mod cli;
pub mod decode;
pub mod diff;
pub mod encode;
pub mod errors;
pub mod explore;
pub mod export;
pub mod filter;
pub mod index;
pub mod input;
pub mod log;
pub mod memory;
pub mod page;
pub mod pipeline;
pub mod render;
pub mod report;
pub mod run;
pub mod schema;
pub mod session;
pub mod text;
pub mod traffic;
pub mod tree;
pub mod values;
pub mod wire;
pub mod wireshark;

/// The README's Rust code, compiled and run as a doctest (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
