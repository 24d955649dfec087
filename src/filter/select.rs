//! The display filter as a wrapper of the engine's per-message work: `-Y` (and its
//! shorthands) in front of a printer, `kwire stats`'s count or `kwire export`'s rows.

use super::{Filter, MessageFacts};
use crate::input::RecordSet;
use crate::run::{FirstLook, Work};
use crate::session::Context;
use crate::tree::Message;
use std::io::Write;

/// A [`Work`] that runs `inner` only on the messages `filter` keeps (all of them when
/// there is no filter): its output is `Some(inner's output)` for a message kept, `None`
/// for one left out, so the sink can count what was shown.
pub struct Select<'f, W: ?Sized> {
    /// The filter (none: every message is kept).
    pub filter: Option<&'f Filter>,
    /// The capture's requests that got no response, by the record number of their last
    /// segment, read in a first pass ([`crate::run::unanswered_first_pass`]) when the filter uses
    /// `unanswered` ([`Filter::uses_unanswered`]).
    pub unanswered: Option<&'f RecordSet>,
    /// The work done on each message kept.
    pub inner: &'f W,
}

impl<W: Work + ?Sized> Work for Select<'_, W> {
    type Output = Option<W::Output>;
    fn message(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        out: &mut dyn Write,
    ) -> std::io::Result<Option<W::Output>> {
        let facts = MessageFacts {
            capture: Some(ctx),
            unanswered: self.unanswered,
        };
        if self.filter.is_none_or(|f| f.matches(m, &facts)) {
            self.inner.message(m, ctx, out).map(Some)
        } else {
            Ok(None)
        }
    }

    /// A message the filter keeps is decoded whole for `inner`; one it leaves out is done
    /// with (decided on the lighter tree the run decoded first, which the filter decides
    /// on as on the whole one: [`Filter::least_detail`]).
    fn first_look(
        &self,
        m: &Message<'_>,
        ctx: &Context,
        _out: &mut dyn Write,
    ) -> std::io::Result<FirstLook<Option<W::Output>>> {
        let facts = MessageFacts {
            capture: Some(ctx),
            unanswered: self.unanswered,
        };
        Ok(if self.filter.is_none_or(|f| f.matches(m, &facts)) {
            FirstLook::Whole
        } else {
            FirstLook::Done(None)
        })
    }
}
