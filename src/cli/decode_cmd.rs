//! `kwire decode`: frames from hex text, base64 or raw bytes, decoded one at a time.
//!
//! Raw bytes (`--raw FILE`, `--raw -`) stream: a frame is read (by its size prefix),
//! decoded, printed and dropped before the next is read, so memory stays flat however
//! many frames the input holds; no frame holds more than [`MAX_FRAME`] bytes (what
//! is over is counted and said). Hex and base64 text is read whole, up to
//! [`MAX_TEXT`] bytes (a larger dump is refused with a hint: `xxd -r` and `--raw`),
//! and its frames are decoded one at a time.

use super::output::{self, print_message, render_options};
use super::{say, Cli, CliError, DecodeArgs, KindArg, OutputFormat};
use crate::decode::{DecodeOptions, Layout};
use crate::input::hex;
use crate::schema::Schema;
use crate::session::{Loose, Session, DUMP_DEPTH, DUMP_MAX_PENDING};
use crate::tree::{Buffers, Direction};
use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};

/// Largest frame `kwire decode` holds, in bytes (`kwire read --max-frame`'s default, the
/// broker's `socket.request.max.bytes` is 100 MiB too).
pub const MAX_FRAME: usize = 100 << 20;

/// Largest hex or base64 text `kwire decode` reads, in bytes (its parse holds the text,
/// its lines and the bytes at once).
pub const MAX_TEXT: usize = 64 << 20;

/// One frame to decode, with what its source line said.
struct Frame<'b> {
    bytes: &'b [u8],
    direction: Option<hex::Direction>,
    stream: u64,
}

/// Whether `b` starts like a pcap or pcapng file.
fn looks_like_capture(b: &[u8]) -> bool {
    const MAGICS: [[u8; 4]; 5] = [
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    b.len() >= 4 && MAGICS.iter().any(|m| b[..4] == *m)
}

/// The hint for a capture given to `decode`.
fn capture_hint(name: &str) -> CliError {
    CliError::Msg(format!(
        "{name} is a pcap/pcapng capture, not frames: read it with `kwire read {name}`"
    ))
}

/// Stdin, locked; on a terminal, first a line saying that it is read (so `kwire decode`
/// alone does not wait without a word).
fn stdin() -> io::StdinLock<'static> {
    use std::io::IsTerminal;
    if io::stdin().is_terminal() {
        say("kwire decode: reading frames as hex from stdin (end with Ctrl-D); or give --hex, --hex-file, --base64 or --raw");
    }
    io::stdin().lock()
}

/// Reads at most [`MAX_TEXT`] bytes of text from `r`, named `what` in errors: a capture
/// or bytes that are not UTF-8 are refused with a hint.
fn read_text(r: &mut dyn Read, what: &str) -> Result<String, CliError> {
    let mut v = Vec::new();
    r.take(MAX_TEXT as u64 + 1).read_to_end(&mut v)?;
    if v.len() > MAX_TEXT {
        return Err(CliError::Msg(format!(
            "{what}: more than {} MiB of text; for a larger dump, turn it into bytes (xxd -r, or xxd -r -p for plain hex) and use --raw FILE, which streams",
            MAX_TEXT >> 20
        )));
    }
    if looks_like_capture(&v) {
        return Err(capture_hint(what));
    }
    String::from_utf8(v).map_err(|_| {
        CliError::Msg(format!(
            "{what} is not text (not UTF-8): for raw frame bytes use `kwire decode --raw {what}`"
        ))
    })
}

/// Wireshark and `tshark -x` dumps hold whole packets: where a chunk parses as
/// Ethernet/IP/TCP (etherparse), its TCP payload is what kwire decodes, and packets with
/// no payload are left out with a note.
fn tcp_payloads(chunks: Vec<hex::HexChunk>, notes: &mut Vec<String>) -> Vec<hex::HexChunk> {
    let mut out = Vec::new();
    for mut c in chunks {
        let payload = match etherparse::SlicedPacket::from_ethernet(&c.bytes) {
            Ok(etherparse::SlicedPacket {
                transport: Some(etherparse::TransportSlice::Tcp(t)),
                ..
            }) => Some(t.payload().to_vec()),
            _ => None,
        };
        match payload {
            None => out.push(c),
            Some(p) if p.is_empty() => notes.push(format!(
                "line {}: a TCP packet with no payload, left out",
                c.line
            )),
            Some(p) => {
                notes.push(format!(
                    "line {}: a whole packet ({} bytes): decoding its TCP payload ({} bytes)",
                    c.line,
                    c.bytes.len(),
                    p.len()
                ));
                c.bytes = p;
                out.push(c);
            }
        }
    }
    out
}

/// Where a note's bytes are: a line of hex text, or a byte offset of input that has no
/// lines (raw bytes, base64).
#[derive(Clone, Copy)]
enum At {
    /// A 1-based line of the text.
    Line(usize),
    /// A byte offset from the start of the input.
    Byte(u64),
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Line(l) => write!(f, "line {l}"),
            At::Byte(b) => write!(f, "at byte {b}"),
        }
    }
}

/// The note for `n` bytes at `at` that do not hold a whole frame.
fn not_whole(at: At, n: usize, size: Option<i32>) -> String {
    let why = match size {
        None => "too few for a size prefix".to_string(),
        Some(s) => format!("size prefix {s}"),
    };
    let bytes = if n == 1 { "byte does" } else { "bytes do" };
    format!("{at}: {n} {bytes} not hold a whole frame ({why}): decoded as they are")
}

/// Splits a chunk into frames by their size prefixes and hands each to `each`; what does
/// not split is said in a note first, at the chunk's line (`lines`: the chunk is a line of
/// text) or at its byte offset (base64, which has no lines).
fn split_frames(
    c: &hex::HexChunk,
    size_prefix: bool,
    lines: bool,
    each: &mut dyn FnMut(Frame<'_>, &[String]) -> io::Result<()>,
) -> io::Result<()> {
    let stream = c.stream.unwrap_or(0);
    let frame = |bytes| Frame {
        bytes,
        direction: c.direction,
        stream,
    };
    if !size_prefix {
        return each(frame(&c.bytes), &[]);
    }
    let mut rest = &c.bytes[..];
    while !rest.is_empty() {
        let size =
            (rest.len() >= 4).then(|| i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]));
        let whole = size.is_some_and(|s| s >= 0 && (s as usize) <= rest.len() - 4);
        if whole {
            let take = size.unwrap_or(0) as usize + 4;
            each(frame(&rest[..take]), &[])?;
            rest = &rest[take..];
        } else {
            let at = if lines {
                At::Line(c.line)
            } else {
                At::Byte((c.bytes.len() - rest.len()) as u64)
            };
            each(frame(rest), &[not_whole(at, rest.len(), size)])?;
            rest = &[];
        }
    }
    Ok(())
}

/// Reads frames from raw bytes one at a time, by their size prefixes, and hands each to
/// `each` (with the notes that go before it). A frame never holds more than
/// [`MAX_FRAME`] bytes: over that, the first [`MAX_FRAME`] are decoded and the rest
/// counted in a note.
fn stream_frames(
    r: &mut dyn Read,
    size_prefix: bool,
    each: &mut dyn FnMut(Frame<'_>, &[String]) -> io::Result<()>,
) -> Result<u64, CliError> {
    let mut buf: Vec<u8> = Vec::new();
    let mut total = 0u64;
    fn frame(bytes: &[u8]) -> Frame<'_> {
        Frame {
            bytes,
            direction: None,
            stream: 0,
        }
    }
    // Reads up to `n` more bytes into `buf`; returns how many came.
    let fill = |r: &mut dyn Read, buf: &mut Vec<u8>, n: usize| -> io::Result<usize> {
        r.take(n as u64).read_to_end(buf)
    };
    // Counts the bytes left after a frame cut at MAX_FRAME (they start at byte `at`).
    let over = |r: &mut dyn Read, at: u64| -> io::Result<Option<String>> {
        let n = io::copy(r, &mut io::sink())?;
        Ok((n > 0).then(|| {
            format!(
                "{}: {n} more bytes follow the first {} MiB of that frame (kwire decode holds at most {} MiB of a frame): not decoded",
                At::Byte(at),
                MAX_FRAME >> 20,
                MAX_FRAME >> 20
            )
        }))
    };
    if !size_prefix {
        fill(r, &mut buf, MAX_FRAME)?;
        total += buf.len() as u64;
        if buf.is_empty() {
            return Ok(0);
        }
        let note: Vec<String> = over(r, total)?.into_iter().collect();
        each(frame(&buf), &note)?;
        return Ok(total);
    }
    loop {
        buf.clear();
        // Where this frame starts in the input.
        let start = At::Byte(total);
        let got = fill(r, &mut buf, 4)?;
        total += got as u64;
        if got == 0 {
            return Ok(total);
        }
        if got < 4 {
            each(frame(&buf), &[not_whole(start, got, None)])?;
            return Ok(total);
        }
        let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if size >= 0 && (size as usize) <= MAX_FRAME - 4 {
            let got = fill(r, &mut buf, size as usize)?;
            total += got as u64;
            if got == size as usize {
                each(frame(&buf), &[])?;
                continue;
            }
            each(frame(&buf), &[not_whole(start, buf.len(), Some(size))])?;
            return Ok(total);
        }
        // A size that cannot be a frame here: the rest is decoded as it is, as far as
        // MAX_FRAME.
        let got = fill(r, &mut buf, MAX_FRAME - 4)?;
        total += got as u64;
        let mut notes = vec![not_whole(start, buf.len(), Some(size))];
        if buf.len() == MAX_FRAME {
            notes.extend(over(r, total)?);
        }
        each(frame(&buf), &notes)?;
        return Ok(total);
    }
}

/// Runs `kwire decode`; returns the exit status: 2 when a frame was cut short (its size
/// prefix says more bytes than the input holds), else 3 with `--strict` when a frame has
/// decode errors, else 0.
///
/// # Errors
/// Unreadable or empty input, conflicting options or an `--api-key`/`--api-version` the
/// schema does not hold (usage), output errors.
pub fn decode_command(
    schema: &Schema,
    cli: &Cli,
    a: &DecodeArgs,
    out: &mut dyn Write,
) -> Result<i32, CliError> {
    if a.body_only && (a.api_key.is_none() || a.api_version.is_none() || a.kind.is_none()) {
        return Err(CliError::Usage(
            "--body-only needs --api-key, --api-version and --kind".into(),
        ));
    }
    if a.api_key.is_some() != a.api_version.is_some() {
        return Err(CliError::Usage(
            "--api-key and --api-version go together".into(),
        ));
    }
    if let (Some(k), Some(v)) = (a.api_key, a.api_version) {
        check_api(schema, k, v, a.kind)?;
    }
    let layout = Layout {
        size_prefix: !(a.no_size_prefix || a.body_only),
        header: !a.body_only,
    };
    let opts = DecodeOptions {
        max_nodes: a.out.max_nodes,
        ..DecodeOptions::default()
    };
    let ropts = render_options(cli, &a.out);
    let format = a.out.format.unwrap_or(OutputFormat::TEXT);
    let mut ignored = output::ignored_options(&a.out, format);
    // An HTML page is one document: its messages are gathered, then written at the end.
    let mut doc = crate::page::frames::Doc::new("Kafka messages decoded by kwire");
    // Responses pair with their requests through the session `kwire read` uses, by
    // stream and correlation_id: streams of several connections written as one
    // (`c>s`/`s>c` lines) reuse correlation_ids, so a queue of them waits for each.
    let mut session = Session::for_dump(schema, &opts);
    let (mut forgot, mut queue_full) = (false, false);
    // Streams past u32 (no capture has so many connections), numbered down from the top.
    let mut big_streams: HashMap<u64, u32> = HashMap::new();
    let (mut frames, mut errors, mut cut) = (0usize, 0usize, false);
    // One arena for every frame: emptied before each, so its memory is reused.
    let mut arena = Buffers::new();
    let mut each = |f: Frame<'_>, notes: &[String]| -> io::Result<()> {
        for n in notes {
            say(&format!("kwire: {n}"));
        }
        for line in ignored.drain(..) {
            say(&line);
        }
        // The direction the input gives (a c>s/s>c line, --kind, or --api-key for a
        // response); with none, the frame's own bytes decide.
        let given = match (f.direction, a.kind) {
            (Some(hex::Direction::ClientToServer), _) => Some(Direction::Request),
            (Some(hex::Direction::ServerToClient), _) => Some(Direction::Response),
            (None, Some(KindArg::Request)) => Some(Direction::Request),
            (None, Some(KindArg::Response)) => Some(Direction::Response),
            (None, None) if a.api_key.is_some() => Some(Direction::Response),
            (None, None) => None,
        };
        let n = big_streams.len();
        let connection = u32::try_from(f.stream).unwrap_or_else(|_| {
            *big_streams
                .entry(f.stream)
                .or_insert(u32::MAX - n.min(u32::MAX as usize) as u32)
        });
        let how = Loose {
            connection,
            frame: frames as u64 + 1,
            direction: given,
            layout,
            api: a.api_key.zip(a.api_version),
        };
        arena.reset();
        let m = session.decode_loose(f.bytes, &how, &arena);
        if !session.notices.is_empty() {
            session.notices.clear();
            if !forgot {
                forgot = true;
                say(&format!("kwire: more than {DUMP_MAX_PENDING} requests wait for their responses: the oldest are forgotten (their responses decode without the request's version)"));
            }
        }
        if session.pairer.not_queued() > 0 && !queue_full {
            queue_full = true;
            say(&format!("kwire: frame {}: {DUMP_DEPTH} requests with its correlation_id wait for their responses in its stream: it is not remembered for pairing, nor are later ones past {DUMP_DEPTH} (give each connection its stream: `c>s STREAM OFFSET HEX` lines)", frames + 1));
        }
        frames += 1;
        errors += m.errors().len();
        cut |= layout.size_prefix
            && match f.bytes.get(..4) {
                Some(s) => {
                    let size = i32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                    size < 0 || f.bytes.len() - 4 < size as usize
                }
                None => true,
            };
        match format {
            OutputFormat::MD => {
                crate::page::frames::markdown(out, schema, frames, &m, None, &ropts)
            }
            OutputFormat::HTML => doc.add(out, schema, &m, None, f.stream as u32, &ropts),
            OutputFormat::Message(f) => print_message(&m, None, &ropts, f, out),
        }
    };
    let raw = |name: &std::path::Path| -> Result<Box<dyn BufRead>, CliError> {
        if name.as_os_str() == "-" {
            Ok(Box::new(stdin()))
        } else {
            let f = std::fs::File::open(name)
                .map_err(|e| CliError::Msg(format!("{}: {e}", name.display())))?;
            Ok(Box::new(io::BufReader::with_capacity(1 << 16, f)))
        }
    };
    let text = if let Some(h) = &a.hex {
        Some(h.clone())
    } else if let Some(f) = &a.hex_file {
        let mut r = raw(f)?;
        let what = if f.as_os_str() == "-" {
            "stdin".to_string()
        } else {
            f.display().to_string()
        };
        Some(read_text(&mut r, &what)?)
    } else if a.base64.is_some() || a.raw.is_some() {
        None
    } else {
        Some(read_text(&mut stdin(), "stdin")?)
    };
    let empty = || CliError::Msg("no bytes in the input".into());
    if let Some(t) = text {
        let chunks = hex::parse_hex(&t).map_err(|e| CliError::Msg(format!("hex input: {e}")))?;
        let format = hex::detect_format(&t);
        drop(t);
        let mut notes = Vec::new();
        let chunks = if format == hex::HexFormat::Wireshark {
            tcp_payloads(chunks, &mut notes)
        } else {
            chunks
        };
        if chunks.iter().all(|c| c.bytes.is_empty()) {
            for n in &notes {
                say(&format!("kwire: {n}"));
            }
            return Err(empty());
        }
        // The notes on whole packets first, as they are found while reading.
        let mut first = Some(notes);
        for c in &chunks {
            let mut pre = first.take().unwrap_or_default();
            split_frames(c, layout.size_prefix, true, &mut |f, n| {
                pre.extend_from_slice(n);
                let r = each(f, &pre);
                pre.clear();
                r
            })?;
        }
    } else if let Some(b) = &a.base64 {
        let bytes =
            hex::parse_base64(b).map_err(|e| CliError::Msg(format!("base64 input: {e}")))?;
        if bytes.is_empty() {
            return Err(empty());
        }
        let c = hex::HexChunk {
            direction: None,
            stream: None,
            bytes,
            line: 1,
        };
        split_frames(&c, layout.size_prefix, false, &mut each)?;
    } else if let Some(f) = &a.raw {
        let mut r = raw(f)?;
        if looks_like_capture(r.fill_buf()?) {
            return Err(capture_hint(&f.display().to_string()));
        }
        if stream_frames(&mut r, layout.size_prefix, &mut each)? == 0 {
            return Err(empty());
        }
    }
    if format == OutputFormat::HTML {
        doc.finish(out)?;
    }
    let not_queued = session.pairer.not_queued();
    if not_queued > 1 {
        say(&format!("kwire: {not_queued} requests were not remembered for pairing: {DUMP_DEPTH} requests with their correlation_id were waiting in their stream"));
    }
    if errors > 0 {
        say(&format!(
            "kwire: {frames} frame(s), {errors} error(s) (shown in the tree at their offsets)"
        ));
    }
    Ok(if cut {
        super::EXIT_INPUT
    } else if a.strict && errors > 0 {
        super::EXIT_STRICT
    } else {
        super::EXIT_OK
    })
}

/// Refuses an `--api-key` no API of the schema has, and an `--api-version` the API
/// does not have (in the direction `--kind` gives, or either), naming what there is.
fn check_api(schema: &Schema, k: i16, v: i16, kind: Option<KindArg>) -> Result<(), CliError> {
    use crate::schema::MessageKind;
    let Some(name) = schema.api_name(k) else {
        let mut keys = schema.api_keys();
        keys.sort_unstable();
        let near: Vec<String> = keys
            .iter()
            .filter(|x| (i32::from(**x) - i32::from(k)).abs() <= 1)
            .map(|x| format!("{x} ({})", schema.api_name(*x).unwrap_or("?")))
            .collect();
        return Err(CliError::Usage(format!(
            "--api-key {k}: no API of the schema has this key (keys {}..{}; see `kwire apis`){}",
            keys.first().copied().unwrap_or(0),
            keys.last().copied().unwrap_or(0),
            if near.is_empty() {
                String::new()
            } else {
                format!("; near it: {}", near.join(", "))
            }
        )));
    };
    let kinds: &[MessageKind] = match kind {
        Some(KindArg::Request) => &[MessageKind::Request],
        Some(KindArg::Response) => &[MessageKind::Response],
        None => &[MessageKind::Request, MessageKind::Response],
    };
    if kinds.iter().any(|d| schema.versions(*d, k).contains(&v)) {
        return Ok(());
    }
    let mut vs: Vec<i16> = kinds.iter().flat_map(|d| schema.versions(*d, k)).collect();
    vs.sort_unstable();
    vs.dedup();
    Err(CliError::Usage(format!(
        "--api-version {v}: {name} (api_key {k}) has no version {v} in the schema (versions {})",
        match (vs.first(), vs.last()) {
            (Some(lo), Some(hi)) => format!("{lo}-{hi}"),
            _ => "none".into(),
        }
    )))
}
