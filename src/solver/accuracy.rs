//! The accuracy figure: how far a PD step with a given number of iterations
//! lands from the exact implicit Euler step (the [`newton`] reference), so
//! users see what their iteration count buys.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::newton::{self, NewtonOptions, relative_error};
use super::{SimParams, Solver, SolverError, State};
use crate::mesh::Vec3;

/// The errors of one step measured against the Newton reference.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Accuracy {
    /// Relative error `‖x − x*‖ / ‖x* − q‖` of the step after `k`
    /// iterations, `k = 0, 1, …` (index 0: the initial guess).
    pub errors: Vec<f64>,
    /// The iterations the solver's step runs: its `iterations`, or fewer
    /// where its tolerance stops it (the first iterate whose update is
    /// within [`SimParams::tolerance`] of the step's displacement, or below
    /// [`UPDATE_FLOOR`](super::UPDATE_FLOOR) of the body's size).
    pub iterations: usize,
    /// Newton iterations the reference took.
    pub newton_iterations: usize,
    /// Whether Newton converged (its step fell below the tolerance before
    /// the iteration cap). Non-smooth constraints (strain limits, the
    /// volume range) can keep it from converging; the errors are then
    /// against an approximate reference.
    pub reference_converged: bool,
    /// Wall time of the reference, in milliseconds (the Newton solve and
    /// the solver's step it starts from).
    pub newton_ms: f64,
    /// The exact step's size relative to the body's: the root mean square
    /// of its vertices' displacements over the body's bounding-box
    /// diagonal. Below [`NEARLY_AT_REST`] the relative errors are of a
    /// step too small to see, and the line says so; below [`AT_REST`] the
    /// body is at rest ([`Accuracy::at_rest`]).
    pub step: f64,
}

/// The step, relative to the body's size, below which the body is said to
/// be nearly at rest in [`Accuracy`]'s line: a micrometre a frame on a
/// metre. (A cloth settling for minutes read "error 5.3e-1", an error of
/// half a step of a few nanometres.)
pub const NEARLY_AT_REST: f64 = 1e-6;

/// The step, relative to the body's size, below which a body counts as at
/// rest for [`Accuracy::at_rest`]: well above the round-off of positions
/// (~1e-16 of the size), below the smallest step worth measuring (the
/// first step from rest at the shortest `dt`, 1e-6 s, falls `h²g`, 1e-11 m).
pub const AT_REST: f64 = 1e-12;

impl Accuracy {
    /// Whether the exact step moves the body by less than [`AT_REST`] of
    /// its size: the errors are then ratios of round-off and mean nothing
    /// (a body at rest read "error 1.0e0, 1e-3 in > 100 its").
    pub fn at_rest(&self) -> bool {
        self.step < AT_REST
    }

    /// The error with the solver's own iteration count (or after the last
    /// measured iteration, if fewer were measured).
    pub fn error(&self) -> f64 {
        let k = self.iterations.min(self.errors.len() - 1);
        self.errors[k]
    }

    /// The fewest iterations whose step is within `tolerance`, if any
    /// measured one is.
    pub fn iterations_to(&self, tolerance: f64) -> Option<usize> {
        self.errors.iter().position(|&e| e <= tolerance)
    }
}

/// The iterations of the solver's own step that Newton's reference starts
/// from (see `Reference::unless`): with Anderson a step within about 1e-6 of
/// the exact one on the benchmark scenes, for 20 iterations' time, far less
/// than one Newton iteration where Newton is slow.
const GUESS_ITERATIONS: usize = 20;

/// Measures one step (the first substep of the next frame) from `state`
/// with up to `max_iterations` iterations of `solver`'s method, against a
/// converged Newton solve of the same step. Collisions are left out: the
/// reference is the unconstrained implicit Euler step. `solver` is not
/// changed (a clone steps).
///
/// # Errors
/// [`SolverError::Factorization`] if a Newton matrix cannot be factorised,
/// [`SolverError::OutOfMemory`] if its factor would not fit, or
/// [`SolverError::BlowUp`] if the step diverges.
pub fn measure(
    solver: &Solver,
    state: &State,
    max_iterations: usize,
) -> Result<Accuracy, SolverError> {
    let reference = Reference::new(solver, state)?;
    measure_against(solver, state, &reference, max_iterations)
}

/// The Newton solution of the next step from a state, to measure several
/// solvers (methods) against.
pub struct Reference {
    positions: Vec<Vec3>,
    iterations: usize,
    converged: bool,
    ms: f64,
}

impl Reference {
    /// Solves the first substep of the next frame of `solver`'s model and
    /// parameters from `state` exactly (without collisions).
    ///
    /// # Errors
    /// [`SolverError::Factorization`] if a Newton matrix cannot be
    /// factorised, [`SolverError::OutOfMemory`] if its factor would not fit.
    pub fn new(solver: &Solver, state: &State) -> Result<Self, SolverError> {
        Self::unless(solver, state, &AtomicBool::new(false))
    }

    /// [`Reference::new`], given up once `cancel` is set (see
    /// [`newton::step_from`]). Newton starts from the solver's own step of
    /// [`GUESS_ITERATIONS`] (where that lowers the objective more than the
    /// inertial target does), which saves it most of its iterations: on the
    /// 105k-vertex tet body three factorisations of ~50 s each. Should it
    /// not converge from there (non-smooth constraints can keep it from
    /// converging at all), it solves from the target too and keeps the
    /// lower objective, so that an approximate reference is not one biased
    /// towards the PD step it measures.
    fn unless(solver: &Solver, state: &State, cancel: &AtomicBool) -> Result<Self, SolverError> {
        let t = Instant::now();
        let options = NewtonOptions::default();
        let params = substep_params(solver, 1);
        newton::go_on(cancel)?;
        let guess = {
            let mut pd = solver.clone();
            let mut guess = state.clone();
            pd.set_params(&substep_params(solver, GUESS_ITERATIONS))
                .and_then(|()| pd.step(&mut guess))
                .ok()
                .map(|_| guess.positions)
        };
        let solve = |guess: Option<&[Vec3]>| {
            newton::step_from(solver.model(), &params, state, &options, guess, cancel)
        };
        let converged = |step: &newton::NewtonStep| step.iterations < options.max_iterations;
        let mut step = solve(guess.as_deref())?;
        if step.from_guess && !converged(&step) {
            let from_target = solve(None)?;
            // (A NaN objective is not lower.)
            if from_target.objective < step.objective || step.objective.is_nan() {
                step = from_target;
            }
        }
        Ok(Self {
            converged: converged(&step),
            positions: step.positions,
            iterations: step.iterations,
            ms: t.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Wall time of the reference, in milliseconds: the Newton solve and
    /// the solver's step it starts from.
    pub fn ms(&self) -> f64 {
        self.ms
    }
}

/// The solver's parameters for one substep of `iterations`, no colliders.
fn substep_params(solver: &Solver, iterations: usize) -> SimParams {
    SimParams {
        dt: solver.params().substep_dt(),
        substeps: 1,
        iterations: iterations.max(1),
        tolerance: 0.0,
        colliders: Vec::new(),
        ..solver.params().clone()
    }
}

/// [`measure`] against a reference already solved from `state` (for the
/// same model and parameters).
///
/// # Errors
/// [`SolverError::BlowUp`] if the step diverges.
pub fn measure_against(
    solver: &Solver,
    state: &State,
    reference: &Reference,
    max_iterations: usize,
) -> Result<Accuracy, SolverError> {
    let params = substep_params(solver, max_iterations);
    let mut pd = solver.clone();
    if pd.acceleration() == super::Acceleration::Chebyshev && pd.spectral_radius().is_none() {
        // Let it estimate its spectral radius as it would in use (the
        // solver that stepped may have been a clone on another thread).
        let mut ahead = state.clone();
        while pd.spectral_radius().is_none() && ahead.frame < state.frame + 10 {
            pd.step(&mut ahead)?;
        }
    }
    // Where the solver's tolerance stops: a step of the same substep with
    // its iterations and tolerance. (Its criterion is on the accelerated
    // iterate before the safeguard, and a rejection of that iterate goes
    // on, so the accepted iterates alone cannot tell.)
    let tolerance = solver.params().tolerance;
    let mut iterations = solver.params().iterations;
    if tolerance > 0.0 {
        let mut stopping = pd.clone();
        stopping.set_params(&SimParams {
            iterations,
            tolerance,
            ..params.clone()
        })?;
        let report = stopping.step(&mut state.clone())?;
        iterations = report.objective.len() - 1;
    }
    // Same substep: no refactorisation, the Chebyshev estimate is kept.
    pd.set_params(&params)?;
    let mut errors = Vec::with_capacity(params.iterations + 1);
    let mut after = state.clone();
    pd.step_observed(&mut after, &mut |_, x| {
        errors.push(relative_error(x, &reference.positions, &state.positions));
    })?;
    Ok(Accuracy {
        errors,
        iterations,
        newton_iterations: reference.iterations,
        reference_converged: reference.converged,
        newton_ms: reference.ms,
        step: relative_step(&reference.positions, &state.positions),
    })
}

/// The step from `start` to `end` relative to the size of `start` (its
/// bounding box's diagonal), per vertex (root mean square); 0 for no
/// vertices or a body of no size.
fn relative_step(end: &[Vec3], start: &[Vec3]) -> f64 {
    if start.is_empty() {
        return 0.0;
    }
    let (lo, hi) = crate::mesh::bounds(start);
    let size = (hi - lo).norm();
    let squares: f64 = end
        .iter()
        .zip(start)
        .map(|(a, b)| (a - b).norm_squared())
        .sum();
    let step = (squares / start.len() as f64).sqrt();
    if size > 0.0 { step / size } else { 0.0 }
}

/// A measurement to run away from the session (its Newton solve takes
/// milliseconds on a cloth, seconds on the 10k-vertex tet cube and two
/// minutes and 6.5 GB on the 105k-vertex tet body): a copy of the solver and
/// the state.
pub struct Task {
    solver: Solver,
    state: State,
    max_iterations: usize,
}

impl Task {
    /// [`measure`] of a copy of `solver` from `state`.
    pub fn new(solver: &Solver, state: &State, max_iterations: usize) -> Self {
        Self {
            solver: solver.clone(),
            state: state.clone(),
            max_iterations,
        }
    }

    /// The frame the measurement starts from.
    pub fn frame(&self) -> u64 {
        self.state.frame
    }

    /// Measures, giving up once `cancel` is set (looked at before each of
    /// the Newton solve's factorisations, which take nearly all its time,
    /// and before the solver's steps).
    ///
    /// # Errors
    /// As [`measure`], and [`SolverError::Cancelled`] once `cancel` is set.
    pub fn run(self, cancel: &AtomicBool) -> Result<Accuracy, SolverError> {
        let reference = Reference::unless(&self.solver, &self.state, cancel)?;
        newton::go_on(cancel)?;
        measure_against(&self.solver, &self.state, &reference, self.max_iterations)
    }
}

/// A [`Task`] running on its own thread, so a front end keeps drawing.
/// Cancelled or dropped before it finishes, it stops at its Newton solve's
/// next factorisation (or before the solver's steps) instead of running on
/// for minutes with gigabytes of memory.
pub struct Running {
    frame: u64,
    started: Instant,
    handle: std::thread::JoinHandle<Result<Accuracy, SolverError>>,
    cancel: CancelOnDrop,
}

/// Sets its flag when dropped.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Running {
    /// Starts `task` on a new thread.
    pub fn spawn(task: Task) -> Self {
        Self::spawn_with(task, Arc::new(AtomicBool::new(false)))
    }

    /// [`Running::spawn`] with the flag that cancels it.
    fn spawn_with(task: Task, cancel: Arc<AtomicBool>) -> Self {
        let flag = Arc::clone(&cancel);
        Self {
            frame: task.frame(),
            started: Instant::now(),
            handle: std::thread::spawn(move || task.run(&flag)),
            cancel: CancelOnDrop(cancel),
        }
    }

    /// Asks it to stop, as dropping it does, while it can still be waited
    /// for ([`Running::is_finished`]).
    pub fn cancel(&self) {
        self.cancel.0.store(true, Ordering::Relaxed);
    }

    /// How long it has been running.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the result is ready ([`Running::join`] will not wait).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// The frame measured from, and the result (waits for it): the
    /// measurement, or what went wrong.
    pub fn join(self) -> (u64, Result<Accuracy, String>) {
        let result = match self.handle.join() {
            Ok(result) => result.map_err(|e| failure(&e)),
            Err(_) => Err("the accuracy measurement failed unexpectedly".to_owned()),
        };
        (self.frame, result)
    }
}

/// What went wrong, for a status line: a factor that does not fit is the
/// Newton reference's, whose matrix is several times the simulation's
/// (3 × 3 blocks), not the model's.
fn failure(error: &SolverError) -> String {
    match error {
        SolverError::OutOfMemory { needed, available } => format!(
            "the exact (Newton) step of this model needs about {} and {} is free, so its \
             accuracy cannot be measured on this machine (the simulation is not affected)",
            super::memory::size(*needed),
            super::memory::size(*available)
        ),
        other => other.to_string(),
    }
}

/// One line for a status bar: `error 4.4e-4 at 10 its; 1e-3 in 8 its,
/// 1e-5 in 18 its` ("> N its" when not reached within the measured ones).
impl std::fmt::Display for Accuracy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.at_rest() {
            return f.write_str(
                "at rest: the exact step moves the body by less than 1e-12 of its size, \
                 so there is no error to measure",
            );
        }
        let measured = self.errors.len() - 1;
        write!(
            f,
            "error {:.1e} at {} its",
            self.error(),
            self.iterations.min(measured)
        )?;
        for (k, tolerance) in [(0, 1e-3), (1, 1e-5)] {
            f.write_str(if k == 0 { "; " } else { ", " })?;
            match self.iterations_to(tolerance) {
                Some(n) => write!(f, "{tolerance:.0e} in {n} its")?,
                None => write!(f, "{tolerance:.0e} in > {measured} its")?,
            }
        }
        if self.step < NEARLY_AT_REST {
            write!(
                f,
                " (nearly at rest: the step is {:.0e} of the body's size, so a tiny error is a \
                 large part of it)",
                self.step
            )?;
        }
        if !self.reference_converged {
            write!(
                f,
                " (Newton stopped after {} iterations: the reference is approximate)",
                self.newton_iterations
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Scene;
    use crate::solver::Acceleration;

    /// The 10 × 10 benchmark cloth after 5 frames.
    fn hanging_cloth(acceleration: Acceleration) -> (Solver, State) {
        let scene = Scene {
            acceleration,
            ..Scene::cloth(10)
        };
        let model = scene.model();
        let mut solver = Solver::new(&model, &scene.params()).unwrap();
        let mut state = State::at_rest(&model);
        for _ in 0..5 {
            solver.step(&mut state).unwrap();
        }
        (solver, state)
    }

    #[test]
    fn errors_fall_towards_the_reference_and_the_solver_is_unchanged() {
        for method in Acceleration::ALL {
            let (solver, state) = hanging_cloth(method);
            let before = state.clone();
            let accuracy = measure(&solver, &state, 400).unwrap();
            assert_eq!(state, before);
            assert_eq!(solver.params().iterations, 10);
            assert_eq!(accuracy.errors.len(), 401);
            assert_eq!(accuracy.errors[10], accuracy.error());
            // The initial guess is far off; many iterations converge.
            assert!(
                accuracy.errors[0] > 1e-3,
                "{method}: {:e}",
                accuracy.errors[0]
            );
            assert!(
                accuracy.errors[400] < 1e-5,
                "{method}: {:e}",
                accuracy.errors[400]
            );
            let k = accuracy.iterations_to(1e-3).unwrap();
            assert!(accuracy.errors[k] <= 1e-3 && (k == 0 || accuracy.errors[k - 1] > 1e-3));
            assert!(accuracy.reference_converged);
            assert!(!accuracy.at_rest());
            let line = accuracy.to_string();
            assert!(line.starts_with("error ") && line.contains(&format!("1e-3 in {k} its")));
            assert!(!line.contains("approximate"));
        }
    }

    /// A body at rest (no gravity, no motion: the exact step is zero, or
    /// round-off for a settled one) is said to be at rest: its errors are
    /// ratios of round-off (a settled cloth read "error 1.0e0, 1e-3 in > 100
    /// its").
    #[test]
    fn a_body_at_rest_has_no_error_to_measure() {
        let scene = Scene::cloth(10);
        let model = scene.model();
        let params = SimParams {
            gravity: crate::mesh::Vec3::zeros(),
            ..scene.params()
        };
        let solver = Solver::new(&model, &params).unwrap();
        let state = State::at_rest(&model);
        let accuracy = measure(&solver, &state, 20).unwrap();
        assert!(accuracy.at_rest());
        assert!(accuracy.to_string().starts_with("at rest"), "{accuracy}");
        // Round-off of a settled body is still rest: the step moves every
        // vertex by 1e-14 of the body's size (1 m); the first step at the
        // shortest `dt` (1e-11 m) is not.
        let size = 1.0;
        let nudged: Vec<Vec3> = state
            .positions
            .iter()
            .map(|x| x + Vec3::repeat(1e-14 * size))
            .collect();
        assert!(relative_step(&nudged, &state.positions) < AT_REST);
        let moved: Vec<Vec3> = state
            .positions
            .iter()
            .map(|x| x + Vec3::new(0.0, -1e-11 * size, 0.0))
            .collect();
        assert!(relative_step(&moved, &state.positions) >= AT_REST);
        let (lo, hi) = crate::mesh::bounds(&state.positions);
        let relative = relative_step(&moved, &state.positions) * (hi - lo).norm();
        // (Within the round-off of adding 1e-11 to coordinates of 0.5.)
        assert!((relative / 1e-11 - 1.0).abs() < 1e-6, "{relative:e}");
        // A step too small to see is said to be one.
        let line = |step: f64| {
            Accuracy {
                errors: vec![1.0, 0.5],
                step,
                ..accuracy.clone()
            }
            .to_string()
        };
        assert!(
            line(1e-9).contains("nearly at rest: the step is 1e-9"),
            "{}",
            line(1e-9)
        );
        assert!(!line(1e-4).contains("rest"), "{}", line(1e-4));
    }

    /// With a tolerance, the figure is at the iteration where the step stops.
    #[test]
    fn with_a_tolerance_the_error_is_where_the_step_stops() {
        let (mut solver, state) = hanging_cloth(Acceleration::Anderson);
        let params = SimParams {
            iterations: 40,
            tolerance: 1e-3,
            ..solver.params().clone()
        };
        solver.set_params(&params).unwrap();
        let accuracy = measure(&solver, &state, 40).unwrap();
        let report = solver.clone().step(&mut state.clone()).unwrap();
        let ran = report.objective.len() - 1;
        assert!(ran < 40, "{ran}");
        assert_eq!(accuracy.iterations, ran);
        assert_eq!(accuracy.error(), accuracy.errors[ran]);
    }

    /// The figure is the real error: a step of `k` iterations lands exactly
    /// where the measurement says.
    #[test]
    fn the_error_after_k_iterations_is_that_of_a_k_iteration_step() {
        for method in Acceleration::ALL {
            let (solver, state) = hanging_cloth(method);
            let accuracy = measure(&solver, &state, 30).unwrap();
            let params = SimParams {
                iterations: 7,
                ..solver.params().clone()
            };
            let mut seven = solver.clone();
            seven.set_params(&params).unwrap();
            let mut after = state.clone();
            seven.step(&mut after).unwrap();
            // (The same reference: Newton's own stopping leaves it within
            // ~1e-10 of the step, which from another start shows here.)
            let reference = Reference::new(&solver, &state).unwrap();
            let error = relative_error(&after.positions, &reference.positions, &state.positions);
            // It is Newton's step from the inertial target, within that.
            let from_target = newton::step(
                solver.model(),
                solver.params(),
                &state,
                &NewtonOptions::default(),
            )
            .unwrap();
            let apart = relative_error(
                &reference.positions,
                &from_target.positions,
                &state.positions,
            );
            assert!(apart < 1e-8, "{method}: {apart:e}");
            assert!(
                (error - accuracy.errors[7]).abs() <= 1e-9 * error,
                "{method}: {error:e} vs {:e}",
                accuracy.errors[7]
            );
        }
    }

    /// A measurement given up on: the Newton solve looks at the flag before
    /// its factorisations, so a set flag ends it before the first; a
    /// [`Running`] dropped unfinished sets its thread's flag.
    #[test]
    fn a_cancelled_measurement_gives_up_and_a_dropped_one_is_cancelled() {
        let (solver, state) = hanging_cloth(Acceleration::Anderson);
        let task = Task::new(&solver, &state, 10);
        let cancelled = task.run(&AtomicBool::new(true));
        assert!(
            matches!(cancelled, Err(SolverError::Cancelled)),
            "{cancelled:?}"
        );
        let task = Task::new(&solver, &state, 10);
        assert!(task.run(&AtomicBool::new(false)).is_ok());

        let flag = Arc::new(AtomicBool::new(false));
        let running = Running::spawn_with(Task::new(&solver, &state, 10), Arc::clone(&flag));
        drop(running);
        assert!(flag.load(Ordering::Relaxed));
        let flag = Arc::new(AtomicBool::new(false));
        let running = Running::spawn_with(Task::new(&solver, &state, 10), Arc::clone(&flag));
        running.cancel();
        assert!(flag.load(Ordering::Relaxed));
        // A finished one joins with its result (its flag set after).
        let running = Running::spawn(Task::new(&solver, &state, 10));
        let (frame, result) = running.join();
        assert_eq!(frame, state.frame);
        assert!(result.is_ok(), "{result:?}");
    }

    /// A Newton factor that does not fit is reported as the measurement's,
    /// not as the model being too large to simulate.
    #[test]
    fn a_reference_too_large_for_memory_says_so() {
        let message = failure(&SolverError::OutOfMemory {
            needed: 6_500_000_000,
            available: 2_000_000_000,
        });
        assert_eq!(
            message,
            "the exact (Newton) step of this model needs about 6.50 GB and 2.00 GB is free, \
             so its accuracy cannot be measured on this machine (the simulation is not affected)"
        );
        assert_eq!(failure(&SolverError::Cancelled), "cancelled");
    }
}
