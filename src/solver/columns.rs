//! Columns of Anderson's window (accelerate.rs) and the passes over them.
//!
//! A column is a secant pair `(ΔG, ΔF)`, a 3-vector per vertex each, in
//! single precision (they only steer the extrapolation; the safeguard and
//! the fixed point are double, and half the bytes is most of their cost).
//! An iteration makes two passes over every column held: one sums `ΔFᵀf`
//! (and the new column's row of the normal matrix), the other mixes the
//! next iterate from `ΔG`. Neither reads the other half, so `ΔG` and `ΔF`
//! are kept in two arrays; and each vertex's rows are stored by component
//! (`[k][c]`: component `k` of column `c`), so a pass's sums over the
//! columns run along contiguous floats, in vector lanes. (The pairs used to
//! be interleaved per vertex, `[ΔG, ΔF]` per column: every pass read both
//! halves, and its sums gathered one component at a time. On the n = 22
//! tet cube, 24 columns, an iteration's two passes took 0.6 ms.)
//!
//! The sums are in double precision, in an order fixed by the code (a
//! column's sum runs over the vertices; a vertex's mix over the columns in
//! four interleaved partial sums), so the AVX2 build and the portable one
//! agree bitwise.

use crate::mesh::Vec3;

/// One column's entry at one vertex: `[ΔG, ΔF]` (single precision).
pub(crate) type Pair = [nalgebra::Vector3<f32>; 2];

/// One vertex's rows of `N` columns, by component: `[k][c]` is component
/// `k` of column `c`.
type Rows<const N: usize> = [[f32; N]; 3];

/// `N` columns of Anderson's window over a model's vertices.
#[derive(Clone, Default)]
pub(crate) struct Columns<const N: usize> {
    /// `ΔG` by vertex.
    g: Vec<Rows<N>>,
    /// `ΔF` by vertex.
    f: Vec<Rows<N>>,
}

impl<const N: usize> Columns<N> {
    /// `N` zero columns over `m` vertices.
    pub(crate) fn new(m: usize) -> Self {
        const { assert!(N.is_multiple_of(4), "the mix sums columns in fours") };
        Self {
            g: vec![[[0.0; N]; 3]; m],
            f: vec![[[0.0; N]; 3]; m],
        }
    }

    /// The vertices.
    pub(crate) fn vertices(&self) -> usize {
        self.g.len()
    }

    /// Column `c` at vertex `i`.
    pub(crate) fn pair(&self, i: usize, c: usize) -> Pair {
        let (g, f) = (&self.g[i], &self.f[i]);
        [
            [g[0][c], g[1][c], g[2][c]].into(),
            [f[0][c], f[1][c], f[2][c]].into(),
        ]
    }

    /// Sets column `c` at vertex `i`.
    pub(crate) fn set(&mut self, i: usize, c: usize, [dg, df]: Pair) {
        for k in 0..3 {
            self.g[i][k][c] = dg[k];
            self.f[i][k][c] = df[k];
        }
    }

    /// Becomes a copy of `other`, allocating only when it holds more
    /// vertices than `self` had room for.
    pub(crate) fn copy_from(&mut self, other: &Self) {
        self.g.clone_from(&other.g);
        self.f.clone_from(&other.f);
    }

    /// Whether the first `n` columns are equal in both.
    pub(crate) fn first_equal(&self, other: &Self, n: usize) -> bool {
        let rows = |a: &[Rows<N>], b: &[Rows<N>]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(a, b)| (0..3).all(|k| a[k][..n] == b[k][..n]))
        };
        rows(&self.g, &other.g) && rows(&self.f, &other.f)
    }

    /// Zeroes the first `n` columns at vertex `i`; returns whether any
    /// entry was not zero.
    pub(crate) fn clear(&mut self, i: usize, n: usize) -> bool {
        let mut changed = false;
        for rows in [&mut self.g[i], &mut self.f[i]] {
            for row in rows {
                changed |= row[..n].iter().any(|&e| e != 0.0);
                row[..n].fill(0.0);
            }
        }
        changed
    }

    /// `ΔFᵀΔF` of the first `n` columns (the rest zero).
    pub(crate) fn normal(&self, n: usize) -> [[f64; N]; N] {
        let mut normal = [[0.0; N]; N];
        for rows in &self.f {
            for c in 0..n {
                for r in 0..=c {
                    normal[r][c] += (0..3)
                        .map(|k| f64::from(rows[k][r]) * f64::from(rows[k][c]))
                        .sum::<f64>();
                }
            }
        }
        let upper = normal;
        for (r, row) in normal.iter_mut().enumerate().take(n) {
            for (c, e) in row.iter_mut().enumerate().take(r) {
                *e = upper[c][r];
            }
        }
        normal
    }

    /// `ΔFᵀv` over every column for each of the `S` vectors `v` given per
    /// vertex by `vectors` (a column not in use sums whatever it holds).
    pub(crate) fn f_sums<const S: usize>(
        &self,
        vectors: impl Fn(usize) -> [Vec3; S],
    ) -> [[f64; N]; S] {
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            // SAFETY: the CPU reports AVX2 and FMA.
            return unsafe { column_sums_avx2(&self.f, vectors) };
        }
        column_sums(&self.f, vectors)
    }

    /// `x −= ΔG t` at every vertex; columns whose `t` is zero are skipped
    /// (unused ones may hold anything).
    pub(crate) fn sub_g(&self, t: &[f64; N], x: &mut [Vec3]) {
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            // SAFETY: the CPU reports AVX2 and FMA.
            return unsafe { sub_product_avx2(&self.g, t, x) };
        }
        sub_product(&self.g, t, x);
    }
}

/// Column `c`'s sums `Σᵢ Σₖ rows[i][k][c] v[i][k]` for each of the vectors
/// `vectors(i)`.
#[inline(always)]
fn column_sums<const N: usize, const S: usize>(
    rows: &[Rows<N>],
    vectors: impl Fn(usize) -> [Vec3; S],
) -> [[f64; N]; S] {
    let mut sums = [[0.0; N]; S];
    for (i, rows) in rows.iter().enumerate() {
        let vectors = vectors(i);
        for (sum, v) in sums.iter_mut().zip(&vectors) {
            for (row, &vk) in rows.iter().zip(v.iter()) {
                for (s, &e) in sum.iter_mut().zip(row) {
                    *s += f64::from(e) * vk;
                }
            }
        }
    }
    sums
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn column_sums_avx2<const N: usize, const S: usize>(
    rows: &[Rows<N>],
    vectors: impl Fn(usize) -> [Vec3; S],
) -> [[f64; N]; S] {
    column_sums(rows, vectors)
}

/// `x[i] −= Σ_c rows[i][·][c] t[c]` over the columns with `t[c] ≠ 0`, in
/// four partial sums (columns `c ≡ 0, 1, 2, 3 mod 4`; `N` is a multiple
/// of 4).
#[inline(always)]
fn sub_product<const N: usize>(rows: &[Rows<N>], t: &[f64; N], x: &mut [Vec3]) {
    for (x, rows) in x.iter_mut().zip(rows) {
        for (xk, row) in x.iter_mut().zip(rows) {
            let mut acc = [0.0; 4];
            for (e, t) in row.chunks_exact(4).zip(t.chunks_exact(4)) {
                for l in 0..4 {
                    acc[l] += if t[l] != 0.0 {
                        f64::from(e[l]) * t[l]
                    } else {
                        0.0
                    };
                }
            }
            *xk -= (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
    }
}

/// [`sub_product`] in AVX2 lanes, bitwise: lane `l` of a vertex's sum
/// takes the columns `c ≡ l mod 4` (the autovectoriser leaves the masked
/// product scalar).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sub_product_avx2<const N: usize>(rows: &[Rows<N>], t: &[f64; N], x: &mut [Vec3]) {
    use std::arch::x86_64::*;
    let zero = _mm256_setzero_pd();
    // Each four columns' t and whether it is not zero (as `!=`, NaN
    // included); the entries past N / 4 are not read.
    let fours: [[__m256d; 2]; N] = std::array::from_fn(|c| {
        let tc = match t.get(4 * c..4 * c + 4) {
            // SAFETY: `t` holds four doubles from there.
            Some(t) => unsafe { _mm256_loadu_pd(t.as_ptr()) },
            None => zero,
        };
        [tc, _mm256_cmp_pd::<_CMP_NEQ_UQ>(tc, zero)]
    });
    for (x, rows) in x.iter_mut().zip(rows) {
        for (xk, row) in x.iter_mut().zip(rows) {
            let mut acc = zero;
            for (e, [tc, used]) in row.chunks_exact(4).zip(&fours) {
                // SAFETY: `e` holds four floats.
                let e = _mm256_cvtps_pd(unsafe { _mm_loadu_ps(e.as_ptr()) });
                acc = _mm256_add_pd(acc, _mm256_and_pd(_mm256_mul_pd(e, *tc), *used));
            }
            let mut lanes = [0.0; 4];
            // SAFETY: `lanes` holds four doubles.
            unsafe { _mm256_storeu_pd(lanes.as_mut_ptr(), acc) };
            *xk -= (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 24 columns over 50 vertices with varied entries; column 5 holds a
    /// NaN at vertex 7 and column 9 an infinity (a column not in use may).
    fn columns() -> Columns<24> {
        let mut c = Columns::<24>::new(50);
        for i in 0..50 {
            for col in 0..24 {
                let e = |k: usize| ((i * 31 + col * 7 + k * 13) % 17) as f32 / 7.0 - 1.1;
                let g = nalgebra::Vector3::new(e(0), e(1), e(2));
                c.set(i, col, [g, g * -0.5 + nalgebra::Vector3::repeat(0.25)]);
            }
        }
        let [g, f] = c.pair(7, 5);
        c.set(7, 5, [nalgebra::Vector3::new(f32::NAN, g.y, g.z), f]);
        c.set(3, 9, [nalgebra::Vector3::repeat(f32::INFINITY), f]);
        c
    }

    /// The mix skips the columns whose coefficient is zero (a NaN there
    /// would otherwise reach every iterate), matches the sum written out
    /// column by column, and the AVX2 build matches the portable one
    /// bitwise.
    #[test]
    fn the_mix_skips_unused_columns_and_the_lanes_agree() {
        let c = columns();
        let t: [f64; 24] = std::array::from_fn(|k| {
            if k == 5 || k == 9 || k > 20 {
                0.0
            } else {
                0.3 - 0.05 * k as f64
            }
        });
        let start: Vec<Vec3> = (0..50).map(|i| Vec3::new(i as f64, 1.0, -2.0)).collect();
        let mut portable = start.clone();
        sub_product(&c.g, &t, &mut portable);
        for (i, (x, s)) in portable.iter().zip(&start).enumerate() {
            let expected: Vec3 = (0..24)
                .filter(|&k| t[k] != 0.0)
                .map(|k| c.pair(i, k)[0].cast::<f64>() * t[k])
                .sum();
            assert!(
                (s - x - expected).norm() < 1e-12,
                "{i}: {x} vs {}",
                s - expected
            );
        }
        let mut dispatched = start;
        c.sub_g(&t, &mut dispatched);
        assert_eq!(dispatched, portable);
    }

    /// The column sums against two vectors match the sums written out, and
    /// the dispatched (AVX2) build matches the portable one bitwise; a
    /// column's NaN stays in its own sum.
    #[test]
    fn column_sums_match_and_the_lanes_agree() {
        let c = columns();
        let u = |i: usize| Vec3::new(0.1 * i as f64, -1.0, 0.5);
        let v = |i: usize| Vec3::new(1.0, (i % 3) as f64, -0.25 * i as f64);
        let [su, sv] = c.f_sums(|i| [u(i), v(i)]);
        assert_eq!([su, sv], column_sums(&c.f, |i| [u(i), v(i)]));
        for k in 0..24 {
            let df = |i| c.pair(i, k)[1].cast::<f64>();
            let eu: f64 = (0..50).map(|i| df(i).dot(&u(i))).sum();
            let ev: f64 = (0..50).map(|i| df(i).dot(&v(i))).sum();
            assert!((su[k] - eu).abs() < 1e-12 * eu.abs().max(1.0), "{k}");
            assert!((sv[k] - ev).abs() < 1e-12 * ev.abs().max(1.0), "{k}");
        }
        let mut nan = c.clone();
        let [g, _] = nan.pair(4, 2);
        nan.set(4, 2, [g, nalgebra::Vector3::repeat(f32::NAN)]);
        let [sums] = nan.f_sums(|i| [u(i)]);
        assert!(sums[2].is_nan());
        assert!(
            sums.iter()
                .enumerate()
                .all(|(k, s)| k == 2 || s.is_finite())
        );
    }
}
