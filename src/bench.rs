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
//!
//! `jelly{n}`: the same cube, 1050 kg/m³, with the jelly preset's material
//! (strain 2·10⁴ Pa and the volume constraint at 2·10⁴ Pa, `det F` within
//! ±5 %), unpinned on a ground (friction 0.6) at its bottom face: it
//! slumps and wobbles. The volume constraint needs each tet's SVD where
//! the strain alone needs only its rotation, and the ground's contacts
//! change the systems the global step solves; the tet cube exercises
//! neither. Same `h`, iterations and damping.

use std::time::Instant;

use crate::mesh::primitives::tet_box;
use crate::mesh::{TetMesh, Vec3};
use crate::model::{ClothGrid, Model, Pins, Weights};
use crate::solver::{Acceleration, Collider, Precision, SimParams, Solver, SolverError, State};
use crate::solver::{accuracy, memory};

/// The jelly scene's strain and volume weights (Pa), the jelly preset's.
const JELLY_WEIGHT: f64 = 2.0e4;

/// The machine a benchmark runs on, for its report: timings mean little
/// without it (this project's figures come from more than one host).
#[derive(Debug)]
pub struct Machine {
    /// The CPU's model name (`/proc/cpuinfo` on Linux), else the
    /// architecture.
    pub cpu: String,
    /// Logical CPUs available to this process.
    pub logical_cpus: usize,
    /// Whether the solver's kernels run with AVX2 and FMA (else portable).
    pub avx2_fma: bool,
}

impl Machine {
    /// The machine this process runs on.
    pub fn this() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| cpu_model(&text))
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        Self {
            cpu,
            logical_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            avx2_fma: crate::solver::has_avx2_fma(),
        }
    }
}

impl std::fmt::Display for Machine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kernels = if self.avx2_fma {
            "AVX2 + FMA"
        } else {
            "portable"
        };
        write!(
            f,
            "{}, {} logical CPU{}, {kernels} kernels",
            self.cpu,
            self.logical_cpus,
            if self.logical_cpus == 1 { "" } else { "s" }
        )
    }
}

/// The first `model name` of a `/proc/cpuinfo` text.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        (key.trim() == "model name" && !value.is_empty()).then(|| value.to_string())
    })
}

/// The cloth sizes of the standard scenes.
pub const CLOTH_SIZES: [usize; 4] = [30, 60, 100, 150];

/// The tet cube sizes (nodes per side) of the standard scenes.
pub const TET_SIZES: [usize; 2] = [12, 22];

/// The jelly cube sizes (nodes per side) of the standard scenes.
pub const JELLY_SIZES: [usize; 1] = [16];

/// What a scene simulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SceneKind {
    /// The seed cloth grid of springs.
    Cloth,
    /// A tetrahedral cube with the strain constraint.
    Tet,
    /// A tetrahedral cube of jelly (strain and volume) on a ground.
    Jelly,
}

/// A named benchmark scene.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// `cloth30`, `cloth60`, ..., `tet12`, `tet22`, `jelly16`.
    pub name: String,
    /// Cloth, tet cube or jelly cube.
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

    /// The jelly cube with `n × n × n` nodes.
    pub fn jelly(n: usize) -> Self {
        Self {
            name: format!("jelly{n}"),
            kind: SceneKind::Jelly,
            ..Self::tet(n)
        }
    }

    /// The standard scenes, cloths, tet cubes then jelly cubes, smallest
    /// first.
    pub fn standard() -> Vec<Scene> {
        let cloths = CLOTH_SIZES.iter().map(|&n| Self::cloth(n));
        cloths
            .chain(TET_SIZES.iter().map(|&n| Self::tet(n)))
            .chain(JELLY_SIZES.iter().map(|&n| Self::jelly(n)))
            .collect()
    }

    /// Finds a standard scene, or any `cloth{n}` (`n` in
    /// [`Scene::CLOTH_RANGE`]), `tet{n}` or `jelly{n}` (in
    /// [`Scene::TET_RANGE`]), by name.
    pub fn by_name(name: &str) -> Option<Scene> {
        let size = |prefix: &str, range: std::ops::RangeInclusive<usize>| {
            let digits = name.strip_prefix(prefix)?;
            let n: usize = digits.parse().ok()?;
            // As the scenes are named: `cloth+20` and `cloth020` were read
            // as cloth20 (QA).
            (range.contains(&n) && n.to_string() == digits).then_some(n)
        };
        size("cloth", Self::CLOTH_RANGE)
            .map(Self::cloth)
            .or_else(|| size("tet", Self::TET_RANGE).map(Self::tet))
            .or_else(|| size("jelly", Self::TET_RANGE).map(Self::jelly))
    }

    /// The sizes of `clothN`: up to a million vertices.
    pub const CLOTH_RANGE: std::ops::RangeInclusive<usize> = 3..=1000;

    /// The sizes of `tetN` and `jellyN`: up to 216,000 nodes (tet47, 103,823 nodes,
    /// factorises into 49 M entries; the factor grows faster than the
    /// nodes).
    pub const TET_RANGE: std::ops::RangeInclusive<usize> = 2..=60;

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
                let mut model =
                    Model::from_tet_mesh(&self.cube(), 1000.0, Weights::default(), false);
                // Vertex (0, j, k) of the box grid: the x = −0.5 face.
                model.pins = Pins::hard((0..self.n * self.n).map(|jk| (jk * self.n) as u32));
                model
            }
            SceneKind::Jelly => {
                let weights = Weights {
                    strain: JELLY_WEIGHT,
                    volume: JELLY_WEIGHT,
                    ..Weights::default()
                };
                Model::from_tet_mesh(&self.cube(), 1050.0, weights, false)
            }
        }
    }

    /// The 1 m tet cube of `n × n × n` nodes, centred on the origin.
    fn cube(&self) -> TetMesh {
        tet_box(Vec3::repeat(1.0), [self.n - 1; 3])
    }

    /// The parameters of this scene.
    pub fn params(&self) -> SimParams {
        let colliders = match self.kind {
            SceneKind::Jelly => vec![Collider::Ground {
                height: -0.5,
                friction: 0.6,
            }],
            SceneKind::Cloth | SceneKind::Tet => Vec::new(),
        };
        SimParams {
            acceleration: self.acceleration,
            colliders,
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
    /// Threads the solver's parallel work is split for (run on at most
    /// the machine's CPUs).
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
    /// The precision `L` is solved in: `double`, `mixed` or `relaxed`.
    pub precision: String,
    /// Numeric refactorisations of the ground contacts' systems over the
    /// warm-up and measured frames.
    pub contact_refactors: u64,
    /// Changes of the contacts' pins their systems' factors took in by
    /// rank-one updates instead, over the same frames.
    pub contact_updated_rows: u64,
    /// Bytes the process held at the end of the scene's frames, its model
    /// and solver alive (`None` where it cannot be read).
    pub resident_bytes: Option<u64>,
    /// The most bytes the process held while the scene was built and run
    /// (the kernel's high-water mark, reset before the scene where it can
    /// be; else the process's since it started).
    pub peak_resident_bytes: Option<u64>,
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
    memory::reset_peak();
    let t0 = Instant::now();
    let model = scene.model();
    let params = scene.params();
    let mut solver = Solver::new(&model, &params)?;
    solver.set_threads(threads);
    solver.set_precision(scene.precision)?;
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
    let resident = memory::resident();
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
        contact_refactors: stats.contact_refactors,
        contact_updated_rows: stats.contact_updated_rows,
        resident_bytes: resident.map(|r| r.current),
        peak_resident_bytes: resident.map(|r| r.peak),
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

/// What one acceleration method costs to reach the tolerances on a scene,
/// measured along its own motion (see [`accuracy()`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct AccuracyResult {
    /// Scene name.
    pub scene: String,
    /// `plain`, `chebyshev` or `anderson`.
    pub method: String,
    /// The initial guess: `inertial` (`q + α h v`) or `extrapolated`
    /// (plus the acceleration predicted from the last two steps).
    pub guess: String,
    /// Threads the solver's parallel work is split for (run on at most
    /// the machine's CPUs).
    pub threads: usize,
    /// Steps sampled per motion.
    pub steps: usize,
    /// Median wall time of a frame of `iterations_to_1e3` iterations (`None`:
    /// no count up to `max_iterations` reaches 1e-3).
    pub ms_to_1e3: Option<f64>,
    /// The same for 1e-5.
    pub ms_to_1e5: Option<f64>,
    /// The fewest iterations per frame whose own motion's sampled steps
    /// land within 1e-3 of Newton (median).
    pub iterations_to_1e3: Option<usize>,
    /// The same for 1e-5.
    pub iterations_to_1e5: Option<usize>,
    /// Median relative error of the sampled steps of the motion at the
    /// scene's own 10 iterations (at `max_iterations` if that is fewer).
    pub error_at_default: f64,
    /// The iterations `error_at_default` is measured at.
    pub iterations_at_default: usize,
    /// The iteration cap of the measurement.
    pub max_iterations: usize,
    /// The spectral radius Chebyshev estimated (other methods: `None`).
    pub spectral_radius: Option<f64>,
    /// Median wall time of a Newton reference step.
    pub newton_ms: f64,
}

/// How `softbody bench --accuracy` samples a motion: `steps` states, one
/// every `every` frames from rest, and at most `max_iterations` per frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sampling {
    /// States sampled (medians are taken over them).
    pub steps: usize,
    /// Frames between them.
    pub every: usize,
    /// The most iterations per frame tried.
    pub max_iterations: usize,
}

/// Where [`accuracy()`] is, for a progress display: it can run for
/// minutes, and says what it does as it goes.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// The stage, from 1 to [`ACCURACY_STAGES`]: one per method of
    /// [`ACCURACY_METHODS`] (its errors against Newton and its iteration
    /// counts), then one per tolerance (timing the frames of every method).
    pub stage: usize,
    /// What the stage is doing now (a stage reports again as it moves on).
    pub what: String,
}

/// How many stages [`accuracy()`] reports.
pub const ACCURACY_STAGES: usize = ACCURACY_METHODS.len() + TOLERANCES.len();

/// Steps sampled along the motion of one configuration from rest.
struct Motion {
    samples: Vec<Sample>,
}

/// One sampled step: the solver and the state there (the solver carries
/// what it learned, e.g. Chebyshev's spectral radius; the state its
/// extrapolation history and Anderson's carried pairs), and the Newton
/// solution of the next step.
struct Sample {
    solver: Solver,
    state: State,
    reference: accuracy::Reference,
}

/// A solver of `model` with `params` (its parallel work on `threads`
/// threads, default: its own choice) and the model at rest.
fn at_rest(
    model: &Model,
    params: &SimParams,
    threads: Option<usize>,
) -> Result<(Solver, State), SolverError> {
    let mut solver = Solver::new(model, params)?;
    if let Some(threads) = threads {
        solver.set_threads(threads);
    }
    Ok((solver, State::at_rest(model)))
}

/// Steps `state` on to the next sampled step (`sampling.every` frames).
fn advance(solver: &mut Solver, state: &mut State, sampling: Sampling) -> Result<(), SolverError> {
    for _ in 0..sampling.every.max(1) {
        solver.step(state)?;
    }
    Ok(())
}

impl Motion {
    fn run(
        scene: &Scene,
        params: &SimParams,
        threads: Option<usize>,
        sampling: Sampling,
    ) -> Result<Self, SolverError> {
        let (mut solver, mut state) = at_rest(&scene.model(), params, threads)?;
        let mut samples = Vec::with_capacity(sampling.steps);
        for _ in 0..sampling.steps.max(1) {
            advance(&mut solver, &mut state, sampling)?;
            samples.push(Sample {
                reference: accuracy::Reference::new(&solver, &state)?,
                solver: solver.clone(),
                state: state.clone(),
            });
        }
        Ok(Self { samples })
    }

    /// Each sampled step's errors after up to `iterations` iterations.
    fn errors(&self, iterations: usize) -> Result<Vec<accuracy::Accuracy>, SolverError> {
        self.samples
            .iter()
            .map(|s| accuracy::measure_against(&s.solver, &s.state, &s.reference, iterations))
            .collect()
    }
}

/// Measures every method of [`ACCURACY_METHODS`] on `scene` (in that
/// order), with the solver's parallel work on `threads` threads (default:
/// the solver's own choice), each along its own motion: what a session at a
/// given iteration count sees, history included.
///
/// First the motion at the scene's 10 iterations per frame (the cap, if
/// fewer): each sampled step's error after every iteration up to the cap
/// gives a first count per tolerance (the median of the fewest iterations
/// reaching it). Then the
/// count is settled on the motion run at that count: the fewest `n` whose
/// motion's sampled steps, each stepped with `n` iterations, land within the
/// tolerance (median), searched up or down by one from the first count.
/// Last, each method's motion at its settled count is stepped again, all
/// of them side by side, and their frames are timed from the sampled
/// states, taking turns (`time_in_turns`), so that the host's speed
/// drifting over the minutes the measurement takes reaches every method
/// alike. `progress` is called with each [`Stage`] as it starts, and
/// again as the search for an iteration count moves on.
///
/// # Errors
/// Any [`SolverError`].
pub fn accuracy(
    scene: &Scene,
    threads: Option<usize>,
    sampling: Sampling,
    progress: &mut dyn FnMut(Stage),
) -> Result<Vec<AccuracyResult>, SolverError> {
    let mut results = ACCURACY_METHODS
        .iter()
        .enumerate()
        .map(|(i, &method)| {
            let mut say = |what: String| progress(Stage { stage: i + 1, what });
            plan(scene, method, threads, sampling, &mut say)
        })
        .collect::<Result<Vec<_>, _>>()?;
    for k in 0..TOLERANCES.len() {
        progress(Stage {
            stage: ACCURACY_METHODS.len() + k + 1,
            what: format!(
                "timing the frames that reach {:.0e}, the methods taking turns",
                TOLERANCES[k]
            ),
        });
        let counts = results
            .iter()
            .map(|r| [r.iterations_to_1e3, r.iterations_to_1e5][k]);
        let (timed, configs): (Vec<usize>, Vec<SimParams>) =
            (ACCURACY_METHODS.into_iter().zip(counts))
                .enumerate()
                .filter_map(|(i, (method, n))| {
                    let params = method_params(scene, method);
                    Some((
                        i,
                        SimParams {
                            iterations: n?,
                            ..params
                        },
                    ))
                })
                .unzip();
        let ms = time_in_turns(scene, &configs, threads, sampling)?;
        for (i, ms) in timed.into_iter().zip(ms) {
            match k {
                0 => results[i].ms_to_1e3 = Some(ms),
                _ => results[i].ms_to_1e5 = Some(ms),
            }
        }
    }
    Ok(results)
}

/// The parameters of `scene` with `method` (with the extrapolated initial
/// guess if `extrapolate`).
fn method_params(scene: &Scene, (method, extrapolate): (Acceleration, bool)) -> SimParams {
    SimParams {
        acceleration: method,
        extrapolate: Some(extrapolate),
        ..scene.params()
    }
}

/// [`accuracy()`] of one method, up to timing its frames: the iteration
/// counts, without the times. `say` is told what it is doing.
fn plan(
    scene: &Scene,
    method: (Acceleration, bool),
    threads: Option<usize>,
    sampling: Sampling,
    say: &mut dyn FnMut(String),
) -> Result<AccuracyResult, SolverError> {
    let params = method_params(scene, method);
    let name = format!("{} from the {} guess", method.0.name(), params.guess_name());
    let say = &mut |what: String| say(format!("{name}: {what}"));
    // The error column's motion is stepped at the iterations it is read
    // at: below the scene's 10 it was read on the motion at 10, and said
    // 1e-5 after 1 iteration where the counts, from motions run at theirs,
    // found 1e-3 out of reach.
    let at_default = params.iterations.min(sampling.max_iterations);
    let explore_params = SimParams {
        iterations: at_default,
        ..params.clone()
    };
    let steps = sampling.steps.max(1);
    let plural = if steps == 1 { "" } else { "s" };
    say(format!(
        "{steps} step{plural} of its motion at {at_default} iterations a frame, against Newton"
    ));
    let explore = Motion::run(scene, &explore_params, threads, sampling)?;
    let curves = explore.errors(sampling.max_iterations)?;
    let mut errors: Vec<f64> = curves
        .iter()
        .map(|a| a.errors[at_default.min(a.errors.len() - 1)])
        .collect();
    let mut newton: Vec<f64> = explore.samples.iter().map(|s| s.reference.ms()).collect();
    let mut counts = [None, None];
    for (k, &tolerance) in TOLERANCES.iter().enumerate() {
        let mut firsts: Vec<f64> = curves
            .iter()
            .map(|a| {
                a.iterations_to(tolerance)
                    .map_or(f64::INFINITY, |n| n as f64)
            })
            .collect();
        let first = median(&mut firsts);
        if !first.is_finite() {
            continue;
        }
        let first = (first.round() as usize).max(1);
        counts[k] = settle(scene, &params, threads, sampling, tolerance, first, say)?;
    }
    let solver = &explore.samples[explore.samples.len() - 1].solver;
    Ok(AccuracyResult {
        scene: scene.name.clone(),
        method: method.0.name().into(),
        guess: params.guess_name().into(),
        threads: solver.threads(),
        steps: explore.samples.len(),
        ms_to_1e3: None,
        ms_to_1e5: None,
        iterations_to_1e3: counts[0],
        iterations_to_1e5: counts[1],
        error_at_default: median(&mut errors),
        iterations_at_default: at_default,
        max_iterations: sampling.max_iterations,
        spectral_radius: solver.spectral_radius(),
        newton_ms: median(&mut newton),
    })
}

/// The fewest iterations per frame, searched by one from `first`, whose
/// own motion lands within `tolerance` of Newton (median over the sampled
/// steps); `None` if none up to the cap does. `say` is told each count
/// tried.
fn settle(
    scene: &Scene,
    params: &SimParams,
    threads: Option<usize>,
    sampling: Sampling,
    tolerance: f64,
    first: usize,
    say: &mut dyn FnMut(String),
) -> Result<Option<usize>, SolverError> {
    let mut within = |n: usize| -> Result<bool, SolverError> {
        let plural = if n == 1 { "" } else { "s" };
        say(format!(
            "trying {n} iteration{plural} a frame for {tolerance:.0e}, against Newton"
        ));
        let at_n = SimParams {
            iterations: n,
            ..params.clone()
        };
        let motion = Motion::run(scene, &at_n, threads, sampling)?;
        let mut errors: Vec<f64> = motion
            .errors(n)?
            .iter()
            .map(|a| a.errors[a.errors.len() - 1])
            .collect();
        Ok(median(&mut errors) <= tolerance)
    };
    let cap = sampling.max_iterations.max(1);
    let mut n = first.min(cap);
    if within(n)? {
        // Down while they stay within.
        while n > 1 && within(n - 1)? {
            n -= 1;
        }
        return Ok(Some(n));
    }
    // Up until one is within.
    while n < cap {
        n += 1;
        if within(n)? {
            return Ok(Some(n));
        }
    }
    Ok(None)
}

/// The median over sampled states of the median wall time of a frame with
/// each of `configs` (the motion of each from rest is stepped anew, all of
/// them side by side: one every `sampling.every` frames, `sampling.steps`
/// of them). At every sampled state the configurations take turns, one
/// turn of each per round: a turn steps a fresh clone of the solver and
/// the state on from there and times the [`TIMED_FRAMES`] frames after the
/// first, which warms the caches as the frame before does in use (a frame
/// timed right after the clone read its factor, model and Anderson's pairs
/// cold: that costs the same per frame however many iterations it runs, so
/// it inflated the short frames of the accelerated methods the most; see
/// docs/performance.md). Each configuration times at least 8 frames and 0.5 s of
/// them there, at most 24, and stops once they pass 20 s (short frames are
/// noisy on a shared host: many runs steady their median).
fn time_in_turns(
    scene: &Scene,
    configs: &[SimParams],
    threads: Option<usize>,
    sampling: Sampling,
) -> Result<Vec<f64>, SolverError> {
    let model = scene.model();
    let mut runs = configs
        .iter()
        .map(|params| at_rest(&model, params, threads))
        .collect::<Result<Vec<_>, SolverError>>()?;
    let steps = sampling.steps.max(1);
    let mut medians = vec![Vec::with_capacity(steps); runs.len()];
    for _ in 0..steps {
        for (solver, state) in &mut runs {
            advance(solver, state, sampling)?;
        }
        let mut times = vec![Vec::new(); runs.len()];
        let mut totals = vec![0.0; runs.len()];
        let done = |times: &[f64], total: f64| {
            times.len() >= 24 || (times.len() >= 8 && total >= 500.0) || total > 2e4
        };
        while (times.iter().zip(&totals)).any(|(t, &total)| !done(t, total)) {
            for (c, (solver, state)) in runs.iter().enumerate() {
                if !done(&times[c], totals[c]) {
                    let ms = time_frames(solver, state)?;
                    totals[c] += ms.iter().sum::<f64>();
                    times[c].extend(ms);
                }
            }
        }
        for (median_of, mut t) in medians.iter_mut().zip(times) {
            median_of.push(median(&mut t));
        }
    }
    Ok(medians.iter_mut().map(|m| median(m)).collect())
}

/// Frames a turn of [`time_in_turns`] times, after one it does not.
const TIMED_FRAMES: usize = 4;

/// Wall times of the [`TIMED_FRAMES`] frames after the first from
/// `start`, stepped on a fresh clone of `solver`.
fn time_frames(solver: &Solver, start: &State) -> Result<Vec<f64>, SolverError> {
    let mut run = solver.clone();
    let mut state = start.clone();
    run.step(&mut state)?;
    (0..TIMED_FRAMES)
        .map(|_| {
            let t = Instant::now();
            run.step(&mut state)?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenes_by_name() {
        assert_eq!(Scene::by_name("cloth60"), Some(Scene::cloth(60)));
        assert_eq!(Scene::by_name("tet22"), Some(Scene::tet(22)));
        assert_eq!(Scene::by_name("jelly16"), Some(Scene::jelly(16)));
        for bad in [
            "tet1",
            "cloth2",
            "teapot",
            "tet",
            "tetx",
            "cloth1001",
            "tet61",
            "tet18446744073709551616",
            "jelly1",
            "jelly61",
            "cloth+20",
            "cloth020",
        ] {
            assert_eq!(Scene::by_name(bad), None, "{bad}");
        }
        for kind in [SceneKind::Cloth, SceneKind::Tet, SceneKind::Jelly] {
            assert!(Scene::standard().iter().any(|s| s.kind == kind));
        }
    }

    #[test]
    fn the_cpu_model_is_read_from_cpuinfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 207\n\
                       model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx2\n\n\
                       processor\t: 1\nmodel name\t: Other\n";
        assert_eq!(
            cpu_model(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) Processor")
        );
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t:   \n"), None);
        assert_eq!(cpu_model(""), None);
        let machine = Machine {
            cpu: "CPU".into(),
            logical_cpus: 1,
            avx2_fma: false,
        };
        assert_eq!(machine.to_string(), "CPU, 1 logical CPU, portable kernels");
        let here = Machine::this();
        assert!(!here.cpu.is_empty() && here.logical_cpus >= 1);
    }

    /// Capped below the scene's 10 iterations, the error column is read on
    /// the motion its counts are settled on: an error within a tolerance
    /// after the one iteration allowed is a count of 1, and one outside it
    /// none (the column said 1.3e-5 after 1 iteration, on the motion at 10,
    /// beside "1e-3 not reached in 1").
    #[test]
    fn a_capped_error_column_agrees_with_the_counts() {
        let sampling = Sampling {
            steps: 1,
            every: 10,
            max_iterations: 1,
        };
        for method in ACCURACY_METHODS {
            let r = plan(&Scene::cloth(16), method, Some(1), sampling, &mut |_| {}).unwrap();
            assert_eq!(r.iterations_at_default, 1);
            for (tolerance, count) in TOLERANCES
                .iter()
                .zip([r.iterations_to_1e3, r.iterations_to_1e5])
            {
                let within = r.error_at_default <= *tolerance;
                assert_eq!(
                    count,
                    within.then_some(1),
                    "{method:?} at {tolerance}: {r:?}"
                );
            }
        }
    }

    /// The jelly cube: the tet cube's mesh with strain and volume, no pins,
    /// on a ground at its bottom face that holds it while it slumps.
    #[test]
    fn jelly_scene_slumps_on_its_ground() {
        let scene = Scene::jelly(5);
        let model = scene.model();
        assert_eq!(model.vertex_count(), 125);
        assert_eq!(model.tets.len(), 6 * 64);
        assert!(model.pins.hard_vertices().is_empty() && model.pins.soft.is_empty());
        let w = model.weights;
        assert_eq!([w.strain, w.volume, w.strain_limit], [2.0e4, 2.0e4, 0.0]);
        let params = scene.params();
        assert_eq!(params.colliders.len(), 1);
        let mut solver = Solver::new(&model, &params).unwrap();
        let mut state = State::at_rest(&model);
        for _ in 0..30 {
            solver.step(&mut state).unwrap();
        }
        let ys = state.positions.iter().map(|p| p.y);
        let (low, high) = ys.fold((f64::MAX, f64::MIN), |(l, h), y| (l.min(y), h.max(y)));
        // On the ground (its contacts let it sink a thousandth of a step's
        // fall), and lower than it was: 1 m of 20 kPa jelly slumps.
        assert!(low >= -0.5 - 1e-4, "{low}");
        assert!(high < 0.5 - 0.01, "{high}");
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
