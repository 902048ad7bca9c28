//! The global-step system `A = M/h² + Σ_c w_c G_cᵀ G_c` over the free
//! (not hard-pinned) vertices: assembly, fill-reducing ordering and sparse
//! Cholesky factorisation, numeric refactorisation, and the 3-column solve.
//!
//! The factorisation is faer's supernodal sparse Cholesky with an
//! approximate minimum degree ordering (or, from a thousand unknowns, METIS
//! nested dissection when it gives the smaller factor). It was chosen over nalgebra-sparse's
//! `CscCholesky` by measurement (see `benches/solver.rs` and docs/performance.md):
//! nalgebra-sparse has no ordering, and even fed faer's AMD permutation its
//! left-looking kernel is slower. faer's own solve handles right-hand-side
//! columns one at a time inside each supernode, reading `L` three times per
//! PD iteration; [`FusedFactor`] copies `L` into compact compressed columns
//! after each factorisation and solves x, y and z in one pass. From
//! [`MIXED_FROM_ENTRIES`](super::mixed::MIXED_FROM_ENTRIES) entries of `L`
//! on, the copy is the single-precision supernodal [`MixedFactor`] instead
//! (see [`Precision`]).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::perm::PermRef;
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::supernodal::{SupernodalLltRef, SymbolicSupernodalCholesky};
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymbolicCholeskyRaw, SymmetricOrdering,
    factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Par, Side};

use super::SolverError;
use super::mixed::{MixedFactor, Precision};
use super::relax::{self, RELAXED_BOUND};
use super::update::{DiagonalUpdate, LOW_RANK, LOW_RANK_FROM_ENTRIES};
use super::updown::Updown;
use crate::mesh::Vec3;
use crate::model::{Model, SpringKind, Tet};

/// The lower triangle of a symmetric sparsity pattern in compressed columns,
/// rows sorted within each column.
#[derive(Clone, Debug)]
pub(crate) struct LowerPattern {
    n: usize,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
}

impl LowerPattern {
    /// The pattern with the given `(row, col)` entries, `row ≥ col`
    /// (duplicates allowed); the diagonal is always included.
    pub(crate) fn new(n: usize, mut pairs: Vec<(usize, usize)>) -> Self {
        pairs.extend((0..n).map(|i| (i, i)));
        pairs.sort_unstable_by_key(|&(r, c)| (c, r));
        pairs.dedup();
        let mut col_ptr = vec![0usize; n + 1];
        for &(r, c) in &pairs {
            debug_assert!(r >= c && r < n);
            col_ptr[c + 1] += 1;
        }
        for c in 0..n {
            col_ptr[c + 1] += col_ptr[c];
        }
        Self {
            n,
            col_ptr,
            row_idx: pairs.into_iter().map(|(r, _)| r).collect(),
        }
    }

    /// Stored entries.
    pub(crate) fn nnz(&self) -> usize {
        self.row_idx.len()
    }

    /// Index into the values of entry `(row, col)`, `row ≥ col`, which must
    /// be in the pattern.
    pub(crate) fn slot(&self, row: usize, col: usize) -> usize {
        let rows = &self.row_idx[self.col_ptr[col]..self.col_ptr[col + 1]];
        self.col_ptr[col]
            + rows
                .binary_search(&row)
                .expect("entry outside the assembled pattern")
    }

    /// The diagonal entries `(unknown, change)` where `after` differs from
    /// `before`, both values on this pattern, if no other entry differs and
    /// at most `most` do.
    pub(crate) fn diagonal_changes(
        &self,
        before: &[f64],
        after: &[f64],
        most: usize,
    ) -> Option<Vec<(usize, f64)>> {
        let mut changes = Vec::new();
        for c in 0..self.n {
            for k in self.col_ptr[c]..self.col_ptr[c + 1] {
                if before[k].to_bits() == after[k].to_bits() {
                    continue;
                }
                if self.row_idx[k] != c || changes.len() == most {
                    return None;
                }
                changes.push((c, after[k] - before[k]));
            }
        }
        Some(changes)
    }

    /// Every stored entry: `(row, col, index into the values)`.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (0..self.n).flat_map(move |c| {
            (self.col_ptr[c]..self.col_ptr[c + 1]).map(move |k| (self.row_idx[k], c, k))
        })
    }

    fn symbolic(&self) -> SymbolicSparseColMatRef<'_, usize> {
        SymbolicSparseColMatRef::new_checked(self.n, self.n, &self.col_ptr, None, &self.row_idx)
    }
}

/// Unknowns from which [`SparseCholesky::new`] also orders by nested
/// dissection and keeps whichever of it and AMD gives the smaller `L`. On
/// the tet cantilever of 103,823 nodes nested dissection halves `L` (82 M →
/// 44 M stored entries) and the factorisation time (6.1 → 2.1 s). Volumes
/// gain at every size measured: the 10,648-node tet cube 2.37 M → 1.67 M
/// entries (its global step at 10 iterations 15–19 → 11–11.5 ms a frame),
/// the jelly preset's 1,478 unknowns 177,307 → 130,925, firm rubber's
/// 1,674 101,511 → 85,635 (analyses with faer's supernodal padding); 2D
/// cloth is about even (cloth100 2 % smaller). METIS takes ~10 ms at a few
/// thousand unknowns and ~50 ms at ten thousand; below a thousand the
/// factorisation costs less than that.
const NESTED_DISSECTION_FROM: usize = 1_000;

/// The symbolic analysis of `pattern` with `ordering`, for the supernodal
/// factorisation.
fn analyse(
    pattern: &LowerPattern,
    ordering: SymmetricOrdering<'_, usize>,
) -> Result<SymbolicCholesky<usize>, SolverError> {
    factorize_symbolic_cholesky(
        pattern.symbolic(),
        Side::Lower,
        ordering,
        CholeskySymbolicParams {
            // The fused solve reads the supernodal layout; supernodal is
            // also the faster numeric factorisation at every size measured.
            supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
            ..Default::default()
        },
    )
    .map_err(|e| SolverError::Factorization(format!("{e:?}")))
}

/// faer's numeric factorisation error, in words.
fn factorization_error(e: faer::linalg::solvers::LltError) -> SolverError {
    let faer::linalg::solvers::LltError::NonPositivePivot { index } = e;
    SolverError::Factorization(format!("its pivot {index} is not above zero"))
}

/// The supernodal analysis within `symbolic`, if faer made it supernodal
/// (it may not: see `SparseCholesky::is_supernodal`).
fn supernodal(symbolic: &SymbolicCholesky<usize>) -> Option<&SymbolicSupernodalCholesky<usize>> {
    match symbolic.raw() {
        SymbolicCholeskyRaw::Supernodal(symbolic) => Some(symbolic),
        SymbolicCholeskyRaw::Simplicial(_) => None,
    }
}

/// The dispositions of the signals METIS's GKlib traps (SIGTERM, SIGABRT),
/// put back as they were when dropped. GKlib catches them during a call
/// and restores the handler it found with `signal()`, which in its C99
/// build is System V's one-shot kind: after a factorisation ordered by
/// nested dissection, a bake's first SIGTERM reset SIGTERM to its default,
/// and a second killed the process mid-write (status 143, a temporary
/// frame left) instead of stopping it at once. (A SIGTERM arriving during
/// the call would go to GKlib's handler, which the binary prevents by
/// keeping the stop signals blocked in every thread: see
/// [`crate::signals::take`]. So GKlib's own `raise(SIGTERM)` on an internal
/// error stays pending too, and the call carries on past it; default
/// options reach none.)
#[cfg(unix)]
struct KeptSignals([(libc::c_int, libc::sigaction); 2]);

#[cfg(unix)]
impl KeptSignals {
    fn take() -> Self {
        let keep = |signal| {
            // SAFETY: a zeroed sigaction is a valid out-parameter, and a
            // null new action only reads the current one.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) };
            (signal, old)
        };
        Self([keep(libc::SIGTERM), keep(libc::SIGABRT)])
    }
}

#[cfg(unix)]
impl Drop for KeptSignals {
    fn drop(&mut self) {
        for (signal, action) in &self.0 {
            // SAFETY: `action` is what sigaction returned for `signal`.
            unsafe { libc::sigaction(*signal, action, std::ptr::null_mut()) };
        }
    }
}

/// METIS nested dissection (`METIS_NodeND`) of the graph of `pattern`:
/// `(perm, inverse)` with `perm[k]` the unknown of row `k`, or `None` if
/// METIS fails.
fn nested_dissection(pattern: &LowerPattern) -> Option<(Vec<usize>, Vec<usize>)> {
    let n = pattern.n;
    let mut degree = vec![0i32; n + 1];
    for (r, c, _) in pattern.entries() {
        if r != c {
            degree[r + 1] += 1;
            degree[c + 1] += 1;
        }
    }
    for i in 0..n {
        degree[i + 1] += degree[i];
    }
    let mut xadj = degree.clone();
    let mut adjncy = vec![0i32; xadj[n] as usize];
    for (r, c, _) in pattern.entries() {
        if r != c {
            adjncy[degree[r] as usize] = c as i32;
            degree[r] += 1;
            adjncy[degree[c] as usize] = r as i32;
            degree[c] += 1;
        }
    }
    let mut nvtxs = n as i32;
    let mut perm = vec![0i32; n];
    let mut iperm = vec![0i32; n];
    let mut options = [0i32; metis_sys::METIS_NOPTIONS as usize];
    // METIS keeps its random-number state in globals: one call at a time
    // (the editor can build a solver while a Newton reference is analysed).
    static METIS: Mutex<()> = Mutex::new(());
    let _one_at_a_time = METIS.lock().unwrap_or_else(|e| e.into_inner());
    #[cfg(unix)]
    let _kept = KeptSignals::take();
    // SAFETY: the arrays are a valid CSR graph of n vertices, options has
    // METIS_NOPTIONS entries, perm and iperm have n.
    let status = unsafe {
        metis_sys::METIS_SetDefaultOptions(options.as_mut_ptr());
        metis_sys::METIS_NodeND(
            &mut nvtxs,
            xadj.as_mut_ptr(),
            adjncy.as_mut_ptr(),
            std::ptr::null_mut(),
            options.as_mut_ptr(),
            perm.as_mut_ptr(),
            iperm.as_mut_ptr(),
        )
    };
    (status == metis_sys::rstatus_et_METIS_OK).then(|| {
        (
            perm.iter().map(|&p| p as usize).collect(),
            iperm.iter().map(|&p| p as usize).collect(),
        )
    })
}

/// A sparse Cholesky factorisation `A = L Lᵀ` (with a fill-reducing
/// permutation) that can be refactorised with new values on the same pattern
/// and solves in place without allocating.
pub(crate) struct SparseCholesky {
    pattern: LowerPattern,
    /// Shared by clones: the analysis never changes after it is made.
    symbolic: Arc<SymbolicCholesky<usize>>,
    /// Shared by clones until one refactorises.
    l_values: Arc<Vec<f64>>,
    buffer: MemBuffer,
    par: Par,
}

const MAX_RHS_COLUMNS: usize = 3;

/// Bytes a factor of `symbolic` takes: `L` in double precision, its
/// single-precision copy (a large system solves with it) and the scratch of
/// a factorisation.
fn footprint(symbolic: &SymbolicCholesky<usize>, par: Par) -> u64 {
    (12 * symbolic.len_val() + scratch(symbolic, par).size_bytes()) as u64
}

/// The scratch memory a factorisation and a solve with `symbolic` need.
fn scratch(symbolic: &SymbolicCholesky<usize>, par: Par) -> StackReq {
    StackReq::any_of(&[
        symbolic.factorize_numeric_llt_scratch::<f64>(par, Default::default()),
        symbolic.solve_in_place_scratch::<f64>(MAX_RHS_COLUMNS, par),
    ])
}

impl Clone for SparseCholesky {
    /// The same factor, with scratch memory of its own.
    fn clone(&self) -> Self {
        Self {
            pattern: self.pattern.clone(),
            symbolic: Arc::clone(&self.symbolic),
            l_values: Arc::clone(&self.l_values),
            buffer: MemBuffer::new(scratch(&self.symbolic, self.par)),
            par: self.par,
        }
    }
}

impl SparseCholesky {
    /// Orders, analyses and factorises the matrix with `pattern` and `values`.
    ///
    /// # Errors
    /// [`SolverError::OutOfMemory`] if the factor would not fit in the free
    /// memory; [`SolverError::Factorization`] if the matrix is not positive
    /// definite.
    pub(crate) fn new(pattern: &LowerPattern, values: &[f64]) -> Result<Self, SolverError> {
        let mut this = Self::analysed(pattern)?;
        this.refactor(values)?;
        Ok(this)
    }

    /// Orders and analyses `pattern`, for [`SparseCholesky::refactor`] to
    /// factorise.
    ///
    /// # Errors
    /// [`SolverError::OutOfMemory`] if the factor would not fit in the free
    /// memory.
    fn analysed(pattern: &LowerPattern) -> Result<Self, SolverError> {
        Self::with_analysis(pattern, Arc::new(Self::ordered_analysis(pattern)?))
    }

    /// The analysis of `pattern` in the better of its orderings (AMD, and
    /// from [`NESTED_DISSECTION_FROM`] unknowns nested dissection: the one
    /// with the smaller factor).
    fn ordered_analysis(pattern: &LowerPattern) -> Result<SymbolicCholesky<usize>, SolverError> {
        let mut symbolic = analyse(pattern, SymmetricOrdering::Amd)?;
        if pattern.n >= NESTED_DISSECTION_FROM
            && let Some((perm, inverse)) = nested_dissection(pattern)
        {
            let order = PermRef::new_checked(&perm, &inverse, pattern.n);
            // AMD's analysis stands if this one fails.
            if let Ok(dissected) = analyse(pattern, SymmetricOrdering::Custom(order))
                && dissected.len_val() < symbolic.len_val()
            {
                symbolic = dissected;
            }
        }
        Ok(symbolic)
    }

    /// A factor of `pattern` with an analysis made of it before, for
    /// [`SparseCholesky::refactor`] to factorise.
    ///
    /// # Errors
    /// [`SolverError::OutOfMemory`] if the factor would not fit in the free
    /// memory.
    fn with_analysis(
        pattern: &LowerPattern,
        symbolic: Arc<SymbolicCholesky<usize>>,
    ) -> Result<Self, SolverError> {
        let par = Par::Seq;
        super::memory::check(footprint(&symbolic, par), super::memory::available())?;
        Ok(Self {
            l_values: Arc::default(),
            buffer: MemBuffer::new(scratch(&symbolic, par)),
            symbolic,
            pattern: pattern.clone(),
            par,
        })
    }

    /// The analysis (ordering and symbolic factor), shared.
    fn analysis(&self) -> Arc<SymbolicCholesky<usize>> {
        Arc::clone(&self.symbolic)
    }

    /// Numeric refactorisation with new values on the same pattern.
    ///
    /// # Errors
    /// [`SolverError::Factorization`] if the matrix is not positive definite
    /// in double precision.
    pub(crate) fn refactor(&mut self, values: &[f64]) -> Result<(), SolverError> {
        let a = SparseColMatRef::new(self.pattern.symbolic(), values);
        let stack = MemStack::new(&mut self.buffer);
        let len = self.symbolic.len_val();
        // A clone still solves with the old factor, or it was released.
        if Arc::get_mut(&mut self.l_values).is_none_or(|l| l.len() != len) {
            self.l_values = Arc::new(vec![0.0; len]);
        }
        let l_values = Arc::get_mut(&mut self.l_values).expect("not shared");
        self.symbolic
            .factorize_numeric_llt(
                l_values,
                a,
                Side::Lower,
                LltRegularization::default(),
                self.par,
                stack,
                Default::default(),
            )
            .map(|_| ())
            .map_err(factorization_error)
    }

    /// Frees `L` once a kernel holds its own copy (the next refactorisation
    /// allocates it again): for a single-precision kernel that copy is a
    /// third of this one's size, so keeping both would cost four times the
    /// memory the solve needs.
    fn release(&mut self) {
        self.l_values = Arc::default();
    }

    /// Whether `L` is held (not released).
    fn holds_values(&self) -> bool {
        self.l_values.len() == self.symbolic.len_val()
    }

    /// Adds `changes` (unknown, change of its diagonal entry) to the
    /// factorised matrix by rank-one updates of `L` in place (updown.rs,
    /// with `updown` made for this analysis on first use). `false` when
    /// that would cost more than refactorising, or `L` is not held, not
    /// supernodal or shared, or a downdate failed: then refactorise (`L`
    /// may be partly changed). Once updating, the changes' unknowns become
    /// their rows of the permuted matrix, in order.
    fn update_diagonal(
        &mut self,
        changes: &mut [(usize, f64)],
        updown: &mut Option<Updown>,
    ) -> bool {
        if !self.holds_values() {
            return false;
        }
        let Some(symbolic) = supernodal(&self.symbolic) else {
            return false;
        };
        let Some(l) = Arc::get_mut(&mut self.l_values) else {
            return false;
        };
        let updown = updown.get_or_insert_with(|| Updown::new(symbolic));
        let inverse = self.symbolic.perm().map(|p| p.arrays().1);
        let row = |k: usize| inverse.map_or(k, |inverse| inverse[k]);
        for (k, _) in changes.iter_mut() {
            *k = row(*k);
        }
        // Neighbouring rows' paths, one after the other, share more of the
        // tree in cache.
        changes.sort_unstable_by_key(|r| r.0);
        updown.pays(changes.iter().map(|&(k, _)| k)) && updown.apply(symbolic, l, changes).is_ok()
    }

    /// Solves `A X = B` in place; `b` holds `ncols ≤ 3` columns of length
    /// `n`, one after the other.
    pub(crate) fn solve_in_place(&mut self, b: &mut [f64], ncols: usize) {
        debug_assert!(ncols <= MAX_RHS_COLUMNS && b.len() == ncols * self.pattern.n);
        let rhs = MatMut::from_column_major_slice_mut(b, self.pattern.n, ncols);
        let stack = MemStack::new(&mut self.buffer);
        LltRef::new(&self.symbolic, &self.l_values).solve_in_place_with_conj(
            Conj::No,
            rhs,
            self.par,
            stack,
        );
    }

    /// Stored entries of the supernodal `L` (relaxed supernodes' explicit
    /// zeros included).
    fn len_val(&self) -> usize {
        self.symbolic.len_val()
    }

    /// Copies `L` into `out` in single precision, with the matrix of its
    /// residual (the lower triangle `values` on `pattern`: the matrix this
    /// factorises, or `A` when this factorises the relaxed matrix).
    fn extract_mixed(&self, out: &mut MixedFactor, residual: (&LowerPattern, &[f64])) {
        let symbolic = supernodal(&self.symbolic)
            .expect("only a supernodal factorisation is solved in mixed precision");
        let perm = self.symbolic.perm().map(|p| p.arrays().0);
        out.extract(symbolic, &self.l_values, perm, residual);
    }

    /// Copies into `out`, extracted from this factor before it was updated
    /// in place, the supernodes `touched` of `L` and the residual's (lower
    /// triangle `values` on `pattern`) diagonal entries of the permuted
    /// rows of `changes` (row, change).
    fn refresh_mixed(
        &self,
        out: &mut MixedFactor,
        touched: &[bool],
        residual: (&LowerPattern, &[f64]),
        changes: &[(usize, f64)],
    ) {
        let symbolic =
            supernodal(&self.symbolic).expect("only a supernodal factorisation is updated");
        let rows = changes.iter().map(|&(k, _)| k);
        out.refresh((symbolic, &self.l_values), touched, residual, rows);
    }

    /// Whether faer made the factorisation supernodal. Forced supernodal,
    /// it still goes simplicial when its flop count is not above zero: AMD
    /// counts no flops for a system without off-diagonal entries (one free
    /// vertex among hard pins, say; the random soak test found it).
    fn is_supernodal(&self) -> bool {
        supernodal(&self.symbolic).is_some()
    }

    /// Copies `L` into `out` for fused solves.
    pub(crate) fn extract(&self, out: &mut FusedFactor) {
        let n = self.pattern.n;
        if Arc::get_mut(&mut out.l).is_none() {
            // A clone still solves with the old L.
            out.l = Arc::default();
        }
        let wide = n <= WIDE_ROWS;
        out.wide = wide;
        out.work.resize(if wide { 0 } else { n }, [0.0; 3]);
        out.wide_work.resize(if wide { n } else { 0 }, [0.0; 4]);
        out.avx2 = super::has_avx2_fma();
        let out = Arc::get_mut(&mut out.l).expect("not shared");
        out.perm.clear();
        match self.symbolic.perm() {
            Some(p) => out.perm.extend(p.arrays().0.iter().map(|&i| i as u32)),
            None => out.perm.extend(0..n as u32),
        }
        out.inv_diag.clear();
        out.col_ptr.clear();
        out.row_idx.clear();
        out.values.clear();
        out.col_ptr.push(0);
        let symbolic = match self.symbolic.raw() {
            SymbolicCholeskyRaw::Supernodal(symbolic) => symbolic,
            SymbolicCholeskyRaw::Simplicial(simplicial) => {
                // Compressed columns already: read as they are.
                let (col_ptr, row_idx) = (simplicial.col_ptr(), simplicial.row_idx());
                for c in 0..n {
                    let range = col_ptr[c]..col_ptr[c + 1];
                    for (&row, &value) in row_idx[range.clone()].iter().zip(&self.l_values[range]) {
                        if row == c {
                            out.inv_diag.push(1.0 / value);
                        } else if value != 0.0 {
                            out.row_idx.push(row as u32);
                            out.values.push(value);
                        }
                    }
                    out.col_ptr.push(out.row_idx.len() as u32);
                }
                return;
            }
        };
        let l = SupernodalLltRef::new(symbolic, &self.l_values);
        for s in 0..symbolic.n_supernodes() {
            let node = l.supernode(s);
            let (start, pattern, block) = (node.start(), node.pattern(), node.val());
            let size = block.ncols();
            for c in 0..size {
                out.inv_diag.push(1.0 / block[(c, c)]);
                let below = (c + 1..size).map(|r| (start + r, block[(r, c)]));
                let outside = pattern
                    .iter()
                    .enumerate()
                    .map(|(k, &r)| (r, block[(size + k, c)]));
                for (row, value) in below.chain(outside) {
                    // Relaxed supernodes store explicit zeros: skip them.
                    if value != 0.0 {
                        out.row_idx.push(row as u32);
                        out.values.push(value);
                    }
                }
                out.col_ptr.push(out.row_idx.len() as u32);
            }
        }
    }
}

/// `L` of `P A Pᵀ = L Lᵀ` in compressed columns (strictly lower part, 32-bit
/// row indices, reciprocal diagonal apart) for solving three right-hand sides
/// in one pass. Clones share `L` (it can be gigabytes) and have their own
/// work space; a refactorisation of a shared `L` allocates a new one.
#[derive(Clone, Default)]
pub(crate) struct FusedFactor {
    l: Arc<FusedL>,
    /// The permuted right-hand side / solution, 3 lanes per row...
    work: Vec<[f64; 3]>,
    /// ... or 4 (padded) when `wide`.
    wide_work: Vec<[f64; 4]>,
    wide: bool,
    /// Whether the CPU runs the AVX2 + FMA kernel.
    avx2: bool,
}

/// The arrays of a [`FusedFactor`]'s `L`.
#[derive(Default)]
struct FusedL {
    /// `perm[k]`: the unknown that is row `k` of the permuted system.
    perm: Vec<u32>,
    inv_diag: Vec<f64>,
    col_ptr: Vec<u32>,
    row_idx: Vec<u32>,
    values: Vec<f64>,
}

impl FusedFactor {
    /// Stored off-diagonal entries plus the diagonal.
    fn nnz(&self) -> usize {
        self.l.values.len() + self.l.inv_diag.len()
    }

    /// Solves `A x = rhs` for the unknowns `row_vertex[k]` (row `k` of the
    /// permuted system): gathers, substitutes forward and backward with x, y
    /// and z together, and writes the result into `x`.
    fn solve(&mut self, rhs: &[Vec3], x: &mut [Vec3], row_vertex: &[u32]) {
        let l = LowerFactor {
            col_ptr: &self.l.col_ptr,
            row_idx: &self.l.row_idx,
            values: &self.l.values,
            inv_diag: &self.l.inv_diag,
        };
        if self.wide {
            for (w, &v) in self.wide_work.iter_mut().zip(row_vertex) {
                let r = rhs[v as usize];
                *w = [r.x, r.y, r.z, 0.0];
            }
            run(l, &mut self.wide_work, self.avx2);
            for (w, &v) in self.wide_work.iter().zip(row_vertex) {
                x[v as usize] = Vec3::new(w[0], w[1], w[2]);
            }
        } else {
            for (w, &v) in self.work.iter_mut().zip(row_vertex) {
                *w = rhs[v as usize].into();
            }
            run(l, &mut self.work, self.avx2);
            for (w, &v) in self.work.iter().zip(row_vertex) {
                x[v as usize] = (*w).into();
            }
        }
    }
}

/// The arrays of a [`FusedFactor`]'s `L`, borrowed for the kernels.
#[derive(Clone, Copy)]
struct LowerFactor<'a> {
    col_ptr: &'a [u32],
    row_idx: &'a [u32],
    values: &'a [f64],
    inv_diag: &'a [f64],
}

/// Rows of the work vector up to which the padded 4-lane layout is used:
/// 8192 rows of 32 bytes fill half of a 512 KiB L2 cache. Beyond that the
/// unpadded 24-byte rows win because the vector no longer fits.
const WIDE_ROWS: usize = 8192;

#[inline(always)]
fn axpy<const N: usize>(acc: &mut [f64; N], x: &[f64; N], a: f64) {
    for c in 0..N {
        acc[c] += x[c] * a;
    }
}

/// Forward then backward substitution with `L` on rows of `N` lanes
/// (x, y, z and, for `N = 4`, a pad lane so a row is one 256-bit access).
#[inline(always)]
fn solve_kernel<const N: usize>(l: LowerFactor<'_>, work: &mut [[f64; N]]) {
    for j in 0..work.len() {
        let d = l.inv_diag[j];
        let yj = work[j].map(|v| v * d);
        work[j] = yj;
        let range = l.col_ptr[j] as usize..l.col_ptr[j + 1] as usize;
        for (&i, &v) in l.row_idx[range.clone()].iter().zip(&l.values[range]) {
            axpy(&mut work[i as usize], &yj, -v);
        }
    }
    for j in (0..work.len()).rev() {
        let range = l.col_ptr[j] as usize..l.col_ptr[j + 1] as usize;
        let rows = &l.row_idx[range.clone()];
        let values = &l.values[range];
        // Two accumulators halve the dependency chain of the dot product.
        let (mut even, mut odd) = ([0.0; N], [0.0; N]);
        let mut pairs_r = rows.chunks_exact(2);
        let mut pairs_v = values.chunks_exact(2);
        for (r, v) in (&mut pairs_r).zip(&mut pairs_v) {
            axpy(&mut even, &work[r[0] as usize], v[0]);
            axpy(&mut odd, &work[r[1] as usize], v[1]);
        }
        for (&r, &v) in pairs_r.remainder().iter().zip(pairs_v.remainder()) {
            axpy(&mut even, &work[r as usize], v);
        }
        let d = l.inv_diag[j];
        let wj = &mut work[j];
        for c in 0..N {
            wj[c] = (wj[c] - even[c] - odd[c]) * d;
        }
    }
}

/// Runs [`solve_kernel`], compiled for AVX2 + FMA when `avx2` says the CPU
/// has them.
#[inline(always)]
fn run<const N: usize>(l: LowerFactor<'_>, work: &mut [[f64; N]], avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: `avx2` is true only when the CPU reports AVX2 and FMA.
        unsafe { solve_avx2(l, work) };
        return;
    }
    let _ = avx2;
    solve_kernel(l, work);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn solve_avx2<const N: usize>(l: LowerFactor<'_>, work: &mut [[f64; N]]) {
    solve_kernel(l, work);
}

/// Size and cost of a factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FactorStats {
    /// Unknown vertices (not hard-pinned).
    pub unknowns: usize,
    /// Stored entries of the lower triangle of `A`.
    pub matrix_nnz: usize,
    /// Stored entries of the Cholesky factor `L`.
    pub factor_nnz: usize,
    /// Assembly, ordering and symbolic analysis, milliseconds.
    pub analyse_ms: f64,
    /// The last numeric factorisation, milliseconds.
    pub factor_ms: f64,
    /// Numeric refactorisations since the solver was made (0 for a new
    /// solver): weight, mass, time-step and soft-pin changes count here,
    /// including one that switched between `A` and the relaxed matrix.
    pub refactors: u64,
    /// Whether the solve keeps `L` in single precision (see [`Precision`]).
    pub mixed_precision: bool,
    /// Whether that single-precision solve can split over two threads (its
    /// ordering left two independent halves below a separator); it does
    /// when the solver has more than one.
    pub split_solve: bool,
    /// Whether `L` factorises the relaxed matrix, `A` without its bending
    /// springs (see [`Precision::Relaxed`]); the solve is then mixed.
    pub relaxed: bool,
    /// Diagonal entries of `A` changed since the last factorisation (soft
    /// pins added or removed, as a grab does) that the solves take in
    /// through a low-rank update instead (from 500,000 entries of `L`).
    pub updated_rows: usize,
    /// Numeric refactorisations of the ground contacts' systems (the y
    /// coordinate's, and x and z's while some contacts stick): one whenever
    /// the contacts change more than an update of the factor takes in.
    pub contact_refactors: u64,
    /// Changes of the contacts' pins (a vertex landing or lifting off)
    /// taken into their systems' factors by rank-one updates instead.
    pub contact_updated_rows: u64,
}

impl FactorStats {
    /// The precision the solve runs in: [`Precision::Relaxed`],
    /// [`Precision::Mixed`] or [`Precision::Double`].
    pub fn precision(&self) -> Precision {
        if self.relaxed {
            Precision::Relaxed
        } else if self.mixed_precision {
            Precision::Mixed
        } else {
            Precision::Double
        }
    }

    /// Counts what [`PinBase::pin`] did.
    fn count(&mut self, pinned: Pinned) {
        match pinned {
            Pinned::Unchanged => {}
            Pinned::Refactored => self.contact_refactors += 1,
            Pinned::Updated(rows) => self.contact_updated_rows += rows as u64,
        }
    }
}

/// The unknown (and row) of a vertex that has none: a hard-pinned one.
pub(crate) const PINNED: u32 = u32::MAX;

/// The rows of the permuted system and the model's vertices, both ways.
#[derive(Clone, Debug, Default)]
pub(crate) struct RowMap {
    /// The vertex of each row.
    pub(crate) vertex: Vec<u32>,
    /// The row of each vertex, or [`PINNED`].
    pub(crate) row: Vec<u32>,
}

impl RowMap {
    /// The rows of the unknowns `perm[k]` of the vertices `free` (of `m`).
    fn set(&mut self, perm: &[u32], free: &[u32], m: usize) {
        self.vertex.clear();
        self.vertex.extend(perm.iter().map(|&k| free[k as usize]));
        self.row.clear();
        self.row.resize(m, PINNED);
        for (k, &v) in self.vertex.iter().enumerate() {
            self.row[v as usize] = k as u32;
        }
    }
}

const SPRING_KINDS: [SpringKind; 3] = [
    SpringKind::Structural,
    SpringKind::Shear,
    SpringKind::Bending,
];

/// Which weight scales a coupling between a free and a pinned vertex.
#[derive(Clone, Copy, Debug)]
enum CouplingKind {
    /// A spring of this kind.
    Spring(SpringKind),
    /// A tet: the sum of the tet constraint weights (they share `G`).
    Tet,
}

/// An entry `A_fp = weight(kind) · coefficient` between a free and a
/// pinned vertex, which moves `−A_fp x_p` to the free row's right-hand side.
#[derive(Clone, Copy, Debug)]
struct Coupling {
    free: u32,
    pinned: u32,
    /// The entry without the weight: `−1` for a spring, `|V₀| g_f · g_p`
    /// for a tet.
    coefficient: f64,
    kind: CouplingKind,
}

impl CouplingKind {
    fn weight(self, model: &Model) -> f64 {
        match self {
            Self::Spring(kind) => model.weights.spring(kind),
            Self::Tet => model.weights.tet().iter().sum(),
        }
    }
}

/// The unweighted `|V₀| GᵀG` of a tet: `|V₀| g_i · g_j` for corners `i`, `j`.
fn tet_gram(tet: &Tet) -> [[f64; 4]; 4] {
    let g = tet.stencil();
    std::array::from_fn(|i| std::array::from_fn(|j| tet.rest_volume * g[i].dot(&g[j])))
}

/// The PD system over the free vertices of one model.
#[derive(Clone)]
pub(crate) struct System {
    /// Vertex of each unknown.
    free: Vec<u32>,
    /// Unknown of each vertex, or `PINNED`.
    index: Vec<u32>,
    pattern: LowerPattern,
    values: Vec<f64>,
    /// `A` without its bending springs, when they can be routed over its
    /// structural and shear springs ([`super::relax`]).
    relaxed: Option<Relaxed>,
    /// Whether `factor` is of the relaxed matrix (else of `A`).
    on_relaxed: bool,
    factor: Option<SparseCholesky>,
    /// The analysis of the matrix not factorised now (`true`: the relaxed
    /// one), kept from the last switch between them, so that a weight
    /// dragged back and forth across the relaxed bound orders and analyses
    /// each matrix once.
    spare: Option<(bool, Arc<SymbolicCholesky<usize>>)>,
    /// Constraints between a free and a pinned vertex.
    coupling: Vec<Coupling>,
    /// The precision asked for.
    precision: Precision,
    kernel: Kernel,
    /// The rows of the permuted system.
    rows: RowMap,
    stats: FactorStats,
    /// The system of the y coordinate while vertices rest on the ground.
    contact: Option<ContactSystem>,
    /// The system of x and z while some of those vertices, not all, stick
    /// (static friction holds them where they are). Kept with its last pins
    /// when every contact or none sticks, so that going back to the same
    /// set (a contact at the friction limit let go and held again) is no
    /// factorisation.
    sticking: Option<ContactSystem>,
    /// Which system x and z solve with.
    stick: Stick,
    /// The solution of the y solve with contacts, all coordinates (scratch).
    solved: Vec<Vec3>,
    /// [`System::fingerprint`], updated whenever the matrices change.
    fingerprint: u64,
    /// Diagonal entries of `A` changed since `kernel` was copied, solved by
    /// the update instead of a refactorisation (a grab on a large model).
    update: Option<DiagonalUpdate>,
}

/// The relaxed matrix ([`super::relax`]): `A` without its bending springs.
#[derive(Clone)]
struct Relaxed {
    pattern: LowerPattern,
    values: Vec<f64>,
    /// The most bending springs routed over one spring of each kind.
    load: relax::BendingLoad,
    /// The certified `ρ` with the current weights.
    bound: f64,
    /// Its factor's stored entries and whether faer made it supernodal,
    /// once analysed.
    analysed: Option<(usize, bool)>,
}

/// The matrix a system's factor is of: the relaxed matrix when `on_relaxed`,
/// else `A` (`exact`, its pattern and values).
fn factored<'a>(
    relaxed: &'a Option<Relaxed>,
    on_relaxed: bool,
    exact: (&'a LowerPattern, &'a [f64]),
) -> (&'a LowerPattern, &'a [f64]) {
    match relaxed {
        Some(r) if on_relaxed => (&r.pattern, &r.values),
        _ => exact,
    }
}

/// How many ground contacts stick, which says what x and z solve with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stick {
    /// None: `A`.
    None,
    /// Some: the sticking system.
    Some,
    /// All: the contacts' system, as y.
    All,
}

/// `A` with pins on its diagonal: the ground contacts' for the y coordinate
/// (the ground's normal is y), the sticking contacts' for x and z.
#[derive(Clone)]
struct ContactSystem {
    /// The pins it was factorised with: (vertex, weight), by vertex (empty:
    /// not in use; the buffers stay for the next contacts).
    pins: Vec<(u32, f64)>,
    /// The factorised matrix's values (`A`'s or the relaxed matrix's) plus
    /// the pins.
    values: Vec<f64>,
    /// `A`'s values plus the pins, for the residual, when `values` are the
    /// relaxed matrix's (empty otherwise).
    residual: Vec<f64>,
    /// The system's factor (sharing its analysis), factorised with `values`
    /// (or updated to them).
    factor: SparseCholesky,
    kernel: Kernel,
    /// The changed diagonal entries of an update: (unknown, change), then
    /// (permuted row, change) once taken in.
    changes: Vec<(usize, f64)>,
    /// What updates of `factor` need, made with the first.
    updown: Option<Updown>,
    /// Rank-one updates since `factor` was last refactorised.
    updates: usize,
}

/// What a [`ContactSystem`] is made from: the factorised matrix (its
/// factor, values and pattern), `A` when that is the relaxed matrix, the
/// rows of the vertices and the precision to solve in.
struct PinBase<'a> {
    factor: &'a SparseCholesky,
    values: &'a [f64],
    pattern: &'a LowerPattern,
    /// `A`'s values on its pattern, when `values` are the relaxed matrix's.
    exact: Option<(&'a LowerPattern, &'a [f64])>,
    index: &'a [u32],
    precision: Precision,
}

impl PinBase<'_> {
    /// Makes `system` the factorised matrix plus `pins` on its diagonal,
    /// factorised (only if they changed; its buffers are kept from earlier
    /// pins), correcting against `A` plus the pins when that matrix is the
    /// relaxed one. A change of a few pins from the last ones is taken into
    /// its factor by rank-one updates (updown.rs) when they cost less than a
    /// refactorisation, up to [`UPDATES_BETWEEN_REFACTORS`].
    fn pin(
        &self,
        system: &mut Option<ContactSystem>,
        pins: &[(u32, f64)],
    ) -> Result<Pinned, SolverError> {
        if system.as_ref().is_some_and(|c| c.pins == pins) {
            return Ok(Pinned::Unchanged);
        }
        if system.is_none() {
            // Its own L, as A's.
            let (symbolic, par) = (&self.factor.symbolic, self.factor.par);
            super::memory::check(footprint(symbolic, par), super::memory::available())?;
        }
        let c = system.get_or_insert_with(|| ContactSystem {
            pins: Vec::new(),
            values: Vec::new(),
            residual: Vec::new(),
            factor: self.factor.clone(),
            kernel: Kernel::Double(FusedFactor::default()),
            changes: Vec::new(),
            updown: None,
            updates: 0,
        });
        let pinned = |pattern: &LowerPattern, values: &[f64], out: &mut Vec<f64>| {
            out.clear();
            out.extend_from_slice(values);
            for &(v, w) in pins {
                let k = self.index[v as usize] as usize;
                out[pattern.slot(k, k)] += w;
            }
        };
        pinned(self.pattern, self.values, &mut c.values);
        let updated = c.update(pins, self.index);
        // Not in use until factorised with `pins` (a failed one stays so).
        c.pins.clear();
        if !updated {
            c.factor.refactor(&c.values)?;
            c.updates = 0;
        }
        let residual = match self.exact {
            Some((pattern, values)) => {
                pinned(pattern, values, &mut c.residual);
                (pattern, &c.residual[..])
            }
            None => (self.pattern, &c.values[..]),
        };
        match (&mut c.kernel, &mut c.updown) {
            // Updated in place: the supernodes it changed copied again.
            (Kernel::Mixed(kernel), Some(updown)) if updated => {
                c.factor
                    .refresh_mixed(kernel, updown.touched(), residual, &c.changes);
            }
            _ => {
                fill_kernel(
                    &mut c.factor,
                    residual,
                    (self.precision, self.exact.is_some(), true),
                    &mut c.kernel,
                );
            }
        }
        if let Some(updown) = &mut c.updown {
            updown.clear_touched();
        }
        c.pins.extend_from_slice(pins);
        Ok(if updated {
            Pinned::Updated(c.changes.len())
        } else {
            Pinned::Refactored
        })
    }
}

/// What [`PinBase::pin`] did to a contact system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pinned {
    /// Its pins were the same.
    Unchanged,
    /// It was refactorised.
    Refactored,
    /// Its factor took in changes of this many pins by rank-one updates.
    Updated(usize),
}

/// Rank-one updates a contact system's factor takes before it is
/// refactorised again, which bounds the round-off its updates gather (a
/// downdate can lose up to three digits of its row: the pins weigh
/// [`CONTACT_STIFFNESS`](super::CONTACT_STIFFNESS) times the mass term).
const UPDATES_BETWEEN_REFACTORS: usize = 1024;

impl ContactSystem {
    /// Takes the change from its pins to `pins` into its factor by rank-one
    /// updates; `false` (refactorise) if it has no factor of its pins (none
    /// yet, or dropped), the change costs more than a refactorisation, its
    /// updates reached [`UPDATES_BETWEEN_REFACTORS`] or a downdate failed.
    fn update(&mut self, pins: &[(u32, f64)], index: &[u32]) -> bool {
        if self.pins.is_empty() {
            return false;
        }
        // Both by vertex: merged, the change of each vertex's weight.
        self.changes.clear();
        let (old, (mut i, mut j)) = (&self.pins, (0, 0));
        loop {
            let (v, d) = match (old.get(i), pins.get(j)) {
                (None, None) => break,
                // In both: its weight's change.
                (Some(&(a, wa)), Some(&(b, wb))) if a == b => {
                    (i, j) = (i + 1, j + 1);
                    (a, wb - wa)
                }
                // Only in the old pins: lifted off.
                (Some(&(a, wa)), None) => {
                    i += 1;
                    (a, -wa)
                }
                (Some(&(a, wa)), Some(&(b, _))) if a < b => {
                    i += 1;
                    (a, -wa)
                }
                // Only in the new: landed.
                (_, Some(&(b, wb))) => {
                    j += 1;
                    (b, wb)
                }
            };
            if d != 0.0 {
                self.changes.push((index[v as usize] as usize, d));
            }
        }
        if self.updates + self.changes.len() > UPDATES_BETWEEN_REFACTORS
            || !(self.factor).update_diagonal(&mut self.changes, &mut self.updown)
        {
            return false;
        }
        self.updates += self.changes.len();
        true
    }
}

/// The copy of `L` the global step solves with.
#[derive(Clone)]
enum Kernel {
    /// Double precision, compressed columns.
    Double(FusedFactor),
    /// Single precision, supernodes, with a double-precision residual.
    Mixed(MixedFactor),
}

impl Kernel {
    fn solve(&mut self, rhs: &[Vec3], x: &mut [Vec3], rows: &RowMap, parallel: bool) {
        match self {
            Self::Double(f) => f.solve(rhs, x, &rows.vertex),
            Self::Mixed(f) => f.solve(rhs, x, rows, parallel),
        }
    }

    /// The fill-reducing permutation: `perm()[k]` is the unknown of row `k`.
    fn perm(&self) -> &[u32] {
        match self {
            Self::Double(f) => &f.l.perm,
            Self::Mixed(f) => f.perm(),
        }
    }

    fn nnz(&self) -> usize {
        match self {
            Self::Double(f) => f.nnz(),
            Self::Mixed(f) => f.nnz(),
        }
    }
}

/// Copies `factor` into `kernel`, in single precision when `precision` asks
/// for it or `factor` is of the relaxed matrix (then `factor` releases its
/// own copy, unless `keep`: a contact system's, which later contacts update
/// in place); `residual` is the matrix the single-precision solve corrects
/// against (`A`, on its pattern). Returns whether it copied in single
/// precision.
fn fill_kernel(
    factor: &mut SparseCholesky,
    residual: (&LowerPattern, &[f64]),
    (precision, relaxed, keep): (Precision, bool, bool),
    kernel: &mut Kernel,
) -> bool {
    let mixed = relaxed || precision.is_mixed(factor.len_val()) && factor.is_supernodal();
    match (&mut *kernel, mixed) {
        (Kernel::Double(f), false) => factor.extract(f),
        (Kernel::Mixed(f), true) => factor.extract_mixed(f, residual),
        (kernel, false) => {
            let mut f = FusedFactor::default();
            factor.extract(&mut f);
            *kernel = Kernel::Double(f);
        }
        (kernel, true) => {
            let mut f = MixedFactor::default();
            factor.extract_mixed(&mut f, residual);
            *kernel = Kernel::Mixed(f);
        }
    }
    if mixed && !keep {
        factor.release();
    }
    mixed
}

/// Assembles the lower triangle of `A` (without the bending springs unless
/// `bending`) for `model` with substep `h` into `values`, on `pattern` over
/// the unknowns `free` (`index`: the unknown of each vertex).
fn assemble(
    pattern: &LowerPattern,
    index: &[u32],
    free: &[u32],
    (model, h): (&Model, f64),
    bending: bool,
    values: &mut Vec<f64>,
) {
    values.clear();
    values.resize(pattern.nnz(), 0.0);
    let inv_h2 = 1.0 / (h * h);
    for (k, &v) in free.iter().enumerate() {
        let slot = pattern.slot(k, k);
        values[slot] += model.masses[v as usize] * inv_h2;
    }
    for kind in SPRING_KINDS {
        if kind == SpringKind::Bending && !bending {
            continue;
        }
        let w = model.weights.spring(kind);
        for s in model.springs.of_kind(kind) {
            let (ia, ib) = (index[s.a as usize], index[s.b as usize]);
            if ia == ib {
                continue; // both pinned, or a spring from a vertex to itself
            }
            for i in [ia, ib] {
                if i != PINNED {
                    let slot = pattern.slot(i as usize, i as usize);
                    values[slot] += w;
                }
            }
            if ia != PINNED && ib != PINNED {
                let slot = pattern.slot(ia.max(ib) as usize, ia.min(ib) as usize);
                values[slot] -= w;
            }
        }
    }
    let wa = model.weights.attachment;
    for a in &model.pins.soft {
        let i = index[a.vertex as usize];
        if i != PINNED {
            let slot = pattern.slot(i as usize, i as usize);
            values[slot] += wa;
        }
    }
    let wt = CouplingKind::Tet.weight(model);
    for tet in &model.tets {
        let block = tet_gram(tet);
        let index = tet.vertices.map(|v| index[v as usize]);
        for (i, &a) in index.iter().enumerate() {
            for (j, &b) in index.iter().enumerate().take(i + 1) {
                if a != PINNED && b != PINNED {
                    let slot = pattern.slot(a.max(b) as usize, a.min(b) as usize);
                    values[slot] += wt * block[i][j];
                }
            }
        }
    }
}

impl System {
    /// Assembles and factorises `A` for `model` with substep `h`.
    pub(crate) fn new(model: &Model, h: f64) -> Result<Self, SolverError> {
        let t0 = Instant::now();
        let m = model.vertex_count();
        let mut index = vec![PINNED; m];
        let mut free = Vec::with_capacity(m);
        for v in 0..m as u32 {
            if !model.pins.is_hard(v) {
                index[v as usize] = free.len() as u32;
                free.push(v);
            }
        }
        let mut pairs = Vec::with_capacity(model.springs.len() + 6 * model.tets.len());
        let mut bending = Vec::with_capacity(model.springs.bending.len());
        let mut coupling = Vec::new();
        // The entry of two free vertices; a free and a pinned one couple.
        let mut couple = |a: u32, b: u32, coefficient: f64, kind: CouplingKind| {
            let (ia, ib) = (index[a as usize], index[b as usize]);
            match (ia != PINNED, ib != PINNED) {
                (true, true) if ia != ib => {
                    return Some((ia.max(ib) as usize, ia.min(ib) as usize));
                }
                (true, false) => coupling.push(Coupling {
                    free: a,
                    pinned: b,
                    coefficient,
                    kind,
                }),
                (false, true) => coupling.push(Coupling {
                    free: b,
                    pinned: a,
                    coefficient,
                    kind,
                }),
                _ => {}
            }
            None
        };
        for kind in SPRING_KINDS {
            let to = if kind == SpringKind::Bending {
                &mut bending
            } else {
                &mut pairs
            };
            for s in model.springs.of_kind(kind) {
                to.extend(couple(s.a, s.b, -1.0, CouplingKind::Spring(kind)));
            }
        }
        // All 6 edges of every tet, whatever the weights: a weight change
        // stays a numeric refactorisation.
        for tet in &model.tets {
            let block = tet_gram(tet);
            let v = tet.vertices;
            for i in 0..4 {
                for j in i + 1..4 {
                    pairs.extend(couple(v[i], v[j], block[i][j], CouplingKind::Tet));
                }
            }
        }
        let nf = free.len();
        let relaxed =
            relax::bending_load(model, |v| index[v as usize] != PINNED).map(|load| Relaxed {
                pattern: LowerPattern::new(nf, pairs.clone()),
                values: Vec::new(),
                load,
                bound: f64::INFINITY,
                analysed: None,
            });
        pairs.append(&mut bending);
        let pattern = LowerPattern::new(nf, pairs);
        let mut this = Self {
            free,
            index,
            values: vec![0.0; pattern.nnz()],
            pattern,
            relaxed,
            on_relaxed: false,
            factor: None,
            spare: None,
            coupling,
            precision: Precision::Auto,
            kernel: Kernel::Double(FusedFactor::default()),
            rows: RowMap::default(),
            stats: FactorStats::default(),
            contact: None,
            sticking: None,
            stick: Stick::None,
            solved: Vec::new(),
            fingerprint: 0,
            update: None,
        };
        this.assemble(model, h);
        this.factorise()?;
        // `factorise` timed its numeric factorisation (what a weight change
        // costs) and `extract` filled in the factor's size and precision.
        this.stats = FactorStats {
            unknowns: nf,
            matrix_nnz: this.pattern.nnz(),
            analyse_ms: t0.elapsed().as_secs_f64() * 1e3 - this.stats.factor_ms,
            refactors: 0,
            ..this.stats
        };
        this.fingerprint = this.hash_matrix();
        Ok(this)
    }

    /// Re-assembles the values (weights, masses, `h`) and refactorises
    /// numerically on the same ordering and pattern; when the bending weight
    /// crosses the relaxed matrix's bound, analyses and factorises the other
    /// matrix ([`System::wants_relaxed`]).
    pub(crate) fn refactor(&mut self, model: &Model, h: f64) -> Result<(), SolverError> {
        let t0 = Instant::now();
        self.drop_contacts();
        let saved = self.values.clone();
        let saved_relaxed = self.relaxed.as_ref().map(|r| (r.values.clone(), r.bound));
        self.assemble(model, h);
        let switch = self.wants_relaxed() != self.on_relaxed;
        if !switch && self.update_diagonal(&saved) {
            self.fingerprint = self.hash_matrix();
            return Ok(());
        }
        // The factor becomes of the new values; on error the kernel is as
        // it was, and so is the update of its values.
        let update = self.update.take();
        let result = if switch {
            // This copies the new factor; on error the old one stands.
            self.factorise()
        } else {
            self.refactor_numeric().map(|()| self.extract())
        };
        if let Err(e) = result {
            // Leave the solver as it was.
            self.values = saved;
            if let (Some(r), Some((values, bound))) = (&mut self.relaxed, saved_relaxed) {
                (r.values, r.bound) = (values, bound);
            }
            self.update = update;
            if !switch {
                self.refactor_numeric()?;
            }
            return Err(e);
        }
        self.stats.factor_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.stats.refactors += 1;
        self.stats.updated_rows = 0;
        self.fingerprint = self.hash_matrix();
        Ok(())
    }

    /// Solves with the values just assembled through an update of the
    /// kernel's ([`DiagonalUpdate`]) when they differ from those in at most
    /// [`LOW_RANK`] diagonal entries and the factor is large (from
    /// [`LOW_RANK_FROM_ENTRIES`] entries; not the relaxed matrix's, whose
    /// solve is inexact); `before`: the values assembled before. Returns
    /// whether it does (no change at all included); else the update is as
    /// it was.
    fn update_diagonal(&mut self, before: &[f64]) -> bool {
        if self.on_relaxed || self.factor.is_none() || self.kernel.nnz() < LOW_RANK_FROM_ENTRIES {
            return false;
        }
        let factored = self.update.as_ref().map_or(before, |u| &u.factored[..]);
        let Some(changes) = self
            .pattern
            .diagonal_changes(factored, &self.values, LOW_RANK)
        else {
            return false;
        };
        if changes.is_empty() {
            self.update = None;
            self.stats.updated_rows = 0;
            return true;
        }
        let rows = changes.iter().map(|&(k, d)| (self.free[k], d)).collect();
        let (kernel, map) = (&mut self.kernel, &self.rows);
        let update = DiagonalUpdate::new(factored.to_vec(), rows, self.index.len(), |rhs, x| {
            kernel.solve(rhs, x, map, false);
        });
        let Some(update) = update else {
            return false;
        };
        self.stats.updated_rows = update.rows().len();
        self.update = Some(update);
        true
    }

    /// Makes the factor of `A`'s values again if an update solves with them
    /// (before its copy is made anew).
    ///
    /// # Errors
    /// [`SolverError::Factorization`] if `A` is not positive definite; the
    /// update then stays.
    fn settle_update(&mut self) -> Result<(), SolverError> {
        if self.update.is_some() {
            self.refactor_numeric()?;
            self.update = None;
            self.stats.updated_rows = 0;
        }
        Ok(())
    }

    /// A hash of what the solves are with, contacts aside: the free
    /// vertices, `A`'s values, and the relaxed matrix's when its factor
    /// solves (its solves correct against `A`). Two systems of the same
    /// matrices have the same; a refactorisation that changes one almost
    /// surely changes it.
    pub(crate) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn hash_matrix(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::hash::DefaultHasher::new();
        self.free.hash(&mut hasher);
        self.on_relaxed.hash(&mut hasher);
        let relaxed = self.relaxed.as_ref().filter(|_| self.on_relaxed);
        for values in [Some(&self.values), relaxed.map(|r| &r.values)]
            .into_iter()
            .flatten()
        {
            values.len().hash(&mut hasher);
            for v in values {
                v.to_bits().hash(&mut hasher);
            }
        }
        hasher.finish()
    }

    /// Solves in `precision` from now on: the factor is copied again, or,
    /// when the choice between `A` and the relaxed matrix changes, the other
    /// is analysed and factorised.
    ///
    /// # Errors
    /// As [`System::new`]; the solver then stays as it was.
    pub(crate) fn set_precision(&mut self, precision: Precision) -> Result<(), SolverError> {
        let before = self.precision;
        if precision == before {
            return Ok(());
        }
        self.settle_update()?;
        self.precision = precision;
        self.drop_contacts();
        if self.wants_relaxed() != self.on_relaxed {
            let result = self.factorise();
            if result.is_err() {
                self.precision = before;
            }
            self.fingerprint = self.hash_matrix();
            result
        } else {
            self.extract();
            Ok(())
        }
    }

    /// Factorises the matrix `factor` is of with its current values.
    fn refactor_numeric(&mut self) -> Result<(), SolverError> {
        let (_, values) = factored(
            &self.relaxed,
            self.on_relaxed,
            (&self.pattern, &self.values),
        );
        self.factor.as_mut().map_or(Ok(()), |f| f.refactor(values))
    }

    /// Whether the factor should be of the relaxed matrix: its bound is
    /// certified ([`RELAXED_BOUND`]) with the current weights and the
    /// precision asks for it ([`Precision::Relaxed`], or [`Precision::Auto`]
    /// when its factor has [`RELAXED_FROM_ENTRIES`](super::mixed::RELAXED_FROM_ENTRIES)
    /// entries; a factor not analysed yet might have).
    fn wants_relaxed(&self) -> bool {
        self.relaxed.as_ref().is_some_and(|r| {
            r.bound <= RELAXED_BOUND
                && self.precision.relaxes()
                && r.analysed
                    .is_none_or(|(len, supernodal)| supernodal && self.precision.relaxes_at(len))
        })
    }

    /// Analyses (or takes the spare analysis of) and factorises the relaxed
    /// matrix when the solver wants it ([`System::wants_relaxed`], after
    /// analysing it), else `A`; then copies the factor, and keeps the
    /// previous factor's analysis as the spare when it was of the other
    /// matrix. The contacts' systems, made from the previous factor, are
    /// dropped. On error the factor stays as it was.
    fn factorise(&mut self) -> Result<(), SolverError> {
        if self.free.is_empty() {
            return Ok(());
        }
        debug_assert!(self.update.is_none(), "an update of the factor replaced");
        let mut relaxed = self.wants_relaxed();
        let mut factor = self.analysed(relaxed)?;
        if relaxed && let Some(r) = &mut self.relaxed {
            r.analysed = Some((factor.len_val(), factor.is_supernodal()));
            if !self.wants_relaxed() {
                // Analysed, it turned out too small.
                self.spare = Some((true, factor.analysis()));
                relaxed = false;
                factor = self.analysed(false)?;
            }
        }
        let (_, values) = factored(&self.relaxed, relaxed, (&self.pattern, &self.values));
        let t = Instant::now();
        factor.refactor(values)?;
        if let Some(old) = self.factor.replace(factor)
            && self.on_relaxed != relaxed
        {
            self.spare = Some((self.on_relaxed, old.analysis()));
        }
        self.on_relaxed = relaxed;
        (self.contact, self.sticking) = (None, None);
        self.stick = Stick::None;
        self.extract();
        self.stats.factor_ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(())
    }

    /// An analysed factor of the relaxed matrix or of `A`, from the
    /// factor's or the spare analysis if either is of that matrix.
    fn analysed(&self, relaxed: bool) -> Result<SparseCholesky, SolverError> {
        let (pattern, _) = factored(&self.relaxed, relaxed, (&self.pattern, &self.values));
        let kept = match (&self.factor, &self.spare) {
            (Some(factor), _) if self.on_relaxed == relaxed => Some(factor.analysis()),
            (_, Some((of, symbolic))) if *of == relaxed => Some(Arc::clone(symbolic)),
            _ => None,
        };
        match kept {
            Some(symbolic) => SparseCholesky::with_analysis(pattern, symbolic),
            None => SparseCholesky::analysed(pattern),
        }
    }

    /// Copies the factor into the kernel of the precision asked for.
    fn extract(&mut self) {
        debug_assert!(self.update.is_none(), "the factor is of A's values");
        let (_, values) = factored(
            &self.relaxed,
            self.on_relaxed,
            (&self.pattern, &self.values),
        );
        let Some(factor) = &mut self.factor else {
            return;
        };
        if !factor.holds_values() {
            // Released after a single-precision copy; these values were
            // factorised then, so they factorise again.
            factor
                .refactor(values)
                .expect("the same values factorised before");
        }
        let mixed = fill_kernel(
            factor,
            (&self.pattern, &self.values),
            (self.precision, self.on_relaxed, false),
            &mut self.kernel,
        );
        self.rows
            .set(self.kernel.perm(), &self.free, self.index.len());
        self.stats.mixed_precision = mixed;
        self.stats.relaxed = self.on_relaxed;
        self.stats.split_solve = matches!(&self.kernel, Kernel::Mixed(f) if f.splits());
        self.stats.factor_nnz = self.kernel.nnz();
    }

    /// Pins the y coordinate of each vertex of `pins` (vertex, weight; by
    /// vertex, free vertices only), and x and z of each of `sticking` (a
    /// subset of `pins`, with the same weights), to the right-hand side with
    /// that weight on `A`'s diagonal, from now until the pins change:
    /// [`System::solve`] then solves y with `A + Σ_pins w eᵢeᵢᵀ` and x and z
    /// with `A + Σ_sticking w eᵢeᵢᵀ` (one system for all three when every
    /// contact sticks, `A` when none does). No pins solve every coordinate
    /// with `A`. Each change of a set of pins is a numeric factorisation of
    /// its system (the pattern is that of `A`'s factor, or the relaxed
    /// matrix's when that is factorised in its place, correcting against
    /// `A` plus the pins).
    ///
    /// # Errors
    /// [`SolverError::OutOfMemory`] if a system made for the first time would
    /// not fit in the free memory; [`SolverError::Factorization`] if a system
    /// cannot be factorised.
    pub(crate) fn set_contacts(
        &mut self,
        pins: &[(u32, f64)],
        sticking: &[(u32, f64)],
    ) -> Result<(), SolverError> {
        if pins.is_empty() {
            self.drop_contacts();
            return Ok(());
        }
        let Some(factor) = &self.factor else {
            return Ok(());
        };
        let (pattern, values) = factored(
            &self.relaxed,
            self.on_relaxed,
            (&self.pattern, &self.values),
        );
        let base = PinBase {
            factor,
            values,
            pattern,
            exact: self.on_relaxed.then_some((&self.pattern, &self.values[..])),
            index: &self.index,
            precision: self.precision,
        };
        debug_assert!(
            (sticking.iter()).all(|p| pins.binary_search_by_key(&p.0, |q| q.0).is_ok()),
            "sticking pins are pins"
        );
        self.stick = Stick::None;
        self.stats.count(base.pin(&mut self.contact, pins)?);
        self.solved.resize(self.index.len(), Vec3::zeros());
        if sticking.len() == pins.len() {
            self.stick = Stick::All;
        } else if !sticking.is_empty() {
            self.stats.count(base.pin(&mut self.sticking, sticking)?);
            self.stick = Stick::Some;
        }
        Ok(())
    }

    /// Solves every coordinate with `A` again (until [`System::set_contacts`]
    /// pins vertices), keeping the contact systems' buffers.
    pub(crate) fn drop_contacts(&mut self) {
        for c in [&mut self.contact, &mut self.sticking]
            .into_iter()
            .flatten()
        {
            c.pins.clear();
        }
        self.stick = Stick::None;
    }

    /// Assembles `A`, and the relaxed matrix and its bound when there is
    /// one, with the weights, masses and substep `h`.
    fn assemble(&mut self, model: &Model, h: f64) {
        let (index, free) = (&self.index, &self.free);
        assemble(
            &self.pattern,
            index,
            free,
            (model, h),
            true,
            &mut self.values,
        );
        if let Some(r) = &mut self.relaxed {
            assemble(&r.pattern, index, free, (model, h), false, &mut r.values);
            r.bound = relax::bound(model, r.load);
        }
    }

    /// Whether vertex `v` is an unknown (not hard-pinned).
    #[inline]
    pub(crate) fn is_free(&self, v: usize) -> bool {
        self.index[v] != PINNED
    }

    /// `A` over the unknowns as a full symmetric matrix.
    pub(crate) fn matrix(&self) -> nalgebra_sparse::CscMatrix<f64> {
        let p = &self.pattern;
        let mut coo = nalgebra_sparse::CooMatrix::new(p.n, p.n);
        for c in 0..p.n {
            for k in p.col_ptr[c]..p.col_ptr[c + 1] {
                let r = p.row_idx[k];
                coo.push(r, c, self.values[k]);
                if r != c {
                    coo.push(c, r, self.values[k]);
                }
            }
        }
        nalgebra_sparse::CscMatrix::from(&coo)
    }

    /// Size and cost of the factorisation.
    pub(crate) fn stats(&self) -> FactorStats {
        self.stats
    }

    /// Moves the pinned ends of constraints to the right-hand side: the
    /// free row loses `A_fp x_p` (a spring's `A_fp = −w`, so it gains
    /// `w x_p`), with the weights of `model`.
    pub(crate) fn add_pinned_coupling(&self, model: &Model, x: &[Vec3], constant: &mut [Vec3]) {
        for c in &self.coupling {
            let entry = c.kind.weight(model) * c.coefficient;
            constant[c.free as usize] -= x[c.pinned as usize] * entry;
        }
    }

    /// Solves `A x_f = rhs_f` and writes the free rows of `x`, whose free
    /// rows hold a guess on entry (the mixed-precision solve corrects it; the
    /// closer, the more accurate; with the relaxed matrix's factor the
    /// correction is one step towards the solution, see [`super::relax`]).
    /// With `parallel`, a mixed-precision solve whose factor splits
    /// ([`MixedFactor`]) and its residual run on two threads.
    ///
    /// With ground contacts ([`System::set_contacts`]) the y coordinate is
    /// solved with their system (the right-hand side then holds the pins'
    /// `w h` in y), and x and z with the sticking contacts' (their `w x₀` in
    /// x and z).
    pub(crate) fn solve(&mut self, rhs: &[Vec3], x: &mut [Vec3], parallel: bool) {
        let rows = &self.rows;
        let contact = self.contact.as_mut().filter(|c| !c.pins.is_empty());
        let update = self.update.as_ref();
        let kernel = &mut self.kernel;
        // (The contact systems are factorisations of the values themselves.)
        let mut solve_a = |x: &mut [Vec3]| match update {
            Some(u) => {
                u.to_factored(x);
                kernel.solve(rhs, x, rows, parallel);
                u.correct(x);
            }
            None => kernel.solve(rhs, x, rows, parallel),
        };
        match contact {
            None => solve_a(x),
            Some(c) if self.stick == Stick::All => c.kernel.solve(rhs, x, rows, parallel),
            Some(c) => {
                // The previous iterate is the y solve's guess.
                self.solved.copy_from_slice(x);
                match self.sticking.as_mut().filter(|_| self.stick == Stick::Some) {
                    Some(s) => s.kernel.solve(rhs, x, rows, parallel),
                    None => solve_a(x),
                }
                c.kernel.solve(rhs, &mut self.solved, rows, parallel);
                for &v in &self.free {
                    x[v as usize].y = self.solved[v as usize].y;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Scene;
    use crate::solver::RELAXED_FROM_ENTRIES;

    /// A right-hand side with every kind of component: growing, periodic and
    /// decaying.
    fn sample_rhs(m: usize) -> Vec<Vec3> {
        (0..m)
            .map(|i| Vec3::new(i as f64, (i * i % 7) as f64, 1.0 / (1.0 + i as f64)))
            .collect()
    }

    /// The largest coordinate of `x − reference` over the largest of
    /// `reference`.
    fn relative_apart(x: &[Vec3], reference: &[Vec3]) -> f64 {
        let apart = (x.iter().zip(reference))
            .map(|(a, b)| (a - b).amax())
            .fold(0.0, f64::max);
        apart / reference.iter().map(|v| v.amax()).fold(0.0, f64::max)
    }

    /// The fused solve (both kernels, with the permutation and the copy of
    /// `L`) must agree with faer's own solve of the same factorisation.
    #[test]
    fn fused_solve_matches_faer() {
        // 9 × 9: padded 4-lane rows; 92 × 92 (8,462 unknowns): 3-lane rows.
        for n in [9, 92] {
            check_fused_solve(n);
        }
    }

    fn check_fused_solve(n: usize) {
        let model = Scene::cloth(n).model();
        let mut system = System::new(&model, 1.0 / 60.0).unwrap();
        system.set_precision(Precision::Double).unwrap();
        let Kernel::Double(fused) = &system.kernel else {
            panic!("double precision asked for")
        };
        assert_eq!(fused.wide, n * n - 2 <= WIDE_ROWS);
        let m = model.vertex_count();
        let rhs = sample_rhs(m);
        let mut x = vec![Vec3::zeros(); m];
        system.solve(&rhs, &mut x, false);

        let nf = system.free.len();
        let mut b = vec![0.0; 3 * nf];
        for (k, &v) in system.free.iter().enumerate() {
            for c in 0..3 {
                b[c * nf + k] = rhs[v as usize][c];
            }
        }
        system.factor.as_mut().unwrap().solve_in_place(&mut b, 3);
        for (k, &v) in system.free.iter().enumerate() {
            let expected = Vec3::new(b[k], b[nf + k], b[2 * nf + k]);
            assert!(
                (x[v as usize] - expected).norm() <= 1e-12 * expected.norm().max(1.0),
                "row {k}"
            );
        }

        // Portable and AVX2 kernels, 3 and 4 lanes, agree.
        let Kernel::Double(fused) = &system.kernel else {
            unreachable!()
        };
        let l = LowerFactor {
            col_ptr: &fused.l.col_ptr,
            row_idx: &fused.l.row_idx,
            values: &fused.l.values,
            inv_diag: &fused.l.inv_diag,
        };
        let mut narrow: Vec<[f64; 3]> = (0..nf).map(|k| [k as f64, 1.0, -2.0]).collect();
        let mut wide: Vec<[f64; 4]> = narrow.iter().map(|r| [r[0], r[1], r[2], 0.0]).collect();
        let mut portable = narrow.clone();
        solve_kernel(l, &mut portable);
        run(l, &mut narrow, fused.avx2);
        run(l, &mut wide, fused.avx2);
        for ((p, n), w) in portable.iter().zip(&narrow).zip(&wide) {
            for c in 0..3 {
                assert!((p[c] - n[c]).abs() <= 1e-12 * p[c].abs().max(1.0));
                assert!((p[c] - w[c]).abs() <= 1e-12 * p[c].abs().max(1.0));
            }
        }
    }

    /// The mixed-precision solve lands within round-off of single precision
    /// of the double-precision solve from no guess, and corrects a guess to
    /// within a far smaller fraction of its error, on a cloth, on a tet body
    /// (large supernodes) and on a cloth with absurdly stiff springs (an
    /// ill-conditioned `A`: the errors measured are ~1e-7 in all three).
    /// Soft pins added to a large body (as a grab adds one) change two
    /// diagonal entries of `A`: solved through an update of the factor,
    /// not a refactorisation, as a new system of the pinned body solves;
    /// removed again, the first factor solves as before; a weight change
    /// refactorises; a precision change takes the values in first.
    #[test]
    fn changed_diagonal_entries_are_solved_by_an_update() {
        use crate::model::Attachment;
        let model = Scene::tet(18).model();
        let h = 1.0 / 60.0;
        let mut system = System::new(&model, h).unwrap();
        assert!(system.stats().mixed_precision);
        assert!(system.kernel.nnz() >= LOW_RANK_FROM_ENTRIES);
        let m = model.vertex_count();
        let rhs = sample_rhs(m);
        // Refined until the single-precision factor's error is gone.
        let solved = |system: &mut System| {
            let mut x = vec![Vec3::zeros(); m];
            for _ in 0..4 {
                system.solve(&rhs, &mut x, false);
            }
            x
        };
        let before = solved(&mut system);
        let free: Vec<u32> = (0..m as u32)
            .filter(|&v| system.is_free(v as usize))
            .collect();
        let mut pinned = model.clone();
        for v in [free[7], free[free.len() / 2]] {
            pinned.pins.soft.push(Attachment {
                vertex: v,
                target: model.rest[v as usize],
            });
        }
        let refactors = system.stats().refactors;
        system.refactor(&pinned, h).unwrap();
        assert_eq!(system.stats().refactors, refactors);
        assert_eq!(system.stats().updated_rows, 2);
        let mut fresh = System::new(&pinned, h).unwrap();
        assert_eq!(system.fingerprint(), fresh.fingerprint());
        let expected = solved(&mut fresh);
        let apart = relative_apart(&solved(&mut system), &expected);
        assert!(apart <= 1e-9, "{apart:e}");
        assert!(relative_apart(&expected, &before) > 1e-3, "the pins matter");

        // Removed: the first factor, bitwise.
        system.refactor(&model, h).unwrap();
        assert_eq!(system.stats().updated_rows, 0);
        assert_eq!(solved(&mut system), before);

        // A weight change with the pins refactorises, the update gone.
        system.refactor(&pinned, h).unwrap();
        let mut stiffer = pinned.clone();
        stiffer.weights.strain *= 2.0;
        system.refactor(&stiffer, h).unwrap();
        assert_eq!(system.stats().refactors, refactors + 1);
        assert_eq!(system.stats().updated_rows, 0);
        let expected = solved(&mut System::new(&stiffer, h).unwrap());
        let apart = relative_apart(&solved(&mut system), &expected);
        assert!(apart <= 1e-9, "{apart:e}");

        // A precision change under an update solves with the values.
        system.refactor(&model, h).unwrap();
        system.refactor(&pinned, h).unwrap();
        assert!(system.update.is_some());
        let mut strained = fresh;
        strained.refactor(&pinned, h).unwrap();
        system.set_precision(Precision::Double).unwrap();
        assert!(system.update.is_none());
        assert_eq!(system.stats().updated_rows, 0);
        let apart = relative_apart(&solved(&mut system), &solved(&mut strained));
        assert!(apart <= 1e-9, "{apart:e}");
    }

    #[test]
    fn mixed_solve_corrects_a_guess() {
        let cloth = Scene::cloth(40).model();
        let body = Scene::tet(9).model();
        let mut stiff = cloth.clone();
        stiff.weights.structural = 1e10;
        stiff.weights.shear = 1e10;
        stiff.weights.bending = 1e8;
        for model in [cloth, body, stiff] {
            let mut system = System::new(&model, 1.0 / 60.0).unwrap();
            system.set_precision(Precision::Double).unwrap();
            let m = model.vertex_count();
            let rhs = sample_rhs(m);
            let mut exact = vec![Vec3::zeros(); m];
            system.solve(&rhs, &mut exact, false);
            system.set_precision(Precision::Mixed).unwrap();
            assert!(matches!(system.kernel, Kernel::Mixed(_)));
            assert!(system.stats().mixed_precision);
            let scale = exact.iter().map(|v| v.amax()).fold(0.0, f64::max);
            let error = |x: &[Vec3]| {
                x.iter()
                    .zip(&exact)
                    .map(|(a, b)| (a - b).amax())
                    .fold(0.0, f64::max)
            };

            let mut x = vec![Vec3::zeros(); m];
            system.solve(&rhs, &mut x, false);
            let cold = error(&x) / scale;
            assert!(cold < 1e-5, "error without a guess: {cold:e}");

            let offset = |i: usize| 1e-3 * Vec3::new((i % 5) as f64, -1.0, (i % 3) as f64);
            let guess: Vec<Vec3> = exact
                .iter()
                .enumerate()
                .map(|(i, e)| if system.is_free(i) { e + offset(i) } else { *e })
                .collect();
            let mut x = guess.clone();
            system.solve(&rhs, &mut x, false);
            let warm = error(&x) / 4e-3;
            assert!(warm < 1e-5, "error left of the guess's: {warm:e}");

            // The portable kernels agree with the AVX2 ones (four rows and
            // four columns at a time, with the rest one at a time).
            let Kernel::Mixed(mixed) = &mut system.kernel else {
                unreachable!()
            };
            let blocked = x.clone();
            let mut x = guess.clone();
            mixed.use_portable();
            system.solve(&rhs, &mut x, false);
            assert!(relative_apart(&x, &blocked) <= 1e-12);

            // The double-precision factor was released for the single copy;
            // going back factorises it again.
            system.set_precision(Precision::Double).unwrap();
            let mut again = vec![Vec3::zeros(); m];
            system.solve(&rhs, &mut again, false);
            assert!(error(&again) <= 1e-12 * scale);
        }
    }

    /// `eᵀ K e` summed over the coordinates, `K` the lower triangle `values`
    /// on `pattern` over the unknowns `free` (rows of `e` by vertex).
    fn quadratic(pattern: &LowerPattern, values: &[f64], free: &[u32], e: &[Vec3]) -> f64 {
        pattern
            .entries()
            .map(|(r, c, k)| {
                let product = e[free[r] as usize].dot(&e[free[c] as usize]) * values[k];
                if r == c { product } else { 2.0 * product }
            })
            .sum()
    }

    /// One relaxed solve of `model`'s system leaves at most its certified
    /// `ρ` (`rho` if given, below 1 anyway) of the guess's error in the `P`
    /// norm, and visibly more than round-off; repeated solves reach `A`'s
    /// solution.
    fn assert_certified(model: &Model, h: f64, rho: Option<f64>) {
        let mut system = System::new(model, h).unwrap();
        assert!(!system.stats().relaxed, "a small cloth solves with A");
        let m = model.vertex_count();
        let rhs = sample_rhs(m);
        let mut exact = vec![Vec3::zeros(); m];
        system.solve(&rhs, &mut exact, false);
        system.set_precision(Precision::Relaxed).unwrap();
        assert!(system.stats().relaxed && system.stats().mixed_precision);
        let relaxed = system.relaxed.as_ref().unwrap();
        assert!(relaxed.pattern.nnz() < system.pattern.nnz());
        let bound = relax::bound(model, relaxed.load);
        assert!(bound < 1.0, "{bound}");
        if let Some(rho) = rho {
            assert!((bound - rho).abs() < 1e-12, "{bound} against {rho}");
        }
        let rho = bound;
        let p_norm = |x: &[Vec3]| {
            let e: Vec<Vec3> = x.iter().zip(&exact).map(|(a, b)| a - b).collect();
            quadratic(&relaxed.pattern, &relaxed.values, &system.free, &e).sqrt()
        };
        let guess = vec![Vec3::zeros(); m];
        let mut x = guess.clone();
        let mut solver = system.clone();
        solver.solve(&rhs, &mut x, false);
        let ratio = p_norm(&x) / p_norm(&guess);
        assert!(ratio <= rho + 1e-6 && ratio > 1e-3, "error ratio {ratio}");
        for _ in 0..12 {
            solver.solve(&rhs, &mut x, false);
        }
        let apart = relative_apart(&x, &exact);
        assert!(apart <= 1e-9, "{apart:e} from A's solution");
    }

    /// The relaxed matrix `P` (`A` without its bending springs) is a
    /// certified preconditioner (`assert_certified`) on the default cloth
    /// (`ρ = 0.08`) and on a mesh of quads. Automatic precision relaxes a
    /// large cloth, not a small one; a refactorisation to bending past the
    /// bound factorises `A` again, and one back below it the relaxed matrix,
    /// each analysed once.
    #[test]
    fn the_relaxed_solve_is_a_certified_correction() {
        let h = 1.0 / 60.0;
        let model = Scene::cloth(20).model();
        assert_certified(&model, h, Some(0.08));
        // A quad mesh's bending springs route over a side and a diagonal.
        assert_certified(&relax::tests::quad_cloth(20), h, None);

        let mut system = System::new(&model, h).unwrap();
        system.set_precision(Precision::Relaxed).unwrap();
        let analysis = |s: &System| s.factor.as_ref().unwrap().analysis();
        let relaxed = analysis(&system);
        let mut stiff = model.clone();
        stiff.weights.bending = stiff.weights.structural;
        system.refactor(&stiff, h).unwrap();
        assert!(!system.stats().relaxed, "bending as stiff as stretching");
        let exact = analysis(&system);
        system.refactor(&model, h).unwrap();
        assert!(system.stats().relaxed, "the default bending again");
        // Each matrix is analysed once: switching back takes the spare
        // analysis, and solves as a fresh system does.
        assert!(Arc::ptr_eq(&analysis(&system), &relaxed));
        system.refactor(&stiff, h).unwrap();
        assert!(Arc::ptr_eq(&analysis(&system), &exact));
        let rhs = sample_rhs(model.vertex_count());
        let mut fresh = System::new(&stiff, h).unwrap();
        fresh.set_precision(Precision::Relaxed).unwrap();
        let (mut x, mut y) = (
            vec![Vec3::zeros(); rhs.len()],
            vec![Vec3::zeros(); rhs.len()],
        );
        system.solve(&rhs, &mut x, false);
        fresh.solve(&rhs, &mut y, false);
        let apart = relative_apart(&x, &y);
        assert!(apart <= 1e-12, "{apart:e} from a fresh system");
        // A small cloth's relaxed factor, analysed when the bending weight
        // first falls below the bound, is too small to use: A stays, and
        // is not analysed again.
        let mut small = System::new(&stiff, h).unwrap();
        let exact = analysis(&small);
        small.refactor(&model, h).unwrap();
        assert!(!small.stats().relaxed && small.relaxed.as_ref().unwrap().analysed.is_some());
        assert!(Arc::ptr_eq(&analysis(&small), &exact));

        let big = Scene::cloth(150).model();
        let system = System::new(&big, h).unwrap();
        let stats = system.stats();
        assert!(stats.relaxed && stats.factor_nnz >= RELAXED_FROM_ENTRIES);
        let exact = SparseCholesky::analysed(&system.pattern).unwrap().len_val();
        assert!(
            stats.factor_nnz < exact * 2 / 3,
            "{stats:?} against {exact}"
        );
    }

    /// Contacts that change a little from one step to the next (vertices
    /// landing, lifting off, a weight changing) are taken into the contact
    /// system's factor by rank-one updates, which then solves as a new
    /// system of the new pins does: in double precision (no refinement) to
    /// round-off, in single precision (of `A` or of the relaxed matrix) one
    /// solve from zero to its rounding. Pins after none refactorise, as
    /// does a factor shared with a clone.
    #[test]
    fn changed_contacts_update_the_factor_in_place() {
        let h = 1.0 / 60.0;
        for (scene, precision, tolerance) in [
            (Scene::tet(10), Precision::Double, 1e-11),
            (Scene::tet(16), Precision::Mixed, 1e-5),
            // Factorising `A` without its bending springs, corrected against
            // `A` plus the pins.
            (Scene::cloth(12), Precision::Relaxed, 1e-5),
        ] {
            let model = scene.model();
            let m = model.vertex_count();
            // Of one scale in every coordinate (the pins act on y).
            let rhs: Vec<Vec3> = (0..m)
                .map(|i| Vec3::new(1.0, 1.0 + (i % 3) as f64, 0.5))
                .collect();
            let new_system = |pins: &[(u32, f64)]| {
                let mut system = System::new(&model, h).unwrap();
                system.set_precision(precision).unwrap();
                system.set_contacts(pins, &[]).unwrap();
                system
            };
            let once = |system: &mut System| {
                let mut x = vec![Vec3::zeros(); m];
                system.solve(&rhs, &mut x, false);
                x
            };
            // One solve lands within the tolerance of `expected`.
            let solves_as = |system: &mut System, expected: &[Vec3], when: &str| {
                let apart = relative_apart(&once(system), expected);
                assert!(apart <= tolerance, "{precision:?}, {when}: {apart:e}");
            };
            let lowest = model.rest.iter().map(|p| p.y).fold(f64::INFINITY, f64::min);
            let weight =
                |v: u32| crate::solver::CONTACT_STIFFNESS * model.masses[v as usize] / (h * h);
            let mut system = new_system(&[]);
            let bottom: Vec<u32> = (system.free.iter().copied())
                .filter(|&v| model.rest[v as usize].y <= lowest + 1e-9)
                .collect();
            let first: Vec<(u32, f64)> =
                bottom.iter().step_by(2).map(|&v| (v, weight(v))).collect();
            // Two lift off, three land, one weighs twice as much.
            let mut second = first.clone();
            second.remove(4);
            second.remove(1);
            second[2].1 *= 2.0;
            second.extend(
                bottom
                    .iter()
                    .skip(1)
                    .step_by(2)
                    .take(3)
                    .map(|&v| (v, weight(v))),
            );
            second.sort_by_key(|p| p.0);
            system.set_contacts(&first, &[]).unwrap();
            let before = once(&mut system);
            system.set_contacts(&second, &[]).unwrap();
            let stats = system.stats();
            assert_eq!(stats.precision(), precision);
            assert_eq!(
                (stats.contact_refactors, stats.contact_updated_rows),
                (1, 6)
            );
            let expected = once(&mut new_system(&second));
            solves_as(&mut system, &expected, "updated");
            // At the vertices that landed, the pins hold y near 0.
            let landed = second.iter().filter(|p| !first.iter().any(|q| q.0 == p.0));
            let scale = expected.iter().map(|x| x.amax()).fold(0.0, f64::max);
            let change = landed
                .map(|p| (before[p.0 as usize].y - expected[p.0 as usize].y).abs() / scale)
                .fold(0.0, f64::max);
            assert!(change > 1e3 * tolerance, "the change matters: {change:e}");

            // Back to the first pins, by update again.
            system.set_contacts(&first, &[]).unwrap();
            assert_eq!(system.stats().contact_updated_rows, 12);
            solves_as(&mut system, &before, "back");

            // Pins after none: refactorised.
            system.set_contacts(&[], &[]).unwrap();
            system.set_contacts(&second, &[]).unwrap();
            assert_eq!(system.stats().contact_refactors, 2);
            // A clone solves with the factor it was cloned with.
            let mut clone = system.clone();
            system.set_contacts(&first, &[]).unwrap();
            assert_eq!(system.stats().contact_refactors, 3);
            solves_as(&mut clone, &expected, "clone");
            solves_as(&mut system, &before, "after the clone");

            // A downdate that would leave the matrix indefinite fails;
            // refactorised (as `pin` then does), the next update is exact.
            drop(clone);
            let c = system.contact.as_mut().unwrap();
            assert!(!c.factor.update_diagonal(&mut [(0, -1e30)], &mut c.updown));
            c.factor.refactor(&c.values).unwrap();
            system.set_contacts(&second, &[]).unwrap();
            assert_eq!(system.stats().contact_refactors, 3);
            solves_as(&mut system, &expected, "after a failure");

            // One that fails past its first column, once `w` has spread up
            // the tree: the first pivot stays positive (`|d| < A_uu`, `u` the
            // unknown eliminated first), the matrix not (`|d| > 1/(A⁻¹)_uu`).
            // What it left in `w` must not reach the next update.
            let (pattern, _) = factored(
                &system.relaxed,
                system.on_relaxed,
                (&system.pattern, &system.values),
            );
            let c = system.contact.as_mut().unwrap();
            let u = c.factor.symbolic.perm().map_or(0, |p| p.arrays().0[0]);
            let diagonal = c.values[pattern.slot(u, u)];
            let mut column = vec![0.0; pattern.n];
            column[u] = 1.0;
            c.factor.solve_in_place(&mut column, 1);
            let d = -0.5 * (diagonal + 1.0 / column[u]);
            let updown = c.updown.as_mut().unwrap();
            updown.clear_touched();
            assert!(!c.factor.update_diagonal(&mut [(u, d)], &mut c.updown));
            let walked = c.updown.as_ref().unwrap().touched().iter().filter(|&&t| t);
            assert!(
                walked.count() >= 2,
                "{precision:?}: failed in its first supernode"
            );
            c.factor.refactor(&c.values).unwrap();
            system.set_contacts(&first, &[]).unwrap();
            assert_eq!(system.stats().contact_refactors, 3);
            solves_as(&mut system, &before, "after a failure up the tree");
        }
    }

    /// With ground contacts every coordinate solves with `A` plus its own
    /// pins: y with all of them, x and z with the sticking ones (none, some
    /// or all of them), in double, mixed and relaxed precision (which
    /// corrects against `A` plus the pins), after a change of precision and
    /// going back to an earlier set.
    #[test]
    fn contacts_solve_each_coordinate_with_its_pins() {
        let model = Scene::cloth(12).model();
        let mut system = System::new(&model, 1.0 / 60.0).unwrap();
        let m = model.vertex_count();
        let rhs = sample_rhs(m);
        let pins: Vec<(u32, f64)> = (system.free.iter().step_by(5))
            .map(|&v| (v, 1e4 + f64::from(v)))
            .collect();
        let some = vec![pins[1], pins[4], pins[6]];
        let scale = rhs.iter().map(|r| r.amax()).fold(0.0, f64::max);
        for precision in [
            Precision::Double,
            Precision::Mixed,
            Precision::Relaxed,
            Precision::Double,
        ] {
            system.set_precision(precision).unwrap();
            assert_eq!(system.stats().relaxed, precision == Precision::Relaxed);
            for sticking in [&[][..], &some, &pins, &some] {
                system.set_contacts(&pins, sticking).unwrap();
                let mut x = vec![Vec3::zeros(); m];
                // The mixed solve corrects its guess, the relaxed one by a
                // factor of at least 1 / 0.08 per solve.
                let solves = if precision == Precision::Relaxed {
                    12
                } else {
                    2
                };
                for _ in 0..solves {
                    system.solve(&rhs, &mut x, false);
                }
                let free = &system.free;
                let mut residual: Vec<Vec3> = free.iter().map(|&v| rhs[v as usize]).collect();
                system.pattern.entries().for_each(|(r, c, k)| {
                    let v = system.values[k];
                    residual[r] -= x[free[c] as usize] * v;
                    if r != c {
                        residual[c] -= x[free[r] as usize] * v;
                    }
                });
                for (k, &v) in free.iter().enumerate() {
                    let x = x[v as usize];
                    let find =
                        |set: &[(u32, f64)]| set.iter().find(|p| p.0 == v).map_or(0.0, |p| p.1);
                    let (w_y, w_xz) = (find(&pins), find(sticking));
                    residual[k] -= Vec3::new(w_xz * x.x, w_y * x.y, w_xz * x.z);
                }
                let worst = residual.iter().map(|r| r.amax()).fold(0.0, f64::max);
                assert!(
                    worst < 1e-9 * scale,
                    "{precision:?}, {} of {} sticking: residual {worst:e}",
                    sticking.len(),
                    pins.len()
                );
            }
        }
    }

    /// A volume of a few thousand unknowns is ordered by nested dissection
    /// too: on the 12³ tet cube (1,584 unknowns) its factor is a fifth
    /// smaller than AMD's.
    #[test]
    fn mid_size_bodies_are_ordered_by_nested_dissection() {
        let system = System::new(&Scene::tet(12).model(), 1.0 / 60.0).unwrap();
        assert_factor_below_amd(&system);
    }

    /// `system`'s factor is at least a tenth smaller than AMD's would be.
    fn assert_factor_below_amd(system: &System) {
        let amd = analyse(&system.pattern, SymmetricOrdering::Amd).unwrap();
        let chosen = system.factor.as_ref().unwrap().len_val();
        assert!(
            chosen < amd.len_val() * 9 / 10,
            "{chosen} against AMD's {}",
            amd.len_val()
        );
    }

    /// From `NESTED_DISSECTION_FROM` unknowns a 3D body is ordered by nested
    /// dissection, whose factor is smaller than AMD's, and the solve with it
    /// (mixed precision, automatic at this size) satisfies `A x = b`, on one
    /// thread and split over two at the top separator.
    #[test]
    fn large_bodies_are_ordered_by_nested_dissection() {
        let model = Scene::tet(28).model();
        let mut system = System::new(&model, 1.0 / 60.0).unwrap();
        assert!(system.free.len() >= NESTED_DISSECTION_FROM);
        assert_factor_below_amd(&system);
        assert!(system.stats().mixed_precision);
        // The top separator is wider than a panel: the solve below runs on
        // the panels it was cut into.
        let faer_supernodes = match system.factor.as_ref().unwrap().analysis().raw() {
            SymbolicCholeskyRaw::Supernodal(s) => s.n_supernodes(),
            SymbolicCholeskyRaw::Simplicial(_) => unreachable!("forced supernodal"),
        };
        let Kernel::Mixed(mixed) = &system.kernel else {
            unreachable!()
        };
        let (supernodes, widest) = mixed.supernodes();
        assert!(
            supernodes > faer_supernodes,
            "{supernodes} of {faer_supernodes}"
        );
        assert!(widest <= super::super::mixed::MAX_PANEL);

        let m = model.vertex_count();
        let rhs: Vec<Vec3> = (0..m)
            .map(|i| Vec3::new((i % 11) as f64, 1.0, -((i % 5) as f64)))
            .collect();
        let mut x = vec![Vec3::zeros(); m];
        // Two solves: the second corrects the first as the PD loop does.
        system.solve(&rhs, &mut x, false);
        system.solve(&rhs, &mut x, false);
        let mut residual: Vec<Vec3> = system.free.iter().map(|&v| rhs[v as usize]).collect();
        let free = &system.free;
        system.pattern.entries().for_each(|(r, c, k)| {
            let v = system.values[k];
            residual[r] -= x[free[c] as usize] * v;
            if r != c {
                residual[c] -= x[free[r] as usize] * v;
            }
        });
        let worst = residual.iter().map(|r| r.amax()).fold(0.0, f64::max);
        let scale = rhs.iter().map(|r| r.amax()).fold(0.0, f64::max);
        assert!(worst < 1e-9 * scale, "residual {worst:e}");

        assert!(
            system.stats().split_solve,
            "nested dissection leaves a separator"
        );
        // One solve each from no guess: nothing hides a wrong half.
        let (mut serial, mut split) = (vec![Vec3::zeros(); m], vec![Vec3::zeros(); m]);
        system.solve(&rhs, &mut serial, false);
        system.solve(&rhs, &mut split, true);
        let size = serial.iter().map(|v| v.amax()).fold(0.0, f64::max);
        let apart = serial
            .iter()
            .zip(&split)
            .map(|(a, b)| (a - b).amax())
            .fold(0.0, f64::max);
        assert!(apart <= 1e-12 * size, "{apart:e} apart, of {size:e}");
    }
}
