//! Helpers shared by the encode tests: decoding a frame, checking that its leaves
//! tile it, and the values round trip.
#![allow(dead_code)]

pub mod gen;

use kwire::decode::{decode, DecodeOptions, Known};
use kwire::schema::Schema;
use kwire::tree::{Buffers, Message, Node};
use serde_json::Value;

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    kwire::text::hex(b)
}

/// `Known` for a frame of this kind.
pub fn known(request: bool, api_key: i16, version: i16) -> Known {
    if request {
        Known::request()
    } else {
        Known::response(api_key, version)
    }
}

/// Leaves in buffer 0 (no children, length > 0) must cover `0..len`, in order, with no
/// gap or overlap. Returns a description of the first problem.
pub fn check_tiling(m: &Message<'_>) -> Result<(), String> {
    let mut leaves: Vec<&Node<'_>> = Vec::new();
    m.tree.walk(&mut |n, _| {
        if n.children.is_empty() && n.length > 0 && n.buffer == 0 {
            leaves.push(n);
        }
    });
    let mut pos = 0usize;
    for l in &leaves {
        if l.offset != pos {
            return Err(format!(
                "leaf {} at {} (len {}) but expected offset {pos}",
                l.name, l.offset, l.length
            ));
        }
        pos = l.end();
    }
    if pos != m.frame.len() {
        return Err(format!("leaves end at {pos}, frame is {}", m.frame.len()));
    }
    Ok(())
}

/// Decodes `frame`, checks no errors/warnings and tiling, and returns its values.
pub fn decode_check(
    schema: &Schema,
    frame: &[u8],
    request: bool,
    api_key: i16,
    version: i16,
) -> Result<Value, String> {
    let opts = DecodeOptions::default();
    let arena = Buffers::new();
    let m = decode(
        schema,
        &opts,
        &arena,
        frame,
        &known(request, api_key, version),
    );
    if !m.errors().is_empty() {
        return Err(format!("errors: {:?}", m.errors()));
    }
    if !m.warnings().is_empty() {
        return Err(format!("warnings: {:?}", m.warnings()));
    }
    check_tiling(&m)?;
    Ok(kwire::values::to_values(&m))
}
