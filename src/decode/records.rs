//! Record data: RecordBatch v2 and legacy MessageSet v0/v1, with compression.
//! (Being written.)

use super::{Cx, Reader};
use crate::tree::{Node, Value};

/// Decodes the content of a `records` field (after its length prefix).
///
/// `r` covers exactly the records bytes. `partial_ok` is true where a broker may cut the
/// last batch short (Fetch responses): a cut batch is then a warning, not an error.
/// Returns the nodes that tile those bytes: batches, legacy messages, and a raw leaf for
/// what is left.
pub fn decode_records<'a>(cx: &mut Cx<'a>, r: &mut Reader<'a>, partial_ok: bool) -> Vec<Node<'a>> {
    let _ = (cx, partial_ok);
    if r.left() == 0 {
        return Vec::new();
    }
    let mut n = Node::leaf("raw", "bytes", Value::Bytes(r.rest), r.pos, r.left());
    n.buffer = r.buffer;
    r.split(r.left());
    vec![n]
}
