//! The `kwire` binary: [`kwire::cli::main`], told first whether stdout was closed when
//! the process started.

use std::sync::atomic::{AtomicBool, Ordering};

/// Descriptor 1 was not open for writing (closed, or open read-only) when the process
/// started, as [`check_stdout`] found it.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Looks at descriptor 1 before Rust's runtime starts. The runtime opens `/dev/null` on
/// a standard descriptor it finds closed, after which a closed stdout (`>&-`) takes every
/// write and cannot be told from `/dev/null` opened for reading and writing (Python's
/// `subprocess.DEVNULL`); so this runs from the initialisers the loader calls before
/// `main` (as the runtime's own reading of the arguments does on Linux).
#[cfg(unix)]
extern "C" fn check_stdout() {
    // SAFETY: F_GETFL reads the status flags of descriptor 1 and touches no memory; it
    // fails only with EBADF, a descriptor that is not open. A descriptor open only for
    // reading (`1</etc/hostname`) fails every write with EBADF too, which Rust's stdout
    // ignores as it ignores a closed one.
    let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
    let closed = flags == -1 || flags & libc::O_ACCMODE == libc::O_RDONLY;
    STDOUT_CLOSED.store(closed, Ordering::Relaxed);
}

/// [`check_stdout`] in the ELF initialisers.
#[cfg(all(unix, not(target_vendor = "apple")))]
#[used]
#[link_section = ".init_array"]
static CHECK_STDOUT: extern "C" fn() = check_stdout;

/// [`check_stdout`] in the Mach-O initialisers.
#[cfg(target_vendor = "apple")]
#[used]
#[link_section = "__DATA,__mod_init_func"]
static CHECK_STDOUT: extern "C" fn() = check_stdout;

fn main() {
    kwire::cli::stdout_closed_at_start(STDOUT_CLOSED.load(Ordering::Relaxed));
    std::process::exit(kwire::cli::main());
}
