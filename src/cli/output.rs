//! Glue between the command line's options and the renderers.

use super::{Cli, ColorChoice, OutputArgs, OutputFormat};
use crate::render::{self, RenderOptions};
use crate::session::Context;
use crate::tree::Message;
use std::io::{IsTerminal, Write};

/// Whether stdout gets colour, from `--color`, `NO_COLOR`, `TERM=dumb` and whether it is
/// a terminal.
pub fn color(cli: &Cli) -> bool {
    let choice = match cli.color {
        ColorChoice::Auto => render::ColorChoice::Auto,
        ColorChoice::Always => render::ColorChoice::Always,
        ColorChoice::Never => render::ColorChoice::Never,
    };
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    render::color_enabled(choice, std::io::stdout().is_terminal() && !dumb)
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
        ..RenderOptions::default()
    }
}

/// The output options given that the chosen format does not use, as lines for stderr
/// (`--depth applies to --format text; ignored with --format json`). Every format but
/// text ignores the tree and grid options; `--wide` also applies to the summary.
pub fn ignored_options(o: &OutputArgs, format: OutputFormat) -> Vec<String> {
    use clap::ValueEnum;
    let name = format
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let mut given = Vec::new();
    let page = matches!(format, OutputFormat::MD | OutputFormat::HTML);
    if format != OutputFormat::TEXT {
        if o.no_bytes {
            given.push("--no-bytes");
        }
        if o.bytes_only {
            given.push("--bytes-only");
        }
    }
    if format != OutputFormat::TEXT && !page {
        if o.depth.is_some() {
            given.push("--depth");
        }
        if o.max_elements != OutputArgs::DEFAULT_MAX_ELEMENTS {
            given.push("--max-elements");
        }
    }
    if o.wide && !matches!(format, OutputFormat::TEXT | OutputFormat::SUMMARY) && !page {
        given.push("--wide");
    }
    given
        .into_iter()
        .map(|opt| {
            let applies = if opt == "--wide" {
                "--format text and summary"
            } else {
                "--format text"
            };
            format!("kwire: {opt} applies to {applies}; ignored with --format {name}")
        })
        .collect()
}

/// Prints one message in a renderer's format (a text message ends with an empty line).
///
/// # Errors
/// The writer's errors.
pub fn print_message(
    m: &Message<'_>,
    ctx: Option<&Context>,
    ropts: &RenderOptions,
    format: render::Format,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    render::render(out, format, m, ctx, ropts)?;
    if format == render::Format::Text {
        writeln!(out)?;
    }
    Ok(())
}
