//! The live-capture options of `read`, `stats` and `export` (`-i`, `-f`, `-a`, `-w`, `-D`)
//! and their wiring to [`crate::input::live`]: the checks before a command runs, the start
//! of the capture child and what its end adds to the closing lines.

use super::read::CaptureArgs;
use super::{CliError, EXIT_OK};
use crate::input::live::{self, Autostop, Capturer, LiveOptions};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Live capture, as tshark takes it: kwire runs dumpcap (tcpdump where dumpcap is absent)
/// and reads the packets as they come.
#[derive(Args, Debug, Clone, Default)]
pub struct LiveArgs {
    /// Capture live on this interface (a name or a number of the -D list; `any` for all;
    /// repeatable), through dumpcap (or tcpdump where dumpcap is absent); messages print as
    /// they complete. See docs/live-capture.md.
    #[arg(short = 'i', long = "interface", value_name = "IFACE")]
    pub interfaces: Vec<String>,
    /// The capture filter (BPF, as tcpdump takes it), passed to dumpcap. Default: `tcp port
    /// P` for each --port (9092), none with --detect.
    #[arg(short = 'f', value_name = "BPF")]
    pub capture_filter: Option<String>,
    /// Stop the live capture at duration:SECONDS, packets:N or filesize:KB (kB of 1000
    /// bytes); repeatable, the first met stops it. Ctrl-C (SIGINT) and SIGTERM stop it too.
    #[arg(short = 'a', long = "autostop", value_name = "COND")]
    pub autostop: Vec<Autostop>,
    /// Save every packet captured to FILE as pcapng as it is read (dumpcap's own stream;
    /// tcpdump's pcap rewritten as pcapng), to read again later.
    #[arg(short = 'w', value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// List the interfaces dumpcap (or tcpdump) can capture on, and exit.
    #[arg(short = 'D', long = "list-interfaces")]
    pub list_interfaces: bool,
}

impl LiveArgs {
    /// Whether the command captures live (`-i` given).
    pub fn is_live(&self) -> bool {
        !self.interfaces.is_empty()
    }
}

/// What a command does before it reads: `-D` lists the interfaces (the command then
/// ends with the returned status); the live options are checked against the rest.
///
/// # Errors
/// `-w`, `-f` or `-a` without `-i` (a capture file is read, not captured); `-i` with a
/// capture file; no capture program for `-D`.
pub fn before(a: &CaptureArgs, out: &mut dyn Write) -> Result<Option<i32>, CliError> {
    let l = &a.live;
    if l.list_interfaces {
        let c = Capturer::find().map_err(|e| CliError::Msg(e.to_string()))?;
        let list = c
            .list_interfaces()
            .map_err(|e| CliError::Msg(e.to_string()))?;
        out.write_all(list.as_bytes())?;
        return Ok(Some(EXIT_OK));
    }
    let files = a.read_file.is_some() || !a.files.is_empty();
    if l.is_live() {
        if files {
            return Err(CliError::Usage(
                "-i captures live and a CAPTURE (or -r) reads a file: give one or the other".into(),
            ));
        }
        return Ok(None);
    }
    if let Some(w) = &l.write {
        return Err(CliError::Usage(format!(
            "-w {}: -w saves the packets of a live capture (-i IFACE); a capture file is read, not written (copy the file, or editcap it)",
            w.display()
        )));
    }
    if l.capture_filter.is_some() {
        return Err(CliError::Usage(
            "-f is a capture filter, for a live capture (-i IFACE); to choose messages of a capture file, use -Y".into(),
        ));
    }
    if !l.autostop.is_empty() {
        return Err(CliError::Usage(
            "-a stops a live capture (-i IFACE); for a capture file, -c N stops after N messages"
                .into(),
        ));
    }
    Ok(None)
}

/// The live options of `a`, for [`crate::input::live::LiveCapture::start`]; the signals are caught.
pub fn options(a: &CaptureArgs) -> LiveOptions {
    LiveOptions {
        interfaces: a.live.interfaces.clone(),
        filter: a
            .live
            .capture_filter
            .clone()
            .or_else(|| live::default_filter(&a.ports, a.detect)),
        autostop: a.live.autostop.clone(),
        write: a.live.write.clone(),
        signals: true,
    }
}
