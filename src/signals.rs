//! Requests from outside to stop: SIGINT (Ctrl-C, where the terminal sends
//! it as a signal), SIGTERM (`kill`, `timeout`, a job scheduler) and SIGHUP
//! (the terminal or SSH session closed). Left to their default action they
//! end the process mid-frame, losing what is not on disk; [`install`] turns
//! the first into the flag [`STOP`] instead, which a bake polls to stop after
//! its frame and the terminal UI to keep unsaved changes in the autosave
//! before it leaves. A second request while stopping ends the process at
//! once with [`exit_status`]. (The editor does not install it: a window
//! closes through its own unsaved-changes question, and a signal ends it as
//! before, its autosave at most [`INTERVAL`](crate::autosave::INTERVAL)
//! old.)

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set by the first stop request after [`install`].
pub static STOP: AtomicBool = AtomicBool::new(false);

/// While set, a first stop request ends the process at once, as a second
/// does: a run with nothing to keep yet. A bake sets it while it sets up
/// its solver and steps its first frame, which take minutes on a large
/// model and are not interrupted by [`STOP`] (QA's `timeout -s INT` took
/// 127 s to stop a bake that had simulated nothing).
pub static AT_ONCE: AtomicBool = AtomicBool::new(false);

/// The number of the signal of the first stop request (0 before one).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// SIGINT's number (the same on every platform; without Unix signals
/// ctrlc reports Ctrl-C and Ctrl-Break as it).
const SIGINT: i32 = 2;

/// The exit status of a run ended by a stop request: 128 + the signal's
/// number, as shells report a process a signal ended (130 for Ctrl-C, 143
/// for SIGTERM, 129 for SIGHUP), so a script or a job scheduler can tell
/// a `kill` from a Ctrl-C. 130 before any request.
pub fn exit_status() -> u8 {
    let signal = match SIGNAL.load(Ordering::Relaxed) {
        0 => SIGINT,
        signal => signal,
    };
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// What a command-line run says on standard error when a stop request
/// arrives: a frame can take long, and a request with no answer reads as
/// ignored.
#[derive(Clone, Copy, Debug)]
pub struct Notices {
    /// On the first request (it stops at the next chance).
    pub first: &'static str,
    /// On the second (the process ends at once).
    pub second: &'static str,
    /// On a first one while [`AT_ONCE`] is set (the process ends at once).
    pub at_once: &'static str,
}

/// Whether [`install`] ran.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Routes SIGINT, SIGTERM and SIGHUP to [`STOP`] for the rest of the
/// process, saying `notices` on standard error (none for a terminal UI,
/// whose screen the text would break into). The requests are taken on a
/// thread of their own, which knows each one's signal ([`exit_status`]).
///
/// # Errors
/// If it was installed already or the system refuses a handler.
pub fn install(notices: Option<Notices>) -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::Relaxed) {
        return Err(std::io::Error::other("the stop requests are taken already"));
    }
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        std::thread::Builder::new()
            .name("stop requests".into())
            .spawn(move || {
                for signal in signals.forever() {
                    on_request(signal, notices);
                }
            })?;
        Ok(())
    }
    #[cfg(not(unix))]
    ctrlc::set_handler(move || on_request(SIGINT, notices)).map_err(std::io::Error::other)
}

/// Takes a stop request by `signal`: the first sets [`STOP`] (or, with
/// [`AT_ONCE`] set, ends the process), a second ends the process.
fn on_request(signal: i32, notices: Option<Notices>) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
    let second = STOP.swap(true, Ordering::Relaxed);
    let at_once = !second && AT_ONCE.load(Ordering::Relaxed);
    if let Some(n) = notices {
        use std::io::Write as _;
        // On a line of its own, after a progress bar's.
        let text = match (second, at_once) {
            (true, _) => n.second,
            (false, true) => n.at_once,
            (false, false) => n.first,
        };
        let _ = writeln!(std::io::stderr().lock(), "\n{text}");
    }
    if second || at_once {
        crate::fsutil::remove_unfinished();
        std::process::exit(exit_status().into());
    }
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
