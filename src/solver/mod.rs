//! The projective-dynamics solver (Liu et al. 2013; Bouaziz et al. 2014).
//!
//! Each step minimises `g(x) = 1/(2h²) ‖x − s‖²_M + Σ_c w_c/2 ‖G_c x − p_c‖²`
//! by alternating a local step (project every constraint, fused with the
//! right-hand side accumulation) and a global step (two triangular solves with
//! the prefactored `A = M/h² + Σ w Gᵀ G`, 3 columns at once). Hard-pinned
//! vertices are eliminated from the unknowns; see physics.md. Vertices
//! resting on the ground add `Σ w/2 (y − height)²` to `g`, and y is then
//! solved with a second factor of `A` plus those pins; those that static
//! friction holds add `Σ w/2 ‖(x, z) − anchor‖²`, and x and z solve with
//! `A` plus their pins (see `Solver::collide` and `collide.rs`).

pub mod accelerate;
pub mod accuracy;
mod batch;
pub mod collide;
mod columns;
pub mod energy;
mod guess;
pub mod memory;
mod mixed;
pub mod newton;
pub mod params;
pub mod project;
pub mod relax;
mod system;
mod tets;
mod update;
pub(crate) use update::LOW_RANK;
mod updown;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

pub use accelerate::{Acceleration, CARRIED_SECANTS, Secants};
pub use collide::{CONTACT_STIFFNESS, Collider, Contact, Resolved, drawn_positions};
pub use energy::Energies;
pub use guess::Extrapolation;
pub use mixed::{MIXED_FROM_ENTRIES, Precision, RELAXED_FROM_ENTRIES};
pub use params::SimParams;
pub use system::FactorStats;

use crate::mesh::Vec3;
use nalgebra::Matrix3;
use rayon::prelude::*;

use crate::model::{Model, Spring, SpringKind, TetLimits};
use accelerate::Accelerator;
use system::System;
use tets::{TetProjections, TetProjector};

/// The most parts a tet body's local step is split into (each keeps a
/// buffer of the model's size: 2.5 MB on the 105k-vertex body).
pub const MAX_PARTS: usize = 64;

/// The thread count new solvers split their work for (0: the pool's).
static DEFAULT_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Makes new solvers split their parallel work for `threads` threads
/// (0: as many as the rayon pool has), whatever the pool's size: the
/// command line's `--threads`, which runs on a pool no larger than the
/// machine's CPUs but keeps the frames of the count asked for.
pub fn set_default_threads(threads: usize) {
    DEFAULT_THREADS.store(threads, Ordering::Relaxed);
}

/// What a step starts from: the positions and velocities of every vertex,
/// and what the last steps learned (the extrapolation history and
/// Anderson's carried secant pairs and last evaluation), so a state
/// determines its next step whichever solver of its matrix takes it.
#[derive(Debug, PartialEq)]
pub struct State {
    /// Current positions.
    pub positions: Vec<Vec3>,
    /// Current velocities.
    pub velocities: Vec<Vec3>,
    /// What the forces did in the last two substeps and the predictors
    /// fitted to it: the next substep's initial guess extrapolates it (and
    /// the total energy its energy guard compares the next substep's with).
    pub extrapolation: Extrapolation,
    /// The secant pairs and the last evaluation of the map that Anderson
    /// acceleration carries into the next substep (empty for the other
    /// methods).
    pub secants: Secants,
    /// The vertices resting on the ground, by vertex: the next substep holds
    /// them on it inside the solve.
    pub contacts: Vec<Contact>,
    /// A spring model's sticking contacts that the last substep's solve
    /// lifted off their collider by less than a substep's fall (`g h²`), by
    /// vertex: one that lands again in the next substep, held by friction,
    /// sticks to the same anchor if it is near.
    pub lifted: Vec<Contact>,
    /// Simulated time in seconds.
    pub time: f64,
    /// Frames stepped.
    pub frame: u64,
}

impl Clone for State {
    fn clone(&self) -> Self {
        Self {
            positions: self.positions.clone(),
            velocities: self.velocities.clone(),
            extrapolation: self.extrapolation.clone(),
            secants: self.secants.clone(),
            contacts: self.contacts.clone(),
            lifted: self.lifted.clone(),
            time: self.time,
            frame: self.frame,
        }
    }

    /// Reuses `self`'s allocations: the editor's simulation thread hands
    /// the UI a copy of every frame's state, and a fresh copy of a
    /// 62,500-vertex cloth's (its carried secant pairs most of it) took
    /// 11.6 ms with the free of the one it replaced (3.0 ms reused).
    fn clone_from(&mut self, source: &Self) {
        self.positions.clone_from(&source.positions);
        self.velocities.clone_from(&source.velocities);
        self.extrapolation.copy_from(&source.extrapolation);
        self.secants.copy_from(&source.secants);
        self.contacts.clone_from(&source.contacts);
        self.lifted.clone_from(&source.lifted);
        self.time = source.time;
        self.frame = source.frame;
    }
}

impl State {
    /// The model at rest: rest positions, zero velocities.
    pub fn at_rest(model: &Model) -> Self {
        Self {
            positions: model.rest.clone(),
            velocities: vec![Vec3::zeros(); model.rest.len()],
            extrapolation: Extrapolation::new(model.rest.len()),
            secants: Secants::default(),
            contacts: Vec::new(),
            lifted: Vec::new(),
            time: 0.0,
            frame: 0,
        }
    }
}

/// Wall-clock time per phase of one frame, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Timings {
    /// Projections and right-hand side accumulation.
    pub local_ms: f64,
    /// Triangular solves.
    pub global_ms: f64,
    /// Everything else (inertial target, collisions, energies, checks).
    pub other_ms: f64,
}

impl Timings {
    /// Sum of the phases.
    pub fn total_ms(&self) -> f64 {
        self.local_ms + self.global_ms + self.other_ms
    }
}

/// What happened in one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Energies at the end of the frame.
    pub energies: Energies,
    /// The PD objective `g` at the start of the last substep and after each
    /// of its iterations (`iterations + 1` values, fewer when
    /// [`SimParams::tolerance`] stopped it early; non-increasing with every
    /// [`Acceleration`]: the safeguard rejects an iterate that raised it).
    pub objective: Vec<f64>,
    /// Accelerated iterates the safeguard rejected in this frame (each
    /// cost one extra local step).
    pub rejected: usize,
    /// Time per phase.
    pub timings: Timings,
    /// Vertices in contact with a collider in the last substep: resting on
    /// the ground, or pushed out of a collider.
    pub contacts: usize,
    /// With [`Solver::set_trace`] on: `g(x, p)` after every half step of the
    /// last substep, `g(x₀, p₀), g(x₁, p₀), g(x₁, p₁), …` (`2n + 1` values
    /// for the `n` iterations it ran; non-increasing for
    /// [`Acceleration::Plain`], where `x_{k+1}` is the global step's output
    /// — an accelerated iterate is not).
    /// Empty otherwise.
    pub trace: Vec<f64>,
}

/// Why a step or a solver setup failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolverError {
    /// A parameter is out of its valid range.
    #[error("invalid simulation parameter: {0}")]
    InvalidParameter(String),
    /// The system matrix could not be factorised.
    #[error(
        "the system matrix cannot be factorised ({0}): its weights are too large against the \
         masses over dt² for double precision, or a mass is zero; lower the stiffest weight, \
         raise the density or shorten dt"
    )]
    Factorization(String),
    /// The factor of the system matrix would not fit in the memory the
    /// machine has free (checked before it is allocated).
    #[error(
        "the model is too large for this machine: factorising its system needs about {} \
         and {} is free; use a coarser mesh or tet resolution",
        memory::size(*.needed),
        memory::size(*.available)
    )]
    OutOfMemory {
        /// Bytes the factorisation would take.
        needed: u64,
        /// Bytes free.
        available: u64,
    },
    /// A long computation (the Newton reference of the accuracy figure)
    /// was given up on request.
    #[error("cancelled")]
    Cancelled,
    /// The simulation diverged; the state was left at the last good frame.
    #[error(
        "simulation blew up at frame {frame}: {reason}; the state stays at the last good frame \
         ({remedy})"
    )]
    BlowUp {
        /// The frame that failed.
        frame: u64,
        /// What was detected.
        reason: String,
        /// What to change.
        remedy: Remedy,
    },
}

/// What to change after a [`SolverError::BlowUp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remedy {
    /// The steps cannot follow the motion.
    Steps,
    /// The body started a step inside a collider, whose push out did the
    /// work (QA: a torus started 3 m into the ground was told it blew up
    /// "with nothing doing work on the body", and to shorten its steps).
    Placement,
}

impl std::fmt::Display for Remedy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Remedy::Steps => {
                "try a smaller time step, more substeps or iterations, or lower the stiffest weight"
            }
            Remedy::Placement => "move the body or the collider so that it starts outside",
        })
    }
}

/// A prefactored projective-dynamics solver for one [`Model`]. A clone is
/// an independent solver in the same state (a front end steps one on a
/// worker thread).
#[derive(Clone)]
pub struct Solver {
    model: Model,
    params: SimParams,
    system: System,
    // Scratch, allocated once.
    start: Vec<Vec3>,
    target: Vec<Vec3>,
    constant: Vec<Vec3>,
    rhs: Vec<Vec3>,
    x: Vec<Vec3>,
    v: Vec<Vec3>,
    /// The state's contacts as they are stepped, the pins of the substep's
    /// solve made from them ((vertex, weight), in the same order), and,
    /// within `collide`, which vertices it kept resting.
    contacts: Vec<Contact>,
    /// The state's lifted contacts as they are stepped ([`State::lifted`]).
    lifted: Vec<Contact>,
    pins: Vec<(u32, f64)>,
    /// The pins of the contacts' x and z (all but a ground's sliding ones).
    stick_pins: Vec<(u32, f64)>,
    /// The vertices a tet body's substep lands because one of its solves
    /// carried them into a collider (vertex, collider), by vertex, and
    /// those of them whose pins then held them in, by vertex (see
    /// `Solver::land_again`).
    entering: Vec<(u32, u32)>,
    released: Vec<u32>,
    /// The kinetic friction on each contact in the substep's solve (N; zero
    /// on a sticking one, a new one and a spring model's), in the order of
    /// `contacts`: a constant force in the right-hand side, `-f·(x - q)` in
    /// the objective.
    kinetic: Vec<Vec3>,
    /// The piece (connected component of the tets) of each vertex of a tet
    /// body, and how many there are (1 for a spring model, whose vertices
    /// have none): each is weighed on a ground alone.
    pieces: Vec<u32>,
    piece_count: usize,
    /// Per collider and piece (see [`slot`]), within `collide`: the share
    /// of its contacts' pushes that is the piece's net load on it (see
    /// [`Solver::weigh_grounds`]).
    shares: Vec<f64>,
    /// Per collider and piece, within `collide`: whether static friction
    /// holds the piece on it (see [`Solver::weigh_grounds`]).
    holds: Vec<bool>,
    /// Per collider and piece, within `weigh_grounds`: the net load, the
    /// pushes and the friction of its contacts.
    loads: Vec<(f64, f64, Vec3)>,
    resting: Vec<bool>,
    /// Per vertex of a tet body, half its shortest rest edge: the most it
    /// may move into a collider in a substep and still land inside the
    /// solve (see `Solver::pin_contacts`); empty for a spring model.
    reach: Vec<f64>,
    /// Within a substep's `collide`: the motion friction took off a spring
    /// model's contacts, by vertex, taken off their velocities (not their
    /// positions, which stay where the solve put them).
    slowed: Vec<(u32, Vec3)>,
    /// The state's extrapolation history as it is stepped.
    history: Extrapolation,
    /// The iterate before the last global step (for the tolerance).
    previous: Vec<Vec3>,
    /// The global step's output from the last accepted iterate (the
    /// safeguard's fallback).
    fallback: Vec<Vec3>,
    accel: Accelerator,
    diagonal: f64,
    /// The most total energy the next frame may end with (see
    /// [`Solver::check_runaway`]).
    ceiling: Ceiling,
    /// Projections of the last local step, kept only when tracing.
    projections: Option<Stored>,
    /// One right-hand-side buffer per part of the parallel local step
    /// (empty: serial), each with its part's energies.
    partials: Vec<Part>,
    /// Where each tet's SVD starts (its last `V`; see [`tets::Starts`]),
    /// when the projections take SVDs: one per tet, padded to as many as
    /// the parallel local step's chunks hold ([`fit_starts`]).
    starts: Vec<Matrix3<f64>>,
    /// Threads of the solver's parallel work.
    threads: usize,
}

/// How fast, in `g h`, a tet body's vertex may approach a collider and still land
/// inside the solve (see `Solver::pin_contacts`).
const LANDING_SPEED: f64 = 4.0;

/// Half the shortest rest edge at each vertex of `model`'s tets (empty
/// without tets): see [`Solver::pin_contacts`].
fn landing_reach(model: &Model) -> Vec<f64> {
    if model.tets.is_empty() {
        return Vec::new();
    }
    let mut reach = vec![f64::INFINITY; model.vertex_count()];
    for tet in &model.tets {
        for (a, b) in crate::mesh::tet::TET_EDGES {
            let (a, b) = (tet.vertices[a] as usize, tet.vertices[b] as usize);
            let half = 0.5 * (model.rest[a] - model.rest[b]).norm();
            reach[a] = reach[a].min(half);
            reach[b] = reach[b].min(half);
        }
    }
    reach
}

/// The most solves of one substep of a tet body (see
/// `Solver::land_again`).
const LANDING_SOLVES: usize = 4;

/// The weight, over its vertex's `m/h²`, of a spring model's contact
/// sliding on a sphere (every other contact's is [`CONTACT_STIFFNESS`]).
///
/// Such a pin holds its vertex in every coordinate (a sphere's normal is
/// not a coordinate axis), toward the sphere point under the last iterate:
/// along the surface it lags one iteration behind, and a pin a thousand
/// times `m/h²` let a vertex move a thousandth of its way along the surface
/// per iteration. A light cloth on a ball of radius 100 m under gravity
/// tilted past its friction (slope 0.35, friction 0.1) moved 0.07 mm in 1.5
/// s, where on the ground it slid 1.85 m; at 10 it slides 1.88 m. A pin
/// this soft lets its vertex sink a tenth of an unsupported step into the
/// sphere, pushed out after the solve: a cloth has no layer above it to
/// crush (a tet box dropped on a ball stored 2–3 times as much energy in
/// the impact with pins this soft), and the 1 m cloth dropped on a ball
/// then never rises above its start (0.43 J at 1,000).
const SLIDING_ON_SPHERE: f64 = 10.0;

/// A sticking contact pulled along the ground harder than friction allows
/// drags its anchor: the anchor follows it to where the pin pulls back with
/// friction's force, so the contact slides by the excess and the sticking
/// set, whose every change is a numeric factorisation, stays (a body at
/// rest has contacts at the friction limit; letting them go and holding
/// them again cost the jelly a factorisation per frame, a fifth of its frame
/// time). Pulled harder than this times the limit (a body dragged or pushed
/// over: the pin held it with that force in the solve), it slides free; on
/// a ground under a piece of a tet body (or under a cloth, one piece) all
/// its sticking contacts also slide free when together they pull harder
/// than friction can hold the piece (see `Solver::weigh_grounds`).
const STICK_SLACK: f64 = 2.0;

/// The index of contact `c`'s collider and piece in [`Solver`]'s per
/// collider and piece vectors (`pieces`: each vertex's, empty for a spring
/// model, whose contacts all count as piece 0).
fn slot(pieces: &[u32], piece_count: usize, c: &Contact) -> usize {
    let piece = pieces.get(c.vertex as usize).map_or(0, |&p| p as usize);
    c.collider as usize * piece_count + piece
}

/// The projections of one local step, in constraint order: springs by
/// kind then soft pins in `points`, tets in `tets`.
#[derive(Clone, Default)]
struct Stored {
    points: Vec<Vec3>,
    tets: Vec<TetProjections>,
}

fn check_params(model: &Model, params: &SimParams) -> Result<(), SolverError> {
    let bad = |what: String| Err(SolverError::InvalidParameter(what));
    if !(params.dt.is_finite() && params.dt > 0.0) {
        return bad(format!("time step {} must be positive", params.dt));
    }
    if !(1..=SimParams::MAX_SUBSTEPS).contains(&params.substeps) {
        return bad(format!(
            "substeps {} must lie in [1, {}]",
            params.substeps,
            SimParams::MAX_SUBSTEPS
        ));
    }
    if params.iterations > SimParams::MAX_ITERATIONS {
        return bad(format!(
            "iterations {} must be at most {}",
            params.iterations,
            SimParams::MAX_ITERATIONS
        ));
    }
    if !(params.tolerance.is_finite() && params.tolerance >= 0.0) {
        return bad(format!(
            "tolerance {} must be finite and at least 0",
            params.tolerance
        ));
    }
    if !(0.0..=1.0).contains(&params.damping) {
        return bad(format!("damping {} must be in [0, 1]", params.damping));
    }
    if !params.gravity.iter().all(|g| g.is_finite()) {
        return bad("gravity must be finite".into());
    }
    let w = &model.weights;
    for (name, value) in [
        ("structural", w.structural),
        ("shear", w.shear),
        ("bending", w.bending),
        ("attachment", w.attachment),
        ("strain", w.strain),
        ("strain limit", w.strain_limit),
        ("volume", w.volume),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            return bad(format!(
                "{name} weight {value} must be finite and non-negative"
            ));
        }
    }
    check_limits(&model.limits)?;
    if let Some(i) = model
        .masses
        .iter()
        .position(|m| !(m.is_finite() && *m > 0.0))
    {
        return bad(format!(
            "vertex {i} has mass {}; masses must be positive",
            model.masses[i]
        ));
    }
    Ok(())
}

/// The tet limits must bracket the rest state: `0 ≤ σ_min ≤ 1 ≤ σ_max` and
/// `0 < v_min ≤ 1 ≤ v_max`, all finite.
fn check_limits(limits: &TetLimits) -> Result<(), SolverError> {
    let TetLimits {
        strain_min,
        strain_max,
        volume_min,
        volume_max,
    } = *limits;
    if !((0.0..=1.0).contains(&strain_min) && strain_max.is_finite() && strain_max >= 1.0) {
        return Err(SolverError::InvalidParameter(format!(
            "strain limits [{strain_min}, {strain_max}] must satisfy 0 ≤ σ_min ≤ 1 ≤ σ_max < ∞"
        )));
    }
    if !(volume_min > 0.0 && volume_min <= 1.0 && volume_max.is_finite() && volume_max >= 1.0) {
        return Err(SolverError::InvalidParameter(format!(
            "volume limits [{volume_min}, {volume_max}] must satisfy 0 < v_min ≤ 1 ≤ v_max < ∞"
        )));
    }
    Ok(())
}

impl Solver {
    /// Assembles, orders and factorises the system for `model` and `params`.
    ///
    /// # Errors
    /// [`SolverError::InvalidParameter`] for a non-positive time step or mass,
    /// a negative or non-finite weight, or tet limits that exclude the rest
    /// state; [`SolverError::Factorization`] if the matrix is not positive
    /// definite.
    pub fn new(model: &Model, params: &SimParams) -> Result<Self, SolverError> {
        check_params(model, params)?;
        let system = System::new(model, params.substep_dt())?;
        let m = model.vertex_count();
        let (lo, hi) = crate::mesh::bounds(&model.rest);
        let (pieces, piece_count) = if model.tets.is_empty() {
            (Vec::new(), 1)
        } else {
            crate::mesh::topology::component_labels(m, model.tets.iter().map(|t| &t.vertices[..]))
        };
        let mut solver = Self {
            model: model.clone(),
            params: params.clone(),
            system,
            start: vec![Vec3::zeros(); m],
            target: vec![Vec3::zeros(); m],
            contacts: Vec::new(),
            lifted: Vec::new(),
            pins: Vec::new(),
            stick_pins: Vec::new(),
            entering: Vec::new(),
            released: Vec::new(),
            kinetic: Vec::new(),
            pieces,
            piece_count,
            shares: Vec::new(),
            holds: Vec::new(),
            loads: Vec::new(),
            resting: vec![false; m],
            reach: landing_reach(model),
            slowed: Vec::new(),
            constant: vec![Vec3::zeros(); m],
            rhs: vec![Vec3::zeros(); m],
            x: vec![Vec3::zeros(); m],
            v: vec![Vec3::zeros(); m],
            history: Extrapolation::new(m),
            previous: vec![Vec3::zeros(); m],
            fallback: vec![Vec3::zeros(); m],
            accel: Accelerator::new(params.acceleration, m),
            projections: None,
            partials: Vec::new(),
            starts: Vec::new(),
            threads: 1,
            diagonal: (hi - lo).norm().max(f64::MIN_POSITIVE),
            ceiling: Ceiling::Measure,
        };
        solver.set_threads(0);
        Ok(solver)
    }

    /// The model being simulated.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The parameters in force.
    pub fn params(&self) -> &SimParams {
        &self.params
    }

    /// Records `g` after every half step in [`StepReport::trace`] (costs a
    /// buffer of projections and one extra energy pass per iteration; for
    /// tests and diagnostics).
    pub fn set_trace(&mut self, on: bool) {
        self.projections = on.then(Stored::default);
    }

    /// The system matrix `A = M/h² + Σ w Gᵀ G` over the unknowns (the
    /// vertices that are not hard-pinned, in vertex order), as a full
    /// symmetric `n × n` matrix: for benchmarks and external solvers.
    pub fn system_matrix(&self) -> nalgebra_sparse::CscMatrix<f64> {
        self.system.matrix()
    }

    /// Splits the solver's parallel work for `threads` threads of the
    /// current rayon pool (1: serial; 0: [`set_default_threads`]'s count,
    /// else as many as the pool has; a new solver takes 0): the local step
    /// of a model with tets, and a mixed-precision global solve, which runs
    /// two subtrees of its elimination tree on two threads. Tet projections
    /// pay for the threads (tet12: 12.7 → 8.9 ms per frame on 2 cores);
    /// spring projections are too cheap to pay for per-thread buffers
    /// (cloth250: 41 → 49 ms local step), so a spring-only model's local
    /// step stays on one thread.
    ///
    /// The split, not the pool, decides the round-off: a tet body's local
    /// step sums its contributions in one part per thread (at most
    /// [`MAX_PARTS`], which is then the count [`Solver::threads`] says), so
    /// the same count gives the same frames bit for bit on a pool of any
    /// size (a smaller one runs the parts in turn).
    pub fn set_threads(&mut self, threads: usize) {
        let threads = match (threads, DEFAULT_THREADS.load(Ordering::Relaxed)) {
            (0, 0) => rayon::current_num_threads(),
            (0, default) => default,
            (threads, _) => threads,
        };
        let threads = threads.min(MAX_PARTS);
        self.threads = threads;
        let m = self.model.vertex_count();
        self.partials = if threads > 1 && !self.model.tets.is_empty() {
            vec![
                Part {
                    rhs: vec![Vec3::zeros(); m],
                    energies: Energies::default(),
                };
                threads
            ]
        } else {
            Vec::new()
        };
    }

    /// Threads of the solver's parallel work.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Solves the global step in `precision` (a new solver: [`Precision::Auto`]).
    ///
    /// # Errors
    /// As [`Solver::new`], when it switches between `A` and the relaxed
    /// matrix (a new factorisation); the solver is then unchanged.
    pub fn set_precision(&mut self, precision: Precision) -> Result<(), SolverError> {
        let relaxed = self.system.stats().relaxed;
        self.system.set_precision(precision)?;
        if self.system.stats().relaxed != relaxed {
            // Another iteration map: what the accelerations learnt is stale.
            self.accel.invalidate();
        }
        Ok(())
    }

    /// Size and cost of the current factorisation.
    pub fn factor_stats(&self) -> FactorStats {
        self.system.stats()
    }

    /// Changes weights, masses, time step or substeps: a numeric
    /// refactorisation on the same ordering and sparsity pattern (or a new
    /// factorisation when the bending weight crosses the relaxed matrix's
    /// bound, see [`relax`]).
    ///
    /// # Errors
    /// As [`Solver::new`]; on error the solver is unchanged.
    pub fn refactor(
        &mut self,
        weights: crate::model::Weights,
        masses: Option<&[f64]>,
        params: &SimParams,
    ) -> Result<(), SolverError> {
        let mut model = self.model.clone();
        model.weights = weights;
        if let Some(m) = masses {
            if m.len() != model.masses.len() {
                return Err(SolverError::InvalidParameter(format!(
                    "{} masses given for {} vertices",
                    m.len(),
                    model.masses.len()
                )));
            }
            model.masses.copy_from_slice(m);
        }
        check_params(&model, params)?;
        self.system.refactor(&model, params.substep_dt())?;
        self.model = model;
        self.adopt(params, true);
        Ok(())
    }

    /// Replaces the model by one with the same vertices, constraints and
    /// hard pins — different weights, masses, soft pins or tet limits — and
    /// `params`, with one numeric refactorisation on the same ordering and
    /// pattern (soft pins only add to the diagonal). A change of hard pins
    /// or constraints needs [`Solver::new`].
    ///
    /// # Errors
    /// [`SolverError::InvalidParameter`] if the vertex count, constraints or
    /// hard pins differ, a soft pin names a vertex out of range or has a
    /// non-finite target, or as [`Solver::new`]; on error the solver is
    /// unchanged.
    pub fn refactor_model(&mut self, model: &Model, params: &SimParams) -> Result<(), SolverError> {
        let old = &self.model;
        if model.vertex_count() != old.vertex_count()
            || model.pins.hard_vertices() != old.pins.hard_vertices()
            || model.springs != old.springs
            || model.tets != old.tets
        {
            return Err(SolverError::InvalidParameter(
                "a refactorisation keeps the vertices, constraints and hard pins; \
                 build a new solver instead"
                    .into(),
            ));
        }
        let m = model.vertex_count();
        if model
            .pins
            .soft
            .iter()
            .any(|a| a.vertex as usize >= m || !a.target.iter().all(|c| c.is_finite()))
        {
            return Err(SolverError::InvalidParameter(
                "soft pins must name model vertices and have finite targets".into(),
            ));
        }
        check_params(model, params)?;
        self.system.refactor(model, params.substep_dt())?;
        self.model.clone_from(model);
        self.adopt(params, true);
        Ok(())
    }

    /// Changes parameters that do not touch the matrix (iterations, damping,
    /// gravity, colliders). A changed time step goes through [`Solver::refactor`].
    ///
    /// # Errors
    /// As [`Solver::refactor`].
    pub fn set_params(&mut self, params: &SimParams) -> Result<(), SolverError> {
        if params.substep_dt() != self.params.substep_dt() {
            return self.refactor(self.model.weights, None, params);
        }
        check_params(&self.model, params)?;
        self.adopt(params, false);
        Ok(())
    }

    /// Takes `params`; a new acceleration method starts afresh, and a new
    /// matrix needs a new spectral-radius estimate.
    fn adopt(&mut self, params: &SimParams, refactored: bool) {
        // What a frame may end with is measured again where the energy's
        // terms change (weights, masses, the step, gravity), and from the
        // frame after a moved collider, which does work on the body as a
        // drag does; iterations, damping or acceleration change neither.
        if refactored || params.gravity != self.params.gravity {
            self.ceiling = Ceiling::Measure;
        } else if params.colliders != self.params.colliders {
            self.after_work();
        }
        if params.acceleration != self.accel.method() {
            self.accel = Accelerator::new(params.acceleration, self.model.vertex_count());
        } else if refactored {
            self.accel.invalidate();
        }
        self.params.clone_from(params);
    }

    /// The acceleration in force.
    pub fn acceleration(&self) -> Acceleration {
        self.accel.method()
    }

    /// The spectral radius Chebyshev acceleration uses, once estimated
    /// (the first frames after a build or refactorisation measure it).
    pub fn spectral_radius(&self) -> Option<f64> {
        self.accel.spectral_radius()
    }

    /// Changes the ranges of the strain-limiting and volume constraints (no
    /// refactorisation: only the projections change).
    ///
    /// # Errors
    /// [`SolverError::InvalidParameter`] if a range excludes the rest state
    /// (see [`TetLimits`]); the solver is then unchanged.
    pub fn set_limits(&mut self, limits: TetLimits) -> Result<(), SolverError> {
        check_limits(&limits)?;
        self.model.limits = limits;
        self.ceiling = Ceiling::Measure;
        Ok(())
    }

    /// Moves soft-pin targets (no refactorisation). `targets[k]` belongs to
    /// `model.pins.soft[k]`.
    ///
    /// # Errors
    /// [`SolverError::InvalidParameter`] if the count differs or a target is not finite.
    pub fn set_attachment_targets(&mut self, targets: &[Vec3]) -> Result<(), SolverError> {
        let soft = &mut self.model.pins.soft;
        if targets.len() != soft.len() || !targets.iter().all(|t| t.iter().all(|c| c.is_finite())) {
            return Err(SolverError::InvalidParameter(
                "soft-pin targets must match the soft pins and be finite".into(),
            ));
        }
        let mut moved = false;
        for (a, t) in soft.iter_mut().zip(targets) {
            moved |= a.target != *t;
            a.target = *t;
        }
        // A moved target does work on the body (a drag): the frame after it
        // is where the motion starts. (A grab held still is sent its target
        // every UI frame.)
        if moved {
            self.after_work();
        }
        Ok(())
    }

    /// Starts the measure of what a frame may end with from the frame after
    /// the next step, which something outside did work on.
    fn after_work(&mut self) {
        if self.ceiling != Ceiling::Measure {
            self.ceiling = Ceiling::AfterStep;
        }
    }

    /// Advances `state` by one frame (`substeps` implicit Euler steps).
    ///
    /// # Errors
    /// [`SolverError::BlowUp`] when positions become non-finite or run away;
    /// `state` is then left unchanged, but for Anderson's carried pairs,
    /// which it then carries none of (the step took them and made its own
    /// over them).
    pub fn step(&mut self, state: &mut State) -> Result<StepReport, SolverError> {
        self.step_observed(state, &mut |_, _| {})
    }

    /// [`Solver::step`], calling `observe(k, x)` in every substep with the
    /// accepted iterate after `k = 0, 1, …, n` iterations (before
    /// collisions; `n` is `iterations`, or fewer when the tolerance stopped
    /// the substep): what a substep of `k` iterations would have ended on.
    /// For accuracy measurements.
    ///
    /// # Errors
    /// As [`Solver::step`].
    pub fn step_observed(
        &mut self,
        state: &mut State,
        observe: &mut (dyn FnMut(usize, &[Vec3]) + Send),
    ) -> Result<StepReport, SolverError> {
        if self.threads > 1 {
            // The whole step on a thread of the pool: its parallel parts
            // then split from there, instead of each handing its halves to
            // the pool and sleeping until they are done (a wake-up each, ~15
            // a frame), and this thread does not compete with the pool's
            // for the cores. tet100k: 94-95 -> 84-88 ms per frame (medians
            // of 30, alternating with the previous build); tet22's frames
            // gained within this host's noise. The pool's other thread is
            // kept awake for the halves (`with_pool_awake`).
            with_pool_awake(|| self.step_here(state, observe))
        } else {
            self.step_here(state, observe)
        }
    }

    /// [`Solver::step_observed`] on the calling thread.
    fn step_here(
        &mut self,
        state: &mut State,
        observe: &mut (dyn FnMut(usize, &[Vec3]) + Send),
    ) -> Result<StepReport, SolverError> {
        let mut report = StepReport {
            objective: Vec::with_capacity(self.params.iterations + 1),
            ..StepReport::default()
        };
        let h = self.params.substep_dt();
        let alpha = self.params.velocity_kept();
        self.x.copy_from_slice(&state.positions);
        let mut velocities = std::mem::take(&mut self.v);
        velocities.copy_from_slice(&state.velocities);
        self.history.copy_from(&state.extrapolation);
        // One per vertex, by vertex (`pin_contacts` checks and searches them).
        self.contacts.clone_from(&state.contacts);
        self.contacts.sort_unstable_by_key(|c| c.vertex);
        self.contacts.dedup_by_key(|c| c.vertex);
        self.lifted.clone_from(&state.lifted);
        self.lifted.sort_unstable_by_key(|c| c.vertex);
        let system = &self.system;
        self.accel.load_secants(
            &mut state.secants,
            (|i| system.is_free(i), system.fingerprint()),
        );
        let step = (alpha * h, h * h);
        for _ in 0..self.params.substeps {
            let t0 = Instant::now();
            let mut continuing = 0.0;
            let (mut elastic, mut local, mut global) = (Energies::default(), 0.0, 0.0);
            // A substep whose solve carried a tet body's vertices into a
            // collider is solved again with them landed (see `land_again`).
            self.entering.clear();
            self.released.clear();
            for solve in 1..=LANDING_SOLVES {
                if solve > 1 {
                    self.x.copy_from_slice(&self.start);
                }
                continuing += self.set_up_substep(&velocities, h);
                // Initial guess q + α h v + h² (γ₀ a₀ + γ₁ a₁): the motion
                // without forces plus the predicted acceleration (guess.rs).
                // (Starting at s, as Liu et al. do, gives a frame map whose
                // fixed points are not equilibria when the iterations stop
                // short: a hanging cloth then rests with a residual force.
                // Here a state the step maps to itself (q, v = 0, no
                // contacts) has zero accelerations, so its step started at q
                // and had PD(q) = q by the monotone objective, i.e. ∇g(q) =
                // 0: an exact equilibrium.)
                let system = &self.system;
                self.history.guess(
                    self.params.extrapolates(),
                    &mut self.x,
                    &velocities,
                    step,
                    |i| system.is_free(i),
                );
                self.keep_on_the_ground(&velocities, alpha * h);
                let (e, l, g) = self.iterate(1.0 / (h * h), &mut report, observe);
                (elastic, local, global) = (e, local + l, global + g);
                if solve == LANDING_SOLVES || !self.land_again() {
                    break;
                }
            }
            let tc = Instant::now();
            let system = &self.system;
            self.history.learn(
                &self.x,
                &self.start,
                &velocities,
                &self.model.masses,
                step,
                |i| system.is_free(i),
            );
            report.contacts = self.collide();
            let inv_h = 1.0 / h;
            for ((v, x), q) in velocities.iter_mut().zip(&self.x).zip(&self.start) {
                *v = (x - q) * inv_h;
            }
            for &(i, cut) in &self.slowed {
                velocities[i as usize] -= cut * inv_h;
            }
            if report.contacts > 0 {
                // Collisions moved vertices after the last projection.
                elastic = self.project(false);
            }
            report.energies = self.energies_at(&self.x, &velocities, &elastic);
            // A substep that gained energy forgets what the last ones learnt
            // (guess.rs: the energy guard), so that a frame of substeps
            // steps as frames of the substep's length do.
            if self.history.guard(report.energies.total()) {
                self.accel.forget_secants();
            }
            report.timings.local_ms += local * 1e3;
            let global = global + continuing;
            report.timings.global_ms += global * 1e3;
            report.timings.other_ms +=
                ((tc - t0).as_secs_f64() - local - global + tc.elapsed().as_secs_f64()) * 1e3;
        }
        let tf = Instant::now();
        let checked = self
            .check_blow_up(state.frame + 1, &velocities, &report.energies)
            .and_then(|()| self.check_runaway(state, &report.energies));
        self.accel
            .store_secants(&mut state.secants, checked.is_ok());
        if checked.is_ok() {
            // The step's vectors become the state's, and the state's the
            // next step's scratch (it copies a state in before it starts).
            std::mem::swap(&mut state.positions, &mut self.x);
            std::mem::swap(&mut state.velocities, &mut velocities);
            std::mem::swap(&mut state.extrapolation, &mut self.history);
            state.contacts.clone_from(&self.contacts);
            state.lifted.clone_from(&self.lifted);
        }
        self.v = velocities;
        checked?;
        state.time += self.params.dt;
        state.frame += 1;
        report.timings.other_ms += tf.elapsed().as_secs_f64() * 1e3;
        Ok(report)
    }

    /// Sets up a substep from `self.x = q` with velocities `v`: the start,
    /// the inertial target `s = q + α h v + h² g` (physics.md §1; hard pins
    /// stay where they are), the constant part of the right-hand side (`M s
    /// / h²`, the soft pins' `w t`, the pinned neighbours' coupling and a
    /// tet body's kinetic friction; the contacts' pins pull toward targets
    /// that move with the iterate, added in [`Solver::project`]), and
    /// Anderson's continuation of the last substep's
    /// map (accelerate.rs; not on tet models, where it was measured not to
    /// pay). Returns the seconds spent continuing (a solve).
    fn set_up_substep(&mut self, velocities: &[Vec3], h: f64) -> f64 {
        let alpha = self.params.velocity_kept();
        let gravity = self.params.gravity;
        self.start.copy_from_slice(&self.x);
        let inv_h2 = 1.0 / (h * h);
        for (i, ((s, q), v)) in self
            .target
            .iter_mut()
            .zip(&self.start)
            .zip(velocities)
            .enumerate()
        {
            *s = if self.system.is_free(i) {
                q + v * (alpha * h) + gravity * (h * h)
            } else {
                *q
            };
        }
        for (i, (c, s)) in self.constant.iter_mut().zip(&self.target).enumerate() {
            *c = s * (self.model.masses[i] * inv_h2);
        }
        // Soft pins pull toward fixed targets: `w t` is constant too.
        let w = self.model.weights.attachment;
        for a in &self.model.pins.soft {
            self.constant[a.vertex as usize] += a.target * w;
        }
        self.system
            .add_pinned_coupling(&self.model, &self.x, &mut self.constant);
        self.pin_contacts(h);
        let t = Instant::now();
        let (system, parallel) = (&mut self.system, self.threads > 1);
        let continuable = self.pins.is_empty() && self.model.tets.is_empty();
        self.accel.begin_substep(
            &self.constant,
            (system.fingerprint(), continuable),
            (&mut self.previous, &mut self.fallback),
            |delta, d| system.solve(delta, d, parallel),
        );
        t.elapsed().as_secs_f64()
    }

    /// The local/global iterations of one substep from the initial guess in
    /// `self.x`, accelerated and safeguarded: fills `report.objective` (and
    /// the trace) and returns the elastic energies at the result and the
    /// seconds spent in local and global steps.
    fn iterate(
        &mut self,
        inv_h2: f64,
        report: &mut StepReport,
        observe: &mut (dyn FnMut(usize, &[Vec3]) + Send),
    ) -> (Energies, f64, f64) {
        report.objective.clear();
        report.trace.clear();
        let (mut local, mut global) = (0.0, 0.0);
        let iterations = self.params.iterations;
        let safeguarded = self.accel.is_safeguarded();
        let parallel = self.threads > 1;
        self.accel.restart();
        let mut accepted = f64::INFINITY;
        let rejected_before = report.rejected;
        let mut elastic = Energies::default();
        let tolerance = self.params.tolerance;
        let mut last = iterations;
        for k in 0..=iterations {
            let tl = Instant::now();
            // After the last iteration only the energies are needed.
            let mut with_rhs = k < last;
            elastic = self.project(with_rhs);
            let mut objective = self.inertia_at(&self.x, inv_h2) + elastic.elastic();
            // Rises within round-off of g are not rejections: near the
            // solution they are noise, and a plain step gains no more.
            if safeguarded && objective > accepted + SAFEGUARD_SLACK * accepted.abs() {
                // The accelerated iterate overshot: take the PD output.
                self.x.copy_from_slice(&self.fallback);
                self.accel.reject();
                report.rejected += 1;
                if !with_rhs && k < iterations {
                    // The tolerance stopped on the iterate just rejected:
                    // the fallback's update was never checked, go on.
                    last = iterations;
                    with_rhs = true;
                }
                elastic = self.project(with_rhs);
                objective = self.inertia_at(&self.x, inv_h2) + elastic.elastic();
            }
            accepted = objective;
            report.objective.push(objective);
            if self.projections.is_some() {
                report.trace.push(objective);
            }
            observe(k, &self.x);
            let tg = Instant::now();
            local += (tg - tl).as_secs_f64();
            if !with_rhs {
                break;
            }
            if tolerance > 0.0 {
                self.previous.copy_from_slice(&self.x);
            }
            if safeguarded {
                // An inexact solve (single precision, the relaxed matrix)
                // lowers g from its guess: the iterate projected at.
                self.fallback.copy_from_slice(&self.x);
                self.system.solve(&self.rhs, &mut self.fallback, parallel);
                self.accel.combine(&mut self.x, &self.fallback, parallel);
            } else {
                self.system.solve(&self.rhs, &mut self.x, parallel);
            }
            if tolerance > 0.0
                && update_within(
                    &self.previous,
                    &self.x,
                    &self.start,
                    tolerance,
                    self.diagonal,
                )
            {
                last = k + 1;
            }
            global += tg.elapsed().as_secs_f64();
            if let Some(p) = &self.projections {
                // g(x̂_{k+1}, p_k) at the global step's output.
                let out = if safeguarded { &self.fallback } else { &self.x };
                report
                    .trace
                    .push(self.inertia_at(out, inv_h2) + stored_energy(&self.model, out, p));
            }
        }
        self.accel
            .finish_substep(self.diagonal, report.rejected > rejected_before);
        (elastic, local, global)
    }

    /// Projects every constraint at the iterate `self.x`, with the
    /// right-hand side `constant + Σ w Gᵀ p` (the contacts' pins' `w t`
    /// too, `t` their [`Contact::target`]) in `self.rhs` when `with_rhs`
    /// (else only the energies: the last iterate's, for the safeguard and
    /// the report).
    fn project(&mut self, with_rhs: bool) -> Energies {
        // Storing projections (the trace) takes the serial step.
        let store = if with_rhs {
            self.projections.as_mut()
        } else {
            None
        };
        fit_starts(&mut self.starts, &self.model, self.partials.len().max(1));
        let energies = if self.partials.is_empty() || store.is_some() {
            let rhs = with_rhs.then(|| {
                self.rhs.copy_from_slice(&self.constant);
                &mut self.rhs[..]
            });
            local_step(&self.model, &self.x, rhs, store, &mut self.starts)
        } else {
            let rhs = with_rhs.then_some((&mut self.rhs[..], &self.constant[..]));
            local_step_parallel(
                &self.model,
                &self.x,
                rhs,
                &mut self.partials,
                &mut self.starts,
            )
        };
        if with_rhs {
            // The contacts' pins pull toward their targets at the iterate
            // (`Contact::target`): a projection like the constraints' (their
            // energy is in `inertia_at`); a ground's sliding ones in y only.
            let lifts = self.contacts_lift();
            for (c, &(v, w)) in self.contacts.iter().zip(&self.pins) {
                let v = v as usize;
                let collider = &self.params.colliders[c.collider as usize];
                let pull = c.target(collider, self.x[v], lifts) * w;
                if c.pins_height_only(collider) {
                    self.rhs[v].y += pull.y;
                } else {
                    self.rhs[v] += pull;
                }
            }
        }
        energies
    }

    /// `1/(2h²) ‖x − s‖²_M`, plus the contacts' pins `Σ w/2 ‖x − t‖²`
    /// (`t`: [`Contact::target`] at `x`) and the work of their kinetic
    /// friction `−Σ f·(x − q)`.
    fn inertia_at(&self, x: &[Vec3], inv_h2: f64) -> f64 {
        let sum: f64 = x
            .iter()
            .zip(&self.target)
            .zip(&self.model.masses)
            .map(|((x, s), m)| m * (x - s).norm_squared())
            .sum();
        let lifts = self.contacts_lift();
        let pins: f64 = (self.contacts.iter().zip(&self.pins).zip(&self.kinetic))
            .map(|((c, &(v, w)), f)| {
                let v = v as usize;
                let x = x[v];
                let target = c.target(&self.params.colliders[c.collider as usize], x, lifts);
                w * (x - target).norm_squared() - 2.0 * f.dot(&(x - self.start[v]))
            })
            .sum();
        0.5 * (inv_h2 * sum + pins)
    }

    /// Makes the pins of the substep's solve from `self.contacts` (weight
    /// [`Solver::stiffness`] `m/h²`; each local step adds their pulls
    /// toward [`Contact::target`] to the right-hand side: a ground's
    /// sliding ones in y only, the others in every coordinate).
    ///
    /// A vertex whose inertial target `q + α h v + h² g` is inside a
    /// collider lands on it and is a contact from its start, so the solve
    /// stops it; sticking from the start if its approach is inside the
    /// friction cone ([`Collider::landing_hold`]: friction applied after the
    /// solve moved it back along the surface while the body around it went
    /// on). A tet body's vertex lands so only when it approaches slowly (at
    /// most [`LANDING_SPEED`] `g h` along the normal in the substep, and at
    /// most half its shortest edge: `Solver::reach`); a
    /// faster one is pushed out after the solve and is a contact from the
    /// next substep: in a body falling that fast, the layer above the
    /// lowest also reaches the ground in the inertial target, and pinned
    /// flat onto the lowest it inverted its tets and stayed there. In a
    /// small body that takes no speed: a 5 cm cube's lattice has layers
    /// near its bottom closer than the 2.7 mm a substep of 1/60 s sinks a
    /// body at rest, and it blew up at rest on the ground (QA). A
    /// spring model has no such layers: its vertices land at any speed (a
    /// cloth's edge pushed out after the solve while the cloth above went
    /// on falling stored 40 times the impact's kinetic energy). A sticking
    /// contact whose anchor is not finite or further than a slow landing
    /// from it slides instead.
    fn pin_contacts(&mut self, h: f64) {
        // A contact starts the substep on its collider's surface (`collide`
        // leaves it there), a free vertex. One that does not is free again
        // (its collider was moved or removed since; the accuracy reference
        // steps without colliders): it lands anew, or is pushed out.
        let (colliders, start, system) = (&self.params.colliders, &self.start, &self.system);
        let slow = LANDING_SPEED * self.params.gravity.norm() * h * h;
        self.contacts.retain_mut(|c| {
            let v = c.vertex as usize;
            let keep = v < start.len()
                && system.is_free(v)
                && (colliders.get(c.collider as usize)).is_some_and(|k| k.holds(start[v]));
            // A sticking contact starts the substep off its anchor by its
            // pins' give, a small part of a slow landing; one further off
            // (or not finite) slides instead of being yanked back.
            if let Some(anchor) = c.sticking
                && keep
            {
                // (NaN is not near.)
                let off = (start[v] - anchor).norm();
                if !off.partial_cmp(&slow).is_some_and(|o| o.is_le()) {
                    c.sticking = None;
                }
            }
            keep
        });
        let known = self.contacts.len();
        let inv_h2 = 1.0 / (h * h);
        for (i, (x, q)) in self.target.iter().zip(&self.start).enumerate() {
            // The deepest collider it lands in, or the one the substep's
            // last solve carried it into (unless its pin then held it in).
            let v = i as u32;
            let entered = self.entering.binary_search_by_key(&v, |e| e.0);
            let landing = (self.params.colliders.iter().enumerate())
                .map(|(k, c)| (k, c.depth(*x)))
                .filter(|&(k, depth)| {
                    depth > 0.0
                        && (self.reach.is_empty()
                            || depth - self.params.colliders[k].depth(*q)
                                <= slow.min(self.reach[i]))
                })
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .or_else(|| entered.ok().map(|e| (self.entering[e].1 as usize, 0.0)));
            if let Some((k, _)) = landing
                && self.system.is_free(i)
                && self.released.binary_search(&v).is_err()
                && self.contacts[..known]
                    .binary_search_by_key(&(i as u32), |c| c.vertex)
                    .is_err()
            {
                // Held, it sticks where it stuck before it lifted off, if
                // that was in the last substep, on this collider's surface
                // (unmoved since) and near.
                let collider = &self.params.colliders[k];
                let before = (self.lifted.binary_search_by_key(&v, |c| c.vertex).ok())
                    .map(|l| self.lifted[l])
                    .filter(|c| c.collider == k as u32)
                    .and_then(|c| c.sticking)
                    .filter(|&b| collider.holds(b));
                let hold = collider.landing_hold(*q, *x).map(|anchor| {
                    before
                        .filter(|b| (b - anchor).norm() <= slow)
                        .unwrap_or(anchor)
                });
                self.contacts.push(Contact::new(v, k as u32, hold));
            }
        }
        if self.contacts.len() > known {
            self.contacts.sort_unstable_by_key(|c| c.vertex);
        }
        self.pins.clear();
        self.stick_pins.clear();
        for c in &self.contacts {
            let collider = &self.params.colliders[c.collider as usize];
            let w = self.stiffness(c, collider) * self.model.masses[c.vertex as usize] * inv_h2;
            self.pins.push((c.vertex, w));
            if !c.pins_height_only(collider) {
                self.stick_pins.push((c.vertex, w));
            }
        }
        if self
            .system
            .set_contacts(&self.pins, &self.stick_pins)
            .is_err()
        {
            // `A` plus a positive diagonal factorises whenever `A` does;
            // should it not, the contacts are only projected out (and pull
            // nothing toward their colliders).
            self.contacts.clear();
            self.pins.clear();
            self.stick_pins.clear();
            self.kinetic.clear();
            self.system.drop_contacts();
            return;
        }
        // A tet body's sliding contacts' kinetic friction (a spring model's
        // vertices each carry about their own weight: friction after the
        // solve, as on a contact's first substep, slows them as it should,
        // and in the solve it raised a cloth wedged between a ball and the
        // ground 0.3 J higher above its start).
        self.kinetic.clear();
        for c in &self.contacts {
            let v = c.vertex as usize;
            let collider = &self.params.colliders[c.collider as usize];
            let mut friction = Vec3::zeros();
            if c.sticking.is_none() && !self.model.tets.is_empty() {
                let push = c.push.unwrap_or(0.0);
                friction = collider.kinetic_friction(push, self.start[v], self.target[v]);
                self.constant[v] += friction;
            }
            self.kinetic.push(friction);
        }
    }

    /// Takes back the part of the extrapolated guess (`self.x`) that would
    /// lift a ground contact's vertex: its rise above the motion without
    /// forces `q + α h v` (`alpha_h` is `α h`). The accelerations the guess
    /// extrapolates (guess.rs) were, for a contact, mostly the ground's
    /// push, which a resting body does not keep making. Lifted in the
    /// guess, a vertex stayed lifted: its pin lets it leave the ground and
    /// pulls it toward where the iterate has it, a thousand times harder
    /// than inertia pulls it back (QA: a cloth lying on the ground after a
    /// drop, 30 iterations a frame, was thrown 4 cm up in the next frame
    /// and gained 0.57 J). On a sphere the normal turns as a vertex slides
    /// and the prediction carries it around: held, a cloth sliding off a
    /// ball stuck under it. (Letting the prediction lift a landing vertex
    /// up to the ground's surface, not above, left fewer of a stiff cloth's
    /// vertices on the ground after sliding off a ball.)
    fn keep_on_the_ground(&mut self, velocities: &[Vec3], alpha_h: f64) {
        for c in &self.contacts {
            let v = c.vertex as usize;
            let highest = self.start[v].y + velocities[v].y * alpha_h;
            let ground = matches!(
                self.params.colliders[c.collider as usize],
                Collider::Ground { .. }
            );
            if ground && self.x[v].y > highest {
                self.x[v].y = highest;
            }
        }
    }

    /// Whether a sticking contact's pin lets its vertex lift off in the
    /// solve ([`Contact::target`]): on a spring model. A tet body's
    /// sticking contacts stay held on their anchors for the substep: let
    /// lift, the jelly preset's rim, softly pinned near the ground, left
    /// and landed again substep after substep and the jelly crept 4–7 cm
    /// across the ground in 10 s (its centre rested 2.5 cm higher).
    fn contacts_lift(&self) -> bool {
        self.model.tets.is_empty()
    }

    /// The weight of contact `c`'s pin over its vertex's `m/h²`:
    /// [`SLIDING_ON_SPHERE`] for a spring model's sliding on a sphere, else
    /// [`CONTACT_STIFFNESS`].
    fn stiffness(&self, c: &Contact, collider: &Collider) -> f64 {
        if c.sticking.is_none() && !collider.pins_height_only() && self.model.tets.is_empty() {
            SLIDING_ON_SPHERE
        } else {
            CONTACT_STIFFNESS
        }
    }

    /// Updates which vertices a tet body's substep lands from where its
    /// last solve took them, and returns whether that changed (the substep
    /// is then solved again, at most [`LANDING_SOLVES`] times in all): a
    /// free vertex the solve carried into a collider lands
    /// (`self.entering`), and one landed so that its pin then held it in
    /// (pulled it into the collider) does not (`self.released`).
    ///
    /// A tet body's vertex lands in the solve ahead of it only if it is
    /// slow (`pin_contacts`), since in a body falling fast the layer above
    /// the lowest reaches the collider in the inertial target too, and
    /// pinned flat onto the lowest it inverted its tets. Pushed out after
    /// the solve instead, the lowest layer crushed the one above it: a 0.5
    /// m box (`box.obj` as tets at resolution 8, strain 1e5 Pa) dropped
    /// 0.25 m onto the ground rose 302.7 J above its start at the impact
    /// (its fall's kinetic energy: 309 J), and stayed crushed, 3 cm lower
    /// with 272 J of strain. Landing every vertex the free solve took
    /// inside still pinned the layer above the lowest onto the ground (it
    /// had reached it too) and rose 180.7 J.
    fn land_again(&mut self) -> bool {
        if self.model.tets.is_empty() || self.params.colliders.is_empty() {
            return false;
        }
        let mut changed = false;
        for c in &self.contacts {
            let v = c.vertex;
            if self.entering.binary_search_by_key(&v, |e| e.0).is_ok()
                && self.params.colliders[c.collider as usize].depth(self.x[v as usize]) < 0.0
                && let Err(at) = self.released.binary_search(&v)
            {
                self.released.insert(at, v);
                changed = true;
            }
        }
        let (colliders, contacts) = (&self.params.colliders, &self.contacts);
        for (i, x) in self.x.iter().enumerate() {
            let v = i as u32;
            if let Some(k) = colliders.iter().position(|c| c.contains(*x))
                && self.system.is_free(i)
                && contacts.binary_search_by_key(&v, |c| c.vertex).is_err()
                && self.released.binary_search(&v).is_err()
                && let Err(at) = self.entering.binary_search_by_key(&v, |e| e.0)
            {
                self.entering.insert(at, (v, k as u32));
                changed = true;
            }
        }
        changed
    }

    /// Weighs what each ground bears of each piece of a tet body, or of a
    /// spring model as one piece (for a sphere: shares of 1, held; for a
    /// spring model: shares of 1):
    /// - `self.shares`: the piece's net load on it (the pushes of its
    ///   contacts' pins less the pulls of those the solve left above it)
    ///   over the pushes alone, in `[0, 1]`;
    /// - `self.holds`: whether static friction holds the piece there: the
    ///   friction its contacts gave in the solve (the sticking ones' pins'
    ///   pulls toward their anchors, the sliding ones' kinetic friction; a
    ///   spring model's sliding ones, whose friction acts after the solve,
    ///   the force that would stop their slide, `m/h²` times it), summed,
    ///   within the coefficient times the net load. Where it is not, every
    ///   sticking contact of the piece there slides from the next substep,
    ///   and none stops there.
    ///
    /// A contact's push times its share is what bounds its kinetic
    /// friction in the next substep (static friction's limit keeps the
    /// whole push). Weighed as one, the pieces of a mesh lent each other
    /// their loads: a box beside another pressed onto the ground (both of
    /// one mesh) was held on a slope it slides down alone.
    ///
    /// A sliding contact's pin pulls to the ground's height both ways: one
    /// the body lifts pulls it down, and the pushes of the others rise by
    /// as much. Taken whole, they bounded friction by 2–7 % more than the
    /// body's weight: a box of tets slid down a slope of 0.35 at 1.37 and
    /// 0.38 m/s² against a block's 1.47 and 0.49 at friction 0.2 and 0.3.
    /// (Letting those contacts lift off in the solve instead let a box
    /// dropped onto the slope bounce, and each landing raised it by up to
    /// 12 J in a frame.) On a sphere the contacts' normals differ, and the
    /// sticking ones' pulls hold a body draped over it: kept whole.
    ///
    /// A spring model's sticking contacts were held or let go one by one
    /// too, and a cloth on a slope stuck at every friction above half the
    /// slope, the anchors dragged only by their pins' give (QA: a cloth
    /// dropped 1 cm onto a slope of 0.306 at friction 0.2 moved 5 mm in 2
    /// s, where a block slides at 0.99 m/s²).
    ///
    /// Held or let go one by one, against each one's own limit, a body's
    /// sticking contacts crept instead of sliding: a contact pulled past its
    /// limit drags its anchor and slides by the excess ([`STICK_SLACK`]),
    /// which the rest of the body's contacts took up. A box of tets on a
    /// ground tilted to a slope of 0.35 over 2 s never slid at friction
    /// 0.3, where a block slides at 0.49 m/s² (tilted at once, it slid,
    /// but stuck at 0.32–0.345); now 0.50, and it slides at every friction
    /// below the slope and stays above it. The friction is summed as
    /// vectors: pulls that cancel (feet spreading, a twist about the
    /// normal) do not let go, nor does one contact alone before
    /// [`STICK_SLACK`].
    fn weigh_grounds(&mut self) {
        let colliders = &self.params.colliders;
        let slots = colliders.len() * self.piece_count;
        self.shares.clear();
        self.shares.resize(slots, 1.0);
        self.holds.clear();
        self.holds.resize(slots, true);
        self.loads.clear();
        self.loads.resize(slots, (0.0, 0.0, Vec3::zeros()));
        let springs = self.model.tets.is_empty();
        let h = self.params.substep_dt();
        let contacts = self.contacts.iter().zip(&self.pins).zip(&self.kinetic);
        for ((c, &(v, w)), kinetic) in contacts {
            let collider = &colliders[c.collider as usize];
            if !collider.pins_height_only() {
                continue;
            }
            let x = self.x[v as usize];
            let force = w * collider.depth(x);
            let (net, pushed, pull) = &mut self.loads[slot(&self.pieces, self.piece_count, c)];
            *net += force;
            *pushed += force.max(0.0);
            *pull += kinetic;
            if let Some(anchor) = c.sticking {
                *pull += (anchor - collider.surface_point(x)) * w;
            } else if springs {
                // Friction after the solve: what would stop its slide.
                let slide =
                    collider.surface_point(x) - collider.surface_point(self.start[v as usize]);
                *pull -= slide * (self.model.masses[v as usize] / (h * h));
            }
        }
        for (k, &(net, pushed, pull)) in self.loads.iter().enumerate() {
            if pushed > 0.0 && !springs {
                self.shares[k] = (net / pushed).clamp(0.0, 1.0);
            }
            let friction = colliders[k / self.piece_count].friction();
            self.holds[k] = pull.norm() <= friction * net.max(0.0);
        }
    }

    /// Resolves the colliders after a substep; returns the
    /// vertices in contact.
    ///
    /// A vertex resting on a collider stays a [`Contact`] while its pin
    /// pushes it out (the solve left it inside), and is set on the
    /// surface; friction on it is bounded by the pin's force (kinetic
    /// friction on a ground under a tet body by its share of the body's
    /// load: [`Solver::weigh_grounds`]). Where the
    /// solve left it outside (its pin pulled it in, or let it lift off:
    /// [`Solver::contacts_lift`]) it is free. Every other vertex left
    /// inside a collider is projected out, and rests on it from the next
    /// substep. A sliding contact that friction stopped sticks (unless its
    /// piece's contacts together cannot hold it there); a sticking
    /// one that friction can no longer hold drags its anchor, or slides
    /// free when pulled past [`STICK_SLACK`] times the limit or when the
    /// body's contacts together cannot hold it ([`Solver::weigh_grounds`]).
    ///
    /// A contact held by friction after the solve, instead of in it, was
    /// pulled back every substep while the rest of the body had been solved
    /// without that pull: a body leaning on its feet gained energy (a cow
    /// slumping on its legs rose to 1,479 J above its start; a cube of
    /// strain weight 2e4 leaning on the ground under a tilted gravity held
    /// 204 J of strain at rest, against 74 J with 8 substeps).
    ///
    /// Projection alone is what resting contact used to be: every substep
    /// the unsupported solve let the lowest vertices sink by `h²` times their
    /// share of the weight over their mass, and pushing them back crushed
    /// the layer above (a 0.5 m cube resting at `h = 1/60` s held 840 J of
    /// spurious strain, its bottom layer at 22 % of its thickness). On a
    /// sphere it stretched what lay on it: a 1 m cloth dropped 0.2 m onto
    /// a ball gained 14 J at the impact, and kept 1.2 J at rest above its
    /// start. Pinned in the solve, the support reaches the whole body.
    fn collide(&mut self) -> usize {
        self.lifted.clear();
        self.slowed.clear();
        if self.params.colliders.is_empty() {
            return 0;
        }
        self.weigh_grounds();
        let colliders = &self.params.colliders;
        let mut kept = 0;
        // Less than a substep's fall off its collider, a sticking contact
        // that lifted off is remembered: landing again in the next
        // substep, it sticks where it did (anchored anew where it landed,
        // QA's plain PD cloth resting on a ball rose 0.13 J above its
        // start).
        let lifts = self.contacts_lift();
        let h = self.params.substep_dt();
        let reach = self.params.gravity.norm() * h * h;
        for k in 0..self.contacts.len() {
            let mut c = self.contacts[k];
            let v = c.vertex as usize;
            let collider = &colliders[c.collider as usize];
            let stiffness = self.stiffness(&c, collider);
            let slot = slot(&self.pieces, self.piece_count, &c);
            let x = &mut self.x[v];
            let sunk = collider.depth(*x);
            if sunk <= 0.0 {
                if lifts && c.sticking.is_some() && sunk > -reach {
                    self.lifted.push(c);
                }
                continue;
            }
            if let Some(anchor) = c.sticking {
                // Its pin pulls it w·off along the surface and pushes it
                // w·sunk out: static friction holds while the first is
                // within the friction cone of the second. Past it, the
                // anchor follows to where the pull is friction's (the
                // contact slid by the excess, against friction's force);
                // far past it, the contact slides free from the next
                // substep. Where the solve put it stays (off the anchor by
                // the pin's give), on the surface.
                *x = collider.surface_point(*x);
                let off = (*x - anchor).norm();
                let limit = collider.friction() * sunk;
                if !self.holds[slot] || off > STICK_SLACK * limit {
                    c.sticking = None;
                } else if off > limit {
                    let pulled = *x - (*x - anchor) * (limit / off);
                    c.sticking = Some(collider.surface_point(pulled));
                }
            } else if self.kinetic[k] != Vec3::zeros() {
                // Kinetic friction slowed it in the solve: where it turned
                // it back, it stopped, and sticks.
                *x = collider.surface_point(*x);
                if (*x - self.start[v]).dot(&self.kinetic[k]) > 0.0 {
                    c.sticking = Some(*x);
                }
            } else if c.push == Some(0.0)
                || (c.push.is_none() && collider.pins_height_only() && !self.model.tets.is_empty())
            {
                // A tet body's contact on a ground that bore none of the
                // body's net load in its last substep (the body pulled
                // away: only there is a share 0), or a new one (friction
                // comes in the solve from its next substep, bounded by its
                // push then): no friction. After the solve, friction
                // stopped each such vertex alone, against the body around
                // it: a box bouncing on a slope gained up to 5 J in a
                // frame, and 1.1 J as it landed again sliding.
                *x = collider.surface_point(*x);
            } else {
                // No friction in the solve (a spring model's contact, a tet
                // body's on a sphere in its first substep, or one not
                // moving along the surface): the pin's force w·sunk moved
                // the vertex h² w sunk / m; friction takes up to that times
                // its coefficient off the slide, and where it takes all of
                // it the vertex sticks (on ice nothing does).
                let mut slowed = *x;
                let held = collider.resolve(&mut slowed, self.start[v], stiffness * sunk);
                if self.model.tets.is_empty() {
                    // A spring model's contact keeps its position and loses
                    // the motion from its velocity. The pin's push also
                    // carried the cloth around it (a landing row stops the
                    // rows falling onto it): moved back alone by that
                    // push's friction, a stiff cloth's contact stretched
                    // its springs by the motion it took off, and a cloth
                    // sliding off a ball onto a ground rose 16 J in a frame
                    // (0.06 kg of it, at 4 m/s).
                    *x = collider.surface_point(*x);
                    self.slowed.push((c.vertex, *x - slowed));
                } else {
                    *x = slowed;
                }
                // Not where its piece's contacts together could not hold
                // it: let go at once, they stuck again in turns, half
                // of them holding the cloth on its slope each substep.
                c.sticking = (held == Resolved::Held && self.holds[slot]).then_some(*x);
            }
            // The pin's weight (`self.pins` is in the order of the
            // contacts), times the share of the piece's pushes that is load.
            c.push = Some(self.pins[k].1 * sunk * self.shares[slot]);
            self.resting[v] = true;
            self.contacts[kept] = c;
            kept += 1;
        }
        self.contacts.truncate(kept);
        let mut touching = kept;
        // The spring contacts slowed above, in vertex order (as the contacts).
        let mut slowed = self.slowed.iter().peekable();
        for (i, (x, start)) in self.x.iter_mut().zip(&self.start).enumerate() {
            // A contact's friction on another collider (wedged between two)
            // acts on the motion its own friction left: measured from the
            // start, it took that off again, and the velocity could turn.
            let mut start = *start;
            if let Some(&(_, cut)) = slowed.next_if(|(v, _)| *v as usize == i) {
                start += cut;
            }
            if !self.system.is_free(i) {
                continue;
            }
            let mut touched = false;
            let mut landed = None;
            // Two passes settle a vertex wedged between two colliders.
            for _ in 0..2 {
                for (k, c) in colliders.iter().enumerate() {
                    if c.resolve(x, start, 0.0).touched() {
                        touched = true;
                        // It rests on the highest ground that pushed it,
                        // else on the first sphere.
                        let height = c.ground_height().unwrap_or(f64::NEG_INFINITY);
                        if landed.is_none_or(|(_, h)| height > h) {
                            landed = Some((k as u32, height));
                        }
                    }
                }
            }
            let resting = std::mem::take(&mut self.resting[i]);
            if let Some((collider, _)) = landed.filter(|_| !resting) {
                self.contacts.push(Contact::new(i as u32, collider, None));
            }
            touching += (touched && !resting) as usize;
        }
        self.contacts.sort_unstable_by_key(|c| c.vertex);
        touching
    }

    /// The energies of any state of this model (e.g. the first frame, before
    /// any step).
    pub fn energies(&self, state: &State) -> Energies {
        let elastic = local_step(&self.model, &state.positions, None, None, &mut []);
        self.energies_at(&state.positions, &state.velocities, &elastic)
    }

    /// `elastic` with the kinetic and gravitational energies of
    /// `positions` and `velocities` filled in.
    fn energies_at(&self, positions: &[Vec3], velocities: &[Vec3], elastic: &Energies) -> Energies {
        let g = self.params.gravity;
        let (mut kinetic, mut gravitational) = (0.0, 0.0);
        for (((v, x), x0), m) in velocities
            .iter()
            .zip(positions)
            .zip(&self.model.rest)
            .zip(&self.model.masses)
        {
            kinetic += 0.5 * m * v.norm_squared();
            gravitational -= m * g.dot(&(x - x0));
        }
        Energies {
            kinetic,
            gravitational,
            ..*elastic
        }
    }

    fn check_blow_up(
        &self,
        frame: u64,
        velocities: &[Vec3],
        energies: &Energies,
    ) -> Result<(), SolverError> {
        let fail = |reason: String| {
            Err(SolverError::BlowUp {
                frame,
                reason,
                remedy: Remedy::Steps,
            })
        };
        if let Some(i) = self.x.iter().position(|x| !x.iter().all(|c| c.is_finite())) {
            return fail(format!("vertex {i} has a non-finite position"));
        }
        if !energies.total().is_finite() {
            return fail("the energy is not finite".into());
        }
        // A vertex covering a hundred model sizes in one frame against the
        // body's mean motion is no longer simulating anything a person asked
        // for. (Against the mean: a falling body is not blowing up however
        // fast it falls; a 1 mm model was stopped after 1.7 s of free fall.)
        let limit = 100.0 * self.diagonal / self.params.dt;
        // The free vertices' mean: pinned ones stay where they are.
        let (mut momentum, mut mass, mut pinned) = (Vec3::zeros(), 0.0, None);
        for (i, (v, m)) in velocities.iter().zip(&self.model.masses).enumerate() {
            if self.system.is_free(i) {
                momentum += v * *m;
                mass += m;
            } else {
                pinned = pinned.or(Some(i));
            }
        }
        let mean = if mass > 0.0 {
            momentum / mass
        } else {
            Vec3::zeros()
        };
        // The fastest against the mean (not the first past the limit): the
        // vertex the report names is where the motion broke away.
        let fastest = (velocities.iter().enumerate())
            .filter(|&(i, _)| self.system.is_free(i))
            .map(|(i, v)| (i, (v - mean).norm()))
            .max_by(|(_, a), (_, b)| a.total_cmp(b));
        let over = format!("over {limit:.3e} m/s (100 model sizes per frame)");
        if let Some((i, speed)) = fastest.filter(|&(_, speed)| speed > limit) {
            return fail(format!(
                "vertex {i} moves at {speed:.3e} m/s against the body's mean motion, {over}"
            ));
        }
        // Held by pins, the whole body cannot run away either.
        if let Some(i) = pinned.filter(|_| mean.norm() > limit) {
            return fail(format!(
                "the body moves at {:.3e} m/s away from its pinned vertices (vertex {i}), {over}",
                mean.norm()
            ));
        }
        Ok(())
    }

    /// Fails the step from `state` (not yet advanced) that ended with
    /// `energies` if it ended with more total energy than the motion since
    /// the solver's last change may have. Implicit Euler only loses energy
    /// while nothing does work on the body; its truncated iterations and
    /// the contacts gain some (a landing's contacts up to 1 J on a 0.06 kg
    /// cloth, its weight times its size). A gain over twice its weight
    /// times its size, plus twice the kinetic and elastic energy it started
    /// with, plus half its mass moving its size a second, is no longer the
    /// simulation asked for: a tet cube dropped 1 m at a step of 0.1 s was
    /// crushed flat and kept 6.4 kJ where it fell from 1.2 kJ, finite and
    /// slow (the velocity check passed it; its landing is resolved now,
    /// see `Solver::reach`), and a stiff closed surface
    /// stepped by 8 plain iterations at 0.1 s went from 0.4 J to 87 J in a
    /// frame. A step from a frame this solver did not make (another state,
    /// an earlier one) starts the measure again from `state`'s energy.
    fn check_runaway(&mut self, state: &State, energies: &Energies) -> Result<(), SolverError> {
        let (from, total) = (state.frame, energies.total());
        let (start, since, allowed) = match self.ceiling {
            Ceiling::Kept {
                frame,
                start,
                since,
                allowed,
            } if frame == from => (start, since, allowed),
            Ceiling::AfterStep => {
                let allowed = self.allowed_gain(energies);
                (total, from + 1, allowed)
            }
            Ceiling::Kept { .. } | Ceiling::Measure => {
                let before = self.energies(state);
                (before.total(), from, self.allowed_gain(&before))
            }
        };
        if total > start + allowed {
            let rose = format!(
                "the total energy rose to {total:.4e} J from {start:.4e} J at frame {since}"
            );
            let may_gain = format!(
                "more than the {allowed:.3e} J its motion may gain (twice its weight times its \
                 size, and what it had)"
            );
            let (reason, remedy) = match self.started_inside(state) {
                Some((k, vertices)) => (
                    format!(
                        "{rose}, {may_gain}: {} started the step inside sim.colliders[{k}], \
                         and pushing them out did work on the body",
                        match vertices {
                            1 => "1 free vertex".to_owned(),
                            n => format!("{n} free vertices"),
                        }
                    ),
                    Remedy::Placement,
                ),
                None => (
                    format!(
                        "{rose} with nothing doing work on the body, {may_gain}: its steps \
                         cannot follow its motion"
                    ),
                    Remedy::Steps,
                ),
            };
            return Err(SolverError::BlowUp {
                frame: from + 1,
                reason,
                remedy,
            });
        }
        self.ceiling = Ceiling::Kept {
            frame: from + 1,
            start,
            since,
            allowed,
        };
        Ok(())
    }

    /// The first collider that free vertices of `state` lie inside, deeper
    /// than a millionth of the model's size (as the build's warning counts
    /// them), and how many lie inside it; `None` if none do.
    fn started_inside(&self, state: &State) -> Option<(usize, usize)> {
        let tolerance = 1e-6 * self.diagonal;
        let free = || {
            (state.positions.iter().enumerate())
                .filter(|&(i, _)| self.system.is_free(i))
                .map(|(_, x)| x)
        };
        (self.params.colliders.iter().enumerate())
            .map(|(k, c)| (k, free().filter(|x| c.depth(**x) > tolerance).count()))
            .find(|&(_, inside)| inside > 0)
    }

    /// The energy a motion starting with `energies` may gain (see
    /// [`Solver::check_runaway`]).
    fn allowed_gain(&self, energies: &Energies) -> f64 {
        let free_mass: f64 = (self.model.masses.iter().enumerate())
            .filter(|&(i, _)| self.system.is_free(i))
            .map(|(_, m)| m)
            .sum();
        let size = self.diagonal;
        let weight_size = free_mass * self.params.gravity.norm() * size;
        let had = (energies.total() - energies.gravitational).max(0.0);
        2.0 * (weight_size + had) + 0.5 * free_mass * size * size
    }
}

/// The most total energy a frame may end with: set from the first frame a
/// solver steps from after it was made or changed, kept while it steps on
/// from the frames it made.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ceiling {
    /// Set from the energy of the state the next step starts from (an
    /// evaluation; after a change of the solver).
    Measure,
    /// Set from the energy the next step ends with, unchecked (after a
    /// drag: its work is not measured, and a drag's every frame would
    /// evaluate the energy once more).
    AfterStep,
    /// Set.
    Kept {
        /// The frame the next step starts from (the last one stepped).
        frame: u64,
        /// The total energy of the frame it was set from.
        start: f64,
        /// That frame.
        since: u64,
        /// The energy over `start` a frame may gain.
        allowed: f64,
    },
}

/// Whether an iteration that moved the vertices from `previous` to `x`
/// ends a substep from `start` under [`SimParams::tolerance`]: its update is
/// within `tolerance` of the step's displacement, `‖x − x_prev‖ ≤ tol
/// ‖x − q‖`, as the accuracy figure measures errors, or below
/// [`UPDATE_FLOOR`] of the body's size `size` (root mean square over the
/// vertices), whatever the tolerance. The solver and the accuracy figure
/// (where the solver stops) share it.
pub(crate) fn update_within(
    previous: &[Vec3],
    x: &[Vec3],
    start: &[Vec3],
    tolerance: f64,
    size: f64,
) -> bool {
    let (mut update, mut step) = (0.0, 0.0);
    for ((x, p), q) in x.iter().zip(previous).zip(start) {
        update += (x - p).norm_squared();
        step += (x - q).norm_squared();
    }
    let floor = UPDATE_FLOOR * size;
    update <= (tolerance * tolerance * step).max(floor * floor * x.len() as f64)
}

/// The update, relative to the body's size (root mean square over the
/// vertices), that ends a substep's iterations whatever the tolerance. A
/// body come to rest steps by round-off, which its updates, round-off too,
/// never undercut by the tolerance: a settled cloth ran every iteration of
/// every frame (three times the cost of its motion). Far above the
/// round-off of an update at rest (~1e-16 of the size in double precision,
/// ~3e-15 on the 250 × 250 cloth's single-precision relaxed factor); the
/// price is that a step shorter than `UPDATE_FLOOR / tolerance` of the size
/// (1e-9 at a tolerance of 1e-3: the first substep from rest at `dt` below
/// ~1e-5 s) is solved to `UPDATE_FLOOR` of the size instead of `tolerance`
/// of itself. The same as [`accuracy::AT_REST`], below which a step counts
/// as no motion.
pub const UPDATE_FLOOR: f64 = accuracy::AT_REST;

/// The relative rise of the objective the safeguard lets pass as round-off
/// (the invariant tests allow 1e-12).
const SAFEGUARD_SLACK: f64 = 1e-13;

const SPRING_KINDS: [SpringKind; 3] = [
    SpringKind::Structural,
    SpringKind::Shear,
    SpringKind::Bending,
];

/// `Σ (‖x_a − x_b‖ − r)²` over `springs`, and, with `rhs`, `rhs_a += w p`,
/// `rhs_b −= w p` for each spring's projection `p`.
#[inline]
fn spring_block(springs: &[Spring], w: f64, x: &[Vec3], rhs: Option<&mut [Vec3]>) -> f64 {
    let mut sum = 0.0;
    match rhs {
        Some(rhs) => {
            for s in springs {
                let (a, b) = (s.a as usize, s.b as usize);
                let (p, stretch) = project::spring_with_stretch(x[a] - x[b], s.rest);
                sum += stretch * stretch;
                let wp = p * w;
                rhs[a] += wp;
                rhs[b] -= wp;
            }
        }
        None => {
            for s in springs {
                let stretch = (x[s.a as usize] - x[s.b as usize]).norm() - s.rest;
                sum += stretch * stretch;
            }
        }
    }
    sum
}

/// The local step's per-type elastic energies are an [`Energies`] with the
/// kinetic and gravitational terms left 0 (so `elastic()` is their sum).
impl Energies {
    fn set(&mut self, kind: SpringKind, energy: f64) {
        match kind {
            SpringKind::Structural => self.structural = energy,
            SpringKind::Shear => self.shear = energy,
            SpringKind::Bending => self.bending = energy,
        }
    }

    fn add(self, other: Energies) -> Energies {
        Energies {
            kinetic: self.kinetic + other.kinetic,
            gravitational: self.gravitational + other.gravitational,
            structural: self.structural + other.structural,
            shear: self.shear + other.shear,
            bending: self.bending + other.bending,
            attachment: self.attachment + other.attachment,
            strain: self.strain + other.strain,
            strain_limit: self.strain_limit + other.strain_limit,
            volume: self.volume + other.volume,
        }
    }

    /// Sets the tet energies `w_k/2 Σ |V₀| ‖F − P_k‖²` from the sums of
    /// [`tets::tet_block`].
    fn set_tets(&mut self, weights: [f64; 3], sums: tets::TetSums) {
        self.strain = 0.5 * weights[0] * sums[0];
        self.strain_limit = 0.5 * weights[1] * sums[1];
        self.volume = 0.5 * weights[2] * sums[2];
    }
}

/// Soft pins' energy. (Their part of the right-hand side, `w t_i`, does
/// not depend on the iterate: it is in the substep's constant part.)
fn attachment_energy(model: &Model, x: &[Vec3]) -> f64 {
    let w = model.weights.attachment;
    // A fold from +0: `sum()` of no soft pins is −0, which prints as "-0".
    let sum = model
        .pins
        .soft
        .iter()
        .map(|a| (x[a.vertex as usize] - a.target).norm_squared())
        .fold(0.0, |acc, d| acc + d);
    0.5 * w * sum
}

/// Projects every constraint at `x`, returns the elastic energy per type
/// (kinetic and gravitational 0), and, when `rhs` is given, accumulates
/// `Σ w Gᵀ p` of the springs and tets into it (rows of hard-pinned vertices
/// receive values that are never read; the soft pins' `w t` is in the
/// substep's constant part). With `store`, the projections are also kept,
/// in constraint order. The tets' SVDs start from `starts` (one per tet, or
/// none: from the identity; see [`fit_starts`]).
fn local_step(
    model: &Model,
    x: &[Vec3],
    mut rhs: Option<&mut [Vec3]>,
    mut store: Option<&mut Stored>,
    starts: &mut [Matrix3<f64>],
) -> Energies {
    if let Some(store) = store.as_deref_mut() {
        store.points.clear();
        store.tets.clear();
        for kind in SPRING_KINDS {
            for s in model.springs.of_kind(kind) {
                store
                    .points
                    .push(project::spring(x[s.a as usize] - x[s.b as usize], s.rest));
            }
        }
        store
            .points
            .extend(model.pins.soft.iter().map(|a| a.target));
    }
    let mut e = Energies::default();
    for kind in SPRING_KINDS {
        let w = model.weights.spring(kind);
        let sum = spring_block(model.springs.of_kind(kind), w, x, rhs.as_deref_mut());
        e.set(kind, 0.5 * w * sum);
    }
    let projector = TetProjector::new(model);
    let starts = if starts.is_empty() {
        tets::Starts::Cold
    } else {
        tets::Starts::Warm(&mut starts[..model.tets.len()])
    };
    let sums = tets::tet_block(
        &projector,
        &model.tets,
        x,
        rhs,
        store.map(|s| &mut s.tets),
        starts,
    );
    e.set_tets(projector.weights(), sums);
    e.attachment = attachment_energy(model, x);
    e
}

/// Whether this CPU runs the AVX2 + FMA kernels (`false` off x86-64).
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The `k`-th of `parts` near-equal chunks of `items`, each but the last a
/// multiple of 4 long: [`tets::tet_block`] projects tets in fours, so every
/// tet takes the same code path whatever the thread count, and the
/// parallel step matches the serial one to the order of the sums.
fn chunk<T>(items: &[T], k: usize, parts: usize) -> &[T] {
    let size = chunk_len(items.len(), parts);
    &items[(k * size).min(items.len())..((k + 1) * size).min(items.len())]
}

/// The length of each of [`chunk`]'s `parts` chunks of `n` items (the last
/// one's at most).
fn chunk_len(n: usize, parts: usize) -> usize {
    n.div_ceil(parts).next_multiple_of(4)
}

/// Sizes `starts` for a local step of `model` over `parts` chunks: empty
/// when its tet projections take no SVD, else one per tet (the identity
/// for a tet new to it) padded to `parts` whole chunks, so that the
/// parallel step cuts it as it cuts the tets ([`chunk`]) and start `i` is
/// tet `i`'s in either step.
fn fit_starts(starts: &mut Vec<Matrix3<f64>>, model: &Model, parts: usize) {
    let n = model.tets.len();
    let len = if TetProjector::new(model).needs_svd() {
        parts * chunk_len(n, parts)
    } else {
        0
    };
    starts.resize(len, Matrix3::identity());
}

/// Runs `a` and `b`, on two threads when `parallel` (else one after the
/// other).
pub(crate) fn both<A: Send, B: Send>(
    parallel: bool,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    if parallel {
        rayon::join(a, b)
    } else {
        (a(), b())
    }
}

/// Empty looks for work after which the thread kept awake by
/// [`with_pool_awake`] yields its core to the system at each look.
const AWAKE_SPINS: u32 = 64;

/// Runs `work` on a thread of the pool while another one of its threads
/// keeps looking for work until `work` returns, so that each [`both`] in
/// `work` hands its second half to a thread that is awake. An idle thread
/// of the pool sleeps within ~20 µs, and on the 2-vCPU hosts waking it took
/// longer than a short half: a join of two 20 µs halves after 20 µs or more
/// of serial work took 32–48 µs, one thread doing both; with a thread kept
/// awake, 21 µs. tet22's frames took ~5 % less (default 5.15–6.24 → 4.83–5.46
/// ms, plain PD at 8 iterations 15.9–18.2 → 15.4–16.6 ms, alternating
/// builds). The thread kept awake runs any work of the pool it finds; after
/// [`AWAKE_SPINS`] looks that find none it yields its core to the system at
/// each look, so threads that want the core get it (the editor's UI and
/// software renderer: spinning without yielding took the 250 × 250 cloth's
/// simulation in the editor from 26–29 to 15–17 frames/s).
///
/// The keeper is the second half of a `rayon::join` (a job on the stack, no
/// allocation per step): another thread takes it, or, if none did by the
/// time `work` returned, this one runs it and it ends at once.
fn with_pool_awake<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    let done = AtomicBool::new(false);
    let keep_awake = || {
        let mut idle = 0;
        while !done.load(Ordering::Acquire) {
            if rayon::yield_now() == Some(rayon::Yield::Executed) {
                idle = 0;
            } else if idle < AWAKE_SPINS {
                idle += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    };
    let work = || {
        // Set however `work` ends: a panic in it, unwinding past, left the
        // keeper spinning and `join` waiting on it for ever.
        let _done = Done(&done);
        work()
    };
    rayon::join(work, keep_awake).0
}

/// Sets its flag when dropped.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// One part of the parallel local step: its right-hand-side buffer and
/// its energies.
#[derive(Clone)]
struct Part {
    rhs: Vec<Vec3>,
    energies: Energies,
}

/// [`local_step`] with the springs and tets split in parts run over
/// threads, each accumulating into its own buffer of `partials`; `rhs` (the
/// vector and the constant part it starts from) is then the constant part
/// plus the buffers (without `rhs`, only the energies are summed). Sums
/// over parts run in the parts' order, so the result depends on the parts,
/// not on the threads that ran them.
fn local_step_parallel(
    model: &Model,
    x: &[Vec3],
    rhs: Option<(&mut [Vec3], &[Vec3])>,
    partials: &mut [Part],
    starts: &mut [Matrix3<f64>],
) -> Energies {
    let parts = partials.len();
    let projector = TetProjector::new(model);
    let scatter = rhs.is_some();
    let part = |k: usize, buf: &mut Vec<Vec3>, starts: tets::Starts<'_>| {
        let mut buf = scatter.then(|| {
            buf.fill(Vec3::zeros());
            &mut buf[..]
        });
        let mut e = Energies::default();
        for kind in SPRING_KINDS {
            let part = chunk(model.springs.of_kind(kind), k, parts);
            let w = model.weights.spring(kind);
            e.set(kind, 0.5 * w * spring_block(part, w, x, buf.as_deref_mut()));
        }
        let tets = chunk(&model.tets, k, parts);
        let starts = match starts {
            tets::Starts::Warm(s) => tets::Starts::Warm(&mut s[..tets.len()]),
            cold => cold,
        };
        let sums = tets::tet_block(&projector, tets, x, buf, None, starts);
        e.set_tets(projector.weights(), sums);
        e
    };
    if starts.is_empty() {
        (partials.par_iter_mut().enumerate())
            .for_each(|(k, p)| p.energies = part(k, &mut p.rhs, tets::Starts::Cold));
    } else {
        let size = chunk_len(model.tets.len(), parts);
        (partials.par_iter_mut().zip(starts.par_chunks_mut(size)))
            .enumerate()
            .for_each(|(k, (p, s))| p.energies = part(k, &mut p.rhs, tets::Starts::Warm(s)));
    }
    let mut e = (partials.iter()).fold(Energies::default(), |e, p| e.add(p.energies));
    if let Some((rhs, constant)) = rhs {
        add_partials(rhs, constant, partials);
    }
    e.attachment = attachment_energy(model, x);
    e
}

/// `rhs = constant + Σ partials`, each vertex's sum in the buffers' order,
/// the two halves of the vertices on two threads.
fn add_partials(rhs: &mut [Vec3], constant: &[Vec3], partials: &[Part]) {
    let half = rhs.len() / 2;
    let (first, second) = rhs.split_at_mut(half);
    let sum = |rhs: &mut [Vec3], from: usize| {
        for (i, r) in (from..).zip(rhs) {
            *r = partials.iter().fold(constant[i], |s, p| s + p.rhs[i]);
        }
    };
    rayon::join(|| sum(first, 0), || sum(second, half));
}

/// `Σ w/2 ‖G x − p‖²` for projections `p` stored by [`local_step`].
fn stored_energy(model: &Model, x: &[Vec3], stored: &Stored) -> f64 {
    let mut p = stored.points.iter();
    let mut sum = 0.0;
    for kind in SPRING_KINDS {
        let w = model.weights.spring(kind);
        for s in model.springs.of_kind(kind) {
            let d = x[s.a as usize] - x[s.b as usize];
            sum += 0.5 * w * (d - p.next().expect("one per spring")).norm_squared();
        }
    }
    let w = model.weights.attachment;
    for a in &model.pins.soft {
        sum +=
            0.5 * w * (x[a.vertex as usize] - p.next().expect("one per soft pin")).norm_squared();
    }
    let projector = TetProjector::new(model);
    sum + tets::stored_tet_energy(&projector, &model.tets, x, &stored.tets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic in the work unwinds out of [`with_pool_awake`]: its keeper
    /// spun on, and the join waited for it, for ever (a solver's panic hung
    /// the editor's or the terminal UI's simulation thread, and then their
    /// exit, which joins it).
    #[test]
    fn a_panic_in_the_work_ends_the_wait() {
        let (send, ended) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .build()
                .unwrap();
            let outcome = pool.install(|| {
                std::panic::catch_unwind(|| with_pool_awake(|| panic!("the work failed")))
            });
            let _ = send.send(outcome.is_err());
        });
        let ended = ended.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(ended, Ok(true), "the panic must unwind out, not hang");
    }
}
