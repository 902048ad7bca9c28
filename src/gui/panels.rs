//! The editor's side panels — Model, Material, Simulation, Selection &
//! pins — and the status bar. Each reads the [`Session`] and pushes
//! [`Request`]s, which the app carries out after the layout, so the session
//! never changes while it is drawn.

use std::ops::RangeInclusive;
use std::path::PathBuf;

use eframe::egui::{self, Color32};

use super::selection::Selection;
use super::viewport::Tool;
use crate::command::{Command, Param, WeightKind};
use crate::mesh::Vec3;
use crate::model::TetLimits;
use crate::param::{ParamId, format_value};
use crate::preset::library::{self, LibraryMaterial};
use crate::preset::{Build, BuildKind, MeshSource, Selector};
use crate::session::Session;
use crate::solver::memory::Resident;
use crate::solver::{Acceleration, Collider};

/// Something the person asked for this frame.
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// A command for the session.
    Command(Command),
    /// A slider or field drag began: its changes make one undo step.
    BeginGesture,
    /// The drag ended.
    EndGesture,
    /// Aim the camera at the whole model.
    FrameAll,
    /// Show the open dialog.
    OpenDialog,
    /// Show the save-as dialog.
    SaveAsDialog,
    /// Save, or ask where if the preset has no file.
    Save,
    /// Open this file (recent files, drops).
    Open(PathBuf),
    /// Close the window.
    Quit,
    /// Measure the next step's error against Newton.
    MeasureAccuracy,
    /// Stop a running accuracy measurement.
    CancelAccuracy,
    /// Pin the selected vertices so (the panel's buttons, the Edit menu
    /// and their keys).
    PinSelection(PinAs),
}

/// How [`Request::PinSelection`] pins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinAs {
    /// Hard pins: fixed in place.
    Hard,
    /// Soft pins: pulled to their rest positions.
    Soft,
    /// No pins: freed.
    Free,
}

impl PinAs {
    /// The verb for what it does: "pin", "soft-pin" or "unpin".
    pub fn verb(self) -> &'static str {
        match self {
            Self::Hard => "pin",
            Self::Soft => "soft-pin",
            Self::Free => "unpin",
        }
    }

    /// The session's command pinning `vertices` so.
    pub fn command(self, vertices: Vec<u32>) -> Command {
        match self {
            Self::Hard => Command::PinHard(vertices),
            Self::Soft => Command::PinSoft(vertices),
            Self::Free => Command::Unpin(vertices),
        }
    }
}

/// What the panels may change directly: the editor's own state.
pub struct PanelState<'a> {
    /// The selection.
    pub selection: &'a mut Selection,
    /// The view's tool.
    pub tool: &'a mut Tool,
    /// The brush radius (points).
    pub brush_radius: &'a mut f64,
    /// Whether a slider drag refactorises at every step (else once, when
    /// it ends: see [`Sliders`]).
    pub sliders: Sliders,
}

/// How a slider drag applies a change that refactorises the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sliders {
    /// At every step of the drag: the sag follows the weight live.
    Live,
    /// Once, when the drag ends: the refactorisation is too slow to redo at
    /// every step (~2.6 s on a 105k-vertex tet body), and each would stall
    /// the UI. The slider follows the pointer meanwhile, and shows the
    /// value it let go at while a change is `applying` in the background
    /// (it went back to the old value for those seconds).
    OnRelease {
        /// Whether a change applies in the background.
        applying: bool,
    },
}

impl Sliders {
    /// Whether a drag applies when it ends.
    fn on_release(self) -> bool {
        matches!(self, Self::OnRelease { .. })
    }

    /// Whether a change applies in the background.
    fn applying(self) -> bool {
        matches!(self, Self::OnRelease { applying: true })
    }
}

/// A slider whose drag may apply only when it ends ([`Sliders::OnRelease`]):
/// the dragged value waits in egui's memory under `id`, shown by the slider;
/// the value it applied waits there too while that applies in the
/// background.
struct Deferred<T> {
    id: egui::Id,
    pending: Option<T>,
    applying: Option<T>,
}

impl<T: Clone + PartialEq + Send + Sync + 'static> Deferred<T> {
    /// The value waiting under `id`, if its drag goes on or ends this frame:
    /// one whose slider was gone when the pointer was released is dropped,
    /// not applied when the slider shows again. With `sliders` saying no
    /// change applies, the value applied is forgotten.
    fn load(ui: &egui::Ui, id: egui::Id, sliders: Sliders) -> Self {
        let dragging = ui.input(|i| i.pointer.any_down() || i.pointer.any_released());
        let mut pending = ui.data(|d| d.get_temp(id));
        if pending.is_some() && !dragging {
            ui.data_mut(|d| d.remove::<T>(id));
            pending = None;
        }
        let applying = if sliders.applying() {
            ui.data(|d| d.get_temp(Self::applied_id(id)))
        } else {
            ui.data_mut(|d| d.remove::<T>(Self::applied_id(id)));
            None
        };
        Self {
            id,
            pending,
            applying,
        }
    }

    /// Where the value applied waits.
    fn applied_id(id: egui::Id) -> egui::Id {
        id.with("applied")
    }

    /// The value the slider shows: the one waiting, else the one applying,
    /// else `current`.
    fn shown(&self, current: T) -> T {
        (self.pending.clone().or_else(|| self.applying.clone())).unwrap_or(current)
    }

    /// The value to apply now, if any, once the slider (`response`) left
    /// `value`: none while a drag that `defer`s goes on (`value` waits),
    /// the value waiting or the slider's when it ends.
    fn settle(
        self,
        ui: &egui::Ui,
        response: &egui::Response,
        defer: bool,
        value: T,
        current: &T,
    ) -> Option<T> {
        if defer && response.dragged() && !response.drag_stopped() {
            ui.data_mut(|d| d.insert_temp(self.id, value));
            return None;
        }
        if self.pending.is_some() {
            ui.data_mut(|d| d.remove::<T>(self.id));
        }
        let applied =
            (value != *current && (response.changed() || self.pending.is_some())).then_some(value);
        if let Some(value) = &applied {
            ui.data_mut(|d| d.insert_temp(Self::applied_id(self.id), value.clone()));
        }
        applied
    }
}

/// Pushes the gesture requests of a dragged widget's `response`.
fn gesture(response: &egui::Response, out: &mut Vec<Request>) {
    if response.drag_started() {
        out.push(Request::BeginGesture);
    }
    if response.drag_stopped() {
        out.push(Request::EndGesture);
    }
}

/// Parses a typed number as egui does (whitespace ignored, `−` for `-`),
/// except that the text shown for `current`, left unchanged, gives back
/// `current` exactly: clicking into a box and out again used to apply its
/// rounded display (a weight of 1234.5678 became 1235). A value that is
/// not finite is no value (the field goes back): a logarithmic slider turned
/// a typed `nan` into infinity, reported as "inf is not a finite number".
fn keep_unedited(current: f64) -> impl Fn(&str) -> Option<f64> {
    let shown = format_value(current);
    move |text| {
        let text: String = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| if c == '−' { '-' } else { c })
            .collect();
        if text == shown {
            Some(current)
        } else {
            text.parse().ok().filter(|v: &f64| v.is_finite())
        }
    }
}

/// A labelled number field (the label names it for screen readers too);
/// its drags are gestures.
fn number(
    ui: &mut egui::Ui,
    label: &str,
    value: &mut f64,
    range: RangeInclusive<f64>,
    speed: f64,
    out: &mut Vec<Request>,
) {
    let name = ui.label(label);
    let current = *value;
    let response = ui
        .add(
            egui::DragValue::new(value)
                .range(range)
                .speed(speed)
                .custom_formatter(|v, _| format_value(v))
                .custom_parser(keep_unedited(current))
                .update_while_editing(false),
        )
        .labelled_by(name.id);
    gesture(&response, out);
}

/// How a parameter's slider maps to values: its range, and for a
/// logarithmic one the smallest positive value it reaches by dragging
/// (below it, one end of the slider is 0).
struct SliderScale {
    range: RangeInclusive<f64>,
    log: Option<f64>,
}

/// The slider scale of a parameter on a cloth (`volume` false) or a tet
/// body: the values that kind of model takes, so that a drag is fine
/// enough to tune with (one decade per ~30 points at the panel's slider
/// width). The range of all weights, 1e-3 to 1e9 in 100 points, moved a
/// weight by a decade every 7 points. Typed values may lie outside it.
fn scale(param: ParamId, volume: bool) -> SliderScale {
    let linear = |range| SliderScale { range, log: None };
    let log = |range, smallest| SliderScale {
        range,
        log: Some(smallest),
    };
    match param {
        // N/m, cloth: silk's 100 to leather's 8000.
        ParamId::Weight(WeightKind::Structural | WeightKind::Shear) => log(0.0..=1e5, 1.0),
        // Silk's 0.5 to leather's 800.
        ParamId::Weight(WeightKind::Bending) => log(0.0..=1e4, 1e-2),
        ParamId::Weight(WeightKind::Attachment) => log(0.0..=1e6, 1.0),
        // Pa: a jelly's 2e4 to firm rubber's 1e6.
        ParamId::Weight(_) => log(0.0..=1e8, 1e2),
        // kg/m³ for volumes, kg/m² for cloth.
        ParamId::Density if volume => log(10.0..=1e4, 10.0),
        ParamId::Density => log(1e-2..=10.0, 1e-2),
        ParamId::Dt => log(1e-4..=0.1, 1e-4),
        ParamId::Iterations => linear(1.0..=200.0),
        ParamId::Tolerance => log(0.0..=0.1, 1e-6),
        ParamId::Damping => linear(0.0..=1.0),
        ParamId::GravityY => linear(-30.0..=30.0),
        // (The Model panel's own field, not a slider; its whole range.)
        ParamId::Scale => log(Build::SCALE_RANGE, *Build::SCALE_RANGE.start()),
    }
}

/// The width of the parameters' sliders (points): a decade of a weight
/// every ~30 of them.
pub const SLIDER_WIDTH: f32 = 160.0;

/// What a parameter means, for its tooltip.
fn help(param: ParamId) -> &'static str {
    match param {
        ParamId::Weight(WeightKind::Structural) => {
            "Stretch stiffness of the edge springs (N/m); the diagonal (shear) springs resist \
             stretch too, so a cloth sags once both are low"
        }
        ParamId::Weight(WeightKind::Shear) => {
            "Shear stiffness of the diagonal springs (N/m), which also resist stretch"
        }
        ParamId::Weight(WeightKind::Bending) => {
            "Bending stiffness of the springs across interior edges (N/m)"
        }
        ParamId::Weight(WeightKind::Attachment) => "Pull of soft pins and of the mouse grab (N/m)",
        ParamId::Weight(WeightKind::Strain) => "Corotated (ARAP) stiffness of the tets (Pa)",
        ParamId::Weight(WeightKind::StrainLimit) => {
            "Stiffness keeping principal stretches within the limits (Pa)"
        }
        ParamId::Weight(WeightKind::Volume) => {
            "Stiffness keeping tet volumes within the limits (Pa)"
        }
        ParamId::Density => "kg/m² for cloth, kg/m³ for volumes",
        ParamId::Dt => "Frame time step h (s)",
        ParamId::Iterations => "Local/global iterations per substep (the most, with a tolerance)",
        ParamId::Tolerance => {
            "Stop a substep's iterations once one moves the vertices by less than this \
             fraction of the step (0: always run all iterations)"
        }
        ParamId::Damping => "Share of the velocity removed per 1/60 s (0: none, 1: all)",
        ParamId::GravityY => "Vertical gravity (m/s²)",
        ParamId::Scale => {
            "Metres per unit of the mesh file: 0.01 for centimetres, 0.0254 for inches. The body \
             is rebuilt at its new size, and its pin rules, colliders and camera with it; bakes \
             are written in the file's units"
        }
    }
}

/// A slider with numeric entry for `param`: live while dragged (one undo
/// step per drag) unless `sliders` defers a refactorisation to the drag's
/// end, once entered when typed.
fn param_slider(
    ui: &mut egui::Ui,
    session: &Session,
    (param, sliders): (ParamId, Sliders),
    out: &mut Vec<Request>,
) {
    let preset = session.preset();
    let current = param.value(preset);
    let defer = sliders.on_release() && param.refactors();
    let deferred = Deferred::load(
        ui,
        egui::Id::unique(("deferred slider", param.label())),
        sliders,
    );
    let mut value = deferred.shown(current);
    let SliderScale { range, log } = scale(param, !session.model().tets.is_empty());
    let mut slider = egui::Slider::new(&mut value, range)
        .logarithmic(log.is_some())
        .clamping(egui::SliderClamping::Never)
        .text(param.label())
        .custom_formatter(|v, _| format_value(v))
        .custom_parser(keep_unedited(current))
        // A typed number is one change once entered, not one per key.
        .update_while_editing(false);
    if let Some(smallest) = log {
        slider = slider.smallest_positive(smallest);
    }
    if param == ParamId::Iterations {
        slider = slider.integer();
    }
    let mut response = ui.add(slider).on_hover_text(help(param));
    if defer {
        response = response.on_hover_text(on_release(session));
    }
    gesture(&response, out);
    if let Some(value) = deferred.settle(ui, &response, defer, value, &current) {
        out.push(Request::Command(param.command(value, preset)));
    }
}

/// The hover note of a slider that applies when its drag ends.
fn on_release(session: &Session) -> String {
    format!(
        "A drag applies when it ends: each change refactorises the system ({:.0} ms)",
        session.solver().factor_stats().factor_ms
    )
}

/// The Model section: file, build mode and options, counts, factor figures.
/// `busy`: a change applies in the background (a build always does).
pub fn model(ui: &mut egui::Ui, session: &Session, busy: bool, out: &mut Vec<Request>) {
    let preset = session.preset();
    let model = session.model();
    ui.horizontal(|ui| {
        let file = session
            .path()
            .map_or_else(|| "untitled".to_owned(), |p| p.display().to_string());
        ui.label(file);
        if ui
            .button("Open…")
            .on_hover_text("Open a preset or an OBJ (Ctrl+O)")
            .clicked()
        {
            out.push(Request::OpenDialog);
        }
    });
    let source = match &preset.mesh {
        MeshSource::Grid(g) => format!("generated {0} × {0} grid, {1} m", g.n, g.width),
        MeshSource::Obj(p) => format!("OBJ {}", p.display()),
        MeshSource::TetFile(p) => format!("tet file {}", p.display()),
    };
    ui.label(source);
    // Every note of the build, readable here (the status bar says the
    // first, and how many more).
    let warnings = &session.built().warnings;
    if !warnings.is_empty() {
        let title = match warnings.len() {
            1 => "1 note on the mesh".to_owned(),
            n => format!("{n} notes on the mesh"),
        };
        egui::CollapsingHeader::new(title)
            .id_salt("mesh notes")
            .show(ui, |ui| {
                for warning in warnings {
                    ui.label(warning);
                }
            });
    }
    let build = preset.build;
    let from_obj = matches!(preset.mesh, MeshSource::Obj(_));
    ui.add_enabled_ui(from_obj, |ui| {
        ui.horizontal(|ui| {
            ui.label("build as");
            for kind in [BuildKind::Springs, BuildKind::Tets] {
                // A flat mesh encloses no volume: offered, it failed after
                // the click with a line cut short (QA).
                let can = kind == BuildKind::Springs || !from_obj || session.built().can_be_tets();
                let radio = ui
                    .add_enabled(
                        can,
                        egui::RadioButton::new(build.kind == kind, kind.label()),
                    )
                    .on_disabled_hover_text("The mesh is flat: it encloses no volume to fill");
                if radio.clicked() && build.kind != kind {
                    out.push(Request::Command(Command::SetBuild(Build { kind, ..build })));
                }
            }
        });
    })
    .response
    .on_disabled_hover_text("Only an OBJ mesh can be built either way");
    if !matches!(preset.mesh, MeshSource::Grid(_)) {
        scale_field(ui, build, out);
    }
    if build.kind == BuildKind::Tets {
        if from_obj {
            let (lo, hi) = crate::model::tetra::TetraOptions::RESOLUTION_RANGE.into_inner();
            let default = crate::model::tetra::TetraOptions::DEFAULT_RESOLUTION;
            let current = build.resolution.unwrap_or(default);
            // Shows the resolution let go at while the model builds (it went
            // back to the old one for those seconds, as if refused: QA).
            let sliders = Sliders::OnRelease { applying: busy };
            let deferred = Deferred::load(ui, egui::Id::unique("deferred resolution"), sliders);
            let mut resolution = deferred.shown(current);
            let response = ui
                .add(
                    egui::Slider::new(&mut resolution, lo..=hi)
                        .text("resolution")
                        .update_while_editing(false),
                )
                .on_hover_text("Lattice cells across the longest side (rebuilds on release)");
            if let Some(resolution) = deferred.settle(ui, &response, true, resolution, &current) {
                out.push(Request::Command(Command::SetBuild(Build {
                    resolution: Some(resolution),
                    ..build
                })));
            }
        }
        let mut edge_springs = build.edge_springs;
        if ui
            .checkbox(&mut edge_springs, "springs on tet edges")
            .changed()
        {
            out.push(Request::Command(Command::SetBuild(Build {
                edge_springs,
                ..build
            })));
        }
    }
    let s = &model.springs;
    let stats = session.solver().factor_stats();
    egui::Grid::new("model counts")
        .num_columns(2)
        .show(ui, |ui| {
            let texcoords = session.built().texcoords();
            // The body's: its surface where it has one (a tet lattice
            // stops short of it).
            let body = session
                .built()
                .surface
                .as_ref()
                .map_or(&model.rest[..], |s| s.positions());
            let (lo, hi) = crate::mesh::bounds(body);
            let size = (hi - lo).map(format_value);
            let rows: [(&str, String); 13] = [
                ("size", format!("{} × {} × {} m", size.x, size.y, size.z)),
                ("vertices", model.rest.len().to_string()),
                ("triangles", model.render_triangles().len().to_string()),
                (
                    "texture coordinates",
                    texcoords.map_or_else(|| "none".to_owned(), |t| t.exported().to_string()),
                ),
                ("structural springs", s.structural.len().to_string()),
                ("shear springs", s.shear.len().to_string()),
                ("bending springs", s.bending.len().to_string()),
                ("tets", model.tets.len().to_string()),
                (
                    "hard / soft pins",
                    format!(
                        "{} / {}",
                        model.pins.hard_vertices().len(),
                        model.pins.soft.len()
                    ),
                ),
                ("matrix non-zeros", stats.matrix_nnz.to_string()),
                (
                    "factor non-zeros",
                    format!("{} ({})", stats.factor_nnz, stats.precision().name()),
                ),
                (
                    "analyse / factor",
                    format!("{:.1} / {:.1} ms", stats.analyse_ms, stats.factor_ms),
                ),
                (
                    "refactorisations",
                    match stats.updated_rows {
                        0 => stats.refactors.to_string(),
                        rows => format!("{} (+ {rows} rows by update)", stats.refactors),
                    },
                ),
            ];
            for (name, value) in rows {
                ui.label(name);
                ui.label(value);
                ui.end_row();
            }
        });
}

/// The mesh file's scale (metres per unit): rebuilds, resizing the scene
/// with the body, once a drag is released or a typed value entered.
fn scale_field(ui: &mut egui::Ui, build: Build, out: &mut Vec<Request>) {
    ui.horizontal(|ui| {
        let name = ui.label("scale");
        let mut scale = build.scale;
        let response = ui
            .add(
                // Not clamped to its range: a value outside it is refused
                // and said so, not quietly made another.
                egui::DragValue::new(&mut scale)
                    .speed(0.005 * build.scale)
                    .custom_formatter(|v, _| format_value(v))
                    .custom_parser(keep_unedited(build.scale))
                    .suffix(" m per unit")
                    .update_while_editing(false),
            )
            .labelled_by(name.id)
            .on_hover_text(help(ParamId::Scale));
        let settled = response.drag_stopped() || (response.changed() && !response.dragged());
        if settled && scale != build.scale {
            out.push(Request::Command(Command::SetBuild(Build {
                scale,
                ..build
            })));
        }
    });
}

/// The Material section: one-click materials, a slider per weight,
/// density and damping, the tet limits.
pub fn material(ui: &mut egui::Ui, session: &Session, sliders: Sliders, out: &mut Vec<Request>) {
    let preset = session.preset();
    let kind = preset.build.kind;
    ui.horizontal_wrapped(|ui| {
        for library_material in library::materials().iter().filter(|m| m.kind == kind) {
            let LibraryMaterial { name, material, .. } = *library_material;
            let selected = library_material.is_in(preset);
            if ui
                .selectable_label(selected, name)
                .on_hover_text(format!("Use the {name} material (density and weights)"))
                .clicked()
                && !selected
            {
                out.push(Request::Command(Command::SetMaterial(material)));
            }
        }
    });
    for param in ParamId::for_model(session.preset(), session.model()) {
        // The attachment weight sits with the pin buttons.
        let pins = ParamId::Weight(WeightKind::Attachment);
        if param != pins
            && matches!(
                param,
                ParamId::Weight(_) | ParamId::Density | ParamId::Damping
            )
        {
            param_slider(ui, session, (param, sliders), out);
        }
    }
    if !session.model().tets.is_empty() {
        limits(ui, preset.material.limits, out);
    }
}

/// The tet limits as four fields.
fn limits(ui: &mut egui::Ui, limits: TetLimits, out: &mut Vec<Request>) {
    let mut edited = limits;
    ui.horizontal(|ui| {
        ui.label("stretch");
        number(ui, "min", &mut edited.strain_min, 0.0..=1.0, 0.005, out);
        number(ui, "max", &mut edited.strain_max, 1.0..=10.0, 0.005, out);
    });
    ui.horizontal(|ui| {
        ui.label("volume");
        number(ui, "min", &mut edited.volume_min, 0.01..=1.0, 0.005, out);
        number(ui, "max", &mut edited.volume_max, 1.0..=10.0, 0.005, out);
    });
    if edited != limits {
        out.push(Request::Command(Command::SetLimits(edited)));
    }
}

/// The Simulation section: the playback buttons, time step, iterations,
/// substeps, gravity and colliders.
pub fn simulation(ui: &mut egui::Ui, session: &Session, sliders: Sliders, out: &mut Vec<Request>) {
    let preset = session.preset();
    ui.horizontal(|ui| {
        let (label, tip) = if session.is_playing() {
            ("Pause", "Pause the simulation (Space)")
        } else {
            ("Play", "Play the simulation (Space)")
        };
        if ui.button(label).on_hover_text(tip).clicked() {
            out.push(Request::Command(Command::TogglePlay));
        }
        if ui.button("Step").on_hover_text("One frame (S)").clicked() {
            out.push(Request::Command(Command::Step(1)));
        }
        if ui
            .button("Reset")
            .on_hover_text("Back to rest at time 0 (R)")
            .clicked()
        {
            out.push(Request::Command(Command::Reset));
        }
    });
    for param in [ParamId::Dt, ParamId::Iterations, ParamId::Tolerance] {
        param_slider(ui, session, (param, sliders), out);
    }
    let now = preset.sim.acceleration;
    ui.horizontal(|ui| {
        ui.label("acceleration").on_hover_text(
            "How the iterations are accelerated; every method keeps the objective non-increasing",
        );
        for method in Acceleration::ALL {
            let tip = match method {
                Acceleration::Plain => "Plain local/global iterations (Liu 2013)",
                Acceleration::Chebyshev => {
                    "Chebyshev semi-iteration (Wang 2015), spectral radius estimated per scene"
                }
                Acceleration::Anderson => {
                    "Anderson acceleration (Peng 2018): the fewest iterations for a given accuracy"
                }
            };
            if ui
                .selectable_label(method == now, method.name())
                .on_hover_text(tip)
                .clicked()
                && method != now
            {
                out.push(Request::Command(Command::SetParam(Param::Acceleration(
                    method,
                ))));
            }
        }
    });
    let mut extrapolate = preset.sim.extrapolates();
    if ui
        .checkbox(&mut extrapolate, "extrapolated initial guess")
        .on_hover_text(
            "Start each step's iterations from the motion without forces plus the acceleration \
             predicted from the last two steps: fewer iterations for smoothly changing forces. \
             On by default with Anderson, whose safeguard keeps it from adding energy; plain PD \
             and Chebyshev can gain energy from it at few iterations, and against colliders at \
             any (a jelly on a ball buzzed, then blew up at 10 iterations)",
        )
        .changed()
    {
        out.push(Request::Command(Command::SetParam(Param::Extrapolate(
            extrapolate,
        ))));
    }
    let defer = sliders.on_release();
    let deferred = Deferred::load(ui, egui::Id::unique("deferred substeps"), sliders);
    let mut substeps = deferred.shown(preset.sim.substeps);
    let mut response = ui
        .add(
            egui::Slider::new(&mut substeps, 1..=32)
                .text("substeps")
                .update_while_editing(false),
        )
        .on_hover_text("Solver steps per frame, each h / substeps long");
    if defer {
        response = response.on_hover_text(on_release(session));
    }
    gesture(&response, out);
    if let Some(substeps) = deferred.settle(ui, &response, defer, substeps, &preset.sim.substeps) {
        out.push(Request::Command(Command::SetParam(Param::Substeps(
            substeps,
        ))));
    }
    let mut gravity = preset.sim.gravity;
    ui.horizontal(|ui| {
        ui.label("gravity (m/s²)");
        for (c, axis) in ["x", "y", "z"].into_iter().enumerate() {
            number(
                ui,
                axis,
                &mut gravity[c],
                f64::NEG_INFINITY..=f64::INFINITY,
                0.05,
                out,
            );
        }
    });
    if gravity != preset.sim.gravity {
        out.push(Request::Command(Command::SetParam(Param::Gravity(gravity))));
    }
    colliders(ui, session, out);
}

/// The collider list: a ground plane and spheres.
fn colliders(ui: &mut egui::Ui, session: &Session, out: &mut Vec<Request>) {
    let current = &session.preset().sim.colliders;
    let mut edited = current.clone();
    ui.label("colliders");
    let mut remove = None;
    for (i, collider) in edited.iter_mut().enumerate() {
        // Wrapped: a sphere's seven fields widened the panel for good.
        ui.horizontal_wrapped(|ui| {
            // Unbounded: a value a preset does not take is the session's to
            // refuse, with what it takes (QA: a typed 1e300 became 1e9
            // unsaid, and threw the body up a billion metres).
            let free = f64::NEG_INFINITY..=f64::INFINITY;
            match collider {
                Collider::Ground { height, friction } => {
                    ui.label("ground");
                    number(ui, "y", height, free, 0.01, out);
                    number(ui, "friction", friction, 0.0..=10.0, 0.01, out);
                }
                Collider::Sphere {
                    center,
                    radius,
                    friction,
                } => {
                    ui.label("sphere");
                    for (c, axis) in ["x", "y", "z"].into_iter().enumerate() {
                        number(ui, axis, &mut center[c], free.clone(), 0.01, out);
                    }
                    number(ui, "r", radius, free, 0.01, out);
                    number(ui, "friction", friction, 0.0..=10.0, 0.01, out);
                }
            }
            if ui
                .small_button("×")
                .on_hover_text("Remove this collider")
                .clicked()
            {
                remove = Some(i);
            }
        });
    }
    if let Some(i) = remove {
        edited.remove(i);
    }
    ui.horizontal(|ui| {
        let model = session.model();
        let (lo, hi) = crate::mesh::bounds(&model.rest);
        let size = (hi - lo).norm().max(1e-3);
        let has_ground = edited.iter().any(|c| matches!(c, Collider::Ground { .. }));
        if ui
            .add_enabled(!has_ground, egui::Button::new("+ ground"))
            .on_hover_text("A ground plane just below the model")
            .clicked()
        {
            edited.push(Collider::Ground {
                height: lo.y - 0.1 * size,
                friction: 0.3,
            });
        }
        if ui
            .button("+ sphere")
            .on_hover_text("A sphere under the model's centre")
            .clicked()
        {
            let centre = (lo + hi) / 2.0;
            edited.push(Collider::Sphere {
                center: Vec3::new(centre.x, lo.y - 0.25 * size, centre.z),
                radius: 0.2 * size,
                friction: 0.3,
            });
        }
    });
    if edited != *current {
        out.push(Request::Command(Command::SetParam(Param::Colliders(
            edited,
        ))));
    }
}

/// The Selection & pins section: tools, selection operations, groups and
/// the pin buttons.
pub fn selection(
    ui: &mut egui::Ui,
    session: &Session,
    state: &mut PanelState<'_>,
    out: &mut Vec<Request>,
) {
    ui.horizontal(|ui| {
        ui.label("tool");
        ui.selectable_value(state.tool, Tool::Select, "Select")
            .on_hover_text("Click a vertex or drag a box; Shift adds, Ctrl removes");
        ui.selectable_value(state.tool, Tool::Brush, "Brush")
            .on_hover_text("Drag to paint the selection; Ctrl removes");
    });
    if *state.tool == Tool::Brush {
        ui.add(egui::Slider::new(state.brush_radius, 4.0..=200.0).text("brush radius (px)"));
    }
    let vertices = session.model().vertex_count();
    ui.label(format!(
        "{} of {vertices} vertices selected",
        state.selection.len()
    ));
    ui.horizontal(|ui| {
        if ui.button("All").clicked() {
            let all: Vec<u32> = (0..vertices as u32).collect();
            state
                .selection
                .apply(super::selection::SelectMode::Replace, &all);
        }
        if ui.button("Invert").clicked() {
            state.selection.invert();
        }
        if ui
            .button("None")
            .on_hover_text("Clear the selection (Esc)")
            .clicked()
        {
            state.selection.clear();
        }
        if ui
            .button("Pinned")
            .on_hover_text("Select the hard-pinned vertices")
            .clicked()
        {
            state.selection.apply(
                super::selection::SelectMode::Replace,
                session.model().pins.hard_vertices(),
            );
        }
    });
    let groups = session
        .built()
        .surface
        .as_ref()
        .map_or(&[][..], |s| s.groups());
    if !groups.is_empty() {
        egui::ComboBox::from_label("OBJ group")
            .selected_text("select a group…")
            .show_ui(ui, |ui| {
                for group in groups {
                    if ui.selectable_label(false, &group.name).clicked()
                        && let Ok(vertices) =
                            session.built().select(&Selector::Group(group.name.clone()))
                    {
                        state
                            .selection
                            .apply(super::selection::SelectMode::Replace, &vertices);
                    }
                }
            });
    }
    pin_rules(ui, session, out);
    ui.horizontal(|ui| {
        let enabled = !state.selection.is_empty();
        let mut button = |ui: &mut egui::Ui, label: &str, tip: &str, how: PinAs| {
            if ui
                .add_enabled(enabled, egui::Button::new(label))
                .on_hover_text(tip)
                .clicked()
            {
                out.push(Request::PinSelection(how));
            }
        };
        button(
            ui,
            "Pin",
            "Hard-pin the selection: fixed in place (P)",
            PinAs::Hard,
        );
        button(
            ui,
            "Soft pin",
            "Pull the selection to its rest positions with the attachment weight (Shift+P)",
            PinAs::Soft,
        );
        button(ui, "Unpin", "Free the selection (U)", PinAs::Free);
    });
    param_slider(
        ui,
        session,
        (ParamId::Weight(WeightKind::Attachment), state.sliders),
        out,
    );
}

/// The rules a click hard-pins: a body's top or bottom, a grid's top edge
/// or corners. The preset keeps them as rules, which hold whatever the
/// mesh is rebuilt as (a selection is kept as vertex numbers); the menu
/// checks those it holds, and a click on one takes it back.
fn pin_rules(ui: &mut egui::Ui, session: &Session, out: &mut Vec<Request>) {
    egui::ComboBox::from_label("pin rule")
        .selected_text("hard-pin…")
        .show_ui(ui, |ui| {
            // Only while the menu is open: the planes read every vertex.
            let model = session.model();
            let mut rules = vec![
                (
                    "top plane (highest vertices)",
                    Selector::extreme_plane(model, true),
                ),
                (
                    "bottom plane (lowest vertices)",
                    Selector::extreme_plane(model, false),
                ),
            ];
            if session.built().is_grid() {
                rules.push(("top edge", Some(Selector::TopEdge)));
                rules.push(("top corners", Some(Selector::TopCorners)));
            }
            let pins = &session.preset().pins;
            for (name, rule) in rules {
                // A rule the preset holds is checked; a click takes it back.
                let held = rule.as_ref().is_some_and(|r| pins.hard.contains(r));
                let clicked = ui
                    .add_enabled_ui(rule.is_some(), |ui| ui.selectable_label(held, name))
                    .inner
                    .on_hover_text(if held {
                        "Held by the preset: click to take this rule back"
                    } else {
                        "Hard-pin these vertices; the preset keeps the rule"
                    })
                    .on_disabled_hover_text(
                        "The model lies flat: this plane would hold every vertex",
                    )
                    .clicked();
                if let (true, Some(rule)) = (clicked, rule) {
                    let mut hard = pins.hard.clone();
                    if held {
                        hard.retain(|r| *r != rule);
                    } else {
                        hard.push(rule);
                    }
                    out.push(Request::Command(Command::SetPins(crate::preset::PinSpec {
                        hard,
                        soft: pins.soft.clone(),
                        ..crate::preset::PinSpec::default()
                    })));
                }
            }
        })
        .response
        .on_hover_text(
            "Hard-pin a body's top or bottom, or a grid's top edge or corners, as a rule \
             that holds when the mesh is rebuilt (a selection is kept as vertex numbers)",
        );
}

/// What the status bar shows besides the session.
pub struct StatusInfo<'a> {
    /// UI frames per second.
    pub ui_fps: f64,
    /// Simulated frames per second.
    pub sim_fps: f64,
    /// The memory the process holds, if known.
    pub memory: Option<Resident>,
    /// Vertices selected.
    pub selected: usize,
    /// The last outcome or error.
    pub message: &'a str,
}

/// The status bar: UI and simulation rates, the solver phases of the last
/// frame, the memory the process holds, the vertices selected (QA: only the
/// Pins section, often scrolled away, said how many), the warnings and the
/// last outcome.
pub fn status_bar(ui: &mut egui::Ui, session: &Session, info: &StatusInfo<'_>) {
    ui.horizontal(|ui| {
        ui.label(format!("UI {:.0} fps", info.ui_fps));
        ui.separator();
        // Paused, the rate of the last frames stepped is no rate.
        if session.is_playing() {
            ui.label(format!("sim {:.0} fps", info.sim_fps));
        } else {
            ui.label("sim paused");
        }
        ui.separator();
        let t = session
            .history()
            .last()
            .map(|f| f.timings)
            .unwrap_or_default();
        ui.label(format!(
            "local {:.2} ms  global {:.2} ms",
            t.local_ms, t.global_ms
        ));
        ui.separator();
        ui.label(format!(
            "t = {:.2} s",
            session.history().last().map_or(0.0, |f| f.time)
        ));
        ui.separator();
        if let Some(memory) = info.memory {
            ui.label(format!("memory {memory}"))
                .on_hover_text("held in RAM by this process now, and the most it has held");
            ui.separator();
        }
        if info.selected > 0 {
            ui.label(format!("{} selected", info.selected));
            ui.separator();
        }
        // Cut at the window's edge with "…", the whole of it on hover (a
        // long error ran off the edge, unreadable, and so did a blow-up's
        // advice).
        let cut = |ui: &mut egui::Ui, text: String, colour: Color32| {
            ui.add(egui::Label::new(egui::RichText::new(text).color(colour)).truncate());
        };
        let orange = Color32::from_rgb(255, 190, 60);
        let non_manifold = session.model().springs.non_manifold_edges;
        if let Some(w) = session.warning() {
            cut(ui, format!("paused: {w}"), orange);
        } else if non_manifold > 0 {
            let text = format!("{non_manifold} non-manifold edges got no bending spring");
            cut(ui, text, orange);
        }
        if !info.message.is_empty() {
            let colour = if info.message.starts_with("error") {
                Color32::from_rgb(255, 110, 100)
            } else {
                ui.visuals().text_color()
            };
            cut(ui, info.message.to_owned(), colour);
        }
    });
}
