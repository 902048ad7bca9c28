//! The standard benchmark scenes and their runner, shared by `softbody bench`
//! and the criterion benches.
//!
//! `cloth{n}`: the seed cloth of Liu et al. 2013 (an `n × n` grid in the seed
//! layout, structural + shear + bending springs, `6n² − 10n + 2`), 1 m wide,
//! 0.3 kg/m², its two top corners hard-pinned, gravity 9.8 m/s², `h = 1/60`,
//! 10 iterations per frame, no damping beyond the default.
//!
//! `tet{n}`: a 1 m cube of `n × n × n` nodes (`(n − 1)³` cells of 6 Kuhn
//! tets, [`tet_box`]), 1000 kg/m³, the ARAP strain constraint at the default
//! weight (no springs, no strain limit or volume), its `x = −0.5` face
//! hard-pinned: a soft cantilever sagging under gravity. Same `h`,
//! iterations and damping as the cloth.

use std::time::Instant;

use crate::mesh::Vec3;
use crate::mesh::primitives::tet_box;
use crate::model::{ClothGrid, Model, Pins, Weights};
use crate::solver::accuracy;
use crate::solver::{Acceleration, Precision, SimParams, Solver, SolverError, State};

/// The cloth sizes of the standard scenes.
pub const CLOTH_SIZES: [usize; 4] = [30, 60, 100, 150];

/// The tet cube sizes (nodes per side) of the standard scenes.
pub const TET_SIZES: [usize; 2] = [12, 22];

/// What a scene simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SceneKind {
    /// The seed cloth grid of springs.
    Cloth,
    /// A tetrahedral cube with the strain constraint.
    Tet,
}

/// A named benchmark scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// `cloth30`, `cloth60`, ..., `tet12`, `tet22`.
    pub name: String,
    /// Cloth or tet cube.
    pub kind: SceneKind,
    /// Grid nodes per side.
    pub n: usize,
    /// How the iterations are accelerated (default: the solver's default).
    pub acceleration: Acceleration,
    /// The precision of the global solve (default: automatic by size).
    pub precision: Precision,
}

impl Scene {
    /// The seed cloth with `n × n` nodes.
    pub fn cloth(n: usize) -> Self {
        Self {
            name: format!("cloth{n}"),
            kind: SceneKind::Cloth,
            n,
            acceleration: Acceleration::default(),
            precision: Precision::Auto,
        }
    }

    /// The tet cube with `n × n × n` nodes.
    pub fn tet(n: usize) -> Self {
        Self {
            name: format!("tet{n}"),
            kind: SceneKind::Tet,
            n,
            acceleration: Acceleration::default(),
            precision: Precision::Auto,
        }
    }

    /// The standard scenes, cloths then tet cubes, smallest first.
    pub fn standard() -> Vec<Scene> {
        let cloths = CLOTH_SIZES.iter().map(|&n| Self::cloth(n));
        cloths
            .chain(TET_SIZES.iter().map(|&n| Self::tet(n)))
            .collect()
    }

    /// Finds a standard scene, or any `cloth{n}` (`n ≥ 3`) or `tet{n}`
    /// (`n ≥ 2`), by name.
    pub fn by_name(name: &str) -> Option<Scene> {
        let size = |prefix: &str, min: usize| {
            let n: usize = name.strip_prefix(prefix)?.parse().ok()?;
            (n >= min).then_some(n)
        };
        size("cloth", 3)
            .map(Self::cloth)
            .or_else(|| size("tet", 2).map(Self::tet))
    }

    /// The model of this scene.
    pub fn model(&self) -> Model {
        match self.kind {
            SceneKind::Cloth => {
                let grid = ClothGrid::new(self.n, 1.0);
                let mut model = Model::from_cloth_grid(&grid, 0.3, Weights::default());
                model.pins = Pins::hard(grid.top_corners());
                model
            }
            SceneKind::Tet => {
                let cells = self.n - 1;
                let mesh = tet_box(Vec3::repeat(1.0), [cells; 3]);
                let mut model = Model::from_tet_mesh(&mesh, 1000.0, Weights::default(), false);
                // Vertex (0, j, k) of the box grid: the x = −0.5 face.
                model.pins = Pins::hard((0..self.n * self.n).map(|jk| (jk * self.n) as u32));
                model
            }
        }
    }

    /// The parameters of this scene.
    pub fn params(&self) -> SimParams {
        SimParams {
            acceleration: self.acceleration,
            ..SimParams::default()
        }
    }
}

/// Measured figures of one scene. Times in milliseconds; per-frame figures
/// are medians over the measured frames.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BenchResult {
    /// Scene name.
    pub scene: String,
    /// Grid nodes per side.
    pub n: usize,
    /// Vertices.
    pub nodes: usize,
    /// Springs.
    pub springs: usize,
    /// Tetrahedra.
    pub tets: usize,
    /// Local/global iterations per frame.
    pub iterations: usize,
    /// `plain`, `chebyshev` or `anderson`.
    pub acceleration: String,
    /// Threads available to the solver.
    pub threads: usize,
    /// Frames measured (after warm-up).
    pub frames: usize,
    /// Model build, assembly, ordering, symbolic and numeric factorisation.
    pub setup_ms: f64,
    /// One numeric refactorisation (what a weight change costs).
    pub factor_ms: f64,
    /// Median wall time per frame.
    pub frame_ms_median: f64,
    /// Median time in local steps per frame.
    pub local_ms_median: f64,
    /// Median time in global steps per frame.
    pub global_ms_median: f64,
    /// Stored entries of the lower triangle of `A`.
    pub matrix_nnz: usize,
    /// Stored entries of the Cholesky factor.
    pub factor_nnz: usize,
    /// The precision `L` is solved in: `double` or `mixed`.
    pub precision: String,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        0.5 * (values[n / 2 - 1] + values[n / 2])
    }
}

/// Runs `scene` for `warmup` then `frames` measured frames, with the
/// solver's parallel work on `threads` threads (see [`Solver::set_threads`]).
///
/// # Errors
/// Any [`SolverError`] (none are expected for the standard scenes).
pub fn run(
    scene: &Scene,
    frames: usize,
    warmup: usize,
    threads: usize,
) -> Result<BenchResult, SolverError> {
    let t0 = Instant::now();
    let model = scene.model();
    let params = scene.params();
    let mut solver = Solver::new(&model, &params)?;
    solver.set_threads(threads);
    solver.set_precision(scene.precision);
    let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t1 = Instant::now();
    solver.refactor(model.weights, None, &params)?;
    let factor_ms = t1.elapsed().as_secs_f64() * 1e3;
    let mut state = State::at_rest(&model);
    for _ in 0..warmup {
        solver.step(&mut state)?;
    }
    let (mut total, mut local, mut global) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..frames {
        let t = Instant::now();
        let report = solver.step(&mut state)?;
        total.push(t.elapsed().as_secs_f64() * 1e3);
        local.push(report.timings.local_ms);
        global.push(report.timings.global_ms);
    }
    let stats = solver.factor_stats();
    Ok(BenchResult {
        scene: scene.name.clone(),
        n: scene.n,
        nodes: model.vertex_count(),
        springs: model.springs.len(),
        tets: model.tets.len(),
        iterations: params.iterations,
        acceleration: params.acceleration.name().into(),
        threads: solver.threads(),
        frames,
        setup_ms,
        factor_ms,
        frame_ms_median: median(&mut total),
        local_ms_median: median(&mut local),
        global_ms_median: median(&mut global),
        matrix_nnz: stats.matrix_nnz,
        factor_nnz: stats.factor_nnz,
        precision: stats.precision().name().into(),
    })
}

/// The scenes of `softbody bench --accuracy`: the n = 60 cloth and the
/// 10,648-node tet cube.
pub fn accuracy_scenes() -> Vec<Scene> {
    vec![Scene::cloth(60), Scene::tet(22)]
}

/// The tolerances `softbody bench --accuracy` times.
pub const TOLERANCES: [f64; 2] = [1e-3, 1e-5];

/// The solvers `softbody bench --accuracy` compares, as (acceleration,
/// extrapolated initial guess): every method from the motion without
/// forces (the first, plain PD, is the papers' baseline), then every method
/// from the extrapolated guess (the last, Anderson, is the default).
pub const ACCURACY_METHODS: [(Acceleration, bool); 6] = [
    (Acceleration::Plain, false),
    (Acceleration::Chebyshev, false),
    (Acceleration::Anderson, false),
    (Acceleration::Plain, true),
    (Acceleration::Chebyshev, true),
    (Acceleration::Anderson, true),
];

/// What one acceleration method costs to reach the tolerances on a scene:
/// medians over the steps from the [`AccuracyStarts`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AccuracyResult {
    /// Scene name.
    pub scene: String,
    /// `plain`, `chebyshev` or `anderson`.
    pub method: String,
    /// The initial guess: `inertial` (`q + α h v`) or `extrapolated`
    /// (plus the fitted share of the last acceleration).
    pub guess: String,
    /// Threads of the solver's parallel work.
    pub threads: usize,
    /// Steps measured (one per start state).
    pub steps: usize,
    /// Median wall time of a frame with just enough iterations to reach a
    /// relative error of 1e-3 against Newton (a step that does not within
    /// `max_iterations` counts as infinite; `None`: the median is).
    pub ms_to_1e3: Option<f64>,
    /// The same for 1e-5.
    pub ms_to_1e5: Option<f64>,
    /// Median of those iteration counts.
    pub iterations_to_1e3: Option<usize>,
    /// Median of those iteration counts.
    pub iterations_to_1e5: Option<usize>,
    /// Median relative error at the scene's own 10 iterations.
    pub error_at_default: f64,
    /// The iteration cap of the measurement.
    pub max_iterations: usize,
    /// The spectral radius Chebyshev estimated (other methods: `None`).
    pub spectral_radius: Option<f64>,
    /// Median wall time of a Newton reference step.
    pub newton_ms: f64,
}

/// The steps `softbody bench --accuracy` measures: states sampled along the
/// scene's reference motion (Anderson at 100 iterations, converged far
/// below 1e-5), so every method is measured from the same states and none
/// from its own trajectory, with the Newton solution of each next step.
pub struct AccuracyStarts {
    states: Vec<State>,
    references: Vec<accuracy::Reference>,
}

impl AccuracyStarts {
    /// `count` states, one every `every` frames of the reference motion.
    ///
    /// # Errors
    /// Any [`SolverError`] (none are expected for the standard scenes).
    pub fn new(scene: &Scene, count: usize, every: usize) -> Result<Self, SolverError> {
        let model = scene.model();
        let params = SimParams {
            acceleration: Acceleration::Anderson,
            iterations: 100,
            ..scene.params()
        };
        let mut solver = Solver::new(&model, &params)?;
        let mut state = State::at_rest(&model);
        let mut states = Vec::with_capacity(count);
        let mut references = Vec::with_capacity(count);
        for _ in 0..count {
            for _ in 0..every.max(1) {
                solver.step(&mut state)?;
            }
            references.push(accuracy::Reference::new(&solver, &state)?);
            states.push(state.clone());
        }
        Ok(Self { states, references })
    }
}

/// Measures `method` (with the extrapolated initial guess if `extrapolate`)
/// on `scene` from each of `starts` (with the solver's
/// parallel work on `threads` threads, default the solver's own choice):
/// the error after every iteration up to `max_iterations` against Newton,
/// then the wall time of frames with just enough iterations for each of
/// [`TOLERANCES`].
/// The solver first runs 10 frames from rest, so Chebyshev has estimated
/// its spectral radius as it would have in use.
///
/// # Errors
/// Any [`SolverError`].
pub fn accuracy(
    scene: &Scene,
    starts: &AccuracyStarts,
    (method, extrapolate): (Acceleration, bool),
    threads: Option<usize>,
    max_iterations: usize,
) -> Result<AccuracyResult, SolverError> {
    let model = scene.model();
    let params = SimParams {
        acceleration: method,
        extrapolate,
        ..scene.params()
    };
    let mut solver = Solver::new(&model, &params)?;
    if let Some(threads) = threads {
        solver.set_threads(threads);
    }
    let mut state = State::at_rest(&model);
    for _ in 0..10 {
        solver.step(&mut state)?;
    }
    // A step that does not reach a tolerance counts as infinitely slow: the
    // median is still finite while most steps reach it.
    let mut ms = [Vec::new(), Vec::new()];
    let mut iterations = [Vec::new(), Vec::new()];
    let (mut errors, mut newton) = (Vec::new(), Vec::new());
    for (start, reference) in starts.states.iter().zip(&starts.references) {
        let measured = accuracy::measure_against(&solver, start, reference, max_iterations)?;
        errors.push(measured.error());
        newton.push(measured.newton_ms);
        for (k, &tolerance) in TOLERANCES.iter().enumerate() {
            match measured.iterations_to(tolerance) {
                Some(n) => {
                    iterations[k].push(n as f64);
                    ms[k].push(time_frame(&solver, start, n.max(1))?);
                }
                None => {
                    iterations[k].push(f64::INFINITY);
                    ms[k].push(f64::INFINITY);
                }
            }
        }
    }
    let summary = |values: &mut Vec<f64>| Some(median(values)).filter(|m| m.is_finite());
    let [ms3, ms5] = &mut ms;
    let [its3, its5] = &mut iterations;
    Ok(AccuracyResult {
        scene: scene.name.clone(),
        method: method.name().into(),
        guess: if extrapolate {
            "extrapolated"
        } else {
            "inertial"
        }
        .into(),
        threads: solver.threads(),
        steps: starts.states.len(),
        ms_to_1e3: summary(ms3),
        ms_to_1e5: summary(ms5),
        iterations_to_1e3: summary(its3).map(|n| n.round() as usize),
        iterations_to_1e5: summary(its5).map(|n| n.round() as usize),
        error_at_default: median(&mut errors),
        max_iterations,
        spectral_radius: solver.spectral_radius(),
        newton_ms: median(&mut newton),
    })
}

/// Median wall time of one frame of `iterations` iterations from `start`,
/// each run on a fresh clone of `solver`: up to 7 runs, stopping after 3
/// once they add up to 2 s, or after any run once they pass 20 s.
fn time_frame(solver: &Solver, start: &State, iterations: usize) -> Result<f64, SolverError> {
    let params = SimParams {
        iterations,
        ..solver.params().clone()
    };
    let mut times = Vec::new();
    let mut total = 0.0;
    while times.len() < 7 && (times.len() < 3 || total < 2e3) {
        let mut run = solver.clone();
        run.set_params(&params)?;
        let mut state = start.clone();
        let t = Instant::now();
        run.step(&mut state)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        times.push(ms);
        total += ms;
        if total > 2e4 {
            break;
        }
    }
    Ok(median(&mut times))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenes_by_name() {
        assert_eq!(Scene::by_name("cloth60"), Some(Scene::cloth(60)));
        assert_eq!(Scene::by_name("tet22"), Some(Scene::tet(22)));
        for bad in ["tet1", "cloth2", "teapot", "tet", "tetx"] {
            assert_eq!(Scene::by_name(bad), None, "{bad}");
        }
        assert!(Scene::standard().iter().any(|s| s.kind == SceneKind::Tet));
    }

    #[test]
    fn tet_scene_pins_its_low_x_face() {
        let model = Scene::tet(5).model();
        assert_eq!(model.vertex_count(), 125);
        assert_eq!(model.tets.len(), 6 * 64);
        let pinned = model.pins.hard_vertices();
        assert_eq!(pinned.len(), 25);
        assert!(pinned.iter().all(|&v| model.rest[v as usize].x == -0.5));
    }
}
