//! The terminal UI (`softbody tui`): a ratatui front end over the same
//! [`Session`] and [`Command`](crate::command::Command)s as the editor.
//!
//! [`app`] holds the state and maps keys to commands, [`ui`] draws it, and
//! [`run`] owns the terminal: it sets it up, restores it on every exit
//! (also on a panic, through ratatui's panic hook, and on an error, through
//! a guard), and runs the event loop — about 30 frames per second, the
//! simulation stepping on a thread of its own
//! ([`SimWorker`](crate::sim_thread::SimWorker)) whose frames are taken in
//! as they come, so keys are never blocked.

pub mod app;
pub mod ui;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::autosave::Autosave;
use crate::session::{Session, SessionError};
use crate::signals;
use app::App;

pub use crate::session::DEFAULT_PRESET;

/// Where the preset chooser looks (relative to the working directory;
/// else the opened preset's directory).
pub const PRESET_DIR: &str = "presets";

/// Time between drawn frames (about 30 Hz).
const FRAME: Duration = Duration::from_millis(33);

/// Wall time per frame the simulation may take where it steps between keys
/// (without a thread of its own: in tests, or after it stopped), leaving
/// the rest for drawing and input.
const SIM_BUDGET: Duration = Duration::from_millis(20);

/// Why the terminal UI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The preset could not be opened or built.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The terminal could not be set up, drawn to or read from.
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    /// A signal (SIGTERM, SIGHUP, SIGINT) ended the run: what became of
    /// unsaved changes.
    #[error("{0}")]
    Stopped(String),
}

// By hand, not `#[from]`: that would also make the error its `source()`, and
// error chains (`{:#}`) would print it twice.
impl From<std::io::Error> for TuiError {
    fn from(e: std::io::Error) -> Self {
        Self::Terminal(e)
    }
}

/// Where `o` lists presets: `presets` when it is a directory, else the
/// directory of the preset `path` opened (a bare file name's is the working
/// directory, not the empty path, which `o` could not list).
fn preset_dir(presets: &Path, path: Option<&Path>) -> PathBuf {
    Some(presets.to_owned())
        .filter(|dir| dir.is_dir())
        .or_else(|| path.and_then(Path::parent).map(Path::to_owned))
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Opens `preset` (else [`DEFAULT_PRESET`] if it exists, else
/// [`Preset::default`](crate::preset::Preset::default)) and runs the terminal UI until the person quits.
///
/// # Errors
/// [`TuiError::Session`] if the preset does not load or build (before the
/// terminal is touched); [`TuiError::Terminal`] if the terminal fails;
/// [`TuiError::Stopped`] after a stop signal ([`signals`]). The terminal is
/// restored in every case, and in the last two unsaved changes are written
/// to the autosave first, however recently it last wrote (a closed SSH
/// session sends SIGHUP, then leaves no terminal to draw on).
pub fn run(preset: Option<PathBuf>) -> Result<(), TuiError> {
    use std::io::IsTerminal as _;
    let say = preset.as_ref().filter(|_| std::io::stderr().is_terminal());
    if let Some(preset) = say {
        // A large model takes seconds to build (tet100k: 6-20 s): said on
        // the shell's screen, which the terminal UI's replaces (or an
        // error, after the line is cleared).
        let _ = write!(std::io::stderr(), "opening {}…", preset.display());
    }
    let opened = Session::open_or_default(preset.as_deref());
    if say.is_some() {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    let (session, path) = opened?;
    let (wake, wakes) = std::sync::mpsc::channel();
    let frames = wake.clone();
    // One wake at a time: the frames waiting are all taken in at once.
    let waiting = Arc::new(AtomicBool::new(false));
    let woken = Arc::clone(&waiting);
    let mut app = App::new(session, preset_dir(Path::new(PRESET_DIR), path.as_deref()))
        .with_autosave(
            Autosave::new(Autosave::default_dir(), crate::autosave::INTERVAL)
                .opening(preset.as_deref()),
        )
        .with_worker(move || {
            if !woken.swap(true, Ordering::Relaxed) {
                let _ = frames.send(Wake::Frame);
            }
        });
    app.background = true;
    signals::install(None).map_err(std::io::Error::other)?;
    // `try_init` installs a panic hook that restores the terminal first.
    let mut terminal = ratatui::try_init()?;
    keep_terminal_on_other_panics();
    let restore = Restore;
    let ending = event_loop(&mut terminal, &mut app, wake, &wakes, &waiting);
    // A hang-up (a closed SSH session or terminal window) fails the
    // terminal's writes (EIO) as its SIGHUP arrives: a stop, not an error
    // (it exited 1 with "Input/output error").
    let ending = ending.or_else(|e| {
        if signal_follows() {
            Ok(Ending::Signal)
        } else {
            Err(e)
        }
    });
    // Unsaved changes are kept before the terminal is touched again: after
    // a hang-up (a dropped SSH session) restoring it fails, and saying so
    // on the dead terminal ended the process before they were kept.
    let kept = match ending {
        Ok(Ending::Quit) => None,
        _ => Some(app.keep_unsaved()),
    };
    // The shell's screen back before anything is printed to it.
    drop(restore);
    // The terminal's drop shows the cursor again and, where that fails (a
    // terminal that hung up), says so with `eprintln!`, which panics on
    // that terminal: the process aborted without removing its autosave
    // lock. Shown here, the drop has nothing left to do; else it is not
    // run.
    match terminal.show_cursor() {
        Ok(()) => drop(terminal),
        Err(_) => std::mem::forget(terminal),
    }
    if let Some(panic) = other_panic() {
        // Not yet told in the status line (a thread that is not the
        // simulation's, or after its last look).
        let _ = writeln!(std::io::stderr(), "softbody: a thread panicked: {panic}");
    }
    match ending {
        Ok(Ending::Quit) => {
            if let Some(farewell) = app.farewell() {
                // (A closed standard error has no one to tell.)
                let _ = writeln!(std::io::stderr(), "softbody: {farewell}");
            }
            Ok(())
        }
        Ok(Ending::Signal) => Err(TuiError::Stopped(match kept {
            Some(Ok(true)) => app::KEPT_IN_AUTOSAVE.into(),
            Some(Ok(false)) | None => "nothing was unsaved".into(),
            Some(Err(e)) => format!("unsaved changes could not be kept: {e}"),
        })),
        Err(e) => Err(e.into()),
    }
}

/// Whether a stop signal has come or comes within 2 s (after the
/// terminal failed: a hang-up's SIGHUP, whose handler thread a loaded
/// host may run late).
fn signal_follows() -> bool {
    for _ in 0..200 {
        if signals::requested() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    signals::requested()
}

/// The last panic of a thread other than the event loop's (the
/// simulation's: the terminal UI then steps in place, and says why).
static OTHER_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Lets only a panic of this thread (the event loop's) restore the terminal
/// and end the process, as ratatui's hook does for any thread: a panic of
/// the simulation thread left the event loop drawing on the shell's screen.
/// Another thread's panic is kept for [`other_panic`].
fn keep_terminal_on_other_panics() {
    let ui = std::thread::current().id();
    let restore = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui {
            // (As [`Restore`] does: it clears no more once panicking, where
            // it would wipe the message this prints.)
            clear_screen();
            restore(info);
        } else if let Ok(mut last) = OTHER_PANIC.lock() {
            *last = Some(info.to_string());
        }
    }));
}

/// What the last panic of a thread other than the event loop's said, once.
pub(crate) fn other_panic() -> Option<String> {
    OTHER_PANIC.lock().ok()?.take()
}

/// How the event loop ended.
enum Ending {
    /// The person quit.
    Quit,
    /// A stop signal arrived.
    Signal,
}

/// Restores the terminal when dropped: on return and on error.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        // After a panic of this thread its hook has restored the terminal
        // and printed the panic on the shell's screen, which a clear would
        // wipe.
        if !std::thread::panicking() {
            clear_screen();
        }
        // A terminal that hung up cannot be restored, and has no one to
        // tell (`ratatui::restore` said so on it, which panicked).
        let _ = ratatui::try_restore();
    }
}

/// Clears the terminal UI's screen before it is left: tmux, leaving the
/// alternate screen of a window enlarged since it was entered, fills the
/// shell screen's new rows from it, and the terminal UI's boxes stayed
/// above the shell's lines (QA). (A hung-up terminal fails the write at
/// once.)
fn clear_screen() {
    use ratatui::crossterm::terminal::{Clear, ClearType};
    let _ = ratatui::crossterm::execute!(std::io::stdout(), Clear(ClearType::All));
}

/// What wakes the event loop between drawn frames.
enum Wake {
    /// An input event (or the error reading one).
    Input(std::io::Result<Event>),
    /// Frames the simulation thread sent: taken in at once, drawn with the
    /// next frame (collected only at drawn frames, two in flight, a
    /// simulation faster than 60 frames/s, dt under 17 ms, waited on the
    /// UI).
    Frame,
}

/// Draws and handles `wakes` (input read on a thread of its own, sending
/// through `input`; a frame's wake is sent while `waiting` is false, which
/// it sets) until the UI quits or a stop is requested.
fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    input: Sender<Wake>,
    wakes: &Receiver<Wake>,
    waiting: &AtomicBool,
) -> Result<Ending, std::io::Error> {
    let reader = read_input(input);
    loop {
        if signals::requested() {
            return Ok(Ending::Signal);
        }
        let start = Instant::now();
        if !app.collect_work() {
            app.finish();
            return Ok(Ending::Quit);
        }
        app.advance(SIM_BUDGET);
        app.tick_autosave();
        terminal.draw(|frame| ui::render(frame, app))?;
        if app.recover_chosen() {
            // Keys pressed while it built were meant for the old screen.
            let mut dropped = 0;
            for wake in wakes.try_iter() {
                match wake {
                    Wake::Input(Ok(Event::Key(key))) if key.kind != KeyEventKind::Release => {
                        dropped += 1;
                    }
                    Wake::Input(Err(e)) => return Err(e),
                    Wake::Frame => waiting.store(false, Ordering::Relaxed),
                    Wake::Input(Ok(_)) => {}
                }
            }
            app.dropped_keys(dropped);
            continue;
        }
        let deadline = start + FRAME;
        // Keys waiting are read past the deadline, for up to a frame's time
        // more: a slow key held down (`n` on a large model) kept the screen
        // from being drawn until it was let go.
        let cutoff = deadline.max(Instant::now()) + FRAME;
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let event = match wakes.recv_timeout(timeout) {
                Ok(Wake::Input(event)) => event?,
                Ok(Wake::Frame) => {
                    waiting.store(false, Ordering::Relaxed);
                    app.advance(SIM_BUDGET);
                    // Frames as fast as they are taken in end the wait at
                    // the deadline.
                    if Instant::now() >= deadline {
                        break;
                    }
                    continue;
                }
                // The reader ended (it panicked, or its error came in
                // since): no key can reach the UI any more.
                Err(RecvTimeoutError::Timeout) if reader.is_finished() => {
                    let error = wakes.try_iter().find_map(|wake| match wake {
                        Wake::Input(Err(e)) => Some(e),
                        _ => None,
                    });
                    return Err(error.unwrap_or_else(|| std::io::ErrorKind::UnexpectedEof.into()));
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
            };
            match event {
                Event::Key(key) if key.kind != KeyEventKind::Release && !app.on_key(key) => {
                    app.finish();
                    return Ok(Ending::Quit);
                }
                // A resize needs nothing more: the next `draw` adapts.
                _ => {}
            }
            if Instant::now() >= cutoff {
                break;
            }
        }
        app.settle(STEPS_SETTLE);
    }
}

/// How long after the last `+`/`-` the steps a slow refactorisation held
/// back apply ([`App::settle`]): longer than a held key's repeat.
const STEPS_SETTLE: Duration = Duration::from_millis(400);

/// Reads the terminal's input events on a thread of their own, sending
/// them through `send`. (crossterm
/// 0.29 reads a terminal that has hung up — a closed SSH session — in an
/// endless loop inside its `poll`, at full CPU: read on the event loop's
/// thread, that kept the terminal UI from ever seeing the SIGHUP, keeping
/// its unsaved changes or ending. On its own thread it spins only until the
/// event loop, which no longer waits on it, ends the process.)
fn read_input(send: Sender<Wake>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        loop {
            let event = event::read();
            let failed = event.is_err();
            if send.send(Wake::Input(event)).is_err() || failed {
                break;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_listed_from_the_opened_preset_s_directory() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let none = here.join("no-such-dir");
        let listed = |path: Option<&str>| preset_dir(&none, path.map(Path::new));
        assert_eq!(listed(Some("cloth.toml")), PathBuf::from("."));
        assert_eq!(listed(Some("work/cloth.toml")), PathBuf::from("work"));
        assert_eq!(listed(None), PathBuf::from("."));
        let presets = here.join("presets");
        assert_eq!(preset_dir(&presets, Some(Path::new("cloth.toml"))), presets);
    }
}
