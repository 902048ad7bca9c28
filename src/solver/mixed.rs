//! The mixed-precision global solve for large systems.
//!
//! On a large model the global step is bound by memory traffic: every
//! iteration reads the whole Cholesky factor `L` twice (forward and backward
//! substitution), and `L` is far larger than any cache (tet100k: 49 M
//! entries). [`MixedFactor`] keeps `L` in single precision in its supernodal
//! layout — dense blocks that share one list of row indices per supernode —
//! so a solve reads about 4 bytes per entry instead of the 12 of the
//! double-precision compressed columns (8-byte value, 4-byte row index), and
//! runs its inner loops as dense, vectorisable dot products and updates.
//! Arithmetic stays in double precision.
//!
//! Rounding `L` to single precision perturbs the matrix by about 1e-7
//! relatively, so the solve is applied as a correction (one step of
//! iterative refinement from a guess): `x = x₀ + L̃⁻ᵀ L̃⁻¹ (b − A x₀)`, with
//! the residual in double precision against the exact `A`. The guess is the
//! previous iterate, so the error of the solve is a small fraction of the
//! change of one iteration, not of the positions, and the fixed points of the
//! iteration are those of the exact solve. That fraction is bounded by about
//! `κ(A)` times single precision's round-off in theory; measured, it is
//! ~1e-7 even with spring weights of 1e10 (`mixed_solve_corrects_a_guess`).
//! The step still lowers the PD objective (a slightly inexact minimisation
//! of a convex quadratic from a point it improves on), which the
//! monotone-objective tests check with it forced on.

use std::sync::Arc;

use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};

use super::system::LowerPattern;
use crate::mesh::Vec3;

/// The precision of the factor the global step solves with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Mixed when `L` has at least [`MIXED_FROM_ENTRIES`] entries (it no
    /// longer fits in cache and the solve is bound by reading it), double
    /// below.
    #[default]
    Auto,
    /// `L` in double precision.
    Double,
    /// `L` in single precision, corrected with a double-precision residual.
    Mixed,
}

/// The size of `L` (stored entries) from which [`Precision::Auto`] solves in
/// mixed precision.
pub const MIXED_FROM_ENTRIES: usize = 500_000;

impl Precision {
    /// Every precision, in the order the command line lists them.
    pub const ALL: [Precision; 3] = [Self::Auto, Self::Double, Self::Mixed];

    /// Whether a factor with `entries` stored entries is solved in mixed
    /// precision.
    pub fn is_mixed(self, entries: usize) -> bool {
        match self {
            Self::Auto => entries >= MIXED_FROM_ENTRIES,
            Self::Double => false,
            Self::Mixed => true,
        }
    }

    /// `auto`, `double` or `mixed`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Double => "double",
            Self::Mixed => "mixed",
        }
    }

    /// The precision called `name` (see [`Precision::name`]).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One supernode: consecutive columns `start..start + size` of `L` that share
/// their rows below the diagonal block.
#[derive(Clone, Copy, Debug)]
struct Supernode {
    start: usize,
    size: usize,
    /// Offset of the shared row indices in [`MixedL::rows`].
    rows: usize,
    /// Number of those rows.
    below: usize,
    /// Offset of the values in [`MixedL::values`]: the strictly lower part
    /// of the diagonal block packed by columns, then the `below × size`
    /// block under it by rows.
    values: usize,
}

/// `L` of `P A Pᵀ = L Lᵀ` in single-precision supernodes (the reciprocal
/// diagonal in double precision), and the lower triangle of `P A Pᵀ` in
/// double precision for the residual.
#[derive(Default)]
struct MixedL {
    /// `perm[k]`: the unknown that is row `k` of the permuted system.
    perm: Vec<u32>,
    inv_diag: Vec<f64>,
    supernodes: Vec<Supernode>,
    rows: Vec<u32>,
    values: Vec<f32>,
    /// `P A Pᵀ`, lower triangle by columns (rows unsorted).
    a_col_ptr: Vec<u32>,
    a_row_idx: Vec<u32>,
    a_values: Vec<f64>,
}

impl MixedL {
    /// Fills the permuted lower triangle of `A` (`values` on `pattern`).
    fn permute_matrix(&mut self, pattern: &LowerPattern, values: &[f64]) {
        let n = self.perm.len();
        let mut inverse = vec![0u32; n];
        for (k, &u) in self.perm.iter().enumerate() {
            inverse[u as usize] = k as u32;
        }
        let entries = || {
            pattern.entries().map(|(r, c, slot)| {
                let (pr, pc) = (inverse[r], inverse[c]);
                (pr.max(pc), pr.min(pc), slot)
            })
        };
        self.a_col_ptr.clear();
        self.a_col_ptr.resize(n + 1, 0);
        for (_, c, _) in entries() {
            self.a_col_ptr[c as usize + 1] += 1;
        }
        for c in 0..n {
            self.a_col_ptr[c + 1] += self.a_col_ptr[c];
        }
        let mut next: Vec<u32> = self.a_col_ptr[..n].to_vec();
        self.a_row_idx.resize(pattern.nnz(), 0);
        self.a_values.resize(pattern.nnz(), 0.0);
        for (r, c, slot) in entries() {
            let k = next[c as usize] as usize;
            next[c as usize] += 1;
            self.a_row_idx[k] = r;
            self.a_values[k] = values[slot];
        }
    }

    /// `out −= P A Pᵀ x`.
    fn sub_product(&self, x: &[Row], out: &mut [Row]) {
        for (c, xc) in x.iter().enumerate() {
            let range = self.a_col_ptr[c] as usize..self.a_col_ptr[c + 1] as usize;
            let mut column = [0.0; 4];
            for (&r, &v) in self.a_row_idx[range.clone()]
                .iter()
                .zip(&self.a_values[range])
            {
                let r = r as usize;
                for lane in 0..4 {
                    out[r][lane] -= v * xc[lane];
                }
                if r != c {
                    for lane in 0..4 {
                        column[lane] += v * x[r][lane];
                    }
                }
            }
            for lane in 0..4 {
                out[c][lane] -= column[lane];
            }
        }
    }
}

/// A single-precision copy of `L` and the work space to solve with it; clones
/// share `L` and have their own work space.
#[derive(Clone, Default)]
pub(crate) struct MixedFactor {
    l: Arc<MixedL>,
    /// The permuted guess.
    guess: Vec<Row>,
    /// The permuted residual, then correction.
    work: Vec<Row>,
    /// Whether the CPU runs the AVX2 + FMA kernel.
    avx2: bool,
}

impl MixedFactor {
    /// Copies the supernodal factor `l_values` of `symbolic`, with the
    /// fill-reducing permutation `perm` (`None`: identity), and the matrix
    /// (lower triangle `a_values` on `pattern`) it factorises.
    pub(crate) fn extract(
        &mut self,
        symbolic: &SymbolicSupernodalCholesky<usize>,
        l_values: &[f64],
        perm: Option<&[usize]>,
        (pattern, a_values): (&LowerPattern, &[f64]),
    ) {
        let n = symbolic.nrows();
        if Arc::get_mut(&mut self.l).is_none() {
            // A clone still solves with the old L.
            self.l = Arc::default();
        }
        self.guess.resize(n, [0.0; 4]);
        self.work.resize(n, [0.0; 4]);
        self.avx2 = super::has_avx2_fma();
        let out = Arc::get_mut(&mut self.l).expect("not shared");
        out.perm.clear();
        match perm {
            Some(p) => out.perm.extend(p.iter().map(|&i| i as u32)),
            None => out.perm.extend(0..n as u32),
        }
        out.permute_matrix(pattern, a_values);
        out.inv_diag.clear();
        out.supernodes.clear();
        out.rows.clear();
        out.values.clear();
        let l = SupernodalLltRef::new(symbolic, l_values);
        for s in 0..symbolic.n_supernodes() {
            let node = l.supernode(s);
            let (start, pattern, block) = (node.start(), node.pattern(), node.val());
            let size = block.ncols();
            out.supernodes.push(Supernode {
                start,
                size,
                rows: out.rows.len(),
                below: pattern.len(),
                values: out.values.len(),
            });
            out.rows.extend(pattern.iter().map(|&r| r as u32));
            for c in 0..size {
                out.inv_diag.push(1.0 / block[(c, c)]);
                out.values
                    .extend((c + 1..size).map(|r| block[(r, c)] as f32));
            }
            for k in 0..pattern.len() {
                out.values
                    .extend((0..size).map(|c| block[(size + k, c)] as f32));
            }
        }
    }

    /// Stored entries of `L` (explicit zeros of relaxed supernodes included).
    pub(crate) fn nnz(&self) -> usize {
        self.l.values.len() + self.l.inv_diag.len()
    }

    /// The fill-reducing permutation: `perm()[k]` is the unknown of row `k`.
    pub(crate) fn perm(&self) -> &[u32] {
        &self.l.perm
    }

    /// Solves `A x = rhs` for the vertices `row_vertex[k]` (row `k` of the
    /// permuted system) as a correction of the guess their rows of `x` hold
    /// on entry.
    pub(crate) fn solve(&mut self, rhs: &[Vec3], x: &mut [Vec3], row_vertex: &[u32]) {
        for ((w, g), &v) in self.work.iter_mut().zip(&mut self.guess).zip(row_vertex) {
            let (r, x) = (rhs[v as usize], x[v as usize]);
            *w = [r.x, r.y, r.z, 0.0];
            *g = [x.x, x.y, x.z, 0.0];
        }
        self.l.sub_product(&self.guess, &mut self.work);
        run(&self.l, &mut self.work, self.avx2);
        for ((w, g), &v) in self.work.iter().zip(&self.guess).zip(row_vertex) {
            x[v as usize] = Vec3::new(g[0] + w[0], g[1] + w[1], g[2] + w[2]);
        }
    }
}

/// A row of the work vector: x, y, z and a pad lane, so a row is one 256-bit
/// access and one cache line holds two rows.
type Row = [f64; 4];

/// The two inner loops of the solve, portable or with AVX2 + FMA.
trait Lanes {
    /// `Σ rowᵢ · work[i]` in double precision.
    fn dot(row: &[f32], work: &[Row]) -> Row;
    /// `work[i] −= rowᵢ · s`.
    fn sub(row: &[f32], s: Row, work: &mut [Row]);
}

/// Plain Rust.
struct Portable;

impl Lanes for Portable {
    #[inline(always)]
    fn dot(row: &[f32], work: &[Row]) -> Row {
        let mut acc = [0.0; 4];
        for (&l, w) in row.iter().zip(work) {
            let l = f64::from(l);
            for c in 0..4 {
                acc[c] += l * w[c];
            }
        }
        acc
    }

    #[inline(always)]
    fn sub(row: &[f32], s: Row, work: &mut [Row]) {
        for (&l, w) in row.iter().zip(work) {
            let l = f64::from(l);
            for c in 0..4 {
                w[c] -= l * s[c];
            }
        }
    }
}

/// One 256-bit fused multiply-add per entry: the row is a whole register.
#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Lanes for Avx2 {
    #[inline(always)]
    fn dot(row: &[f32], work: &[Row]) -> Row {
        use std::arch::x86_64::*;
        let work = &work[..row.len()];
        let mut out = [0.0; 4];
        // SAFETY: only inlined into `solve_avx2`, which runs when the CPU has
        // AVX2 and FMA; every load reads one whole `Row` of 4 f64.
        unsafe {
            let (mut even, mut odd) = (_mm256_setzero_pd(), _mm256_setzero_pd());
            let mut pairs_l = row.chunks_exact(2);
            let mut pairs_w = work.chunks_exact(2);
            for (l, w) in (&mut pairs_l).zip(&mut pairs_w) {
                let w0 = _mm256_loadu_pd(w[0].as_ptr());
                let w1 = _mm256_loadu_pd(w[1].as_ptr());
                even = _mm256_fmadd_pd(_mm256_set1_pd(f64::from(l[0])), w0, even);
                odd = _mm256_fmadd_pd(_mm256_set1_pd(f64::from(l[1])), w1, odd);
            }
            for (&l, w) in pairs_l.remainder().iter().zip(pairs_w.remainder()) {
                let w = _mm256_loadu_pd(w.as_ptr());
                even = _mm256_fmadd_pd(_mm256_set1_pd(f64::from(l)), w, even);
            }
            _mm256_storeu_pd(out.as_mut_ptr(), _mm256_add_pd(even, odd));
        }
        out
    }

    #[inline(always)]
    fn sub(row: &[f32], s: Row, work: &mut [Row]) {
        use std::arch::x86_64::*;
        // SAFETY: as in `dot`.
        unsafe {
            let s = _mm256_loadu_pd(s.as_ptr());
            for (&l, w) in row.iter().zip(work) {
                let v = _mm256_loadu_pd(w.as_ptr());
                let v = _mm256_fnmadd_pd(_mm256_set1_pd(f64::from(l)), s, v);
                _mm256_storeu_pd(w.as_mut_ptr(), v);
            }
        }
    }
}

/// Forward then backward substitution with the supernodes of `l` on `work`.
#[inline(always)]
fn solve_kernel<L: Lanes>(l: &MixedL, work: &mut [Row]) {
    for s in &l.supernodes {
        let (k, end) = (s.size, s.start + s.size);
        let (head, tail) = work.split_at_mut(end);
        let block = &mut head[s.start..];
        let mut column = s.values;
        for c in 0..k {
            let d = l.inv_diag[s.start + c];
            let yc = block[c].map(|v| v * d);
            block[c] = yc;
            let len = k - 1 - c;
            L::sub(&l.values[column..column + len], yc, &mut block[c + 1..]);
            column += len;
        }
        let rows = &l.rows[s.rows..s.rows + s.below];
        for (p, &r) in rows.iter().enumerate() {
            let product = L::dot(&l.values[column + p * k..column + (p + 1) * k], block);
            let target = &mut tail[r as usize - end];
            for c in 0..4 {
                target[c] -= product[c];
            }
        }
    }
    for s in l.supernodes.iter().rev() {
        let (k, end) = (s.size, s.start + s.size);
        let (head, tail) = work.split_at_mut(end);
        let block = &mut head[s.start..];
        let below = s.values + k * (k - 1) / 2;
        let rows = &l.rows[s.rows..s.rows + s.below];
        for (p, &r) in rows.iter().enumerate() {
            let row = &l.values[below + p * k..below + (p + 1) * k];
            L::sub(row, tail[r as usize - end], block);
        }
        for c in (0..k).rev() {
            // Column c of the diagonal block starts after the c columns
            // before it, of k − 1, k − 2, ... entries.
            let column = s.values + c * (2 * k - c - 1) / 2;
            let product = L::dot(&l.values[column..column + k - 1 - c], &block[c + 1..]);
            let d = l.inv_diag[s.start + c];
            let bc = &mut block[c];
            for lane in 0..4 {
                bc[lane] = (bc[lane] - product[lane]) * d;
            }
        }
    }
}

/// Runs [`solve_kernel`], compiled for AVX2 + FMA when `avx2` says the CPU
/// has them.
fn run(l: &MixedL, work: &mut [Row], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reports AVX2 and FMA.
        unsafe { solve_avx2(l, work) };
        return;
    }
    let _ = avx2;
    solve_kernel::<Portable>(l, work);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn solve_avx2(l: &MixedL, work: &mut [Row]) {
    solve_kernel::<Avx2>(l, work);
}
