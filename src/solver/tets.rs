//! Gather and scatter for the tet constraints (strain, strain limiting,
//! volume), shared by the PD local step and the Newton reference.
//!
//! The three types share the stencil `G = D_m⁻ᵀ S` of each tet, so one
//! deformation gradient and one SVD serve all of them, and their right-hand
//! side contributions add up to `|V₀| Gᵀ (Σ_k w_k P_k)ᵀ`: row `j` gains
//! `|V₀| Q g_j` with `Q = Σ_k w_k P_k`.

use nalgebra::{Matrix3, SMatrix};

use super::project::{self, SignedSvd};
use crate::mesh::Vec3;
use crate::model::{Model, Tet, TetLimits};

/// The projections of one `F`, `[strain, strain_limit, volume]`; `F` itself
/// for a type whose weight is 0 (no energy, no force).
pub(crate) type TetProjections = [Matrix3<f64>; 3];

/// Weights and sets of the tet constraints of a model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TetProjector {
    weights: [f64; 3],
    limits: TetLimits,
}

impl TetProjector {
    pub(crate) fn new(model: &Model) -> Self {
        Self {
            weights: model.weights.tet(),
            limits: model.limits,
        }
    }

    /// Whether any tet constraint type has a weight (else tets cost nothing).
    pub(crate) fn is_active(&self) -> bool {
        self.weights.iter().any(|&w| w != 0.0)
    }

    /// `[strain, strain_limit, volume]` weights.
    pub(crate) fn weights(&self) -> [f64; 3] {
        self.weights
    }

    /// The closest points of the three sets to `f` (see [`TetProjections`]).
    #[inline]
    pub(crate) fn project(&self, f: &Matrix3<f64>) -> TetProjections {
        let [strain, limit, volume] = self.weights;
        if limit == 0.0 && volume == 0.0 {
            // Only the rotation is needed: skip the SVD.
            let rotation = if strain != 0.0 {
                project::closest_rotation(f)
            } else {
                *f
            };
            return [rotation, *f, *f];
        }
        let svd = SignedSvd::new(f);
        let l = &self.limits;
        [
            if strain != 0.0 {
                project::arap(&svd)
            } else {
                *f
            },
            if limit != 0.0 {
                project::strain_limit(&svd, l.strain_min, l.strain_max)
            } else {
                *f
            },
            if volume != 0.0 {
                project::volume(&svd, l.volume_min, l.volume_max)
            } else {
                *f
            },
        ]
    }

    /// Per type, `‖F − P_k‖²` (unweighted, without `|V₀|`; 0 for a type
    /// that is off).
    #[inline]
    pub(crate) fn distances(&self, f: &Matrix3<f64>, p: &TetProjections) -> [f64; 3] {
        std::array::from_fn(|k| {
            if self.weights[k] != 0.0 {
                (f - p[k]).norm_squared()
            } else {
                0.0
            }
        })
    }

    /// `Σ_k w_k P_k` over the types that are on.
    #[inline]
    pub(crate) fn combine(&self, p: &TetProjections) -> Matrix3<f64> {
        let mut q = Matrix3::zeros();
        for (pk, &w) in p.iter().zip(&self.weights) {
            if w != 0.0 {
                q += pk * w;
            }
        }
        q
    }
}

/// Energy sums per type over some tets: `Σ |V₀| ‖F − P_k‖²`.
pub(crate) type TetSums = [f64; 3];

/// Projects `tets` at `x`, returns the per-type sums `Σ |V₀| ‖F − P_k‖²`,
/// and with `rhs`, adds `|V₀| Q g_j` to the row of each vertex `j`. With
/// `store`, pushes each tet's projections.
pub(crate) fn tet_block(
    projector: &TetProjector,
    tets: &[Tet],
    x: &[Vec3],
    mut rhs: Option<&mut [Vec3]>,
    mut store: Option<&mut Vec<TetProjections>>,
) -> TetSums {
    let mut sums = [0.0; 3];
    if !projector.is_active() {
        return sums;
    }
    for tet in tets {
        let f = tet.deformation_gradient(x);
        let p = projector.project(&f);
        for (sum, d) in sums.iter_mut().zip(projector.distances(&f, &p)) {
            *sum += tet.rest_volume * d;
        }
        if let Some(rhs) = rhs.as_deref_mut() {
            let q = projector.combine(&p) * tet.rest_volume;
            for (&v, g) in tet.vertices.iter().zip(tet.stencil()) {
                rhs[v as usize] += q * g;
            }
        }
        if let Some(store) = store.as_deref_mut() {
            store.push(p);
        }
    }
    sums
}

/// `Σ_k w_k/2 |V₀| ‖F − P_k‖²` at `x` for projections stored by [`tet_block`].
pub(crate) fn stored_tet_energy(
    projector: &TetProjector,
    tets: &[Tet],
    x: &[Vec3],
    stored: &[TetProjections],
) -> f64 {
    let w = projector.weights();
    tets.iter()
        .zip(stored)
        .map(|(tet, p)| {
            let d = projector.distances(&tet.deformation_gradient(x), p);
            0.5 * tet.rest_volume * (w[0] * d[0] + w[1] * d[1] + w[2] * d[2])
        })
        .sum()
}

/// The gradient of `Σ_k w_k/2 |V₀| dist²(F, C_k)` with respect to `F`,
/// `|V₀| Σ_k w_k (F − P_k(F))` (the gradient of half the squared distance to
/// a closed set is the offset to its closest point).
#[inline]
pub(crate) fn energy_gradient(
    projector: &TetProjector,
    tet: &Tet,
    f: &Matrix3<f64>,
) -> Matrix3<f64> {
    let p = projector.project(f);
    let w = projector.weights();
    (f * (w[0] + w[1] + w[2]) - projector.combine(&p)) * tet.rest_volume
}

/// A PSD approximation of the Hessian of the tet energy with respect to
/// `F` (entries in row-major `F` order, `3a + b` for `F_ab`): central
/// differences of the exact [`energy_gradient`], symmetrised, with negative
/// eigenvalues clamped to 0 so every Newton matrix stays positive definite.
/// (Only the Newton direction depends on it; the converged step is set by
/// the exact gradient.)
pub(crate) fn energy_hessian(
    projector: &TetProjector,
    tet: &Tet,
    f: &Matrix3<f64>,
) -> SMatrix<f64, 9, 9> {
    // Balances truncation (step²) against round-off (ε/step) for O(1) F.
    let step = 1e-5 * f.norm().max(1.0);
    let mut h = SMatrix::<f64, 9, 9>::zeros();
    for k in 0..9 {
        let mut plus = *f;
        plus[(k / 3, k % 3)] += step;
        let mut minus = *f;
        minus[(k / 3, k % 3)] -= step;
        let column = (energy_gradient(projector, tet, &plus)
            - energy_gradient(projector, tet, &minus))
            / (2.0 * step);
        for r in 0..9 {
            h[(r, k)] = column[(r / 3, r % 3)];
        }
    }
    let eigen = ((h + h.transpose()) * 0.5).symmetric_eigen();
    let clamped = eigen.eigenvalues.map(|l| l.max(0.0));
    eigen.eigenvectors
        * SMatrix::<f64, 9, 9>::from_diagonal(&clamped)
        * eigen.eigenvectors.transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::primitives::tet_box;
    use crate::model::Weights;

    fn model() -> Model {
        let weights = Weights {
            strain: 3.0,
            strain_limit: 5.0,
            volume: 7.0,
            ..Weights::default()
        };
        Model::from_tet_mesh(&tet_box(Vec3::repeat(1.0), [1, 1, 1]), 1.0, weights, false)
    }

    /// A deformation that leaves the strain and volume ranges.
    fn deformed(f: &Matrix3<f64>) -> Matrix3<f64> {
        Matrix3::new(1.3, 0.2, 0.0, -0.1, 0.6, 0.3, 0.05, 0.0, 0.8) * f
    }

    #[test]
    fn energy_gradient_is_the_derivative_of_the_energy() {
        let model = model();
        let projector = TetProjector::new(&model);
        let tet = &model.tets[0];
        let energy = |f: &Matrix3<f64>| {
            let d = projector.distances(f, &projector.project(f));
            let w = projector.weights();
            0.5 * tet.rest_volume * (w[0] * d[0] + w[1] * d[1] + w[2] * d[2])
        };
        let f = deformed(&Matrix3::identity());
        let gradient = energy_gradient(&projector, tet, &f);
        let step = 1e-6;
        for k in 0..9 {
            let mut e = Matrix3::zeros();
            e[(k / 3, k % 3)] = step;
            let numeric = (energy(&(f + e)) - energy(&(f - e))) / (2.0 * step);
            assert!(
                (numeric - gradient[(k / 3, k % 3)]).abs() < 1e-7,
                "entry {k}"
            );
        }
        // The Hessian is symmetric and positive semi-definite.
        let h = energy_hessian(&projector, tet, &f);
        assert!((h - h.transpose()).norm() < 1e-9);
        assert!(h.symmetric_eigenvalues().min() > -1e-9);
    }

    #[test]
    fn rhs_is_g_transpose_of_the_weighted_projections() {
        let model = model();
        let projector = TetProjector::new(&model);
        let x: Vec<Vec3> = model
            .rest
            .iter()
            .map(|p| deformed(&Matrix3::identity()) * p)
            .collect();
        let mut rhs = vec![Vec3::zeros(); x.len()];
        let mut stored = Vec::new();
        let sums = tet_block(
            &projector,
            &model.tets,
            &x,
            Some(&mut rhs),
            Some(&mut stored),
        );
        // Σ_j rhs_j x_jᵀ = Σ_tets |V₀| Q Σ_j g_j x_jᵀ = Σ |V₀| Q Fᵀ.
        let mut expected = Matrix3::zeros();
        let mut energy = 0.0;
        for (tet, p) in model.tets.iter().zip(&stored) {
            let f = tet.deformation_gradient(&x);
            expected += projector.combine(p) * f.transpose() * tet.rest_volume;
            let w = projector.weights();
            for k in 0..3 {
                energy += 0.5 * w[k] * tet.rest_volume * (f - p[k]).norm_squared();
            }
        }
        let got: Matrix3<f64> = rhs.iter().zip(&x).map(|(r, p)| r * p.transpose()).sum();
        assert!((got - expected).norm() < 1e-12 * expected.norm());
        assert!(sums.iter().all(|&s| s > 0.0));
        let stored_energy = stored_tet_energy(&projector, &model.tets, &x, &stored);
        assert!((stored_energy - energy).abs() < 1e-12 * energy);
        // The forces on a free body sum to zero: Σ_j g_j = 0.
        assert!(rhs.iter().sum::<Vec3>().norm() < 1e-12);
    }
}
