//! `kwire encode [FILE|-] [--format hex|raw] [--lines]`: JSON values in the shape of
//! `--format values` (one or more, NDJSON or concatenated) to Kafka frames. With `--lines`
//! each hex line starts with the frame's direction (`c>s` for a request, `s>c` for a
//! response), the layout `kwire decode --hex-file` reads, so a round trip keeps it.

use super::{CliError, EncodeFormat};
use crate::encode::{encode, to_hex};
use crate::schema::Schema;
use serde_json::Value;
use std::io::{self, Read, Write};
use std::path::Path;

/// Reads the input: a file, or stdin for `-` or no file.
fn read_input(file: Option<&Path>) -> Result<String, CliError> {
    let mut t = String::new();
    match file {
        Some(p) if p.as_os_str() != "-" => {
            t = std::fs::read_to_string(p)
                .map_err(|e| CliError::Msg(format!("{}: {e}", p.display())))?
        }
        _ => {
            io::stdin().lock().read_to_string(&mut t)?;
        }
    }
    Ok(t)
}

/// Encodes every JSON value of `text` into a frame, with whether it is a request (its
/// `kind`). The first bad value ends the command: its error names the value (1-based,
/// with its line when there are several) and the field's path.
///
/// # Errors
/// JSON that does not parse, or a value [`encode`] refuses.
pub fn encode_all(schema: &Schema, text: &str) -> Result<Vec<(bool, Vec<u8>)>, String> {
    let mut frames = Vec::new();
    let mut it = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let line_of = |off: usize| text[..off.min(text.len())].matches('\n').count() + 1;
    let mut start = 0usize;
    loop {
        // The offset where the next value starts, for error messages.
        let skip = text[start..]
            .find(|c: char| !c.is_whitespace())
            .map(|i| start + i)
            .unwrap_or(text.len());
        let Some(next) = it.next() else { break };
        let i = frames.len() + 1;
        let v = next.map_err(|e| format!("value {i}: JSON: {e}"))?;
        start = it.byte_offset();
        let f =
            encode(schema, &v).map_err(|e| format!("value {i} (line {}): {e}", line_of(skip)))?;
        // `encode` has checked that `kind` is "request" or "response".
        frames.push((v["kind"] == "request", f));
    }
    if frames.is_empty() {
        return Err("no JSON value in the input".into());
    }
    Ok(frames)
}

/// `kwire encode`: `lines` puts the direction before each hex line.
///
/// # Errors
/// Unreadable input, bad JSON or a value [`encode`] refuses (nothing is written then).
pub fn encode_command(
    schema: &Schema,
    file: Option<&Path>,
    format: EncodeFormat,
    lines: bool,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let text = read_input(file)?;
    let frames = encode_all(schema, &text)?;
    for (request, f) in frames {
        match format {
            EncodeFormat::Hex if lines => writeln!(
                out,
                "{} {}",
                if request { "c>s" } else { "s>c" },
                to_hex(&f)
            )?,
            EncodeFormat::Hex => writeln!(out, "{}", to_hex(&f))?,
            EncodeFormat::Raw => out.write_all(&f)?,
        }
    }
    Ok(())
}
