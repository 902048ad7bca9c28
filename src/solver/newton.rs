//! Newton reference: the exact implicit Euler step, for tests and for the
//! accuracy figure (physics.md §6).
//!
//! Minimises the same `g(x) = 1/(2h²) ‖x − s‖²_M + E(x)` as the PD solver
//! with Newton's method and a backtracking (Armijo) line search. The spring
//! Hessian is `k d̂d̂ᵀ + k (1 − r/‖d‖)(I − d̂d̂ᵀ)` (seed 003) with the second
//! term clamped at zero under compression, which keeps it positive
//! semi-definite (the exact term measured slower on the cloths: their
//! compressed bending springs make the matrix indefinite). Tet constraints
//! contribute the exact gradient of `w|V₀|/2 dist²(F, C)`,
//! `w|V₀| Gᵀ (F − P(F))ᵀ` per type, and the analytic Hessian in `F` of their
//! isotropic sum (`tets::energy_hessian`); the per-tet gradients and
//! Hessians are computed in parallel.
//!
//! Each iteration first tries the exact tet Hessian, which converges
//! quadratically (the jelly preset in 8 iterations). Compressed tets make
//! their terms indefinite; when the whole matrix then is not positive
//! definite or gives no descent direction, the iteration uses the matrix
//! with each tet's Hessian projected to positive semi-definite, which always
//! is (with the mass term). At the minimiser the gradient is zero either
//! way.

use super::system::{LowerPattern, SparseCholesky};
use super::tets::{self, TetProjector};
use super::{SimParams, SolverError, State};
use crate::mesh::Vec3;
use crate::model::{Model, SpringKind, Tet};
use nalgebra::Matrix3;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// How tightly to solve.
#[derive(Clone, Copy, Debug)]
pub struct NewtonOptions {
    /// Iteration cap.
    pub max_iterations: usize,
    /// Stop when the largest Newton step is below this fraction of the
    /// model's bounding-box diagonal.
    pub step_tolerance: f64,
}

impl Default for NewtonOptions {
    fn default() -> Self {
        Self {
            max_iterations: 100,
            step_tolerance: 1e-13,
        }
    }
}

/// The result of one reference step.
#[derive(Clone, Debug)]
pub struct NewtonStep {
    /// Positions after the step, `m × 3`.
    pub positions: Vec<Vec3>,
    /// Newton iterations used.
    pub iterations: usize,
    /// `g` at the solution.
    pub objective: f64,
    /// Euclidean norm of the gradient at the solution.
    pub gradient_norm: f64,
    /// Whether it started from the guess given to [`step_from`] (rather
    /// than from the inertial target).
    pub from_guess: bool,
}

struct Problem<'a> {
    model: &'a Model,
    target: Vec<Vec3>,
    inv_h2: f64,
    free: Vec<u32>,
    index: Vec<u32>,
    projector: TetProjector,
}

const PINNED: u32 = u32::MAX;

/// Tets per parallel task when summing the energy.
const TET_CHUNK: usize = 1024;

impl Problem<'_> {
    fn springs(&self) -> impl Iterator<Item = (f64, &crate::model::Spring)> {
        [
            SpringKind::Structural,
            SpringKind::Shear,
            SpringKind::Bending,
        ]
        .into_iter()
        .flat_map(move |k| {
            let w = self.model.weights.spring(k);
            self.model.springs.of_kind(k).iter().map(move |s| (w, s))
        })
    }

    fn objective(&self, x: &[Vec3]) -> f64 {
        let mut g = 0.0;
        for &v in &self.free {
            let v = v as usize;
            g += 0.5 * self.inv_h2 * self.model.masses[v] * (x[v] - self.target[v]).norm_squared();
        }
        for (w, s) in self.springs() {
            g += super::project::spring_energy(x[s.a as usize] - x[s.b as usize], s.rest, w);
        }
        let wa = self.model.weights.attachment;
        for a in &self.model.pins.soft {
            g += 0.5 * wa * (x[a.vertex as usize] - a.target).norm_squared();
        }
        let sums = self
            .model
            .tets
            .par_chunks(TET_CHUNK)
            .map(|chunk| tets::tet_block(&self.projector, chunk, x, None, None, tets::Starts::Cold))
            .reduce(|| [0.0; 3], |a, b| std::array::from_fn(|k| a[k] + b[k]));
        let w = self.projector.weights();
        g + 0.5 * (w[0] * sums[0] + w[1] * sums[1] + w[2] * sums[2])
    }

    /// The Newton matrix at `x` into `values` (on `pattern`): masses,
    /// springs, soft pins and the tets' Hessians (see
    /// [`tet_hessian_blocks`]; `tet_blocks` is scratch space); with
    /// `projected`, every tet's term is positive semi-definite.
    fn assemble_hessian(
        &self,
        pattern: &LowerPattern,
        x: &[Vec3],
        projected: bool,
        values: &mut [f64],
        tet_blocks: &mut Vec<[Matrix3<f64>; 16]>,
    ) {
        let nf = self.free.len();
        values.fill(0.0);
        let add_block = |i: u32, j: u32, b: &Matrix3<f64>, values: &mut [f64]| {
            let (i, j) = (i as usize, j as usize);
            for r in 0..3 {
                for c in 0..3 {
                    let (row, col) = (r * nf + i, c * nf + j);
                    if row >= col {
                        values[pattern.slot(row, col)] += b[(r, c)];
                    }
                }
            }
        };
        for (k, &v) in self.free.iter().enumerate() {
            let mass = Matrix3::identity() * (self.inv_h2 * self.model.masses[v as usize]);
            add_block(k as u32, k as u32, &mass, values);
        }
        for (w, s) in self.springs() {
            let hs = spring_hessian(x[s.a as usize] - x[s.b as usize], s.rest, w);
            let (a, b) = (self.index[s.a as usize], self.index[s.b as usize]);
            if a != PINNED {
                add_block(a, a, &hs, values);
            }
            if b != PINNED {
                add_block(b, b, &hs, values);
            }
            if a != PINNED && b != PINNED {
                let off = -hs;
                add_block(a, b, &off, values);
                add_block(b, a, &off, values);
            }
        }
        let wa = Matrix3::identity() * self.model.weights.attachment;
        for a in &self.model.pins.soft {
            let i = self.index[a.vertex as usize];
            if i != PINNED {
                add_block(i, i, &wa, values);
            }
        }
        if self.projector.is_active() {
            self.model
                .tets
                .par_iter()
                .map(|tet| tet_hessian_blocks(&self.projector, tet, x, projected))
                .collect_into_vec(tet_blocks);
            for (tet, blocks) in self.model.tets.iter().zip(tet_blocks.iter()) {
                let index = tet.vertices.map(|v| self.index[v as usize]);
                for (j, &a) in index.iter().enumerate() {
                    for (k, &b) in index.iter().enumerate() {
                        if a != PINNED && b != PINNED {
                            add_block(a, b, &blocks[4 * j + k], values);
                        }
                    }
                }
            }
        }
    }

    /// Gradient over free vertices, `3 nf` entries, column-major (all x,
    /// then all y, then all z) to match the factor's right-hand side layout.
    fn gradient(&self, x: &[Vec3], out: &mut [f64]) {
        let nf = self.free.len();
        out.fill(0.0);
        let mut add = |v: u32, f: Vec3| {
            let i = self.index[v as usize];
            if i != PINNED {
                for c in 0..3 {
                    out[c * nf + i as usize] += f[c];
                }
            }
        };
        for &v in &self.free {
            let v = v as usize;
            add(
                v as u32,
                (x[v] - self.target[v]) * (self.inv_h2 * self.model.masses[v]),
            );
        }
        for (w, s) in self.springs() {
            let d = x[s.a as usize] - x[s.b as usize];
            let len = d.norm();
            let f = if len > 0.0 {
                d * (w * (len - s.rest) / len)
            } else {
                Vec3::zeros()
            };
            add(s.a, f);
            add(s.b, -f);
        }
        let wa = self.model.weights.attachment;
        for a in &self.model.pins.soft {
            add(a.vertex, (x[a.vertex as usize] - a.target) * wa);
        }
        if self.projector.is_active() {
            let gradients: Vec<Matrix3<f64>> = self
                .model
                .tets
                .par_iter()
                .map(|tet| {
                    tets::energy_gradient(&self.projector, tet, &tet.deformation_gradient(x))
                })
                .collect();
            for (tet, gradient) in self.model.tets.iter().zip(&gradients) {
                // ∂E/∂x_j = (∂E/∂F) g_j since F = Σ x_j g_jᵀ.
                for (&v, g) in tet.vertices.iter().zip(tet.stencil()) {
                    add(v, gradient * g);
                }
            }
        }
    }
}

/// The 4 × 4 blocks `∂²E/∂x_j∂x_k` (at `4j + k`) of a tet's energy Hessian
/// in its vertices, from the Hessian in `F` ([`tets::energy_hessian`], with
/// negative eigenvalues clamped to 0 if `projected`):
/// `F = Σ x_j g_jᵀ`, so entry `(c, d)` is `Σ_{p,q} H[(c,p),(d,q)] g_j[p] g_k[q]`.
fn tet_hessian_blocks(
    projector: &TetProjector,
    tet: &Tet,
    x: &[Vec3],
    projected: bool,
) -> [Matrix3<f64>; 16] {
    let hf = tets::energy_hessian(projector, tet, &tet.deformation_gradient(x), projected);
    let g = tet.stencil();
    std::array::from_fn(|jk| {
        let (j, k) = (jk / 4, jk % 4);
        Matrix3::from_fn(|c, d| {
            let mut sum = 0.0;
            for p in 0..3 {
                for q in 0..3 {
                    sum += hf[(3 * c + p, 3 * d + q)] * g[j][p] * g[k][q];
                }
            }
            sum
        })
    })
}

/// The clamped spring Hessian block `k d̂d̂ᵀ + k max(0, 1 − r/‖d‖)(I − d̂d̂ᵀ)`.
fn spring_hessian(d: Vec3, rest: f64, k: f64) -> Matrix3<f64> {
    let len = d.norm();
    if len == 0.0 {
        return Matrix3::identity() * k;
    }
    let n = d / len;
    let nn = n * n.transpose();
    nn * k + (Matrix3::identity() - nn) * (k * (1.0 - rest / len).max(0.0))
}

/// Solves one implicit Euler step of `dt / substeps` exactly from `state`.
///
/// # Errors
/// [`SolverError::Factorization`] if a Newton matrix cannot be factorised,
/// [`SolverError::OutOfMemory`] if its factor would not fit.
pub fn step(
    model: &Model,
    params: &SimParams,
    state: &State,
    options: &NewtonOptions,
) -> Result<NewtonStep, SolverError> {
    step_from(model, params, state, options, None, &AtomicBool::new(false))
}

/// [`step`], starting from `guess` (positions of every vertex; a hard pin's
/// are taken from `state` whatever it says) where the objective is lower
/// there than at the inertial target, and given up once `cancel` is set:
/// it is looked at before each factorisation (on a 100,000-vertex tet body
/// one takes ~50 s, and a step from the target five of them).
///
/// A guess near the solution saves the iterations that get there: a
/// converged PD step leaves Newton two, the one that corrects it and the
/// one that confirms, where the target takes five on the tet bodies.
///
/// # Errors
/// As [`step`], and [`SolverError::Cancelled`] once `cancel` is set.
pub fn step_from(
    model: &Model,
    params: &SimParams,
    state: &State,
    options: &NewtonOptions,
    guess: Option<&[Vec3]>,
    cancel: &AtomicBool,
) -> Result<NewtonStep, SolverError> {
    let h = params.substep_dt();
    let alpha = params.velocity_kept();
    let m = model.vertex_count();
    let mut index = vec![PINNED; m];
    let mut free = Vec::new();
    for v in 0..m as u32 {
        if !model.pins.is_hard(v) {
            index[v as usize] = free.len() as u32;
            free.push(v);
        }
    }
    let target: Vec<Vec3> = (0..m)
        .map(|i| {
            let q = state.positions[i];
            if index[i] == PINNED {
                q
            } else {
                q + state.velocities[i] * (alpha * h) + params.gravity * (h * h)
            }
        })
        .collect();
    let problem = Problem {
        model,
        target,
        inv_h2: 1.0 / (h * h),
        free,
        index,
        projector: TetProjector::new(model),
    };
    let nf = problem.free.len();
    let mut x = problem.target.clone();
    let mut from_guess = false;
    if let Some(guess) = guess.filter(|g| g.len() == m) {
        let mut start = x.clone();
        for &v in &problem.free {
            start[v as usize] = guess[v as usize];
        }
        // (A NaN objective is not lower.)
        if problem.objective(&start) < problem.objective(&x) {
            x = start;
            from_guess = true;
        }
    }
    if nf == 0 {
        let objective = problem.objective(&x);
        return Ok(NewtonStep {
            positions: x,
            iterations: 0,
            objective,
            gradient_norm: 0.0,
            from_guess,
        });
    }

    // Scalar pattern of the 3nf × 3nf Hessian: full 3 × 3 blocks on the
    // diagonal and for each spring between two free vertices. Column-major
    // unknown layout: scalar index c·nf + i.
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let block = |i: usize, j: usize, pairs: &mut Vec<(usize, usize)>| {
        for r in 0..3 {
            for c in 0..3 {
                let (row, col) = (r * nf + i, c * nf + j);
                if row >= col {
                    pairs.push((row, col));
                }
                let (row, col) = (c * nf + j, r * nf + i);
                if row >= col {
                    pairs.push((row, col));
                }
            }
        }
    };
    for i in 0..nf {
        block(i, i, &mut pairs);
    }
    for (_, s) in problem.springs() {
        let (a, b) = (problem.index[s.a as usize], problem.index[s.b as usize]);
        if a != PINNED && b != PINNED {
            block(a as usize, b as usize, &mut pairs);
        }
    }
    for tet in &model.tets {
        let index = tet.vertices.map(|v| problem.index[v as usize]);
        for (i, &a) in index.iter().enumerate() {
            for &b in &index[i + 1..] {
                if a != PINNED && b != PINNED {
                    block(a as usize, b as usize, &mut pairs);
                }
            }
        }
    }
    let pattern = LowerPattern::new(3 * nf, pairs);
    let mut values = vec![0.0; pattern.nnz()];
    let mut factor: Option<SparseCholesky> = None;
    let mut grad = vec![0.0; 3 * nf];
    let mut trial = x.clone();
    let diagonal = {
        let (lo, hi) = crate::mesh::bounds(&model.rest);
        (hi - lo).norm().max(f64::MIN_POSITIVE)
    };
    let mut tet_blocks = Vec::new();
    let mut delta = vec![0.0; 3 * nf];
    let mut iterations = 0;
    let mut g = problem.objective(&x);
    while iterations < options.max_iterations {
        iterations += 1;
        // The exact Hessian converges quadratically where it is positive
        // definite (the mass term usually sees to that); where it is not,
        // the one with every tet's term made semi-definite. Without tet
        // constraints the two are the same matrix.
        problem.gradient(&x, &mut grad);
        let attempts: &[bool] = if problem.projector.is_active() {
            &[false, true]
        } else {
            &[true]
        };
        let mut slope = 0.0;
        for &projected in attempts {
            go_on(cancel)?;
            problem.assemble_hessian(&pattern, &x, projected, &mut values, &mut tet_blocks);
            let factorised = match factor.as_mut() {
                Some(f) => f.refactor(&values),
                None => SparseCholesky::new(&pattern, &values).map(|f| {
                    factor = Some(f);
                }),
            };
            match factorised {
                Ok(()) => {}
                Err(_) if !projected => continue,
                Err(error) => return Err(error),
            }
            // Newton direction: H Δ = −∇g.
            delta.iter_mut().zip(&grad).for_each(|(d, g)| *d = -g);
            factor
                .as_mut()
                .expect("factorised above")
                .solve_in_place(&mut delta, 1);
            slope = delta.iter().zip(&grad).map(|(d, g)| d * g).sum();
            if slope < 0.0 || projected {
                break;
            }
        }
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..60 {
            trial.copy_from_slice(&x);
            for (k, &v) in problem.free.iter().enumerate() {
                for c in 0..3 {
                    trial[v as usize][c] += t * delta[c * nf + k];
                }
            }
            let gt = problem.objective(&trial);
            // Armijo, with slack for round-off in g near the minimum where
            // the decrease falls below the precision of g itself.
            if gt <= g + 1e-4 * t * slope + 1e-15 * g.abs() {
                accepted = true;
                x.copy_from_slice(&trial);
                g = gt;
                break;
            }
            t *= 0.5;
        }
        let largest = t * delta.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        if !accepted || largest <= options.step_tolerance * diagonal {
            break;
        }
    }
    problem.gradient(&x, &mut grad);
    Ok(NewtonStep {
        positions: x,
        iterations,
        objective: g,
        gradient_norm: grad.iter().map(|g| g * g).sum::<f64>().sqrt(),
        from_guess,
    })
}

/// `Ok` unless `cancel` is set; then [`SolverError::Cancelled`].
pub(crate) fn go_on(cancel: &AtomicBool) -> Result<(), SolverError> {
    if cancel.load(Ordering::Relaxed) {
        Err(SolverError::Cancelled)
    } else {
        Ok(())
    }
}

/// The accuracy figure: `‖x − x*‖ / ‖x* − q‖` over all vertices, the error of
/// a step's result `x` against the reference `x*`, relative to how far the
/// reference step moved from the start `q`.
pub fn relative_error(x: &[Vec3], reference: &[Vec3], start: &[Vec3]) -> f64 {
    let num: f64 = x
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b).norm_squared())
        .sum();
    let den: f64 = reference
        .iter()
        .zip(start)
        .map(|(a, b)| (a - b).norm_squared())
        .sum();
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}
