//! [`Session`]: one open scene — its [`Preset`], the built [`Model`], the
//! [`Solver`], the [`State`] and an energy [`History`] — and
//! [`Session::apply`], which carries out a [`Command`] with the least work
//! that is correct.
//!
//! # What a change costs
//! Every preset change (a command, an undo or a redo) goes through one
//! decision, made by comparing the old preset with the new one:
//!
//! | what differs                                              | work                                   | [`Applied`]    |
//! |-----------------------------------------------------------|----------------------------------------|----------------|
//! | mesh or build options                                     | build from the mesh, state at rest      | `Reloaded`     |
//! | the resolved hard-pinned vertices                          | new system (pattern changes), state kept | `Rebuilt`     |
//! | weights, density, `dt` or `substeps`, the resolved soft pins | numeric refactorisation               | `Refactored`   |
//! | tet limits, iterations, damping, gravity, colliders       | parameters set, no factorisation        | `Updated`      |
//! | name or view only                                         | nothing                                 | `Nothing`      |
//!
//! Pins are compared after resolving their selectors, so an edit that
//! selects the same vertices costs nothing. Soft pins only add to the
//! diagonal of the system matrix, so adding or removing one is a
//! refactorisation, not a rebuild. A rebuild keeps the positions and
//! velocities (a newly hard-pinned vertex stays where it is); only a new
//! mesh starts at rest.
//!
//! # Runtime pins
//! Two kinds of attachment live beside the preset, neither saved nor
//! undoable: moved soft-pin targets ([`Command::MoveSoftPinTarget`]) and the
//! grab ([`Command::Grab`]). A grab adds soft pins on its vertex and its
//! three nearest neighbours, which keep their places about it as it moves
//! (one refactorisation, not a rebuild; on a large model, from 500,000
//! entries of `L`, a low-rank update of the factor instead, exact to
//! round-off: [`FactorStats::updated_rows`](crate::solver::FactorStats));
//! dragging only moves their targets (no factorisation, no allocation);
//! releasing refactorises again (or drops the update). Each pulls with the
//! preset's attachment weight, as the soft pins do — with weight 0 a grab
//! is refused — which keeps the solver's single attachment weight; four
//! vertices pull four times as hard as one, and a patch rather than a
//! spike. On the largest models (a factor of over 10 M entries) the grab
//! holds its vertex alone, whose update takes hold soonest.
//!
//! # Undo
//! The preset is the unit of undo: each change pushes the previous preset
//! on a bounded stack ([`DEFAULT_UNDO_LIMIT`], the oldest dropped), and
//! undo/redo go through the same decision as the commands. The motion is
//! not undone: a hard pin given back holds its vertex where it is now.
//! (Put back where it held before, a cloth's corner unpinned and undone
//! after the cloth swung was pulled through the cloth, which has no
//! self-collision, and left it folded for good, 6 kJ spiking in the graph.)
//!
//! # Pins and selectors
//! The pin commands store explicit vertices in an `indices` selector, or
//! the name of the one OBJ group that selects exactly them.
//! Unpinning a vertex that a rule or group selects keeps the rule and
//! wraps it in an `except` selector (so the rule still follows re-meshing);
//! a rule left with no vertex is dropped. Pinning a vertex that an `except`
//! left out takes it out of the exception again.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::command::Command;
use crate::mesh::{ImportError, Vec3};
use crate::model::tetra::TetraOptions;
use crate::model::{Attachment, Model, Pins};
use crate::preset::{
    Build, BuildKind, Built, MeshSource, PinSpec, Preset, PresetError, PresetErrorKind, Selector,
    View, Written,
};
use crate::solver::accuracy::{self, Accuracy};
use crate::solver::{Energies, SimParams, Solver, SolverError, State, StepReport, Timings};

/// What a front end says of [`Applied::SavedInFull`] at `path`.
pub fn saved_in_full(path: &Path) -> String {
    format!(
        "saved {} in full: the file's text could not be followed (it is not a preset's \
         TOML any more: edited elsewhere?), so of its comments only the opening ones stayed",
        path.display()
    )
}

/// What a front end says when a measurement is asked for while a cancelled
/// one is still stopping (see [`Session::measure_accuracy`]).
pub const STILL_STOPPING: &str = "the cancelled accuracy measurement is still stopping (it \
     finishes the factorisation under way); measure again in a moment";

/// What a front end's status line says instead of [`STILL_STOPPING`] once
/// the cancelled measurement has stopped (see [`stopped_note`]).
pub const STOPPED: &str = "the cancelled accuracy measurement has stopped: measure again now";

/// Replaces [`STILL_STOPPING`] in a front end's status `line` with
/// [`STOPPED`] once `session`'s cancelled measurement has stopped (QA: the
/// line still said it was stopping 25 s after it had).
pub fn stopped_note(line: &mut String, session: &Session) {
    if line == STILL_STOPPING && !session.is_stopping() {
        STOPPED.clone_into(line);
    }
}

/// The preset the front ends open without an argument, when it exists
/// (relative to the working directory); else [`Preset::default`].
pub const DEFAULT_PRESET: &str = "presets/hanging_cloth.toml";

/// Preset snapshots kept for undo by default.
pub const DEFAULT_UNDO_LIMIT: usize = 100;

/// Frames kept in the [`History`] by default: one minute at 60 Hz.
pub const DEFAULT_HISTORY_FRAMES: usize = 3600;

/// The file name a preset without a file is built as (its relative mesh
/// paths are then relative to the working directory).
const UNTITLED: &str = "untitled.toml";

/// The work [`Session::apply`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Applied {
    /// Nothing touched the solver (playback, view, a no-op change).
    Nothing,
    /// Parameters or soft-pin targets changed without a factorisation.
    Updated,
    /// One numeric refactorisation on the same pattern.
    Refactored,
    /// A new system for new hard pins; positions and velocities kept.
    Rebuilt,
    /// A new model from the mesh; the state starts at rest.
    Reloaded,
    /// The state went back to rest.
    Reset,
    /// This many frames were stepped.
    Stepped(usize),
    /// The simulation blew up after `frames` good frames: the session
    /// paused at the last good frame and keeps `error` as its warning.
    BlewUp {
        /// Frames stepped before the failing one.
        frames: usize,
        /// What the solver detected.
        error: SolverError,
    },
    /// The preset was written here.
    Saved(PathBuf),
    /// The preset was written here in full: the file's text there could
    /// not be followed (see [`Written::InFull`]).
    SavedInFull(PathBuf),
}

/// Why a command could not be applied. The session is then unchanged.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The preset could not be loaded, built, checked or saved.
    #[error(transparent)]
    Preset(#[from] PresetError),
    /// The solver refused the model or parameters.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// An opened OBJ (a preset without a file yet) could not be imported:
    /// the OBJ's own error, with its file and line (there is no preset file
    /// or field to name).
    #[error(transparent)]
    Import(Box<ImportError>),
    /// A change the preset cannot take (a negative weight, a `dt` out of
    /// range): the field and what is wrong, without the preset's file,
    /// which is not at fault.
    #[error("{0}")]
    Rejected(Box<PresetErrorKind>),
    /// A vertex index beyond the model.
    #[error("vertex {vertex} does not exist: the model has {vertices} vertices")]
    VertexOutOfRange {
        /// The index given.
        vertex: u32,
        /// The model's vertex count.
        vertices: usize,
    },
    /// A soft-pin target move on a vertex that is not soft-pinned.
    #[error("vertex {0} is not soft-pinned")]
    NotSoftPinned(u32),
    /// A grab on a hard-pinned vertex.
    #[error("vertex {0} is hard-pinned and cannot be grabbed")]
    HardPinned(u32),
    /// A grab with attachment weight 0, which would not pull.
    #[error("the attachment weight is 0, so a grab would not pull; raise it first")]
    NoAttachmentWeight,
    /// A save without a path of a preset that has no file yet.
    #[error("the preset has no file yet; save it with a path")]
    NoPath,
    /// A save to a file of another kind than a preset (a mesh, say),
    /// which the preset would replace.
    #[error("{}: a preset file needs a name ending in .toml (such as my_preset.toml)", .0.display())]
    NotAPresetPath(PathBuf),
    /// A save to a directory (an existing one, or a path ending in a
    /// separator).
    #[error("{}: names a directory; name the preset file in it (such as {})", .0.display(), .0.join("my_preset.toml").display())]
    IsADirectory(PathBuf),
    /// A save over the preset's own file, which changed on disk since the
    /// session read or wrote it (an edit elsewhere, another window): the
    /// save would lose that change. [`Command::SaveAnyway`] overwrites it.
    #[error(
        "{}: changed on disk since it was opened or saved here; saving would overwrite that change",
        .0.display()
    )]
    ChangedOnDisk(PathBuf),
}

/// A digest of a file's bytes (`None` if it cannot be read): what a
/// session keeps of its preset's file to tell a change made elsewhere.
pub(crate) fn digest(path: &Path) -> Option<u64> {
    // FNV-1a: the same in every build (an autosave keeps it across runs;
    // the standard library's hasher may change between Rust releases).
    let bytes = std::fs::read(path).ok()?;
    Some(bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    }))
}

/// Where a preset saved as `path` goes: `path` with `.toml` added when it
/// has no extension; an error for another extension (saving `bunny.obj`
/// would replace the mesh) and for a directory (`.toml` added to it would
/// save beside it, not in it).
///
/// # Errors
/// [`SessionError::NotAPresetPath`] for an extension other than `.toml`;
/// [`SessionError::IsADirectory`] for an existing directory or a path
/// ending in a separator.
pub fn preset_path(mut path: PathBuf) -> Result<PathBuf, SessionError> {
    if path.is_dir() || path.to_string_lossy().ends_with(std::path::is_separator) {
        return Err(SessionError::IsADirectory(path));
    }
    // `.toml` alone is a name without a stem (it was saved as
    // `.toml.toml`).
    if path
        .file_name()
        .is_some_and(|n| n.eq_ignore_ascii_case(".toml"))
    {
        return Err(SessionError::NotAPresetPath(path));
    }
    match path.extension() {
        None => {
            path.set_extension("toml");
            Ok(path)
        }
        Some(e) if e.eq_ignore_ascii_case("toml") => Ok(path),
        Some(_) => Err(SessionError::NotAPresetPath(path)),
    }
}

/// The file a save as to `path` would replace, if it asks first: an
/// existing preset other than `session`'s own that the save can replace.
/// `None` for a new file, for the session's own, and for a bad name or a
/// read-only file, which the save refuses itself (asking first only led to
/// the refusal: QA).
pub fn replaced_by_save_as(session: &Session, path: PathBuf) -> Option<PathBuf> {
    let target = preset_path(path).ok()?;
    let writable = std::fs::metadata(&target).is_ok_and(|m| !m.permissions().readonly());
    (writable && session.path() != Some(&target)).then_some(target)
}

/// One recorded frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frame {
    /// Frame number (0: the start state).
    pub frame: u64,
    /// Simulated time in seconds.
    pub time: f64,
    /// Energies at the end of the frame.
    pub energies: Energies,
    /// Time per solver phase (zero for the start state).
    pub timings: Timings,
    /// Vertices pushed out of colliders.
    pub contacts: usize,
}

/// The spread of the objective over a frame's iterations below which it is
/// round-off, relative to the objective or the frame's energies, whichever
/// is larger ([`History::objective_range`]).
const OBJECTIVE_ROUND_OFF: f64 = 1e-12;

/// The recent frames (a bounded ring buffer, oldest dropped) and the PD
/// objective per iteration of the last frame: what the graphs draw.
#[derive(Clone, Debug)]
pub struct History {
    frames: VecDeque<Frame>,
    capacity: usize,
    objective: Vec<f64>,
}

impl History {
    /// An empty history of at most `capacity` frames (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            frames: VecDeque::with_capacity(capacity),
            capacity,
            objective: Vec::new(),
        }
    }

    /// The frames, oldest first.
    pub fn frames(&self) -> &VecDeque<Frame> {
        &self.frames
    }

    /// The newest frame.
    pub fn last(&self) -> Option<&Frame> {
        self.frames.back()
    }

    /// The objective `g` at the start of the last frame's last substep and
    /// after each iteration (empty before the first step).
    pub fn objective(&self) -> &[f64] {
        &self.objective
    }

    /// The least and greatest of [`History::objective`], or `None` when
    /// there are no iterations or they differ by round-off only (a body at
    /// rest): a graph then draws the objective flat, not its noise
    /// magnified to full height. Round-off is judged against the
    /// objective and the last frame's energies: a body falling freely has
    /// its iterates at the inertial target and an objective of ~0, whose
    /// noise (1e-26 J) is the round-off of the energies it moves.
    pub fn objective_range(&self) -> Option<(f64, f64)> {
        let (lo, hi) = self
            .objective
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &g| {
                (a.min(g), b.max(g))
            });
        let energies = self.frames.back().map_or(0.0, |f| {
            let e = f.energies;
            e.kinetic.abs() + e.gravitational.abs() + e.elastic().abs()
        });
        let scale = hi.abs().max(lo.abs()).max(energies);
        (hi - lo > OBJECTIVE_ROUND_OFF * scale).then_some((lo, hi))
    }

    /// Most frames kept.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Starts over from `state` with `energies`.
    fn restart(&mut self, state: &State, energies: Energies) {
        self.frames.clear();
        self.objective.clear();
        self.push(Frame {
            frame: state.frame,
            time: state.time,
            energies,
            ..Frame::default()
        });
    }

    /// Records a stepped frame (no allocation once full).
    fn record(&mut self, state: &State, report: &StepReport) {
        self.push(Frame {
            frame: state.frame,
            time: state.time,
            energies: report.energies,
            timings: report.timings,
            contacts: report.contacts,
        });
        self.objective.clear();
        self.objective.extend_from_slice(&report.objective);
    }

    fn push(&mut self, frame: Frame) {
        if self.frames.len() == self.capacity {
            self.frames.pop_front();
        }
        self.frames.push_back(frame);
    }
}

/// A grab: the vertex held, where it is pulled, and its nearest
/// neighbours, pulled along with it where they were beside it.
#[derive(Clone, Debug)]
struct Grab {
    /// Where the grabbed vertex is pulled.
    target: Vec3,
    /// The grabbed vertex, then the neighbours held with it
    /// ([`GRAB_NEIGHBOURS`] at most). Held together they pull as many
    /// times harder as they are (one vertex alone, with the pins'
    /// attachment weight, barely moved a 750 kg body: QA).
    held: Vec<u32>,
    /// Where each of `held` was from the grabbed vertex when the grab
    /// began (the first: zero).
    offsets: Vec<Vec3>,
}

/// The neighbours a grab holds with its vertex, the nearest of its ring:
/// with it, as many as a low-rank update of the factor takes (the whole
/// ring, a dozen or so in a tet body, refactorised a large model for
/// seconds at each grab and release: review).
const GRAB_NEIGHBOURS: usize = crate::solver::LOW_RANK - 1;

/// The factor entries above which a grab holds its vertex alone: the update
/// costs a few solves per vertex held, and on the 100,000-vertex body (49 M
/// entries) four took hold in 1.3 s, one in 0.5 s, on the UI thread.
const GRAB_NEIGHBOURS_UP_TO_ENTRIES: usize = 10_000_000;

/// The grab and moved soft-pin targets: attachments beside the preset.
#[derive(Clone, Debug, Default)]
struct Runtime {
    /// Moved targets of soft-pinned vertices, one per vertex.
    targets: Vec<Attachment>,
    /// The held vertices and where they are pulled.
    grab: Option<Grab>,
    /// Scratch: the solver's soft pins as they should be.
    soft: Vec<Attachment>,
    /// Scratch: their targets.
    soft_targets: Vec<Vec3>,
}

impl Runtime {
    /// Drops what no longer applies to `pins` (targets of vertices no
    /// longer soft-pinned, a grab on a now hard-pinned vertex; [`Runtime::compose`]
    /// already leaves them out).
    fn prune(&mut self, pins: &Pins) {
        self.targets
            .retain(|t| pins.soft.iter().any(|a| a.vertex == t.vertex));
        if (self.grab.as_ref()).is_some_and(|g| pins.is_hard(g.held[0])) {
            self.grab = None;
        }
    }

    /// Fills `self.soft` with the soft pins of `pins` with their moved
    /// targets, then the grab's vertices that are not hard-pinned (each
    /// replacing the target of a soft-pinned vertex, else appended).
    fn compose(&mut self, pins: &Pins) {
        self.soft.clear();
        self.soft.extend_from_slice(&pins.soft);
        for moved in &self.targets {
            if let Some(a) = self.soft.iter_mut().find(|a| a.vertex == moved.vertex) {
                a.target = moved.target;
            }
        }
        let Some(grab) = &self.grab else {
            return;
        };
        for (&vertex, offset) in grab.held.iter().zip(&grab.offsets) {
            if pins.is_hard(vertex) {
                continue;
            }
            let target = grab.target + offset;
            match self.soft.iter_mut().find(|a| a.vertex == vertex) {
                Some(a) => a.target = target,
                None => self.soft.push(Attachment { vertex, target }),
            }
        }
    }

    /// `model` with the runtime soft pins (borrowed when there are none).
    fn apply<'a>(&mut self, model: &'a Model) -> Cow<'a, Model> {
        if self.targets.is_empty() && self.grab.is_none() {
            return Cow::Borrowed(model);
        }
        self.compose(&model.pins);
        let mut with = model.clone();
        with.pins.soft.clone_from(&self.soft);
        Cow::Owned(with)
    }
}

/// The least work taking a session from one preset to another (see the
/// [module docs](self)).
enum Plan {
    Nothing,
    Params,
    Refactor(Pins),
    Rebuild(Pins),
    Reload,
}

/// The one decision behind every preset change: `old` is in force with
/// resolved pins `old_pins`; `resolve` resolves `new`'s pins on the
/// current model (called only when the mesh and build are unchanged).
fn plan<E>(
    old: &Preset,
    new: &Preset,
    old_pins: &Pins,
    resolve: impl FnOnce() -> Result<Pins, E>,
) -> Result<Plan, E> {
    // Destructured so that a new field cannot be forgotten here.
    let Preset {
        version: _,
        name: _,
        mesh,
        build,
        material,
        pins: _,
        sim,
        view: _,
    } = new;
    if *mesh != old.mesh || *build != old.build {
        return Ok(Plan::Reload);
    }
    let pins = resolve()?;
    Ok(if pins.hard_vertices() != old_pins.hard_vertices() {
        Plan::Rebuild(pins)
    } else if material.density != old.material.density
        || material.weights != old.material.weights
        || sim.substep_dt() != old.sim.substep_dt()
        || pins.soft != old_pins.soft
    {
        Plan::Refactor(pins)
    } else if *sim != old.sim || material.limits != old.material.limits {
        Plan::Params
    } else {
        Plan::Nothing
    })
}

/// One open scene. See the [module docs](self).
pub struct Session {
    preset: Preset,
    path: Option<PathBuf>,
    /// The preset as last loaded or saved, for [`Session::is_dirty`].
    saved: Preset,
    /// The digest of `path`'s bytes as last read or written here, to
    /// refuse a save over a change made elsewhere.
    on_disk: Option<u64>,
    /// The model of `preset` (its pins, without the runtime ones).
    built: Built,
    solver: Solver,
    state: State,
    history: History,
    playing: bool,
    warning: Option<SolverError>,
    runtime: Runtime,
    undo: VecDeque<Preset>,
    redo: Vec<Preset>,
    undo_limit: usize,
    /// An open gesture, and whether it already pushed its undo step.
    gesture: Option<bool>,
    /// The last accuracy measurement and the frame it was taken at, the
    /// one running, and one cancelled that has not ended yet (its thread
    /// finishes the factorisation under way first; no measurement starts
    /// beside it, which would hold a large model's Newton factor twice).
    accuracy: Option<(u64, Accuracy)>,
    measuring: Option<accuracy::Running>,
    stopping: Option<accuracy::Running>,
    /// The build options and density of the kind the model was last built
    /// as before another (springs ↔ tets), which building it that way again
    /// takes back: a jelly's tets at resolution 10 and 1050 kg/m³, built as
    /// springs and back, became tets at the default 30 (30,000 vertices
    /// where it had 1,500) and 1100 kg/m³.
    left_build: Option<(Build, f64)>,
    /// The numbered pins as last set on a model, before rebuilds carried
    /// them to others (see [`PinsOrigin`]).
    pins_origin: Option<Arc<PinsOrigin>>,
}

/// Numbered pins as they were set, and the model they were set on: each
/// rebuild carries them from there while the pins are the ones the last
/// rebuild carried, so building at another resolution and back gives back
/// the pins as set, and going back and forth does not make a region creep
/// or thin a little more each time.
#[derive(Clone, Debug)]
struct PinsOrigin {
    /// The model's rest positions.
    rest: Vec<Vec3>,
    /// The body's scale ([`Build::scale`]) for them.
    scale: f64,
    /// The pins as set.
    pins: PinSpec,
    /// The pins the last rebuild carried them to.
    carried: PinSpec,
}

impl Session {
    /// Builds `preset` (mesh paths relative to `preset_path`'s directory,
    /// else to the working directory), paused at rest.
    ///
    /// # Errors
    /// [`SessionError::Preset`] if the preset does not build (see
    /// [`Preset::build`]), or [`SessionError::Import`] if its mesh does not
    /// import and it has no file; [`SessionError::Solver`] if the solver
    /// refuses it.
    pub fn new(preset: Preset, preset_path: Option<PathBuf>) -> Result<Self, SessionError> {
        let (built, solver) = build(&preset, preset_path.as_deref())?;
        let preset = held(preset);
        let state = State::at_rest(&built.model);
        let mut history = History::new(DEFAULT_HISTORY_FRAMES);
        history.restart(&state, solver.energies(&state));
        Ok(Self {
            saved: preset.clone(),
            preset,
            on_disk: preset_path.as_deref().and_then(digest),
            path: preset_path,
            built,
            solver,
            state,
            history,
            playing: false,
            warning: None,
            runtime: Runtime::default(),
            undo: VecDeque::new(),
            redo: Vec::new(),
            undo_limit: DEFAULT_UNDO_LIMIT,
            gesture: None,
            accuracy: None,
            measuring: None,
            stopping: None,
            left_build: None,
            pins_origin: None,
        })
    }

    /// A copy to apply a slow command on elsewhere (the editor builds and
    /// factorises large models on a thread of its own, then takes the copy
    /// in): everything but an accuracy measurement running, which stays
    /// with this session.
    pub fn fork(&self) -> Self {
        Self {
            preset: self.preset.clone(),
            path: self.path.clone(),
            saved: self.saved.clone(),
            on_disk: self.on_disk,
            built: self.built.clone(),
            solver: self.solver.clone(),
            state: self.state.clone(),
            history: self.history.clone(),
            playing: self.playing,
            warning: self.warning.clone(),
            runtime: self.runtime.clone(),
            undo: self.undo.clone(),
            redo: self.redo.clone(),
            undo_limit: self.undo_limit,
            gesture: self.gesture,
            accuracy: self.accuracy.clone(),
            measuring: None,
            stopping: None,
            left_build: self.left_build,
            pins_origin: self.pins_origin.clone(),
        }
    }

    /// [`Command::Save`] (`anyway`: [`Command::SaveAnyway`]).
    fn save(&mut self, path: Option<PathBuf>, anyway: bool) -> Result<Applied, SessionError> {
        let path = match path {
            Some(path) => preset_path(path)?,
            None => self.path.clone().ok_or(SessionError::NoPath)?,
        };
        // Over the preset's own file: only as it was read or last written
        // here (another file's replacement the front ends confirm).
        let own = self
            .path
            .as_deref()
            .is_some_and(|p| crate::fsutil::same_file(p, &path));
        if own
            && !anyway
            && let Some(then) = self.on_disk
            && digest(&path).is_some_and(|now| now != then)
        {
            return Err(SessionError::ChangedOnDisk(path));
        }
        // The same mesh file, named from the new file's directory
        // (made first if missing, so that it can be named from).
        crate::preset::create_dir_of(&path)?;
        let mut preset = self.preset.clone();
        let from = self.base_path().to_owned();
        rebase_mesh(&mut preset, &from, &path);
        // The preset's file keeps its comments and layout; numbered pins
        // say which model their numbers are of.
        let previous = (self.path.as_deref()).and_then(|p| std::fs::read_to_string(p).ok());
        let mut file = preset.clone();
        file.pins.model_vertices =
            (preset.pins.has_indices()).then(|| self.built.model.vertex_count());
        let written = file.save_over(&path, previous.as_deref())?;
        // Only the path's spelling changed: no rebuild. The undo
        // and redo presets are spelled the same way, so going back
        // does not look like a new mesh.
        self.preset = preset;
        for other in self.undo.iter_mut().chain(&mut self.redo) {
            rebase_mesh(other, &from, &path);
        }
        self.saved = self.preset.clone();
        self.on_disk = digest(&path);
        self.path = Some(path.clone());
        Ok(match written {
            Written::AsLaidOut => Applied::Saved(path),
            Written::InFull => Applied::SavedInFull(path),
        })
    }

    /// The digest of its file's bytes as last read or written here (none:
    /// untitled, or unreadable then).
    pub(crate) fn on_disk(&self) -> Option<u64> {
        self.on_disk
    }

    /// Loads and builds the preset at `path`.
    ///
    /// # Errors
    /// As [`Preset::load`] and [`Session::new`].
    pub fn open(path: &Path) -> Result<Self, SessionError> {
        Self::new(Preset::load(path)?, Some(path.to_owned())).map_err(located)
    }

    /// What a front end opens: `path` — a preset (`.toml`), or an OBJ
    /// file as a new untitled preset with the default material and no
    /// pins — else a copy of [`DEFAULT_PRESET`] if it exists, untitled
    /// (a save asks where, and the shipped preset stays as shipped: Ctrl+S
    /// on the scene plain `softbody` opened overwrote it), else
    /// [`Preset::default`]. Returns the session and the file it came from.
    ///
    /// # Errors
    /// As [`Session::open`] and [`Session::new`].
    pub fn open_or_default(path: Option<&Path>) -> Result<(Self, Option<PathBuf>), SessionError> {
        let session = match path {
            Some(p) if is_obj(p) => Self::new(Preset::for_obj(p), None)?,
            Some(p) => Self::open(p)?,
            None => {
                let default = Path::new(DEFAULT_PRESET);
                if default.exists() {
                    let mut preset = Preset::load(default)?;
                    Self::rebase_to_untitled(&mut preset, default);
                    let session = Self::new(preset, None).map_err(located)?;
                    return Ok((session, Some(default.to_owned())));
                }
                Self::new(Preset::default(), None)?
            }
        };
        Ok((session, path.map(Path::to_owned)))
    }

    /// The preset in force.
    pub fn preset(&self) -> &Preset {
        &self.preset
    }

    /// The name to show: the preset's, else (a preset file without one)
    /// its file's stem, else `untitled` (QA: the terminal UI's header began
    /// blank).
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        crate::preset::shown_name(&self.preset.name, self.path())
    }

    /// The preset's file, if it has one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Keeps `view` (the editor's camera) as the preset's, for the next
    /// save to write. A camera is not a change: the preset stays as dirty or
    /// clean as it was, and undo and redo do not bring another back.
    pub fn keep_view(&mut self, view: View) {
        // To the power of ten below a millionth of the eye's distance (a
        // micrometre in a metre-sized scene): the orbit's round-off read
        // `0.00000000000000005551115123125783` in the saved file.
        let distance = (view.eye - view.target).norm().max(1e-300);
        let scale = 10f64.powi(-(1e-6 * distance).log10().floor() as i32);
        // (+ 0: no `-0.0` in the file.)
        let round = |v: Vec3| v.map(|c| (c * scale).round() / scale + 0.0);
        let view = View {
            eye: round(view.eye),
            target: round(view.target),
            fov_deg: (view.fov_deg * 1e6).round() / 1e6,
        };
        for preset in [&mut self.preset, &mut self.saved]
            .into_iter()
            .chain(self.undo.iter_mut())
            .chain(self.redo.iter_mut())
        {
            preset.view = Some(view);
        }
    }

    /// `preset`'s mesh path, relative to the directory of the preset file
    /// `from`, made to name the same file from an untitled preset (relative
    /// to the working directory, or absolute).
    pub(crate) fn rebase_to_untitled(preset: &mut Preset, from: &Path) {
        rebase_mesh(preset, from, Path::new(UNTITLED));
    }

    /// Where to offer saving the preset: its file; for one without (an
    /// OBJ or tet file opened alone) a `.toml` of the mesh's name beside
    /// it; else a `.toml` of the preset's name in the working directory
    /// (`hanging_cloth.toml` for "Hanging cloth"; `untitled.toml` for a name
    /// without letters or digits).
    pub fn suggested_path(&self) -> PathBuf {
        if let Some(path) = &self.path {
            return path.clone();
        }
        match &self.preset.mesh {
            // (An untitled preset's mesh path is relative to the working
            // directory, as the untitled name is.)
            MeshSource::Obj(mesh) | MeshSource::TetFile(mesh) => mesh.with_extension("toml"),
            MeshSource::Grid(_) => {
                let words: Vec<String> = self
                    .preset
                    .name
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect();
                match words.join("_") {
                    stem if stem.is_empty() => PathBuf::from(UNTITLED),
                    stem => PathBuf::from(stem).with_extension("toml"),
                }
            }
        }
    }

    /// Whether the preset differs from the file it was loaded from or last
    /// saved to.
    pub fn is_dirty(&self) -> bool {
        self.preset != self.saved
    }

    /// The build's warnings in one line for a front end's status: the
    /// first, and how many more, saying where the front end lists them all
    /// (`listed_by`, as "w lists them"); `None` when the mesh imported
    /// clean.
    pub fn mesh_note(&self, listed_by: &str) -> Option<String> {
        let warnings = &self.built.warnings;
        let first = warnings.first()?;
        Some(match warnings.len() {
            1 => format!("the mesh: {first}"),
            n => format!("the mesh: {first} (and {} more: {listed_by})", n - 1),
        })
    }

    /// The built preset: its model, and the surface and grid its selectors
    /// resolve against (see [`Built::select`]).
    pub fn built(&self) -> &Built {
        &self.built
    }

    /// Opens a gesture (a slider drag): the preset changes until
    /// [`Session::end_gesture`] make one undo step, however many commands
    /// carry them.
    pub fn begin_gesture(&mut self) {
        self.gesture = Some(false);
    }

    /// Closes the gesture [`Session::begin_gesture`] opened.
    pub fn end_gesture(&mut self) {
        self.gesture = None;
    }

    /// Whether a gesture is open.
    pub fn in_gesture(&self) -> bool {
        self.gesture.is_some()
    }

    /// The model built from the preset (its pins; the grab and moved
    /// targets are in [`Solver::model`]).
    pub fn model(&self) -> &Model {
        &self.built.model
    }

    /// Whether the last numeric factorisation took longer than `limit_ms`:
    /// the front ends then apply a change that refactorises once, not at
    /// every step of a drag or key, and in the background
    /// ([`crate::param::LIVE_REFACTOR_MS`], [`crate::background`]).
    pub fn factorises_slowly(&self, limit_ms: f64) -> bool {
        self.solver.factor_stats().factor_ms > limit_ms
    }

    /// The solver, e.g. for [`Solver::factor_stats`].
    pub fn solver(&self) -> &Solver {
        &self.solver
    }

    /// The current positions and velocities.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Starts measuring how far the next step, at the preset's iteration
    /// count, lands from the exact implicit Euler step (see
    /// [`accuracy::measure`]), trying up to `max(4 × iterations, 100)`
    /// iterations so the figure also says what 1e-3 and 1e-5 would take.
    /// It costs a Newton solve — milliseconds for a cloth, minutes for a
    /// 100,000-vertex tet body — so it runs on its own thread, on copies;
    /// [`Session::collect_accuracy`] takes the result in. Returns whether
    /// one is running now: nothing starts while one runs or while a
    /// cancelled one is still stopping ([`Session::is_stopping`]). A change
    /// of the preset cancels a running measurement (see
    /// [`Session::cancel_accuracy`]) and forgets the last one (they no
    /// longer describe this scene).
    pub fn measure_accuracy(&mut self) -> bool {
        if self.is_stopping() {
            return false;
        }
        self.stopping = None;
        if self.measuring.is_none() {
            let iterations = (4 * self.preset.sim.iterations).clamp(100, SimParams::MAX_ITERATIONS);
            let task = accuracy::Task::new(&self.solver, &self.state, iterations);
            self.measuring = Some(accuracy::Running::spawn(task));
        }
        true
    }

    /// Whether a measurement is running.
    pub fn is_measuring(&self) -> bool {
        self.measuring.is_some()
    }

    /// How long the running measurement has been running.
    pub fn measuring_for(&self) -> Option<std::time::Duration> {
        self.measuring.as_ref().map(accuracy::Running::elapsed)
    }

    /// Stops a running measurement: its thread gives up at the Newton
    /// solve's next factorisation (or before the solver's steps), freeing
    /// its cores and memory; until then [`Session::is_stopping`]. The last
    /// measurement taken in stays. Returns whether one was running.
    pub fn cancel_accuracy(&mut self) -> bool {
        let Some(running) = self.measuring.take() else {
            return false;
        };
        running.cancel();
        self.stopping = Some(running);
        true
    }

    /// Takes `next`'s place: a session a background command made from a
    /// [`Session::fork`] of this one, or one recovered in its place. A
    /// measurement this one runs (of the scene before) is cancelled and,
    /// as one still stopping is, kept until its thread ends (see
    /// [`Session::is_stopping`]): dropped with this session, its thread
    /// would go on finishing a factorisation unseen while another starts.
    pub fn replace_with(&mut self, next: Session) {
        let mut old = std::mem::replace(self, next);
        if old.cancel_accuracy() || old.is_stopping() {
            self.stopping = old.stopping.take();
        }
    }

    /// Whether a cancelled measurement's thread is still finishing the
    /// factorisation it was in (up to ~50 s on a 100,000-vertex tet body).
    pub fn is_stopping(&self) -> bool {
        self.stopping.as_ref().is_some_and(|r| !r.is_finished())
    }

    /// Takes in a finished measurement (see [`Session::accuracy`]): the
    /// new figure, or what went wrong. `None` while it runs or when none
    /// was started.
    pub fn collect_accuracy(&mut self) -> Option<Result<&Accuracy, String>> {
        if !self.measuring.as_ref()?.is_finished() {
            return None;
        }
        let (frame, result) = self.measuring.take()?.join();
        Some(result.map(|measured| &self.accuracy.insert((frame, measured)).1))
    }

    /// Cancels a running measurement and forgets the last one.
    fn forget_accuracy(&mut self) {
        self.cancel_accuracy();
        self.accuracy = None;
    }

    /// The last measurement [`Session::collect_accuracy`] took in, and the
    /// frame it measured from.
    pub fn accuracy(&self) -> Option<(u64, &Accuracy)> {
        self.accuracy.as_ref().map(|(f, a)| (*f, a))
    }

    /// The recorded frames.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Whether [`Session::tick`] steps.
    pub fn is_playing(&self) -> bool {
        self.playing
    }

    /// The last blow-up, until the next play, reset or load.
    pub fn warning(&self) -> Option<&SolverError> {
        self.warning.as_ref()
    }

    /// The held vertex, if any.
    pub fn grabbed(&self) -> Option<u32> {
        self.runtime.grab.as_ref().map(|g| g.held[0])
    }

    /// The vertices the grab holds: the grabbed one, then the neighbours
    /// held with it (none without a grab).
    pub fn held(&self) -> &[u32] {
        self.runtime.grab.as_ref().map_or(&[], |g| &g.held)
    }

    /// Changes that [`Command::Undo`] can take back.
    pub fn undo_len(&self) -> usize {
        self.undo.len()
    }

    /// Undone changes that [`Command::Redo`] can restore.
    pub fn redo_len(&self) -> usize {
        self.redo.len()
    }

    /// "nothing to undo" or "nothing to redo" if `command` is an undo or a
    /// redo with nothing to take back or do again, for the front ends to
    /// say.
    pub fn nothing_to_retrace(&self, command: &Command) -> Option<&'static str> {
        match command {
            Command::Undo if self.undo.is_empty() => Some("nothing to undo"),
            Command::Redo if self.redo.is_empty() => Some("nothing to redo"),
            _ => None,
        }
    }

    /// Keeps at most `limit` undo steps (at least 1), dropping the oldest.
    pub fn set_undo_limit(&mut self, limit: usize) {
        self.undo_limit = limit.max(1);
        while self.undo.len() > self.undo_limit {
            self.undo.pop_front();
        }
    }

    /// Steps one frame when playing (see [`Command::Step`]); else nothing.
    ///
    /// # Errors
    /// As [`Command::Step`].
    pub fn tick(&mut self) -> Result<Applied, SessionError> {
        if self.playing {
            self.step(1)
        } else {
            Ok(Applied::Nothing)
        }
    }

    /// Carries out `command` and says what work it took (see the
    /// [module docs](self)).
    ///
    /// # Errors
    /// [`SessionError::VertexOutOfRange`] for a vertex beyond the model;
    /// [`SessionError::Rejected`] for a change that makes an invalid preset
    /// (a weight out of range, a selector left empty);
    /// [`SessionError::Preset`] for a file that does not load or a failed
    /// save ([`SessionError::Import`] for an OBJ opened alone); [`SessionError::Solver`] if the solver
    /// refuses the change; the grab and save errors of [`SessionError`]. On
    /// error the session is unchanged. A blow-up while stepping is not an
    /// error: see [`Applied::BlewUp`].
    pub fn apply(&mut self, command: Command) -> Result<Applied, SessionError> {
        if matches!(command, Command::Undo | Command::Redo) && self.gesture.is_some() {
            // Undone mid-drag: the rest of the drag is a new undo step (its
            // first change pushes the preset undo went back to).
            self.gesture = Some(false);
        }
        match command {
            Command::Play => {
                self.playing = true;
                self.warning = None;
                Ok(Applied::Nothing)
            }
            Command::Pause => {
                self.playing = false;
                Ok(Applied::Nothing)
            }
            Command::TogglePlay => self.apply(if self.playing {
                Command::Pause
            } else {
                Command::Play
            }),
            Command::Step(frames) => self.step(frames),
            Command::Reset => {
                self.warning = None;
                self.restart();
                // The measured frame is gone: its figure would stay on screen
                // labelled with a frame the motion no longer has.
                self.forget_accuracy();
                Ok(Applied::Reset)
            }
            Command::SetWeight(kind, value) => {
                self.edit(|p| *kind.slot(&mut p.material.weights) = value)
            }
            Command::SetDensity(density) => self.edit(|p| p.material.density = density),
            Command::SetParam(param) => self.edit(|p| param.apply_to(&mut p.sim)),
            Command::SetLimits(limits) => self.edit(|p| p.material.limits = limits),
            // The attachment weight belongs to the pins and the grab, not
            // the material: it stays. So do the other build kind's weights
            // (and the tet limits of a spring model), which a build of that
            // kind takes back (QA: tets given soft rubber, built as springs
            // and given denim, were plain tets again when built back).
            Command::SetMaterial(material) => {
                self.edit(|p| p.material = p.material.taking(&material, p.build.kind))
            }
            Command::SetBuild(build) => self.rebuild_as(build),
            Command::Restore(preset) => self.change_to(held(*preset)),
            Command::SetPins(pins) => self.edit(|p| p.pins = pins),
            Command::PinHard(vertices) => self.pin(&vertices, PinOp::Hard),
            Command::PinSoft(vertices) => self.pin(&vertices, PinOp::Soft),
            Command::Unpin(vertices) => self.pin(&vertices, PinOp::Free),
            Command::MoveSoftPinTarget { vertex, target } => {
                self.check_vertex(vertex)?;
                if !self
                    .built
                    .model
                    .pins
                    .soft
                    .iter()
                    .any(|a| a.vertex == vertex)
                {
                    return Err(SessionError::NotSoftPinned(vertex));
                }
                let moved = Attachment { vertex, target };
                let previous = self.runtime.targets.clone();
                match self.runtime.targets.iter_mut().find(|t| t.vertex == vertex) {
                    Some(t) => t.target = target,
                    None => self.runtime.targets.push(moved),
                }
                self.sync_runtime()
                    .inspect_err(|_| self.runtime.targets = previous)
            }
            Command::Grab { vertex, target } => {
                self.check_vertex(vertex)?;
                if self.built.model.pins.is_hard(vertex) {
                    return Err(SessionError::HardPinned(vertex));
                }
                if self.preset.material.weights.attachment == 0.0 {
                    return Err(SessionError::NoAttachmentWeight);
                }
                let x = &self.state.positions;
                let at = x[vertex as usize];
                let mut ring: Vec<(u32, Vec3)> = (self.built.model.ring(vertex).into_iter())
                    .filter(|&v| !self.built.model.pins.is_hard(v))
                    .map(|v| (v, x[v as usize] - at))
                    .collect();
                ring.sort_by(|a, b| a.1.norm_squared().total_cmp(&b.1.norm_squared()));
                let large = self.solver.factor_stats().factor_nnz > GRAB_NEIGHBOURS_UP_TO_ENTRIES;
                ring.truncate(if large { 0 } else { GRAB_NEIGHBOURS });
                let held = std::iter::once((vertex, Vec3::zeros())).chain(ring);
                let (held, offsets) = held.unzip();
                self.set_grab(Some(Grab {
                    target,
                    held,
                    offsets,
                }))
            }
            Command::Drag { target } => {
                // (Moved in place: a drag allocates nothing.)
                let Some(grab) = &mut self.runtime.grab else {
                    return Ok(Applied::Nothing);
                };
                let previous = std::mem::replace(&mut grab.target, target);
                self.sync_runtime().inspect_err(|_| {
                    if let Some(grab) = &mut self.runtime.grab {
                        grab.target = previous;
                    }
                })
            }
            Command::Release => match self.runtime.grab {
                Some(_) => self.set_grab(None),
                None => Ok(Applied::Nothing),
            },
            Command::Load(path) => {
                let (preset, path) = if is_obj(&path) {
                    (Preset::for_obj(&path), None)
                } else {
                    (Preset::load(&path)?, Some(path))
                };
                // Only a preset file has lines (an OBJ builds as untitled).
                let (built, solver) = build(&preset, path.as_deref())
                    .map_err(|e| if path.is_some() { located(e) } else { e })?;
                let preset = held(preset);
                self.built = built;
                self.solver = solver;
                self.saved = preset.clone();
                self.preset = preset;
                self.on_disk = path.as_deref().and_then(digest);
                self.path = path;
                self.undo.clear();
                self.redo.clear();
                self.gesture = None;
                self.playing = false;
                self.left_build = None;
                self.pins_origin = None;
                self.start_over();
                self.forget_accuracy();
                Ok(Applied::Reloaded)
            }
            Command::Save(path) => self.save(path, false),
            Command::SaveAnyway(path) => self.save(path, true),
            Command::Undo => match self.undo.pop_back() {
                Some(previous) => {
                    let result = self.transition(&previous);
                    match result {
                        Ok((current, applied)) => {
                            self.redo.push(current);
                            Ok(applied)
                        }
                        Err(e) => {
                            self.undo.push_back(previous);
                            Err(e)
                        }
                    }
                }
                None => Ok(Applied::Nothing),
            },
            Command::Redo => match self.redo.pop() {
                Some(next) => match self.transition(&next) {
                    Ok((current, applied)) => {
                        self.push_undo(current);
                        Ok(applied)
                    }
                    Err(e) => {
                        self.redo.push(next);
                        Err(e)
                    }
                },
                None => Ok(Applied::Nothing),
            },
        }
    }

    /// Takes a frame that a copy of this session's solver stepped elsewhere
    /// (a front end's simulation thread, from [`Session::state`]) as if
    /// [`Session::tick`] had stepped it: the state and the history move on.
    /// Returns the state it replaced (for its allocations to be reused). A
    /// state of another vertex count (another model's: a front end that did
    /// not hand its thread this session) is not taken: it is handed back.
    pub fn accept_frame(&mut self, state: State, report: &StepReport) -> State {
        if state.positions.len() != self.state.positions.len() {
            return state;
        }
        self.warning = None;
        self.history.record(&state, report);
        std::mem::replace(&mut self.state, state)
    }

    /// Takes a blow-up met elsewhere (see [`Session::accept_frame`]): pauses
    /// at the last accepted frame with the warning.
    pub fn accept_blow_up(&mut self, error: SolverError) {
        self.playing = false;
        self.warning = Some(error);
    }

    /// Steps `frames` frames; a blow-up pauses at the last good frame.
    fn step(&mut self, frames: usize) -> Result<Applied, SessionError> {
        for done in 0..frames {
            match self.solver.step(&mut self.state) {
                Ok(report) => {
                    // A frame stepped: the blow-up is behind it.
                    self.warning = None;
                    self.history.record(&self.state, &report);
                }
                Err(error @ SolverError::BlowUp { .. }) => {
                    self.playing = false;
                    self.warning = Some(error.clone());
                    return Ok(Applied::BlewUp {
                        frames: done,
                        error,
                    });
                }
                Err(other) => return Err(other.into()),
            }
        }
        Ok(Applied::Stepped(frames))
    }

    /// The state at rest and the history restarted.
    fn restart(&mut self) {
        self.state = State::at_rest(&self.built.model);
        self.history
            .restart(&self.state, self.solver.energies(&self.state));
    }

    /// After a new model from the mesh: at rest, no runtime pins.
    fn start_over(&mut self) {
        self.runtime.targets.clear();
        self.runtime.grab = None;
        self.warning = None;
        self.restart();
    }

    fn check_vertex(&self, vertex: u32) -> Result<(), SessionError> {
        let vertices = self.built.model.vertex_count();
        if (vertex as usize) < vertices {
            Ok(())
        } else {
            Err(SessionError::VertexOutOfRange { vertex, vertices })
        }
    }

    /// A preset change as an undoable step.
    fn edit(&mut self, change: impl FnOnce(&mut Preset)) -> Result<Applied, SessionError> {
        let mut next = self.preset.clone();
        change(&mut next);
        self.change_to(next)
    }

    /// Builds the mesh another way. Pins set by vertex index stay where
    /// they were when the vertices are renumbered (springs ↔ tets, or
    /// another tet resolution: a surface and a tet lattice share no
    /// numbering): the new model's vertices are pinned where the old
    /// model's were ([`carried`](crate::model::pins::carried)). Switching
    /// kinds gives the density of the new kind (its unit changes): the one
    /// it had when it was last switched away from, with its resolution and
    /// tet-edge springs unless others are asked for, else
    /// [`BuildKind::default_density`]; springs take no tet options. Another
    /// scale resizes the scene with the body ([`Preset::resized`]). One
    /// undo step.
    fn rebuild_as(&mut self, mut build: Build) -> Result<Applied, SessionError> {
        let (old, density) = (self.preset.build, self.preset.material.density);
        if build.kind == old.kind {
            return self.rebuild_with(build, density);
        }
        let back = self.left_build.filter(|(b, _)| b.kind == build.kind);
        if build.kind == BuildKind::Springs {
            build.resolution = None;
            build.edge_springs = false;
        } else if let Some((tets, _)) = back
            && build.resolution.is_none()
            && !build.edge_springs
        {
            build.resolution = tets.resolution;
            build.edge_springs = tets.edge_springs;
        }
        if build.kind == BuildKind::Tets && matches!(self.preset.mesh, MeshSource::Obj(_)) {
            // Written out: pins by vertex number are numbers of this
            // lattice, and a file without it read another if the default
            // changed (or was edited in thinking it was the default).
            build
                .resolution
                .get_or_insert(TetraOptions::DEFAULT_RESOLUTION);
        }
        let density_back = back.map_or(build.kind.default_density(), |(_, d)| d);
        let applied = self.rebuild_with(build, density_back)?;
        self.left_build = Some((old, density));
        Ok(applied)
    }

    /// [`Session::rebuild_as`] with `density`.
    fn rebuild_with(&mut self, build: Build, density: f64) -> Result<Applied, SessionError> {
        let resolution = |b: &Build| b.resolution.unwrap_or(TetraOptions::DEFAULT_RESOLUTION);
        let old = &self.preset.build;
        let ratio = build.scale / old.scale;
        // (Tets from a surface at another scale are meshed again: the
        // lattice is the same up to round-off, and so may not be.)
        let from_obj = matches!(self.preset.mesh, MeshSource::Obj(_));
        let renumbered = build.kind != old.kind
            || (build.kind == BuildKind::Tets
                && (resolution(&build) != resolution(old) || (from_obj && ratio != 1.0)));
        let mut next = self.preset.resized(build.scale);
        next.material.density = density;
        next.build = build;
        let pins = next.pins.clone();
        if !renumbered || !pins.has_indices() {
            return self.change_to(next);
        }
        // From the pins as set, unless they changed since the last rebuild.
        let origin = match &self.pins_origin {
            Some(origin) if origin.carried == self.preset.pins => Arc::clone(origin),
            _ => Arc::new(PinsOrigin {
                rest: self.built.model.rest.clone(),
                scale: old.scale,
                pins: self.preset.pins.clone(),
                carried: self.preset.pins.clone(),
            }),
        };
        let resize = build.scale / origin.scale;
        let pins = origin.pins.map(|s| Some(s.resized(resize)));
        let rest: Vec<Vec3> = origin.rest.iter().map(|p| p * resize).collect();
        // Built first without them, then given their new numbers (a change
        // of pins only, which does not build again).
        next.pins = pins.map(|s| match s {
            Selector::Indices(_) => None,
            Selector::Except { of, .. } => Some((**of).clone()),
            other => Some(other.clone()),
        });
        let applied = self.change_to(next)?;
        let new_rest = &self.built.model.rest;
        // (An index beyond the old model, which its build refuses, is
        // dropped.)
        let renumber = |indices: &[u32]| crate::model::pins::carried(&rest, indices, new_rest);
        let mut pinned = self.preset.clone();
        pinned.pins = pins.map(|s| {
            Some(match s {
                Selector::Indices(indices) => Selector::Indices(renumber(indices)),
                Selector::Except { of, indices } => Selector::Except {
                    of: of.clone(),
                    indices: renumber(indices),
                },
                other => other.clone(),
            })
        });
        self.transition(&pinned)?;
        self.pins_origin = Some(Arc::new(PinsOrigin {
            carried: pinned.pins,
            ..Arc::unwrap_or_clone(origin)
        }));
        Ok(applied)
    }

    fn change_to(&mut self, next: Preset) -> Result<Applied, SessionError> {
        if next == self.preset {
            return Ok(Applied::Nothing);
        }
        let (previous, applied) = self.transition(&next)?;
        // A gesture pushes the preset from before its first change only.
        if self.gesture != Some(true) {
            self.push_undo(previous);
        }
        if self.gesture.is_some() {
            self.gesture = Some(true);
        }
        self.redo.clear();
        Ok(applied)
    }

    fn push_undo(&mut self, preset: Preset) {
        if self.undo.len() == self.undo_limit {
            self.undo.pop_front();
        }
        self.undo.push_back(preset);
    }

    fn base_path(&self) -> &Path {
        self.path.as_deref().unwrap_or(Path::new(UNTITLED))
    }

    /// Puts `next` in force with the work [`plan`] chooses; returns the
    /// previous preset. On error nothing changed.
    fn transition(&mut self, next: &Preset) -> Result<(Preset, Applied), SessionError> {
        let invalid = |kind: PresetErrorKind| SessionError::Rejected(Box::new(kind));
        next.validate().map_err(invalid)?;
        let plan = plan(&self.preset, next, &self.built.model.pins, || {
            self.built.resolve_pins(&next.pins)
        })
        .map_err(invalid)?;
        let applied = match plan {
            Plan::Nothing => Applied::Nothing,
            Plan::Params => {
                let old = self.solver.params().clone();
                self.solver.set_params(&next.sim)?;
                if let Err(e) = self.solver.set_limits(next.material.limits) {
                    self.solver.set_params(&old)?;
                    return Err(e.into());
                }
                self.built.model.limits = next.material.limits;
                Applied::Updated
            }
            Plan::Refactor(pins) => {
                let model = self.model_for(next, pins);
                self.solver
                    .refactor_model(&self.runtime.apply(&model), &next.sim)?;
                self.runtime.prune(&model.pins);
                self.built.model = model;
                Applied::Refactored
            }
            Plan::Rebuild(pins) => {
                let model = self.model_for(next, pins);
                self.solver = Solver::new(&self.runtime.apply(&model), &next.sim)?;
                self.runtime.prune(&model.pins);
                self.built.model = model;
                Applied::Rebuilt
            }
            Plan::Reload => {
                let (built, solver) = build(next, self.path.as_deref())?;
                self.built = built;
                self.solver = solver;
                self.start_over();
                Applied::Reloaded
            }
        };
        self.built.params.clone_from(&next.sim);
        self.forget_accuracy();
        Ok((std::mem::replace(&mut self.preset, next.clone()), applied))
    }

    /// The current model with `next`'s material and `pins`.
    fn model_for(&self, next: &Preset, pins: Pins) -> Model {
        let mut model = self.built.model.clone();
        if next.material.density != self.preset.material.density {
            model.masses = model.lumped_masses(next.material.density);
        }
        model.weights = next.material.weights;
        model.limits = next.material.limits;
        model.pins = pins;
        model
    }

    /// Grabs, drags or releases.
    fn set_grab(&mut self, grab: Option<Grab>) -> Result<Applied, SessionError> {
        let previous = std::mem::replace(&mut self.runtime.grab, grab);
        self.sync_runtime()
            .inspect_err(|_| self.runtime.grab = previous)
    }

    /// Brings the solver's soft pins up to the runtime ones: only targets
    /// moved (no factorisation, no allocation once warm), else a
    /// refactorisation.
    fn sync_runtime(&mut self) -> Result<Applied, SessionError> {
        let runtime = &mut self.runtime;
        runtime.compose(&self.built.model.pins);
        let current = &self.solver.model().pins.soft;
        let same_vertices = current.len() == runtime.soft.len()
            && current
                .iter()
                .zip(&runtime.soft)
                .all(|(a, b)| a.vertex == b.vertex);
        if same_vertices {
            runtime.soft_targets.clear();
            runtime
                .soft_targets
                .extend(runtime.soft.iter().map(|a| a.target));
            self.solver.set_attachment_targets(&runtime.soft_targets)?;
            return Ok(Applied::Updated);
        }
        let model = self.runtime.apply(&self.built.model);
        self.solver.refactor_model(&model, &self.preset.sim)?;
        Ok(Applied::Refactored)
    }

    /// Pins or unpins `vertices` in the preset (see the [module docs](self)).
    fn pin(&mut self, vertices: &[u32], op: PinOp) -> Result<Applied, SessionError> {
        let mut vertices = vertices.to_vec();
        vertices.sort_unstable();
        vertices.dedup();
        if let Some(&vertex) = vertices.last() {
            self.check_vertex(vertex)?;
        }
        let mut next = self.preset.clone();
        let pins = &mut next.pins;
        let built = &self.built;
        let edited = match op {
            PinOp::Hard => remove(&mut pins.soft, &vertices, built)
                .and_then(|()| add(&mut pins.hard, &vertices, built)),
            PinOp::Soft => remove(&mut pins.hard, &vertices, built)
                .and_then(|()| add(&mut pins.soft, &vertices, built)),
            PinOp::Free => remove(&mut pins.hard, &vertices, built)
                .and_then(|()| remove(&mut pins.soft, &vertices, built)),
        };
        edited.map_err(|kind| SessionError::Rejected(Box::new(kind)))?;
        self.change_to(next)
    }
}

/// Rewrites the mesh path of `preset`, relative to the directory of `from`
/// (the preset's file, or the untitled name in the working directory) or
/// absolute, to name the same file from the directory of `to`: relative
/// when the mesh lies under the new directory or its parent (at most one
/// `..`: `../meshes/cloth.obj`, a project's presets and meshes side by
/// side, so the project moves or is shared whole), else absolute (a mesh
/// further away is not part of the project). So a preset saved away from
/// its project and then back into it names its mesh relatively again.
fn rebase_mesh(preset: &mut Preset, from: &Path, to: &Path) {
    let (MeshSource::Obj(mesh) | MeshSource::TetFile(mesh)) = &mut preset.mesh else {
        return;
    };
    let dir = |p: &Path| {
        let parent = p.parent().unwrap_or(Path::new(""));
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        parent.canonicalize().ok()
    };
    let (Some(from_dir), Some(to_dir)) = (dir(from), dir(to)) else {
        return;
    };
    if from_dir == to_dir {
        return;
    }
    // (`join` keeps an absolute mesh path as it is.)
    let absolute = from_dir.join(&*mesh);
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    let ups = |p: &Path| {
        p.components()
            .filter(|c| matches!(c, std::path::Component::ParentDir))
            .count()
    };
    match pathdiff::diff_paths(&absolute, &to_dir) {
        Some(relative) if ups(&relative) <= 1 => *mesh = relative,
        // An absolute path stays as the user wrote it (canonical, a
        // symbolic link in it would be resolved away).
        _ if mesh.is_absolute() => {}
        _ => *mesh = absolute,
    }
}

/// Whether `path` names an OBJ file (by its extension): what the front ends
/// open as a new untitled preset.
pub fn is_obj(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("obj"))
}

/// What a pin command does to the preset's pin lists.
#[derive(Clone, Copy)]
enum PinOp {
    Hard,
    Soft,
    Free,
}

/// Takes the sorted `vertices` out of every selector of `list`: out of
/// `indices`, into an `except` of a rule or group; a selector left with no
/// vertex is dropped.
fn remove(
    list: &mut Vec<Selector>,
    vertices: &[u32],
    built: &Built,
) -> Result<(), PresetErrorKind> {
    let mut kept = Vec::with_capacity(list.len());
    for selector in list.drain(..) {
        let selected = built.select(&selector)?;
        let hit: Vec<u32> = selected
            .iter()
            .copied()
            .filter(|v| vertices.binary_search(v).is_ok())
            .collect();
        if hit.is_empty() {
            kept.push(selector);
        } else if hit.len() < selected.len() {
            kept.push(match selector {
                Selector::Indices(mut indices) => {
                    indices.retain(|v| vertices.binary_search(v).is_err());
                    Selector::Indices(indices)
                }
                Selector::Except { of, mut indices } => {
                    indices.extend(hit);
                    indices.sort_unstable();
                    indices.dedup();
                    Selector::Except { of, indices }
                }
                rule => Selector::Except {
                    of: Box::new(rule),
                    indices: hit,
                },
            });
        }
    }
    *list = kept;
    Ok(())
}

/// Makes `list` select the sorted `vertices`: out of the `except`s that
/// left them out, and those still missing as the OBJ group they make up
/// (see [`group_selecting`]) or into an `indices` selector.
fn add(list: &mut Vec<Selector>, vertices: &[u32], built: &Built) -> Result<(), PresetErrorKind> {
    for selector in list.iter_mut() {
        if let Selector::Except { of, indices } = selector {
            indices.retain(|v| vertices.binary_search(v).is_err());
            if indices.is_empty() {
                *selector = (**of).clone();
            }
        }
    }
    let mut selected = Vec::new();
    for selector in list.iter() {
        selected.extend(built.select(selector)?);
    }
    selected.sort_unstable();
    let missing: Vec<u32> = vertices
        .iter()
        .copied()
        .filter(|v| selected.binary_search(v).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    // The group of all the vertices asked for, though others pin some of
    // them already (QA: a box's `top` beside its `left` rule, which share
    // an edge, was saved as 518 numbers, and a rebuild lost the face),
    // else of those not pinned yet.
    let group = group_selecting(built, vertices).or_else(|| group_selecting(built, &missing));
    if let Some(group) = group {
        list.push(group);
        return Ok(());
    }
    match list.iter_mut().find_map(|s| match s {
        Selector::Indices(indices) => Some(indices),
        _ => None,
    }) {
        Some(indices) => {
            indices.extend(missing);
            indices.sort_unstable();
            indices.dedup();
        }
        None => list.push(Selector::Indices(missing)),
    }
    Ok(())
}

/// The OBJ group (or object) that selects exactly the sorted `vertices`, if
/// one does (the editor selects a group by name): pinned by its name, the
/// rule reads as what was picked and outlives a re-export of the mesh that
/// renumbers its vertices, where indices would pin others.
///
/// Only when exactly one group does: two groups of one vertex set now (an
/// object and its group, or neighbours a coarse tet lattice merges) may
/// part after a rebuild, and the name chosen could then pin the other.
fn group_selecting(built: &Built, vertices: &[u32]) -> Option<Selector> {
    let groups = built.surface.as_ref()?.groups();
    let mut matching = groups.iter().filter_map(|g| {
        let rule = Selector::Group(g.name.clone());
        (built.select(&rule).ok()? == vertices).then_some(rule)
    });
    let first = matching.next()?;
    matching.next().is_none().then_some(first)
}

/// `e` with the line of its preset field, for a preset just loaded from its
/// file (see [`PresetError::with_line_from_file`]).
fn located(e: SessionError) -> SessionError {
    match e {
        SessionError::Preset(e) => SessionError::Preset(e.with_line_from_file()),
        other => other,
    }
}

/// Builds `preset` (from its file `path`, if it has one) and its solver.
/// `preset` as a session holds it: without the vertex count its numbered
/// pins were saved for ([`PinSpec::model_vertices`](crate::preset::PinSpec::model_vertices)),
/// checked when it was built and written again by each save.
fn held(mut preset: Preset) -> Preset {
    preset.pins.model_vertices = None;
    preset
}

fn build(preset: &Preset, path: Option<&Path>) -> Result<(Built, Solver), SessionError> {
    let base = path.unwrap_or(Path::new(UNTITLED));
    let built = preset.build(base).map_err(|e| match *e.kind {
        // Without a file there is no preset file or field to name: the
        // mesh's file is named, if there is one (the error named an
        // `untitled.toml` that does not exist).
        PresetErrorKind::Mesh { error, .. } if path.is_none() => SessionError::Import(error),
        kind if path.is_none() => match &preset.mesh {
            MeshSource::Obj(mesh) | MeshSource::TetFile(mesh) => {
                PresetError::new(mesh, kind).into()
            }
            MeshSource::Grid(_) => SessionError::Rejected(Box::new(kind)),
        },
        kind => PresetError {
            kind: Box::new(kind),
            ..e
        }
        .into(),
    })?;
    let solver = Solver::new(&built.model, &built.params)?;
    Ok((built, solver))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_objective(objective: &[f64]) -> History {
        let mut history = History::new(4);
        history.objective = objective.to_vec();
        history
    }

    /// A session taking another's place cancels the measurement that one
    /// ran and keeps it until its thread ends.
    #[test]
    fn a_replaced_session_hands_its_measurement_over_to_stop() {
        let mut session = Session::new(Preset::default(), None).unwrap();
        session.apply(Command::Step(3)).unwrap();
        assert!(session.measure_accuracy());
        let mut fork = session.fork();
        fork.apply(Command::SetWeight(crate::command::WeightKind::Shear, 250.0))
            .unwrap();
        session.replace_with(fork);
        assert!(!session.is_measuring());
        assert_eq!(session.preset().material.weights.shear, 250.0);
        let stopping = session.stopping.as_ref().expect("kept to stop");
        let start = std::time::Instant::now();
        while !stopping.is_finished() {
            assert!(start.elapsed().as_secs() < 60, "it never stopped");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // One that has ended is not kept; then a new one can start.
        session.replace_with(session.fork());
        assert!(session.stopping.is_none());
        assert!(session.measure_accuracy());
    }

    #[test]
    fn an_objective_changing_by_round_off_has_no_range() {
        assert_eq!(History::new(4).objective_range(), None);
        assert_eq!(with_objective(&[5.0]).objective_range(), None);
        let g = 1234.5;
        let noise = [g, g * (1.0 + 3e-16), g * (1.0 - 2e-16), g];
        assert_eq!(with_objective(&noise).objective_range(), None);
        let falling = [g, g * (1.0 - 1e-9), g * (1.0 - 2e-9)];
        assert_eq!(
            with_objective(&falling).objective_range(),
            Some((g * (1.0 - 2e-9), g))
        );
        // A body falling freely: the objective ~0, its noise far below the
        // frame's 0.3 J of kinetic energy; a change of a millionth of it is
        // drawn.
        let mut free = with_objective(&[1e-26, 3e-26, -1e-26, 2e-26]);
        free.push(Frame {
            energies: Energies {
                kinetic: 0.3,
                gravitational: -0.3,
                ..Energies::default()
            },
            ..Frame::default()
        });
        assert_eq!(free.objective_range(), None);
        free.objective = vec![1e-6, 5e-7, 2e-7];
        assert_eq!(free.objective_range(), Some((2e-7, 1e-6)));
    }
}
