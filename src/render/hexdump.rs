//! The hexdump printer: a title line, then the raw frame through hexyl, with colour on
//! or off as asked. Decompressed buffers follow, each under its own title.

use std::io::{self, Write};

use hexyl::{BorderStyle, PrinterBuilder};

use super::json::Spill;
use super::{text::title_with, RenderOptions};
use crate::session::Context;
use crate::tree::Message;

/// Prints `msg` as a hex dump.
///
/// # Errors
/// The writer's errors.
pub fn render(
    w: &mut dyn Write,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    buffered(w, |b| dump_all(b, msg, ctx, opts))
}

/// Runs `f` over a [`Buffered`] writer on the thread's buffer, then writes what is left.
/// A failed write of `w` stops `f`, and its error (a closed pipe, say) is the answer.
fn buffered(
    w: &mut dyn Write,
    f: impl FnOnce(&mut Buffered<'_, '_>) -> io::Result<()>,
) -> io::Result<()> {
    thread_local! {
        /// The dump's text, reused from message to message.
        static DUMP: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    super::with_thread_buffer(&DUMP, |out| {
        let mut b = Buffered {
            out,
            spill: Spill::new(w),
        };
        match f(&mut b) {
            Err(e) if !b.spill.failed() => Err(e),
            _ => b.spill.finish(b.out),
        }
    })
}

fn dump_all(
    b: &mut Buffered<'_, '_>,
    msg: &Message<'_>,
    ctx: Option<&Context>,
    opts: &RenderOptions,
) -> io::Result<()> {
    writeln!(b, "{}", title_with(msg, ctx, opts))?;
    dump(b, msg.frame, opts.color)?;
    for (i, buf) in msg.buffers.iter().enumerate() {
        writeln!(b, "decompressed buffer {} ({} bytes)", i + 1, buf.len())?;
        dump(b, buf, opts.color)?;
    }
    Ok(())
}

/// hexyl's many small writes go into the thread's buffer, written out in
/// [`super::json::SPILL`]-sized pieces and once at the end, rather than through the
/// output's writer a few bytes at a time. hexyl flushes after a dump's first line; that
/// flush is the end's write here, not one system call a message.
struct Buffered<'o, 'w> {
    out: &'o mut Vec<u8>,
    spill: Spill<'w>,
}

impl Write for Buffered<'_, '_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b)?;
        Ok(b.len())
    }
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        if self.spill.failed() {
            // The output is gone (a closed pipe): stop the dump; `finish` gives the error.
            return Err(io::Error::other("output failed"));
        }
        self.out.extend_from_slice(b);
        self.spill.check(self.out);
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Dumps `bytes` with hexyl: offsets, two panels of 8 bytes, characters, no squeezing.
///
/// # Errors
/// The writer's errors.
pub fn dump(w: &mut dyn Write, bytes: &[u8], color: bool) -> io::Result<()> {
    let mut w = w;
    let mut printer = PrinterBuilder::new(&mut w)
        .show_color(color)
        .show_char_panel(true)
        .show_position_panel(true)
        .with_border_style(BorderStyle::Unicode)
        .enable_squeezing(false)
        .num_panels(2)
        .group_size(1)
        .build();
    printer.print_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes `left` bytes, then fails as a closed pipe does.
    struct Closing {
        left: usize,
        got: Vec<u8>,
    }

    impl Write for Closing {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if b.len() > self.left {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.left -= b.len();
            self.got.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 256) as u8).collect()
    }

    #[test]
    fn buffered_dump_is_hexyls_own_across_spills() {
        // 300 KB of bytes make about 1.4 MB of text: several spills.
        let data = bytes(300_000);
        for color in [false, true] {
            let mut direct = Vec::new();
            dump(&mut direct, &data, color).unwrap();
            let mut via = Vec::new();
            buffered(&mut via, |b| dump(b, &data, color)).unwrap();
            assert!(direct.len() > 4 * SPILL_BYTES);
            assert_eq!(direct, via, "colour {color}");
        }
    }

    #[test]
    fn a_closed_output_stops_the_dump_with_its_own_error() {
        let data = bytes(300_000);
        let mut w = Closing {
            left: SPILL_BYTES + 10,
            got: Vec::new(),
        };
        let e = buffered(&mut w, |b| dump(b, &data, false)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        // The first spill went out whole, and nothing after the failed second one.
        let mut direct = Vec::new();
        dump(&mut direct, &data, false).unwrap();
        assert!(w.got.len() >= SPILL_BYTES && w.got.len() <= SPILL_BYTES + 10);
        assert_eq!(w.got[..], direct[..w.got.len()]);
        let mut small = Closing {
            left: 1 << 30,
            got: Vec::new(),
        };
        buffered(&mut small, |b| dump(b, &data[..100], false)).unwrap();
        let mut direct = Vec::new();
        dump(&mut direct, &data[..100], false).unwrap();
        assert_eq!(small.got, direct);
    }

    const SPILL_BYTES: usize = super::super::json::SPILL;
}
