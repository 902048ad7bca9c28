//! Requests from outside to stop: SIGINT (Ctrl-C, where the terminal sends
//! it as a signal), SIGTERM (`kill`, `timeout`, a job scheduler) and SIGHUP
//! (the terminal or SSH session closed). Left to their default action they
//! end the process mid-frame, losing what is not on disk; [`install`] turns
//! the first into the flag [`STOP`] instead, which a bake polls to stop after
//! its frame and the terminal UI to keep unsaved changes in the autosave
//! before it leaves. A second request while stopping ends the process at
//! once with [`INTERRUPTED`]. (The editor does not install it: a window
//! closes through its own unsaved-changes question, and a signal ends it as
//! before, its autosave at most [`INTERVAL`](crate::autosave::INTERVAL)
//! old.)

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the first stop request after [`install`].
pub static STOP: AtomicBool = AtomicBool::new(false);

/// While set, a first stop request ends the process at once, as a second
/// does: a run with nothing to keep yet. A bake sets it while it sets up
/// its solver and steps its first frame, which take minutes on a large
/// model and are not interrupted by [`STOP`] (QA's `timeout -s INT` took
/// 127 s to stop a bake that had simulated nothing).
pub static AT_ONCE: AtomicBool = AtomicBool::new(false);

/// The exit status of a run ended by a stop request (128 + SIGINT, as
/// shells report Ctrl-C).
pub const INTERRUPTED: u8 = 130;

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

/// Routes SIGINT, SIGTERM and SIGHUP to [`STOP`] for the rest of the
/// process, saying `notices` on standard error (none for a terminal UI,
/// whose screen the text would break into).
///
/// # Errors
/// If a handler is already installed or the system refuses one.
pub fn install(notices: Option<Notices>) -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(move || {
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
            std::process::exit(INTERRUPTED.into());
        }
    })
}

/// Whether a stop was requested.
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
