//! [`SimParams`]: time stepping, iterations, damping, gravity and colliders.

use super::accelerate::Acceleration;
use super::collide::Collider;
use crate::mesh::Vec3;

/// Simulation parameters. Changing `dt` or `substeps` changes the system
/// matrix (a numeric refactorisation); the rest only changes right-hand sides.
/// Deserialising takes a missing field from [`SimParams::default`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimParams {
    /// Frame time step `h` in seconds. Default 1/60: one step per displayed
    /// frame at 60 Hz, the setting of the seed papers.
    pub dt: f64,
    /// Local/global iterations per step. Default 10, as in Liu et al. 2013:
    /// enough for a visually converged cloth at the default weights.
    pub iterations: usize,
    /// Steps per frame (each of `dt / substeps`). Default 1; raise it for very
    /// stiff or fast scenes.
    pub substeps: usize,
    /// Fraction of the velocity removed per sixtieth of a second, in `[0,
    /// 1]` (physics.md §1: the inertial target uses `α` times the velocity,
    /// `α = (1 − damping)^(60 h)` for a (sub)step of `h` seconds, see
    /// [`SimParams::velocity_kept`]). Default 0.01 removes the slow jitter
    /// that undamped implicit Euler leaves.
    pub damping: f64,
    /// Gravity in m/s². Default `(0, −9.8, 0)`: `y` is up.
    pub gravity: Vec3,
    /// Ground plane and spheres.
    pub colliders: Vec<Collider>,
    /// How the iterations are accelerated. Default Anderson: the fastest
    /// to a given accuracy on the benchmark scenes (`softbody bench
    /// --accuracy`), never raising the objective.
    pub acceleration: Acceleration,
    /// Whether a substep's initial guess adds a prediction of its
    /// acceleration from the last two to the motion without forces
    /// `q + α h v` (`solver/guess.rs`); see [`SimParams::extrapolates`].
    /// Default (`None`, not written in presets): on with Anderson, off
    /// with plain PD and Chebyshev. With Anderson the n = 22 tet
    /// cantilever then reaches 1e-5 against Newton in 5 iterations instead
    /// of 7 (`softbody bench --accuracy`); its safeguard keeps each step's
    /// objective from rising, which keeps the motion from gaining energy
    /// once the iterations converge, not below (the silk preset undamped at
    /// 3 iterations rose 4.4 mJ above its start, 0.022 J in its largest
    /// frame, and at 50 by at most 0.13 mJ a frame, QA; plain PD at 3 never
    /// rose above its start). Plain PD reaches 1e-3 in 4 iterations
    /// instead of 8 from it, but its truncated iterations feed the
    /// prediction back: the silk preset at 3 plain iterations swung above
    /// its pins, its energy rising from 0 to +0.25 J (QA), where from the
    /// motion without forces it never rose above the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extrapolate: Option<bool>,
    /// Stops a substep's iterations early once an iteration moved the
    /// vertices by less than this fraction of the step's displacement,
    /// `‖x_{k+1} − x_k‖ ≤ tol ‖x_{k+1} − q‖`; `iterations` is then the
    /// most it runs. With Anderson the error against the exact step is
    /// then about `tol` on the benchmark scenes (plain PD's a few times
    /// more: its updates shrink slowly), and more where Anderson converges
    /// slowly too (the silk preset released flat, at 1e-3: 4.5e-3 to
    /// 1.5e-2, QA). An update below [`UPDATE_FLOOR`](super::UPDATE_FLOOR) of
    /// the body's size ends them too (a body at rest steps by round-off).
    /// Default 0: always `iterations`.
    pub tolerance: f64,
}

impl Default for SimParams {
    fn default() -> Self {
        Self {
            dt: 1.0 / 60.0,
            iterations: 10,
            substeps: 1,
            damping: 0.01,
            gravity: Vec3::new(0.0, -9.8, 0.0),
            colliders: Vec::new(),
            acceleration: Acceleration::default(),
            extrapolate: None,
            tolerance: 0.0,
        }
    }
}

/// The step rate at which [`SimParams::damping`] is the share of the
/// velocity removed per step: the default frame rate, 60 a second.
const DAMPING_RATE: f64 = 60.0;

impl SimParams {
    /// The most iterations per substep a model accepts: far past where any
    /// method stops gaining (`softbody bench --accuracy` reaches 1e-5 in
    /// tens), and low enough that a typo (`1e12`) is an error instead of a
    /// frame that never ends.
    pub const MAX_ITERATIONS: usize = 10_000;

    /// The most substeps per frame a model accepts (a frame of
    /// `dt / 100`-steps; smaller steps want a smaller `dt`).
    pub const MAX_SUBSTEPS: usize = 100;

    /// Whether the initial guess is extrapolated: [`SimParams::extrapolate`]
    /// where set, else with Anderson acceleration only.
    pub fn extrapolates(&self) -> bool {
        (self.extrapolate).unwrap_or(self.acceleration == Acceleration::Anderson)
    }

    /// The name of the initial guess: `extrapolated` or `inertial`
    /// (`q + α h v`, [`SimParams::extrapolates`] false).
    pub fn guess_name(&self) -> &'static str {
        if self.extrapolates() {
            "extrapolated"
        } else {
            "inertial"
        }
    }

    /// The time step of one substep.
    pub fn substep_dt(&self) -> f64 {
        self.dt / self.substeps.max(1) as f64
    }

    /// `α`, the share of the velocity a substep keeps: `1 − damping` over
    /// each sixtieth of a second, whatever the time step (exactly `1 −
    /// damping` at the default `dt` of 1/60 s and one substep). Removed per
    /// step, the default 0.01 slowed a body falling for 2 s to 11.4 m/s at
    /// `dt` = 1/60 and to 4.05 m/s at 1/240 (free fall: 19.6; QA), so a
    /// shorter step, taken for accuracy, changed the motion.
    pub fn velocity_kept(&self) -> f64 {
        (1.0 - self.damping).powf(self.substep_dt() * DAMPING_RATE)
    }
}
