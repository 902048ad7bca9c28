//! The editable parameters both front ends list ([`ParamId`]), how their
//! values are shown ([`format_value`]) and stepped, and [`Pacer`], which
//! steps a [`Session`] in real time within a wall-time budget per UI frame.

use std::time::{Duration, Instant};

use crate::command::{Command, Param, WeightKind};
use crate::mesh::Vec3;
use crate::model::{Model, Weights};
use crate::preset::{Build, MeshSource, Preset};
use crate::session::{Applied, Session, SessionError};

/// The weight `+` gives a weight of `kind` that is zero: its default, or
/// for the tet constraints that are off by default (strain limit, volume)
/// the default strain weight, a stiffness of the body's own order (it went
/// to 1, which for a weight in Pa did nothing visible for 20 presses).
pub fn switched_on(kind: WeightKind) -> f64 {
    let defaults = Weights::default();
    match kind.get(&defaults) {
        w if w > 0.0 => w,
        _ => defaults.strain,
    }
}

/// The factor `+` and `-` multiply and divide log-scaled values by: four
/// steps per decade.
pub const LOG_STEP: f64 = 1.778_279_410_038_922_8; // 10^(1/4)

/// The slowest numeric factorisation (ms) redone at every step of a
/// change by default: a slider's drag in the editor, a held `+` in the
/// terminal UI. Slower ones (a 30³ tet cube's ~220 ms, the 105k-vertex
/// body's ~2.6 s) apply once, when the drag ends or the keys stop, instead
/// of stalling the UI at every step.
pub const LIVE_REFACTOR_MS: f64 = 100.0;

/// One editable value in the parameter list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamId {
    /// A constraint weight.
    Weight(WeightKind),
    /// The material density.
    Density,
    /// The frame time step.
    Dt,
    /// Solver iterations per substep.
    Iterations,
    /// The relative update that stops the iterations early (0: never).
    Tolerance,
    /// Velocity damping.
    Damping,
    /// The vertical component of gravity.
    GravityY,
    /// Metres per unit of the mesh file ([`Build::scale`]).
    Scale,
}

impl ParamId {
    /// The parameters that apply to `model`, built from `preset`: the
    /// weights of the constraint types it has (and the attachment weight,
    /// for pins and grabs), then the material and simulation parameters,
    /// then the mesh file's scale (a grid has none).
    pub fn for_model(preset: &Preset, model: &Model) -> Vec<ParamId> {
        let springs = &model.springs;
        let has = |kind: WeightKind| match kind {
            WeightKind::Structural => !springs.structural.is_empty(),
            WeightKind::Shear => !springs.shear.is_empty(),
            WeightKind::Bending => !springs.bending.is_empty(),
            WeightKind::Attachment => true,
            WeightKind::Strain | WeightKind::StrainLimit | WeightKind::Volume => {
                !model.tets.is_empty()
            }
        };
        WeightKind::ALL
            .into_iter()
            .filter(|&k| has(k))
            .map(ParamId::Weight)
            .chain([
                ParamId::Density,
                ParamId::Dt,
                ParamId::Iterations,
                ParamId::Tolerance,
                ParamId::Damping,
                ParamId::GravityY,
            ])
            .chain((!matches!(preset.mesh, MeshSource::Grid(_))).then_some(ParamId::Scale))
            .collect()
    }

    /// The name shown in the list.
    pub fn label(self) -> &'static str {
        match self {
            ParamId::Weight(kind) => match kind {
                WeightKind::Structural => "structural",
                WeightKind::Shear => "shear",
                WeightKind::Bending => "bending",
                WeightKind::Attachment => "attachment",
                WeightKind::Strain => "strain",
                WeightKind::StrainLimit => "strain limit",
                WeightKind::Volume => "volume",
            },
            ParamId::Density => "density",
            ParamId::Dt => "dt",
            ParamId::Iterations => "iterations",
            ParamId::Tolerance => "tolerance",
            ParamId::Damping => "damping",
            ParamId::GravityY => "gravity y",
            ParamId::Scale => "scale",
        }
    }

    /// Whether a change refactorises the system matrix: the weights, the
    /// density (the masses) and the time step (see the table in
    /// [`crate::session`]).
    pub fn refactors(self) -> bool {
        matches!(self, ParamId::Weight(_) | ParamId::Density | ParamId::Dt)
    }

    /// Whether a change builds the model again from its mesh (the scale).
    pub fn rebuilds(self) -> bool {
        self == ParamId::Scale
    }

    /// The current value in `preset`.
    pub fn value(self, preset: &Preset) -> f64 {
        match self {
            ParamId::Weight(kind) => kind.get(&preset.material.weights),
            ParamId::Density => preset.material.density,
            ParamId::Dt => preset.sim.dt,
            ParamId::Iterations => preset.sim.iterations as f64,
            ParamId::Tolerance => preset.sim.tolerance,
            ParamId::Damping => preset.sim.damping,
            ParamId::GravityY => preset.sim.gravity.y,
            ParamId::Scale => preset.build.scale,
        }
    }

    /// The value one `+` (`up`) or `-` step from `value`: weights, density
    /// and `dt` on a log scale (a zero weight steps up to
    /// [`switched_on`]), iterations by
    /// one (at least 1), the tolerance on a log scale between 0 (off), 1e-6
    /// and 0.1, damping by 0.01 within `[0, 1]`, gravity by 0.5 m/s², the
    /// scale by a factor of ten (a file's units are a power of ten apart).
    /// Log steps keep 6 significant digits and gravity's whole micrometres
    /// per second squared, so a saved preset reads `1778.28` and `-6.8`,
    /// not `1778.2794100389228` and `-6.800000000000001`.
    pub fn stepped(self, value: f64, up: bool) -> f64 {
        match self {
            ParamId::Weight(_) | ParamId::Density | ParamId::Dt => match (value > 0.0, up) {
                (false, true) => match self {
                    ParamId::Weight(kind) => switched_on(kind),
                    // (Never zero: the session keeps them positive.)
                    _ => 1.0,
                },
                (false, false) => 0.0,
                (true, true) => significant(value * LOG_STEP),
                (true, false) => significant(value / LOG_STEP),
            },
            ParamId::Iterations => (value + if up { 1.0 } else { -1.0 }).max(1.0),
            ParamId::Tolerance => match (value > 0.0, up) {
                (false, true) => 1e-4,
                (false, false) => 0.0,
                // (Never down: a typed tolerance may be above 0.1.)
                (true, true) => significant(value * LOG_STEP).min(value.max(0.1)),
                (true, false) => Some(significant(value / LOG_STEP))
                    .filter(|&t| t >= 1e-6)
                    .unwrap_or(0.0),
            },
            ParamId::Damping => {
                let stepped = value + if up { 0.01 } else { -0.01 };
                // Round away the float noise of repeated steps.
                ((stepped * 100.0).round() / 100.0).clamp(0.0, 1.0)
            }
            ParamId::GravityY => {
                let stepped = value + if up { 0.5 } else { -0.5 };
                (stepped * 1e6).round() / 1e6
            }
            ParamId::Scale => {
                let (lo, hi) = Build::SCALE_RANGE.into_inner();
                significant(if up { value * 10.0 } else { value / 10.0 }).clamp(lo, hi)
            }
        }
    }

    /// The command that sets this parameter to `value` in `preset` (the
    /// session validates the value).
    pub fn command(self, value: f64, preset: &Preset) -> Command {
        match self {
            ParamId::Weight(kind) => Command::SetWeight(kind, value),
            ParamId::Density => Command::SetDensity(value),
            ParamId::Dt => Command::SetParam(Param::Dt(value)),
            // Saturating: a negative or huge typed value becomes 0 or
            // usize::MAX, which the session's validation reports.
            ParamId::Iterations => Command::SetParam(Param::Iterations(value.round() as usize)),
            ParamId::Tolerance => Command::SetParam(Param::Tolerance(value)),
            ParamId::Damping => Command::SetParam(Param::Damping(value)),
            ParamId::GravityY => {
                let g = preset.sim.gravity;
                Command::SetParam(Param::Gravity(Vec3::new(g.x, value, g.z)))
            }
            ParamId::Scale => Command::SetBuild(Build {
                scale: value,
                ..preset.build
            }),
        }
    }
}

/// `value` to 6 significant digits, or to 3 where that is within 2e-5 of
/// it: steps of 10^¼ rounded each time drift (500 four steps up read
/// 5000.01, 56.2341 one step up 99.9999), and land on the round number.
fn significant(value: f64) -> f64 {
    let six = to_digits(value, 6);
    let three = to_digits(value, 3);
    if (three - value).abs() <= 2e-5 * value.abs() {
        three
    } else {
        six
    }
}

/// `value` to `digits` significant digits (each power of ten it is scaled
/// by is exact in double precision for the values a preset takes).
fn to_digits(value: f64, digits: i32) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let shift = value.abs().log10().floor() as i32 - (digits - 1);
    if shift < 0 {
        let scale = 10f64.powi(-shift);
        (value * scale).round() / scale
    } else {
        let scale = 10f64.powi(shift);
        (value / scale).round() * scale
    }
}

/// Formats a parameter value compactly: 4 significant digits, scientific
/// notation outside `[0.001, 100000)`.
pub fn format_value(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-3..1e5).contains(&magnitude) {
        format!("{value:.3e}")
    } else {
        let decimals = if magnitude < 1.0 {
            4
        } else {
            (3 - magnitude.log10().floor() as i32).max(0) as usize
        };
        let text = format!("{value:.decimals$}");
        if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text
        }
    }
}

/// Steps a [`Session`] in real time for a UI: each call steps as many
/// frames as the wall clock owes since the last call, but for at most a
/// wall-time budget, so input is never blocked; a simulation slower than
/// real time runs in slow motion rather than falling ever further behind.
#[derive(Clone, Debug, Default)]
pub struct Pacer {
    /// Frames simulated per second of wall time, averaged.
    pub sim_fps: f64,
    /// Simulated time owed to the wall clock while playing (s).
    owed: f64,
    /// When [`Pacer::advance`] last ran.
    last_advance: Option<Instant>,
}

impl Pacer {
    /// Forgets the time owed (after opening another scene).
    pub fn forget(&mut self) {
        self.owed = 0.0;
    }

    /// Steps `session` when playing, for at most `budget` of wall time, and
    /// returns the outcome of the last step (`Applied::Nothing` when none).
    ///
    /// # Errors
    /// As [`Session::tick`]; stepping stops at the first error.
    pub fn advance(
        &mut self,
        session: &mut Session,
        budget: Duration,
    ) -> Result<Applied, SessionError> {
        let now = Instant::now();
        let since = self.last_advance.replace(now).map(|t| now - t);
        if !session.is_playing() {
            self.owed = 0.0;
            self.sim_fps = 0.0;
            return Ok(Applied::Nothing);
        }
        let dt = session.preset().sim.dt;
        // At most a few frames owed: never catch up on a long stall.
        self.owed = (self.owed + since.map_or(dt, |s| s.as_secs_f64())).min(4.0 * dt);
        let mut frames = 0u32;
        let mut last = Ok(Applied::Nothing);
        while self.owed >= dt && now.elapsed() < budget && session.is_playing() {
            self.owed -= dt;
            frames += 1;
            last = session.tick();
            if last.is_err() {
                break;
            }
        }
        if let Some(since) = since.filter(|s| !s.is_zero()) {
            let fps = f64::from(frames) / since.as_secs_f64();
            self.sim_fps = 0.9 * self.sim_fps + 0.1 * fps;
        }
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_formatted_compactly() {
        for (value, text) in [
            (1000.0, "1000"),
            (1000.0 * LOG_STEP, "1778"),
            (0.15, "0.15"),
            (1.0 / 60.0, "0.0167"),
            (-9.81, "-9.81"),
            (0.0, "0"),
            (1e5, "1.000e5"),
            (2e-4, "2.000e-4"),
        ] {
            assert_eq!(format_value(value), text, "{value}");
        }
    }

    #[test]
    fn steps_stay_in_range() {
        let weight = ParamId::Weight(WeightKind::Bending);
        assert_eq!(weight.stepped(0.0, true), 20.0);
        let limit = ParamId::Weight(WeightKind::StrainLimit);
        assert_eq!(limit.stepped(0.0, true), Weights::default().strain);
        assert_eq!(weight.stepped(0.0, false), 0.0);
        let up_down = weight.stepped(weight.stepped(20.0, true), false);
        assert!((up_down - 20.0).abs() < 1e-12);
        assert_eq!(ParamId::Iterations.stepped(1.0, false), 1.0);
        assert_eq!(ParamId::Iterations.stepped(10.0, true), 11.0);
        assert_eq!(ParamId::Tolerance.stepped(0.0, true), 1e-4);
        assert_eq!(ParamId::Tolerance.stepped(0.0, false), 0.0);
        assert_eq!(ParamId::Tolerance.stepped(1e-3, true), 0.00177828);
        assert_eq!(ParamId::Tolerance.stepped(0.09, true), 0.1);
        // A typed tolerance above the stepping range: + never lowers it.
        assert_eq!(ParamId::Tolerance.stepped(0.5, true), 0.5);
        assert_eq!(ParamId::Tolerance.stepped(1.5e-6, false), 0.0);
        assert_eq!(ParamId::Damping.stepped(1.0, true), 1.0);
        assert_eq!(ParamId::Damping.stepped(0.0, false), 0.0);
        assert_eq!(ParamId::Damping.stepped(0.07, true), 0.08);
        // Six significant digits, and back where it started.
        assert_eq!(weight.stepped(1000.0, true), 1778.28);
        assert_eq!(weight.stepped(1778.28, false), 1000.0);
        assert_eq!(weight.stepped(1e12, false), 562_341_000_000.0);
        // Back on the round number after a decade, wherever it started.
        let mut w = 500.0;
        for _ in 0..4 {
            w = weight.stepped(w, true);
        }
        assert_eq!(w, 5000.0);
        assert_eq!(weight.stepped(56.2341, true), 100.0);
        let mut g = -9.8;
        for _ in 0..6 {
            g = ParamId::GravityY.stepped(g, true);
        }
        assert_eq!(g, -6.8);
    }
}
