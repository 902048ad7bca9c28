//! The editor's state and frame: [`EditorApp`] owns the [`Session`] and the
//! UI-only state (camera, selection, overlays, dialogs). Each UI frame it
//! steps the session for at most [`SIM_BUDGET`] (so drawing is never held
//! up by the simulation), lays out the panels — which only read the
//! session and return [`Request`]s — and then carries the requests out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use eframe::egui;
use egui_file::{DialogType, FileDialog};

use super::camera::Orbit;
use super::capture::{Script, ScriptRun};
use super::menu;
use super::overlay::Overlays;
use super::panels::{self, PanelState, Request, Sliders, StatusInfo};
use super::plots;
use super::selection::Selection;
use super::viewport::{Tool, ViewEvent, ViewInput, Viewport3d};
use crate::autosave::{Autosave, Recovery, Resuming};
use crate::background::{self, Before, Work};
use crate::command::Command;
use crate::param::{LIVE_REFACTOR_MS, Pacer};
use crate::preset::View;
use crate::session::{Applied, STILL_STOPPING, Session, SessionError};
use crate::sim_thread::SimWorker;
use crate::solver::memory::Gauge;

/// Wall time per UI frame the simulation may take.
pub const SIM_BUDGET: Duration = Duration::from_millis(12);

/// Recent files remembered.
pub const RECENT_FILES: usize = 10;

/// The key of the editor's settings in eframe's storage.
const STORAGE_KEY: &str = "softbody-editor";

/// Where the status bar's note on the mesh sends the user for the rest of
/// its notes.
const NOTES_LISTED: &str = "the Model panel lists them";

/// What persists between runs (with the panel layout, which egui keeps).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Files opened or saved, newest first.
    pub recent: Vec<PathBuf>,
    /// The overlays shown.
    pub overlays: Overlays,
    /// The brush radius (points).
    pub brush_radius: Option<f64>,
}

/// An action waiting for an answer about unsaved changes.
#[derive(Clone, Debug, PartialEq)]
enum Pending {
    Open(PathBuf),
    Quit,
}

/// The editor.
pub struct EditorApp {
    /// The open scene.
    pub session: Session,
    /// Steps the session in real time.
    pub pacer: Pacer,
    /// The last outcome or error, shown in the status bar.
    pub message: String,
    /// UI frames per second, averaged.
    pub ui_fps: f64,
    /// Reads the memory the process holds, for the status bar.
    memory: Gauge,
    /// The 3D view.
    pub viewport: Viewport3d,
    /// The camera as the preset was opened with (a save keeps the
    /// preset's view while the camera is still there).
    aimed: Orbit,
    /// The selected vertices.
    pub selection: Selection,
    /// Files opened or saved, newest first.
    pub recent: Vec<PathBuf>,
    /// A slider drag refactorises at every step while the last numeric
    /// factorisation took at most this long (ms), else once, when the drag
    /// ends ([`LIVE_REFACTOR_MS`] by default).
    pub live_refactor_ms: f64,
    dialog: Option<FileDialog>,
    pending: Option<Pending>,
    /// What to do once an untitled scene's "Save" (asked about unsaved
    /// changes) has a file: the save dialog comes first.
    after_save: Option<Pending>,
    /// A save refused because the preset's file changed on disk since it
    /// was opened or saved here: overwrite it, reopen it or leave it.
    changed_on_disk: Option<PathBuf>,
    /// A save as onto another existing file, to confirm (the dialog
    /// replaced it without a word).
    replacing: Option<PathBuf>,
    /// Closing was confirmed (or nothing was unsaved).
    may_close: bool,
    show_controls: bool,
    /// Writes unsaved changes for crash recovery (none in tests).
    autosave: Option<Autosave>,
    /// An autosave from an earlier run, offered until answered.
    recovery: Option<Recovery>,
    /// The simulation thread (none: the UI thread steps within
    /// [`SIM_BUDGET`], as in tests).
    worker: Option<SimWorker>,
    /// The session changed since the worker last got it.
    unsynced: bool,
    /// Whether commands that build or factorise a large model run on a
    /// thread of their own ([`background`]); the app with its simulation
    /// thread does, tests apply them in place unless they set it.
    pub background: bool,
    /// Such a command applying.
    work: Option<Work>,
    /// A recovered session building in the background (as a command does).
    resuming: Option<Resuming>,
    /// The requests that change the session made while it applies, carried
    /// out after it in order.
    held: Vec<Request>,
    /// The window title last set.
    title: String,
    last_frame: Option<Instant>,
    script: Option<ScriptRun>,
}

impl EditorApp {
    /// The editor over `session`, drawing in 3D when `cc` has a glow
    /// context; `script` runs it unattended.
    pub fn new(cc: &eframe::CreationContext<'_>, session: Session, script: Option<Script>) -> Self {
        // A scripted run starts from the defaults, whatever was saved.
        let settings: Settings = cc
            .storage
            .filter(|_| script.is_none())
            .and_then(|s| eframe::get_value(s, STORAGE_KEY))
            .unwrap_or_default();
        let mut app = Self::with_session(session, cc.gl.clone(), settings);
        app.script = script.map(ScriptRun::new);
        if app.script.is_some() {
            app.apply(Command::Play);
        }
        app
    }

    /// The editor over `session` with `settings`, drawing with `gl` (none:
    /// no 3D view, as in tests).
    pub fn with_session(
        session: Session,
        gl: Option<std::sync::Arc<eframe::glow::Context>>,
        settings: Settings,
    ) -> Self {
        let mut viewport = Viewport3d::new(gl);
        viewport.overlays = settings.overlays;
        if let Some(r) = settings.brush_radius {
            viewport.brush_radius = r;
        }
        let mut app = Self {
            selection: Selection::new(session.model().vertex_count()),
            session,
            pacer: Pacer::default(),
            message: String::new(),
            ui_fps: 0.0,
            memory: Gauge::default(),
            viewport,
            aimed: Orbit::default(),
            recent: settings.recent,
            live_refactor_ms: LIVE_REFACTOR_MS,
            dialog: None,
            pending: None,
            after_save: None,
            changed_on_disk: None,
            replacing: None,
            may_close: false,
            show_controls: false,
            autosave: None,
            recovery: None,
            worker: None,
            unsynced: false,
            background: false,
            work: None,
            resuming: None,
            held: Vec::new(),
            title: String::new(),
            last_frame: None,
            script: None,
        };
        app.aim();
        app.message = [
            app.session.mesh_note(NOTES_LISTED),
            app.solid_hint().map(str::to_owned),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ");
        app
    }

    /// For a closed OBJ surface opened alone, built as springs as an OBJ
    /// opens (a shell of cloth), a hint to build it as tetrahedra; else
    /// nothing (a preset built so chose it).
    fn solid_hint(&self) -> Option<&'static str> {
        let preset = self.session.preset();
        let closed = self
            .session
            .built()
            .surface
            .as_ref()
            .is_some_and(|s| s.is_closed());
        let springs = preset.build.kind == crate::preset::BuildKind::Springs;
        let alone = self.session.path().is_none();
        let obj = matches!(preset.mesh, crate::preset::MeshSource::Obj(_));
        (closed && springs && alone && obj).then_some(
            "a closed surface, built as a shell of springs: build it as tetrahedra (Model \
             panel) for a solid body",
        )
    }

    /// Autosaves unsaved changes with `autosave`, first offering what an
    /// earlier run left there.
    pub fn with_autosave(mut self, autosave: Autosave) -> Self {
        self.recovery = autosave.recovery();
        self.autosave = Some(autosave);
        self
    }

    /// Starts with `message` in the status bar (an error in red when it
    /// starts with "error").
    pub fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }

    /// Steps the simulation on its own thread (see [`SimWorker`]), so a
    /// slow frame never holds up drawing; each of its frames repaints
    /// `ctx`.
    pub fn with_worker(mut self, ctx: &egui::Context) -> Self {
        let ctx = ctx.clone();
        // One pass per frame: a repaint without delay draws twice.
        let wake = move || ctx.request_repaint_after(std::time::Duration::from_millis(1));
        self.worker = Some(SimWorker::spawn(wake));
        self.unsynced = true;
        self.background = true;
        self
    }

    /// Whether the editor has decided to close (a quit carried out: its
    /// window closes).
    pub fn is_closing(&self) -> bool {
        self.may_close
    }

    /// The window's title as last set: the scene's name, its file's, and
    /// " •" while it has changes not saved.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// Whether a command is applying, or a recovered session building, in
    /// the background.
    pub fn is_busy(&self) -> bool {
        self.work.is_some() || self.resuming.is_some()
    }

    /// Simulated frames per second.
    pub fn sim_fps(&self) -> f64 {
        self.worker
            .as_ref()
            .map_or_else(|| self.pacer.sim_fps(), SimWorker::sim_fps)
    }

    /// The settings to persist.
    pub fn settings(&self) -> Settings {
        Settings {
            recent: self.recent.clone(),
            overlays: self.viewport.overlays,
            brush_radius: Some(self.viewport.brush_radius),
        }
    }

    /// Aims the camera as the preset's view says: from its eye at its
    /// target (as the editor saved it), or for a preset without one
    /// framing the model, and where colliders near it will catch it, along
    /// [`View::THREE_QUARTER`].
    fn aim(&mut self) {
        match self.session.preset().view {
            Some(view) => self.viewport.orbit.look_from(&view),
            None => {
                let view = View::THREE_QUARTER;
                self.viewport.orbit.fov_deg = view.fov_deg;
                self.viewport.orbit.look_along(&view);
                self.viewport.frame_with_colliders(
                    self.session.model(),
                    &self.session.state().positions,
                    &self.session.preset().sim.colliders,
                );
            }
        }
        self.aimed = self.viewport.orbit;
    }

    /// Applies `command`, reporting the outcome in [`EditorApp::message`]:
    /// on a copy of the session on a thread of its own when
    /// [`EditorApp::background`] is on and [`background::in_background`]
    /// says so (then it, and every change asked for until it is in, is
    /// held: see [`EditorApp::is_busy`]).
    pub fn apply(&mut self, command: Command) {
        if self.is_busy() {
            self.held.push(Request::Command(command));
            return;
        }
        let slow = self.session.factorises_slowly(self.live_refactor_ms);
        if self.background && background::in_background(&command, slow) {
            let work = Work::spawn(&self.session, command);
            self.message = format!("{}…", work.doing);
            self.work = Some(work);
            return;
        }
        let before = Before::of(&self.session, &command);
        let outcome = self.session.apply(command);
        self.applied(outcome, before);
    }

    /// Saves the preset (to its file, or to `path`) with the camera as it
    /// is now for its view ([`Session::keep_view`]) if it moved since the
    /// preset was opened.
    fn save(&mut self, path: Option<PathBuf>) {
        self.save_with(Command::Save(path));
    }

    /// [`EditorApp::save`] by `command`, a [`Command::Save`] or
    /// [`Command::SaveAnyway`].
    fn save_with(&mut self, command: Command) {
        // An unmoved camera leaves the view as it was (its eye recomputed
        // from the orbit differs in the last digits; a framed one stays
        // none, and frames the model again).
        if self.viewport.orbit != self.aimed {
            self.session.keep_view(self.viewport.view());
        }
        self.apply(command);
    }

    /// Takes in the session a background command made, or the recovered
    /// one, once it is done, then carries out the requests held meanwhile;
    /// until then, looks again soon.
    fn collect_work(&mut self, ctx: &egui::Context) {
        if let Some(work) = self.work.take_if(|w| w.is_finished()) {
            let before = work.before.clone();
            match work.finish(&mut self.session) {
                Ok(outcome) => self.applied(outcome, before),
                Err(failed) => self.message = failed.to_owned(),
            }
        } else if let Some(resuming) = self.resuming.take_if(|r| r.is_finished()) {
            match resuming.finish(self.autosave.as_mut()) {
                Ok(session) => self.recovered(session),
                Err(e) => self.message = format!("error: cannot recover the autosave: {e}"),
            }
        } else {
            if self.is_busy() {
                ctx.request_repaint_after(Duration::from_millis(30));
            }
            return;
        }
        // In the order they were held (a gesture's end held behind its last
        // change stays before the changes that followed it).
        let held = std::mem::take(&mut self.held);
        self.in_order(ctx, held);
    }

    /// Reports the `outcome` of a command applied to the session, which was
    /// `before` it, and follows it up (the view, the selection, the recent
    /// files).
    fn applied(&mut self, outcome: Result<Applied, SessionError>, before: Before) {
        self.unsynced = true;
        let applied = matches!(&outcome, Ok(a) if *a != Applied::Nothing);
        self.message = match outcome {
            Ok(Applied::Saved(path)) => {
                self.remember(&path);
                format!("saved {}", path.display())
            }
            Ok(Applied::SavedInFull(path)) => {
                self.remember(&path);
                crate::session::saved_in_full(&path)
            }
            Ok(Applied::Reloaded) => {
                self.pacer.forget();
                self.viewport.reset();
                self.aim();
                if let Some(loaded) = before.loading {
                    // Another document: the old selection means nothing
                    // there, even with as many vertices.
                    self.selection = Selection::new(self.session.model().vertex_count());
                    // A preset by its file, an OBJ (an untitled preset) by
                    // the mesh.
                    let path = self.session.path().map_or(loaded, Path::to_owned);
                    self.remember(&path);
                    let name = self.session.name();
                    let notes = [
                        self.session.mesh_note(NOTES_LISTED),
                        self.solid_hint().map(str::to_owned),
                    ];
                    std::iter::once(format!("opened {name}"))
                        .chain(notes.into_iter().flatten())
                        .collect::<Vec<_>>()
                        .join("; ")
                } else if self.session.preset().build.kind != before.kind {
                    let preset = self.session.preset();
                    let kind = preset.build.kind;
                    let rebuilt = format!(
                        "rebuilt the model as {}; density {} {} (its unit changed)",
                        kind.label(),
                        crate::param::format_value(preset.material.density),
                        kind.density_unit()
                    );
                    match self.session.mesh_note(NOTES_LISTED) {
                        Some(note) => format!("{rebuilt}; {note}"),
                        None => rebuilt,
                    }
                } else {
                    // (Another scale can make a body of implausible size.)
                    let rebuilt = "rebuilt the model from its mesh";
                    match self.session.mesh_note(NOTES_LISTED) {
                        Some(note) => format!("{rebuilt}; {note}"),
                        None => rebuilt.to_owned(),
                    }
                }
            }
            Ok(Applied::BlewUp { frames, error }) => {
                format!("blew up after {frames} frames: {error}")
            }
            Err(SessionError::ChangedOnDisk(path)) => {
                let said = format!(
                    "{} changed on disk since it was opened or saved here",
                    path.display()
                );
                self.changed_on_disk = Some(path);
                said
            }
            Ok(Applied::Refactored) => "refactored".to_owned(),
            Ok(Applied::Rebuilt) => "rebuilt the system".to_owned(),
            Ok(_) => String::new(),
            Err(e) => format!("error: {e}"),
        };
        if before.pinning && applied {
            // How many it holds now (it said "rebuilt the system").
            let pins = &self.session.model().pins;
            self.message = format!(
                "{} hard-pinned, {} soft-pinned",
                crate::mesh::report::counted(pins.hard_vertices().len(), "vertex", "vertices"),
                pins.soft.len()
            );
        }
        match (&before.undoing, applied) {
            // What it took back or did again, whatever that took.
            (Some((done, preset)), true) => {
                let change = crate::preset::describe_changes(preset, self.session.preset());
                self.message = format!("{done} {change}");
            }
            // (A Ctrl+Z past the first change cleared the status line, QA.)
            (Some(_), false) if self.message.is_empty() => {
                self.message = before.idle.unwrap_or_default().to_owned();
            }
            _ => {}
        }
        if self.session.model().vertex_count() != before.vertices {
            self.selection = Selection::new(self.session.model().vertex_count());
        }
    }

    /// Opens `path` (a preset or an OBJ), remembering it once open.
    fn open(&mut self, path: PathBuf) {
        self.apply(Command::Load(path));
    }

    fn remember(&mut self, path: &Path) {
        let path = path.canonicalize().unwrap_or_else(|_| path.to_owned());
        self.recent.retain(|p| *p != path);
        self.recent.insert(0, path);
        self.recent.truncate(RECENT_FILES);
    }

    fn measure_fps(&mut self) {
        let now = Instant::now();
        if let Some(dt) = self.last_frame.replace(now).map(|t| now - t)
            && !dt.is_zero()
        {
            self.ui_fps = 0.9 * self.ui_fps + 0.1 / dt.as_secs_f64();
        }
    }

    /// Lays out the whole window once and returns what was asked for.
    fn layout(&mut self, ui: &mut egui::Ui) -> (Vec<Request>, Vec<ViewEvent>) {
        let mut out = Vec::new();
        egui::Panel::top("menu").show(ui, |ui| {
            menu::menu_bar(
                ui,
                &self.session,
                &self.recent,
                (&mut self.viewport.overlays, self.selection.len()),
                &mut self.show_controls,
                &mut out,
            );
        });
        egui::Panel::bottom("status").show(ui, |ui| {
            panels::status_bar(
                ui,
                &self.session,
                &StatusInfo {
                    ui_fps: self.ui_fps,
                    sim_fps: self.sim_fps(),
                    memory: self.memory.resident(),
                    selected: self.selection.len(),
                    message: &self.message,
                },
            );
        });
        egui::Panel::bottom("graphs")
            .resizable(true)
            .default_size(200.0)
            .show(ui, |ui| plots::show(ui, &self.session, &mut out));
        egui::Panel::left("panels")
            .resizable(true)
            .default_size(340.0)
            .show(ui, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| {
                    self.side_panels(ui, &mut out);
                });
            });
        let mut events = Vec::new();
        egui::CentralPanel::no_frame().show(ui, |ui| {
            self.toolbar(ui);
            let session = &self.session;
            let solver_model = session.solver().model();
            events = self.viewport.show(
                ui,
                &ViewInput {
                    model: session.model(),
                    x: &session.state().positions,
                    attachments: &solver_model.pins.soft,
                    held: session.held(),
                    colliders: &session.preset().sim.colliders,
                    selection: &self.selection,
                    playing: session.is_playing(),
                },
            );
        });
        (out, events)
    }

    /// The collapsible sections of the left panel.
    fn side_panels(&mut self, ui: &mut egui::Ui, out: &mut Vec<Request>) {
        ui.spacing_mut().slider_width = panels::SLIDER_WIDTH;
        let busy = self.is_busy();
        let sliders = if self.session.factorises_slowly(self.live_refactor_ms) {
            Sliders::OnRelease { applying: busy }
        } else {
            Sliders::Live
        };
        egui::CollapsingHeader::new("Model")
            .default_open(true)
            .show(ui, |ui| panels::model(ui, &self.session, busy, out));
        egui::CollapsingHeader::new("Material")
            .default_open(true)
            .show(ui, |ui| panels::material(ui, &self.session, sliders, out));
        egui::CollapsingHeader::new("Simulation")
            .default_open(true)
            .show(ui, |ui| panels::simulation(ui, &self.session, sliders, out));
        egui::CollapsingHeader::new("Selection & pins")
            .default_open(true)
            .show(ui, |ui| {
                let mut state = PanelState {
                    selection: &mut self.selection,
                    tool: &mut self.viewport.tool,
                    brush_radius: &mut self.viewport.brush_radius,
                    sliders,
                };
                panels::selection(ui, &self.session, &mut state, out);
            });
    }

    /// The strip above the 3D view: tool, overlays, hints.
    fn toolbar(&mut self, ui: &mut egui::Ui) {
        ui.horizontal(|ui| {
            ui.add_space(6.0);
            let tool = &mut self.viewport.tool;
            ui.selectable_value(tool, Tool::Select, "Select")
                .on_hover_text("Click a vertex or drag a box (Shift adds, Ctrl removes)");
            ui.selectable_value(tool, Tool::Brush, "Brush")
                .on_hover_text("Paint the selection (Ctrl removes)");
            ui.separator();
            let has_tets = !self.session.model().tets.is_empty();
            ui.menu_button("Overlays", |ui| {
                menu::overlay_toggles(ui, &mut self.viewport.overlays, has_tets);
            });
            ui.separator();
            let hint = if self.session.is_playing() {
                "drag the mesh to pull it · right drag orbits · wheel zooms"
            } else {
                "right drag orbits · middle drag pans · wheel zooms · F frames all"
            };
            // Cut to the room left (with the full text on hover): wider, it
            // widened the view past a narrow window's edge.
            ui.add(egui::Label::new(egui::RichText::new(hint).weak()).truncate());
        });
    }

    /// Carries out the view's events.
    fn view_events(&mut self, events: Vec<ViewEvent>) {
        for event in events {
            match event {
                ViewEvent::Select(mode, vertices) => self.selection.apply(mode, &vertices),
                ViewEvent::Grab { vertex, target } => self.apply(Command::Grab { vertex, target }),
                ViewEvent::Drag(target) => {
                    // Dragging moves a target only: no message, and the
                    // simulation thread carries on with the new target.
                    match self.session.apply(Command::Drag { target }) {
                        Ok(_) => {
                            if let Some(worker) = &self.worker {
                                worker.targets(&self.session);
                            }
                        }
                        Err(e) => self.message = format!("error: {e}"),
                    }
                }
                ViewEvent::Release => self.apply(Command::Release),
            }
        }
    }

    /// Takes in a finished accuracy measurement; while one runs, looks
    /// again soon.
    fn collect_accuracy(&mut self, ctx: &egui::Context) {
        match self.session.collect_accuracy() {
            Some(Ok(measured)) => self.message = format!("accuracy: {measured}"),
            Some(Err(e)) => self.message = format!("error: accuracy: {e}"),
            None => crate::session::stopped_note(&mut self.message, &self.session),
        }
        if self.session.is_measuring() || self.session.is_stopping() {
            ctx.request_repaint_after(std::time::Duration::from_millis(100));
        }
    }

    /// Carries out the panels' requests of one UI frame.
    fn requests(&mut self, ctx: &egui::Context, requests: Vec<Request>) {
        // A drag's release frame can carry its last change: made inside the
        // gesture, not as an undo step of its own.
        let (ends, requests): (Vec<_>, Vec<_>) = requests
            .into_iter()
            .partition(|r| matches!(r, Request::EndGesture));
        self.in_order(ctx, requests.into_iter().chain(ends));
    }

    /// Carries out `requests` one after the other, holding those that wait
    /// for a background command.
    fn in_order(&mut self, ctx: &egui::Context, requests: impl IntoIterator<Item = Request>) {
        for request in requests {
            // (Opening and quitting ask about unsaved changes: of the
            // session the command makes.)
            let waits = !matches!(
                request,
                Request::FrameAll | Request::OpenDialog | Request::SaveAsDialog
            );
            if self.is_busy() && waits {
                self.held.push(request);
                continue;
            }
            match request {
                Request::Command(command) => self.apply(command),
                Request::BeginGesture => self.session.begin_gesture(),
                Request::EndGesture => self.session.end_gesture(),
                Request::PinSelection(how) => {
                    let picked = self.selection.indices();
                    if picked.is_empty() {
                        // (U said "to pin".)
                        self.message = format!(
                            "nothing selected to {}: click, drag a box or paint with the brush \
                             first",
                            how.verb()
                        );
                    } else {
                        self.apply(how.command(picked));
                    }
                }
                Request::FrameAll => self
                    .viewport
                    .frame_all(self.session.model(), &self.session.state().positions),
                Request::OpenDialog => self.show_dialog(DialogType::OpenFile),
                Request::SaveAsDialog => self.show_dialog(DialogType::SaveFile),
                Request::Save => {
                    if self.session.path().is_some() {
                        self.save(None);
                    } else {
                        self.show_dialog(DialogType::SaveFile);
                    }
                }
                Request::Open(path) => self.ask_then(ctx, Pending::Open(path)),
                Request::Quit => self.ask_then(ctx, Pending::Quit),
                Request::MeasureAccuracy => {
                    self.message = if self.session.measure_accuracy() {
                        "measuring the accuracy (a Newton solve)…"
                    } else {
                        STILL_STOPPING
                    }
                    .to_owned();
                }
                Request::CancelAccuracy => {
                    if self.session.cancel_accuracy() {
                        self.message = "accuracy measurement cancelled".to_owned();
                    }
                }
            }
        }
    }

    /// Does `action` now, or asks first when there are unsaved changes;
    /// while a background command runs, holds it to ask about the session
    /// that command makes (a file opened from the dialog or dropped meanwhile
    /// was asked about the session before the change, and took its place
    /// with no question).
    fn ask_then(&mut self, ctx: &egui::Context, action: Pending) {
        if self.is_busy() {
            self.held.push(match action {
                Pending::Open(path) => Request::Open(path),
                Pending::Quit => Request::Quit,
            });
        } else if self.session.is_dirty() {
            self.pending = Some(action);
        } else {
            self.carry_out(ctx, action);
        }
    }

    fn carry_out(&mut self, ctx: &egui::Context, action: Pending) {
        match action {
            Pending::Open(path) => self.open(path),
            Pending::Quit => {
                self.may_close = true;
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
        }
    }

    fn show_dialog(&mut self, kind: DialogType) {
        let start = folder_of(self.session.path());
        let filter: egui_file::Filter<PathBuf> = Box::new(|p: &Path| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("toml") || e.eq_ignore_ascii_case("obj"))
        });
        let mut dialog = match kind {
            DialogType::SaveFile => {
                let suggested = self.session.suggested_path();
                let name = suggested.file_name().map_or_else(
                    || "untitled.toml".into(),
                    |n| n.to_string_lossy().into_owned(),
                );
                let dir = folder_of(Some(&suggested));
                let presets: egui_file::Filter<PathBuf> = Box::new(|p: &Path| {
                    p.extension()
                        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
                });
                FileDialog::save_file()
                    .initial_path(dir)
                    .default_filename(name)
                    .show_files_filter(presets)
            }
            _ => FileDialog::open_file()
                .initial_path(start)
                .show_files_filter(filter),
        }
        .title(match kind {
            DialogType::SaveFile => "Save preset as",
            _ => "Open a preset (.toml) or a mesh (.obj)",
        });
        dialog.open();
        self.dialog = Some(dialog);
    }

    /// The file dialog, the unsaved-changes question and the controls.
    fn windows(&mut self, ctx: &egui::Context) {
        if let Some(dialog) = &mut self.dialog {
            if dialog.show(ctx).selected() {
                let kind = dialog.dialog_type();
                let path = dialog.path().map(Path::to_owned);
                self.dialog = None;
                match (kind, path) {
                    // The session adds `.toml` when the name has none; a
                    // bad name or a read-only file is its to report.
                    (DialogType::SaveFile, Some(path)) => {
                        match crate::session::replaced_by_save_as(&self.session, path.clone()) {
                            Some(target) => self.replacing = Some(target),
                            None => self.save(Some(path)),
                        }
                    }
                    (_, Some(path)) => self.ask_then(ctx, Pending::Open(path)),
                    (_, None) => {}
                }
            } else if !dialog.visible() {
                self.dialog = None;
            }
        }
        // Saved (the dialog closed and nothing is left to apply): carry on.
        // Cancelled or failed (still unsaved): the action is dropped.
        if self.after_save.is_some()
            && self.dialog.is_none()
            && self.changed_on_disk.is_none()
            && self.replacing.is_none()
            && !self.is_busy()
        {
            let next = self.after_save.take();
            if let Some(next) = next.filter(|_| !self.session.is_dirty()) {
                self.carry_out(ctx, next);
            }
        }
        if let Some(pending) = self.pending.clone() {
            // What the answer leads to, as the terminal UI says it.
            let next = match &pending {
                Pending::Open(path) => format!("Save them before opening {}?", path.display()),
                Pending::Quit => "Save them before quitting?".to_owned(),
            };
            let text = format!(
                "“{}” has changes that are not saved. {next}",
                self.session.name()
            );
            let buttons = [
                ("Save", Some(true)),
                ("Discard", Some(false)),
                ("Cancel", None),
            ];
            match ask(ctx, "unsaved", "Unsaved changes", &text, &buttons) {
                Some(Some(save)) => {
                    self.pending = None;
                    if save {
                        if self.session.path().is_none() {
                            self.show_dialog(DialogType::SaveFile);
                            self.after_save = Some(pending);
                            return;
                        }
                        self.save(None);
                        if self.changed_on_disk.is_some() || self.is_busy() {
                            // Asked whether to overwrite, or the save held
                            // behind a background command: what follows waits.
                            self.after_save = Some(pending);
                            return;
                        }
                        if self.session.is_dirty() {
                            return; // the save failed: the message says why
                        }
                    }
                    self.carry_out(ctx, pending);
                }
                Some(None) => self.pending = None,
                None => {}
            }
        }
        self.changed_on_disk_window(ctx);
        self.replace_window(ctx);
        self.recovery_window(ctx);
        menu::controls_window(ctx, &mut self.show_controls);
    }

    /// Asks before a save as replaces another existing file.
    fn replace_window(&mut self, ctx: &egui::Context) {
        let Some(path) = self.replacing.clone() else {
            return;
        };
        let text = format!("{} exists. Replace it with this preset?", path.display());
        let buttons = [("Replace", true), ("Cancel", false)];
        match ask(ctx, "replace", "Replace the file?", &text, &buttons) {
            Some(true) => {
                self.replacing = None;
                self.save(Some(path));
            }
            Some(false) => {
                self.replacing = None;
                self.after_save = None;
                self.message = format!("not saved: {} is as it was", path.display());
            }
            None => {}
        }
    }

    /// Asks what to do with a preset file changed on disk since it was
    /// opened or saved here, which a save would overwrite.
    fn changed_on_disk_window(&mut self, ctx: &egui::Context) {
        let Some(path) = self.changed_on_disk.clone() else {
            return;
        };
        let text = format!(
            "{} was changed elsewhere since it was opened or saved here. Saving overwrites \
             that change; reopening it loses the changes made here.",
            path.display()
        );
        let buttons = [
            ("Overwrite", Some(true)),
            ("Reopen it", Some(false)),
            ("Cancel", None),
        ];
        match ask(
            ctx,
            "changed on disk",
            "The file changed on disk",
            &text,
            &buttons,
        ) {
            Some(Some(overwrite)) => {
                self.changed_on_disk = None;
                if overwrite {
                    self.save_with(Command::SaveAnyway(Some(path)));
                } else {
                    // What was to follow the save does not follow a reopen.
                    self.after_save = None;
                    self.open(path);
                }
            }
            Some(None) => {
                self.changed_on_disk = None;
                self.after_save = None;
                self.message = "not saved: the file on disk is as it was changed".to_owned();
            }
            None => {}
        }
    }

    /// Offers the autosave an earlier run left.
    fn recovery_window(&mut self, ctx: &egui::Context) {
        // Offered again once a background command is in: a file dropped
        // while it was up opened over the recovered session (and cleared its
        // autosave, the only copy left).
        let Some(recovery) = self.recovery.as_ref().filter(|_| !self.is_busy()) else {
            return;
        };
        let origin = recovery.origin.as_ref().map_or_else(
            || "an untitled preset".to_owned(),
            |p| p.display().to_string(),
        );
        let age = recovery.written_at.elapsed().map_or_else(
            |_| "recently".to_owned(),
            |d| format!("{} s ago", d.as_secs()),
        );
        let mut text = format!(
            "An earlier session of “{}” ({origin}) ended with unsaved changes, autosaved {age}.",
            recovery.name()
        );
        if let Some(caveat) = recovery.caveat() {
            text = format!("{text}\n{caveat}");
        }
        let buttons = [("Recover", true), ("Discard", false)];
        match ask(ctx, "recover", "Recover unsaved changes?", &text, &buttons) {
            Some(true) => {
                let recovery = self.recovery.take().expect("offered");
                if self.background {
                    // A large model's build took seconds, in which the
                    // window froze.
                    self.resuming = Some(recovery.resume_in_background());
                    self.message = "recovering the autosaved changes: building the model…".into();
                    return;
                }
                match recovery.resume(self.autosave.as_mut()) {
                    Ok(session) => self.recovered(session),
                    Err(e) => self.message = format!("error: cannot recover the autosave: {e}"),
                }
            }
            Some(false) => {
                if let Some(recovery) = self.recovery.take() {
                    recovery.decline();
                }
            }
            None => {}
        }
    }

    /// Continues in `session`, recovered from an autosave.
    fn recovered(&mut self, session: Session) {
        self.session.replace_with(session);
        self.unsynced = true;
        self.selection = Selection::new(self.session.model().vertex_count());
        self.pacer.forget();
        self.viewport.reset();
        self.aim();
        self.message = "recovered the autosaved changes".to_owned();
    }

    /// Opens files dropped on the window (the first one).
    fn dropped_files(&mut self, ctx: &egui::Context) {
        let dropped = ctx.input(|i| i.raw.dropped_files.first().map(|f| f.path().to_owned()));
        if let Some(path) = dropped {
            self.ask_then(ctx, Pending::Open(path));
        }
        let hovering = ctx.input(|i| !i.raw.hovered_files.is_empty());
        if hovering {
            let painter = ctx.layer_painter(egui::LayerId::new(
                egui::Order::Foreground,
                egui::Id::unique("drop"),
            ));
            let rect = ctx.content_rect();
            painter.rect_filled(rect, 0.0, egui::Color32::from_black_alpha(160));
            painter.text(
                rect.center(),
                egui::Align2::CENTER_CENTER,
                "Drop a preset (.toml) or a mesh (.obj) to open it",
                egui::FontId::proportional(22.0),
                egui::Color32::WHITE,
            );
        }
    }
}

impl eframe::App for EditorApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.measure_fps();
        // Step (or take in what the thread stepped) first: the layout below
        // only reads the session.
        self.collect_work(&ctx);
        if SimWorker::drop_stopped(&mut self.worker) {
            self.message =
                "error: the simulation thread stopped; it steps in the UI's frames now".into();
        }
        match &mut self.worker {
            // The view keeps the last frame while a command applies: the
            // session it makes starts from there.
            Some(_) if self.work.is_some() => {}
            Some(worker) => {
                // A command taken in above (a file opened, a model rebuilt
                // in the background) made another session: the frames in
                // flight are the old one's, stepped from its model. Synced
                // first, the worker drops them (taken in, a cloth's frames
                // drew over the jelly opened while it played, and crashed
                // the view).
                if std::mem::take(&mut self.unsynced) {
                    worker.sync(&self.session);
                }
                worker.collect(&mut self.session);
            }
            None if self.work.is_some() => {}
            None => {
                if let Err(e) = self.pacer.advance(&mut self.session, SIM_BUDGET) {
                    self.message = format!("error: {e}");
                }
            }
        }
        self.collect_accuracy(&ctx);
        self.dropped_files(&ctx);
        // A question or a file dialog up takes no shortcut: behind the
        // unsaved-changes question, S stepped and Ctrl+Z undid the change
        // it asked about.
        let asking = self.dialog.is_some()
            || self.pending.is_some()
            || self.changed_on_disk.is_some()
            || self.replacing.is_some()
            || self.recovery.is_some();
        let (mut requests, escape) = if asking {
            (Vec::new(), false)
        } else {
            menu::shortcuts(&ctx)
        };
        if escape {
            self.selection.clear();
        }
        let (more, events) = self.layout(ui);
        requests.extend(more);
        self.windows(&ctx);
        self.view_events(events);
        self.requests(&ctx, requests);
        if self.session.in_gesture() && !ctx.input(|i| i.pointer.any_down()) {
            // The dragged widget went away before the release (its section
            // closed, the build changed under it): the release still ends
            // the gesture, or every later change would join its undo step.
            self.session.end_gesture();
        }
        if let (Some(worker), true) = (&mut self.worker, self.unsynced) {
            worker.sync(&self.session);
            self.unsynced = false;
        }
        // (Not while a recovered session builds: the one it replaces is
        // not the work to keep.)
        if let (Some(autosave), None, None) = (&mut self.autosave, &self.recovery, &self.resuming)
            && let Err(e) = autosave.tick(&self.session)
        {
            self.message = format!("error: autosave: {e}");
        }
        if ctx.input(|i| i.viewport().close_requested()) && !self.may_close && self.script.is_none()
        {
            if self.is_busy() {
                // Closes (or asks) once the change applying is in.
                ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
                if !self.held.contains(&Request::Quit) {
                    self.held.push(Request::Quit);
                }
            } else if self.session.is_dirty() {
                ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
                self.pending = Some(Pending::Quit);
            }
        }
        // (A change applying is one not saved: the title lost its dot for
        // the seconds of a large model's refactorisation.)
        let changing = self.work.as_ref().is_some_and(|w| w.changes);
        let dirty = if self.session.is_dirty() || changing {
            " •"
        } else {
            ""
        };
        // The file too: two presets of one name (a save as keeps the
        // name) had the same title (QA).
        let file = self
            .session
            .path()
            .and_then(Path::file_name)
            .map_or_else(|| "untitled".into(), std::ffi::OsStr::to_string_lossy);
        let title = format!("Softbody Studio — {} ({file}){dirty}", self.session.name());
        // A viewport command repaints: send it only when the title changes.
        if title != self.title {
            ctx.send_viewport_cmd(egui::ViewportCommand::Title(title.clone()));
            self.title = title;
        }
        // Playing, the next frame repaints: the thread wakes the UI when it
        // arrives, so a simulation slower than the display does not share
        // the CPU with redrawing the same frame (software rendering). A
        // slow look-in keeps the simulation rate shown falling in a stall.
        let woken =
            self.session.is_playing() && self.worker.as_ref().is_some_and(SimWorker::is_running);
        if woken {
            ctx.request_repaint_after(std::time::Duration::from_millis(500));
        } else if self.session.is_playing() {
            ctx.request_repaint();
        }
        let rates = [self.ui_fps, self.sim_fps()];
        if let Some(run) = &mut self.script {
            let (view, has_scene) = (self.viewport.rect, self.viewport.has_scene());
            let frame = self.session.state().frame;
            let projected = self.viewport.projected();
            run.frame_done(&ctx, (view, projected), has_scene, rates, frame, woken);
        }
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, STORAGE_KEY, &self.settings());
    }

    fn on_exit(&mut self, _gl: Option<&eframe::glow::Context>) {
        // A clean exit: unsaved changes were saved or knowingly discarded
        // (closing asks first); only a crash leaves the autosave behind.
        // An offer left unanswered stays for the next start.
        if let Some(autosave) = &mut self.autosave {
            autosave.clear();
        }
    }
}

/// A modal question: `heading`, `text` and a row of buttons, each
/// `(label, answer)`; the answer of the one clicked this frame, if any.
fn ask<T: Copy>(
    ctx: &egui::Context,
    id: &str,
    heading: &str,
    text: &str,
    buttons: &[(&str, T)],
) -> Option<T> {
    let mut answer = None;
    egui::Modal::new(egui::Id::unique(id)).show(ctx, |ui| {
        ui.heading(heading);
        ui.label(text);
        ui.horizontal(|ui| {
            for &(label, value) in buttons {
                if ui.button(label).clicked() {
                    answer = Some(value);
                }
            }
        });
    });
    answer
}

/// The folder of `file` (the working folder for none, or for a file named
/// without one), absolute, for a file dialog to start in: its path field
/// then says where it is (it read "."; and from a file named without a
/// folder, whose parent is "", the open dialog started on no folder, QA).
fn folder_of(file: Option<&Path>) -> PathBuf {
    let folder = file
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::path::absolute(folder).unwrap_or_else(|_| folder.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dialog_starts_in_the_folder_of_the_file() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(folder_of(Some(Path::new("spot.toml"))), here);
        assert_eq!(folder_of(None), here);
        assert_eq!(
            folder_of(Some(Path::new("presets/jelly.toml"))),
            here.join("presets")
        );
        assert_eq!(
            folder_of(Some(Path::new("/tmp/a/b.toml"))),
            Path::new("/tmp/a")
        );
    }
}
