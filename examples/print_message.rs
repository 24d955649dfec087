//! Prints the tree of message `i` of a capture, read alone through the index:
//! `cargo run --example print_message -- captures/demo.pcap 5`.
//!
//! The output is what `kwire read --format text` prints for that message (title line with
//! the capture context, byte grid, tree); message numbers start at 0, in `kwire read`'s
//! order. A negative number counts from the end (-1 is the last message).

use std::io::Write;
use std::process::ExitCode;

use kwire::index::Capture;
use kwire::render::{text, RenderOptions};
use kwire::tree::Buffers;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(which)) = (args.get(1), args.get(2).and_then(|a| a.parse::<i64>().ok()))
    else {
        eprintln!("usage: print_message CAPTURE INDEX");
        return ExitCode::from(2);
    };
    let capture = match Capture::open(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("print_message: {e}");
            return ExitCode::FAILURE;
        }
    };
    let n = capture.len() as i64;
    let i = if which < 0 { n + which } else { which };
    let Ok(i) = usize::try_from(i) else {
        eprintln!("print_message: no message {which}: the capture has {n}");
        return ExitCode::FAILURE;
    };
    let frame = match capture.frame(i) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("print_message: {e}");
            return ExitCode::FAILURE;
        }
    };
    let arena = Buffers::new();
    let (message, context) = match capture.decode(i, &frame, &arena) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("print_message: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = std::io::stdout().lock();
    let res = text::render(
        &mut out,
        &message,
        Some(&context),
        &RenderOptions::default(),
    )
    .and_then(|()| out.flush());
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("print_message: {e}");
            ExitCode::FAILURE
        }
    }
}
