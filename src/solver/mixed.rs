//! The mixed-precision global solve for large systems.
//!
//! On a large model the global step is bound by memory traffic: every
//! iteration reads the whole Cholesky factor `L` twice (forward and backward
//! substitution), and `L` is far larger than any cache (tet100k: 49 M
//! entries). [`MixedFactor`] keeps `L` in single precision in its supernodal
//! layout — dense blocks that share one list of row indices per supernode —
//! so a solve reads about 4 bytes per entry instead of the 12 of the
//! double-precision compressed columns (8-byte value, 4-byte row index), and
//! runs its inner loops as dense, vectorisable dot products and updates,
//! four rows of a supernode (or four columns of its diagonal block) per
//! pass over the work rows they share, with the single-precision entries
//! converted four at a time. So that a pass streams, each group of four
//! rows below a supernode is stored [`Interleaved`], and supernodes wider
//! than [`MAX_PANEL`] columns are cut into panels whose work rows stay in
//! the first-level cache.
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
//! monotone-objective tests check with it forced on. For a large cloth `L̃`
//! may factorise the relaxed matrix instead of `A` (`super::relax`); the
//! correction then leaves up to `ρ` of the guess's error, and the rest
//! holds as above.

use std::sync::Arc;

use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};

use super::both;
use super::system::{LowerPattern, PINNED, RowMap};
use crate::mesh::Vec3;

/// The precision of the factor the global step solves with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Mixed when `L` has at least [`MIXED_FROM_ENTRIES`] entries (it no
    /// longer fits in the first caches and the solve is bound by reading
    /// it), double below; relaxed (see [`Precision::Relaxed`]) when the
    /// relaxed matrix's `L` has at least [`RELAXED_FROM_ENTRIES`].
    #[default]
    Auto,
    /// `L` in double precision.
    Double,
    /// `L` in single precision, corrected with a double-precision residual
    /// (a factor faer leaves simplicial, which only a system without
    /// off-diagonal entries is, stays in double).
    Mixed,
    /// As [`Precision::Mixed`], with `L` factorising `A` without its bending
    /// springs when the model's certified bound allows (see
    /// `solver::relax`; otherwise `A`'s, in single precision).
    /// [`Precision::Auto`] relaxes too when that factor has at least
    /// [`RELAXED_FROM_ENTRIES`] entries.
    Relaxed,
}

/// The size of `L` (stored entries) from which [`Precision::Auto`] solves in
/// mixed precision. Measured on the 2-vCPU AMD EPYC host (2026-11-28,
/// global step per frame at 10 iterations, double against mixed): tet8
/// (13,387 entries) 0.38 against 0.45 ms and cloth30 (31,539) 0.71 against
/// 0.81 ms, but tet12 (96,456) 1.72 against 1.38 ms, cloth60 (188,052)
/// 3.55 against 3.0 ms and tet16 (358,628) 5.8 against 3.2 ms: reading half
/// the bytes pays once `L` outgrows the first caches, which the kernel's
/// residual and conversions cost below that.
pub const MIXED_FROM_ENTRIES: usize = 100_000;

/// The size of the relaxed matrix's `L` from which [`Precision::Auto`]
/// factorises it in place of `A` (see `solver::relax`): the correction
/// leaves up to `ρ` of the guess's error, which costs iterations where the
/// solve is cheap anyway.
pub const RELAXED_FROM_ENTRIES: usize = 500_000;

impl Precision {
    /// Every precision, in the order the command line lists them.
    pub const ALL: [Precision; 4] = [Self::Auto, Self::Double, Self::Mixed, Self::Relaxed];

    /// Whether a factor with `entries` stored entries is solved in mixed
    /// precision.
    pub fn is_mixed(self, entries: usize) -> bool {
        match self {
            Self::Auto => entries >= MIXED_FROM_ENTRIES,
            Self::Double => false,
            Self::Mixed | Self::Relaxed => true,
        }
    }

    /// Whether the relaxed matrix may be factorised in place of `A`.
    pub(crate) fn relaxes(self) -> bool {
        matches!(self, Self::Auto | Self::Relaxed)
    }

    /// Whether a relaxed matrix whose factor has `entries` stored entries
    /// is factorised in place of `A` (where its bound allows).
    pub(crate) fn relaxes_at(self, entries: usize) -> bool {
        match self {
            Self::Auto => entries >= RELAXED_FROM_ENTRIES,
            Self::Relaxed => true,
            Self::Double | Self::Mixed => false,
        }
    }

    /// `auto`, `double`, `mixed` or `relaxed`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Double => "double",
            Self::Mixed => "mixed",
            Self::Relaxed => "relaxed",
        }
    }

    /// In words, for reports: `L` in single or double precision, and whether
    /// bending springs are left out of it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Auto => "chosen by size",
            Self::Double => "double precision",
            Self::Mixed => "single precision, corrected in double",
            Self::Relaxed => "single precision, bending springs left out and corrected for",
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
    /// block under it: its groups of four rows [`Interleaved`], the rows
    /// left over after them by rows.
    values: usize,
}

impl Supernode {
    /// Where column `c` of the diagonal block starts in [`MixedL::values`]
    /// (its rows `c + 1..size`, after the `c` columns before it of
    /// `size − 1, size − 2, …` entries); `column(size)` is where the block
    /// below starts.
    #[inline(always)]
    fn column(&self, c: usize) -> usize {
        self.values + c * (2 * self.size - c - 1) / 2
    }

    /// Where its values end in [`MixedL::values`].
    fn end(&self) -> usize {
        self.column(self.size) + self.below * self.size
    }
}

/// The panels (first column, columns) a supernode of `size` columns is cut
/// into: at most [`MAX_PANEL`] columns each, as even as that allows; a
/// panel's rows below it are the supernode's rows after it.
fn panels(size: usize) -> impl Iterator<Item = (usize, usize)> {
    let width = size.div_ceil(size.div_ceil(MAX_PANEL).max(1)).max(1);
    (0..size)
        .step_by(width)
        .map(move |p| (p, width.min(size - p)))
}

/// `L` of `P A Pᵀ = L Lᵀ` (or of the relaxed matrix in `A`'s place) in
/// single-precision supernodes (the reciprocal diagonal in double
/// precision), and `P A Pᵀ` in double precision for the residual.
#[derive(Clone, Default)]
struct MixedL {
    /// `perm[k]`: the unknown that is row `k` of the permuted system.
    perm: Vec<u32>,
    inv_diag: Vec<f64>,
    supernodes: Vec<Supernode>,
    rows: Vec<u32>,
    values: Vec<f32>,
    /// Where the solve splits over two threads (`None`: it does not).
    split: Option<Split>,
    /// `P A Pᵀ`, both triangles by rows (columns unsorted): the residual
    /// is then a row at a time, each row's sum in registers, where the
    /// lower triangle alone scattered every product into memory.
    a_row_ptr: Vec<u32>,
    a_col_idx: Vec<u32>,
    a_values: Vec<f64>,
}

impl MixedL {
    /// Fills `P A Pᵀ` from the lower triangle of `A` (`values` on
    /// `pattern`).
    fn permute_matrix(&mut self, pattern: &LowerPattern, values: &[f64]) {
        let n = self.perm.len();
        let mut inverse = vec![0u32; n];
        for (k, &u) in self.perm.iter().enumerate() {
            inverse[u as usize] = k as u32;
        }
        // Each stored entry, and its mirror off the diagonal.
        let entries = || {
            pattern.entries().flat_map(|(r, c, slot)| {
                let (pr, pc) = (inverse[r], inverse[c]);
                let mirror = (pr != pc).then_some((pc, pr, slot));
                std::iter::once((pr, pc, slot)).chain(mirror)
            })
        };
        self.a_row_ptr.clear();
        self.a_row_ptr.resize(n + 1, 0);
        for (r, _, _) in entries() {
            self.a_row_ptr[r as usize + 1] += 1;
        }
        for r in 0..n {
            self.a_row_ptr[r + 1] += self.a_row_ptr[r];
        }
        let mut next: Vec<u32> = self.a_row_ptr[..n].to_vec();
        let len = self.a_row_ptr[n] as usize;
        self.a_col_idx.resize(len, 0);
        self.a_values.resize(len, 0.0);
        for (r, c, slot) in entries() {
            let k = next[r as usize] as usize;
            next[r as usize] += 1;
            self.a_col_idx[k] = c;
            self.a_values[k] = values[slot];
        }
    }

    /// Copies `L` (`l_values` of `symbolic`, whose layout this holds) into
    /// its single-precision supernodes and reciprocal diagonal: all of it,
    /// or the panels of the supernodes `touched` (faer's, by index).
    fn fill(
        &mut self,
        symbolic: &SymbolicSupernodalCholesky<usize>,
        l_values: &[f64],
        touched: Option<&[bool]>,
    ) {
        let l = SupernodalLltRef::new(symbolic, l_values);
        let mut panel = 0;
        for s in 0..symbolic.n_supernodes() {
            let size = symbolic.supernode_end()[s] - symbolic.supernode_begin()[s];
            if touched.is_some_and(|t| !t[s]) {
                panel += panels(size).count();
                continue;
            }
            let block = l.supernode(s).val();
            for (p, t) in panels(size) {
                let node = &self.supernodes[panel];
                panel += 1;
                // Block row `p + t + q` is the panel's row below `q`.
                let entry = |q: usize, c: usize| block[(p + t + q, p + c)] as f32;
                for c in 0..t {
                    self.inv_diag[node.start + c] = 1.0 / block[(p + c, p + c)];
                    let column = &mut self.values[node.column(c)..node.column(c + 1)];
                    for (r, v) in (c + 1..t).zip(column) {
                        *v = block[(p + r, p + c)] as f32;
                    }
                }
                // Groups of four rows interleaved, the rows left over by rows.
                let below = &mut self.values[node.column(t)..node.end()];
                let groups = node.below / 4 * 4;
                let (grouped, left) = below.split_at_mut(groups * t);
                for (g, group) in grouped.chunks_exact_mut(4 * t).enumerate() {
                    for j in 0..4 {
                        for c in 0..t {
                            group[Interleaved::index(t, j, c)] = entry(4 * g + j, c);
                        }
                    }
                }
                for (q, row) in left.chunks_exact_mut(t).enumerate() {
                    for (c, v) in row.iter_mut().enumerate() {
                        *v = entry(groups + q, c);
                    }
                }
            }
        }
    }

    /// `out[k] −= (P A Pᵀ x)[first + k]`.
    #[inline(always)]
    fn sub_product<L: Lanes>(&self, x: &[Row], out: &mut [Row], first: usize) {
        let ptr = &self.a_row_ptr[first..=first + out.len()];
        for (o, row) in out.iter_mut().zip(ptr.windows(2)) {
            let range = row[0] as usize..row[1] as usize;
            let p = L::product(&self.a_values[range.clone()], &self.a_col_idx[range], x);
            for lane in 0..4 {
                o[lane] -= p[lane];
            }
        }
    }
}

/// The widest supernode the solve works on: wider supernodes of faer's are
/// cut into panels (a chain of supernodes whose rows below include the
/// columns of the panels after them), so that a pass keeps the work rows of
/// a panel (32 bytes each) in the first-level cache while `L` streams past
/// them. Measured (AVX2, rows of 2048 columns): 2.2 G entries per second
/// per thread uncut, 4.2 in panels of 128 or 256, 3.0 in panels of 512.
pub(crate) const MAX_PANEL: usize = 256;

/// A single-precision copy of `L` and the work space to solve with it; clones
/// share `L` and have their own work space.
#[derive(Clone, Default)]
pub(crate) struct MixedFactor {
    l: Arc<MixedL>,
    /// The permuted guess.
    guess: Vec<Row>,
    /// The permuted residual, then correction.
    work: Vec<Row>,
    /// The second subtree's updates of the separator's rows, in a parallel
    /// forward substitution.
    spill: Vec<Row>,
    /// Whether the CPU runs the AVX2 + FMA kernel.
    avx2: bool,
}

impl MixedFactor {
    /// Copies the supernodal factor `l_values` of `symbolic`, with the
    /// fill-reducing permutation `perm` (`None`: identity), and the matrix
    /// the solve corrects against (lower triangle `a_values` on `pattern`:
    /// the one it factorises, or `A` when it factorises the relaxed one).
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
        out.supernodes.clear();
        out.rows.clear();
        for s in 0..symbolic.n_supernodes() {
            let node = symbolic.supernode(s);
            let (start, pattern) = (node.start(), node.pattern());
            let size = symbolic.supernode_end()[s] - start;
            for (p, t) in panels(size) {
                let below = size - p - t + pattern.len();
                out.supernodes.push(Supernode {
                    start: start + p,
                    size: t,
                    rows: out.rows.len(),
                    below,
                    // After the panel before.
                    values: out.supernodes.last().map_or(0, Supernode::end),
                });
                out.rows
                    .extend((start + p + t..start + size).map(|r| r as u32));
                out.rows.extend(pattern.iter().map(|&r| r as u32));
            }
        }
        out.values.clear();
        out.values
            .resize(out.supernodes.last().map_or(0, Supernode::end), 0.0);
        out.inv_diag.clear();
        out.inv_diag.resize(n, 0.0);
        out.fill(symbolic, l_values, None);
        out.split = Split::of(&out.supernodes, &out.rows, n);
    }

    /// Copies again, after an update of `L` in place (updown.rs), the
    /// supernodes `touched` (faer's, by index) of the factor `l_values` of
    /// the analysis it was extracted from, and the diagonal entries at the
    /// permuted rows `rows` of the residual's matrix (the lower triangle
    /// `a_values` on `pattern`).
    pub(crate) fn refresh(
        &mut self,
        (symbolic, l_values): (&SymbolicSupernodalCholesky<usize>, &[f64]),
        touched: &[bool],
        (pattern, a_values): (&LowerPattern, &[f64]),
        rows: impl Iterator<Item = usize>,
    ) {
        // A clone still solves with the old L: a copy of its own if shared.
        let out = Arc::make_mut(&mut self.l);
        out.fill(symbolic, l_values, Some(touched));
        for k in rows {
            let u = out.perm[k] as usize;
            let range = out.a_row_ptr[k] as usize..out.a_row_ptr[k + 1] as usize;
            let at = range.start
                + out.a_col_idx[range]
                    .iter()
                    .position(|&c| c as usize == k)
                    .expect("P A Pᵀ stores its diagonal");
            out.a_values[at] = a_values[pattern.slot(u, u)];
        }
    }

    /// Solves with the portable kernels from now on (to test them on a CPU
    /// with AVX2).
    #[cfg(test)]
    pub(crate) fn use_portable(&mut self) {
        self.avx2 = false;
    }

    /// The number of supernodes the solve works on and the widest of them.
    #[cfg(test)]
    pub(crate) fn supernodes(&self) -> (usize, usize) {
        let nodes = &self.l.supernodes;
        (nodes.len(), nodes.iter().map(|s| s.size).max().unwrap_or(0))
    }

    /// Whether [`MixedFactor::solve`] runs on two threads when asked to.
    pub(crate) fn splits(&self) -> bool {
        self.l.split.is_some()
    }

    /// Stored entries of `L` (explicit zeros of relaxed supernodes included).
    pub(crate) fn nnz(&self) -> usize {
        self.l.values.len() + self.l.inv_diag.len()
    }

    /// The fill-reducing permutation: `perm()[k]` is the unknown of row `k`.
    pub(crate) fn perm(&self) -> &[u32] {
        &self.l.perm
    }

    /// Solves `A x = rhs` for the vertices of the rows of `rows` (the
    /// permuted system's) as a correction of the guess their rows of `x`
    /// hold on entry (with a relaxed factor, one step towards it: see
    /// `super::relax`).
    ///
    /// With `parallel`, the substitutions run two independent groups of
    /// subtrees of the elimination tree on two threads (the result agrees
    /// with the serial one to round-off: the separator's rows receive the
    /// second group's updates as one sum), and the gathering of the rows and
    /// the scattering of the result split in two halves.
    pub(crate) fn solve(&mut self, rhs: &[Vec3], x: &mut [Vec3], rows: &RowMap, parallel: bool) {
        let guess = &*x;
        let gather = |work: &mut [Row], guesses: &mut [Row], vertices: &[u32]| {
            for ((w, g), &v) in work.iter_mut().zip(guesses).zip(vertices) {
                let (r, x) = (rhs[v as usize], guess[v as usize]);
                *w = [r.x, r.y, r.z, 0.0];
                *g = [x.x, x.y, x.z, 0.0];
            }
        };
        let half = self.work.len() / 2;
        let (w0, w1) = self.work.split_at_mut(half);
        let (g0, g1) = self.guess.split_at_mut(half);
        let (v0, v1) = rows.vertex.split_at(half);
        both(parallel, || gather(w0, g0, v0), || gather(w1, g1, v1));
        // The residual, row by row (the halves change nothing but the
        // thread).
        let (l, avx2, guess) = (&*self.l, self.avx2, &self.guess[..]);
        let (a, b) = self.work.split_at_mut(half);
        both(
            parallel,
            || sub_product(avx2, l, guess, a, 0),
            || sub_product(avx2, l, guess, b, half),
        );
        match self.l.split {
            Some(split) if parallel => self.substitute_split(split),
            _ => {
                let (l, n) = (&*self.l, self.work.len());
                let nodes = &l.supernodes;
                substitute::<Forward>(self.avx2, l, nodes, (&mut self.work, 0), (&mut [], n));
                substitute::<Backward>(self.avx2, l, nodes, (&mut self.work, 0), (&[], n));
            }
        }
        // The guess plus the correction, by vertex (pinned ones kept).
        let (work, guess) = (&self.work, &self.guess);
        let scatter = |x: &mut [Vec3], rows: &[u32]| {
            for (x, &r) in x.iter_mut().zip(rows) {
                if r != PINNED {
                    let (w, g) = (work[r as usize], guess[r as usize]);
                    *x = Vec3::new(g[0] + w[0], g[1] + w[1], g[2] + w[2]);
                }
            }
        };
        let middle = x.len() / 2;
        let (x0, x1) = x.split_at_mut(middle);
        let (r0, r1) = rows.row.split_at(middle);
        both(parallel, || scatter(x0, r0), || scatter(x1, r1));
    }

    /// Forward and backward substitution on `work`, the two groups of
    /// `split` on two threads and the separator above them on one.
    fn substitute_split(&mut self, split: Split) {
        let (l, avx2, n) = (&*self.l, self.avx2, self.work.len());
        let (first, rest) = l.supernodes.split_at(split.second);
        let (second, top_nodes) = rest.split_at(split.top - split.second);
        let (lower, top) = self.work.split_at_mut(split.top_col);
        let (a, b) = lower.split_at_mut(split.second_col);
        let spill = &mut self.spill;
        spill.clear();
        spill.resize(top.len(), [0.0; 4]);
        let at = (split.second_col, split.top_col);
        rayon::join(
            || substitute::<Forward>(avx2, l, first, (a, 0), (top, at.1)),
            || substitute::<Forward>(avx2, l, second, (b, at.0), (spill, at.1)),
        );
        for (t, s) in top.iter_mut().zip(spill.iter()) {
            for c in 0..4 {
                t[c] += s[c];
            }
        }
        substitute::<Forward>(avx2, l, top_nodes, (top, at.1), (&mut [], n));
        substitute::<Backward>(avx2, l, top_nodes, (top, at.1), (&[], n));
        let top = &*top;
        rayon::join(
            || substitute::<Backward>(avx2, l, first, (a, 0), (top, at.1)),
            || substitute::<Backward>(avx2, l, second, (b, at.0), (top, at.1)),
        );
    }
}

/// Where the substitutions split: supernodes `..second` and `second..top`
/// are two groups neither of which updates the other's rows (each
/// supernode's ancestors lie in its own group or in the top), and `top..`
/// is the separator chain above them, which both groups update.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Split {
    second: usize,
    top: usize,
    /// The first columns of the second group and of the top.
    second_col: usize,
    top_col: usize,
}

/// The smaller group must hold this share of the work for a split to pay.
const MIN_SPLIT_SHARE: f64 = 0.25;

impl Split {
    /// Finds the separator chain at the top of the supernodal elimination
    /// tree of the `n` columns (from the root down while a node has one
    /// child; it must be the last supernodes, as nested dissection orders
    /// them) and, below it, the column that divides the rest into two
    /// groups no supernode of the first updates the second from, as near to
    /// equal work as such a column allows. `None` when there is no such
    /// chain or no split gives the smaller group [`MIN_SPLIT_SHARE`] of the
    /// work.
    fn of(supernodes: &[Supernode], rows: &[u32], n: usize) -> Option<Self> {
        let count = supernodes.len();
        let mut node_of = vec![0u32; n];
        for (i, s) in supernodes.iter().enumerate() {
            node_of[s.start..s.start + s.size].fill(i as u32);
        }
        let below = |s: &Supernode| &rows[s.rows..s.rows + s.below];
        let mut children = vec![0usize; count];
        let mut only_child = vec![usize::MAX; count];
        let mut roots = Vec::new();
        for (i, s) in supernodes.iter().enumerate() {
            match below(s).iter().min() {
                Some(&r) => {
                    let p = node_of[r as usize] as usize;
                    // faer orders supernodes children first; anything else
                    // is not split.
                    if p <= i {
                        return None;
                    }
                    children[p] += 1;
                    only_child[p] = i;
                }
                None => roots.push(i),
            }
        }
        // The chain from the root down: in a children-first order it is the
        // last supernodes (checked all the same, as the split relies on it).
        let mut top = count;
        if let [root] = roots[..] {
            let mut node = root;
            loop {
                if node + 1 != top {
                    return None;
                }
                top = node;
                if children[node] != 1 {
                    break;
                }
                node = only_child[node];
            }
        }
        let top_col = supernodes.get(top).map_or(n, |s| s.start);
        let work = |s: &Supernode| (s.size * (s.size + 1) / 2 + s.below * s.size) as f64;
        let total: f64 = supernodes[..top].iter().map(work).sum();
        // Scanning the supernodes below the chain in order: a split before
        // node j is valid when no earlier node updates a row from j's
        // first column up to the chain.
        let (mut reach, mut prefix) = (0usize, 0.0f64);
        let (mut best, mut best_share) = (0, 0.0);
        for (j, s) in supernodes[..top].iter().enumerate() {
            if j > 0 && reach < s.start {
                let share = prefix.min(total - prefix) / total;
                if share > best_share {
                    (best, best_share) = (j, share);
                }
            }
            prefix += work(s);
            let within = below(s)
                .iter()
                .map(|&r| r as usize)
                .filter(|&r| r < top_col);
            reach = reach.max(within.max().unwrap_or(0));
        }
        (best_share >= MIN_SPLIT_SHARE).then(|| Self {
            second: best,
            top,
            second_col: supernodes[best].start,
            top_col,
        })
    }
}

/// A row of the work vector: x, y, z and a pad lane, so a row is one 256-bit
/// access and one cache line holds two rows.
type Row = [f64; 4];

/// Four rows of `L` of one length, as [`Lanes::dot4`] and [`Lanes::sub4`]
/// read them.
trait Quad: Copy {
    /// The length of each row.
    fn len(self) -> usize;
    /// Entries `i..i + 4` of row `j`, contiguous (`i` a multiple of 4 and
    /// `i + 4 ≤ len`).
    ///
    /// # Safety
    /// The caller keeps `j < 4` and `i` as above.
    unsafe fn four(self, j: usize, i: usize) -> *const f32;
    /// Entry `i` of row `j`.
    fn at(self, j: usize, i: usize) -> f32;
}

/// Four separate slices of one length (the columns of a diagonal block).
#[derive(Clone, Copy)]
struct Rows<'a>([&'a [f32]; 4]);

impl<'a> Rows<'a> {
    fn new(rows: [&'a [f32]; 4]) -> Self {
        let k = rows[0].len();
        assert!(rows.iter().all(|r| r.len() == k), "rows of one length");
        Self(rows)
    }
}

impl Quad for Rows<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.0[0].len()
    }

    #[inline(always)]
    unsafe fn four(self, j: usize, i: usize) -> *const f32 {
        // SAFETY: the caller keeps `j < 4` and `i + 4` within the row.
        unsafe { self.0.get_unchecked(j).as_ptr().add(i) }
    }

    #[inline(always)]
    fn at(self, j: usize, i: usize) -> f32 {
        self.0[j][i]
    }
}

/// Four rows of length `k` interleaved four entries at a time, as the block
/// below a supernode's diagonal stores each group of four rows: entries
/// `i..i + 4` (`i` a multiple of 4 below `k₄ = ⌊k/4⌋·4`) of rows 0, 1, 2, 3,
/// then the next four of each, and after them the last `k − k₄` entries of
/// row 0, of row 1, … A pass then reads the group as one stream, where four
/// rows one after another were four short streams that the hardware
/// prefetcher followed too late (measured alone, groups of 256 entries per
/// row: 1.8 → 4 G entries per second per thread).
#[derive(Clone, Copy)]
struct Interleaved<'a> {
    values: &'a [f32],
    k: usize,
}

impl<'a> Interleaved<'a> {
    /// The group stored in `values` (`4k` entries).
    fn new(values: &'a [f32]) -> Self {
        assert!(values.len().is_multiple_of(4), "four rows of one length");
        Self {
            values,
            k: values.len() / 4,
        }
    }

    /// Where entry `i` of row `j` is stored in a group of rows of length `k`.
    #[inline(always)]
    fn index(k: usize, j: usize, i: usize) -> usize {
        let quads = k / 4 * 4;
        if i < quads {
            4 * (i - i % 4) + 4 * j + i % 4
        } else {
            4 * quads + j * (k - quads) + i - quads
        }
    }
}

impl Quad for Interleaved<'_> {
    #[inline(always)]
    fn len(self) -> usize {
        self.k
    }

    #[inline(always)]
    unsafe fn four(self, j: usize, i: usize) -> *const f32 {
        // SAFETY: `4i + 4j + 4 ≤ 4k₄ ≤ values.len()` for the caller's `i`
        // and `j`.
        unsafe { self.values.as_ptr().add(4 * i + 4 * j) }
    }

    #[inline(always)]
    fn at(self, j: usize, i: usize) -> f32 {
        self.values[Self::index(self.k, j, i)]
    }
}

/// The two inner loops of the solve, portable or with AVX2 + FMA.
trait Lanes {
    /// `Σ rowᵢ · work[i]` in double precision.
    fn dot(row: &[f32], work: &[Row]) -> Row;
    /// `work[i] −= rowᵢ · s`.
    fn sub(row: &[f32], s: Row, work: &mut [Row]);
    /// [`Lanes::dot`] of each of four rows (as long as `work`) with `work`,
    /// each work row loaded once for the four.
    fn dot4<Q: Quad>(rows: Q, work: &[Row]) -> [Row; 4];
    /// [`Lanes::sub`] of four rows (as long as `work`) with `s[j]` for row
    /// `j`, in order, each work row loaded and stored once.
    fn sub4<Q: Quad>(rows: Q, s: [Row; 4], work: &mut [Row]);
    /// `Σ valuesᵢ · x[colsᵢ]`.
    fn product(values: &[f64], cols: &[u32], x: &[Row]) -> Row;
    /// [`Lanes::dot4`] with the work rows by coordinate ([`by_coordinate`]).
    fn dot4_by_coordinate<Q: Quad>(rows: Q, xyz: &[f64]) -> [Row; 4];
    /// [`Lanes::sub4`] with the work rows by coordinate ([`by_coordinate`]).
    fn sub4_by_coordinate<Q: Quad>(rows: Q, s: [Row; 4], xyz: &mut [f64]);
}

/// Plain Rust.
struct Portable;

impl Portable {
    /// `Σ lᵢ · work[i]` over the entries `lᵢ` of a row.
    #[inline(always)]
    fn dot_of(row: impl Iterator<Item = f32>, work: &[Row]) -> Row {
        let mut acc = [0.0; 4];
        for (l, w) in row.zip(work) {
            let l = f64::from(l);
            for c in 0..4 {
                acc[c] += l * w[c];
            }
        }
        acc
    }

    /// `work[i] −= lᵢ · s` over the entries `lᵢ` of a row.
    #[inline(always)]
    fn sub_of(row: impl Iterator<Item = f32>, s: Row, work: &mut [Row]) {
        for (l, w) in row.zip(work) {
            let l = f64::from(l);
            for c in 0..4 {
                w[c] -= l * s[c];
            }
        }
    }
}

impl Lanes for Portable {
    #[inline(always)]
    fn dot(row: &[f32], work: &[Row]) -> Row {
        Self::dot_of(row.iter().copied(), work)
    }

    #[inline(always)]
    fn sub(row: &[f32], s: Row, work: &mut [Row]) {
        Self::sub_of(row.iter().copied(), s, work);
    }

    #[inline(always)]
    fn dot4<Q: Quad>(rows: Q, work: &[Row]) -> [Row; 4] {
        let k = rows.len();
        std::array::from_fn(|j| Self::dot_of((0..k).map(|i| rows.at(j, i)), &work[..k]))
    }

    #[inline(always)]
    fn sub4<Q: Quad>(rows: Q, s: [Row; 4], work: &mut [Row]) {
        let k = rows.len();
        for (j, s) in s.into_iter().enumerate() {
            Self::sub_of((0..k).map(|i| rows.at(j, i)), s, &mut work[..k]);
        }
    }

    #[inline(always)]
    fn product(values: &[f64], cols: &[u32], x: &[Row]) -> Row {
        let mut acc = [0.0; 4];
        for (&v, &c) in values.iter().zip(cols) {
            let x = x[c as usize];
            for lane in 0..4 {
                acc[lane] += v * x[lane];
            }
        }
        acc
    }

    #[inline(always)]
    fn dot4_by_coordinate<Q: Quad>(rows: Q, xyz: &[f64]) -> [Row; 4] {
        let k = rows.len();
        std::array::from_fn(|j| {
            let mut acc = [0.0; 4];
            for i in 0..k {
                let l = f64::from(rows.at(j, i));
                for c in 0..3 {
                    acc[c] += l * xyz[c * k + i];
                }
            }
            acc
        })
    }

    #[inline(always)]
    fn sub4_by_coordinate<Q: Quad>(rows: Q, s: [Row; 4], xyz: &mut [f64]) {
        let k = rows.len();
        for (j, s) in s.into_iter().enumerate() {
            for i in 0..k {
                let l = f64::from(rows.at(j, i));
                for c in 0..3 {
                    xyz[c * k + i] -= l * s[c];
                }
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
        // SAFETY: only inlined into `substitute_avx2`, which runs when the CPU has
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

    #[inline(always)]
    fn dot4<Q: Quad>(rows: Q, work: &[Row]) -> [Row; 4] {
        use std::arch::x86_64::*;
        let k = rows.len();
        let work = &work[..k];
        let mut out = [[0.0; 4]; 4];
        // SAFETY: as in `dot`; every index below is under `k`, the length of
        // `work` and of each of the four rows.
        unsafe {
            let mut even = [_mm256_setzero_pd(); 4];
            let mut odd = [_mm256_setzero_pd(); 4];
            let w = |i: usize| _mm256_loadu_pd(work.get_unchecked(i).as_ptr());
            // Four entries of each row converted at once, then broadcast
            // lane by lane; the sums in the order of `dot`.
            let quads = k / 4 * 4;
            for i in (0..quads).step_by(4) {
                let (w0, w1, w2, w3) = (w(i), w(i + 1), w(i + 2), w(i + 3));
                for j in 0..4 {
                    let l = _mm256_cvtps_pd(_mm_loadu_ps(rows.four(j, i)));
                    even[j] = _mm256_fmadd_pd(_mm256_permute4x64_pd::<0x00>(l), w0, even[j]);
                    odd[j] = _mm256_fmadd_pd(_mm256_permute4x64_pd::<0x55>(l), w1, odd[j]);
                    even[j] = _mm256_fmadd_pd(_mm256_permute4x64_pd::<0xAA>(l), w2, even[j]);
                    odd[j] = _mm256_fmadd_pd(_mm256_permute4x64_pd::<0xFF>(l), w3, odd[j]);
                }
            }
            // The last entries: even indices to `even`, odd to `odd`.
            for i in quads..k {
                let wi = w(i);
                let sums = if i % 2 == 0 { &mut even } else { &mut odd };
                for (j, sum) in sums.iter_mut().enumerate() {
                    let l = _mm256_set1_pd(f64::from(rows.at(j, i)));
                    *sum = _mm256_fmadd_pd(l, wi, *sum);
                }
            }
            for j in 0..4 {
                _mm256_storeu_pd(out[j].as_mut_ptr(), _mm256_add_pd(even[j], odd[j]));
            }
        }
        out
    }

    #[inline(always)]
    fn sub4<Q: Quad>(rows: Q, s: [Row; 4], work: &mut [Row]) {
        use std::arch::x86_64::*;
        let k = rows.len();
        let work = &mut work[..k];
        // SAFETY: as in `dot4`.
        unsafe {
            let s = s.map(|s| _mm256_loadu_pd(s.as_ptr()));
            let quads = k / 4 * 4;
            for i in (0..quads).step_by(4) {
                // Entry i + t of row j is lane t of l[j].
                let l: [__m256d; 4] =
                    std::array::from_fn(|j| _mm256_cvtps_pd(_mm_loadu_ps(rows.four(j, i))));
                let lane = |t: usize, l: __m256d| match t {
                    0 => _mm256_permute4x64_pd::<0x00>(l),
                    1 => _mm256_permute4x64_pd::<0x55>(l),
                    2 => _mm256_permute4x64_pd::<0xAA>(l),
                    _ => _mm256_permute4x64_pd::<0xFF>(l),
                };
                for t in 0..4 {
                    let w = work.get_unchecked_mut(i + t).as_mut_ptr();
                    let mut v = _mm256_loadu_pd(w);
                    for j in 0..4 {
                        v = _mm256_fnmadd_pd(lane(t, l[j]), s[j], v);
                    }
                    _mm256_storeu_pd(w, v);
                }
            }
            for i in quads..k {
                let w = work.get_unchecked_mut(i).as_mut_ptr();
                let mut v = _mm256_loadu_pd(w);
                for (j, s) in s.iter().enumerate() {
                    let l = _mm256_set1_pd(f64::from(rows.at(j, i)));
                    v = _mm256_fnmadd_pd(l, *s, v);
                }
                _mm256_storeu_pd(w, v);
            }
        }
    }

    #[inline(always)]
    fn product(values: &[f64], cols: &[u32], x: &[Row]) -> Row {
        use std::arch::x86_64::*;
        let mut out = [0.0; 4];
        // SAFETY: only inlined into `sub_product_avx2`, which runs when the
        // CPU has AVX2 and FMA; every load reads one whole `Row` of 4 f64.
        unsafe {
            let mut acc = _mm256_setzero_pd();
            for (&v, &c) in values.iter().zip(cols) {
                let x = _mm256_loadu_pd(x[c as usize].as_ptr());
                acc = _mm256_fmadd_pd(_mm256_set1_pd(v), x, acc);
            }
            _mm256_storeu_pd(out.as_mut_ptr(), acc);
        }
        out
    }

    #[inline(always)]
    fn dot4_by_coordinate<Q: Quad>(rows: Q, xyz: &[f64]) -> [Row; 4] {
        use std::arch::x86_64::*;
        let k = rows.len();
        let xyz = &xyz[..3 * k];
        let mut out = [[0.0; 4]; 4];
        // SAFETY: as in `dot4`; every index below is under `k` within each
        // coordinate's `k` values.
        unsafe {
            let mut acc = [[_mm256_setzero_pd(); 3]; 4];
            let at = |c: usize, i: usize| _mm256_loadu_pd(xyz.as_ptr().add(c * k + i));
            let quads = k / 4 * 4;
            // Four entries of a row meet four values of each coordinate:
            // no broadcast per entry.
            for i in (0..quads).step_by(4) {
                let b = [at(0, i), at(1, i), at(2, i)];
                for (j, acc) in acc.iter_mut().enumerate() {
                    let l = _mm256_cvtps_pd(_mm_loadu_ps(rows.four(j, i)));
                    for (sum, b) in acc.iter_mut().zip(b) {
                        *sum = _mm256_fmadd_pd(l, b, *sum);
                    }
                }
            }
            for (out, acc) in out.iter_mut().zip(&acc) {
                for (out, &sum) in out.iter_mut().zip(acc) {
                    let mut lanes = [0.0; 4];
                    _mm256_storeu_pd(lanes.as_mut_ptr(), sum);
                    *out = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
                }
            }
            for i in quads..k {
                for (j, out) in out.iter_mut().enumerate() {
                    let l = f64::from(rows.at(j, i));
                    for (c, out) in out.iter_mut().take(3).enumerate() {
                        *out += l * *xyz.get_unchecked(c * k + i);
                    }
                }
            }
        }
        out
    }

    #[inline(always)]
    fn sub4_by_coordinate<Q: Quad>(rows: Q, s: [Row; 4], xyz: &mut [f64]) {
        use std::arch::x86_64::*;
        let k = rows.len();
        let xyz = &mut xyz[..3 * k];
        // SAFETY: as in `dot4_by_coordinate`.
        unsafe {
            let quads = k / 4 * 4;
            for i in (0..quads).step_by(4) {
                let l: [__m256d; 4] =
                    std::array::from_fn(|j| _mm256_cvtps_pd(_mm_loadu_ps(rows.four(j, i))));
                for c in 0..3 {
                    let p = xyz.as_mut_ptr().add(c * k + i);
                    let mut v = _mm256_loadu_pd(p);
                    for (&l, s) in l.iter().zip(&s) {
                        v = _mm256_fnmadd_pd(l, _mm256_set1_pd(s[c]), v);
                    }
                    _mm256_storeu_pd(p, v);
                }
            }
            for i in quads..k {
                for c in 0..3 {
                    let v = xyz.get_unchecked_mut(c * k + i);
                    for (j, s) in s.iter().enumerate() {
                        *v -= f64::from(rows.at(j, i)) * s[c];
                    }
                }
            }
        }
    }
}

/// The fewest rows below a supernode (in groups of four) from which its
/// passes over them take the work rows by coordinate.
const BY_COORDINATE_FROM: usize = 8;

/// Whether the passes over the rows below a supernode of `k` columns, of
/// which `grouped` come in groups of four, take its work rows by
/// coordinate ([`by_coordinate`]): enough of them to pay for the copies.
#[inline(always)]
fn by_coordinates(k: usize, grouped: usize) -> bool {
    grouped >= BY_COORDINATE_FROM && k >= 4
}

/// Copies the work rows `block` by coordinate into `xyz`: its x values,
/// then its y, then its z (the passes over the rows below a supernode then
/// meet four entries of `L` with four values of a coordinate, where by rows
/// each entry was broadcast to a whole row; on the 2-vCPU Intel Xeon host
/// the four-row passes over a factor much larger than the caches ran 1.4
/// against 2.2 cycles an entry forward, 1.5 against 1.9 backward).
#[inline(always)]
fn by_coordinate(block: &[Row], xyz: &mut [f64]) {
    let k = block.len();
    for (i, row) in block.iter().enumerate() {
        for c in 0..3 {
            xyz[c * k + i] = row[c];
        }
    }
}

/// The work rows `block` back from `xyz` ([`by_coordinate`]).
#[inline(always)]
fn by_row(xyz: &[f64], block: &mut [Row]) {
    let k = block.len();
    for (i, row) in block.iter_mut().enumerate() {
        for c in 0..3 {
            row[c] = xyz[c * k + i];
        }
    }
}

/// Forward substitution with `nodes` (consecutive supernodes of `l`) on
/// `own`, the work rows of their columns (from row `own_start`); updates of
/// rows past them go to `top`, the rows from `top_start`.
#[inline(always)]
fn forward<L: Lanes>(
    l: &MixedL,
    nodes: &[Supernode],
    own: &mut [Row],
    own_start: usize,
    top: &mut [Row],
    top_start: usize,
) {
    let own_end = own_start + own.len();
    let mut xyz = [0.0; 3 * MAX_PANEL];
    for s in nodes {
        let (k, end) = (s.size, s.start + s.size);
        let (head, tail) = own.split_at_mut(end - own_start);
        let block = &mut head[s.start - own_start..];
        let column = |c: usize| &l.values[s.column(c)..s.column(c + 1)];
        // Four columns at a time: solved among themselves, then their
        // updates of the rows below them in one pass (in column order, as
        // one column at a time would).
        let quads = k / 4 * 4;
        for c0 in (0..quads).step_by(4) {
            let mut y = [[0.0; 4]; 4];
            for (t, y) in y.iter_mut().enumerate() {
                let c = c0 + t;
                let d = l.inv_diag[s.start + c];
                *y = block[c].map(|v| v * d);
                block[c] = *y;
                L::sub(&column(c)[..3 - t], *y, &mut block[c + 1..c0 + 4]);
            }
            let rows = Rows::new(std::array::from_fn(|t| &column(c0 + t)[3 - t..]));
            L::sub4(rows, y, &mut block[c0 + 4..]);
        }
        for c in quads..k {
            let d = l.inv_diag[s.start + c];
            let yc = block[c].map(|v| v * d);
            block[c] = yc;
            L::sub(column(c), yc, &mut block[c + 1..]);
        }
        let below = s.column(k);
        let rows = &l.rows[s.rows..s.rows + s.below];
        let mut update = |r: u32, product: Row| {
            let r = r as usize;
            let target = if r < own_end {
                &mut tail[r - end]
            } else {
                &mut top[r - top_start]
            };
            for c in 0..4 {
                target[c] -= product[c];
            }
        };
        // Four rows at a time: four independent sums per load of `block`.
        // A single column (29,760 of tet100k's 35,000 supernodes) is stored the
        // same either way, and its rows one at a time skip the grouping.
        let done = if k > 1 { rows.len() / 4 * 4 } else { 0 };
        let coordinates = by_coordinates(k, done);
        if coordinates {
            by_coordinate(block, &mut xyz[..3 * k]);
        }
        for (q, four) in rows[..done].chunks_exact(4).enumerate() {
            let at = below + 4 * q * k;
            let group = Interleaved::new(&l.values[at..at + 4 * k]);
            let products = if coordinates {
                L::dot4_by_coordinate(group, &xyz[..3 * k])
            } else {
                L::dot4(group, block)
            };
            for (&r, product) in four.iter().zip(products) {
                update(r, product);
            }
        }
        for (p, &r) in rows.iter().enumerate().skip(done) {
            update(
                r,
                L::dot(&l.values[below + p * k..below + (p + 1) * k], block),
            );
        }
    }
}

/// Backward substitution with `nodes` on `own` (as in [`forward`]), reading
/// the solved rows past them from `top`.
#[inline(always)]
fn backward<L: Lanes>(
    l: &MixedL,
    nodes: &[Supernode],
    own: &mut [Row],
    own_start: usize,
    top: &[Row],
    top_start: usize,
) {
    let own_end = own_start + own.len();
    let mut xyz = [0.0; 3 * MAX_PANEL];
    for s in nodes.iter().rev() {
        let (k, end) = (s.size, s.start + s.size);
        let (head, tail) = own.split_at_mut(end - own_start);
        let block = &mut head[s.start - own_start..];
        let below = s.column(k);
        let rows = &l.rows[s.rows..s.rows + s.below];
        let solved = |r: u32| {
            let r = r as usize;
            if r < own_end {
                tail[r - end]
            } else {
                top[r - top_start]
            }
        };
        // Four rows at a time: one load and store of `block` for four.
        let fours = rows.chunks_exact(4);
        let done = rows.len() - fours.remainder().len();
        let coordinates = by_coordinates(k, done);
        if coordinates {
            by_coordinate(block, &mut xyz[..3 * k]);
        }
        for (q, four) in fours.enumerate() {
            let at = below + 4 * q * k;
            let rows = Interleaved::new(&l.values[at..at + 4 * k]);
            let s = std::array::from_fn(|j| solved(four[j]));
            if coordinates {
                L::sub4_by_coordinate(rows, s, &mut xyz[..3 * k]);
            } else {
                L::sub4(rows, s, block);
            }
        }
        if coordinates {
            by_row(&xyz[..3 * k], block);
        }
        for (p, &r) in rows.iter().enumerate().skip(done) {
            L::sub(
                &l.values[below + p * k..below + (p + 1) * k],
                solved(r),
                block,
            );
        }
        let column = |c: usize| &l.values[s.column(c)..s.column(c + 1)];
        let solve = |row: &mut Row, c: usize, product: Row| {
            let d = l.inv_diag[s.start + c];
            for lane in 0..4 {
                row[lane] = (row[lane] - product[lane]) * d;
            }
        };
        let quads = k / 4 * 4;
        for c in (quads..k).rev() {
            let product = L::dot(column(c), &block[c + 1..]);
            solve(&mut block[c], c, product);
        }
        // Four columns at a time: their sums over the solved rows below
        // them in one pass, then the four among themselves.
        for c0 in (0..quads).step_by(4).rev() {
            let (quad, solved) = block[c0..].split_at_mut(4);
            let rows = Rows::new(std::array::from_fn(|t| &column(c0 + t)[3 - t..]));
            let below = L::dot4(rows, solved);
            for t in (0..4).rev() {
                let (head, tail) = quad.split_at_mut(t + 1);
                let within = L::dot(&column(c0 + t)[..3 - t], tail);
                let product = std::array::from_fn(|lane| below[t][lane] + within[lane]);
                solve(&mut head[t], c0 + t, product);
            }
        }
    }
}

/// A substitution over consecutive supernodes, on the work rows of their
/// columns and the rows past them (`top`), which it writes ([`Forward`]) or
/// only reads ([`Backward`]).
trait Pass {
    /// The rows past the supernodes' columns.
    type Top<'a>;
    /// Runs the pass with the inner loops of `L`.
    fn run<L: Lanes>(
        l: &MixedL,
        nodes: &[Supernode],
        own: (&mut [Row], usize),
        top: (Self::Top<'_>, usize),
    );
}

/// [`forward`] substitution.
struct Forward;

impl Pass for Forward {
    type Top<'a> = &'a mut [Row];
    #[inline(always)]
    fn run<L: Lanes>(
        l: &MixedL,
        nodes: &[Supernode],
        (own, own_start): (&mut [Row], usize),
        (top, top_start): (&mut [Row], usize),
    ) {
        forward::<L>(l, nodes, own, own_start, top, top_start);
    }
}

/// [`backward`] substitution.
struct Backward;

impl Pass for Backward {
    type Top<'a> = &'a [Row];
    #[inline(always)]
    fn run<L: Lanes>(
        l: &MixedL,
        nodes: &[Supernode],
        (own, own_start): (&mut [Row], usize),
        (top, top_start): (&[Row], usize),
    ) {
        backward::<L>(l, nodes, own, own_start, top, top_start);
    }
}

/// `out[k] −= (P A Pᵀ x)[first + k]`, compiled for AVX2 + FMA when `avx2`
/// says the CPU has them.
fn sub_product(avx2: bool, l: &MixedL, x: &[Row], out: &mut [Row], first: usize) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reports AVX2 and FMA.
        unsafe { sub_product_avx2(l, x, out, first) };
        return;
    }
    let _ = avx2;
    l.sub_product::<Portable>(x, out, first);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sub_product_avx2(l: &MixedL, x: &[Row], out: &mut [Row], first: usize) {
    l.sub_product::<Avx2>(x, out, first);
}

/// Runs pass `P` with `nodes` on `own` (its rows, from the given row) and
/// `top`, compiled for AVX2 + FMA when `avx2` says the CPU has them.
fn substitute<P: Pass>(
    avx2: bool,
    l: &MixedL,
    nodes: &[Supernode],
    own: (&mut [Row], usize),
    top: (P::Top<'_>, usize),
) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reports AVX2 and FMA.
        unsafe { substitute_avx2::<P>(l, nodes, own, top) };
        return;
    }
    let _ = avx2;
    P::run::<Portable>(l, nodes, own, top);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn substitute_avx2<P: Pass>(
    l: &MixedL,
    nodes: &[Supernode],
    own: (&mut [Row], usize),
    top: (P::Top<'_>, usize),
) {
    P::run::<Avx2>(l, nodes, own, top);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The residual's product, portable and with AVX2 and in two parts as
    /// the parallel solve splits it, is `P A Pᵀ x` for `A` given by its
    /// lower triangle.
    #[test]
    fn the_residual_product_is_the_permuted_matrix_times_x() {
        let n = 7;
        let pattern = LowerPattern::new(n, vec![(3, 0), (5, 1), (6, 2), (4, 3), (6, 5), (2, 1)]);
        let values: Vec<f64> = (0..pattern.nnz()).map(|k| 1.0 + k as f64 * 0.37).collect();
        let mut l = MixedL {
            perm: vec![4, 0, 6, 2, 5, 1, 3],
            ..MixedL::default()
        };
        l.permute_matrix(&pattern, &values);
        let x: Vec<Row> = (0..n)
            .map(|k| [k as f64, 1.0 - k as f64, 0.5 * k as f64, 0.0])
            .collect();
        let mut inverse = vec![0; n];
        for (k, &u) in l.perm.iter().enumerate() {
            inverse[u as usize] = k;
        }
        let mut expected = vec![[0.0; 4]; n];
        for (r, c, slot) in pattern.entries() {
            let (pr, pc) = (inverse[r], inverse[c]);
            for lane in 0..4 {
                expected[pr][lane] -= values[slot] * x[pc][lane];
                if r != c {
                    expected[pc][lane] -= values[slot] * x[pr][lane];
                }
            }
        }
        for avx2 in [false, super::super::has_avx2_fma()] {
            let mut whole = vec![[0.0; 4]; n];
            sub_product(avx2, &l, &x, &mut whole, 0);
            let mut parts = vec![[0.0; 4]; n];
            let (a, b) = parts.split_at_mut(3);
            sub_product(avx2, &l, &x, a, 0);
            sub_product(avx2, &l, &x, b, 3);
            for out in [&whole, &parts] {
                for (o, e) in out.iter().zip(&expected) {
                    for lane in 0..4 {
                        assert!((o[lane] - e[lane]).abs() <= 1e-12 * e[lane].abs().max(1.0));
                    }
                }
            }
        }
    }

    /// Four rows of length `k` stored [`Interleaved`] and as four slices are
    /// the same rows to both kernels' `dot4` and `sub4`, bitwise (and each
    /// entry is stored once).
    #[test]
    fn interleaved_rows_are_the_rows() {
        for k in 1..=13 {
            let entry = |j: usize, i: usize| 0.25 + (3 * j + 7 * i) as f32 * 0.01;
            let mut stored = vec![f32::NAN; 4 * k];
            for j in 0..4 {
                for i in 0..k {
                    let at = Interleaved::index(k, j, i);
                    assert!(stored[at].is_nan(), "k {k}: entry {at} stored twice");
                    stored[at] = entry(j, i);
                }
            }
            let separate: Vec<Vec<f32>> = (0..4)
                .map(|j| (0..k).map(|i| entry(j, i)).collect())
                .collect();
            let rows = Rows::new(std::array::from_fn(|j| &separate[j][..]));
            let interleaved = Interleaved::new(&stored);
            let work: Vec<Row> = (0..k)
                .map(|i| [i as f64, 1.0 - i as f64, 0.3 * i as f64, 0.0])
                .collect();
            let s = std::array::from_fn(|j| [1.0 + j as f64, -2.0, 0.5 * j as f64, 0.0]);
            let expected: [Row; 4] = std::array::from_fn(|j| {
                let mut acc = [0.0; 4];
                for (i, w) in work.iter().enumerate() {
                    for c in 0..4 {
                        acc[c] += f64::from(entry(j, i)) * w[c];
                    }
                }
                acc
            });
            let near = |a: &[Row], b: &[Row]| {
                a.iter()
                    .flatten()
                    .zip(b.iter().flatten())
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs().max(1.0))
            };
            let portable = same_rows::<Portable>(rows, interleaved, &work, s);
            assert!(near(&portable.0, &expected), "k {k}");
            #[cfg(target_arch = "x86_64")]
            if super::super::has_avx2_fma() {
                let avx2 = same_rows::<Avx2>(rows, interleaved, &work, s);
                assert!(near(&avx2.0, &expected), "k {k}");
                assert!(near(&avx2.1, &portable.1), "k {k}");
            }
        }
    }

    /// The passes with the work rows by coordinate give what those by rows
    /// give, with either kernel, for every length of row (whole quads and
    /// the entries after them).
    #[test]
    fn by_coordinate_kernels_are_the_by_row_ones() {
        for k in 1..=37 {
            let values: Vec<f32> = (0..4 * k).map(|e| 0.3 - (e % 11) as f32 * 0.07).collect();
            let rows = Interleaved::new(&values);
            let work: Vec<Row> = (0..k)
                .map(|i| [i as f64, 1.0 - i as f64, 0.3 * i as f64, 0.0])
                .collect();
            let s = std::array::from_fn(|j| [1.0 + j as f64, -2.0, 0.5 * j as f64, 0.0]);
            let near = |a: &[Row], b: &[Row]| {
                a.iter()
                    .flatten()
                    .zip(b.iter().flatten())
                    .all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs().max(1.0))
            };
            let check = |(dot, sub): ([Row; 4], Vec<Row>),
                         (by_rows, sub_rows): ([Row; 4], Vec<Row>)| {
                assert!(near(&dot, &by_rows), "k {k}: {dot:?} against {by_rows:?}");
                assert!(near(&sub, &sub_rows), "k {k}");
            };
            check(
                coordinates::<Portable>(rows, &work, s),
                by_rows::<Portable>(rows, &work, s),
            );
            #[cfg(target_arch = "x86_64")]
            if super::super::has_avx2_fma() {
                check(
                    coordinates::<Avx2>(rows, &work, s),
                    by_rows::<Portable>(rows, &work, s),
                );
            }
        }
    }

    /// `dot4` and `sub4` of `L` on `rows` with `work` and `s`, by rows.
    fn by_rows<L: Lanes>(rows: Interleaved<'_>, work: &[Row], s: [Row; 4]) -> ([Row; 4], Vec<Row>) {
        let mut sub = work.to_vec();
        L::sub4(rows, s, &mut sub);
        (L::dot4(rows, work), sub)
    }

    /// [`by_rows`] by coordinate.
    fn coordinates<L: Lanes>(
        rows: Interleaved<'_>,
        work: &[Row],
        s: [Row; 4],
    ) -> ([Row; 4], Vec<Row>) {
        let mut xyz = vec![f64::NAN; 3 * work.len()];
        by_coordinate(work, &mut xyz);
        let dot = L::dot4_by_coordinate(rows, &xyz);
        L::sub4_by_coordinate(rows, s, &mut xyz);
        let mut sub = vec![[0.0; 4]; work.len()];
        by_row(&xyz, &mut sub);
        (dot, sub)
    }

    /// `dot4` and `sub4` of `L` on the same four rows as [`Rows`] and as
    /// [`Interleaved`], which must agree bitwise: the products and the
    /// updated work rows.
    fn same_rows<L: Lanes>(
        rows: Rows<'_>,
        interleaved: Interleaved<'_>,
        work: &[Row],
        s: [Row; 4],
    ) -> ([Row; 4], Vec<Row>) {
        let dot = L::dot4(rows, work);
        assert_eq!(dot, L::dot4(interleaved, work), "k {}", rows.len());
        let (mut a, mut b) = (work.to_vec(), work.to_vec());
        L::sub4(rows, s, &mut a);
        L::sub4(interleaved, s, &mut b);
        assert_eq!(a, b, "k {}", rows.len());
        (dot, a)
    }

    /// Single-column supernodes with the given rows below the diagonal:
    /// `Split::of` of them.
    fn split_of(below: &[&[u32]]) -> Option<Split> {
        let mut rows = Vec::new();
        let supernodes: Vec<Supernode> = below
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = Supernode {
                    start: i,
                    size: 1,
                    rows: rows.len(),
                    below: r.len(),
                    values: 0,
                };
                rows.extend_from_slice(r);
                s
            })
            .collect();
        Split::of(&supernodes, &rows, below.len())
    }

    #[test]
    fn splits_below_a_separator_and_nowhere_else() {
        // Two chains 0 → 1 and 2 → 3 below separator 4.
        let halves = Split {
            second: 2,
            top: 4,
            second_col: 2,
            top_col: 4,
        };
        assert_eq!(split_of(&[&[1, 4], &[4], &[3, 4], &[4], &[]]), Some(halves));
        // Column 0 also updates column 3: the halves are not independent.
        assert_eq!(split_of(&[&[1, 3, 4], &[4], &[3, 4], &[4], &[]]), None);
        // Two separate bodies (a forest): no separator above them.
        assert_eq!(split_of(&[&[1], &[], &[3], &[]]), Some(halves));
        // A chain (a path graph's factor) and nothing at all.
        assert_eq!(split_of(&[&[1], &[2], &[3], &[]]), None);
        assert_eq!(split_of(&[]), None);
        // Too lopsided to pay: 1 column against 4.
        assert_eq!(
            split_of(&[&[5], &[2, 5], &[3, 5], &[4, 5], &[5], &[]]),
            None
        );
    }
}
