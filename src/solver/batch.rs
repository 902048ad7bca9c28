//! The tet projections' two decompositions for four matrices at once, on
//! CPUs with AVX2 and FMA: [`closest_rotation`] (Horn's quaternion matrix,
//! Newton on its characteristic polynomial, a column of the adjugate) and
//! [`SignedSvd::new`] (one-sided Jacobi sweeps), the same methods with each
//! scalar a vector of four lanes. Both are chains of dependent divisions and
//! square roots, so one matrix at a time leaves the CPU mostly waiting; four
//! lanes wait together, and the rotation's end (which adjugate column, the
//! quaternion's rotation) runs in the lanes too. The per-lane ends (the SVD
//! for a nearly double eigenvalue; the singular values' order and signs)
//! are the scalar code's.
//!
//! A model whose only tet constraint is the strain needs nothing but the
//! rotation, so [`rotation_terms`] keeps four tets in the lanes from their
//! deformation gradients to their energies; the energies alone (an
//! iteration's closing evaluation) need only the eigenvalue.

use nalgebra::Matrix3;

use super::project::{self, SignedSvd, closest_rotation};
use crate::mesh::Vec3;
use crate::model::Tet;

/// The closest rotations to `f`, each as [`closest_rotation`] computes it
/// (up to round-off: the fused multiply-adds round differently).
pub(crate) fn closest_rotations(f: &[Matrix3<f64>; 4]) -> [Matrix3<f64>; 4] {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: the CPU has the features the kernel is compiled for.
        return unsafe { avx2::closest_rotations(f) };
    }
    f.map(|f| closest_rotation(&f))
}

/// The rotation-only tet terms of `tets` at `x`, four tets at a time on
/// CPUs with AVX2 and FMA: `Σ |V₀| ‖F − R‖²` (`R` the closest rotation to
/// `F`, as [`closest_rotation`] computes it up to round-off; without `rhs`
/// from Horn's eigenvalue alone where it is sure) is returned, and with
/// `rhs`, `w |V₀| R g_j` is added to the row of each vertex `j`.
/// Returns the tets it left to the caller: the last ones (fewer than four),
/// or all of them on other CPUs.
pub(crate) fn rotation_terms<'a>(
    tets: &'a [Tet],
    x: &[Vec3],
    w: f64,
    rhs: Option<&mut [Vec3]>,
) -> (f64, &'a [Tet]) {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        let done = tets.len() / 4 * 4;
        // SAFETY: the CPU has the features the kernel is compiled for.
        let sum = unsafe { avx2::rotation_terms(&tets[..done], x, w, rhs) };
        return (sum, &tets[done..]);
    }
    let _ = (x, w, rhs);
    (0.0, tets)
}

/// The signed SVDs of `f`, each as [`SignedSvd::starting_from`] computes
/// it from the rotation in `v0` (up to round-off).
pub(crate) fn signed_svds(f: &[Matrix3<f64>; 4], v0: &[Matrix3<f64>; 4]) -> [SignedSvd; 4] {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: the CPU has the features the kernel is compiled for.
        return unsafe { avx2::signed_svds(f, v0) };
    }
    std::array::from_fn(|l| SignedSvd::starting_from(&f[l], &v0[l]))
}

/// [`project::volume_values`] of four SVDs' values (`min ≤ max` the
/// volume range), the Newton iterations of the common cases in the lanes
/// (see `avx2::volume_values`).
pub(crate) fn volume_values(svds: &[SignedSvd; 4], min: f64, max: f64) -> [Vec3; 4] {
    #[cfg(target_arch = "x86_64")]
    if super::has_avx2_fma() {
        // SAFETY: the CPU has the features the kernel is compiled for.
        return unsafe { avx2::volume_values(svds, min, max) };
    }
    svds.each_ref()
        .map(|s| project::volume_values(&s.sigma, min, max))
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use nalgebra::Matrix3;

    use crate::mesh::Vec3;
    use crate::model::Tet;
    use crate::solver::project::{
        self, Cofactor, HYPOT_RANGE, JACOBI_SETTLED, JACOBI_SWEEPS, MINOR_COLUMNS,
        NEWTON_PREDICTED, NEWTON_STEPS, NEWTON_TOLERANCE, SignedSvd, UpperBracket, ZETA_OVERFLOW,
        arap, upper_roots,
    };

    /// Four lanes of `f64`.
    type V = __m256d;

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn closest_rotations(f: &[Matrix3<f64>; 4]) -> [Matrix3<f64>; 4] {
        let f_lanes = std::array::from_fn(|i| gather(f, i / 3, i % 3));
        let (r, by_svd) = rotation_at(&largest_eigenvalue(f_lanes));
        let r = r.map(|x| lanes(x));
        std::array::from_fn(|l| {
            if by_svd & (1 << l) != 0 {
                arap(&SignedSvd::new(&f[l]))
            } else {
                Matrix3::from_fn(|row, col| r[3 * row + col][l])
            }
        })
    }

    /// `|x|` in each lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn abs(x: V) -> V {
        _mm256_andnot_pd(_mm256_set1_pd(-0.0), x)
    }

    /// A lane whose adjugate column (below) or slope (`|p'(λ)|`, at least
    /// that column's entry) is at most this times `‖F‖³` has a nearly
    /// double largest eigenvalue: its eigenvector, and `λ` itself to about
    /// `√ε`, are uncertain there.
    const NEARLY_DOUBLE: f64 = 1e-4;

    /// Horn's matrix of four matrices and its largest eigenvalue, four
    /// lanes each.
    struct Eigen {
        /// `K(F)`, row-major (symmetric).
        k: [[V; 4]; 4],
        /// Its largest eigenvalue `λ`: the largest `tr(RᵀF)` over rotations
        /// `R`, the sum of `F`'s signed singular values.
        lambda: V,
        /// `‖F‖²`.
        norm2: V,
        /// `‖F‖³`, the scale of the adjugate and of the slope.
        scale: V,
        /// The characteristic polynomial's slope `p'(λ)`: the product of
        /// `λ`'s gaps to the other eigenvalues.
        slope: V,
    }

    impl Eigen {
        /// `‖F − R‖²` for the closest rotations `R`, from `λ` alone:
        /// `‖F‖² − 2 tr(RᵀF) + 3` with `tr(RᵀF) = λ`. `None` if a lane's
        /// `λ` is nearly double (or NaN): its `λ` is too uncertain then.
        /// Rounding leaves about 1e-15 per matrix, above or below: clamped
        /// at 0 near rest.
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn distance(&self) -> Option<V> {
            let sure = _mm256_cmp_pd::<_CMP_GT_OQ>(
                abs(self.slope),
                _mm256_mul_pd(_mm256_set1_pd(4.0 * NEARLY_DOUBLE), self.scale),
            );
            if _mm256_movemask_pd(sure) != 0b1111 {
                return None;
            }
            let distance = _mm256_fmadd_pd(_mm256_set1_pd(-2.0), self.lambda, self.norm2);
            let distance = _mm256_add_pd(distance, _mm256_set1_pd(3.0));
            Some(_mm256_max_pd(distance, _mm256_setzero_pd()))
        }
    }

    /// [`Eigen`] of the four matrices whose entries are the lanes of `f`
    /// (row-major): `λ` by Newton on the characteristic polynomial from
    /// above.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn largest_eigenvalue(f: [V; 9]) -> Eigen {
        let [eigen] = largest_eigenvalues([f]);
        eigen
    }

    /// [`largest_eigenvalue`] of `M` groups of four matrices, their Newton
    /// steps taken side by side: each step is a chain of dependent
    /// operations ending in a division, which one group leaves the CPU
    /// mostly waiting for.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn largest_eigenvalues<const M: usize>(f: [[V; 9]; M]) -> [Eigen; M] {
        let add = |a: V, b: V| _mm256_add_pd(a, b);
        let sub = |a: V, b: V| _mm256_sub_pd(a, b);
        let mul = |a: V, b: V| _mm256_mul_pd(a, b);
        let splat = |x: f64| _mm256_set1_pd(x);
        // p'(λ) = 4λ³ + 2c₂λ + c₁, from λ² = `l2`.
        let slope_at = |lambda: V, l2: V, c2: V, c1: V| {
            _mm256_fmadd_pd(_mm256_fmadd_pd(splat(4.0), l2, add(c2, c2)), lambda, c1)
        };
        let polynomial = f.map(|f| characteristic(f));
        let mut lambda = polynomial.map(|p| _mm256_sqrt_pd(mul(splat(3.0), p.norm2)));
        let tolerance = splat(NEWTON_TOLERANCE);
        let zero = _mm256_setzero_pd();
        // All bits set in the lanes that have stopped.
        let mut done = [zero; M];
        for _ in 0..NEWTON_STEPS {
            let mut all = true;
            for ((p, lambda), done) in polynomial.iter().zip(&mut lambda).zip(&mut done) {
                let Polynomial { c2, c1, c0, .. } = *p;
                let l2 = mul(*lambda, *lambda);
                let value = _mm256_fmadd_pd(add(l2, c2), l2, _mm256_fmadd_pd(c1, *lambda, c0));
                let slope = slope_at(*lambda, l2, c2, c1);
                let step = _mm256_div_pd(value, slope);
                // NaN, or positive steps down to round-off: stop (as the
                // scalar code, with the last step clamped at 0; max_pd
                // gives the second operand for a NaN).
                let stop = _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_UNORD_Q>(step, step),
                    _mm256_cmp_pd::<_CMP_LE_OQ>(step, mul(tolerance, *lambda)),
                );
                let applied = _mm256_blendv_pd(step, _mm256_max_pd(step, zero), stop);
                // Or the next step would be below an ulp (the scalar code's
                // prediction): take this one and stop.
                let half_curvature = _mm256_fmadd_pd(splat(6.0), l2, c2);
                let converged = _mm256_and_pd(
                    _mm256_and_pd(
                        _mm256_cmp_pd::<_CMP_GT_OQ>(*lambda, zero),
                        _mm256_cmp_pd::<_CMP_GT_OQ>(half_curvature, zero),
                    ),
                    _mm256_cmp_pd::<_CMP_LE_OQ>(
                        mul(mul(half_curvature, step), step),
                        mul(mul(splat(NEWTON_PREDICTED), *lambda), slope),
                    ),
                );
                *lambda = sub(*lambda, _mm256_andnot_pd(*done, applied));
                *done = _mm256_or_pd(*done, _mm256_or_pd(stop, converged));
                all &= _mm256_movemask_pd(*done) == 0b1111;
            }
            if all {
                break;
            }
        }
        std::array::from_fn(|g| {
            let (
                Polynomial {
                    k, norm2, c2, c1, ..
                },
                lambda,
            ) = (polynomial[g], lambda[g]);
            Eigen {
                k,
                lambda,
                norm2,
                scale: mul(norm2, _mm256_sqrt_pd(norm2)),
                slope: slope_at(lambda, mul(lambda, lambda), c2, c1),
            }
        })
    }

    /// Horn's matrix of four matrices and the coefficients of its
    /// characteristic polynomial `λ⁴ + c₂λ² + c₁λ + c₀`, four lanes each.
    #[derive(Clone, Copy)]
    struct Polynomial {
        k: [[V; 4]; 4],
        norm2: V,
        c2: V,
        c1: V,
        c0: V,
    }

    /// [`Polynomial`] of the four matrices whose entries are the lanes of
    /// `f` (row-major).
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn characteristic(f: [V; 9]) -> Polynomial {
        let [f00, f01, f02, f10, f11, f12, f20, f21, f22] = f;
        let add = |a: V, b: V| _mm256_add_pd(a, b);
        let sub = |a: V, b: V| _mm256_sub_pd(a, b);
        let mul = |a: V, b: V| _mm256_mul_pd(a, b);
        // a·b − c·d.
        let det2 = |a: V, b: V, c: V, d: V| _mm256_fmsub_pd(a, b, mul(c, d));
        // Horn's K(F), row-major (symmetric).
        let k01 = sub(f21, f12);
        let k02 = sub(f02, f20);
        let k03 = sub(f10, f01);
        let k12 = add(f01, f10);
        let k13 = add(f02, f20);
        let k23 = add(f12, f21);
        let k = [
            [add(add(f00, f11), f22), k01, k02, k03],
            [k01, sub(sub(f00, f11), f22), k12, k13],
            [k02, k12, sub(sub(f11, f00), f22), k23],
            [k03, k13, k23, sub(sub(f22, f00), f11)],
        ];
        let entries = [f00, f01, f02, f10, f11, f12, f20, f21, f22];
        let norm2 = entries
            .iter()
            .fold(_mm256_setzero_pd(), |s, &x| _mm256_fmadd_pd(x, x, s));
        let det_f = add(
            sub(
                mul(f00, det2(f11, f22, f12, f21)),
                mul(f01, det2(f10, f22, f12, f20)),
            ),
            mul(f02, det2(f10, f21, f11, f20)),
        );
        Polynomial {
            c2: mul(_mm256_set1_pd(-2.0), norm2),
            c1: mul(_mm256_set1_pd(-8.0), det_f),
            c0: Pairs::of(&k).det(),
            k,
            norm2,
        }
    }

    /// The closest rotations to [`Eigen`]'s matrices (from `K`'s
    /// eigenvector of `λ`: a column of the adjugate of `K − λ I`),
    /// row-major in lanes, and the lanes (bits) where the SVD must decide
    /// instead.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn rotation_at(eigen: &Eigen) -> ([V; 9], i32) {
        let sub = |a: V, b: V| _mm256_sub_pd(a, b);
        let mul = |a: V, b: V| _mm256_mul_pd(a, b);
        let splat = |x: f64| _mm256_set1_pd(x);
        let lambda = eigen.lambda;
        let mut a = eigen.k;
        for (d, row) in a.iter_mut().enumerate() {
            row[d] = sub(row[d], lambda);
        }
        let adjugate = Pairs::of(&a).adjugate();
        // `rotation_from_adjugate` in four lanes: the quaternion is the
        // column through the largest diagonal entry (the first of equal
        // ones, as `iamax`), ...
        let mut largest = abs(adjugate[0][0]);
        let mut q: [V; 4] = std::array::from_fn(|j| adjugate[j][0]);
        for (i, row) in adjugate.iter().enumerate().skip(1) {
            let d = abs(row[i]);
            let larger = _mm256_cmp_pd::<_CMP_GT_OQ>(d, largest);
            largest = _mm256_blendv_pd(largest, d, larger);
            for (q, entries) in q.iter_mut().zip(&adjugate) {
                *q = _mm256_blendv_pd(*q, entries[i], larger);
            }
        }
        // ... unless it is too small (a nearly double eigenvalue) or NaN:
        // then the lane's SVD decides.
        let svd = _mm256_or_pd(
            _mm256_cmp_pd::<_CMP_LE_OQ>(largest, mul(splat(NEARLY_DOUBLE), eigen.scale)),
            _mm256_cmp_pd::<_CMP_UNORD_Q>(largest, largest),
        );
        (rotation_of_quaternion(q), _mm256_movemask_pd(svd))
    }

    /// [`super::rotation_terms`] of `tets` (a multiple of four).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn rotation_terms(
        tets: &[Tet],
        x: &[Vec3],
        w: f64,
        mut rhs: Option<&mut [Vec3]>,
    ) -> f64 {
        let sub = |a: V, b: V| _mm256_sub_pd(a, b);
        let mul = |a: V, b: V| _mm256_mul_pd(a, b);
        let fma = |a: V, b: V, c: V| _mm256_fmadd_pd(a, b, c);
        let mut sum = _mm256_setzero_pd();
        // F of four tets and their rest volumes.
        let deformation = |four: &[Tet]| -> ([V; 9], V) {
            let lane = |value: &dyn Fn(&Tet) -> f64| {
                _mm256_setr_pd(
                    value(&four[0]),
                    value(&four[1]),
                    value(&four[2]),
                    value(&four[3]),
                )
            };
            // Component k of vertex v of each tet, then the edge matrix
            // D_s (columns a − d, b − d, c − d) and D_m⁻¹, row by row.
            let p: [[V; 3]; 4] = std::array::from_fn(|v| {
                std::array::from_fn(|k| lane(&|t| x[t.vertices[v] as usize][k]))
            });
            let ds: [[V; 3]; 3] =
                std::array::from_fn(|r| std::array::from_fn(|c| sub(p[c][r], p[3][r])));
            let m: [[V; 3]; 3] =
                std::array::from_fn(|r| std::array::from_fn(|c| lane(&|t| t.rest_inverse[(r, c)])));
            let f: [V; 9] = std::array::from_fn(|i| {
                let (r, c) = (i / 3, i % 3);
                fma(
                    ds[r][2],
                    m[2][c],
                    fma(ds[r][1], m[1][c], mul(ds[r][0], m[0][c])),
                )
            });
            (f, lane(&|t| t.rest_volume))
        };
        // The terms of four tets from F, their volumes and Horn's eigenvalue.
        let mut terms = |four: &[Tet], (f, volume): ([V; 9], V), eigen: &Eigen| {
            // The energy alone needs neither the eigenvector nor the
            // rotation while λ is sure: that took the closing energy
            // evaluation of the tet cube's frames from 1.0 to 0.7 ms.
            if rhs.is_none()
                && let Some(distance) = eigen.distance()
            {
                sum = fma(volume, distance, sum);
                return;
            }
            let (mut rot, by_svd) = rotation_at(eigen);
            if by_svd != 0 {
                let (f, mut r) = (f.map(|x| lanes(x)), rot.map(|x| lanes(x)));
                for l in (0..4).filter(|l| by_svd & (1 << l) != 0) {
                    let by_svd = arap(&SignedSvd::new(&Matrix3::from_fn(|i, j| f[3 * i + j][l])));
                    for (i, r) in r.iter_mut().enumerate() {
                        r[l] = by_svd[(i / 3, i % 3)];
                    }
                }
                rot = r.map(|[a, b, c, d]| _mm256_setr_pd(a, b, c, d));
            }
            let distance = (f.iter().zip(&rot)).fold(_mm256_setzero_pd(), |d, (f, r)| {
                let e = sub(*f, *r);
                fma(e, e, d)
            });
            sum = fma(volume, distance, sum);
            let Some(rhs) = rhs.as_deref_mut() else {
                return;
            };
            // w |V₀| R g_j (the stencil g_j: rows of D_m⁻¹ and minus their
            // sum), one tet at a time: in the lanes, the terms' transpose
            // to the rows measured slower.
            let q = rot.map(|r| lanes(mul(r, mul(volume, _mm256_set1_pd(w)))));
            for (l, tet) in four.iter().enumerate() {
                tet.scatter(&Matrix3::from_fn(|r, c| q[3 * r + c][l]), rhs);
            }
        };
        // Eight tets at a time: their two groups' Newton steps side by side.
        let mut eights = tets.chunks_exact(8);
        for eight in &mut eights {
            let (a, b) = eight.split_at(4);
            let (da, db) = (deformation(a), deformation(b));
            let [ea, eb] = largest_eigenvalues([da.0, db.0]);
            terms(a, da, &ea);
            terms(b, db, &eb);
        }
        for four in eights.remainder().chunks_exact(4) {
            let d = deformation(four);
            terms(four, d, &largest_eigenvalue(d.0));
        }
        lanes(sum).iter().sum()
    }

    /// The scalar `rotation_of_quaternion` in four lanes: the rotation of
    /// the (not necessarily unit) quaternion `(w, x, y, z)`, row-major.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn rotation_of_quaternion([w, x, y, z]: [V; 4]) -> [V; 9] {
        let add = |a: V, b: V| _mm256_add_pd(a, b);
        let sub = |a: V, b: V| _mm256_sub_pd(a, b);
        let mul = |a: V, b: V| _mm256_mul_pd(a, b);
        let norm2 = add(add(add(mul(w, w), mul(x, x)), mul(y, y)), mul(z, z));
        let s = _mm256_div_pd(_mm256_set1_pd(2.0), norm2);
        let (xs, ys, zs) = (mul(x, s), mul(y, s), mul(z, s));
        let (wx, wy, wz) = (mul(w, xs), mul(w, ys), mul(w, zs));
        let (xx, xy, xz) = (mul(x, xs), mul(x, ys), mul(x, zs));
        let (yy, yz, zz) = (mul(y, ys), mul(y, zs), mul(z, zs));
        let one = _mm256_set1_pd(1.0);
        [
            sub(one, add(yy, zz)),
            sub(xy, wz),
            add(xz, wy),
            add(xy, wz),
            sub(one, add(xx, zz)),
            sub(yz, wx),
            sub(xz, wy),
            add(yz, wx),
            sub(one, add(xx, yy)),
        ]
    }

    /// The lanes of `x`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn lanes(x: V) -> [f64; 4] {
        let mut out = [0.0; 4];
        // SAFETY: `out` holds four f64.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), x) };
        out
    }

    /// Entry `(r, c)` of four matrices.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn gather(f: &[Matrix3<f64>; 4], r: usize, c: usize) -> V {
        _mm256_setr_pd(f[0][(r, c)], f[1][(r, c)], f[2][(r, c)], f[3][(r, c)])
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn signed_svds(f: &[Matrix3<f64>; 4], v0: &[Matrix3<f64>; 4]) -> [SignedSvd; 4] {
        // Columns of V and of A = F V, each entry four lanes.
        let mut v: [[V; 3]; 3] = std::array::from_fn(|c| std::array::from_fn(|r| gather(v0, r, c)));
        let f: [[V; 3]; 3] = std::array::from_fn(|r| std::array::from_fn(|k| gather(f, r, k)));
        let mut a: [[V; 3]; 3] = std::array::from_fn(|c| {
            std::array::from_fn(|r| {
                _mm256_fmadd_pd(
                    f[r][0],
                    v[c][0],
                    _mm256_fmadd_pd(f[r][1], v[c][1], _mm256_mul_pd(f[r][2], v[c][2])),
                )
            })
        });
        let epsilon = _mm256_set1_pd(f64::EPSILON);
        let settled = _mm256_set1_pd(JACOBI_SETTLED);
        let sign_bit = _mm256_set1_pd(-0.0);
        for _ in 0..JACOBI_SWEEPS {
            let mut large = _mm256_setzero_pd();
            for (p, q) in [(0, 1), (0, 2), (1, 2)] {
                let alpha = dot(&a[p], &a[p]);
                let beta = dot(&a[q], &a[q]);
                let gamma = dot(&a[p], &a[q]);
                // Lanes whose columns are not yet orthogonal rotate (as in
                // the scalar code, a NaN counts as not orthogonal); the
                // others keep their columns.
                let rotate = _mm256_cmp_pd::<_CMP_NLE_UQ>(
                    _mm256_andnot_pd(sign_bit, gamma),
                    _mm256_mul_pd(epsilon, _mm256_sqrt_pd(_mm256_mul_pd(alpha, beta))),
                );
                let (c, s) = jacobi_rotation(alpha, beta, gamma, rotate);
                // (A NaN is large.)
                large = _mm256_or_pd(
                    large,
                    _mm256_and_pd(
                        rotate,
                        _mm256_cmp_pd::<_CMP_NLE_UQ>(_mm256_andnot_pd(sign_bit, s), settled),
                    ),
                );
                for m in [&mut a, &mut v] {
                    let (mp, mq) = (m[p], m[q]);
                    for r in 0..3 {
                        let np = _mm256_fmsub_pd(mp[r], c, _mm256_mul_pd(mq[r], s));
                        let nq = _mm256_fmadd_pd(mp[r], s, _mm256_mul_pd(mq[r], c));
                        m[p][r] = _mm256_blendv_pd(mp[r], np, rotate);
                        m[q][r] = _mm256_blendv_pd(mq[r], nq, rotate);
                    }
                }
            }
            if _mm256_movemask_pd(large) == 0 {
                break;
            }
        }
        from_orthogonal_columns(a, v)
    }

    /// [`project::jacobi_rotation`] in four lanes, the form in `ζ` only
    /// when one of the lanes that `rotate` needs it.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn jacobi_rotation(alpha: V, beta: V, gamma: V, rotate: V) -> (V, V) {
        let sign_bit = _mm256_set1_pd(-0.0);
        let one = _mm256_set1_pd(1.0);
        let d = _mm256_sub_pd(beta, alpha);
        let g = _mm256_add_pd(gamma, gamma);
        let r = _mm256_sqrt_pd(_mm256_fmadd_pd(d, d, _mm256_mul_pd(g, g)));
        let e = _mm256_add_pd(r, _mm256_andnot_pd(sign_bit, d));
        let inv = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_mul_pd(_mm256_add_pd(r, r), e)));
        let c = _mm256_mul_pd(e, inv);
        let s = _mm256_mul_pd(_mm256_xor_pd(g, _mm256_and_pd(sign_bit, d)), inv);
        // (Ordered comparisons: a NaN is outside.)
        let inside = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(r, _mm256_set1_pd(HYPOT_RANGE.0)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(r, _mm256_set1_pd(HYPOT_RANGE.1)),
        );
        if _mm256_movemask_pd(_mm256_andnot_pd(inside, rotate)) == 0 {
            return (c, s);
        }
        let zeta = _mm256_div_pd(d, g);
        let magnitude = _mm256_andnot_pd(sign_bit, zeta);
        let signum = _mm256_or_pd(_mm256_and_pd(sign_bit, zeta), one);
        let near = _mm256_div_pd(
            signum,
            _mm256_add_pd(magnitude, _mm256_sqrt_pd(_mm256_fmadd_pd(zeta, zeta, one))),
        );
        let far = _mm256_div_pd(_mm256_set1_pd(0.5), zeta);
        let t = _mm256_blendv_pd(
            far,
            near,
            _mm256_cmp_pd::<_CMP_LT_OQ>(magnitude, _mm256_set1_pd(ZETA_OVERFLOW)),
        );
        let c_zeta = _mm256_div_pd(one, _mm256_sqrt_pd(_mm256_fmadd_pd(t, t, one)));
        let s_zeta = _mm256_mul_pd(c_zeta, t);
        (
            _mm256_blendv_pd(c_zeta, c, inside),
            _mm256_blendv_pd(s_zeta, s, inside),
        )
    }

    /// [`project::volume_values`] of four SVDs' values. Each lane's case is
    /// the scalar [`project::closest_with_product`]'s ([`UpperBracket`]):
    /// the Newton iterations for its all-upper candidate run in the lanes
    /// ([`solve_upper`]); the rest (in range, not finite, the lower-root
    /// search of an extreme squeeze or of a candidate that moved too far)
    /// is the scalar code's.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn volume_values(svds: &[SignedSvd; 4], min: f64, max: f64) -> [Vec3; 4] {
        let mut out = svds.map(|s| s.sigma);
        let mut v = [1.0; 4];
        let mut brackets: [Option<UpperBracket>; 4] = [const { None }; 4];
        for (l, s) in out.iter_mut().enumerate() {
            let det = s.product();
            let target = det.clamp(min, max);
            if target == det || !det.is_finite() {
                continue;
            }
            v[l] = target;
            brackets[l] = UpperBracket::of(s, target);
            if brackets[l].is_none() {
                *s = project::closest_with_product(s, target);
            }
        }
        let active = (0..4).fold(0, |bits, l| bits | (i32::from(brackets[l].is_some()) << l));
        if active == 0 {
            return out;
        }
        let load = |x: [f64; 4]| _mm256_setr_pd(x[0], x[1], x[2], x[3]);
        let bound = |f: fn(&UpperBracket) -> f64| {
            load(brackets.each_ref().map(|b| b.as_ref().map_or(0.0, f)))
        };
        let sigma = std::array::from_fn(|i| load(std::array::from_fn(|l| svds[l].sigma[i])));
        let (lo, hi) = (bound(|b| b.lo), bound(|b| b.hi));
        let mu = lanes(solve_upper(sigma, load(v), lo, hi, active));
        for (l, (y, bracket)) in out.iter_mut().zip(&brackets).enumerate() {
            if let Some(bracket) = bracket {
                let s = &svds[l].sigma;
                let candidate = upper_roots(s, mu[l]);
                *y = if bracket.is_closest(s, &candidate) {
                    candidate
                } else {
                    project::closest_with_product(s, v[l])
                };
            }
        }
        out
    }

    /// The scalar `solve_upper` over the lanes of `active` (a bit per
    /// lane): `μ ∈ [lo, hi]` with `Π y⁺ᵢ(μ) = v`, by Newton on the concave
    /// `φ(μ) = Σ ln y⁺ᵢ(μ) − ln v` safeguarded by bisection, each lane
    /// stopping where the scalar code would. The logarithm is [`ln_lanes`].
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn solve_upper(sigma: [V; 3], v: V, mut lo: V, mut hi: V, active: i32) -> V {
        let (zero, one, half) = (
            _mm256_setzero_pd(),
            _mm256_set1_pd(1.0),
            _mm256_set1_pd(0.5),
        );
        let two = _mm256_set1_pd(2.0);
        let inv_v = _mm256_div_pd(one, v);
        // Only σ₃ can be negative (σ₁ ≥ σ₂ ≥ |σ₃|): where a lane's is not
        // positive, its upper root takes the stable form, a division.
        let negative = _mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(sigma[2], zero)) != 0;
        // φ(μ), φ'(μ) and −φ''(μ) (in the lanes of `live`).
        let phi = |mu: V, live: V| {
            let four_mu = _mm256_mul_pd(_mm256_set1_pd(4.0), mu);
            // upper_root(s, μ) = y, and r = √(s² + 4μ) = 2y − s.
            let ry = |s: V, stable: bool| {
                let r = _mm256_sqrt_pd(_mm256_max_pd(_mm256_fmadd_pd(s, s, four_mu), zero));
                let sum = _mm256_mul_pd(half, _mm256_add_pd(s, r));
                if !stable {
                    return (r, sum);
                }
                let r_minus = _mm256_sub_pd(r, s);
                let y = _mm256_blendv_pd(
                    _mm256_blendv_pd(
                        zero,
                        _mm256_div_pd(_mm256_mul_pd(two, mu), r_minus),
                        _mm256_cmp_pd::<_CMP_GT_OQ>(r_minus, zero),
                    ),
                    sum,
                    _mm256_cmp_pd::<_CMP_GT_OQ>(s, zero),
                );
                (r, y)
            };
            let [(r0, y0), (r1, y1), (r2, y2)] = [
                ry(sigma[0], false),
                ry(sigma[1], false),
                ry(sigma[2], negative),
            ];
            // dyᵢ/dμ / yᵢ = 1/(rᵢ yᵢ) = qᵢ: the three from one division
            // (a zero r y, at a branch point, gives no finite slope).
            let (p0, p1, p2) = (
                _mm256_mul_pd(r0, y0),
                _mm256_mul_pd(r1, y1),
                _mm256_mul_pd(r2, y2),
            );
            let p01 = _mm256_mul_pd(p0, p1);
            let inv_all = _mm256_div_pd(one, _mm256_mul_pd(p01, p2));
            let q01 = _mm256_mul_pd(p2, inv_all);
            let q = [
                _mm256_mul_pd(q01, p1),
                _mm256_mul_pd(q01, p0),
                _mm256_mul_pd(p01, inv_all),
            ];
            let slope = _mm256_add_pd(_mm256_add_pd(q[0], q[1]), q[2]);
            // d/dμ (1/(y r)) = −(4y − σ) y q³.
            let bend = [
                (sigma[0], y0, q[0]),
                (sigma[1], y1, q[1]),
                (sigma[2], y2, q[2]),
            ]
            .iter()
            .fold(zero, |bend, &(s, y, q)| {
                let four_y = _mm256_fmsub_pd(_mm256_set1_pd(4.0), y, s);
                let q3 = _mm256_mul_pd(_mm256_mul_pd(q, q), q);
                _mm256_fmadd_pd(_mm256_mul_pd(four_y, y), q3, bend)
            });
            let product = _mm256_mul_pd(_mm256_mul_pd(y0, y1), y2);
            (ln_lanes(_mm256_mul_pd(product, inv_v), live), slope, bend)
        };
        // First-order guess: y ≈ σ + μ/σ gives Π σ (1 + μ Σ 1/σ²) = v.
        let product = _mm256_mul_pd(_mm256_mul_pd(sigma[0], sigma[1]), sigma[2]);
        let inverse_squares = sigma.iter().fold(zero, |acc, &s| {
            _mm256_add_pd(acc, _mm256_div_pd(one, _mm256_mul_pd(s, s)))
        });
        let guess = _mm256_div_pd(
            _mm256_sub_pd(_mm256_div_pd(v, product), one),
            inverse_squares,
        );
        // Lanes where lo < x < hi.
        let inside = |x: V, lo: V, hi: V| {
            _mm256_and_pd(
                _mm256_cmp_pd::<_CMP_GT_OQ>(x, lo),
                _mm256_cmp_pd::<_CMP_LT_OQ>(x, hi),
            )
        };
        let mut mu = _mm256_blendv_pd(
            _mm256_mul_pd(half, _mm256_add_pd(lo, hi)),
            guess,
            inside(guess, lo, hi),
        );
        let mut live = _mm256_castsi256_pd(_mm256_set_epi64x(
            -i64::from(active & 8 != 0),
            -i64::from(active & 4 != 0),
            -i64::from(active & 2 != 0),
            -i64::from(active & 1 != 0),
        ));
        let round_off_factor = _mm256_set1_pd(2.0 * f64::EPSILON);
        for _ in 0..200 {
            let (value, slope, bend) = phi(mu, live);
            // A lane at the root keeps its μ.
            let moving = _mm256_andnot_pd(_mm256_cmp_pd::<_CMP_EQ_OQ>(value, zero), live);
            let below = _mm256_cmp_pd::<_CMP_LT_OQ>(value, zero);
            lo = _mm256_blendv_pd(lo, mu, _mm256_and_pd(moving, below));
            hi = _mm256_blendv_pd(hi, mu, _mm256_andnot_pd(below, moving));
            let newton = _mm256_sub_pd(mu, _mm256_div_pd(value, slope));
            // An infinite slope (μ at a branch point) gives no step: bisect.
            let finite = _mm256_cmp_pd::<_CMP_LT_OQ>(abs(slope), _mm256_set1_pd(f64::INFINITY));
            let stepped = _mm256_and_pd(finite, inside(newton, lo, hi));
            let next =
                _mm256_blendv_pd(_mm256_mul_pd(half, _mm256_add_pd(lo, hi)), newton, stepped);
            let step = _mm256_sub_pd(next, mu);
            let round_off = _mm256_mul_pd(round_off_factor, abs(next));
            let settled = _mm256_and_pd(
                stepped,
                _mm256_cmp_pd::<_CMP_LE_OQ>(
                    _mm256_mul_pd(_mm256_mul_pd(half, bend), _mm256_mul_pd(step, step)),
                    _mm256_mul_pd(round_off, slope),
                ),
            );
            let stop = _mm256_or_pd(
                _mm256_or_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(abs(step), round_off), settled),
                _mm256_or_pd(
                    _mm256_cmp_pd::<_CMP_EQ_OQ>(next, lo),
                    _mm256_cmp_pd::<_CMP_EQ_OQ>(next, hi),
                ),
            );
            mu = _mm256_blendv_pd(mu, next, moving);
            live = _mm256_andnot_pd(stop, moving);
            if _mm256_movemask_pd(live) == 0 {
                break;
            }
        }
        mu
    }

    /// `ln r` in the lanes of `live` (the others' are of no use): for `r`
    /// within 1/128 of 1, by its Taylor series in `r − 1` (nine terms: the
    /// remainder is below 1e-19, a thousandth of an ulp of the result),
    /// which Newton's evaluations in [`solve_upper`] are near its root;
    /// else `f64::ln` lane by lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn ln_lanes(r: V, live: V) -> V {
        let e = _mm256_sub_pd(r, _mm256_set1_pd(1.0));
        let near = _mm256_cmp_pd::<_CMP_LT_OQ>(abs(e), _mm256_set1_pd(1.0 / 128.0));
        let near = _mm256_or_pd(
            near,
            _mm256_andnot_pd(live, _mm256_castsi256_pd(_mm256_set1_epi64x(-1))),
        );
        const TERMS: [f64; 9] = [
            1.0,
            -1.0 / 2.0,
            1.0 / 3.0,
            -1.0 / 4.0,
            1.0 / 5.0,
            -1.0 / 6.0,
            1.0 / 7.0,
            -1.0 / 8.0,
            1.0 / 9.0,
        ];
        let series = _mm256_mul_pd(
            e,
            TERMS.iter().rev().fold(_mm256_setzero_pd(), |acc, &t| {
                _mm256_fmadd_pd(acc, e, _mm256_set1_pd(t))
            }),
        );
        if _mm256_movemask_pd(near) == 0b1111 {
            return series;
        }
        let by_ln = lanes(r).map(f64::ln);
        let by_ln = _mm256_setr_pd(by_ln[0], by_ln[1], by_ln[2], by_ln[3]);
        _mm256_blendv_pd(by_ln, series, near)
    }

    /// `x · y` in each lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn dot(x: &[V; 3], y: &[V; 3]) -> V {
        _mm256_fmadd_pd(
            x[0],
            y[0],
            _mm256_fmadd_pd(x[1], y[1], _mm256_mul_pd(x[2], y[2])),
        )
    }

    /// `x × y` in each lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn cross(x: &[V; 3], y: &[V; 3]) -> [V; 3] {
        std::array::from_fn(|i| {
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            _mm256_fmsub_pd(x[j], y[k], _mm256_mul_pd(x[k], y[j]))
        })
    }

    /// [`SignedSvd::from_orthogonal_columns`] in the lanes (columns `a` of
    /// `A = F V` and `v` of `V`): sorting by length, the sign of `det V`,
    /// `U` by Gram–Schmidt and a cross product. A lane whose `A` has rank
    /// below 2 (or is not finite) takes the scalar code, which completes
    /// the frame there.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn from_orthogonal_columns(mut a: [[V; 3]; 3], mut v: [[V; 3]; 3]) -> [SignedSvd; 4] {
        let mut norms = a.map(|c| _mm256_sqrt_pd(dot(&c, &c)));
        // `(x, y)`, exchanged in the lanes of `mask`.
        let swap =
            |x: V, y: V, mask: V| (_mm256_blendv_pd(x, y, mask), _mm256_blendv_pd(y, x, mask));
        for (i, j) in [(0, 1), (0, 2), (1, 2)] {
            let mask = _mm256_cmp_pd::<_CMP_LT_OQ>(norms[i], norms[j]);
            (norms[i], norms[j]) = swap(norms[i], norms[j], mask);
            for m in [&mut a, &mut v] {
                let columns: [(V, V); 3] = std::array::from_fn(|r| swap(m[i][r], m[j][r], mask));
                (m[i], m[j]) = (columns.map(|c| c.0), columns.map(|c| c.1));
            }
        }
        // F V = A still holds with the last columns of both negated.
        let det = dot(&v[0], &cross(&v[1], &v[2]));
        let flip = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_LT_OQ>(det, _mm256_setzero_pd()),
            _mm256_set1_pd(-0.0),
        );
        for r in 0..3 {
            v[2][r] = _mm256_xor_pd(v[2][r], flip);
            a[2][r] = _mm256_xor_pd(a[2][r], flip);
        }
        let u1 = a[0].map(|x| _mm256_div_pd(x, norms[0]));
        let along = dot(&u1, &a[1]);
        let a2: [V; 3] = std::array::from_fn(|r| _mm256_fnmadd_pd(u1[r], along, a[1][r]));
        let n2 = _mm256_sqrt_pd(dot(&a2, &a2));
        let u2 = a2.map(|x| _mm256_div_pd(x, n2));
        let u3 = cross(&u1, &u2);
        let s3 = _mm256_min_pd(
            _mm256_max_pd(
                dot(&a[2], &u3),
                _mm256_xor_pd(norms[1], _mm256_set1_pd(-0.0)),
            ),
            norms[1],
        );
        let zero = _mm256_setzero_pd();
        let regular = _mm256_movemask_pd(_mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GT_OQ>(norms[0], zero),
            _mm256_cmp_pd::<_CMP_GT_OQ>(n2, zero),
        ));
        let matrix = |columns: [[V; 3]; 3]| {
            let columns = columns.map(|column| column.map(|x| lanes(x)));
            move |l: usize| Matrix3::from_fn(|r, c| columns[c][r][l])
        };
        let (u, a, v) = (matrix([u1, u2, u3]), matrix(a), matrix(v));
        let sigma = [norms[0], norms[1], s3].map(|x| lanes(x));
        std::array::from_fn(|l| {
            if regular & (1 << l) != 0 {
                SignedSvd {
                    u: u(l),
                    sigma: Vec3::new(sigma[0][l], sigma[1][l], sigma[2][l]),
                    v: v(l),
                }
            } else {
                // (Sorted and proper already: it completes the frame.)
                SignedSvd::from_orthogonal_columns(a(l), v(l))
            }
        })
    }

    /// The scalar code's `Pairs` over four lanes: the 2 × 2 minors of rows
    /// 0–1 (`s`) and 2–3 (`c`) of a 4 × 4 matrix.
    struct Pairs<'a> {
        a: &'a [[V; 4]; 4],
        s: [V; 6],
        c: [V; 6],
    }

    impl<'a> Pairs<'a> {
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn of(a: &'a [[V; 4]; 4]) -> Self {
            let minors = |r: usize| {
                MINOR_COLUMNS.map(|(i, j)| {
                    _mm256_fmsub_pd(a[r][i], a[r + 1][j], _mm256_mul_pd(a[r][j], a[r + 1][i]))
                })
            };
            Self {
                a,
                s: minors(0),
                c: minors(2),
            }
        }

        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn det(&self) -> V {
            let (s, c) = (&self.s, &self.c);
            let plus = _mm256_fmadd_pd(
                s[0],
                c[5],
                _mm256_fmadd_pd(
                    s[2],
                    c[3],
                    _mm256_fmadd_pd(s[3], c[2], _mm256_mul_pd(s[5], c[0])),
                ),
            );
            let minus = _mm256_fmadd_pd(s[1], c[4], _mm256_mul_pd(s[4], c[1]));
            _mm256_sub_pd(plus, minus)
        }

        /// The adjugate, `[row][column]`, as the scalar `Pairs::adjugate`.
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn adjugate(&self) -> [[V; 4]; 4] {
            std::array::from_fn(|i| {
                std::array::from_fn(|j| {
                    let cofactor = Cofactor::of(i, j);
                    let minors = if cofactor.first_rows {
                        &self.s
                    } else {
                        &self.c
                    };
                    let a = &self.a[cofactor.row];
                    let [(c0, m0), (c1, m1), (c2, m2)] = cofactor.terms;
                    let sum = _mm256_fmadd_pd(
                        a[c0],
                        minors[m0],
                        _mm256_fmsub_pd(a[c2], minors[m2], _mm256_mul_pd(a[c1], minors[m1])),
                    );
                    if cofactor.negative {
                        _mm256_sub_pd(_mm256_setzero_pd(), sum)
                    } else {
                        sum
                    }
                })
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deformation gradients of every kind the scalar tests use: near
    /// rotations, large stretches, inversions, degenerate ones.
    fn matrices() -> Vec<Matrix3<f64>> {
        let mut state = 17u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let mut out = Vec::new();
        for scale in [0.01, 0.3, 2.0] {
            for _ in 0..200 {
                let axis = nalgebra::Vector3::new(next(), next(), next()) * 3.0;
                let rotation = nalgebra::Rotation3::from_scaled_axis(axis);
                let strain = Matrix3::from_fn(|_, _| next() * scale);
                out.push(rotation.matrix() * (Matrix3::identity() + strain));
            }
        }
        out.push(Matrix3::identity());
        out.push(Matrix3::from_diagonal(&nalgebra::Vector3::new(
            2.0, 1.5, -0.5,
        )));
        out.push(Matrix3::from_diagonal(&nalgebra::Vector3::new(
            1.0, 1.0, 0.0,
        )));
        out.push(Matrix3::from_diagonal(&nalgebra::Vector3::new(
            1.0, -1.0, -1.0,
        )));
        out.push(Matrix3::zeros());
        out.push(Matrix3::from_element(f64::NAN));
        out.push(Matrix3::from_diagonal(&nalgebra::Vector3::new(
            f64::INFINITY,
            1.0,
            1.0,
        )));
        out.push(Matrix3::from_diagonal(&nalgebra::Vector3::new(
            3.0, 1.0, 1.0,
        )));
        out.push(Matrix3::new(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0));
        while out.len() % 4 != 0 {
            out.push(Matrix3::identity() * 0.5);
        }
        out
    }

    /// A four-lane kernel.
    type Kernel<T> = fn(&[Matrix3<f64>; 4]) -> [T; 4];

    /// The four-lane kernels themselves (not the dispatch, which falls
    /// back to the scalar code on other CPUs): `None` where the CPU cannot
    /// run them.
    fn kernels() -> Option<(Kernel<Matrix3<f64>>, Kernel<SignedSvd>)> {
        #[cfg(target_arch = "x86_64")]
        if crate::solver::has_avx2_fma() {
            // SAFETY (of the calls): the CPU has the features.
            return Some((
                |f| unsafe { avx2::closest_rotations(f) },
                |f| unsafe { avx2::signed_svds(f, &[Matrix3::identity(); 4]) },
            ));
        }
        eprintln!("no AVX2 and FMA here: the four-lane kernels are not tested");
        None
    }

    /// Whether `m` has a NaN or infinite entry.
    fn non_finite(m: &Matrix3<f64>) -> bool {
        m.iter().any(|x| !x.is_finite())
    }

    fn assert_rotation(m: &Matrix3<f64>) {
        assert!(
            (m.transpose() * m - Matrix3::identity()).norm() < 1e-12,
            "{m}"
        );
        assert!((m.determinant() - 1.0).abs() < 1e-12, "{m}");
    }

    /// Runs `kernel` over [`matrices`] in fours and `check(result, f)` on
    /// each lane.
    fn each_lane<T>(
        matrices: &[Matrix3<f64>],
        kernel: Kernel<T>,
        mut check: impl FnMut(&T, &Matrix3<f64>),
    ) {
        for chunk in matrices.chunks_exact(4) {
            let f: [Matrix3<f64>; 4] = std::array::from_fn(|l| chunk[l]);
            for (result, f) in kernel(&f).iter().zip(&f) {
                check(result, f);
            }
        }
    }

    #[test]
    fn four_lanes_agree_with_one() {
        let Some((rotations, _)) = kernels() else {
            return;
        };
        each_lane(&matrices(), rotations, |r, f| {
            let one = closest_rotation(f);
            if non_finite(f) {
                assert_eq!(non_finite(r), non_finite(&one), "{r} vs {one}");
                return;
            }
            // Where the closest rotation is not unique (a double
            // eigenvalue), both are equally close.
            let (d, d_one) = ((f - r).norm_squared(), (f - one).norm_squared());
            let scale = f.norm_squared().max(1.0);
            assert!((d - d_one).abs() <= 1e-13 * scale, "{r} vs {one} for {f}");
            assert_rotation(r);
        });
    }

    #[test]
    fn four_lane_svds_agree_with_one() {
        let Some((_, svds)) = kernels() else {
            return;
        };
        each_lane(&matrices(), svds, |svd, f| {
            let one = SignedSvd::new(f);
            if non_finite(f) {
                let values = |s: &SignedSvd| s.sigma.iter().any(|x| !x.is_finite());
                assert_eq!(values(svd), values(&one), "{svd:?} vs {one:?}");
                return;
            }
            let scale = f.norm().max(1.0);
            // Singular vectors of repeated values are not unique; the
            // values and the product are.
            assert!((svd.sigma - one.sigma).norm() < 1e-13 * scale, "{f}");
            assert!((svd.compose(&svd.sigma) - f).norm() < 1e-13 * scale, "{f}");
            assert_rotation(&svd.u);
            assert_rotation(&svd.v);
        });
    }

    /// At scales where the rotations take the form in `ζ` (see
    /// `project::jacobi_rotation`), in some lanes or all, the four-lane SVDs
    /// still agree with one at a time, relative to the matrices' size.
    #[test]
    fn four_lane_svds_agree_with_one_at_extreme_scales() {
        let Some((_, svds)) = kernels() else {
            return;
        };
        let scales = [1.0, 1e-90, 1e75, 1.0, 1e-90, 1e-90, 1e75, 1e75];
        let scaled: Vec<Matrix3<f64>> = (matrices().iter().filter(|f| !non_finite(f)))
            .zip(scales.iter().cycle())
            .map(|(f, s)| f * *s)
            .collect();
        let whole = scaled.len() / 4 * 4;
        each_lane(&scaled[..whole], svds, |svd, f| {
            let one = SignedSvd::new(f);
            let size = f.norm();
            assert!((svd.sigma - one.sigma).norm() <= 1e-13 * size, "{f}");
            assert!((svd.compose(&svd.sigma) - f).norm() <= 1e-13 * size, "{f}");
            assert_rotation(&svd.u);
            assert_rotation(&svd.v);
        });
    }

    /// Started from the last `V`s (a little off the answer's, as a tet's
    /// are from one iteration to the next) or from arbitrary rotations,
    /// the four-lane SVDs are still those of one at a time.
    #[test]
    fn four_lane_svds_from_given_starts_agree_with_one() {
        if kernels().is_none() {
            return;
        }
        let turn = |k: usize, angle: f64| {
            let axis = Vec3::new(1.0, k as f64, 2.0 - k as f64).normalize();
            *nalgebra::Rotation3::from_axis_angle(&nalgebra::Unit::new_normalize(axis), angle)
                .matrix()
        };
        let f = matrices();
        for angle in [1e-6, 1e-2, 3.0] {
            for (c, chunk) in f.chunks_exact(4).enumerate() {
                let f: [Matrix3<f64>; 4] = std::array::from_fn(|l| chunk[l]);
                let v0 = std::array::from_fn(|l| SignedSvd::new(&f[l]).v * turn(4 * c + l, angle));
                for (l, svd) in signed_svds(&f, &v0).iter().enumerate() {
                    let one = SignedSvd::starting_from(&f[l], &v0[l]);
                    if non_finite(&f[l]) {
                        assert!(svd.sigma.iter().any(|x| !x.is_finite()), "{svd:?}");
                        continue;
                    }
                    let scale = f[l].norm().max(1.0);
                    assert!((svd.sigma - one.sigma).norm() < 1e-13 * scale, "{}", f[l]);
                    assert!((svd.compose(&svd.sigma) - f[l]).norm() < 1e-13 * scale);
                    assert_rotation(&svd.u);
                    assert_rotation(&svd.v);
                }
            }
        }
    }

    /// The four-lane volume projection's values are the scalar code's, in
    /// every case: in range, growing (also inverted or flat), shrinking
    /// onto the all-upper candidate, the lower-root search of an extreme
    /// squeeze, and a NaN; lanes of different cases side by side.
    #[test]
    fn four_lane_volume_values_agree_with_one() {
        let mut state = 3u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut sigmas = vec![
            Vec3::new(1.0, 1.0, 1.0),
            Vec3::new(1.2, 1.1, -0.3),
            Vec3::new(0.5, 0.0, 0.0),
            Vec3::new(3.0, 2.5, 2.0),
            Vec3::new(9.0, 1.0, 0.05),
            Vec3::new(1.5, 1.5, 1.5),
            Vec3::new(f64::NAN, 1.0, 1.0),
            Vec3::new(1e-3, 1e-3, 1e-3),
        ];
        for k in 0..400 {
            let spread = [0.05, 0.3, 2.0][k % 3];
            // Sorted signed values: σ₁ ≥ σ₂ ≥ |σ₃|, inverted every 7th.
            let mut s = Vec3::from_fn(|_, _| (1.0 + spread * (2.0 * next() - 1.0)).max(1e-3));
            s.as_mut_slice().sort_by(|a, b| b.total_cmp(a));
            if k % 7 == 0 {
                s[2] = -s[2];
            }
            sigmas.push(s);
        }
        for (min, max) in [(0.95, 1.05), (0.5, 2.0), (1.0, 1.0)] {
            for chunk in sigmas.chunks_exact(4) {
                let svds: [SignedSvd; 4] = std::array::from_fn(|l| SignedSvd {
                    u: Matrix3::identity(),
                    sigma: chunk[l],
                    v: Matrix3::identity(),
                });
                for (y, s) in volume_values(&svds, min, max).iter().zip(chunk) {
                    let one = project::volume_values(s, min, max);
                    if s.iter().any(|x| x.is_nan()) {
                        assert!(y.iter().any(|x| x.is_nan()), "{y} for {s}");
                        continue;
                    }
                    let scale = s.norm().max(1.0);
                    assert!(
                        (y - one).norm() <= 1e-13 * scale,
                        "{y} vs {one} for {s} in [{min}, {max}]"
                    );
                }
            }
        }
    }

    /// The rotation-only tet terms of four tets at a time are those of one
    /// at a time (energy sum and every right-hand-side row) on a sheared,
    /// uneven tet box; with one tet squashed onto a line (its lane takes the
    /// SVD; its closest rotation is not unique, so only the energy must
    /// agree); the energy alone as well (the squashed tet's four take the
    /// full path: from its nearly double eigenvalue alone the sum was off
    /// by 7e-10), at rest it is ~0 and not negative, and a NaN position's
    /// is NaN.
    #[test]
    fn rotation_terms_agree_with_one_tet_at_a_time() {
        if kernels().is_none() {
            return;
        }
        let mesh = crate::mesh::primitives::tet_box(Vec3::repeat(1.0), [3, 2, 2]);
        let weights = crate::model::Weights::default();
        let model = crate::model::Model::from_tet_mesh(&mesh, 1000.0, weights, false);
        let shear = Matrix3::new(1.1, 0.2, 0.0, -0.1, 0.9, 0.3, 0.05, 0.0, 1.2);
        let mut x: Vec<Vec3> = (model.rest.iter().enumerate())
            .map(|(i, p)| shear * p + Vec3::new(0.01 * (i % 3) as f64, -0.02 * (i % 5) as f64, 0.0))
            .collect();
        let (w, tets) = (3.0, &model.tets[..model.tets.len() / 4 * 4]);
        // One tet at a time.
        let one = |x: &[Vec3]| {
            let mut rhs = vec![Vec3::zeros(); x.len()];
            let mut sum = 0.0;
            for tet in tets {
                let f = tet.deformation_gradient(x);
                let r = closest_rotation(&f);
                sum += tet.rest_volume * (f - r).norm_squared();
                for (&v, g) in tet.vertices.iter().zip(tet.stencil()) {
                    rhs[v as usize] += r * w * tet.rest_volume * g;
                }
            }
            (sum, rhs)
        };
        let four = |x: &[Vec3]| {
            let mut rhs = vec![Vec3::zeros(); x.len()];
            let (sum, rest) = rotation_terms(tets, x, w, Some(&mut rhs));
            assert!(rest.is_empty());
            // The energy alone (from λ, without the rotations).
            let (energy, _) = rotation_terms(tets, x, w, None);
            assert!((energy - sum).abs() <= 1e-12 * sum, "{energy} vs {sum}");
            (sum, rhs)
        };
        let ((sum, rhs), (expected, expected_rhs)) = (four(&x), one(&x));
        assert!(
            (sum - expected).abs() <= 1e-12 * expected,
            "{sum} vs {expected}"
        );
        let scale = expected_rhs.iter().map(|v| v.norm()).fold(0.0, f64::max);
        for (got, want) in rhs.iter().zip(&expected_rhs) {
            assert!((got - want).norm() <= 1e-12 * scale, "{got} vs {want}");
        }
        let [a, b, c, d] = model.tets[0].vertices.map(|v| v as usize);
        x[b] = x[a] + (x[d] - x[a]) * 0.3;
        x[c] = x[a] + (x[d] - x[a]) * 0.6;
        let ((sum, rhs), (expected, _)) = (four(&x), one(&x));
        assert!(
            (sum - expected).abs() <= 1e-12 * expected,
            "{sum} vs {expected}"
        );
        assert!(rhs.iter().all(|v| v.iter().all(|x| x.is_finite())));
        let at_rest = rotation_terms(tets, &model.rest, w, None).0;
        let volume: f64 = tets.iter().map(|t| t.rest_volume).sum();
        assert!((0.0..=1e-13 * volume).contains(&at_rest), "{at_rest}");
        // A non-finite position is not an energy of 0.
        x[a].x = f64::NAN;
        assert!(rotation_terms(tets, &x, w, None).0.is_nan());
    }

    #[test]
    fn unique_rotations_match_to_round_off() {
        let Some((rotations, _)) = kernels() else {
            return;
        };
        each_lane(&matrices()[..600], rotations, |r, f| {
            assert!((r - closest_rotation(f)).norm() < 1e-12, "{f}");
        });
    }
}
