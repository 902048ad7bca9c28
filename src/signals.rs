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
/// a `kill` from a Ctrl-C. The first request's signal decides (Ctrl-C, then
/// `kill -TERM`, exits 130). 130 before any request.
pub fn exit_status() -> u8 {
    let signal = match SIGNAL.load(Ordering::SeqCst) {
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
/// thread of their own, one by one, each knowing its signal
/// ([`exit_status`]).
///
/// # Errors
/// If it was installed already or the system refuses a handler.
pub fn install(notices: Option<Notices>) -> std::io::Result<()> {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return Err(std::io::Error::other("the stop requests are taken already"));
    }
    #[cfg(unix)]
    {
        use std::io::Read as _;
        let mut requests = unix::take_requests()?;
        std::thread::Builder::new()
            .name("stop requests".into())
            .spawn(move || {
                let mut signal = [0u8];
                loop {
                    match requests.read(&mut signal) {
                        Ok(1) => on_request(signal[0].into(), notices),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        _ => break,
                    }
                }
            })?;
        Ok(())
    }
    #[cfg(not(unix))]
    ctrlc::set_handler(move || on_request(SIGINT, notices)).map_err(std::io::Error::other)
}

/// The handlers of the stop requests: a self-pipe. (signal-hook's published
/// its table of handlers after the `sigaction` that makes a signal caught,
/// so a SIGINT sent as soon as it showed caught was dropped, and it merged
/// two requests that came before its thread ran; ctrlc's counts them but
/// does not say which signal came.)
#[cfg(unix)]
mod unix {
    use std::os::fd::{FromRawFd as _, OwnedFd};
    use std::sync::atomic::{AtomicI32, Ordering};

    /// The pipe's write end, once made (-1 before).
    static WRITE_END: AtomicI32 = AtomicI32::new(-1);

    /// Writes the signal's number into the pipe: one byte a request.
    /// (`write` is async-signal-safe; it sets `errno` where it fails, on a
    /// full pipe of 64 KiB of unread requests, and the handler then puts
    /// back the interrupted code's, which that code may be about to read.)
    extern "C" fn handler(signal: libc::c_int) {
        let fd = WRITE_END.load(Ordering::SeqCst);
        if fd >= 0 {
            let interrupted = errno::errno();
            let byte = signal as u8;
            // SAFETY: one byte from a live local, to a descriptor never closed.
            unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
            errno::set_errno(interrupted);
        }
    }

    /// Makes the pipe, then catches SIGINT, SIGTERM and SIGHUP into it:
    /// each request caught from here on is a byte to read from the file
    /// returned.
    pub(super) fn take_requests() -> std::io::Result<std::fs::File> {
        let mut fds = [0; 2];
        // SAFETY: `pipe` fills the two descriptors of a live array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both are open, and owned here alone.
        let [read, write] = fds.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
        for (fd, nonblocking) in [(&read, false), (&write, true)] {
            use std::os::fd::AsRawFd as _;
            let fd = fd.as_raw_fd();
            // SAFETY: fcntl on an open descriptor.
            let ok = unsafe {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0
                    && (!nonblocking || libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) == 0)
            };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
        }
        // Kept open for the rest of the process (the handler writes to it).
        WRITE_END.store(std::os::fd::IntoRawFd::into_raw_fd(write), Ordering::SeqCst);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction is valid; the handler is
            // async-signal-safe and its descriptor is set above.
            let failed = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut()) != 0
            };
            if failed {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(std::fs::File::from(read))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The handler leaves `errno` as the code it interrupted had it,
        /// even where its write fails (a full pipe sets EAGAIN).
        #[test]
        fn the_handler_keeps_the_interrupted_errno() {
            let mut fds = [0; 2];
            // SAFETY: `pipe` fills the two descriptors of a live array;
            // fcntl and write act on them.
            unsafe {
                assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
                assert_eq!(libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK), 0);
                let chunk = [0u8; 4096];
                for len in [chunk.len(), 1] {
                    while libc::write(fds[1], chunk.as_ptr().cast(), len) > 0 {}
                }
            }
            WRITE_END.store(fds[1], Ordering::SeqCst);
            errno::set_errno(errno::Errno(libc::EINTR));
            handler(libc::SIGINT);
            let after = errno::errno();
            WRITE_END.store(-1, Ordering::SeqCst);
            // SAFETY: both are open, and closed once.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            assert_eq!(after.0, libc::EINTR);
        }
    }
}

/// Takes a stop request by `signal`: the first sets [`STOP`] (or, with
/// [`AT_ONCE`] set, ends the process), a second ends the process.
fn on_request(signal: i32, notices: Option<Notices>) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let second = STOP.swap(true, Ordering::SeqCst);
    let at_once = !second && AT_ONCE.load(Ordering::SeqCst);
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
    STOP.load(Ordering::SeqCst)
}
