//! The initial guess of a substep's iterations: the motion without forces,
//! `q + α h v`, plus a prediction of this substep's acceleration from the
//! last two, `h² (γ₀ a₀ + γ₁ a₁)` (the solver then takes back what the
//! prediction would lift a vertex resting on a ground: `Solver`'s
//! `keep_on_the_ground`).
//!
//! The iterations of a substep move the guess `q + α h v` by the correction
//! `c = h² a`, the forces' work. When the forces change smoothly (a body
//! sagging, settling or swinging), the next correction is predictable from
//! the last ones, and starting from the prediction leaves the iterations
//! little to do: the `n = 22` tet cantilever reaches 1e-3 relative error
//! against Newton in 4 iterations instead of 8 with plain PD, and 1e-5 in 5
//! instead of 7 with Anderson, along its own motion. When they change fast (a
//! stiff cloth ringing near `1/h`), old corrections are poor predictors.
//!
//! Three predictors are kept, each fitted (mass-weighted least squares)
//! after every substep to the acceleration the iterations just found:
//! none, `γ₀ a₀` with `γ₀ ∈ [0, 1]`, and `γ₀ a₀ + γ₁ a₁` (which follows a
//! linear trend or one oscillating mode). The next guess uses the kind whose
//! previous fit predicted this substep best (out of sample, so a predictor
//! that only fits noise is not chosen), refitted to this substep.
//!
//! **Energy guard.** When the iterations barely correct the guess (weights
//! so stiff against the masses that a frame's iterations are far from
//! converged), the accelerations they leave are mostly the guess's own
//! prediction, and the predictors fitted to them feed it back: a two-term
//! fit sustains a trend or an oscillation the forces never made, and the
//! motion gains energy (a quad cloth with 100× the default shear weight,
//! pinned at a corner: +65 J within a second from a start of 0, where 100
//! iterations lose energy steadily). Implicit Euler never gains energy in a
//! closed system, so a substep whose total energy rose (by more than
//! round-off) is distrusted: its accelerations are forgotten, the next
//! guess is the motion without forces, and extrapolation returns once two
//! substeps have measured what pays. (A drag or a moving attachment adds
//! energy too; the guard then costs a few guesses.) Anderson's carried
//! secant pairs are dropped with them (`Solver::step`); its last
//! evaluation of the map is kept (it predicts nothing, and dropping it
//! let the stiff cloth gain energy again). Plain PD is not
//! saved by it: once that motion is excited, its truncated iterations gain
//! energy from the motion without forces too (substeps guessed so after
//! a rise rose again), which only more iterations fix. So the guess is
//! extrapolated by default with Anderson only
//! ([`SimParams::extrapolates`](super::SimParams::extrapolates)).
//!
//! A state the step maps to itself (`q` returned with `v = 0`, no contacts)
//! has zero accelerations, so the guess is `q` and the iterations start
//! from it, as without extrapolation: such rest states are still exact
//! equilibria.

use crate::mesh::Vec3;

/// The last two substeps' accelerations (newest first; zero at rest and on
/// hard pins) and the predictors fitted to them: the part of a
/// [`State`](super::State) the next initial guess extrapolates from.
#[derive(Clone, Debug, PartialEq)]
pub struct Extrapolation {
    accelerations: Vec<[Vec3; 2]>,
    /// `γ₀` of the one-term predictor.
    one: f64,
    /// `[γ₀, γ₁]` of the two-term predictor.
    two: [f64; 2],
    /// The predictor the next guess uses.
    chosen: Predictor,
    /// The total energy of the state the next substep starts from, once a
    /// substep made it.
    energy: Option<f64>,
}

/// Which of the three predictors a guess uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Predictor {
    None,
    One,
    Two,
}

/// The relative rise of the total energy over a substep taken as round-off.
const ENERGY_SLACK: f64 = 1e-9;

const PREDICTORS: [Predictor; 3] = [Predictor::None, Predictor::One, Predictor::Two];

/// Bounds of the two-term weights, each clamped on its own (a guard, not a
/// constrained fit): a linear trend is `(2, −1)` and one oscillating mode
/// `(2 cos θ, −1)`, so fits far outside these follow noise.
const TWO_TERM_BOUNDS: [(f64, f64); 2] = [(-2.0, 3.0), (-2.0, 2.0)];

/// The two accelerations' Gram matrix and their products with the new one
/// (mass-weighted): enough to fit and score every predictor.
#[derive(Default)]
struct Sums {
    a00: f64,
    a01: f64,
    a11: f64,
    b0: f64,
    b1: f64,
    bb: f64,
}

impl Sums {
    /// Adds one vertex of mass `m`: its accelerations `a` and the new one.
    fn add(&mut self, m: f64, a: &[Vec3; 2], new: &Vec3) {
        self.a00 += m * a[0].norm_squared();
        self.a01 += m * a[0].dot(&a[1]);
        self.a11 += m * a[1].norm_squared();
        self.b0 += m * new.dot(&a[0]);
        self.b1 += m * new.dot(&a[1]);
        self.bb += m * new.norm_squared();
    }

    /// `‖new − γ₀ a₀ − γ₁ a₁‖²_M`.
    fn residual(&self, [g0, g1]: [f64; 2]) -> f64 {
        self.bb - 2.0 * (g0 * self.b0 + g1 * self.b1)
            + g0 * g0 * self.a00
            + 2.0 * g0 * g1 * self.a01
            + g1 * g1 * self.a11
    }
}

impl Extrapolation {
    /// No history for `m` vertices: zero accelerations, and full
    /// extrapolation of the last one until a substep has measured what pays.
    pub fn new(m: usize) -> Self {
        Self {
            accelerations: vec![[Vec3::zeros(); 2]; m],
            one: 1.0,
            two: [1.0, 0.0],
            chosen: Predictor::One,
            energy: None,
        }
    }

    /// The energy guard (see the module documentation), after a substep
    /// that ended with total energy `total`: when that is more than the
    /// substep started with, forgets the accelerations and guesses without
    /// them until two substeps have measured what pays again. Returns
    /// whether it did.
    pub(crate) fn guard(&mut self, total: f64) -> bool {
        let rose = self
            .energy
            .is_some_and(|before| total - before > ENERGY_SLACK * (before.abs() + total.abs()));
        if rose {
            self.accelerations.fill([Vec3::zeros(); 2]);
            self.chosen = Predictor::None;
        }
        self.energy = Some(total);
        rose
    }

    /// The weights `[γ₀, γ₁]` the next guess gives the last two
    /// accelerations.
    fn weights(&self) -> [f64; 2] {
        self.weights_of(self.chosen)
    }

    /// The weights of `predictor`'s current fit.
    fn weights_of(&self, predictor: Predictor) -> [f64; 2] {
        match predictor {
            Predictor::None => [0.0; 2],
            Predictor::One => [self.one, 0.0],
            Predictor::Two => self.two,
        }
    }

    /// Becomes a copy of `other`, allocating only when the vertex count
    /// grows.
    pub(crate) fn copy_from(&mut self, other: &Self) {
        self.accelerations.clone_from(&other.accelerations);
        self.one = other.one;
        self.two = other.two;
        self.chosen = other.chosen;
        self.energy = other.energy;
    }

    /// `x ← x + α h v + h² (γ₀ a₀ + γ₁ a₁)` for the free vertices (`x = q`
    /// on entry); without the accelerations unless `extrapolate`.
    pub(crate) fn guess(
        &self,
        extrapolate: bool,
        x: &mut [Vec3],
        velocities: &[Vec3],
        (alpha_h, h2): (f64, f64),
        free: impl Fn(usize) -> bool,
    ) {
        let [g0, g1] = if extrapolate {
            self.weights().map(|g| g * h2)
        } else {
            [0.0; 2]
        };
        for (i, (x, (v, a))) in x
            .iter_mut()
            .zip(velocities.iter().zip(&self.accelerations))
            .enumerate()
        {
            if free(i) {
                *x += v * alpha_h + a[0] * g0 + a[1] * g1;
            }
        }
    }

    /// After the iterations from `start = q` ended on `x`: shifts the
    /// accelerations to take this substep's, `(x − q − α h v) / h²` (zero
    /// on pinned vertices), chooses the predictor that would have guessed
    /// it best and refits all three.
    pub(crate) fn learn(
        &mut self,
        x: &[Vec3],
        start: &[Vec3],
        velocities: &[Vec3],
        masses: &[f64],
        (alpha_h, h2): (f64, f64),
        free: impl Fn(usize) -> bool,
    ) {
        let mut s = Sums::default();
        let inv_h2 = 1.0 / h2;
        for (i, ((((x, q), v), a), m)) in x
            .iter()
            .zip(start)
            .zip(velocities)
            .zip(self.accelerations.iter_mut())
            .zip(masses)
            .enumerate()
        {
            if !free(i) {
                *a = [Vec3::zeros(); 2];
                continue;
            }
            let new = (x - q - v * alpha_h) * inv_h2;
            s.add(*m, a, &new);
            *a = [new, a[0]];
        }
        if s.a00.is_nan() || s.a00 <= 0.0 {
            // Nothing to predict from (the first substep from rest).
            return;
        }
        // Out of sample: how the fits of the last substep did on this one
        // picks the kind; the next guess takes that kind's fit to this one.
        let scores = PREDICTORS.map(|p| s.residual(self.weights_of(p)));
        if scores.iter().all(|r| r.is_finite()) {
            // Ties keep the one-term predictor.
            let best = (0..3).fold(1, |b, k| if scores[k] < scores[b] { k } else { b });
            self.chosen = PREDICTORS[best];
        }
        let one = s.b0 / s.a00;
        if one.is_finite() {
            self.one = one.clamp(0.0, 1.0);
        }
        let det = s.a00 * s.a11 - s.a01 * s.a01;
        let two = [
            (s.b0 * s.a11 - s.b1 * s.a01) / det,
            (s.a00 * s.b1 - s.a01 * s.b0) / det,
        ];
        // Two nearly parallel accelerations make the pair ill-posed: the
        // one-term fit says all they can.
        self.two = if det > 1e-6 * s.a00 * s.a11 && two.iter().all(|g| g.is_finite()) {
            [0, 1].map(|k| two[k].clamp(TWO_TERM_BOUNDS[k].0, TWO_TERM_BOUNDS[k].1))
        } else {
            [self.one, 0.0]
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: (f64, f64) = (0.5, 0.25);

    /// Runs `learn` from the accelerations `old` (newest first) to `new`,
    /// all vertices free, unit masses, `q = 0`, `v = 0`.
    fn learn(fit: &mut Extrapolation, old: &[[Vec3; 2]], new: &[Vec3]) {
        let n = new.len();
        let zeros = vec![Vec3::zeros(); n];
        let x: Vec<Vec3> = new.iter().map(|a| a * STEP.1).collect();
        fit.accelerations = old.to_vec();
        fit.learn(&x, &zeros, &zeros, &vec![1.0; n], STEP, |_| true);
    }

    fn e(k: usize) -> Vec3 {
        Vec3::ith(k, 1.0)
    }

    /// The fits recover the weights of a new acceleration built from the
    /// old two, and the accelerations shift, newest first.
    #[test]
    fn the_fits_recover_the_weights_and_the_history_shifts() {
        let old = [[e(0), e(1)], [e(1), e(2)], [e(2), e(0)]];
        let new: Vec<Vec3> = old.iter().map(|a| a[0] * 1.5 - a[1] * 0.5).collect();
        let mut fit = Extrapolation::new(3);
        learn(&mut fit, &old, &new);
        for ((s, o), n) in fit.accelerations.iter().zip(&old).zip(&new) {
            assert_eq!(s, &[*n, o[0]]);
        }
        assert!((fit.two[0] - 1.5).abs() < 1e-12 && (fit.two[1] + 0.5).abs() < 1e-12);
        // ⟨new, a₀⟩ / ‖a₀‖² = 1.5 (the a₁ are orthogonal to the a₀ here),
        // clamped to 1.
        assert_eq!(fit.one, 1.0);
    }

    /// `Sums::residual` is the explicit weighted sum of squares.
    #[test]
    fn the_residual_is_the_weighted_sum_of_squares() {
        let a = [[e(0) + e(1), e(1) * 2.0], [e(2), e(0) - e(2)]];
        let new = [e(0) * 3.0, e(1) - e(2)];
        let m = [2.0, 0.5];
        let mut s = Sums::default();
        for ((a, n), m) in a.iter().zip(&new).zip(&m) {
            s.add(*m, a, n);
        }
        let g = [0.7, -1.3];
        let explicit: f64 = a
            .iter()
            .zip(&new)
            .zip(&m)
            .map(|((a, n), m)| m * (n - a[0] * g[0] - a[1] * g[1]).norm_squared())
            .sum();
        assert!(
            (s.residual(g) - explicit).abs() < 1e-12,
            "{}",
            s.residual(g)
        );
    }

    /// The next guess takes the predictor whose last fit predicted best:
    /// the two-term one on a steady linear trend, none on noise that
    /// alternates in sign, the one-term one on a slowly decaying motion.
    #[test]
    fn the_best_predictor_out_of_sample_is_chosen() {
        let a = e(0) + e(1) * 0.5;
        let run = |sequence: &dyn Fn(usize) -> Vec3| {
            let mut fit = Extrapolation::new(1);
            fit.accelerations = vec![[sequence(1), sequence(0)]];
            for k in 2..8 {
                let history = fit.accelerations.clone();
                learn(&mut fit, &history, &[sequence(k)]);
            }
            fit
        };
        // a_k = e₀ + k e₁: linear, predicted exactly by 2 a₀ − a₁.
        let linear = run(&|k| e(0) + e(1) * k as f64);
        assert!((linear.weights()[0] - 2.0).abs() < 1e-9, "{linear:?}");
        assert!((linear.weights()[1] + 1.0).abs() < 1e-9, "{linear:?}");
        // A direction that changes every substep: nothing predicts it.
        let noise = run(&|k| e(k % 3) * if k % 2 == 0 { 1.0 } else { -1.0 });
        assert_eq!(noise.weights(), [0.0, 0.0], "{noise:?}");
        // a_k = 0.9^k a: γ₀ = 0.9 exactly, and the pair is parallel.
        let decay = run(&|k| a * 0.9f64.powi(k as i32));
        assert!((decay.weights()[0] - 0.9).abs() < 1e-9, "{decay:?}");
        assert_eq!(decay.weights()[1], 0.0);
    }

    /// The guess adds `α h v + h² (γ₀ a₀ + γ₁ a₁)` to the free vertices
    /// only, and only the motion without forces when not extrapolating.
    #[test]
    fn the_guess_moves_free_vertices_only() {
        let fit = Extrapolation {
            accelerations: vec![[Vec3::new(0.0, 4.0, 0.0), Vec3::new(0.0, 0.0, 1.0)]; 2],
            two: [0.5, 2.0],
            chosen: Predictor::Two,
            ..Extrapolation::new(2)
        };
        let start = vec![Vec3::new(1.0, 1.0, 1.0); 2];
        let v = vec![Vec3::new(2.0, 0.0, 0.0); 2];
        let mut x = start.clone();
        fit.guess(true, &mut x, &v, STEP, |i| i == 0);
        assert_eq!(x, [Vec3::new(2.0, 1.5, 1.5), start[1]]);
        let mut plain = start.clone();
        fit.guess(false, &mut plain, &v, STEP, |i| i == 0);
        assert_eq!(plain, [Vec3::new(2.0, 1.0, 1.0), start[1]]);
    }

    /// Pinned vertices keep zero accelerations and do not enter the fits.
    #[test]
    fn pinned_vertices_are_left_out() {
        let mut fit = Extrapolation::new(2);
        fit.accelerations = vec![[e(0), e(1)]; 2];
        let x = [e(2), e(0) * 0.25 * 0.5];
        let zeros = [Vec3::zeros(); 2];
        fit.learn(&x, &zeros, &zeros, &[1.0, 1.0], STEP, |i| i == 1);
        assert_eq!(fit.accelerations[0], [Vec3::zeros(); 2]);
        assert_eq!(fit.accelerations[1], [e(0) * 0.5, e(0)]);
        assert_eq!(fit.one, 0.5);
    }
}
