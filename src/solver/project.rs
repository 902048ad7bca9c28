//! Local-step projections: pure functions on fixed-size vectors and matrices.
//!
//! Each returns the point `p_c` of the constraint set closest to `G_c x`
//! (physics.md §2–3). The tet projections work on the deformation gradient
//! `F` through its [`SignedSvd`]; all three sets are invariant under
//! `F ↦ R₁ F R₂` for rotations `R₁`, `R₂`, so their closest points share
//! `F`'s singular vectors and only the signed singular values move (the
//! rotation-variant von Neumann trace inequality: for `R₁, R₂ ∈ SO(3)`,
//! `tr(Aᵀ R₁ B R₂) ≤ Σ σᵢ(A) σᵢ(B)` with signed, sorted singular values;
//! Irving et al. 2004, "Invertible finite elements").

use nalgebra::{Matrix3, Matrix4, Vector4};

use crate::mesh::Vec3;

/// Spring (Liu et al. 2013, eq. 9): `G x = x_i − x_j`, projected onto the
/// sphere of radius `rest`: `p = rest · d / ‖d‖`. A zero-length `d` has no
/// direction; any unit vector is a closest point, and we take `+x`.
#[inline(always)]
pub fn spring(d: Vec3, rest: f64) -> Vec3 {
    spring_with_stretch(d, rest).0
}

/// [`spring`] and the stretch `‖d‖ − rest`, whose square is `‖d − p‖²`
/// (one square root for both; the local step needs both).
#[inline(always)]
pub fn spring_with_stretch(d: Vec3, rest: f64) -> (Vec3, f64) {
    let len = d.norm();
    if len > 0.0 {
        (d * (rest / len), len - rest)
    } else {
        (Vec3::new(rest, 0.0, 0.0), -rest)
    }
}

/// Spring energy `w/2 (‖d‖ − r)²`, which equals `w/2 ‖d − spring(d, r)‖²`.
#[inline(always)]
pub fn spring_energy(d: Vec3, rest: f64, weight: f64) -> f64 {
    let stretch = d.norm() - rest;
    0.5 * weight * stretch * stretch
}

/// The signed ("rotation-variant") singular value decomposition of a 3 × 3
/// matrix, `F = U diag(σ) Vᵀ` with `U`, `V` proper rotations (`det = +1`)
/// and `σ₁ ≥ σ₂ ≥ |σ₃|`: when `det F < 0`, the reflection is carried by the
/// smallest singular value, `σ₃ < 0` (Irving et al. 2004, §5).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SignedSvd {
    /// Left singular vectors (columns), a rotation.
    pub u: Matrix3<f64>,
    /// Signed singular values, `σ₁ ≥ σ₂ ≥ |σ₃|`; `σ₁σ₂σ₃ = det F`.
    pub sigma: Vec3,
    /// Right singular vectors (columns), a rotation.
    pub v: Matrix3<f64>,
}

/// Sweeps of one-sided Jacobi rotations before giving up on the last bit of
/// orthogonality (3 × 3 converges quadratically, in 3–6 sweeps).
pub(crate) const JACOBI_SWEEPS: usize = 16;

/// A sweep whose rotations all turned by less than this (their sines) ends
/// the Jacobi iterations: each rotation changes the other pairs' inner
/// products by its sine times theirs, which are themselves at most this
/// times the columns' lengths, so a further sweep would rotate by about
/// this squared, `2⁻⁵²`: round-off. It spares the sweep that only
/// confirmed convergence (on the jelly cube, with its SVDs started from
/// their last `V`, 2.45 sweeps per four-lane call, where stopping only
/// once no pair rotated took one more).
pub(crate) const JACOBI_SETTLED: f64 = 1.0 / (1u64 << 26) as f64;

/// Where a Jacobi rotation's `ζ²` would overflow.
pub(crate) const ZETA_OVERFLOW: f64 = 1e150;

/// The range of `r = √(d² + (2γ)²)` in which [`jacobi_rotation`] forms
/// it directly: above its low end the larger square is a normal number
/// (the smaller one's underflow is below its last bit), below its high
/// end `2r(r + |d|)` does not overflow.
pub(crate) const HYPOT_RANGE: (f64, f64) = (1e-145, 1e145);

/// The cosine and sine of the Jacobi rotation that makes two columns
/// orthogonal, given their squared lengths `α`, `β` and inner product
/// `γ ≠ 0`: the tangent is the smaller root of `t² + 2ζt − 1 = 0`, `ζ =
/// d/(2γ)`, `d = β − α` (Golub & Van Loan §8.5). With `r = √(d² + 4γ²)`
/// that is `t = sign(d) 2γ/(|d| + r)`, so `c = (r + |d|)/√(2r(r + |d|))`
/// and `s = sign(d) 2γ/√(2r(r + |d|))`: two square roots and one
/// division, where the form in `ζ` takes two and three (four in the
/// lanes, which take both of its branches), one after the other (the
/// sweeps wait on them). Outside [`HYPOT_RANGE`] (or for a NaN) it takes
/// the form in `ζ`, which holds for any scale.
#[inline]
pub(crate) fn jacobi_rotation(alpha: f64, beta: f64, gamma: f64) -> (f64, f64) {
    let (d, g) = (beta - alpha, 2.0 * gamma);
    let r = (d * d + g * g).sqrt();
    if (HYPOT_RANGE.0..=HYPOT_RANGE.1).contains(&r) {
        let e = r + d.abs();
        let inv = 1.0 / (2.0 * r * e).sqrt();
        return (e * inv, 1f64.copysign(d) * g * inv);
    }
    let zeta = d / g;
    // Beyond 1e150, ζ² overflows; there t = 1/(2ζ) to round-off.
    let t = if zeta.abs() < ZETA_OVERFLOW {
        zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt())
    } else {
        0.5 / zeta
    };
    let c = 1.0 / (1.0 + t * t).sqrt();
    (c, c * t)
}

/// Newton steps of [`closest_rotation`]'s eigenvalue at most.
pub(crate) const NEWTON_STEPS: usize = 64;

/// [`closest_rotation`]'s Newton stops at a step below this times `λ`.
pub(crate) const NEWTON_TOLERANCE: f64 = 4.0 * f64::EPSILON;

/// ... or after a step `d` from `λ` when the next one, about
/// `p''(λ) d² / (2 p'(λ))` (convergence is quadratic, and `p''` grows
/// with `λ > 0`, so this bounds it), would be below this times `λ`: the
/// step that only confirms convergence is not taken (it was one of about
/// four per tet on the tet cube's motion).
pub(crate) const NEWTON_PREDICTED: f64 = f64::EPSILON;

impl SignedSvd {
    /// Decomposes `f` by one-sided Jacobi (Hestenes 1958; Demmel & Veselić
    /// 1992): rotate pairs of columns of `A = F V` until all are orthogonal
    /// to machine precision (a sweep turning no pair by 2⁻²⁶ or more is the
    /// last: the next would turn them by round-off), then `σᵢ = ‖aᵢ‖`,
    /// `uᵢ = aᵢ/σᵢ`. Accurate to round-off for any `f`, including singular,
    /// repeated and inverted ones (nalgebra's 3 × 3 SVD goes through `FᵀF`,
    /// which squares the condition number, and returns unsigned, unordered
    /// values).
    pub fn new(f: &Matrix3<f64>) -> Self {
        Self::starting_from(f, &Matrix3::identity())
    }

    /// [`SignedSvd::new`], the sweeps starting from the rotation `v0`
    /// instead of the identity: `A = F V₀`. From a nearby decomposition's
    /// `V` (the same tet's at the last iteration) its columns are nearly
    /// orthogonal already, and the sweeps converge in fewer rounds.
    pub fn starting_from(f: &Matrix3<f64>, v0: &Matrix3<f64>) -> Self {
        let mut a = f * v0;
        let mut v = *v0;
        Self::sweep(&mut a, &mut v);
        Self::from_orthogonal_columns(a, v)
    }

    /// The Jacobi sweeps of [`SignedSvd::new`]: rotates `a` and `v` on the
    /// right until the columns of `a` are orthogonal.
    fn sweep(a: &mut Matrix3<f64>, v: &mut Matrix3<f64>) {
        for _ in 0..JACOBI_SWEEPS {
            let mut large = false;
            for (p, q) in [(0, 1), (0, 2), (1, 2)] {
                let (ap, aq) = (a.column(p).into_owned(), a.column(q).into_owned());
                let alpha = ap.norm_squared();
                let beta = aq.norm_squared();
                let gamma = ap.dot(&aq);
                if gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                let (c, s) = jacobi_rotation(alpha, beta, gamma);
                // (A NaN is large.)
                large |= s.abs() > JACOBI_SETTLED || s.is_nan();
                a.set_column(p, &(ap * c - aq * s));
                a.set_column(q, &(ap * s + aq * c));
                let (vp, vq) = (v.column(p).into_owned(), v.column(q).into_owned());
                v.set_column(p, &(vp * c - vq * s));
                v.set_column(q, &(vp * s + vq * c));
            }
            if !large {
                break;
            }
        }
    }

    /// The decomposition from `A = F V` with orthogonal columns and the
    /// rotation `V` (the end of [`SignedSvd::new`]).
    pub(crate) fn from_orthogonal_columns(mut a: Matrix3<f64>, mut v: Matrix3<f64>) -> Self {
        let mut norms = Vec3::new(a.column(0).norm(), a.column(1).norm(), a.column(2).norm());
        for (i, j) in [(0, 1), (0, 2), (1, 2)] {
            if norms[i] < norms[j] {
                norms.swap_rows(i, j);
                a.swap_columns(i, j);
                v.swap_columns(i, j);
            }
        }
        // F V = A still holds with the last columns of both negated.
        if v.determinant() < 0.0 {
            v.column_mut(2).neg_mut();
            a.column_mut(2).neg_mut();
        }
        // U = [u₁, u₂, u₁ × u₂] is a rotation by construction, and the sign
        // of det F lands on σ₃ = a₃ · u₃. Columns of zero length (rank < 2)
        // get any direction that completes the frame.
        let u1 = if norms[0] > 0.0 {
            a.column(0) / norms[0]
        } else {
            Vec3::x()
        };
        let a2 = a.column(1) - u1 * u1.dot(&a.column(1));
        let n2 = a2.norm();
        let u2 = if n2 > 0.0 {
            a2 / n2
        } else {
            any_orthogonal(&u1)
        };
        let u3 = u1.cross(&u2);
        // |a₃ · u₃| ≤ ‖a₃‖ ≤ σ₂ up to the last bit of ‖u₃‖. (max and min,
        // unlike clamp, let a NaN through: the step then reports a blow-up.)
        let s3 = a.column(2).dot(&u3).max(-norms[1]).min(norms[1]);
        Self {
            u: Matrix3::from_columns(&[u1, u2, u3]),
            sigma: Vec3::new(norms[0], norms[1], s3),
            v,
        }
    }

    /// `U diag(s) Vᵀ`: a matrix with these singular vectors and signed
    /// singular values `s`.
    #[inline]
    pub fn compose(&self, s: &Vec3) -> Matrix3<f64> {
        let mut us = self.u;
        for (mut column, k) in us.column_iter_mut().zip(s.iter()) {
            column *= *k;
        }
        us * self.v.transpose()
    }
}

/// A unit vector orthogonal to the unit vector `u`.
fn any_orthogonal(u: &Vec3) -> Vec3 {
    let other = if u.x.abs() < 0.5 {
        Vec3::x()
    } else {
        Vec3::y()
    };
    u.cross(&other).normalize()
}

/// Tet strain, corotated / ARAP (physics.md §3; Bouaziz et al. 2014, §5.1,
/// seed 004): the rotation closest to `F`, `R = U Vᵀ` from the signed SVD.
/// For an inverted `F` (`det F < 0`) this is `U diag(1, 1, −1) Vᵀ` in terms
/// of an unsigned SVD: the last column of `U` flipped, the closest proper
/// rotation (Irving et al. 2004). Energy `w|V₀|/2 ‖F − R‖²`.
#[inline]
pub fn arap(svd: &SignedSvd) -> Matrix3<f64> {
    svd.u * svd.v.transpose()
}

/// [`arap`] without a singular value decomposition: the same closest
/// rotation about 3× faster, for when no other projection needs the SVD.
///
/// For a unit quaternion `q`, `tr(R(q)ᵀ F) = qᵀ K q` with the symmetric,
/// traceless 4 × 4 `K(F)` of Horn (1987) / Bar-Itzhack (2000), so the
/// rotation maximising `tr(Rᵀ F)`, i.e. minimising `‖F − R‖²`, is the
/// eigenvector of `K`'s largest eigenvalue `σ₁ + σ₂ + σ₃` (signed `σ`, so
/// inverted `F` are handled as by [`arap`]). That eigenvalue is found as
/// the largest root of the characteristic polynomial `λ⁴ − 2‖F‖²λ² −
/// 8 det F λ + det K` by Newton from the upper bound `√3 ‖F‖`, where the
/// polynomial is convex and increasing (monotone convergence), and the
/// eigenvector as a column of `adj(K − λI)` (Theobald 2005's QCP method).
/// When the eigenvalue is (nearly) double, every rotation in a family is
/// equally close and the adjugate vanishes; the eigenvector is also only as
/// accurate as the gap `2(σ₂ + σ₃)` allows, so below a gap of about
/// `10⁻⁴ ‖F‖` (a tet squashed to a needle or half inverted) the SVD decides.
pub fn closest_rotation(f: &Matrix3<f64>) -> Matrix3<f64> {
    let k = horn_matrix(f);
    let norm2 = f.norm_squared();
    let (c2, c1, c0) = (-2.0 * norm2, -8.0 * f.determinant(), Pairs::of(&k).det());
    let mut lambda = (3.0 * norm2).sqrt();
    for _ in 0..NEWTON_STEPS {
        let l2 = lambda * lambda;
        let p = (l2 + c2) * l2 + c1 * lambda + c0;
        let slope = (4.0 * l2 + 2.0 * c2) * lambda + c1;
        let step = p / slope;
        // Steps are positive down to the root; stop at round-off.
        if step.is_nan() || step <= NEWTON_TOLERANCE * lambda {
            lambda -= step.max(0.0);
            break;
        }
        let half_curvature = 6.0 * l2 + c2;
        let converged = lambda > 0.0
            && half_curvature > 0.0
            && half_curvature * step * step <= NEWTON_PREDICTED * lambda * slope;
        lambda -= step;
        if converged {
            break;
        }
    }
    let adjugate = Pairs::of(&(k - Matrix4::identity() * lambda)).adjugate();
    rotation_from_adjugate(f, norm2, &adjugate.diagonal(), |i| {
        adjugate.column(i).into_owned()
    })
}

/// The end of [`closest_rotation`] from `adj(K − λI)` (its diagonal, and
/// its columns on demand) for `F = f` with `‖F‖² = norm2`: `adj = c v vᵀ`,
/// so the column through the largest diagonal entry is the quaternion, or
/// the SVD decides when the eigenvalue is nearly double.
fn rotation_from_adjugate(
    f: &Matrix3<f64>,
    norm2: f64,
    diagonal: &Vector4<f64>,
    column: impl Fn(usize) -> Vector4<f64>,
) -> Matrix3<f64> {
    let i = diagonal.iamax();
    let scale = norm2 * norm2.sqrt();
    if diagonal[i].abs() <= 1e-4 * scale || diagonal[i].is_nan() {
        return arap(&SignedSvd::new(f));
    }
    rotation_of_quaternion(&column(i))
}

/// The rotation of the (not necessarily unit) quaternion `(w, x, y, z)`.
#[inline]
fn rotation_of_quaternion(q: &Vector4<f64>) -> Matrix3<f64> {
    let [w, x, y, z] = [q[0], q[1], q[2], q[3]];
    let s = 2.0 / q.norm_squared();
    let (xs, ys, zs) = (x * s, y * s, z * s);
    let (wx, wy, wz) = (w * xs, w * ys, w * zs);
    let (xx, xy, xz) = (x * xs, x * ys, x * zs);
    let (yy, yz, zz) = (y * ys, y * zs, z * zs);
    Matrix3::new(
        1.0 - (yy + zz),
        xy - wz,
        xz + wy,
        xy + wz,
        1.0 - (xx + zz),
        yz - wx,
        xz - wy,
        yz + wx,
        1.0 - (xx + yy),
    )
}

/// `K(F)` with `qᵀ K q = tr(R(q)ᵀ F)` for `q = (w, x, y, z)`.
fn horn_matrix(f: &Matrix3<f64>) -> Matrix4<f64> {
    let f = |r: usize, c: usize| f[(r, c)];
    Matrix4::new(
        f(0, 0) + f(1, 1) + f(2, 2),
        f(2, 1) - f(1, 2),
        f(0, 2) - f(2, 0),
        f(1, 0) - f(0, 1),
        f(2, 1) - f(1, 2),
        f(0, 0) - f(1, 1) - f(2, 2),
        f(0, 1) + f(1, 0),
        f(0, 2) + f(2, 0),
        f(0, 2) - f(2, 0),
        f(0, 1) + f(1, 0),
        f(1, 1) - f(0, 0) - f(2, 2),
        f(1, 2) + f(2, 1),
        f(1, 0) - f(0, 1),
        f(0, 2) + f(2, 0),
        f(1, 2) + f(2, 1),
        f(2, 2) - f(0, 0) - f(1, 1),
    )
}

/// The column pairs of the 2 × 2 minors [`Pairs`] keeps, in its order.
pub(crate) const MINOR_COLUMNS: [(usize, usize); 6] =
    [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// How entry `(i, j)` of a 4 × 4 adjugate, the cofactor of `a(j, i)`,
/// expands along the other row of `j`'s row pair: `± (a(row, c₀) m₀ −
/// a(row, c₁) m₁ + a(row, c₂) m₂)` with the minors `m` of the other pair.
pub(crate) struct Cofactor {
    /// The row expanded along.
    pub row: usize,
    /// Whether the minors are those of rows 0–1 (else 2–3).
    pub first_rows: bool,
    /// Per term, the column of `a` and the index of the minor.
    pub terms: [(usize, usize); 3],
    /// Whether the sum is negated.
    pub negative: bool,
}

impl Cofactor {
    /// The expansion of adjugate entry `(i, j)`.
    #[inline(always)]
    pub(crate) fn of(i: usize, j: usize) -> Self {
        // Where the minor of columns `p < q` is stored.
        let slot = |p: usize, q: usize| p + q - 1 + (p > 0) as usize;
        // The columns other than `i`.
        let [p, q, t] = [
            (i == 0) as usize,
            1 + (i <= 1) as usize,
            2 + (i <= 2) as usize,
        ];
        Self {
            row: if j < 2 { 1 - j } else { 5 - j },
            first_rows: j >= 2,
            terms: [(p, slot(q, t)), (q, slot(p, t)), (t, slot(p, q))],
            negative: (i + j) % 2 == 1,
        }
    }
}

/// The 2 × 2 minors of a 4 × 4 matrix from its first two rows (`s`) and
/// its last two (`c`), over [`MINOR_COLUMNS`]: its determinant and
/// adjugate by Laplace expansion along those row pairs, without the twelve
/// 3 × 3 minors.
struct Pairs<'a> {
    a: &'a Matrix4<f64>,
    s: [f64; 6],
    c: [f64; 6],
}

impl<'a> Pairs<'a> {
    #[inline]
    fn of(a: &'a Matrix4<f64>) -> Self {
        let minors = |r: usize| {
            MINOR_COLUMNS.map(|(i, j)| a[(r, i)] * a[(r + 1, j)] - a[(r, j)] * a[(r + 1, i)])
        };
        Self {
            a,
            s: minors(0),
            c: minors(2),
        }
    }

    #[inline]
    fn det(&self) -> f64 {
        let (s, c) = (&self.s, &self.c);
        s[0] * c[5] - s[1] * c[4] + s[2] * c[3] + s[3] * c[2] - s[4] * c[1] + s[5] * c[0]
    }

    /// The adjugate (see [`Cofactor`]).
    #[inline]
    fn adjugate(&self) -> Matrix4<f64> {
        Matrix4::from_fn(|i, j| {
            let cofactor = Cofactor::of(i, j);
            let minors = if cofactor.first_rows {
                &self.s
            } else {
                &self.c
            };
            let term = |k: usize| {
                let (column, slot) = cofactor.terms[k];
                self.a[(cofactor.row, column)] * minors[slot]
            };
            let sum = term(0) - term(1) + term(2);
            if cofactor.negative { -sum } else { sum }
        })
    }
}

/// Strain limiting (Bouaziz et al. 2014, §5.1; Wang et al. 2010): the
/// closest `F'` whose principal stretches lie in `[min, max]`,
/// `U clamp(σ, min, max) Vᵀ` with the signed `σ`, so an inverted `F` is
/// pulled back to a proper one. `0 ≤ min ≤ max`.
#[inline]
pub fn strain_limit(svd: &SignedSvd, min: f64, max: f64) -> Matrix3<f64> {
    svd.compose(&strain_limit_values(&svd.sigma, min, max))
}

/// The signed singular values of [`strain_limit`]'s projection of a matrix
/// with signed singular values `sigma`: each clamped to `[min, max]`.
#[inline]
pub fn strain_limit_values(sigma: &Vec3, min: f64, max: f64) -> Vec3 {
    sigma.map(|s| s.clamp(min, max))
}

/// Tet volume (Bouaziz et al. 2014, §5.1; ShapeOp's `VolumeConstraint`):
/// the closest `F'` with `det F' ∈ [min, max]`, `0 < min ≤ max`. `F`
/// itself when its determinant is in range; otherwise `U diag(y) Vᵀ` where
/// `y` is the point of the surface `y₁y₂y₃ = v` (`v` the violated bound)
/// closest to the signed `σ`, solved to round-off by [`closest_with_product`].
pub fn volume(svd: &SignedSvd, min: f64, max: f64) -> Matrix3<f64> {
    svd.compose(&volume_values(&svd.sigma, min, max))
}

/// The signed singular values of [`volume`]'s projection of a matrix with
/// signed singular values `sigma`: `sigma` itself when their product is in
/// `[min, max]` or not finite (a blow-up, reported after the step), else
/// [`closest_with_product`] with the violated bound.
pub fn volume_values(sigma: &Vec3, min: f64, max: f64) -> Vec3 {
    let det = sigma.product();
    let target = det.clamp(min, max);
    if target == det || !det.is_finite() {
        return *sigma;
    }
    closest_with_product(sigma, target)
}

/// The point `y` with `y₁y₂y₃ = v` closest to `sigma` (signed singular
/// values, `σ₁ ≥ σ₂ ≥ |σ₃|`), for `v > 0`. The result is positive.
///
/// Lagrange: `yᵢ − σᵢ = λ v / yᵢ`, so with `μ = λ v` every `yᵢ` is a root of
/// `y² − σᵢ y = μ`: the upper root `y⁺(μ) = (σ + √(σ² + 4μ))/2` or, for
/// `−σ²/4 ≤ μ < 0`, the lower one `y⁻(μ)`. A closest point is sorted like
/// `σ` and positive, and only `y₃` can take a lower root (a lower root of
/// `σ₁` or `σ₂` lies below any root of `σ₃`).
///
/// * Growing (`v > Π σ`, including `det F ≤ 0`): `μ > 0` and every `yᵢ` is
///   the only positive root, so the candidate is unique: solve the concave
///   increasing `Σ ln y⁺ᵢ(μ) = ln v` by Newton, safeguarded by bisection.
/// * Shrinking (`v < Π σ`): the all-upper candidate (`μ ∈ [−σ₃²/4, 0]`,
///   the same monotone equation) is the convex part of the problem. When
///   it exists and moves by at most `σ₃/2`, it is the answer: any
///   lower-root point has `|y₃ − σ₃| ≥ σ₃/2`. Otherwise (an extreme
///   squeeze or stretch), the lower-root candidates are the roots of
///   `y₃ y⁺₁(μ) y⁺₂(μ) = v` with `μ = y₃(y₃ − σ₃)`, `y₃ ∈ (0, σ₃/2]`, a
///   curve that is not monotone near `σ₁ ≈ σ₂ ≈ σ₃`: all its sign changes on
///   a grid refined geometrically towards `σ₃/2` (where its features get
///   sharp) are bisected and the closest candidate wins.
pub fn closest_with_product(sigma: &Vec3, v: f64) -> Vec3 {
    debug_assert!(v > 0.0);
    let product = sigma.product();
    if product == v {
        return *sigma;
    }
    let s3 = sigma[2];
    let cost = |y: &Vec3| (y - sigma).norm_squared();
    let mut best = None;
    if let Some(bracket) = UpperBracket::of(sigma, v) {
        let y = upper_roots(sigma, solve_upper(sigma, v, bracket.lo, bracket.hi));
        if bracket.is_closest(sigma, &y) {
            return y;
        }
        best = Some(y);
    }
    let on_curve = |y3: f64| {
        let mu = y3 * (y3 - s3);
        Vec3::new(upper_root(sigma[0], mu), upper_root(sigma[1], mu), y3)
    };
    let excess = |y3: f64| on_curve(y3).product() - v;
    let half = 0.5 * s3;
    let mut grid: [f64; LOWER_GRID + 1] = [0.0; LOWER_GRID + 1];
    for (k, g) in grid.iter_mut().enumerate().skip(1) {
        *g = half * lower_grid(k);
    }
    let mut left = (grid[0], -v);
    for &y3 in &grid[1..] {
        let right = (y3, excess(y3));
        if (left.1 < 0.0) != (right.1 < 0.0) {
            let y = on_curve(bisect(&excess, left, right));
            if best.is_none_or(|b| cost(&y) < cost(&b)) {
                best = Some(y);
            }
        }
        left = right;
    }
    // The curve starts below v at y₃ = 0 and ends above it at σ₃ (or meets
    // the all-upper candidate at σ₃/2), so some sign change exists.
    best.expect("the product crosses v on (0, σ₃]")
}

/// Where [`closest_with_product`] solves for the all-upper candidate
/// `y⁺(μ)` (`v ≠ Π σ`): `μ ∈ [lo, hi]`.
pub(crate) struct UpperBracket {
    /// Below the root (`Π y⁺ᵢ(lo) ≤ v`).
    pub(crate) lo: f64,
    /// Above the root (`Π y⁺ᵢ(hi) ≥ v`).
    pub(crate) hi: f64,
    /// Shrinking (`v < Π σ`): the candidate is the answer only if it moves
    /// by at most `σ₃/2` ([`UpperBracket::is_closest`]).
    shrinking: bool,
}

impl UpperBracket {
    /// Growing, `[0, c(c − σ₃)]`: there every upper root reaches
    /// `c = max(1, v) ≥ ∛v` (a cube root cost the four-lane projection 5–8 %
    /// of jelly16's local step; the bracket only bounds Newton's steps).
    /// Shrinking, `[−σ₃²/4, 0]` if the candidate exists there; `None` if it
    /// does not (an extreme squeeze: the lower-root search alone).
    pub(crate) fn of(sigma: &Vec3, v: f64) -> Option<Self> {
        let s3 = sigma[2];
        if sigma.product() < v {
            let c = v.max(1.0);
            return Some(Self {
                lo: 0.0,
                hi: c * (c - s3),
                shrinking: false,
            });
        }
        let lowest = -0.25 * s3 * s3;
        (upper_roots(sigma, lowest).product() <= v).then_some(Self {
            lo: lowest,
            hi: 0.0,
            shrinking: true,
        })
    }

    /// Whether the candidate `y` solved for in this bracket is the closest
    /// point: growing, it is the only one; shrinking, if it moves by at
    /// most `σ₃/2` (any lower-root point moves further).
    pub(crate) fn is_closest(&self, sigma: &Vec3, y: &Vec3) -> bool {
        !self.shrinking || (y - sigma).norm_squared() <= 0.25 * sigma[2] * sigma[2]
    }
}

/// `y⁺(μ)` of each of `sigma`.
pub(crate) fn upper_roots(sigma: &Vec3, mu: f64) -> Vec3 {
    sigma.map(|s| upper_root(s, mu))
}

/// Grid points of the lower-root search, as fractions of `σ₃/2`.
const LOWER_GRID: usize = 96;

/// The `k`-th point (1-based) of the lower-root grid on `(0, 1]`: 32 even
/// steps, then halving the distance to 1 each step down to `2⁻⁶⁴`.
fn lower_grid(k: usize) -> f64 {
    const EVEN: usize = 32;
    if k <= EVEN {
        k as f64 / (EVEN + 1) as f64
    } else {
        1.0 - (1.0 - EVEN as f64 / (EVEN + 1) as f64) * 0.5f64.powi((k - EVEN) as i32)
    }
}

/// The positive root of `y² − σ y = μ` (the upper one), stable for either
/// sign of `σ`; needs `μ ≥ −σ²/4` if `σ > 0` and `μ ≥ 0` otherwise.
#[inline]
fn upper_root(sigma: f64, mu: f64) -> f64 {
    let r = (sigma * sigma + 4.0 * mu).max(0.0).sqrt();
    if sigma > 0.0 {
        0.5 * (sigma + r)
    } else if r - sigma > 0.0 {
        2.0 * mu / (r - sigma)
    } else {
        0.0
    }
}

/// Solves `Π y⁺ᵢ(μ) = v` for `μ ∈ [lo, hi]`, given a sign change there:
/// Newton on `φ(μ) = Σ ln y⁺ᵢ(μ) − ln v`, concave and increasing, so each
/// step lands left of the root and the iterates then climb monotonically;
/// a step leaving the bracket bisects instead. Converges to round-off:
/// it stops once a step is within round-off of `μ`, or once the step
/// after it, predicted from the curvature (`|φ''| d² / (2 φ')` for a step
/// `d`, which bounds it from the concave side), would be. One logarithm
/// per evaluation (of the product; its factors are positive and within
/// a few orders of magnitude of 1 for any deformation a simulation keeps).
/// Measured on 40,000 singular-value triples within 20 % of 1 and `v = 1`
/// (the volume-preserving jelly's case): 460 ns per projection with three
/// logarithms per evaluation and the round-off stop alone, 115 ns now.
fn solve_upper(sigma: &Vec3, v: f64, mut lo: f64, mut hi: f64) -> f64 {
    let ln_v = v.ln();
    // φ(μ), φ'(μ) and −φ''(μ).
    let phi = |mu: f64| {
        let (mut product, mut slope, mut bend) = (1.0, 0.0, 0.0);
        for &s in sigma.iter() {
            let y = upper_root(s, mu);
            product *= y;
            // dy/dμ = 1/(2y − σ) = 1/√(σ² + 4μ).
            let r = 1.0 / (2.0 * y - s);
            let q = r / y;
            slope += q;
            // d/dμ (1/(y (2y − σ))) = −(4y − σ) r / (y (2y − σ))².
            bend += (4.0 * y - s) * r * q * q;
        }
        (product.ln() - ln_v, slope, bend)
    };
    // First-order guess: y ≈ σ + μ/σ gives Π σ (1 + μ Σ 1/σ²) = v.
    let guess = (v / sigma.product() - 1.0) / sigma.map(|s| 1.0 / (s * s)).sum();
    let mut mu = if guess > lo && guess < hi {
        guess
    } else {
        0.5 * (lo + hi)
    };
    for _ in 0..200 {
        let (value, slope, bend) = phi(mu);
        if value == 0.0 {
            break;
        }
        if value < 0.0 {
            lo = mu;
        } else {
            hi = mu;
        }
        let newton = mu - value / slope;
        // An infinite slope (μ at a branch point) gives no step: bisect.
        let stepped = slope.is_finite() && newton > lo && newton < hi;
        let next = if stepped { newton } else { 0.5 * (lo + hi) };
        let step = next - mu;
        let round_off = 2.0 * f64::EPSILON * next.abs();
        let settled = stepped && 0.5 * bend * step * step <= round_off * slope;
        if step.abs() <= round_off || settled || next == lo || next == hi {
            mu = next;
            break;
        }
        mu = next;
    }
    mu
}

/// The root of `f` between `left` and `right` (points `(x, f(x))` whose
/// values differ in sign), bisected until the bracket is one ulp wide.
fn bisect(f: &impl Fn(f64) -> f64, mut left: (f64, f64), mut right: (f64, f64)) -> f64 {
    loop {
        let mid = 0.5 * (left.0 + right.0);
        if mid <= left.0 || mid >= right.0 {
            // Of the two neighbours, the one with the smaller residual.
            return if left.1.abs() <= right.1.abs() {
                left.0
            } else {
                right.0
            };
        }
        let value = f(mid);
        if value == 0.0 {
            return mid;
        }
        if (value < 0.0) == (left.1 < 0.0) {
            left = (mid, value);
        } else {
            right = (mid, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spring_projection_is_the_closest_point_at_rest_length() {
        let d = Vec3::new(3.0, 4.0, 0.0);
        let p = spring(d, 2.0);
        assert!((p.norm() - 2.0).abs() < 1e-15);
        assert!((p.normalize() - d.normalize()).norm() < 1e-15);
        assert!((0.5 * 7.0 * (d - p).norm_squared() - spring_energy(d, 2.0, 7.0)).abs() < 1e-12);
        assert_eq!(spring(Vec3::zeros(), 0.5).norm(), 0.5);
        let (q, stretch) = spring_with_stretch(d, 2.0);
        assert_eq!(q, p);
        assert!((stretch * stretch - (d - p).norm_squared()).abs() < 1e-12);
    }

    /// A deterministic generator of numbers in `[-1, 1)`.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }

        fn matrix(&mut self) -> Matrix3<f64> {
            Matrix3::from_fn(|_, _| self.next())
        }

        /// A rotation `exp(ω×)` with `‖ω‖ ≤ √3 · angle`.
        fn rotation(&mut self, angle: f64) -> Matrix3<f64> {
            let w = Vec3::new(self.next(), self.next(), self.next()) * angle;
            *nalgebra::Rotation3::new(w).matrix()
        }
    }

    /// Matrices of every kind the solver meets: near rotations, general,
    /// inverted, singular of rank 0–2, repeated singular values, huge and
    /// tiny scales.
    fn test_matrices() -> Vec<Matrix3<f64>> {
        let mut rng = Rng(17);
        let mut out = vec![
            Matrix3::zeros(),
            Matrix3::identity(),
            -Matrix3::identity(),
            Matrix3::from_diagonal(&Vec3::new(1.0, 1.0, -1.0)),
            Matrix3::from_diagonal(&Vec3::new(2.0, 0.0, 0.0)),
            Matrix3::from_diagonal(&Vec3::new(0.0, 0.0, 3.0)),
            Matrix3::from_diagonal(&Vec3::new(1e-9, 1.0, 1e9)),
        ];
        for k in 0..400 {
            let r = rng.rotation(3.0);
            let q = rng.rotation(3.0);
            let m = match k % 8 {
                0 => r * (Matrix3::identity() + rng.matrix() * 1e-3),
                1 => rng.matrix(),
                2 => r * Matrix3::from_diagonal(&Vec3::new(1.2, 0.9, -0.3)) * q,
                3 => {
                    let mut m = rng.matrix();
                    let c = m.column(0) * 2.0;
                    m.set_column(2, &c);
                    m
                }
                4 => r * Matrix3::from_diagonal(&Vec3::new(0.7, 0.7, 0.7 + 1e-9 * rng.next())) * q,
                5 => rng.matrix() * 1e8,
                6 => rng.matrix() * 1e-8,
                _ => r * Matrix3::from_diagonal(&Vec3::new(1.0, 1e-7, 1e-13)) * q,
            };
            out.push(m);
        }
        out
    }

    fn is_rotation(r: &Matrix3<f64>) -> bool {
        (r.transpose() * r - Matrix3::identity()).norm() < 1e-14
            && (r.determinant() - 1.0).abs() < 1e-14
    }

    #[test]
    fn signed_svd_reconstructs_with_rotations_and_sorted_signed_values() {
        let mut rng = Rng(4);
        for f in test_matrices() {
            // From the identity, from far off, and from near the answer
            // (the last iteration's `V` of a tet that turned a little).
            let near = SignedSvd::new(&f).v * rng.rotation(1e-3);
            for start in [Matrix3::identity(), rng.rotation(3.0), near] {
                let svd = SignedSvd::starting_from(&f, &start);
                assert!(is_rotation(&svd.u) && is_rotation(&svd.v), "{f}");
                let s = svd.sigma;
                assert!(s[0] >= s[1] && s[1] >= s[2].abs(), "{s} for {f}");
                let scale = f.norm().max(f64::MIN_POSITIVE);
                assert!((svd.compose(&s) - f).norm() <= 1e-14 * scale, "{f}");
                assert!((s.product() - f.determinant()).abs() <= 1e-13 * scale.powi(3));
                assert!(
                    (s - SignedSvd::new(&f).sigma).norm() <= 1e-14 * scale,
                    "{f}"
                );
            }
        }
    }

    /// Where `√(d² + 4γ²)` of the Jacobi rotations leaves [`HYPOT_RANGE`]
    /// (entries of 1e-90 and of 1e75), the rotations take the form in `ζ`,
    /// and the SVD of a scaled matrix is the scaled SVD. (Without that form
    /// the first fails: `d²` underflows and the rotations are not.)
    #[test]
    fn signed_svd_holds_at_extreme_scales() {
        let mut rng = Rng(5);
        for _ in 0..100 {
            let f = rng.matrix();
            let svd = SignedSvd::new(&f);
            for scale in [1e-90, 1e75] {
                let scaled = SignedSvd::new(&(f * scale));
                assert!(is_rotation(&scaled.u) && is_rotation(&scaled.v), "{f}");
                let size = f.norm() * scale;
                assert!(
                    (scaled.sigma - svd.sigma * scale).norm() <= 1e-14 * size,
                    "{f}"
                );
                assert!((scaled.compose(&scaled.sigma) - f * scale).norm() <= 1e-14 * size);
            }
        }
    }

    /// `p` is at least as close to `f` as random points `perturb(p)` of the
    /// same set (rotated on both sides and with moved singular values).
    fn assert_closest(
        f: &Matrix3<f64>,
        p: &Matrix3<f64>,
        rng: &mut Rng,
        perturb: impl Fn(&Vec3, &mut Rng) -> Vec3,
    ) {
        let d = (f - p).norm();
        let svd = SignedSvd::new(p);
        for size in [1e-1, 1e-3, 1e-6] {
            for _ in 0..20 {
                let sigma = perturb(&svd.sigma, rng);
                let (r, q) = (rng.rotation(size), rng.rotation(size));
                let other = r * svd.compose(&sigma) * q;
                assert!(
                    (f - other).norm() >= d - 1e-12 * f.norm().max(1.0),
                    "{other} is closer to {f} than {p}"
                );
            }
        }
    }

    #[test]
    fn arap_is_the_closest_rotation() {
        let mut rng = Rng(5);
        for f in test_matrices() {
            let svd = SignedSvd::new(&f);
            let r = arap(&svd);
            assert!(is_rotation(&r), "{f}");
            // Idempotent.
            assert!((arap(&SignedSvd::new(&r)) - r).norm() < 1e-14);
            assert_closest(&f, &r, &mut rng, |s, _| s.map(|_| 1.0));
        }
        // Inverted: a reflection maps to the rotation that flips the
        // smallest stretch back, not to the reflection's polar factor.
        let f = Matrix3::from_diagonal(&Vec3::new(2.0, 1.5, -0.5));
        assert!((arap(&SignedSvd::new(&f)) - Matrix3::identity()).norm() < 1e-15);
        assert!((closest_rotation(&f) - Matrix3::identity()).norm() < 1e-15);
    }

    #[test]
    fn pairs_give_the_determinant_and_adjugate() {
        let mut rng = Rng(11);
        for _ in 0..100 {
            let a = Matrix4::from_fn(|_, _| rng.next());
            let pairs = Pairs::of(&a);
            let det = a.determinant();
            assert!((pairs.det() - det).abs() < 1e-14, "{a}");
            let product = pairs.adjugate() * a;
            assert!((product - Matrix4::identity() * det).norm() < 1e-14, "{a}");
        }
    }

    #[test]
    fn closest_rotation_agrees_with_the_svd() {
        for f in test_matrices() {
            let r = closest_rotation(&f);
            assert!(is_rotation(&r), "{r} for {f}");
            // Where the rotation is not unique both are equally close.
            let by_svd = arap(&SignedSvd::new(&f));
            let scale = f.norm_squared().max(1.0);
            let (d, d_svd) = ((f - r).norm_squared(), (f - by_svd).norm_squared());
            assert!((d - d_svd).abs() <= 1e-13 * scale, "{d} vs {d_svd} for {f}");
        }
        let mut rng = Rng(9);
        for _ in 0..1000 {
            let f = rng.rotation(3.0) * (Matrix3::identity() + rng.matrix() * 0.3);
            let (r, by_svd) = (closest_rotation(&f), arap(&SignedSvd::new(&f)));
            assert!((r - by_svd).norm() < 1e-12, "{r} vs {by_svd}");
        }
    }

    #[test]
    fn strain_limit_clamps_signed_stretches_and_is_closest() {
        let mut rng = Rng(6);
        let (lo, hi) = (0.9, 1.1);
        for f in test_matrices() {
            let p = strain_limit(&SignedSvd::new(&f), lo, hi);
            let s = SignedSvd::new(&p).sigma;
            assert!(s.iter().all(|&x| x >= lo - 1e-14 && x <= hi + 1e-14), "{s}");
            assert!((strain_limit(&SignedSvd::new(&p), lo, hi) - p).norm() < 1e-13);
            assert_closest(&f, &p, &mut rng, |s, rng| {
                s.map(|x| (x + 0.05 * rng.next()).clamp(lo, hi))
            });
        }
        // An F inside the range is its own projection.
        let f = Matrix3::from_diagonal(&Vec3::new(1.05, 0.95, 1.0));
        assert_eq!(strain_limit(&SignedSvd::new(&f), lo, hi), f);
        // Inverted: the negative stretch clamps to σ_min.
        let f = Matrix3::from_diagonal(&Vec3::new(1.0, 1.0, -0.5));
        let p = strain_limit(&SignedSvd::new(&f), lo, hi);
        assert!((p - Matrix3::from_diagonal(&Vec3::new(1.0, 1.0, lo))).norm() < 1e-15);
    }

    #[test]
    fn volume_projection_is_closest_in_range() {
        let mut rng = Rng(7);
        let (lo, hi) = (0.95, 1.05);
        for f in test_matrices() {
            let svd = SignedSvd::new(&f);
            let p = volume(&svd, lo, hi);
            let det = svd.sigma.product();
            if (lo..=hi).contains(&det) {
                assert!((p - f).norm() <= 1e-14 * f.norm());
            } else {
                // det p to the round-off of a product of entries of p.
                let bound = det.clamp(lo, hi);
                let error = (p.determinant() - bound).abs();
                assert!(
                    error < 1e-12 * p.norm().powi(3).max(1.0),
                    "det {det} for {f}"
                );
            }
            assert!((volume(&SignedSvd::new(&p), lo, hi) - p).norm() < 1e-12 * p.norm());
            assert_closest(&f, &p, &mut rng, |s, rng| {
                let y = s.map(|x| x * (1.0 + 0.05 * rng.next()));
                let target = y.product().clamp(lo, hi);
                y * (target / y.product()).cbrt()
            });
        }
    }

    /// The brute-force closest point on `y₁y₂y₃ = v`: a grid over
    /// `(ln y₁, ln y₂)` then a shrinking pattern search from its best cell.
    fn brute_force(sigma: &Vec3, v: f64) -> f64 {
        let cost = |a: f64, b: f64| {
            let y = Vec3::new(a.exp(), b.exp(), v / (a + b).exp());
            (y - sigma).norm_squared()
        };
        let top = sigma[0].abs().max(v.cbrt()) * 2.0;
        let (lo, hi) = ((top * 1e-6).ln(), top.ln());
        let n = 300;
        let at = |k: usize| lo + (hi - lo) * k as f64 / n as f64;
        let mut best = (f64::MAX, 0.0, 0.0);
        for i in 0..=n {
            for j in 0..=n {
                let c = cost(at(i), at(j));
                if c < best.0 {
                    best = (c, at(i), at(j));
                }
            }
        }
        let mut step = (hi - lo) / n as f64;
        while step > 1e-15 {
            let mut moved = false;
            for (da, db) in [
                (1.0, 0.0),
                (-1.0, 0.0),
                (0.0, 1.0),
                (0.0, -1.0),
                (1.0, 1.0),
                (-1.0, -1.0),
                (1.0, -1.0),
                (-1.0, 1.0),
            ] {
                let (a, b) = (best.1 + da * step, best.2 + db * step);
                let c = cost(a, b);
                if c < best.0 {
                    best = (c, a, b);
                    moved = true;
                }
            }
            if !moved {
                step *= 0.5;
            }
        }
        best.0
    }

    #[test]
    fn closest_with_product_is_the_global_minimum() {
        let mut rng = Rng(8);
        let mut cases = vec![
            // Isotropic squeezes around the non-convex range v/s³ ∈ (1/8, 4/27).
            (Vec3::repeat(1.0), 0.1),
            (Vec3::repeat(1.0), 0.13),
            (Vec3::repeat(1.0), 0.145),
            (Vec3::new(1.0, 1.0 - 1e-9, 1.0 - 2e-9), 0.14),
            (Vec3::new(2.14, 2.10, 2.096), 1.45),
            // A needle: growing the thin axis beats the other two.
            (Vec3::new(10.0, 10.0, 0.5), 1.05),
            // Inverted and flat.
            (Vec3::new(1.0, 1.0, -0.5), 0.95),
            (Vec3::new(1.0, 0.0, 0.0), 1.0),
            (Vec3::zeros(), 0.5),
        ];
        for _ in 0..150 {
            let mut s = [
                rng.next().abs() * 3.0,
                rng.next().abs() * 3.0,
                rng.next().abs() * 3.0,
            ];
            if rng.next() < -0.3 {
                s[1] = s[0] * (1.0 + 0.05 * rng.next());
                s[2] = s[0] * (1.0 + 0.05 * rng.next());
            }
            s.sort_by(|a, b| b.total_cmp(a));
            if rng.next() < -0.5 {
                s[2] = -s[2];
            }
            let sigma = Vec3::from(s);
            let v = sigma.product().abs() * (2.0 * rng.next()).exp() + 1e-3;
            cases.push((sigma, v));
        }
        for (sigma, v) in cases {
            let y = closest_with_product(&sigma, v);
            assert!((y.product() - v).abs() <= 1e-13 * v, "{y} for {sigma}, {v}");
            let cost = (y - sigma).norm_squared();
            let brute = brute_force(&sigma, v);
            assert!(
                cost <= brute * (1.0 + 1e-9) + 1e-15,
                "{sigma}, v = {v}: {cost} > {brute}"
            );
        }
    }
}
