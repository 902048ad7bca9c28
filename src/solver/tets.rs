//! Gather and scatter for the tet constraints (strain, strain limiting,
//! volume), shared by the PD local step and the Newton reference.
//!
//! The three types share the stencil `G = D_m⁻ᵀ S` of each tet, so one
//! deformation gradient and one SVD serve all of them, and their right-hand
//! side contributions add up to `|V₀| Gᵀ (Σ_k w_k P_k)ᵀ`: row `j` gains
//! `|V₀| Q g_j` with `Q = Σ_k w_k P_k`.

use std::cell::RefCell;

use nalgebra::{Matrix3, SMatrix};

use super::batch;
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

    /// Whether the strain (ARAP) constraint is the only one on: its
    /// projection is then just the closest rotation.
    pub(crate) fn is_rotation_only(&self) -> bool {
        let [strain, limit, volume] = self.weights;
        strain != 0.0 && limit == 0.0 && volume == 0.0
    }

    /// `[strain, strain_limit, volume]` weights.
    pub(crate) fn weights(&self) -> [f64; 3] {
        self.weights
    }

    /// Whether the projections take each `F`'s SVD (any constraint type
    /// on besides the strain): only then do they use [`Starts`].
    pub(crate) fn needs_svd(&self) -> bool {
        self.is_active() && !self.is_rotation_only()
    }

    /// The closest points of the three sets to `f` (see [`TetProjections`]).
    /// An SVD's sweeps start from the rotation `start`, which becomes its
    /// `V`.
    #[inline]
    pub(crate) fn project(&self, f: &Matrix3<f64>, start: &mut Matrix3<f64>) -> TetProjections {
        if !self.is_active() {
            return [*f; 3];
        }
        if self.is_rotation_only() {
            // Only the rotation is needed: skip the SVD.
            return [project::closest_rotation(f), *f, *f];
        }
        let svd = SignedSvd::starting_from(f, start);
        *start = svd.v;
        self.project_with(f, &svd)
    }

    /// [`TetProjector::project`] of four matrices, their
    /// decompositions computed together ([`batch`]).
    #[inline]
    pub(crate) fn project_four(
        &self,
        f: &[Matrix3<f64>; 4],
        starts: &mut [Matrix3<f64>; 4],
    ) -> [TetProjections; 4] {
        if !self.is_active() {
            return f.map(|f| [f; 3]);
        }
        if self.is_rotation_only() {
            let rotations = batch::closest_rotations(f);
            return std::array::from_fn(|k| [rotations[k], f[k], f[k]]);
        }
        let (svds, volumes) = self.decompose_four(f, starts);
        std::array::from_fn(|k| {
            self.project_given(&f[k], &svds[k], || volumes.map_or(svds[k].sigma, |y| y[k]))
        })
    }

    /// Per type `‖F − P_k‖²` (as [`TetProjector::distances`]) and `Q =
    /// Σ_k w_k P_k` (as [`TetProjector::combine`]) of four matrices, from
    /// their decompositions computed together ([`batch`]), without forming
    /// the projections (see [`TetProjector::terms_given`]); the SVDs start
    /// from `starts` and leave their `V` there. For a projector that takes
    /// SVDs ([`TetProjector::needs_svd`]).
    #[inline]
    pub(crate) fn terms_four(
        &self,
        f: &[Matrix3<f64>; 4],
        starts: &mut [Matrix3<f64>; 4],
    ) -> [([f64; 3], Matrix3<f64>); 4] {
        let (svds, volumes) = self.decompose_four(f, starts);
        std::array::from_fn(|k| {
            self.terms_given(&svds[k], || volumes.map_or(svds[k].sigma, |y| y[k]))
        })
    }

    /// The SVDs of four matrices, started from `starts` (which their `V`s
    /// replace), and the volume projection's signed singular values if
    /// that type is on, all in four lanes ([`batch`]).
    #[inline(always)]
    fn decompose_four(
        &self,
        f: &[Matrix3<f64>; 4],
        starts: &mut [Matrix3<f64>; 4],
    ) -> ([SignedSvd; 4], Option<[Vec3; 4]>) {
        let svds = batch::signed_svds(f, starts);
        let l = &self.limits;
        let volumes = (self.weights[2] != 0.0)
            .then(|| batch::volume_values(&svds, l.volume_min, l.volume_max));
        for (start, svd) in starts.iter_mut().zip(&svds) {
            start.clone_from(&svd.v);
        }
        (svds, volumes)
    }

    /// [`TetProjector::terms_four`] of one matrix.
    #[inline]
    pub(crate) fn terms(
        &self,
        f: &Matrix3<f64>,
        start: &mut Matrix3<f64>,
    ) -> ([f64; 3], Matrix3<f64>) {
        let svd = SignedSvd::starting_from(f, start);
        *start = svd.v;
        self.terms_given(&svd, || self.volume_values(&svd))
    }

    /// The distances and `Q` of [`TetProjector::terms_four`] given the SVD
    /// of `F` and the volume projection's signed singular values (called
    /// only if that type is on). Every projection is `P_k = U diag(s_k) Vᵀ`
    /// (`s_k = σ` where it is `F` itself), so `‖F − P_k‖² = ‖σ − s_k‖²` and
    /// `Q = U diag(Σ_k w_k s_k) Vᵀ`: one product where forming the
    /// projections took one per type, and then their differences from `F`.
    #[inline(always)]
    fn terms_given(
        &self,
        svd: &SignedSvd,
        volume_values: impl FnOnce() -> Vec3,
    ) -> ([f64; 3], Matrix3<f64>) {
        let mut distances = [0.0; 3];
        let mut combined = Vec3::zeros();
        let targets = self.targets(svd, volume_values);
        for (k, (s, w)) in targets.iter().zip(self.weights).enumerate() {
            if let Some(s) = s {
                distances[k] = (svd.sigma - s).norm_squared();
                combined += s * w;
            }
        }
        (distances, svd.compose(&combined))
    }

    /// [`TetProjector::project`] given the SVD of `f` (any constraint
    /// types on).
    #[inline]
    pub(crate) fn project_with(&self, f: &Matrix3<f64>, svd: &SignedSvd) -> TetProjections {
        self.project_given(f, svd, || self.volume_values(svd))
    }

    /// The signed singular values of the volume projection of the matrix
    /// decomposed in `svd` (one at a time; four in lanes: [`batch`]).
    #[inline(always)]
    fn volume_values(&self, svd: &SignedSvd) -> Vec3 {
        let l = &self.limits;
        project::volume_values(&svd.sigma, l.volume_min, l.volume_max)
    }

    /// Per type (`None` where it is off), the signed singular values `s_k`
    /// of its projection `P_k = U diag(s_k) Vᵀ` of the matrix decomposed in
    /// `svd`: `1` for the rotation, `σ` clamped to the strain range, and
    /// `volume_values()` (called only if that type is on).
    #[inline(always)]
    fn targets(&self, svd: &SignedSvd, volume_values: impl FnOnce() -> Vec3) -> [Option<Vec3>; 3] {
        let [strain, limit, volume] = self.weights;
        let l = &self.limits;
        [
            (strain != 0.0).then(|| Vec3::repeat(1.0)),
            (limit != 0.0)
                .then(|| project::strain_limit_values(&svd.sigma, l.strain_min, l.strain_max)),
            (volume != 0.0).then(volume_values),
        ]
    }

    /// [`TetProjector::project_with`], the volume projection's signed
    /// singular values given by `volume_values` (called only if that type
    /// is on).
    #[inline(always)]
    fn project_given(
        &self,
        f: &Matrix3<f64>,
        svd: &SignedSvd,
        volume_values: impl FnOnce() -> Vec3,
    ) -> TetProjections {
        let [strain, limit, volume] = self.targets(svd, volume_values);
        // Inside the volume range `F` is its own projection: exactly, not
        // as `U Σ Vᵀ` recomposed.
        let volume = volume.filter(|values| *values != svd.sigma);
        [strain, limit, volume].map(|values| values.map_or(*f, |s| svd.compose(&s)))
    }

    /// Per type, `‖F − P_k‖²` (unweighted, without `|V₀|`; 0 for a type
    /// that is off).
    #[inline(always)]
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
    #[inline(always)]
    pub(crate) fn combine(&self, p: &TetProjections) -> Matrix3<f64> {
        let mut q = Matrix3::zeros();
        for (pk, &w) in p.iter().zip(&self.weights) {
            if w != 0.0 {
                q += pk * w;
            }
        }
        q
    }

    /// `ψ = ∂Ψ/∂σ` and `∂²Ψ/∂σ²` of `Ψ(σ) = Σ_k w_k/2 ‖σ − s_k(σ)‖²`, the
    /// tet energy per unit rest volume as a function of the signed singular
    /// values (`s_k`: the singular values of `P_k`). `ψ = Σ w_k (σ − s_k)`
    /// (the offset to a closest point), and `∂²Ψ/∂σ² = Σ w_k (I − ∂s_k/∂σ)`:
    /// `∂s/∂σ` is 0 for the rotation, 1 inside the strain range and 0
    /// outside it, and for a volume bound `v` (`y = s`, `Π yᵢ = v`,
    /// `yᵢ − σᵢ = μ/yᵢ`) differentiating the optimality conditions gives
    /// `∂y/∂σ = diag(1/aᵢ) − c cᵀ / Σ cᵢ/yᵢ` with `aᵢ = 1 + μ/yᵢ²` and
    /// `cᵢ = 1/(aᵢ yᵢ)`.
    pub(crate) fn singular_value_derivatives(&self, sigma: &Vec3) -> (Vec3, Matrix3<f64>) {
        let [strain, limit, volume] = self.weights;
        let l = &self.limits;
        let mut psi = Vec3::zeros();
        let mut hessian = Matrix3::zeros();
        if strain != 0.0 {
            psi += (sigma - Vec3::repeat(1.0)) * strain;
            hessian += Matrix3::identity() * strain;
        }
        if limit != 0.0 {
            for i in 0..3 {
                let clamped = sigma[i].clamp(l.strain_min, l.strain_max);
                psi[i] += (sigma[i] - clamped) * limit;
                if clamped != sigma[i] {
                    hessian[(i, i)] += limit;
                }
            }
        }
        let det = sigma.product();
        let bound = det.clamp(l.volume_min, l.volume_max);
        if volume != 0.0 && bound != det {
            let y = project::closest_with_product(sigma, bound);
            psi += (sigma - y) * volume;
            let mu = y
                .iter()
                .zip(sigma.iter())
                .map(|(y, s)| y * (y - s))
                .sum::<f64>()
                / 3.0;
            let a = y.map(|y| 1.0 + mu / (y * y));
            let c = a.component_mul(&y).map(|ay| 1.0 / ay);
            let norm: f64 = c.component_div(&y).sum();
            let dy = Matrix3::from_diagonal(&a.map(|a| 1.0 / a)) - c * c.transpose() / norm;
            hessian += (Matrix3::identity() - dy) * volume;
        }
        (psi, hessian)
    }
}

/// Energy sums per type over some tets: `Σ |V₀| ‖F − P_k‖²`.
pub(crate) type TetSums = [f64; 3];

/// Where each tet's SVD starts its Jacobi sweeps: the identity, or the `V`
/// of the tet's last SVD (in a local step, the last iteration's; see
/// [`SignedSvd::starting_from`]). Along the iterations and frames of a
/// motion the tets turn little from one to the next, and the sweeps from
/// there take a jelly's SVD from ~530 to ~320–380 ns (one at a time, 40,000
/// tets within 7 % of their rest volume, started within 1e-4 to 5e-2
/// rad of the answer). Any rotation is a valid start (the sweeps converge
/// from anywhere, to the same values): a stale one, a tet's before a
/// remesh say, only costs sweeps.
pub(crate) enum Starts<'a> {
    /// From the identity.
    Cold,
    /// From (and then to) these, one per tet of the block.
    Warm(&'a mut [Matrix3<f64>]),
}

impl Starts<'_> {
    /// `project` of the starts of tets `i..i + N`, in place (the warm ones
    /// are not copied out and back: that showed as ~2 % of a jelly's local
    /// step in `memcpy`). A `V` left there that is not finite (a
    /// blow-up's) becomes the identity, so a step after it starts clean.
    #[inline(always)]
    fn with<const N: usize, P>(
        &mut self,
        i: usize,
        project: impl FnOnce(&mut [Matrix3<f64>; N]) -> P,
    ) -> P {
        match self {
            Self::Cold => project(&mut [Matrix3::identity(); N]),
            Self::Warm(starts) => {
                let v: &mut [Matrix3<f64>; N] =
                    (&mut starts[i..i + N]).try_into().expect("N starts from i");
                let p = project(v);
                for v in v.iter_mut() {
                    if !v.iter().all(|x| x.is_finite()) {
                        *v = Matrix3::identity();
                    }
                }
                p
            }
        }
    }
}

/// Projects `tets` at `x`, returns the per-type sums `Σ |V₀| ‖F − P_k‖²`,
/// and with `rhs`, adds `|V₀| Q g_j` to the row of each vertex `j`. With
/// `store`, pushes each tet's projections. The SVDs start from `starts`
/// and leave their `V` there.
pub(crate) fn tet_block(
    projector: &TetProjector,
    tets: &[Tet],
    x: &[Vec3],
    mut rhs: Option<&mut [Vec3]>,
    store: Option<&mut Vec<TetProjections>>,
    starts: Starts<'_>,
) -> TetSums {
    let mut sums = [0.0; 3];
    if !projector.is_active() {
        return sums;
    }
    let rotation_only = projector.is_rotation_only() && store.is_none();
    let w = projector.weights()[0];
    let mut rest = tets;
    if rotation_only {
        // Four tets at a time in vector lanes; the rest (all of them on
        // CPUs without AVX2) below.
        (sums[0], rest) = batch::rotation_terms(tets, x, w, rhs.as_deref_mut());
    }
    let mut scatter = |tet: &Tet, q: Matrix3<f64>| {
        if let Some(rhs) = rhs.as_deref_mut() {
            tet.scatter(&(q * tet.rest_volume), rhs);
        }
    };
    if rotation_only {
        // Only the rotation is formed (the other two would be `F`): the
        // same sums and right-hand side as below, without them.
        project_each(
            rest,
            x,
            |_, f| batch::closest_rotations(f),
            |_, f| project::closest_rotation(f),
            |tet, f, r| {
                sums[0] += tet.rest_volume * (f - r).norm_squared();
                scatter(tet, r * w);
            },
        );
        return sums;
    }
    let mut add = |tet: &Tet, distances: [f64; 3], q: Matrix3<f64>| {
        for (sum, d) in sums.iter_mut().zip(distances) {
            *sum += tet.rest_volume * d;
        }
        scatter(tet, q);
    };
    match store {
        // The sums and right-hand side from the SVDs alone.
        None => project_from_starts(
            (tets, x, starts),
            |f, v| projector.terms_four(f, v),
            |f, v| projector.terms(f, v),
            |tet, _, (distances, q)| add(tet, *distances, *q),
        ),
        Some(store) => project_from_starts(
            (tets, x, starts),
            |f, v| projector.project_four(f, v),
            |f, v| projector.project(f, v),
            |tet, f, p| {
                add(tet, projector.distances(f, p), projector.combine(p));
                store.push(*p);
            },
        ),
    }
    sums
}

/// [`project_each`] with projections that start from each tet's start
/// in `starts` and leave one there (`four` and `one` given `F` and the
/// starts of its tets).
#[inline(always)]
fn project_from_starts<P>(
    (tets, x, starts): (&[Tet], &[Vec3], Starts<'_>),
    four: impl Fn(&[Matrix3<f64>; 4], &mut [Matrix3<f64>; 4]) -> [P; 4],
    one: impl Fn(&Matrix3<f64>, &mut Matrix3<f64>) -> P,
    finish: impl FnMut(&Tet, &Matrix3<f64>, &P),
) {
    // Both projections read and write the starts (one at a time).
    let starts = RefCell::new(starts);
    let four = |i: usize, f: &[Matrix3<f64>; 4]| starts.borrow_mut().with(i, |v| four(f, v));
    let one = |i: usize, f: &Matrix3<f64>| {
        starts
            .borrow_mut()
            .with(i, |[v]: &mut [Matrix3<f64>; 1]| one(f, v))
    };
    project_each(tets, x, four, one, finish);
}

/// Calls `finish(tet, F, projection)` for each of `tets` in order, `F` at
/// `x`, projecting four at a time with `four` and the rest with `one`
/// (each given the index of its first tet).
#[inline(always)]
fn project_each<P>(
    tets: &[Tet],
    x: &[Vec3],
    four: impl Fn(usize, &[Matrix3<f64>; 4]) -> [P; 4],
    one: impl Fn(usize, &Matrix3<f64>) -> P,
    mut finish: impl FnMut(&Tet, &Matrix3<f64>, &P),
) {
    let chunks = tets.chunks_exact(4);
    let rest = chunks.remainder();
    let mut f = [Matrix3::zeros(); 4];
    for (c, chunk) in chunks.enumerate() {
        for (f, tet) in f.iter_mut().zip(chunk) {
            *f = tet.deformation_gradient(x);
        }
        let p = four(4 * c, &f);
        for k in 0..4 {
            finish(&chunk[k], &f[k], &p[k]);
        }
    }
    for (i, tet) in (tets.len() - rest.len()..).zip(rest) {
        let f = tet.deformation_gradient(x);
        finish(tet, &f, &one(i, &f));
    }
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
    let p = projector.project(f, &mut Matrix3::identity());
    let w = projector.weights();
    (f * (w[0] + w[1] + w[2]) - projector.combine(&p)) * tet.rest_volume
}

/// The Hessian of the tet energy with respect to `F` (entries in row-major
/// `F` order, `3a + b` for `F_ab`); with `projected`, negative eigenvalues
/// are clamped to 0 (positive semi-definite, so a Newton matrix built from
/// it is positive definite).
///
/// Every type's energy is isotropic: `‖F − P_k(F)‖² = ‖σ − s_k(σ)‖²` for
/// `P_k = U diag(s_k) Vᵀ`, so the sum is a function `Ψ(σ)` of the signed
/// singular values, and its Hessian has a closed-form eigensystem (Smith et
/// al. 2019, "Analytic Eigensystems for Isotropic Distortion Energies"):
/// three *scaling* modes `U diag(e) Vᵀ` from the eigenvectors `e` of the
/// 3 × 3 Hessian `∂²Ψ/∂σ²`, and for each pair `i < j` a *twist*
/// `U (Eᵢⱼ − Eⱼᵢ) Vᵀ/√2` with eigenvalue `(ψᵢ + ψⱼ)/(σᵢ + σⱼ)` and a *flip*
/// `U (Eᵢⱼ + Eⱼᵢ) Vᵀ/√2` with `(ψᵢ − ψⱼ)/(σᵢ − σⱼ)`, `ψ = ∂Ψ/∂σ`. Exact on
/// each smooth piece of the energy (the strain limit and the volume range
/// have kinks at their bounds).
pub(crate) fn energy_hessian(
    projector: &TetProjector,
    tet: &Tet,
    f: &Matrix3<f64>,
    projected: bool,
) -> SMatrix<f64, 9, 9> {
    let svd = SignedSvd::new(f);
    let sigma = svd.sigma;
    let (psi, hessian) = projector.singular_value_derivatives(&sigma);
    // Denominators below this are treated as this (a mode whose eigenvalue
    // then is only large, not infinite).
    let tiny = 1e-12 * sigma.amax().max(1.0);
    let mut h = SMatrix::<f64, 9, 9>::zeros();
    let mut add = |lambda: f64, mode: Matrix3<f64>| {
        if lambda > 0.0 || (!projected && lambda != 0.0) {
            let q = svd.u * mode * svd.v.transpose();
            // Row-major flattening: entry `3a + b` is `Q_ab`.
            let q = SMatrix::<f64, 9, 1>::from_fn(|k, _| q[(k / 3, k % 3)]);
            h += q * q.transpose() * lambda;
        }
    };
    let scaling = hessian.symmetric_eigen();
    for (k, &lambda) in scaling.eigenvalues.iter().enumerate() {
        add(
            lambda,
            Matrix3::from_diagonal(&scaling.eigenvectors.column(k).into_owned()),
        );
    }
    let safe = |d: f64| if d.abs() < tiny { tiny.copysign(d) } else { d };
    for (i, j) in [(0, 1), (0, 2), (1, 2)] {
        let mut twist = Matrix3::zeros();
        twist[(i, j)] = std::f64::consts::FRAC_1_SQRT_2;
        twist[(j, i)] = -std::f64::consts::FRAC_1_SQRT_2;
        add((psi[i] + psi[j]) / safe(sigma[i] + sigma[j]), twist);
        let flip = twist.abs();
        let difference = sigma[i] - sigma[j];
        let lambda = if difference.abs() < tiny {
            // The limit for a symmetric Ψ: ∂ψᵢ/∂σᵢ − ∂ψᵢ/∂σⱼ.
            hessian[(i, i)] - hessian[(i, j)]
        } else {
            (psi[i] - psi[j]) / difference
        };
        add(lambda, flip);
    }
    h * tet.rest_volume
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

    /// `[strain, strain_limit, volume]` weights of the tests that take
    /// each type alone and in mixes.
    const WEIGHT_MIXES: [[f64; 3]; 5] = [
        [3.0, 0.0, 0.0],
        [0.0, 5.0, 0.0],
        [0.0, 0.0, 7.0],
        [3.0, 0.0, 7.0],
        [3.0, 5.0, 7.0],
    ];

    /// [`model`] with these `[strain, strain_limit, volume]` weights.
    fn model_weighted(weights: [f64; 3]) -> Model {
        let mut model = model();
        [
            model.weights.strain,
            model.weights.strain_limit,
            model.weights.volume,
        ] = weights;
        model
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
            let d = projector.distances(f, &projector.project(f, &mut Matrix3::identity()));
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
    }

    /// Central differences of the exact gradient in `F`, symmetrised; with
    /// `projected`, negative eigenvalues clamped to 0.
    fn numeric_hessian(
        projector: &TetProjector,
        tet: &Tet,
        f: &Matrix3<f64>,
        projected: bool,
    ) -> SMatrix<f64, 9, 9> {
        let step = 1e-6;
        let mut h = SMatrix::<f64, 9, 9>::zeros();
        for k in 0..9 {
            let mut e = Matrix3::zeros();
            e[(k / 3, k % 3)] = step;
            let column = (energy_gradient(projector, tet, &(f + e))
                - energy_gradient(projector, tet, &(f - e)))
                / (2.0 * step);
            for r in 0..9 {
                h[(r, k)] = column[(r / 3, r % 3)];
            }
        }
        let h = (h + h.transpose()) * 0.5;
        if !projected {
            return h;
        }
        let eigen = h.symmetric_eigen();
        let clamped = eigen.eigenvalues.map(|l| l.max(0.0));
        eigen.eigenvectors
            * SMatrix::<f64, 9, 9>::from_diagonal(&clamped)
            * eigen.eigenvectors.transpose()
    }

    #[test]
    fn energy_hessian_is_the_projected_derivative_of_the_gradient() {
        let rotation = nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1).into_inner();
        let deformations = [
            // Stretched and sheared past the strain and volume ranges.
            deformed(&Matrix3::identity()),
            // Inside every range: only the rotation's curvature.
            rotation * Matrix3::from_diagonal(&Vec3::new(1.05, 0.97, 1.02)),
            // Two equal stretches (the flip's limit) and a squeezed volume.
            rotation * Matrix3::from_diagonal(&Vec3::new(1.2, 1.2, 0.5)),
            // Inverted: a negative signed singular value.
            rotation * Matrix3::from_diagonal(&Vec3::new(1.3, 0.8, -0.4)),
            // Squeezed: every σᵢ + σⱼ < 2, so the rotation's twist modes are
            // indefinite (clamped when projected).
            rotation * Matrix3::from_diagonal(&Vec3::new(0.85, 0.3, 0.2)),
        ];
        for weights in WEIGHT_MIXES {
            let model = model_weighted(weights);
            let projector = TetProjector::new(&model);
            let tet = &model.tets[0];
            for f in &deformations {
                for projected in [false, true] {
                    let analytic = energy_hessian(&projector, tet, f, projected);
                    let numeric = numeric_hessian(&projector, tet, f, projected);
                    let scale = numeric.norm().max(1e-3);
                    assert!(
                        (analytic - numeric).norm() < 1e-6 * scale,
                        "weights {weights:?}, projected {projected}, F = {f:?}: difference {} of {scale}",
                        (analytic - numeric).norm()
                    );
                    assert!((analytic - analytic.transpose()).norm() < 1e-12 * scale);
                    if projected {
                        assert!(analytic.symmetric_eigenvalues().min() > -1e-9 * scale);
                    }
                }
            }
        }
    }

    /// Tets whose SVDs start from their last `V`s project as from the
    /// identity (to round-off), and leave each tet's `V` there; a `V` that
    /// is not finite (a blown-up step's) leaves the identity instead.
    #[test]
    fn warm_starts_project_as_cold_ones_and_keep_each_tets_v() {
        let model = model();
        let projector = TetProjector::new(&model);
        assert!(projector.needs_svd());
        let shear = Matrix3::new(1.1, 0.2, 0.0, -0.1, 0.9, 0.3, 0.05, 0.0, 1.2);
        let mut x: Vec<Vec3> = model.rest.iter().map(|p| deformed(&shear) * p).collect();
        let n = model.tets.len();
        assert!(
            !n.is_multiple_of(4),
            "{n} tets: some are projected one at a time"
        );
        let run = |x: &[Vec3], starts: Starts<'_>| {
            let mut rhs = vec![Vec3::zeros(); x.len()];
            let sums = tet_block(&projector, &model.tets, x, Some(&mut rhs), None, starts);
            (sums, rhs)
        };
        let (cold_sums, cold_rhs) = run(&x, Starts::Cold);
        // From the identity, then from the `V`s that left, then from `V`s
        // a little off (a tet that turned since).
        let mut starts = vec![Matrix3::identity(); n];
        for round in 0..3 {
            if round == 2 {
                let turn = nalgebra::Rotation3::from_euler_angles(1e-3, -2e-3, 5e-4);
                starts.iter_mut().for_each(|v| *v *= turn.matrix());
            }
            let (sums, rhs) = run(&x, Starts::Warm(&mut starts));
            for (a, b) in sums.iter().zip(&cold_sums) {
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs(),
                    "round {round}: {a} vs {b}"
                );
            }
            for (a, b) in rhs.iter().zip(&cold_rhs) {
                assert!((a - b).norm() <= 1e-12 * (1.0 + b.norm()), "round {round}");
            }
            for (tet, v) in model.tets.iter().zip(&starts) {
                let svd = SignedSvd::new(&tet.deformation_gradient(&x));
                // The same decomposition (the values are distinct here).
                assert!(
                    (v - svd.v).norm() < 1e-10,
                    "round {round}: {v} vs {}",
                    svd.v
                );
            }
        }
        // A NaN vertex: the tets on it start from the identity next.
        let on = |tet: &Tet| tet.vertices.contains(&1);
        assert!(model.tets.iter().any(on) && !model.tets.iter().all(on));
        x[1] = Vec3::repeat(f64::NAN);
        run(&x, Starts::Warm(&mut starts));
        for (tet, v) in model.tets.iter().zip(&starts) {
            assert_eq!(on(tet), *v == Matrix3::identity(), "{v}");
        }
    }

    /// The local step's sums and right-hand side from the SVDs alone
    /// (`terms_four`: no store) are those of the projections formed and
    /// stored, for every mix of types, in range and out, inverted tets
    /// included.
    #[test]
    fn terms_from_the_svds_are_those_of_the_projections() {
        let rotation = nalgebra::Rotation3::from_euler_angles(0.3, -0.7, 1.1).into_inner();
        let mut shaken = 9u64;
        let mut shake = || {
            shaken = shaken.wrapping_mul(6364136223846793005).wrapping_add(1);
            ((shaken >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.6
        };
        for weights in WEIGHT_MIXES {
            let model = model_weighted(weights);
            let projector = TetProjector::new(&model);
            let outside = deformed(&Matrix3::identity());
            let inside = rotation * Matrix3::from_diagonal(&Vec3::new(1.05, 0.97, 1.02));
            let mut shapes: Vec<Vec<Vec3>> = [outside, inside]
                .iter()
                .map(|f| model.rest.iter().map(|p| f * p).collect())
                .collect();
            let mut shook: Vec<Vec3> = (model.rest.iter())
                .map(|p| p + Vec3::new(shake(), shake(), shake()))
                .collect();
            shapes.push(shook.clone());
            // One vertex through the opposite face: inverted tets.
            shook[0] = Vec3::repeat(1.5);
            shapes.push(shook);
            let mut inverted = false;
            for x in &shapes {
                inverted |= model
                    .tets
                    .iter()
                    .any(|t| t.deformation_gradient(x).determinant() < 0.0);
                let mut rhs = [vec![Vec3::zeros(); x.len()], vec![Vec3::zeros(); x.len()]];
                let mut stored = Vec::new();
                let [formed, from_svds] = &mut rhs;
                let tets = &model.tets;
                let store = Some(&mut stored);
                let a = tet_block(&projector, tets, x, Some(formed), store, Starts::Cold);
                let b = tet_block(&projector, tets, x, Some(from_svds), None, Starts::Cold);
                for (a, b) in a.iter().zip(&b) {
                    assert!(
                        (a - b).abs() <= 1e-12 * a.abs().max(1e-12),
                        "{weights:?}: {a} vs {b}"
                    );
                }
                for (a, b) in formed.iter().zip(from_svds.iter()) {
                    assert!(
                        (a - b).norm() <= 1e-12 * a.norm().max(1.0),
                        "{weights:?}: {a} vs {b}"
                    );
                }
            }
            assert!(inverted);
        }
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
            Starts::Cold,
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
