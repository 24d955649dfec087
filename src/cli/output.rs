//! Glue between the command line's options and the renderers.

use super::{Cli, ColorChoice, Format, OutputArgs};
use crate::render::{self, Context, RenderOptions};
use crate::tree::Message;
use std::io::{IsTerminal, Write};

/// Whether stdout gets colour, from `--color`, `NO_COLOR` and whether it is a terminal.
pub fn color(cli: &Cli) -> bool {
    let choice = match cli.color {
        ColorChoice::Auto => render::ColorChoice::Auto,
        ColorChoice::Always => render::ColorChoice::Always,
        ColorChoice::Never => render::ColorChoice::Never,
    };
    render::color_enabled(choice, std::io::stdout().is_terminal())
}

/// The renderers' options from the command line.
pub fn render_options(cli: &Cli, o: &OutputArgs) -> RenderOptions {
    RenderOptions {
        color: color(cli),
        no_bytes: o.no_bytes,
        bytes_only: o.bytes_only,
        depth: o.depth,
        max_elements: o.max_elements,
        wide: o.wide,
        max_value_len: if o.wide {
            usize::MAX
        } else {
            RenderOptions::default().max_value_len
        },
    }
}

/// Prints one message in the chosen format.
///
/// # Errors
/// The writer's errors.
pub fn print_message(
    m: &Message<'_>,
    ctx: Option<&Context>,
    ropts: &RenderOptions,
    format: Format,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let f = match format {
        Format::Text => render::Format::Text,
        Format::Json => render::Format::Json,
        Format::Values => render::Format::Values,
        Format::Summary => render::Format::Summary,
        Format::Hexdump => render::Format::Hexdump,
    };
    render::render(out, f, m, ctx, ropts)?;
    if format == Format::Text {
        writeln!(out)?;
    }
    Ok(())
}
