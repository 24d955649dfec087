//! The display filter over log directories: a [`crate::log::Sink`] that keeps the items
//! `-Y` matches (`kwire log -Y`, `kwire stats -Y` and `kwire export -Y` on log folders).

use crate::log::{topic_name_of_file, Finding, Item, ItemKind, Sink};
use crate::tree::Node;
use std::io;

/// A sink that hands on only the items a display filter (`-Y`) keeps, and every
/// finding; `shown` counts the items kept.
pub struct Filtered<'s, 'f> {
    /// Where kept items go.
    pub inner: &'s mut dyn Sink,
    /// The filter.
    pub filter: &'f super::Filter,
    /// `--topic`, if given (else the topic comes from the folder's name).
    pub topic: Option<&'f str>,
    /// Items kept so far.
    pub shown: u64,
}

impl Sink for Filtered<'_, '_> {
    fn item(&mut self, it: &Item<'_>) -> io::Result<()> {
        let file = it.file.display().to_string();
        let facts = super::LogFacts {
            kind: match it.kind {
                ItemKind::Batch => "batch",
                ItemKind::Entry => "entry",
            },
            file: &file,
            file_kind: it.file_kind.as_str(),
            position: it.position,
            topic: topic_name_of_file(it.file, self.topic),
            offsets: it.batch.as_ref().map(|b| (b.base_offset, b.last_offset)),
            bad_crc: it.batch.as_ref().is_some_and(|b| !b.crc_ok),
        };
        // An item read without a tree (a batch at the summary level) still has its size.
        let bare;
        let tree = match &it.node {
            Some(n) => n,
            None => {
                let mut n = Node::new("", "", crate::tree::NodeKind::Message, 0);
                n.length = it.bytes.len();
                bare = n;
                &bare
            }
        };
        if self.filter.matches_log(tree, &facts) {
            self.shown += 1;
            self.inner.item(it)?;
        }
        Ok(())
    }
    fn finding(&mut self, f: &Finding) -> io::Result<()> {
        self.inner.finding(f)
    }
}
