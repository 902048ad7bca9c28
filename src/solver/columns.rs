//! Columns of Anderson's window (accelerate.rs) and the passes over them.
//!
//! A column is a secant pair `(ΔG, ΔF)`, a 3-vector per vertex each, in
//! single precision (they only steer the extrapolation; the safeguard and
//! the fixed point are double, and half the bytes is most of their cost).
//! An iteration writes one new column and makes two passes over every
//! column in use: one sums `ΔFᵀf` (and the new column's row of the normal
//! matrix), the other mixes the next iterate from `ΔG`. Neither pass reads
//! the other half, so `ΔG` and `ΔF` are kept in two arrays.
//!
//! **Blocks.** The vertices are taken [`BLOCK`] at a time, and a block
//! stores each column's components over its vertices in a cache line of
//! their own (`[c][k][l]`: component `k` of column `c` at the block's
//! vertex `l`). Both passes then run along the block's vertices in vector
//! lanes, a pass over the first `n` columns reads a prefix of each block,
//! and writing a column writes whole lines, three per block. (The
//! entries used to be stored by vertex, `[k][c]`: a new column wrote one
//! float into each of six lines per vertex, each first read from memory;
//! on the 105,085-vertex tet body that write took 1.6 ms, longer than
//! either pass.)
//!
//! **Two halves.** Each pass and the write split the blocks into two fixed
//! halves, run on two threads when the caller allows it (a solver of more
//! than one thread) and the model has [`PARALLEL_VERTICES`] or more, one
//! after the other otherwise; a sum is the first half's plus the second's
//! either way. Within a half the order of operations is fixed by
//! the code (no fused multiply-adds), so the AVX2 build and the portable
//! one, and one thread and two, agree bitwise.

use std::sync::atomic::{AtomicU64, Ordering};

use super::both;
use crate::mesh::Vec3;

/// One column's entry at one vertex: `[ΔG, ΔF]` (single precision).
pub(crate) type Pair = [nalgebra::Vector3<f32>; 2];

/// Vertices per block: one component of one column over a block is one
/// 64-byte cache line.
const BLOCK: usize = 16;

/// Vertices from which the passes split over two threads. They run inside
/// a step, which keeps the pool's other thread awake (`with_pool_awake` in
/// the solver), so handing it a half costs about a microsecond: from 256
/// vertices that pays. (While the other thread slept, a wake-up took about
/// what a pass over the n = 60 cloth's 3,721 vertices saved, and the passes
/// split from 4,096; splitting from 256 took the default frame, 2
/// iterations, of the n = 16, 20 and 60 cloths from 0.095–0.097,
/// 0.122–0.123 and 1.154–1.165 ms to 0.077–0.087, 0.108 and 0.942–0.954;
/// the n = 30 cloth's stayed within noise, 0.29–0.30 ms.)
const PARALLEL_VERTICES: usize = 256;

/// Vertices from which [`Columns::copy_from`] copies on two threads: it
/// runs outside a step, where the other thread has to be woken (~20–40 µs).
const PARALLEL_COPY_VERTICES: usize = 4096;

/// One component of one column over a block's vertices.
#[derive(Clone, Copy, PartialEq)]
#[repr(C, align(64))]
struct Line([f32; BLOCK]);

/// A block's entries of `N` columns: `[c][k]` is component `k` of column
/// `c` over the block's vertices (zero past the last vertex).
type Block<const N: usize> = [[Line; 3]; N];

/// `N` columns of Anderson's window over a model's vertices.
#[derive(Clone)]
pub(crate) struct Columns<const N: usize> {
    /// `ΔG` by block.
    g: Vec<Block<N>>,
    /// `ΔF` by block.
    f: Vec<Block<N>>,
    vertices: usize,
    /// Each column's stamp: a number drawn afresh (from [`STAMPS`]) each
    /// time the column is written, 0 while it is zero from
    /// [`Columns::new`]. Two columns of the same size with the same stamp
    /// hold the same values, so [`Columns::copy_from`] copies only the
    /// columns whose stamps differ.
    stamps: [u64; N],
}

impl<const N: usize> Default for Columns<N> {
    fn default() -> Self {
        Self {
            g: Vec::new(),
            f: Vec::new(),
            vertices: 0,
            stamps: [0; N],
        }
    }
}

/// The last stamp drawn for a written column (see [`Columns`]'s `stamps`):
/// one counter for all columns, so no two writes share a stamp.
static STAMPS: AtomicU64 = AtomicU64::new(0);

/// A stamp no column has had.
fn fresh_stamp() -> u64 {
    STAMPS.fetch_add(1, Ordering::Relaxed) + 1
}

impl<const N: usize> Columns<N> {
    /// `N` zero columns over `m` vertices.
    pub(crate) fn new(m: usize) -> Self {
        let zero = [[Line([0.0; BLOCK]); 3]; N];
        Self {
            g: vec![zero; m.div_ceil(BLOCK)],
            f: vec![zero; m.div_ceil(BLOCK)],
            vertices: m,
            stamps: [0; N],
        }
    }

    /// The vertices.
    pub(crate) fn vertices(&self) -> usize {
        self.vertices
    }

    /// Column `c` at vertex `i`.
    pub(crate) fn pair(&self, i: usize, c: usize) -> Pair {
        let (b, l) = (i / BLOCK, i % BLOCK);
        let (g, f) = (&self.g[b][c], &self.f[b][c]);
        [
            [g[0].0[l], g[1].0[l], g[2].0[l]].into(),
            [f[0].0[l], f[1].0[l], f[2].0[l]].into(),
        ]
    }

    /// Sets column `c` at vertex `i`.
    #[cfg(test)]
    pub(crate) fn set(&mut self, i: usize, c: usize, [dg, df]: Pair) {
        let (b, l) = (i / BLOCK, i % BLOCK);
        for k in 0..3 {
            self.g[b][c][k].0[l] = dg[k];
            self.f[b][c][k].0[l] = df[k];
        }
        self.stamps[c] = fresh_stamp();
    }

    /// Sets column `c` at every vertex `i` to `pair(i, [&mut a[i], &mut
    /// b[i]])`, which may update the caller's entries of `a` and `b` at
    /// that vertex (in two halves, on two threads if `parallel` allows: see
    /// the module docs).
    pub(crate) fn set_column(
        &mut self,
        (c, parallel): (usize, bool),
        [a, b]: [&mut [Vec3]; 2],
        pair: impl Fn(usize, [&mut Vec3; 2]) -> Pair + Sync,
    ) {
        assert!(a.len() == self.vertices && b.len() == self.vertices);
        self.stamps[c] = fresh_stamp();
        let parallel = self.in_parallel(parallel);
        let (block, vertex) = self.middle();
        let (g0, g1) = self.g.split_at_mut(block);
        let (f0, f1) = self.f.split_at_mut(block);
        let (a0, a1) = a.split_at_mut(vertex);
        let (b0, b1) = b.split_at_mut(vertex);
        let pair = &pair;
        both(
            parallel,
            || write_column((g0, f0), c, 0, [a0, b0], pair),
            || write_column((g1, f1), c, vertex, [a1, b1], pair),
        );
    }

    /// Becomes a copy of `other`, allocating only when it holds more
    /// vertices than `self` had room for; `ΔG` and `ΔF` are copied on two
    /// threads on a large model. Of columns the same size only those whose
    /// stamps differ are copied: the editor copies each frame's pairs for
    /// the UI into a state a few frames old, whose columns but the few
    /// written since are the same (2 × 30 MB on the 105,085-vertex tet
    /// body, of which a frame of two iterations writes two columns).
    pub(crate) fn copy_from(&mut self, other: &Self) {
        let (mut changed, mut count) = ([0; N], 0);
        for c in (0..N).filter(|&c| self.stamps[c] != other.stamps[c]) {
            changed[count] = c;
            count += 1;
        }
        let changed = &changed[..count];
        let (g, f) = (&mut self.g, &mut self.f);
        let parallel = other.vertices >= PARALLEL_COPY_VERTICES;
        // With half the columns or more to copy, the blocks are copied
        // whole, in one stream, instead of column by column (a choice, not
        // measured; a frame of two iterations writes two columns).
        if self.vertices == other.vertices && count < N / 2 {
            let columns = |to: &mut [Block<N>], from: &[Block<N>]| {
                for (to, from) in to.iter_mut().zip(from) {
                    for &c in changed {
                        to[c] = from[c];
                    }
                }
            };
            both(parallel, || columns(g, &other.g), || columns(f, &other.f));
        } else {
            both(
                parallel,
                || g.clone_from(&other.g),
                || f.clone_from(&other.f),
            );
        }
        self.vertices = other.vertices;
        self.stamps = other.stamps;
    }

    /// Whether the first `n` columns are equal in both.
    pub(crate) fn first_equal(&self, other: &Self, n: usize) -> bool {
        let blocks = |a: &[Block<N>], b: &[Block<N>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a[..n] == b[..n])
        };
        self.vertices == other.vertices && blocks(&self.g, &other.g) && blocks(&self.f, &other.f)
    }

    /// Zeroes the first `n` columns at vertex `i`; returns whether any
    /// entry was not zero.
    pub(crate) fn clear(&mut self, i: usize, n: usize) -> bool {
        let (b, l) = (i / BLOCK, i % BLOCK);
        let mut changed = false;
        for block in [&mut self.g[b], &mut self.f[b]] {
            for lines in &mut block[..n] {
                for line in lines {
                    changed |= line.0[l] != 0.0;
                    line.0[l] = 0.0;
                }
            }
        }
        if changed {
            for stamp in &mut self.stamps[..n] {
                *stamp = fresh_stamp();
            }
        }
        changed
    }

    /// `ΔFᵀΔF` of the first `n` columns (the rest zero).
    pub(crate) fn normal(&self, n: usize) -> [[f64; N]; N] {
        let dot = |a: &[Line; 3], b: &[Line; 3]| -> f64 {
            (a.iter().zip(b))
                .flat_map(|(a, b)| a.0.iter().zip(&b.0))
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum()
        };
        let mut normal = [[0.0; N]; N];
        for block in &self.f {
            for c in 0..n {
                for r in 0..=c {
                    normal[r][c] += dot(&block[r], &block[c]);
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

    /// `ΔFᵀv` over the first `n` columns (the rest zero) for each of the
    /// `S` vectors `v` given per vertex by `vectors` (on two threads if
    /// `parallel` allows).
    pub(crate) fn f_sums<const S: usize>(
        &self,
        (n, parallel): (usize, bool),
        vectors: impl Fn(usize) -> [Vec3; S] + Sync,
    ) -> [[f64; N]; S] {
        let parallel = self.in_parallel(parallel);
        self.f_sums_by(super::has_avx2_fma(), parallel, n, vectors)
    }

    /// [`Self::f_sums`] with the AVX2 kernel or the portable one, on two
    /// threads or one.
    fn f_sums_by<const S: usize>(
        &self,
        avx2: bool,
        parallel: bool,
        n: usize,
        vectors: impl Fn(usize) -> [Vec3; S] + Sync,
    ) -> [[f64; N]; S] {
        let (block, vertex) = self.middle();
        let (f0, f1) = self.f.split_at(block);
        let m = self.vertices;
        let vectors = &vectors;
        let half = |blocks, first| {
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: `avx2` is set only when the CPU reports AVX2 and FMA.
                return unsafe { column_sums_avx2(blocks, (first, m), n, vectors) };
            }
            let _ = avx2;
            column_sums(blocks, (first, m), n, vectors)
        };
        let (a, b) = both(parallel, || half(f0, 0), || half(f1, vertex));
        std::array::from_fn(|s| std::array::from_fn(|c| a[s][c] + b[s][c]))
    }

    /// `x = base − ΔG t` at every vertex, or `x −= ΔG t` without `base`
    /// (on two threads if `parallel` allows); columns whose `t` is zero
    /// are skipped (unused ones may hold anything).
    pub(crate) fn sub_g(
        &self,
        (t, parallel): (&[f64; N], bool),
        base: Option<&[Vec3]>,
        x: &mut [Vec3],
    ) {
        let parallel = self.in_parallel(parallel);
        self.sub_g_by(super::has_avx2_fma(), parallel, t, base, x);
    }

    /// `x = base − ΔG t` (`x −= ΔG t` without `base`) with the AVX2 kernel
    /// or the portable one, on two threads or one.
    fn sub_g_by(
        &self,
        avx2: bool,
        parallel: bool,
        t: &[f64; N],
        base: Option<&[Vec3]>,
        x: &mut [Vec3],
    ) {
        assert_eq!(x.len(), self.vertices);
        let (block, vertex) = self.middle();
        let (g0, g1) = self.g.split_at(block);
        let (x0, x1) = x.split_at_mut(vertex);
        let (base0, base1) = match base {
            Some(base) => {
                let (b0, b1) = base.split_at(vertex);
                (Some(b0), Some(b1))
            }
            None => (None, None),
        };
        let half = |blocks, base, x| {
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: `avx2` is set only when the CPU reports AVX2 and FMA.
                return unsafe { sub_product_avx2(blocks, t, base, x) };
            }
            let _ = avx2;
            sub_product(blocks, t, base, x)
        };
        both(parallel, || half(g0, base0, x0), || half(g1, base1, x1));
    }

    /// Whether the halves run on two threads: the caller allows it and the
    /// model is large enough to pay for it.
    fn in_parallel(&self, allowed: bool) -> bool {
        allowed && self.vertices >= PARALLEL_VERTICES
    }

    /// Where the two halves split: the first block and the first vertex of
    /// the second.
    fn middle(&self) -> (usize, usize) {
        let block = self.g.len() / 2;
        (block, (block * BLOCK).min(self.vertices))
    }
}

/// Writes column `c` of the blocks `g` and `f` (whose first vertex is
/// `first`) at each of their vertices `i`: `pair(first + i, [&mut a[i],
/// &mut b[i]])`.
fn write_column<const N: usize>(
    (g, f): (&mut [Block<N>], &mut [Block<N>]),
    c: usize,
    first: usize,
    [a, b]: [&mut [Vec3]; 2],
    pair: &impl Fn(usize, [&mut Vec3; 2]) -> Pair,
) {
    for (i, (a, b)) in a.iter_mut().zip(b).enumerate() {
        let [dg, df] = pair(first + i, [a, b]);
        let (block, l) = (i / BLOCK, i % BLOCK);
        for k in 0..3 {
            g[block][c][k].0[l] = dg[k];
            f[block][c][k].0[l] = df[k];
        }
    }
}

/// The sums `Σᵢ ΔF_c(i) · v(i)` of the first `n` columns over `blocks`
/// (whose first vertex is `first`, of `m`) for each of the vectors
/// `vectors(i)`: one partial sum per lane (vertex of a block) and column,
/// added up in a fixed tree at the end.
#[inline(always)]
fn column_sums<const N: usize, const S: usize>(
    blocks: &[Block<N>],
    (first, m): (usize, usize),
    n: usize,
    vectors: &impl Fn(usize) -> [Vec3; S],
) -> [[f64; N]; S] {
    let mut acc = [[[0.0; BLOCK]; N]; S];
    for (b, block) in blocks.iter().enumerate() {
        let start = first + b * BLOCK;
        let mut v = [[[0.0; BLOCK]; 3]; S];
        for l in 0..BLOCK.min(m - start) {
            for (v, vector) in v.iter_mut().zip(vectors(start + l)) {
                for k in 0..3 {
                    v[k][l] = vector[k];
                }
            }
        }
        for (acc, v) in acc.iter_mut().zip(&v) {
            for (acc, lines) in acc.iter_mut().zip(&block[..n]) {
                for l in 0..BLOCK {
                    let e = |k: usize| f64::from(lines[k].0[l]) * v[k][l];
                    acc[l] += (e(0) + e(1)) + e(2);
                }
            }
        }
    }
    acc.map(|acc| acc.map(sum_lanes))
}

/// The sum of a block's lanes, pairwise.
#[inline(always)]
fn sum_lanes(mut lanes: [f64; BLOCK]) -> f64 {
    let mut width = BLOCK;
    while width > 1 {
        width /= 2;
        for l in 0..width {
            lanes[l] += lanes[l + width];
        }
    }
    lanes[0]
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn column_sums_avx2<const N: usize, const S: usize>(
    blocks: &[Block<N>],
    range: (usize, usize),
    n: usize,
    vectors: &impl Fn(usize) -> [Vec3; S],
) -> [[f64; N]; S] {
    column_sums(blocks, range, n, vectors)
}

/// `x[i] = base[i] − Σ_c ΔG_c(i) t[c]` (`x[i] −=` without `base`) over the
/// columns with `t[c] ≠ 0`, in column order, at the vertices of `blocks`
/// (`x` and `base` start at the first block's first vertex).
#[inline(always)]
fn sub_product<const N: usize>(
    blocks: &[Block<N>],
    t: &[f64; N],
    base: Option<&[Vec3]>,
    x: &mut [Vec3],
) {
    for (b, (block, x)) in blocks.iter().zip(x.chunks_mut(BLOCK)).enumerate() {
        let mut acc = [[0.0; BLOCK]; 3];
        for (lines, &t) in block.iter().zip(t) {
            if t != 0.0 {
                for (acc, line) in acc.iter_mut().zip(lines) {
                    for (a, &e) in acc.iter_mut().zip(&line.0) {
                        *a += f64::from(e) * t;
                    }
                }
            }
        }
        for (l, x) in x.iter_mut().enumerate() {
            let from = base.map_or(*x, |base| base[b * BLOCK + l]);
            *x = from - Vec3::new(acc[0][l], acc[1][l], acc[2][l]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn sub_product_avx2<const N: usize>(
    blocks: &[Block<N>],
    t: &[f64; N],
    base: Option<&[Vec3]>,
    x: &mut [Vec3],
) {
    sub_product(blocks, t, base, x);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 24 columns over 50 vertices (three full blocks and two vertices of
    /// a fourth) with varied entries; column 5 holds a NaN at vertex 7 and
    /// column 9 an infinity (a column not in use may).
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

    /// The kernels the dispatch may pick (AVX2 where the CPU has it) and
    /// the thread counts.
    fn variants() -> Vec<(bool, bool)> {
        let avx2 = [false, crate::solver::has_avx2_fma()];
        avx2.iter().flat_map(|&a| [(a, false), (a, true)]).collect()
    }

    /// The mix skips the columns whose coefficient is zero (a NaN there
    /// would otherwise reach every iterate), matches the sum written out
    /// column by column, and the AVX2 kernel and the portable one, on one
    /// thread and on two, agree bitwise; mixing from a base is subtracting
    /// from a copy of it.
    #[test]
    fn the_mix_skips_unused_columns_and_the_variants_agree() {
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
        c.sub_g_by(false, false, &t, None, &mut portable);
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
        for (avx2, parallel) in variants() {
            let mut x = start.clone();
            c.sub_g_by(avx2, parallel, &t, None, &mut x);
            assert_eq!(x, portable, "avx2 {avx2}, parallel {parallel}");
            let mut x = vec![Vec3::repeat(f64::NAN); 50];
            c.sub_g_by(avx2, parallel, &t, Some(&start), &mut x);
            assert_eq!(x, portable, "from a base: avx2 {avx2}, parallel {parallel}");
        }
        let mut x = vec![Vec3::zeros(); 50];
        c.sub_g((&t, true), Some(&start), &mut x);
        assert_eq!(x, portable);
    }

    /// The column sums against two vectors match the sums written out, the
    /// variants agree bitwise, the columns past `n` sum to zero (their NaN
    /// unread), and a column's NaN stays in its own sum.
    #[test]
    fn column_sums_match_and_the_variants_agree() {
        let c = columns();
        let u = |i: usize| Vec3::new(0.1 * i as f64, -1.0, 0.5);
        let v = |i: usize| Vec3::new(1.0, (i % 3) as f64, -0.25 * i as f64);
        let [su, sv] = c.f_sums_by(false, false, 24, |i| [u(i), v(i)]);
        for (avx2, parallel) in variants() {
            let sums = c.f_sums_by(avx2, parallel, 24, |i| [u(i), v(i)]);
            assert_eq!(sums, [su, sv], "avx2 {avx2}, parallel {parallel}");
        }
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
        let [sums] = nan.f_sums((24, true), |i| [u(i)]);
        assert!(sums[2].is_nan());
        assert!(
            sums.iter()
                .enumerate()
                .all(|(k, s)| k == 2 || s.is_finite())
        );
        let [first] = nan.f_sums((2, true), |i| [u(i)]);
        assert_eq!(first[..2], [su[0], su[1]]);
        assert!(first[2..].iter().all(|&s| s == 0.0));
    }

    /// Whether `a` and `b` hold bitwise the same 24 columns.
    fn same_bits(a: &Columns<24>, b: &Columns<24>) -> bool {
        let bits = |p: Pair| p.map(|v| v.map(f32::to_bits));
        a.vertices == b.vertices
            && (0..a.vertices).all(|i| (0..24).all(|c| bits(a.pair(i, c)) == bits(b.pair(i, c))))
    }

    /// A copy into columns a few writes behind copies the columns written
    /// since and only those, on one thread and two, and ends bitwise the
    /// source's; a cleared vertex, or columns of another size, copy whole.
    #[test]
    fn a_copy_catches_up_with_the_columns_written_since() {
        for m in [37, PARALLEL_COPY_VERTICES + 5] {
            let write = |c: &mut Columns<24>, col: usize, seed: f32| {
                for i in 0..m {
                    let v = nalgebra::Vector3::new(seed, i as f32, -seed);
                    c.set(i, col, [v, v * 2.0]);
                }
            };
            let mut source = Columns::<24>::new(m);
            for col in 0..24 {
                write(&mut source, col, col as f32);
            }
            let mut copy = Columns::<24>::new(m + 1);
            copy.copy_from(&source);
            assert!(same_bits(&copy, &source), "{m}: another size copies whole");
            write(&mut source, 3, 100.0);
            write(&mut source, 20, 101.0);
            // A column not written since is not copied: a value put there
            // behind the stamps' back stays.
            copy.g[0][7][0].0[1] = 42.0;
            copy.copy_from(&source);
            assert_eq!(copy.g[0][7][0].0[1], 42.0, "{m}");
            copy.g[0][7][0].0[1] = source.g[0][7][0].0[1];
            assert!(same_bits(&copy, &source), "{m}: the written columns");
            // Another copy's own writes have other stamps.
            let mut other = source.clone();
            write(&mut other, 3, -7.0);
            copy.copy_from(&other);
            assert!(same_bits(&copy, &other), "{m}: another history");
            copy.copy_from(&source);
            assert!(same_bits(&copy, &source), "{m}: and back");
            assert!(source.clear(m - 1, 24));
            copy.copy_from(&source);
            assert!(same_bits(&copy, &source), "{m}: a cleared vertex");
        }
    }

    /// Writing a column over a large model (two threads) sets every
    /// vertex's entry and the caller's per-vertex state, as setting them
    /// one at a time does; the normal matrix, clearing a vertex and the
    /// comparison of the first columns see it.
    #[test]
    fn a_written_column_is_the_pairs_set_one_by_one() {
        let m = PARALLEL_VERTICES + 21;
        let entry = |i: usize, k: usize| ((i * 7 + k * 3) % 11) as f32 - 5.0;
        let pair = |i: usize| -> Pair {
            let e = nalgebra::Vector3::new(entry(i, 0), entry(i, 1), entry(i, 2));
            [e, e * 0.5]
        };
        let (mut a, mut b) = (vec![Vec3::zeros(); m], vec![Vec3::zeros(); m]);
        let mut written = Columns::<8>::new(m);
        written.set_column((3, true), [&mut a, &mut b], |i, [a, b]| {
            *a = Vec3::repeat(i as f64);
            *b = -*a;
            pair(i)
        });
        let mut one_by_one = Columns::<8>::new(m);
        for i in 0..m {
            one_by_one.set(i, 3, pair(i));
            assert_eq!(
                (a[i], b[i]),
                (Vec3::repeat(i as f64), Vec3::repeat(-(i as f64)))
            );
        }
        assert!(written.first_equal(&one_by_one, 8));
        let df = |i: usize| pair(i)[1].cast::<f64>();
        let expected: f64 = (0..m).map(|i| df(i).norm_squared()).sum();
        let normal = written.normal(4);
        assert!((normal[3][3] - expected).abs() <= 1e-12 * expected);
        assert_eq!(normal[0][3], 0.0);
        let vertex = m - 5;
        assert!(written.clear(vertex, 4));
        assert!(!written.clear(vertex, 4));
        assert!(!written.first_equal(&one_by_one, 4));
        assert_eq!(written.pair(vertex, 3), [nalgebra::Vector3::zeros(); 2]);
    }
}
