//! The terminal UI (`softbody tui`): a ratatui front end over the same
//! [`Session`] and [`Command`](crate::command::Command)s as the editor.
//!
//! [`app`] holds the state and maps keys to commands, [`ui`] draws it, and
//! [`run`] owns the terminal: it sets it up, restores it on every exit
//! (also on a panic, through ratatui's panic hook, and on an error, through
//! a guard), and runs the event loop — about 30 frames per second, stepping
//! the session for at most part of each frame so keys are never blocked.

pub mod app;
pub mod ui;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::autosave::Autosave;
use crate::session::{Session, SessionError};
use app::App;

pub use crate::session::DEFAULT_PRESET;

/// Where the preset chooser looks (relative to the working directory;
/// else the opened preset's directory).
pub const PRESET_DIR: &str = "presets";

/// Time between drawn frames (about 30 Hz).
const FRAME: Duration = Duration::from_millis(33);

/// Wall time per frame the simulation may take, leaving the rest for
/// drawing and input.
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
/// [`Preset::default`]) and runs the terminal UI until the person quits.
///
/// # Errors
/// [`TuiError::Session`] if the preset does not load or build (before the
/// terminal is touched); [`TuiError::Terminal`] if the terminal fails. The
/// terminal is restored in every case.
pub fn run(preset: Option<PathBuf>) -> Result<(), TuiError> {
    let (session, path) = Session::open_or_default(preset.as_deref())?;
    let mut app =
        App::new(session, preset_dir(Path::new(PRESET_DIR), path.as_deref())).with_autosave(
            Autosave::new(Autosave::default_dir(), crate::autosave::INTERVAL),
        );
    // `try_init` installs a panic hook that restores the terminal first.
    let mut terminal = ratatui::try_init()?;
    let _restore = Restore;
    event_loop(&mut terminal, &mut app)
}

/// Restores the terminal when dropped: on return and on error.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        ratatui::restore();
    }
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> Result<(), TuiError> {
    loop {
        let start = Instant::now();
        app.advance(SIM_BUDGET);
        app.tick_autosave();
        terminal.draw(|frame| ui::render(frame, app))?;
        let deadline = start + FRAME;
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            if !event::poll(timeout)? {
                break;
            }
            match event::read()? {
                Event::Key(key) if key.kind != KeyEventKind::Release && !app.on_key(key) => {
                    app.finish();
                    return Ok(());
                }
                // A resize needs nothing more: the next `draw` adapts.
                _ => {}
            }
        }
    }
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
