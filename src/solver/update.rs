//! A few changed diagonal entries of `A` — a soft pin added or removed, as
//! the editor's grab does — solved exactly with the factor of the matrix
//! before (the Woodbury identity) instead of refactorising: on the
//! 105k-vertex tet body a numeric refactorisation takes ~2.6 s, this takes
//! a few solves per changed row.
//!
//! With `A' = A + E D Eᵀ` (`E` the unit columns of the changed rows, `D`
//! their changes), `A'⁻¹ b = z − U (I + D Uₑ)⁻¹ D zₑ`, where `z = A⁻¹ b`,
//! `U = A⁻¹ E` and `·ₑ` takes the changed rows. A guess `x` of `A'⁻¹ b`
//! (the mixed-precision solve refines its guess) is one of `z` as
//! `x + U D xₑ`, since `A x + E D Eᵀ x = b`.

use crate::mesh::Vec3;

/// The most changed diagonal entries solved this way; more refactorise.
pub(crate) const LOW_RANK: usize = 4;

/// From this many entries of `L` on, a change of at most [`LOW_RANK`]
/// diagonal entries is solved by an update (below, a refactorisation costs
/// little more than the update's solves: cloth60's takes ~2 ms).
pub(crate) const LOW_RANK_FROM_ENTRIES: usize = 500_000;

/// Passes of the solve computing each column of `U`, each refining the last
/// from its result: one for a double-precision factor, which solves
/// exactly; a single-precision one gains a few digits per pass.
const PASSES: usize = 4;

/// Changed diagonal entries of `A` since its factorisation, and what solves
/// with `A'` from solves with `A`.
#[derive(Clone, Debug)]
pub(crate) struct DiagonalUpdate {
    /// The values of `A` the factor is of.
    pub(crate) factored: Vec<f64>,
    /// The changed rows' vertices and changes `d`.
    rows: Vec<(u32, f64)>,
    /// The columns of `U` by vertex (`A⁻¹ eⱼ` is the same for x, y and z;
    /// 0 on pinned vertices).
    u: Vec<Vec<f64>>,
    /// `(I + D Uₑ)⁻¹ D`, row-major, `rows.len()` square.
    capacitance: [[f64; LOW_RANK]; LOW_RANK],
}

impl DiagonalUpdate {
    /// The update by `rows` (vertex, change; at most [`LOW_RANK`]) of the
    /// matrix with `factored` values, whose solve `solve(rhs, x)` refines
    /// the guess in `x` towards `A⁻¹ rhs` over `vertices` vertices. `None`
    /// if `A'` is singular to working precision.
    pub(crate) fn new(
        factored: Vec<f64>,
        rows: Vec<(u32, f64)>,
        vertices: usize,
        mut solve: impl FnMut(&[Vec3], &mut [Vec3]),
    ) -> Option<Self> {
        assert!(rows.len() <= LOW_RANK, "at most LOW_RANK rows");
        let mut rhs = vec![Vec3::zeros(); vertices];
        let mut x = vec![Vec3::zeros(); vertices];
        let u: Vec<Vec<f64>> = rows
            .iter()
            .map(|&(v, _)| {
                rhs[v as usize] = Vec3::repeat(1.0);
                x.fill(Vec3::zeros());
                for _ in 0..PASSES {
                    solve(&rhs, &mut x);
                }
                rhs[v as usize] = Vec3::zeros();
                x.iter().map(|p| p.x).collect()
            })
            .collect();
        let k = rows.len();
        let m = nalgebra::DMatrix::from_fn(k, k, |i, j| {
            f64::from(u8::from(i == j)) + rows[i].1 * u[j][rows[i].0 as usize]
        });
        // Singular to working precision (against the scale of `I` and of
        // `D Uₑ`): refused.
        let sigma = m.singular_values();
        let regular = sigma
            .min()
            .partial_cmp(&(1e-10 * (1.0 + sigma.max())))
            .is_some_and(|o| o.is_gt());
        if !regular {
            return None;
        }
        let inverse = m.try_inverse()?;
        let mut capacitance = [[0.0; LOW_RANK]; LOW_RANK];
        for (i, row) in capacitance.iter_mut().enumerate().take(k) {
            for (j, c) in row.iter_mut().enumerate().take(k) {
                *c = inverse[(i, j)] * rows[j].1;
            }
        }
        capacitance
            .iter()
            .flatten()
            .all(|c| c.is_finite())
            .then_some(Self {
                factored,
                rows,
                u,
                capacitance,
            })
    }

    /// The changed rows' vertices and changes.
    pub(crate) fn rows(&self) -> &[(u32, f64)] {
        &self.rows
    }

    /// Turns a guess of `A'⁻¹ b` in `x` into one of `A⁻¹ b`: `x + U D xₑ`.
    pub(crate) fn to_factored(&self, x: &mut [Vec3]) {
        let at = self.at_rows(x);
        for (j, u) in self.u.iter().enumerate() {
            let dx = at[j] * self.rows[j].1;
            for (x, &u) in x.iter_mut().zip(u) {
                *x += dx * u;
            }
        }
    }

    /// Turns `A⁻¹ b` in `x` into `A'⁻¹ b`: `x − U (I + D Uₑ)⁻¹ D xₑ`.
    pub(crate) fn correct(&self, x: &mut [Vec3]) {
        let at = self.at_rows(x);
        for (j, u) in self.u.iter().enumerate() {
            let y: Vec3 = (0..self.rows.len())
                .map(|i| at[i] * self.capacitance[j][i])
                .sum();
            for (x, &u) in x.iter_mut().zip(u) {
                *x -= y * u;
            }
        }
    }

    /// `x` at the changed rows.
    fn at_rows(&self, x: &[Vec3]) -> [Vec3; LOW_RANK] {
        let mut at = [Vec3::zeros(); LOW_RANK];
        for (a, &(v, _)) in at.iter_mut().zip(&self.rows) {
            *a = x[v as usize];
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DMatrix;

    /// A dense SPD matrix over `n` vertices and its exact solve, per
    /// coordinate.
    fn spd(n: usize) -> DMatrix<f64> {
        let b = DMatrix::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        &b * b.transpose() + DMatrix::identity(n, n) * (n as f64)
    }

    fn solve_with(a: &DMatrix<f64>, rhs: &[Vec3]) -> Vec<Vec3> {
        let chol = a.clone().cholesky().expect("SPD");
        let mut out = vec![Vec3::zeros(); rhs.len()];
        for c in 0..3 {
            let b = nalgebra::DVector::from_iterator(rhs.len(), rhs.iter().map(|r| r[c]));
            let x = chol.solve(&b);
            for (o, x) in out.iter_mut().zip(x.iter()) {
                o[c] = *x;
            }
        }
        out
    }

    /// Solves with `A` plus a raised and a lowered diagonal entry through
    /// the update of `A`'s solve match solves with `A'` itself, and a
    /// guess of `A'⁻¹ b` turned into one of `A⁻¹ b` is that solve.
    #[test]
    fn the_update_solves_with_the_changed_matrix() {
        let n = 12;
        let a = spd(n);
        let rows = vec![(3u32, 250.0), (8u32, -2.5)];
        let mut changed = a.clone();
        for &(v, d) in &rows {
            changed[(v as usize, v as usize)] += d;
        }
        let update = DiagonalUpdate::new(Vec::new(), rows, n, |rhs, x| {
            x.copy_from_slice(&solve_with(&a, rhs));
        })
        .expect("A' is positive definite");
        let rhs: Vec<Vec3> = (0..n)
            .map(|i| Vec3::new(i as f64, 1.0 - i as f64 * 0.3, (i % 3) as f64))
            .collect();
        let expected = solve_with(&changed, &rhs);
        let mut x = solve_with(&a, &rhs);
        update.correct(&mut x);
        for (x, e) in x.iter().zip(&expected) {
            assert!(
                (x - e).norm() <= 1e-12 * e.norm().max(1.0),
                "{x} against {e}"
            );
        }
        let mut guess = expected.clone();
        update.to_factored(&mut guess);
        for (g, z) in guess.iter().zip(solve_with(&a, &rhs)) {
            assert!(
                (g - z).norm() <= 1e-12 * z.norm().max(1.0),
                "{g} against {z}"
            );
        }
    }

    /// A change that makes the matrix singular is refused.
    #[test]
    fn a_singular_change_is_refused() {
        let a = DMatrix::<f64>::identity(3, 3) * 2.0;
        let update = DiagonalUpdate::new(Vec::new(), vec![(1, -2.0)], 3, |rhs, x| {
            x.copy_from_slice(&solve_with(&a, rhs));
        });
        assert!(update.is_none());
    }
}
