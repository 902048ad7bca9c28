//! [`Command`]: what a front end (editor, terminal UI, CLI) asks of a
//! [`Session`](crate::session::Session). Commands are plain data; the
//! session applies them between frames and reports the work it did.

use std::path::PathBuf;

use crate::mesh::Vec3;
use crate::model::{TetLimits, Weights};
use crate::preset::{Build, Material, PinSpec, Preset};
use crate::solver::{Acceleration, Collider, SimParams};

/// One request to a [`Session`](crate::session::Session).
///
/// Vertex indices are model vertices (`0..m`). Commands that change the
/// preset (weights, density, parameters, limits, pins) are undoable; the
/// rest (playback, target moves, grabs, load/save) are not.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Start stepping on [`Session::tick`](crate::session::Session::tick).
    Play,
    /// Stop stepping.
    Pause,
    /// Play if paused, else pause.
    TogglePlay,
    /// Step this many frames now, playing or not.
    Step(usize),
    /// Back to the rest state at time 0, with an empty history.
    Reset,
    /// Set one constraint weight (≥ 0; units in [`Weights`]).
    SetWeight(WeightKind, f64),
    /// Set the material density (kg/m² for springs, kg/m³ for tets).
    SetDensity(f64),
    /// Set one simulation parameter.
    SetParam(Param),
    /// Set the tet strain and volume limits.
    SetLimits(TetLimits),
    /// Set a one-click material preset at once: the density and the
    /// weights of the model's build kind (with the tet limits for tets).
    /// The attachment weight, which belongs to the pins and the grab, stays,
    /// and so do the other kind's weights, for a build of that kind.
    SetMaterial(Material),
    /// Change how the model is built from its mesh (springs or tets and
    /// their options): a new model at rest. Another kind takes its own
    /// density (see [`BuildKind::default_density`](crate::preset::BuildKind::default_density)).
    SetBuild(Build),
    /// Hard-pin these vertices (stored as an `indices` selector, or by name
    /// when they are exactly one OBJ group; a soft pin on them is removed).
    PinHard(Vec<u32>),
    /// Soft-pin these vertices at their rest positions (a hard pin on them
    /// is removed).
    PinSoft(Vec<u32>),
    /// Replace the pin rules (hard and soft selectors) as a whole: how a
    /// front end pins by a rule — the top edge, a plane, a group — so the
    /// rule, not its vertices, is saved and follows re-meshing.
    SetPins(PinSpec),
    /// Remove every pin from these vertices, whichever selector made it
    /// (rules and groups keep the rest of their vertices through an
    /// `except` selector).
    Unpin(Vec<u32>),
    /// Move the target of a soft-pinned vertex (runtime only: not saved,
    /// not undoable; kept across rebuilds while the vertex stays soft-pinned).
    MoveSoftPinTarget {
        /// A soft-pinned vertex.
        vertex: u32,
        /// Its new target (m).
        target: Vec3,
    },
    /// Take hold of a vertex: a temporary soft pin pulling it to `target`
    /// with the attachment weight (not in the preset, not undoable).
    Grab {
        /// The grabbed vertex, not hard-pinned.
        vertex: u32,
        /// Where it is pulled to (m).
        target: Vec3,
    },
    /// Move the held vertex's target (nothing when nothing is held).
    Drag {
        /// The new target (m).
        target: Vec3,
    },
    /// Let go of the held vertex (nothing when nothing is held).
    Release,
    /// Open a preset file, or an OBJ file as a new untitled preset (see
    /// [`Preset::for_obj`](crate::preset::Preset::for_obj)): a new document
    /// with an empty undo history.
    Load(PathBuf),
    /// Save to the preset's file, or with a path, save as. Refused with
    /// [`SessionError::ChangedOnDisk`](crate::session::SessionError::ChangedOnDisk)
    /// over the preset's own file when that changed on disk since the
    /// session read or wrote it.
    Save(Option<PathBuf>),
    /// [`Command::Save`] over a change made to the file elsewhere (the
    /// person chose to overwrite it).
    SaveAnyway(Option<PathBuf>),
    /// Put this whole preset in force as one undoable change (a recovered
    /// autosave).
    Restore(Box<Preset>),
    /// Go back to the preset before the last change.
    Undo,
    /// Redo the last undone change.
    Redo,
}

/// A constraint type of [`Weights`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightKind {
    /// [`Weights::structural`].
    Structural,
    /// [`Weights::shear`].
    Shear,
    /// [`Weights::bending`].
    Bending,
    /// [`Weights::attachment`].
    Attachment,
    /// [`Weights::strain`].
    Strain,
    /// [`Weights::strain_limit`].
    StrainLimit,
    /// [`Weights::volume`].
    Volume,
}

impl WeightKind {
    /// Every kind, in the order of [`Weights`]' fields.
    pub const ALL: [WeightKind; 7] = [
        Self::Structural,
        Self::Shear,
        Self::Bending,
        Self::Attachment,
        Self::Strain,
        Self::StrainLimit,
        Self::Volume,
    ];

    /// The weight of this kind in `weights`.
    pub fn get(self, weights: &Weights) -> f64 {
        let mut w = *weights;
        *self.slot(&mut w)
    }

    /// The field of this kind in `weights`.
    pub fn slot(self, weights: &mut Weights) -> &mut f64 {
        match self {
            Self::Structural => &mut weights.structural,
            Self::Shear => &mut weights.shear,
            Self::Bending => &mut weights.bending,
            Self::Attachment => &mut weights.attachment,
            Self::Strain => &mut weights.strain,
            Self::StrainLimit => &mut weights.strain_limit,
            Self::Volume => &mut weights.volume,
        }
    }
}

/// One field of [`SimParams`] with its new value.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// [`SimParams::dt`] (s, > 0).
    Dt(f64),
    /// [`SimParams::iterations`] (≥ 1).
    Iterations(usize),
    /// [`SimParams::substeps`] (≥ 1).
    Substeps(usize),
    /// [`SimParams::damping`] (in `[0, 1]`).
    Damping(f64),
    /// [`SimParams::gravity`] (m/s²).
    Gravity(Vec3),
    /// [`SimParams::colliders`].
    Colliders(Vec<Collider>),
    /// [`SimParams::acceleration`].
    Acceleration(Acceleration),
    /// [`SimParams::extrapolate`], set (on or off whatever the method).
    Extrapolate(bool),
    /// [`SimParams::tolerance`] (≥ 0).
    Tolerance(f64),
}

impl Param {
    /// Writes the value into `params`.
    pub fn apply_to(self, params: &mut SimParams) {
        match self {
            Self::Dt(dt) => params.dt = dt,
            Self::Iterations(n) => params.iterations = n,
            Self::Substeps(n) => params.substeps = n,
            Self::Damping(d) => params.damping = d,
            Self::Gravity(g) => params.gravity = g,
            Self::Colliders(c) => params.colliders = c,
            Self::Acceleration(a) => params.acceleration = a,
            Self::Extrapolate(on) => params.extrapolate = Some(on),
            Self::Tolerance(t) => params.tolerance = t,
        }
    }
}
