//! Requests from outside to stop: SIGINT (Ctrl-C, where the terminal sends
//! it as a signal), SIGTERM (`kill`, `timeout`, a job scheduler) and SIGHUP
//! (the terminal or SSH session closed). Left to their default action they
//! end the process mid-frame, losing what is not on disk; [`take`] gives
//! them to a thread of their own (no thread runs a handler for them), and
//! [`install`] turns the first into the flag [`STOP`] instead, which a bake
//! polls to stop after its frame and the terminal UI to keep unsaved
//! changes in the autosave before it leaves. A second request while
//! stopping ends the process at once with [`exit_status`]. (The editor
//! does not install it: a window closes through its own unsaved-changes
//! question, and a signal ends it as its default action does, its autosave
//! at most [`INTERVAL`](crate::autosave::INTERVAL) old.)

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

/// What [`install`] was given to say.
static NOTICES: std::sync::OnceLock<Option<Notices>> = std::sync::OnceLock::new();

/// Takes SIGINT, SIGTERM and SIGHUP away from every thread but one of its
/// own, which waits for them (`sigwait`): until [`install`] each ends the
/// process as its default action does, after it each is a stop request.
/// Call it first in `main`, before any other thread starts (one started
/// earlier would still be sent them). Later calls do nothing; nor does it
/// anywhere without Unix signals.
///
/// No thread has a handler run for them, so none runs in a library's
/// place: METIS's GKlib catches SIGTERM with a handler of its own while it
/// orders a system, which took a bake's SIGTERM as its own error (the bake
/// went on) or jumped out of `malloc` with its lock held (the bake hung:
/// QA, one `kill` in 20 during a set-up).
///
/// # Errors
/// If the system refuses the mask or the thread.
pub fn take() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        static TAKEN: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
        TAKEN
            .get_or_init(|| unix::block_and_wait().map_err(|e| e.to_string()))
            .clone()
            .map_err(std::io::Error::other)
    }
    #[cfg(not(unix))]
    Ok(())
}

/// Routes SIGINT, SIGTERM and SIGHUP to [`STOP`] for the rest of the
/// process, saying `notices` on standard error (none for a terminal UI,
/// whose screen the text would break into). The requests are taken on the
/// thread of [`take`] (which it calls if `main` did not), one by one, each
/// knowing its signal ([`exit_status`]); on Linux that thread is named
/// `stop requests` from here on.
///
/// # Errors
/// If it was installed already or the system refuses the mask, the thread
/// or (without Unix signals) the handler.
pub fn install(notices: Option<Notices>) -> std::io::Result<()> {
    if INSTALLED.load(Ordering::SeqCst) || NOTICES.set(notices).is_err() {
        return Err(std::io::Error::other("the stop requests are taken already"));
    }
    #[cfg(unix)]
    {
        take()?;
        INSTALLED.store(true, Ordering::SeqCst);
        unix::name_the_waiter();
        Ok(())
    }
    #[cfg(not(unix))]
    {
        INSTALLED.store(true, Ordering::SeqCst);
        ctrlc::set_handler(move || on_request(SIGINT, notices)).map_err(std::io::Error::other)
    }
}

/// The signals taken by a thread of their own ([`take`]).
#[cfg(unix)]
mod unix {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// The waiting thread (`pthread_t`), once started (0 before).
    static WAITER: AtomicUsize = AtomicUsize::new(0);

    /// The stop signals.
    const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM];

    /// Whether each of [`STOP_SIGNALS`] was ignored when the process
    /// started (`nohup`, a script's background job): blocked, an ignored
    /// signal is still taken by `sigwait`, and it must not end a run that
    /// has not [`install`](super::install)ed.
    static IGNORED: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];

    /// Whether `signal` was ignored when the process started.
    pub(super) fn was_ignored(signal: i32) -> bool {
        let slot = STOP_SIGNALS.iter().position(|&s| s == signal);
        slot.is_some_and(|i| IGNORED[i].load(Ordering::SeqCst))
    }

    /// The set of `signals`.
    fn set_of(signals: &[libc::c_int]) -> libc::sigset_t {
        // SAFETY: sigemptyset initialises the set; sigaddset adds valid
        // signal numbers to it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for &signal in signals {
                libc::sigaddset(&mut set, signal);
            }
            set
        }
    }

    /// Blocks the stop signals in this thread (and so in the threads it
    /// starts), and starts the thread that waits for them.
    pub(super) fn block_and_wait() -> std::io::Result<()> {
        for (signal, ignored) in STOP_SIGNALS.into_iter().zip(&IGNORED) {
            // SAFETY: a zeroed sigaction is a valid out-parameter, and a
            // null new action only reads the current one.
            let was = unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
            };
            ignored.store(was, Ordering::SeqCst);
        }
        let set = set_of(&STOP_SIGNALS);
        // SAFETY: a valid set; a null old mask is not written.
        let failed = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if failed != 0 {
            return Err(std::io::Error::from_raw_os_error(failed));
        }
        let waiter = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                loop {
                    let mut signal = 0;
                    // SAFETY: a valid set, blocked in this thread (as
                    // sigwait needs), and a live out-parameter.
                    if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
                        super::on_signal(signal);
                    }
                }
            })?;
        let thread = std::os::unix::thread::JoinHandleExt::as_pthread_t(&waiter);
        // (`pthread_t` is an integer of a pointer's size on some targets, a
        // pointer on others.)
        #[allow(clippy::unnecessary_cast)]
        WAITER.store(thread as usize, Ordering::SeqCst);
        Ok(())
    }

    /// Names the waiting thread `stop requests` (on Linux, where a test
    /// reads it to tell when a stop request is taken as one).
    pub(super) fn name_the_waiter() {
        #[cfg(target_os = "linux")]
        {
            let thread = WAITER.load(Ordering::SeqCst);
            if thread != 0 {
                // SAFETY: the waiter never ends, and the name is a C string
                // within Linux's 16 bytes.
                unsafe {
                    libc::pthread_setname_np(thread as libc::pthread_t, c"stop requests".as_ptr())
                };
            }
        }
    }

    /// Ends the process as `signal`'s default action does. (Were a library
    /// to install a handler for it in the instant between the two calls,
    /// as METIS's GKlib does for SIGTERM while it orders a system, that
    /// handler would run here instead.)
    pub(super) fn die_by(signal: i32) -> ! {
        // SAFETY: the default disposition, then the signal unblocked in
        // this thread and raised in it, which ends the process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set_of(&[signal]), std::ptr::null_mut());
            libc::raise(signal);
        }
        // (Not reached where the default action ends the process.)
        std::process::exit(128 + signal)
    }
}

/// Takes `signal` from the waiting thread of [`take`]: a stop request once
/// [`install`] ran, else what its disposition at the start did: the end of
/// the process, or nothing where it was ignored (`nohup softbody gui`), as
/// without [`take`]. (A stop request overrides an ignored signal, as the
/// handler [`install`] set before did.)
#[cfg(unix)]
fn on_signal(signal: i32) {
    if INSTALLED.load(Ordering::SeqCst) {
        on_request(signal, NOTICES.get().copied().flatten());
    } else if !unix::was_ignored(signal) {
        unix::die_by(signal);
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
