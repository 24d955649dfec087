//! `kwire report`: a capture as one self-contained HTML page, for tickets, docs and
//! classes (issue 27).
//!
//! ```text
//! run::run_capture (one pass, worker threads) -> gather::Fact per message
//!     -> gather::Gather (in capture order: stats, time buckets, heaps, tables)
//! pages::choose (slowest, errors, first of each API/version)
//!     -> pages::render (index::Capture: one index pass, then only the chosen messages)
//! html::write (overview, plot::svg plots, sortable tables, message pages)
//! ```
//!
//! Memory is bounded by the gather's caps ([`gather::BUCKETS`], [`gather::SLOW_KEEP`],
//! [`gather::ROWS_KEEP`], ...), by the 8 bytes a paired response costs for the exact
//! latency quantiles (as `kwire stats`), and by the page budget ([`pages::PAGES_BYTES`]);
//! the file's size by the same caps (the plots have at most [`gather::BUCKETS`] points a
//! series, the tables [`gather::ROWS_KEEP`] rows).

pub mod gather;
pub mod html;
pub mod pages;
pub mod plot;

pub use gather::{Fact, Gather, MsgRef};
