//! The editable parameters both front ends list ([`ParamId`]), how their
//! values are shown ([`format_value`]) and stepped, and [`Pacer`], which
//! steps a [`Session`] in real time within a wall-time budget per UI frame.

use std::collections::VecDeque;
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

/// Formats a coordinate of a box `extent` across to a ten-thousandth of
/// the extent (its 4 significant digits), however large the coordinate:
/// the corners of a mesh 10 km from the origin read `[10000.12, …] ..
/// [10001.84, …]`, where [`format_value`] wrote `10000` for both. A
/// zero or non-finite extent formats as [`format_value`].
pub fn format_within(value: f64, extent: f64) -> String {
    if !(extent.is_finite() && extent > 0.0 && value.is_finite()) {
        return format_value(value);
    }
    let decimals = (3 - extent.log10().floor() as i32).clamp(0, 17) as usize;
    let text = fixed(value, decimals);
    // (`-0.0001` rounded to `-0`.)
    if text == "-0" { "0".to_owned() } else { text }
}

/// `value` with `decimals` decimals, its trailing zeros (and a bare point)
/// dropped.
fn fixed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
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
        fixed(value, decimals)
    }
}

/// The rate frames arrive at, over the last few seconds: one frame every
/// few seconds still reads right (an average per UI frame read it as 0, and
/// one smoothed per call read 19 fps for seconds after the frames had
/// become 2 s each), and a rate from before a pause is forgotten.
#[derive(Clone, Debug, Default)]
pub struct FrameRate {
    /// When the recent frames arrived, oldest first (at most
    /// [`FrameRate::FRAMES`], none older than [`FrameRate::WINDOW`]).
    arrivals: VecDeque<Instant>,
}

impl FrameRate {
    /// Frames the rate is measured over...
    const FRAMES: usize = 16;
    /// ... within this window.
    const WINDOW: Duration = Duration::from_secs(10);
    /// The span the rate is taken over when the frames kept cover it: a
    /// rate that slowed reads as it is now, not as the average with the
    /// faster frames before.
    const RECENT: Duration = Duration::from_secs(1);

    /// Takes in `frames` that arrived at `now`.
    pub fn record(&mut self, frames: usize, now: Instant) {
        for _ in 0..frames {
            self.arrivals.push_back(now);
        }
        while self.arrivals.len() > Self::FRAMES
            || (self.arrivals.front()).is_some_and(|&t| now - t > Self::WINDOW)
        {
            self.arrivals.pop_front();
        }
    }

    /// Forgets the frames so far (a pause, another scene).
    pub fn forget(&mut self) {
        self.arrivals.clear();
    }

    /// Frames per second at `now`, over the newest frames that span a
    /// second (or all there are): falls towards zero once no frame has come
    /// for twice the interval so far.
    pub fn per_second(&self, now: Instant) -> f64 {
        let Some(&last) = self.arrivals.back() else {
            return 0.0;
        };
        let first = *(self.arrivals.iter().rev())
            .find(|&&t| last - t >= Self::RECENT)
            .unwrap_or(&self.arrivals[0]);
        let span = (last - first).as_secs_f64();
        if self.arrivals.len() < 2 || span <= 0.0 {
            return 0.0;
        }
        // The frames of the first arrival came before the span began.
        let within = self.arrivals.iter().filter(|&&t| t > first).count();
        let rate = within as f64 / span;
        let idle = (now - last).as_secs_f64();
        if idle * rate > 2.0 { 1.0 / idle } else { rate }
    }
}

/// Steps a [`Session`] in real time for a UI: each call steps as many
/// frames as the wall clock owes since the last call, but for at most a
/// wall-time budget, so input is never blocked; a simulation slower than
/// real time runs in slow motion rather than falling ever further behind.
#[derive(Clone, Debug, Default)]
pub struct Pacer {
    /// When the frames simulated were done.
    rate: FrameRate,
    /// Simulated time owed to the wall clock while playing (s).
    owed: f64,
    /// When [`Pacer::advance`] last ran.
    last_advance: Option<Instant>,
}

impl Pacer {
    /// Forgets the time owed (after opening another scene).
    pub fn forget(&mut self) {
        self.owed = 0.0;
        self.rate.forget();
    }

    /// Frames simulated per second of wall time, over the last few seconds.
    pub fn sim_fps(&self) -> f64 {
        self.rate.per_second(Instant::now())
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
            self.rate.forget();
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
        self.rate.record(frames as usize, Instant::now());
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rate reads one frame every 1.5 s as 0.67 fps (an average per UI
    /// frame read it as 0), batches of frames at UI frames as their rate,
    /// frames that slowed to 2 s as 0.5 fps at once, and falls once frames
    /// stop coming.
    #[test]
    fn the_frame_rate_is_measured_over_frame_arrivals() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let rate = |arrivals: &VecDeque<Instant>, now| {
            FrameRate {
                arrivals: arrivals.clone(),
            }
            .per_second(now)
        };
        let slow: VecDeque<Instant> = [0.0, 1.5, 3.0, 4.5].map(at).into();
        assert!((rate(&slow, at(4.5)) - 1.0 / 1.5).abs() < 1e-9);
        assert!((rate(&slow, at(6.0)) - 1.0 / 1.5).abs() < 1e-9);
        assert!((rate(&slow, at(14.5)) - 0.1).abs() < 1e-9);
        // 2, 3 or 4 frames at each UI frame of 50 ms: 40, 60 or 80 fps,
        // whether the oldest batch is whole or cut by the frame limit.
        for per_frame in [2, 3, 4] {
            for skip in [0, 1] {
                let batched: VecDeque<Instant> = (0..5)
                    .flat_map(|k| vec![k as f64 * 0.05; per_frame])
                    .skip(skip)
                    .map(at)
                    .collect();
                let expected = per_frame as f64 / 0.05;
                assert!((rate(&batched, at(0.2)) - expected).abs() < 1e-6);
            }
        }
        assert_eq!(rate(&VecDeque::from([at(1.0)]), at(2.0)), 0.0);
        // Fast frames, then frames of 2 s: read as such at the second.
        let mut recorded = FrameRate::default();
        for k in 0..30 {
            recorded.record(1, at(f64::from(k) / 60.0));
        }
        assert!((recorded.per_second(at(0.5)) - 60.0).abs() < 1e-6);
        recorded.record(1, at(2.5));
        recorded.record(1, at(4.5));
        assert!((recorded.per_second(at(4.5)) - 0.5).abs() < 0.05);
        recorded.forget();
        assert_eq!(recorded.per_second(at(5.0)), 0.0);
    }

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
    fn coordinates_are_formatted_to_their_box() {
        for (value, extent, text) in [
            (10000.123, 1.7, "10000.123"),
            (10001.84, 1.7, "10001.84"),
            (0.5, 1.7, "0.5"),
            (-0.00001, 1.7, "0"),
            (0.0012346, 0.002, "0.001235"),
            (123456.0, 2e5, "123456"),
            (0.25, 0.0, "0.25"),
        ] {
            assert_eq!(format_within(value, extent), text, "{value} in {extent}");
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
