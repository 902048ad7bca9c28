//! The terminal UI's state and key handling: [`App`] owns the [`Session`]
//! and the UI-only state (selected parameter, input mode, view rotation).
//!
//! Keys are handled in two steps: [`App::handle_key`] maps a key to an
//! [`Action`] — a [`Command`] for the session, quitting, or nothing — and
//! changes only UI state; [`App::on_key`] then applies the command to the
//! session and reports the outcome in the status line. The mapping is
//! therefore testable without a terminal and without stepping anything.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::autosave::{Autosave, Recovery};
use crate::background::{self, Work};
use crate::command::{Command, Param};
use crate::param::{LIVE_REFACTOR_MS, Pacer};
pub use crate::param::{ParamId, format_value};
use crate::preset::library::{self, LibraryMaterial};
use crate::preset::{BuildKind, PinSpec, PresetError, Selector};
use crate::session::{Applied, STILL_STOPPING, Session, SessionError};
use crate::sim_thread::SimWorker;
use crate::solver::memory::{Gauge, Resident};
use crate::solver::{Acceleration, SimParams};

/// Rotation per key press, in radians (15°).
pub const ROTATE_STEP: f64 = std::f64::consts::PI / 12.0;

/// Every key of the main screen and what it does, in the order the help
/// overlay lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("space", "play / pause"),
    ("n", "step one frame"),
    ("r", "reset to rest"),
    ("↑ ↓", "select a parameter"),
    (
        "+ -",
        "raise / lower it (weights ×/÷ 10^¼, the scale ×/÷ 10)",
    ),
    ("Enter", "type a value"),
    (
        "p",
        "pin rules: top or bottom plane, group, a grid's top edge or corners",
    ),
    ("m", "next acceleration: plain, Chebyshev, Anderson"),
    (
        "M",
        "next material of the library (as the editor's buttons)",
    ),
    ("B", "build the mesh as springs / tetrahedra"),
    ("e", "extrapolated initial guess on / off"),
    (
        "a",
        "measure the next step's error against Newton (again: cancel)",
    ),
    ("u U", "undo / redo (also Ctrl-Z, Ctrl-Y / Ctrl-Shift-Z)"),
    ("s Ctrl-S", "save the preset (asks for a path if new)"),
    ("S", "save as: type a path"),
    ("o", "open a preset from presets/ or, with /, any path"),
    ("← → [ ]", "rotate / tilt the preview"),
    ("w", "the messages in full, the mesh's notes among them"),
    ("?", "this help"),
    (
        "q Ctrl-C",
        "quit (asks first when there are unsaved changes)",
    ),
];

/// Where the status line's note on the mesh sends the user for the rest of
/// its notes.
const NOTES_LISTED: &str = "w lists them";

/// The lines Page Up and Page Down scroll the help and the messages by.
const HELP_PAGE: usize = 8;

/// The keys of [`PIN_KEYS`] whose rules need a generated grid (listed only
/// for one).
pub const GRID_PIN_KEYS: [&str; 2] = ["t", "c"];

/// The keys of [`PIN_KEYS`] whose planes need a model that does not lie
/// flat (listed only for one).
pub const PLANE_PIN_KEYS: [&str; 2] = ["y", "b"];

/// The entries of the pin menu, in the order it lists them.
pub const PIN_KEYS: &[(&str, &str)] = &[
    ("t", "hard-pin the top edge (grids)"),
    ("c", "hard-pin the top corners (grids)"),
    ("y", "hard-pin the top plane (highest vertices)"),
    ("b", "hard-pin the bottom plane (lowest vertices)"),
    ("g", "hard-pin a group: type its name"),
    ("x", "remove every pin"),
];

/// What the UI is doing with the keyboard.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    /// The main screen.
    Normal,
    /// Typing a value for a parameter (the field starts empty; the popup
    /// shows the current value).
    Edit {
        /// The parameter edited.
        param: ParamId,
        /// The text typed so far.
        text: String,
    },
    /// Typing the path to save the preset to.
    SaveAs {
        /// The text typed so far.
        text: String,
        /// What follows the save.
        after: After,
    },
    /// Choosing a preset to open.
    Open {
        /// The presets found, sorted by file name.
        files: Vec<PathBuf>,
        /// The highlighted entry.
        selected: usize,
    },
    /// Typing the path of a preset or an OBJ to open (`/` in the list of
    /// presets, or `o` where there are none).
    OpenPath {
        /// The text typed so far.
        text: String,
    },
    /// The pin menu.
    Pins,
    /// Typing the name of a group to pin.
    PinGroup {
        /// The text typed so far.
        text: String,
    },
    /// The help overlay, its first `top` lines scrolled out of view
    /// (where the terminal is too short for all of them).
    Help {
        /// Lines scrolled past.
        top: usize,
    },
    /// The messages in full ([`App::messages`]), scrolled as the help.
    Messages {
        /// Lines scrolled past.
        top: usize,
    },
    /// Quitting with unsaved changes: save, discard or stay.
    ConfirmQuit,
    /// A save over the preset's file, which changed on disk since it was
    /// opened or saved here: overwrite it, reopen it or stay.
    ChangedOnDisk {
        /// The file.
        path: PathBuf,
        /// What follows the save.
        after: After,
    },
    /// Save-as onto an existing preset: replace it or stay.
    ConfirmOverwrite {
        /// The existing file.
        path: PathBuf,
        /// What follows the save.
        after: After,
    },
    /// Opening `path` with unsaved changes: save, discard or stay.
    ConfirmOpen {
        /// The preset to open.
        path: PathBuf,
    },
    /// An autosave from an earlier run that ended with unsaved changes:
    /// recover or discard it.
    Recover(Box<Recovery>),
}

impl Mode {
    /// Whether the keys type into a text field (where Ctrl chords edit the
    /// text and the cursor is kept).
    fn is_typing(&self) -> bool {
        matches!(
            self,
            Mode::Edit { .. } | Mode::SaveAs { .. } | Mode::OpenPath { .. } | Mode::PinGroup { .. }
        )
    }
}

/// What follows a save asked for on the way out of the preset: nothing,
/// quitting or opening another preset (once the save worked).
#[derive(Clone, Debug, PartialEq)]
pub enum After {
    /// Stay on the preset.
    Stay,
    /// Leave the terminal UI.
    Quit,
    /// Open this preset.
    Open(PathBuf),
}

/// The action of saving to `path` (`None`: the preset's file), over a
/// change made to it elsewhere if `anyway`, then what comes `after`.
fn save(path: Option<PathBuf>, after: After, anyway: bool) -> Action {
    let command = if anyway {
        Command::SaveAnyway(path)
    } else {
        Command::Save(path)
    };
    match after {
        After::Stay => Action::Apply(command),
        after => Action::Save { command, after },
    }
}

/// What a key asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Nothing for the session (the UI state may have changed).
    None,
    /// Apply this command to the session.
    Apply(Command),
    /// Leave the terminal UI.
    Quit,
    /// Save (a [`Command::Save`] or [`Command::SaveAnyway`]), then quit
    /// or open another preset (`after`) if that worked.
    Save {
        /// The save.
        command: Command,
        /// What follows.
        after: After,
    },
    /// Leave now, unsaved changes kept in the autosave for the next run (a
    /// second Ctrl-C at the question).
    Abandon,
}

/// The terminal UI: the session and the UI-only state around it.
pub struct App {
    /// The open scene.
    pub session: Session,
    /// The index of the selected entry of [`App::params`].
    pub selected: usize,
    /// How the keyboard is used now.
    pub mode: Mode,
    /// Rotation of the preview about the vertical axis (radians).
    pub yaw: f64,
    /// Tilt of the preview about the horizontal axis (radians).
    pub pitch: f64,
    /// The last outcome or error, shown in the status line.
    pub status: String,
    /// In a text field, the characters between the cursor and the end of
    /// its text (0: at the end, where a field opens).
    pub caret_back: usize,
    /// Whether colours are off (`NO_COLOR` set and not empty, which the
    /// terminal back end honours): the energy chart's series then differ
    /// by their markers.
    pub no_color: bool,
    /// Whether the terminal draws braille, which the preview and the energy
    /// chart plot in: not the Linux console's (`TERM=linux`), whose fonts
    /// have no braille, nor a VT terminal's (`TERM=vt…`), whose character
    /// sets have none ([`draws_braille`]); they plot in half blocks.
    pub braille: bool,
    /// Where `o` looks for presets.
    pub preset_dir: PathBuf,
    /// Steps the session in real time, on the UI's thread, unless the
    /// simulation has a thread of its own (tests, and a thread that stopped).
    pub pacer: Pacer,
    /// The simulation's thread ([`App::with_worker`]; most tests step in
    /// place).
    worker: Option<SimWorker>,
    /// The session changed since the worker last got it.
    unsynced: bool,
    /// Writes unsaved changes for crash recovery (none in tests).
    autosave: Option<Autosave>,
    /// The `+`/`-` steps that led to the selected value, newest last: a
    /// step back returns exactly to the value before (× and ÷ by the step
    /// can leave float noise, which left an undone change unsaved).
    steps: Vec<Step>,
    /// The command the last `+`/`-` made, until applied: any other change
    /// of the preset (undo, a typed value, another file) forgets the steps.
    stepped: Option<Command>,
    /// Steps waiting to apply as one: the parameter, its value and when the
    /// last step came (see [`App::settle`]).
    pending: Option<(ParamId, f64, Instant)>,
    /// Steps applied as one in the background ([`App::work`]), until
    /// they are in: shown meanwhile, as [`App::pending`] steps are (the
    /// list went back to the old value for the seconds a large model's
    /// refactorisation took, and the header lost its `*`).
    applying: Option<(ParamId, f64)>,
    /// A `+`/`-` that refactorises applies at once while the last numeric
    /// factorisation took at most this long (ms), else when the keys stop
    /// ([`LIVE_REFACTOR_MS`] by default).
    pub live_refactor_ms: f64,
    /// Whether commands that build or factorise a large model run on a
    /// thread of their own ([`background`]; the terminal UI's `run` turns
    /// it on, tests apply them in place unless they set it).
    pub background: bool,
    /// Such a command applying, and how to report it.
    work: Option<(Work, Report)>,
    /// The keys pressed while it applies, handled after it in order.
    held: Vec<KeyEvent>,
    /// The autosave `r` chose to recover, recovered once the screen says
    /// so ([`App::recover_chosen`]).
    recovering: Option<Box<Recovery>>,
    /// The keys pressed meanwhile (see [`App::dropped_keys`]).
    ignored: usize,
    /// What to tell the shell once the terminal is restored.
    farewell: Option<&'static str>,
    /// Reads the memory the process holds (see [`App::memory`]).
    memory: Gauge,
    /// The help's or the messages' lines that did not fit when they were
    /// last drawn (how far they scroll).
    scroll_hidden: Cell<usize>,
}

/// Told when the UI ends with unsaved changes kept for the next start.
pub const KEPT_IN_AUTOSAVE: &str =
    "unsaved changes are in the autosave; the next start offers them";

/// One `+` or `-` on a parameter: from which value to which.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Step {
    param: ParamId,
    up: bool,
    from: f64,
    to: f64,
}

/// The most steps [`App`] remembers.
const STEPS_KEPT: usize = 64;

/// How [`App::apply`] reports a command's outcome: what it was, the
/// preset before it (none for a `+`/`-` step, which keeps the steps) and
/// the field a typed value came from, which opens again with it when the
/// session refuses the value (also after it applied in the background).
#[derive(Debug)]
struct Report {
    loading: bool,
    pins: bool,
    /// Whether the command builds the model anew (its mesh's warnings
    /// follow the message).
    building: bool,
    done: std::borrow::Cow<'static, str>,
    /// Whether the command undoes or redoes a change, whose message then
    /// says what it took back or did again after [`Report::done`].
    retraces: bool,
    before: Option<crate::preset::Preset>,
    field: Option<Mode>,
}

impl App {
    /// The UI over `session`, looking for presets to open in `preset_dir`.
    pub fn new(session: Session, preset_dir: PathBuf) -> Self {
        let [yaw, pitch] = view_angles(session.preset().view);
        Self {
            status: session.mesh_note(NOTES_LISTED).unwrap_or_default(),
            caret_back: 0,
            no_color: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            braille: draws_braille(std::env::var("TERM").ok().as_deref()),
            session,
            selected: 0,
            mode: Mode::Normal,
            yaw,
            pitch,
            preset_dir,
            pacer: Pacer::default(),
            worker: None,
            unsynced: false,
            autosave: None,
            steps: Vec::new(),
            stepped: None,
            pending: None,
            applying: None,
            live_refactor_ms: LIVE_REFACTOR_MS,
            background: false,
            work: None,
            held: Vec::new(),
            recovering: None,
            ignored: 0,
            farewell: None,
            memory: Gauge::default(),
            scroll_hidden: Cell::new(0),
        }
    }

    /// Steps the simulation on its own thread (see [`SimWorker`]), which
    /// calls `wake` after each frame it sends (for [`App::advance`] to take
    /// it in): a frame of a large model (tet100k: 80–290 ms) then holds up
    /// neither the keys nor the drawing, which stepping between them did.
    #[must_use]
    pub fn with_worker(mut self, wake: impl Fn() + Send + 'static) -> Self {
        self.worker = Some(SimWorker::spawn(wake));
        self.unsynced = true;
        self
    }

    /// Simulated frames per second.
    pub fn sim_fps(&self) -> f64 {
        self.worker
            .as_ref()
            .map_or_else(|| self.pacer.sim_fps(), SimWorker::sim_fps)
    }

    /// Tells the keys how many of the help's or the messages' lines the
    /// terminal left out (the renderer calls it as it draws them).
    pub(crate) fn set_scroll_hidden(&self, hidden: usize) {
        self.scroll_hidden.set(hidden);
    }

    /// What [`Mode::Messages`] shows, each with what it is: the last
    /// outcome (the status line, which a narrow terminal cuts), a blow-up's
    /// warning and every note of the mesh's build.
    pub fn messages(&self) -> Vec<(&'static str, String)> {
        let status = (!self.status.is_empty()).then(|| ("status", self.status.clone()));
        let warning = (self.session.warning()).map(|w| ("warning", w.to_string()));
        let notes = (self.session.built().warnings.iter()).map(|n| ("mesh", n.to_string()));
        status.into_iter().chain(warning).chain(notes).collect()
    }

    /// The first line of a scrolled overlay after `code`, from `top`; `None`
    /// when the key closes it (any key but the arrows, the pages, Home and
    /// End, and any key at all when it fits).
    fn scrolled(&self, code: KeyCode, top: usize) -> Option<usize> {
        let hidden = self.scroll_hidden.get();
        let top = top.min(hidden);
        match code {
            _ if hidden == 0 => None,
            KeyCode::Up => Some(top.saturating_sub(1)),
            KeyCode::Down => Some((top + 1).min(hidden)),
            KeyCode::PageUp => Some(top.saturating_sub(HELP_PAGE)),
            KeyCode::PageDown => Some((top + HELP_PAGE).min(hidden)),
            KeyCode::Home => Some(0),
            KeyCode::End => Some(hidden),
            _ => None,
        }
    }

    /// What to print once the UI has ended and the terminal is restored
    /// (the unsaved changes a second Ctrl-C kept), if anything.
    pub fn farewell(&self) -> Option<&'static str> {
        self.farewell
    }

    /// Autosaves unsaved changes with `autosave`, first offering what an
    /// earlier run left there.
    pub fn with_autosave(mut self, autosave: Autosave) -> Self {
        if let Some(recovery) = autosave.recovery() {
            self.mode = Mode::Recover(Box::new(recovery));
        }
        self.autosave = Some(autosave);
        self
    }

    /// Writes the autosave when due (not while a recovery is offered or
    /// chosen).
    pub fn tick_autosave(&mut self) {
        if matches!(self.mode, Mode::Recover(_)) || self.recovering.is_some() {
            return;
        }
        if let Some(autosave) = &mut self.autosave
            && let Err(e) = autosave.tick(&self.session)
        {
            self.status = format!("error: autosave: {e}");
        }
    }

    /// Leaving without a clean exit (a stop signal, or the terminal gone):
    /// writes unsaved changes to the autosave now, however recently it last
    /// wrote, so the next start offers all of them. Returns whether there
    /// were any to write (none while an earlier run's autosave is offered:
    /// that one stays for the next start).
    ///
    /// # Errors
    /// The autosave's write error.
    pub fn keep_unsaved(&mut self) -> Result<bool, PresetError> {
        // Steps held back are changes too, and so is a command applying
        // (waited for; the keys held after it are dropped).
        self.flush();
        if let Some(work) = self.work.take() {
            self.take_in(work);
        }
        if matches!(self.mode, Mode::Recover(_)) || !self.session.is_dirty() {
            return Ok(false);
        }
        match &mut self.autosave {
            Some(autosave) => autosave.write(&self.session).map(|()| true),
            None => Ok(false),
        }
    }

    /// A clean exit: removes the autosave (the changes were saved or
    /// knowingly discarded).
    pub fn finish(&mut self) {
        if let Some(autosave) = &mut self.autosave {
            autosave.clear();
        }
    }

    /// The value of `param` shown: a step waiting to apply's, or
    /// applying's, else the preset's.
    pub fn value(&self, param: ParamId) -> f64 {
        let of_param = |step: Option<(ParamId, f64)>| step.filter(|&(p, _)| p == param);
        of_param(self.pending.map(|(p, value, _)| (p, value)))
            .or(of_param(self.applying))
            .map_or_else(|| param.value(self.session.preset()), |(_, value)| value)
    }

    /// Whether there are changes that are not saved: the session's, and
    /// steps waiting to apply or applying.
    pub fn unsaved(&self) -> bool {
        self.session.is_dirty() || self.pending.is_some() || self.applying.is_some()
    }

    /// Applies the steps waiting (see [`App::settle`]), if any.
    pub fn flush(&mut self) {
        if let Some((param, value, _)) = self.pending.take() {
            let command = param.command(value, self.session.preset());
            self.stepped = Some(command.clone());
            self.apply(command);
            if self.work.is_some() {
                self.applying = Some((param, value));
            }
        }
    }

    /// Applies the steps waiting once `quiet` has passed since the last:
    /// `+`/`-` on a parameter whose refactorisation is slow (a large model)
    /// only moves the value shown, and the keys pressed in a row make one
    /// refactorisation, not one each (a held key queues dozens).
    pub fn settle(&mut self, quiet: Duration) {
        if self.pending.is_some_and(|(_, _, at)| at.elapsed() >= quiet) {
            self.flush();
        }
    }

    /// The parameters of the list, for the current model.
    pub fn params(&self) -> Vec<ParamId> {
        ParamId::for_model(self.session.preset(), self.session.model())
    }

    /// The selected parameter (the selection is kept within the list when
    /// the model changes).
    pub fn selected_param(&self) -> ParamId {
        let params = self.params();
        params[self.selected.min(params.len() - 1)]
    }

    /// Maps `key` to an [`Action`] in the current [`Mode`], changing only
    /// UI state (mode, selection, rotation, typed text); the session is
    /// read, never changed.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        let action = self.handle_key_in_mode(key);
        if !self.mode.is_typing() {
            // The next text field opens with its cursor at the end.
            self.caret_back = 0;
        }
        action
    }

    /// [`App::handle_key`] but for the text fields' cursor.
    fn handle_key_in_mode(&mut self, key: KeyEvent) -> Action {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            // Like `q`: unsaved changes ask first; a second Ctrl-C leaves
            // with them in the autosave.
            return match self.mode {
                Mode::ConfirmQuit => Action::Abandon,
                // Undecided: the ended run's autosave stays for the next.
                Mode::Recover(_) => Action::Quit,
                _ if self.session.is_dirty() => {
                    self.mode = Mode::ConfirmQuit;
                    Action::None
                }
                _ => Action::Quit,
            };
        }
        let chord = is_chord(&key);
        if chord && !self.mode.is_typing() {
            // Ctrl-U undid and Ctrl-R reset as the bare letters do, silently
            // (Ctrl-U clears a prompt, so a user pressed it by habit). Only
            // the editor's chords mean something here: Ctrl-S saves, Ctrl-Z
            // undoes, Ctrl-Y and Ctrl-Shift-Z redo.
            let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
            if matches!(self.mode, Mode::Normal) && ctrl {
                match key.code {
                    KeyCode::Char('s') => return self.normal_key(key.code),
                    KeyCode::Char('z') if !key.modifiers.contains(KeyModifiers::SHIFT) => {
                        return self.normal_key(KeyCode::Char('u'));
                    }
                    KeyCode::Char('y' | 'z' | 'Z') => {
                        return self.normal_key(KeyCode::Char('U'));
                    }
                    _ => {}
                }
            }
            if let KeyCode::Char(c) = key.code {
                self.status = format!("Ctrl/Alt-{c} does nothing here (? lists the keys)");
            }
            return Action::None;
        }
        match std::mem::replace(&mut self.mode, Mode::Normal) {
            Mode::Normal => self.normal_key(key.code),
            Mode::Help { top } => {
                if let Some(top) = self.scrolled(key.code, top) {
                    self.mode = Mode::Help { top };
                }
                Action::None
            }
            Mode::Messages { top } => {
                if let Some(top) = self.scrolled(key.code, top) {
                    self.mode = Mode::Messages { top };
                }
                Action::None
            }
            Mode::ConfirmQuit => match key.code {
                KeyCode::Char('s') => self.save_then(After::Quit),
                KeyCode::Char('d') => Action::Quit,
                _ => Action::None,
            },
            Mode::ConfirmOverwrite { path, after } => match key.code {
                KeyCode::Char('y') => save(Some(path), after, false),
                _ => {
                    self.status = format!("not saved: {} is kept", path.display());
                    Action::None
                }
            },
            Mode::ChangedOnDisk { path, after } => match key.code {
                KeyCode::Char('y') => save(Some(path), after, true),
                KeyCode::Char('r') => Action::Apply(Command::Load(path)),
                _ => {
                    self.status = "not saved: the file on disk is as it was changed".to_owned();
                    Action::None
                }
            },
            Mode::ConfirmOpen { path } => match key.code {
                KeyCode::Char('s') => self.save_then(After::Open(path)),
                KeyCode::Char('d') => Action::Apply(Command::Load(path)),
                _ => Action::None,
            },
            Mode::Recover(recovery) => self.recover_key(key.code, *recovery),
            Mode::Pins => self.pin_key(key.code),
            Mode::Open { files, selected } => self.open_key(key.code, files, selected),
            Mode::Edit { param, text } => self.text_field(
                text,
                key,
                |text| Mode::Edit { param, text },
                |app, text| {
                    let iterations = (param == ParamId::Iterations)
                        .then(|| crate::preset::whole_range("sim.iterations"))
                        .flatten();
                    let value = match text.parse::<f64>() {
                        Ok(v) if !v.is_finite() => Err("not a finite number".to_owned()),
                        // (An iteration count of -0.1 read "found 0", -7 too,
                        // and 1e20 "found 18446744073709551615".)
                        Ok(v) if param == ParamId::Iterations && v.fract() != 0.0 => {
                            Err("not a whole number".to_owned())
                        }
                        Ok(v)
                            if let Some(range) = &iterations
                                && !(*range.start() as f64..=*range.end() as f64).contains(&v) =>
                        {
                            let range = crate::preset::interval(range.clone());
                            Err(format!("iterations must lie in {range}"))
                        }
                        Ok(v) => Ok(v),
                        Err(_) => Err("not a number".to_owned()),
                    };
                    match value {
                        Ok(value) => Action::Apply(param.command(value, app.session.preset())),
                        Err(what) => {
                            // The field stays open with the text, to be corrected.
                            app.status = format!("{what}: '{text}' (Esc cancels)");
                            app.mode = Mode::Edit {
                                param,
                                text: text.to_owned(),
                            };
                            Action::None
                        }
                    }
                },
            ),
            Mode::SaveAs { text, after } => self.text_field(
                text,
                key,
                |text| Mode::SaveAs {
                    text,
                    after: after.clone(),
                },
                |app, text| {
                    let Some(path) = app.typed_path(text) else {
                        app.mode = Mode::SaveAs {
                            text: text.to_owned(),
                            after: after.clone(),
                        };
                        return Action::None;
                    };
                    match crate::session::replaced_by_save_as(&app.session, path.clone()) {
                        // Another existing preset: ask before replacing it.
                        Some(target) => {
                            app.mode = Mode::ConfirmOverwrite {
                                path: target,
                                after: after.clone(),
                            };
                            Action::None
                        }
                        // A bad name or a read-only file is the session's
                        // to report.
                        None => save(Some(path), after.clone(), false),
                    }
                },
            ),
            Mode::OpenPath { text } => self.text_field(
                text,
                key,
                |text| Mode::OpenPath { text },
                |app, text| match app.typed_path(text) {
                    None => {
                        app.mode = Mode::OpenPath {
                            text: text.to_owned(),
                        };
                        Action::None
                    }
                    Some(path) => app.open(path),
                },
            ),
            Mode::PinGroup { text } => self.text_field(
                text,
                key,
                |text| Mode::PinGroup { text },
                |app, text| app.pin_rule(Selector::Group(text.to_owned())),
            ),
        }
    }

    /// A key in a text field: edits `text` and stays in the mode `mode`
    /// makes of it, or on Enter calls `done` with the trimmed text (unless
    /// empty), or on Esc cancels.
    fn text_field(
        &mut self,
        mut text: String,
        key: KeyEvent,
        mode: impl FnOnce(String) -> Mode,
        done: impl FnOnce(&mut Self, &str) -> Action,
    ) -> Action {
        match edit_text(&mut text, &mut self.caret_back, key) {
            Typed::Editing => {
                self.mode = mode(text);
                Action::None
            }
            Typed::Done if !text.trim().is_empty() => done(self, text.trim()),
            Typed::Done | Typed::Cancelled => {
                // What the field said (a rejected value) is over with it.
                self.status.clear();
                Action::None
            }
        }
    }

    fn normal_key(&mut self, code: KeyCode) -> Action {
        let params = self.params();
        let param = self.selected_param();
        let value = self.value(param);
        match code {
            KeyCode::Char(' ') => Action::Apply(Command::TogglePlay),
            KeyCode::Char('n') => Action::Apply(Command::Step(1)),
            KeyCode::Char('r') => Action::Apply(Command::Reset),
            KeyCode::Char('u') => Action::Apply(Command::Undo),
            KeyCode::Char('U') => Action::Apply(Command::Redo),
            KeyCode::Char('q') if self.session.is_dirty() => {
                self.mode = Mode::ConfirmQuit;
                Action::None
            }
            KeyCode::Char('q') => Action::Quit,
            KeyCode::Char('?') => {
                self.mode = Mode::Help { top: 0 };
                Action::None
            }
            KeyCode::Char('w') => {
                self.mode = Mode::Messages { top: 0 };
                Action::None
            }
            KeyCode::Char('p') => {
                self.mode = Mode::Pins;
                Action::None
            }
            KeyCode::Char('m') => {
                let all = Acceleration::ALL;
                let now = self.session.preset().sim.acceleration;
                let next = all[(all.iter().position(|&a| a == now).unwrap_or(0) + 1) % all.len()];
                Action::Apply(Command::SetParam(Param::Acceleration(next)))
            }
            KeyCode::Char('M') => self.next_material(),
            KeyCode::Char('B') => {
                // Springs and tets, as the editor's Model panel switches
                // (the session takes back the tets' own options).
                let build = self.session.preset().build;
                let kind = match build.kind {
                    BuildKind::Springs => BuildKind::Tets,
                    BuildKind::Tets => BuildKind::Springs,
                };
                Action::Apply(Command::SetBuild(crate::preset::Build {
                    kind,
                    resolution: None,
                    edge_springs: false,
                    ..build
                }))
            }
            KeyCode::Char('e') => {
                let on = self.session.preset().sim.extrapolates();
                Action::Apply(Command::SetParam(Param::Extrapolate(!on)))
            }
            KeyCode::Char('a') => {
                // A second `a` cancels the measurement the first started.
                self.status = if self.session.cancel_accuracy() {
                    "accuracy measurement cancelled"
                } else if self.session.measure_accuracy() {
                    "measuring the accuracy (a Newton solve)…"
                } else {
                    STILL_STOPPING
                }
                .to_owned();
                Action::None
            }
            KeyCode::Char('s') if self.session.path().is_some() => {
                Action::Apply(Command::Save(None))
            }
            KeyCode::Char('s' | 'S') => self.save_as(After::Stay),
            KeyCode::Char('o') => {
                match list_presets(&self.preset_dir) {
                    Ok(files) if !files.is_empty() => {
                        let selected = self
                            .session
                            .path()
                            .and_then(|p| files.iter().position(|f| f == p))
                            .unwrap_or(0);
                        self.mode = Mode::Open { files, selected };
                    }
                    Ok(_) => {
                        // "." alone says little: the directory in full.
                        let dir = std::path::absolute(&self.preset_dir)
                            .unwrap_or_else(|_| self.preset_dir.clone());
                        self.status = format!(
                            "no presets (.toml files) in {}: type the path of a preset or an OBJ",
                            dir.display()
                        );
                        self.mode = self.open_path();
                    }
                    Err(e) => {
                        self.status = format!(
                            "cannot list {}: {e}; type the path of a preset or an OBJ",
                            self.preset_dir.display()
                        );
                        self.mode = self.open_path();
                    }
                }
                Action::None
            }
            KeyCode::Up => {
                self.selected = self.selected.min(params.len() - 1).saturating_sub(1);
                Action::None
            }
            KeyCode::Down => {
                self.selected = (self.selected + 1).min(params.len() - 1);
                Action::None
            }
            KeyCode::Char('+' | '=') => self.step(param, value, true),
            KeyCode::Char('-') => self.step(param, value, false),
            KeyCode::Enter => {
                self.mode = Mode::Edit {
                    param,
                    text: String::new(),
                };
                Action::None
            }
            KeyCode::Left => self.rotate(-ROTATE_STEP, 0.0),
            KeyCode::Right => self.rotate(ROTATE_STEP, 0.0),
            KeyCode::Char('[') => self.rotate(0.0, -ROTATE_STEP),
            KeyCode::Char(']') => self.rotate(0.0, ROTATE_STEP),
            _ => Action::None,
        }
    }

    fn rotate(&mut self, yaw: f64, pitch: f64) -> Action {
        use std::f64::consts::{FRAC_PI_2, TAU};
        self.yaw = (self.yaw + yaw).rem_euclid(TAU);
        self.pitch = (self.pitch + pitch).clamp(-FRAC_PI_2, FRAC_PI_2);
        Action::None
    }

    fn pin_key(&mut self, code: KeyCode) -> Action {
        let model = self.session.model();
        match code {
            KeyCode::Char('t') => self.pin_rule(Selector::TopEdge),
            KeyCode::Char('c') => self.pin_rule(Selector::TopCorners),
            KeyCode::Char(c @ ('y' | 'b')) => match Selector::extreme_plane(model, c == 'y') {
                Some(plane) => self.pin_rule(plane),
                None => {
                    self.status = "the model lies flat: its top and bottom planes hold every \
                                   vertex; pin the top edge (t), the corners (c) or a group (g)"
                        .to_owned();
                    Action::None
                }
            },
            KeyCode::Char('g') => {
                self.mode = Mode::PinGroup {
                    text: String::new(),
                };
                Action::None
            }
            KeyCode::Char('x') => Action::Apply(Command::SetPins(PinSpec::default())),
            _ => Action::None,
        }
    }

    /// The hard pins replaced by `selector` (the soft pins kept).
    fn pin_rule(&self, selector: Selector) -> Action {
        Action::Apply(Command::SetPins(PinSpec {
            hard: vec![selector],
            soft: self.session.preset().pins.soft.clone(),
            ..PinSpec::default()
        }))
    }

    fn open_key(&mut self, code: KeyCode, files: Vec<PathBuf>, selected: usize) -> Action {
        match code {
            KeyCode::Up => {
                self.mode = Mode::Open {
                    selected: selected.saturating_sub(1),
                    files,
                }
            }
            KeyCode::Down => {
                self.mode = Mode::Open {
                    selected: (selected + 1).min(files.len() - 1),
                    files,
                }
            }
            KeyCode::Enter => return self.open(files[selected].clone()),
            KeyCode::Char('/') | KeyCode::Tab => self.mode = self.open_path(),
            KeyCode::Esc => {}
            _ => self.mode = Mode::Open { files, selected },
        }
        Action::None
    }

    /// Opens `path`, asking first when there are unsaved changes.
    fn open(&mut self, path: PathBuf) -> Action {
        if self.session.is_dirty() {
            self.mode = Mode::ConfirmOpen { path };
            Action::None
        } else {
            Action::Apply(Command::Load(path))
        }
    }

    /// The field to type a path to open in, starting in the presets'
    /// directory.
    fn open_path(&self) -> Mode {
        let dir = field_text(&self.preset_dir);
        Mode::OpenPath {
            text: if dir.ends_with('/') { dir } else { dir + "/" },
        }
    }

    /// The path `text` names ([`path_of`]); `None`, said on the status
    /// line, for a `~` without a home.
    fn typed_path(&mut self, text: &str) -> Option<PathBuf> {
        let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
        let path = path_of(text, home);
        if path.is_none() {
            // (A directory named `~` was made in the working one.)
            self.status =
                "~ is the home directory, and HOME is not set: give the whole path".into();
        }
        path
    }

    /// Saves to the preset's file and then does what comes `after` (see
    /// [`save`]); asks for a path first when the preset has none yet (an
    /// OBJ opened alone).
    fn save_then(&mut self, after: After) -> Action {
        if self.session.path().is_some() {
            save(None, after, false)
        } else {
            self.save_as(after)
        }
    }

    /// `M`: the library's next material for the model's build kind (the
    /// first when the material is none of them), as the editor's buttons
    /// apply one.
    fn next_material(&self) -> Action {
        let preset = self.session.preset();
        let kind = preset.build.kind;
        let all: Vec<&LibraryMaterial> = (library::materials().iter())
            .filter(|m| m.kind == kind)
            .collect();
        let now = all.iter().position(|m| m.is_in(preset));
        match now.map_or(all.first(), |i| all.get((i + 1) % all.len())) {
            Some(next) => Action::Apply(Command::SetMaterial(next.material)),
            None => Action::None,
        }
    }

    /// Asks for the path to save to ([`Session::suggested_path`]), then
    /// does what comes `after`.
    fn save_as(&mut self, after: After) -> Action {
        let text = field_text(&self.session.suggested_path());
        self.mode = Mode::SaveAs { text, after };
        Action::None
    }

    /// `r` chooses to recover the offered autosave (recovered once the
    /// screen says so: see [`App::recover_chosen`]), `x` discards it, Esc
    /// leaves it for the next start; other keys keep the offer up.
    fn recover_key(&mut self, code: KeyCode, recovery: Recovery) -> Action {
        match code {
            KeyCode::Char('r') => {
                self.recovering = Some(Box::new(recovery));
                self.status = "recovering the autosaved changes: building the model…".to_owned();
            }
            KeyCode::Char('x') => recovery.decline(),
            // Undecided, as Esc is in every other question: the changes
            // stay in the autosave for the next start.
            KeyCode::Esc => {
                self.status = "the autosaved changes are kept for the next start".to_owned();
            }
            _ => self.mode = Mode::Recover(Box::new(recovery)),
        }
        Action::None
    }

    /// Recovers the autosave `r` chose, if any (building its model, which
    /// on a large one takes seconds), once the screen has said so: it
    /// showed the old values for those seconds, with nothing said, and
    /// acted on the keys pressed meanwhile (QA). Returns whether it did.
    pub fn recover_chosen(&mut self) -> bool {
        let Some(recovery) = self.recovering.take() else {
            return false;
        };
        match recovery.resume(self.autosave.as_mut()) {
            Ok(session) => {
                self.session.replace_with(session);
                self.steps.clear();
                self.selected = 0;
                self.pacer.forget();
                self.unsynced = true;
                self.status = "recovered the autosaved changes".to_owned();
            }
            Err(e) => self.status = format!("error: cannot recover the autosave: {e}"),
        }
        true
    }

    /// Says that the keys pressed while the autosave was recovered (those
    /// [`App::on_key`] ignored, and `dropped` more) were not acted on: they
    /// were meant for a screen that did not show the recovered changes (an
    /// undo among them took the recovery back).
    pub fn dropped_keys(&mut self, dropped: usize) {
        let dropped = dropped + std::mem::take(&mut self.ignored);
        if dropped > 0 {
            let keys = if dropped == 1 { "key" } else { "keys" };
            self.status += &format!(" ({dropped} {keys} pressed meanwhile ignored)");
        }
    }

    /// Handles `key` ([`App::handle_key`]) and applies its command to the
    /// session, reporting the outcome or error in [`App::status`]. Returns
    /// `false` when the UI should quit. A key while a recovery is chosen
    /// and not yet done is ignored (see [`App::dropped_keys`]).
    pub fn on_key(&mut self, key: KeyEvent) -> bool {
        if self.recovering.is_some() {
            self.ignored += 1;
            return true;
        }
        if self.work.is_some() {
            self.held.push(key);
            return true;
        }
        let step = matches!(self.mode, Mode::Normal)
            && !key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char('+' | '=' | '-'));
        if !step {
            // Whatever comes next sees the steps applied: at once, or once
            // they are in from the background (a quit must see them unsaved,
            // an undo undo them, a save write them).
            self.flush();
            if self.work.is_some() {
                self.held.push(key);
                return true;
            }
        }
        let field = matches!(self.mode, Mode::Edit { .. }).then(|| self.mode.clone());
        match self.handle_key(key) {
            Action::Quit => false,
            Action::Save { command, after } => {
                self.apply(command);
                if let Mode::ChangedOnDisk { after: then, .. } = &mut self.mode {
                    // Asked whether to overwrite: what follows waits.
                    *then = after;
                    return true;
                }
                // A failed save: stay, and say why.
                if self.session.is_dirty() {
                    return true;
                }
                match after {
                    After::Stay => true,
                    After::Quit => false,
                    After::Open(path) => {
                        self.apply(Command::Load(path));
                        true
                    }
                }
            }
            Action::Abandon => {
                let Some(autosave) = &mut self.autosave else {
                    return false;
                };
                match autosave.write(&self.session) {
                    Ok(()) => {
                        // Left on disk for the next run to offer.
                        self.autosave = None;
                        self.farewell = Some(KEPT_IN_AUTOSAVE);
                        false
                    }
                    Err(e) => {
                        self.status = format!("error: autosave: {e}; not quitting");
                        true
                    }
                }
            }
            Action::None => true,
            Action::Apply(command) => {
                self.apply_from(command, field);
                true
            }
        }
    }

    /// `+` (`up`) or `-` on `param`, now at `value`: back to exactly the
    /// value before when it undoes the last step, else
    /// [`ParamId::stepped`]. Steps are remembered while they are the
    /// parameter's only changes.
    fn step(&mut self, param: ParamId, value: f64, up: bool) -> Action {
        if self
            .steps
            .last()
            .is_some_and(|s| s.param != param || s.to != value)
        {
            // Something else changed it, or another parameter is stepped.
            self.steps.clear();
        }
        let target = match self.steps.last() {
            Some(last) if last.up != up => {
                let from = last.from;
                self.steps.pop();
                from
            }
            _ => {
                let target = param.stepped(value, up);
                if target == value && self.pending.is_some() {
                    // At a bound, the steps still waiting.
                    return Action::None;
                }
                if target == value {
                    // At a bound: nothing to step, nor back from. (Applied
                    // again, the scale at 1,000 left the last status up.)
                    self.status = format!(
                        "{} is at its {}, {}",
                        param.label(),
                        if up { "largest" } else { "smallest" },
                        format_value(value)
                    );
                    return Action::None;
                }
                // A step its bound cut short is not retraced: back from the
                // bound is a step of its own (the scale stepped to 1,000
                // from 500 went back to 500, not 100: QA). Other steps are,
                // exactly (a weight stepped up from 0 comes back to 0).
                let at_bound = param.stepped(target, up) == target;
                let back = param.stepped(target, !up);
                if at_bound && (back - value).abs() > 1e-6 * value.abs() {
                    self.steps.clear();
                } else {
                    if self.steps.len() == STEPS_KEPT {
                        self.steps.remove(0);
                    }
                    self.steps.push(Step {
                        param,
                        up,
                        from: value,
                        to: target,
                    });
                }
                target
            }
        };
        // A build per key would mesh the body again at every press.
        let wait = if param.rebuilds() {
            Some("the model is built again".to_owned())
        } else if param.refactors() && self.session.factorises_slowly(self.live_refactor_ms) {
            let factor_ms = self.session.solver().factor_stats().factor_ms;
            Some(format!("a refactorisation takes {factor_ms:.0} ms"))
        } else {
            None
        };
        if let Some(why) = wait {
            self.pending = Some((param, target, Instant::now()));
            self.status = format!(
                "{} {}: applies when the keys stop ({why})",
                param.label(),
                format_value(target)
            );
            return Action::None;
        }
        let command = param.command(target, self.session.preset());
        self.stepped = Some(command.clone());
        Action::Apply(command)
    }

    /// Applies `command`, reporting the outcome in [`App::status`]; `false`
    /// if the session refused it. With [`App::background`], a command that
    /// builds or factorises a large model ([`background::in_background`])
    /// applies on a copy of the session on a thread of its own instead
    /// (reported by [`App::collect_work`]; `true` meanwhile), and the keys
    /// pressed until it is in wait for it.
    pub fn apply(&mut self, command: Command) -> bool {
        self.apply_from(command, None)
    }

    /// [`App::apply`] of a value typed in `field` (a [`Mode::Edit`]), which
    /// opens again with it when the session refuses the value, now or once
    /// it applied in the background.
    fn apply_from(&mut self, command: Command, field: Option<Mode>) -> bool {
        let step = self.stepped.take().is_some_and(|c| c == command);
        let report = Report {
            loading: matches!(command, Command::Load(_)),
            pins: matches!(command, Command::SetPins(_)),
            building: matches!(command, Command::SetBuild(_)),
            done: match &command {
                _ if let Some(idle) = self.session.nothing_to_retrace(&command) => idle.into(),
                Command::Undo => "undid".into(),
                Command::Redo => "redid".into(),
                Command::Reset => "back to rest".into(),
                // What changed: a new scale said "built as tetrahedra" of
                // a body built so before (QA).
                Command::SetBuild(build) => {
                    let old = self.session.preset().build;
                    let kept = build.kind == old.kind;
                    if kept && build.scale != old.scale {
                        format!("scale {} m per file unit", format_value(build.scale))
                    } else if kept && build.resolution != old.resolution {
                        let cells = build
                            .resolution
                            .map_or("the default".into(), |r| r.to_string());
                        format!("built at tet resolution {cells}")
                    } else {
                        format!("built as {}", build.kind.label())
                    }
                    .into()
                }
                Command::SetMaterial(material) => {
                    let name = (library::materials().iter())
                        .find(|m| m.material == *material)
                        .map_or("a library", |m| m.name);
                    format!("{name} material").into()
                }
                // Said whole (the stats box that shows them is cut in a
                // short terminal): the guess follows the acceleration
                // unless set.
                Command::SetParam(Param::Acceleration(a)) => {
                    let sim = SimParams {
                        acceleration: *a,
                        ..self.session.preset().sim.clone()
                    };
                    format!(
                        "{} acceleration, {} initial guess",
                        a.name(),
                        sim.guess_name()
                    )
                    .into()
                }
                Command::SetParam(Param::Extrapolate(on)) => if *on {
                    "extrapolated initial guess"
                } else {
                    "inertial initial guess"
                }
                .into(),
                _ => "".into(),
            },
            retraces: match command {
                Command::Undo => self.session.undo_len() > 0,
                Command::Redo => self.session.redo_len() > 0,
                _ => false,
            },
            before: (!step).then(|| self.session.preset().clone()),
            field,
        };
        let slow = self.session.factorises_slowly(self.live_refactor_ms);
        if self.background && background::in_background(&command, slow) {
            let work = Work::spawn(&self.session, command);
            self.status = format!("{}…", work.doing);
            self.work = Some((work, report));
            return true;
        }
        let outcome = self.session.apply(command);
        self.report(outcome, report)
    }

    /// Whether a command is applying in the background.
    pub fn is_busy(&self) -> bool {
        self.work.is_some()
    }

    /// Takes in the session a background command made once it is done and
    /// reports it, then handles the keys held meanwhile; `false` when one
    /// of them quits.
    pub fn collect_work(&mut self) -> bool {
        let Some(work) = self.work.take_if(|(w, _)| w.is_finished()) else {
            return true;
        };
        self.take_in(work);
        let mut held = std::mem::take(&mut self.held).into_iter();
        while let Some(key) = held.next() {
            if !self.on_key(key) {
                return false;
            }
            if self.work.is_some() {
                // Another one went to the background: the rest wait again.
                self.held.extend(held);
                break;
            }
        }
        true
    }

    /// Takes in the session a background command made (waiting for it)
    /// and reports it.
    fn take_in(&mut self, (work, report): (Work, Report)) {
        self.applying = None;
        match work.finish(&mut self.session) {
            Ok(outcome) => {
                self.report(outcome, report);
            }
            Err(failed) => self.status = failed.to_owned(),
        }
    }

    /// Reports the `outcome` of a command in [`App::status`]; `false` if
    /// the session refused it.
    fn report(&mut self, outcome: Result<Applied, SessionError>, report: Report) -> bool {
        self.unsynced = true;
        let applied = outcome.is_ok();
        self.status = match outcome {
            Ok(Applied::Saved(path)) => format!("saved {}", path.display()),
            Ok(Applied::SavedInFull(path)) => crate::session::saved_in_full(&path),
            Ok(Applied::Reloaded) if report.loading => {
                self.selected = 0;
                self.pacer.forget();
                [self.yaw, self.pitch] = view_angles(self.session.preset().view);
                let opened = format!("opened {}", self.session.name());
                match self.session.mesh_note(NOTES_LISTED) {
                    Some(note) => format!("{opened}; {note}"),
                    None => opened,
                }
            }
            Ok(Applied::BlewUp { frames, error }) => {
                format!("blew up after {frames} frames: {error}")
            }
            Err(SessionError::ChangedOnDisk(path)) => {
                self.mode = Mode::ChangedOnDisk {
                    path: path.clone(),
                    after: After::Stay,
                };
                format!(
                    "{} changed on disk since it was opened or saved here",
                    path.display()
                )
            }
            Ok(_) if report.pins => match self.session.model().pins.hard_vertices().len() {
                0 => "no vertex is pinned".to_owned(),
                1 => "1 vertex pinned".to_owned(),
                n => format!("{n} vertices pinned"),
            },
            // What an undo or redo took back or did again.
            Ok(_) if report.retraces => {
                let before = report.before.as_ref().unwrap_or(self.session.preset());
                let change = crate::preset::describe_changes(before, self.session.preset());
                format!("{} {change}", report.done)
            }
            Ok(Applied::Reloaded) if report.building => {
                match self.session.mesh_note(NOTES_LISTED) {
                    Some(note) => format!("{}; {note}", report.done),
                    None => report.done.into_owned(),
                }
            }
            Ok(_) => report.done.into_owned(),
            Err(e) => format!("error: {e}"),
        };
        if report.before.is_some_and(|p| &p != self.session.preset()) {
            // Changed otherwise: the steps no longer lead to this value.
            self.steps.clear();
        }
        if let Some(field) = report.field.filter(|_| !applied) {
            // A value the session refused: the field opens again with it,
            // to be corrected.
            self.mode = field;
        }
        applied
    }

    /// The memory the process holds, as [`App::advance`] last read it
    /// (`None` before that, or where it cannot be read).
    pub fn memory(&self) -> Option<Resident> {
        self.memory.last()
    }

    /// Steps the session when playing, in real time, for at most `budget`
    /// of wall time (see [`Pacer`]), or takes in the frames its thread
    /// stepped (after handing it the session if a command changed it since:
    /// see [`App::with_worker`]; a thread that stopped is dropped, and the
    /// session steps here again); reads the memory the process holds (see
    /// [`App::memory`]).
    pub fn advance(&mut self, budget: Duration) {
        self.memory.resident();
        if self.work.is_some() {
            // The session a command applying makes starts from this frame.
            return;
        }
        if SimWorker::drop_stopped(&mut self.worker) {
            let why = super::other_panic().map_or_else(String::new, |p| format!(" ({p})"));
            self.status =
                format!("error: the simulation thread stopped{why}; it steps between keys now");
        }
        let calm = self.session.warning().is_none();
        let stepped = match &mut self.worker {
            Some(worker) => {
                if std::mem::take(&mut self.unsynced) {
                    worker.sync(&self.session);
                }
                worker.collect(&mut self.session);
                Ok(())
            }
            None => self.pacer.advance(&mut self.session, budget).map(|_| ()),
        };
        if let Err(e) = stepped {
            self.status = format!("error: {e}");
        } else if calm && let Some(warning) = self.session.warning() {
            // A blow-up while playing: what it was replaces the last
            // outcome, and later outcomes replace it (the header keeps
            // showing the blow-up until play, reset or open).
            self.status = format!("blew up: {warning}");
        }
        match self.session.collect_accuracy() {
            Some(Ok(measured)) => self.status = format!("accuracy: {measured}"),
            Some(Err(e)) => self.status = format!("accuracy: {e}"),
            None => crate::session::stopped_note(&mut self.status, &self.session),
        }
    }
}

/// Whether a terminal of type `term` (`TERM`) draws braille: all but the
/// Linux console's (`linux`, `linux-16color`, and `screen.linux` of GNU
/// screen on it; its fonts hold 256 or 512 glyphs, braille not among them)
/// and VT terminals' (`vt100`, `vt220`…, not VTE's `vte-256color`).
pub fn draws_braille(term: Option<&str>) -> bool {
    let console = |t: &str| t == "linux" || t.starts_with("linux-") || t.ends_with(".linux");
    let vt = |t: &str| {
        t.strip_prefix("vt")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    };
    !term.is_some_and(|t| console(t) || vt(t))
}

/// `path` as a path field starts with it: without the doubled or `.`
/// separators inside it (`presets//cloth.toml`, from a path given so), which
/// [`path_of`] would take for a path typed over it.
fn field_text(path: &Path) -> String {
    path.components().collect::<PathBuf>().display().to_string()
}

/// The path typed in a field that starts with a directory: what follows
/// the last `//` (from its second `/`) or `/~` (before `/` or at the end),
/// as Emacs reads its prompts, so a whole path typed after the directory
/// given replaces it (QA: `./` then `/tmp/a.toml` opened `.//tmp/a.toml`,
/// which is `./tmp/a.toml`); then [`expand_home`]. `None` for a `~`
/// without a home.
fn path_of(text: &str, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    let bytes = text.as_bytes();
    let start = (1..bytes.len())
        .rev()
        .find(|&i| {
            bytes[i - 1] == b'/'
                && (bytes[i] == b'/'
                    || (bytes[i] == b'~' && bytes.get(i + 1).is_none_or(|&b| b == b'/')))
        })
        .unwrap_or(0);
    expand_home(&text[start..], home)
}

/// `text` as a path, with a leading `~` (alone or before `/`) replaced by
/// the directory `home`, as a shell would: the save-as prompt is not a
/// shell, and `~/l3` failed with "No such file or directory". `None` for
/// such a `~` without a home.
fn expand_home(text: &str, home: Option<std::ffi::OsString>) -> Option<PathBuf> {
    match text.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            Some(PathBuf::from(home?).join(rest.trim_start_matches('/')))
        }
        _ => Some(PathBuf::from(text)),
    }
}

/// Whether `key` is a Ctrl or an Alt chord: exactly one of the two held
/// (both together is AltGr on some keyboards, which types a character).
fn is_chord(key: &KeyEvent) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) != key.modifiers.contains(KeyModifiers::ALT)
}

/// The outcome of a key in a text field.
enum Typed {
    Editing,
    Cancelled,
    Done,
}

/// The byte offset of character `k` of `text` (its length past the end).
fn char_byte(text: &str, k: usize) -> usize {
    text.char_indices().nth(k).map_or(text.len(), |(i, _)| i)
}

/// Edits `text` with `key` at the cursor, `back` characters before its
/// end, as readline does: characters are typed there, Backspace (or
/// Ctrl-H, which some terminals send for it) deletes the one before and
/// Delete the one after, Ctrl-W the word before, Ctrl-U all before and
/// Ctrl-K all after; ← → move by a character, Home and End (Ctrl-A,
/// Ctrl-E) to the ends (a prefilled save path could only be edited at its
/// end). Enter finishes, Esc cancels. Other chords ([`is_chord`]) are
/// ignored: Alt-x used to type its letter.
fn edit_text(text: &mut String, back: &mut usize, key: KeyEvent) -> Typed {
    let chord = is_chord(&key);
    let ctrl = chord && key.modifiers.contains(KeyModifiers::CONTROL);
    let len = text.chars().count();
    *back = (*back).min(len);
    let at = len - *back;
    let split = char_byte(text, at);
    let delete_before = |text: &mut String| {
        if at > 0 {
            text.replace_range(char_byte(text, at - 1)..split, "");
        }
    };
    match key.code {
        KeyCode::Char('u') if ctrl => {
            text.replace_range(..split, "");
        }
        KeyCode::Char('k') if ctrl => {
            text.truncate(split);
            *back = 0;
        }
        KeyCode::Char('a') if ctrl => *back = len,
        KeyCode::Char('e') if ctrl => *back = 0,
        KeyCode::Home => *back = len,
        KeyCode::End => *back = 0,
        KeyCode::Left => *back = (*back + 1).min(len),
        KeyCode::Right => *back = back.saturating_sub(1),
        KeyCode::Char('h') if ctrl => delete_before(text),
        KeyCode::Backspace => delete_before(text),
        KeyCode::Char('w') if ctrl => {
            let kept = text[..split]
                .trim_end()
                .trim_end_matches(|c: char| !c.is_whitespace())
                .len();
            text.replace_range(kept..split, "");
        }
        KeyCode::Char(_) if chord => {}
        KeyCode::Char(c) => text.insert(split, c),
        KeyCode::Delete if *back > 0 => {
            text.replace_range(split..char_byte(text, at + 1), "");
            *back -= 1;
        }
        KeyCode::Enter => return Typed::Done,
        KeyCode::Esc => return Typed::Cancelled,
        _ => {}
    }
    Typed::Editing
}

/// The preview's `[yaw, pitch]` looking as the preset's camera does
/// ([`View::angles`](crate::preset::View::angles); the preview turns the
/// other way about +y), or along [`View::THREE_QUARTER`](crate::preset::View::THREE_QUARTER)
/// for a preset without one. From above, a cloth that lies flat is no edge-on
/// line.
fn view_angles(view: Option<crate::preset::View>) -> [f64; 2] {
    let view = view.unwrap_or(crate::preset::View::THREE_QUARTER);
    view.angles().map_or([0.0, 0.0], |[yaw, pitch]| {
        [(-yaw).rem_euclid(std::f64::consts::TAU), pitch]
    })
}

/// The presets (`*.toml`) in `dir`, sorted by file name.
fn list_presets(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_tilde_is_the_home_directory() {
        let home = || Some("/home/ada".into());
        let expand = |text, home| expand_home(text, home);
        assert_eq!(expand("~", home()), Some("/home/ada".into()));
        assert_eq!(expand("~/a.toml", home()), Some("/home/ada/a.toml".into()));
        // Another user's home, or a name starting with `~`, is left as it is.
        assert_eq!(expand("~bob/a.toml", home()), Some("~bob/a.toml".into()));
        assert_eq!(expand("a~/b", home()), Some("a~/b".into()));
        // Without a home, no directory named `~` is made.
        assert_eq!(expand("~/a.toml", None), None);
        assert_eq!(expand("a.toml", None), Some("a.toml".into()));
    }

    #[test]
    fn the_linux_console_and_vt_terminals_draw_no_braille() {
        for term in [
            "linux",
            "linux-16color",
            "screen.linux",
            "vt100",
            "vt220",
            "vt52",
        ] {
            assert!(!draws_braille(Some(term)), "{term}");
        }
        for term in [
            None,
            Some("xterm-256color"),
            Some("screen"),
            Some("tmux-256color"),
            Some("vte-256color"),
        ] {
            assert!(draws_braille(term), "{term:?}");
        }
    }

    /// A whole path typed after the directory a field starts with replaces
    /// it, as in Emacs's prompts.
    #[test]
    fn a_path_starts_again_at_a_double_slash_or_a_tilde() {
        let home = || Some("/home/ada".into());
        for (text, path) in [
            ("./presets/a.toml", "./presets/a.toml"),
            (".//tmp/a.toml", "/tmp/a.toml"),
            ("/work/presets//tmp/x//b.toml", "/b.toml"),
            ("/work/presets/~/a.toml", "/home/ada/a.toml"),
            ("/work/presets/~", "/home/ada"),
            ("/work/presets/~bob/a.toml", "/work/presets/~bob/a.toml"),
            ("/work/presets/a~/b.toml", "/work/presets/a~/b.toml"),
            ("/work/x.toml/", "/work/x.toml/"),
            ("~/a//b.toml", "/b.toml"),
            ("//", "/"),
            ("é//ü.toml", "/ü.toml"),
        ] {
            assert_eq!(path_of(text, home()), Some(path.into()), "{text}");
        }
        assert_eq!(path_of("/work/~/a.toml", None), None);
    }

    /// A path a field starts with has no doubled separator to be taken for
    /// one typed over it (`presets//cloth.toml` saved to `/cloth.toml`).
    #[test]
    fn a_field_starts_with_a_tidy_path() {
        for (path, text) in [
            ("presets//cloth.toml", "presets/cloth.toml"),
            ("./presets/./a.toml", "./presets/a.toml"),
            ("/work//presets/", "/work/presets"),
            (".", "."),
        ] {
            assert_eq!(field_text(Path::new(path)), text, "{path}");
            let typed = path_of(&field_text(Path::new(path)), None);
            assert_eq!(typed, Some(PathBuf::from(text)), "{path}");
        }
    }
}
