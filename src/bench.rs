//! The standard benchmark scenes and their runner, shared by `softbody bench`
//! and the criterion benches.
//!
//! `cloth{n}`: the seed cloth of Liu et al. 2013 (an `n × n` grid in the seed
//! layout, structural + shear + bending springs, `6n² − 10n + 2`), 1 m wide,
//! 0.3 kg/m², its two top corners hard-pinned, gravity 9.8 m/s², `h = 1/60`,
//! 10 iterations per frame, no damping beyond the default.

use std::time::Instant;

use crate::model::{ClothGrid, Model, Pins, Weights};
use crate::solver::{SimParams, Solver, SolverError, State};

/// The cloth sizes of the standard scenes.
pub const CLOTH_SIZES: [usize; 4] = [30, 60, 100, 150];

/// A named benchmark scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// `cloth30`, `cloth60`, ...
    pub name: String,
    /// Grid nodes per side.
    pub n: usize,
}

impl Scene {
    /// The seed cloth with `n × n` nodes.
    pub fn cloth(n: usize) -> Self {
        Self {
            name: format!("cloth{n}"),
            n,
        }
    }

    /// The standard scenes, smallest first.
    pub fn standard() -> Vec<Scene> {
        CLOTH_SIZES.iter().map(|&n| Self::cloth(n)).collect()
    }

    /// Finds a standard scene (or any `cloth{n}`, `n ≥ 3`) by name.
    pub fn by_name(name: &str) -> Option<Scene> {
        let n: usize = name.strip_prefix("cloth")?.parse().ok()?;
        (n >= 3).then(|| Self::cloth(n))
    }

    /// The model of this scene.
    pub fn model(&self) -> Model {
        let grid = ClothGrid::new(self.n, 1.0);
        let mut model = Model::from_cloth_grid(&grid, 0.3, Weights::default());
        model.pins = Pins::hard(grid.top_corners());
        model
    }

    /// The parameters of this scene.
    pub fn params(&self) -> SimParams {
        SimParams::default()
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
    /// Local/global iterations per frame.
    pub iterations: usize,
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

/// Runs `scene` for `warmup` then `frames` measured frames, with the local
/// step on `threads` threads (see [`Solver::set_threads`]).
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
        iterations: params.iterations,
        threads: solver.threads(),
        frames,
        setup_ms,
        factor_ms,
        frame_ms_median: median(&mut total),
        local_ms_median: median(&mut local),
        global_ms_median: median(&mut global),
        matrix_nnz: stats.matrix_nnz,
        factor_nnz: stats.factor_nnz,
    })
}
