//! The hexdump printer: a title line, then the raw frame through hexyl, with colour on
//! or off as asked. Decompressed buffers follow, each under its own title.

use std::io::{self, Write};

use hexyl::{BorderStyle, PrinterBuilder};

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
    writeln!(w, "{}", title_with(msg, ctx, opts))?;
    dump(w, msg.frame, opts.color)?;
    for (i, b) in msg.buffers.iter().enumerate() {
        writeln!(w, "decompressed buffer {} ({} bytes)", i + 1, b.len())?;
        dump(w, b, opts.color)?;
    }
    Ok(())
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
