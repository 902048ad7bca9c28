//! The editor (`softbody gui`): an eframe/egui front end over the same
//! [`Session`] and [`Command`](crate::command::Command)s as the terminal UI.
//!
//! [`app`] holds the state and runs each UI frame (step the session within
//! a time budget, lay out the panels, carry out what they asked for);
//! [`menu`] is the menu bar and the shortcuts, [`panels`] the side panels
//! and the status bar, [`plots`] the energy and convergence graphs;
//! [`viewport`] is the 3D view (camera controls, picking, grabbing), drawn
//! by [`scene`] (three-d inside an egui paint callback) with the
//! [`overlay`]s on top, looking through a [`camera`]; [`picking`] and
//! [`selection`] hold the geometry and the set behind selecting;
//! [`capture`] is the headless screenshot run. The simulation steps on its
//! own thread ([`SimWorker`](crate::sim_thread::SimWorker)). [`run`] opens
//! the window.

pub mod app;
pub mod ball;
pub mod camera;
pub mod capture;
pub mod menu;
pub mod overlay;
pub mod panels;
pub mod picking;
pub mod plots;
pub mod scene;
pub mod selection;
pub mod viewport;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::autosave::{Autosave, INTERVAL};
use crate::session::{Session, SessionError};
use app::EditorApp;
use capture::Script;

/// Why the editor could not run or its scripted run failed.
#[derive(Debug, thiserror::Error)]
pub enum GuiError {
    /// The preset could not be opened or built.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// No display, or the window or its OpenGL context could not be made.
    #[error("window: {0}")]
    Window(String),
    /// The scripted run (`--frames`, `--screenshot`) failed its check or
    /// could not save the screenshot.
    #[error("{0}")]
    Check(String),
}

/// What `softbody gui` was asked to do besides opening the window.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Play this many UI frames, then (with `screenshot`) save a
    /// screenshot and quit.
    pub frames: Option<usize>,
    /// Where to save the screenshot of the whole window (PNG).
    pub screenshot: Option<PathBuf>,
    /// Overlays to turn on.
    pub overlays: Vec<overlay::OverlayName>,
}

/// Whether a display is configured for a window (`DISPLAY` or
/// `WAYLAND_DISPLAY` set and not empty).
pub fn display_available() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Opens `path` (a preset or an OBJ; else the default scene, see
/// [`Session::open_or_default`]) in the editor window and runs it until
/// the window closes.
///
/// # Errors
/// [`GuiError::Session`] if the scene does not load (before any window
/// opens) where no window would show the error ([`open_for_editor`]);
/// [`GuiError::Window`] without a display or an OpenGL context;
/// [`GuiError::Check`] if a scripted run's screenshot is blank or cannot be
/// saved.
pub fn run(path: Option<PathBuf>, options: Options) -> Result<(), GuiError> {
    let windowed = options.frames.is_none() && display_available();
    let (session, refused) = open_for_editor(path.as_deref(), windowed)?;
    let why = refused.as_ref().map(|e| format!("error: {e}"));
    if !display_available() {
        return Err(GuiError::Window(
            "no display: neither DISPLAY nor WAYLAND_DISPLAY is set".into(),
        ));
    }
    let title = format!("Softbody Studio — {}", session.name());
    // A scripted run keeps its state in a file of its own, removed after:
    // it starts from the default layout whatever an earlier run left (a
    // side panel scrolled down in someone's session scrolled the README's
    // screenshots) and leaves no trace.
    let scratch_state = options.frames.map(|_| {
        std::env::temp_dir().join(format!("softbody-scripted-{}.ron", std::process::id()))
    });
    let native = eframe::NativeOptions {
        renderer: eframe::Renderer::Glow,
        depth_buffer: 24,
        viewport: eframe::egui::ViewportBuilder::default()
            .with_title(title)
            .with_app_id("softbody-studio")
            .with_drag_and_drop(true)
            .with_inner_size([1280.0, 800.0])
            // Below it the side panel's fields and the 3D view crowd out
            // each other (a window dragged small lost its status bar).
            .with_min_inner_size([800.0, 500.0]),
        // A scripted run starts from the default layout and leaves no trace.
        persist_window: options.frames.is_none(),
        persistence_path: scratch_state.clone(),
        ..Default::default()
    };
    let outcome: Arc<Mutex<Result<(), String>>> = Arc::new(Mutex::new(Ok(())));
    let script = options.frames.map(|frames| Script {
        frames,
        screenshot: options.screenshot.clone(),
        outcome: Arc::clone(&outcome),
    });
    let ran = eframe::run_native(
        "Softbody Studio",
        native,
        Box::new(move |cc| {
            let scripted = script.is_some();
            let mut app = EditorApp::new(cc, session, script).with_worker(&cc.egui_ctx);
            if let Some(why) = why {
                // Said where the editor was started from too, once its
                // window is there.
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "softbody: {why}; the editor opens on the default scene"
                );
                app = app.with_message(why);
            }
            // A scripted run (CI, screenshots) neither offers nor writes
            // crash-recovery autosaves.
            if !scripted {
                app = app.with_autosave(
                    Autosave::new(Autosave::default_dir(), INTERVAL).opening(path.as_deref()),
                );
            }
            for &name in &options.overlays {
                app.viewport.overlays.enable(name);
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| GuiError::Window(without_source_location(&e.to_string())));
    if let Some(file) = scratch_state {
        let _ = std::fs::remove_file(file);
    }
    // No window after all (a stale DISPLAY, no OpenGL): the file's error is
    // what to say, as without a display.
    if let (Err(_), Some(refused)) = (&ran, refused) {
        return Err(GuiError::Session(refused));
    }
    ran?;
    let result = outcome
        .lock()
        .map_or_else(|_| Err("the editor panicked".to_owned()), |r| r.clone());
    result.map_err(GuiError::Check)
}

/// What the editor opens for `path` ([`Session::open_or_default`]): where
/// it would open a window (`windowed`), a file that does not open leaves
/// it on the default scene with the error to show (the second value), as
/// File ▸ Open does: started from a file manager or a launcher, a bad OBJ
/// opened nothing, its error on a standard error no one saw (QA).
///
/// # Errors
/// As [`Session::open_or_default`] where no window would show them (a
/// scripted run, no display), and the file's error where the default scene
/// does not open either.
pub fn open_for_editor(
    path: Option<&Path>,
    windowed: bool,
) -> Result<(Session, Option<SessionError>), SessionError> {
    match Session::open_or_default(path) {
        Ok((session, _)) => Ok((session, None)),
        Err(e) if windowed && path.is_some() => match Session::open_or_default(None) {
            Ok((session, _)) => Ok((session, Some(e))),
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// `message` without a dependency's source location: winit's OS errors read
/// `os error at /root/.cargo/registry/…/mod.rs:788: Failed to open
/// connection to X server`, a path that tells a user nothing.
fn without_source_location(message: &str) -> String {
    if let Some(at) = message.find(" at ") {
        let rest = &message[at + 4..];
        if let Some(end) = rest.find(".rs:")
            && !rest[..end].contains(' ')
        {
            let after = &rest[end + 4..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits > 0 && after[digits..].starts_with(':') {
                return format!("{}{}", &message[..at], &after[digits..]);
            }
        }
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_locations_are_left_out_of_window_errors() {
        assert_eq!(
            without_source_location(
                "winit EventLoopError: os error at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/winit-0.30.13/src/platform_impl/linux/mod.rs:788: Failed to open connection to X server"
            ),
            "winit EventLoopError: os error: Failed to open connection to X server"
        );
        for plain in [
            "no display",
            "failed at start: x.rs",
            "look at this.rs:12 now",
        ] {
            assert_eq!(without_source_location(plain), plain);
        }
    }
}
