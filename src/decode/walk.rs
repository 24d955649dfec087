//! The schema walk (being written).

use super::{Cx, Reader};
use crate::tree::{Node, Value};

/// Decodes one struct-shaped data definition (`kind: data`, such as
/// `LeaderChangeMessage`, `ConsumerProtocolSubscription`) at `version` from `r`, as a node
/// named `node_name`. Errors are attached inside the returned node.
pub fn decode_data<'a>(cx: &mut Cx<'a>, name: &str, version: i16, r: &mut Reader<'a>, node_name: &str) -> Node<'a> {
    let _ = (cx, name, version);
    let mut n = Node::leaf(node_name.to_string(), "bytes", Value::Bytes(r.rest), r.pos, r.left());
    n.buffer = r.buffer;
    r.split(r.left());
    n
}
