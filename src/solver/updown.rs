//! Changed diagonal entries of a factorised matrix taken into its supernodal
//! Cholesky factor in place, by rank-one updates and downdates (CHOLMOD's
//! "updown"; Davis & Hager 1999, in the `L Lᵀ` form of Gill, Golub, Murray
//! and Saunders 1974), instead of a numeric refactorisation.
//!
//! The ground contacts pin a different set of vertices from one step to the
//! next, a few at the rim of the contact patch changing while most stay:
//! each change adds or removes `w` on one diagonal entry of the contact
//! system's matrix. `A' = A + d eₖ eₖᵀ` changes only the columns of `L` on
//! the path from `k` to the root of the elimination tree, and each by the
//! entries it stores: a small part of `L` where a refactorisation rewrites
//! all of it.
//!
//! With `w = √|d| eₖ` and `σ = sign d`, for each column `j` of the path in
//! order: `r = √(Lⱼⱼ² + σ wⱼ²)`, `c = r / Lⱼⱼ`, `s = wⱼ / Lⱼⱼ`, `Lⱼⱼ = r`,
//! and below the diagonal `Lᵢⱼ ← (Lᵢⱼ + σ s wᵢ) / c`, `wᵢ ← c wᵢ − s Lᵢⱼ`.
//! The next column of the path is the first row below the diagonal that
//! the column stores (the elimination-tree parent): `w`'s entries stay
//! within the rows the columns store, which faer's supernodes (relaxed ones
//! with explicit zeros included) keep closed under that walk, as their own
//! factorisation's updates need.

use faer::sparse::linalg::cholesky::supernodal::SymbolicSupernodalCholesky;

/// A downdate that would leave `L` with a non-positive diagonal entry: the
/// changed matrix is not positive definite to working precision. `L` is
/// then partly changed and must be refactorised.
#[derive(Debug)]
pub(crate) struct NotPositive;

/// What rank-one updates of one supernodal factor need: the supernode of
/// each column, the cost of each column's path and a work vector.
#[derive(Clone, Debug)]
pub(crate) struct Updown {
    /// The supernode of each column.
    owner: Vec<u32>,
    /// Entries of `L` an update from each column rewrites: the column's own
    /// and its elimination-tree ancestors'.
    path_entries: Vec<u64>,
    /// `Σⱼ |Lⱼ|²`, the multiply-adds of a numeric factorisation (`|Lⱼ|` the
    /// entries of column `j`).
    factor_work: u64,
    /// `w`, zero between updates.
    work: Vec<f64>,
    /// `w` on the rows of the supernode being updated.
    local: Vec<f64>,
    /// The supernodes updates changed since [`Updown::clear_touched`].
    touched: Vec<bool>,
}

/// How many multiply-adds of a numeric factorisation (dense kernels, several
/// per cycle) take the time of rewriting one entry of `L` in an update (two
/// multiply-adds and two multiplications, each column's after its square
/// root and divisions). Measured on two contact systems (2-vCPU Intel
/// Xeon): jelly22's refactorisation, 6.3·10⁸ multiply-adds, took ~38 ms
/// and an update of ~340,000 entries 0.25–0.66 ms (ratio 12–30); the
/// spot.obj jelly's 3.0·10⁸ ~37 ms and one of ~180,000 entries 0.12–0.18 ms
/// (7–10). An update also spares the copy of all of `L` into the solve's
/// kernel (~10 ms of each refactorisation there), so the bound leans to it.
const ENTRY_COST: u64 = 8;

impl Updown {
    /// The structure of updates of a factor with the analysis `symbolic`.
    pub(crate) fn new(symbolic: &SymbolicSupernodalCholesky<usize>) -> Self {
        let n = symbolic.nrows();
        let mut owner = vec![0; n];
        let mut column_entries = vec![0u64; n];
        let mut parent = vec![usize::MAX; n];
        for s in 0..symbolic.n_supernodes() {
            let node = symbolic.supernode(s);
            let (start, pattern) = (node.start(), node.pattern());
            let end = symbolic.supernode_end()[s];
            for j in start..end {
                owner[j] = s as u32;
                column_entries[j] = (end - j + pattern.len()) as u64;
                parent[j] = if j + 1 < end {
                    j + 1
                } else {
                    pattern.first().copied().unwrap_or(usize::MAX)
                };
            }
        }
        // Parents come after their children: sum from the root down.
        let mut path_entries = column_entries.clone();
        for j in (0..n).rev() {
            if parent[j] != usize::MAX {
                path_entries[j] += path_entries[parent[j]];
            }
        }
        Self {
            owner,
            path_entries,
            factor_work: column_entries.iter().map(|c| c * c).sum(),
            work: vec![0.0; n],
            local: Vec::new(),
            touched: vec![false; symbolic.n_supernodes()],
        }
    }

    /// Which supernodes (by index) updates changed since the last
    /// [`Updown::clear_touched`]: the ones a copy of `L` copies again.
    pub(crate) fn touched(&self) -> &[bool] {
        &self.touched
    }

    /// Forgets which supernodes updates changed.
    pub(crate) fn clear_touched(&mut self) {
        self.touched.fill(false);
    }

    /// Whether updates from `rows` take less time than a refactorisation.
    pub(crate) fn pays(&self, rows: impl Iterator<Item = usize>) -> bool {
        let entries: u64 = rows.map(|k| self.path_entries[k]).sum();
        entries.saturating_mul(ENTRY_COST) < self.factor_work
    }

    /// `L Lᵀ + Σ d eₖ eₖᵀ` over `changes` (`k` a row of the permuted
    /// matrix, `d` the change of its diagonal entry) in place of `L Lᵀ`,
    /// one after the other, with `l_values` the values of a factor with the
    /// analysis `symbolic` this was made of. (Eight changes walking the tree
    /// together, each column read once for all of them, measured no faster:
    /// the steps are bound by their arithmetic, not by reading `L`.)
    ///
    /// # Errors
    /// [`NotPositive`] if a diagonal entry of the changed factor would not
    /// be positive (`l_values` then hold a partly changed factor).
    pub(crate) fn apply(
        &mut self,
        symbolic: &SymbolicSupernodalCholesky<usize>,
        l_values: &mut [f64],
        changes: &[(usize, f64)],
    ) -> Result<(), NotPositive> {
        let result =
            (changes.iter()).try_for_each(|&(k, d)| self.apply_one(symbolic, l_values, k, d));
        if result.is_err() {
            // `w` is zero between updates, whatever became of `L`.
            self.work.fill(0.0);
        }
        result
    }

    /// `L Lᵀ + d eₖ eₖᵀ` in place of `L Lᵀ` (see [`Updown::apply`]).
    fn apply_one(
        &mut self,
        symbolic: &SymbolicSupernodalCholesky<usize>,
        l_values: &mut [f64],
        k: usize,
        d: f64,
    ) -> Result<(), NotPositive> {
        let sign = d.signum();
        self.work[k] = d.abs().sqrt();
        let mut column = Some(k);
        while let Some(j) = column {
            let s = self.owner[j] as usize;
            self.touched[s] = true;
            let node = symbolic.supernode(s);
            let (start, pattern) = (node.start(), node.pattern());
            let end = symbolic.supernode_end()[s];
            let block =
                &mut l_values[symbolic.col_ptr_for_val()[s]..symbolic.col_ptr_for_val()[s + 1]];
            // `w` on the block's rows from the column's on.
            self.local.clear();
            self.local.extend_from_slice(&self.work[j..end]);
            self.local.extend(pattern.iter().map(|&r| self.work[r]));
            let rows = end - start + pattern.len();
            let step = Rotation {
                block,
                rows,
                columns: j - start..end - start,
                w: &mut self.local,
                sign,
            }
            .apply();
            self.work[j..end].fill(0.0);
            for (&r, &w) in pattern.iter().zip(&self.local[end - j..]) {
                self.work[r] = w;
            }
            step?;
            column = pattern.first().copied();
        }
        Ok(())
    }
}

/// The update's step through the columns `columns` of a supernode's block
/// (column-major, `rows` rows), with `w` on the rows from the first of
/// `columns` on.
struct Rotation<'a> {
    block: &'a mut [f64],
    rows: usize,
    columns: std::ops::Range<usize>,
    w: &'a mut [f64],
    sign: f64,
}

impl Rotation<'_> {
    /// Takes the step: in AVX2 and FMA where the CPU has them (the rows'
    /// loop ran as SSE2, ~4.5 % of a settling spot.obj jelly's samples).
    fn apply(self) -> Result<(), NotPositive> {
        #[cfg(target_arch = "x86_64")]
        if super::has_avx2_fma() {
            // SAFETY: the CPU has the features the copy is compiled for.
            return unsafe { rotate_avx2(self) };
        }
        self.run()
    }

    /// The step, inlined into each CPU's copy.
    #[inline(always)]
    fn run(self) -> Result<(), NotPositive> {
        let Self {
            block,
            rows,
            columns,
            w,
            sign,
        } = self;
        let first = columns.start;
        for c in columns {
            let wc = w[c - first];
            if wc == 0.0 {
                continue;
            }
            let col = &mut block[c * rows..(c + 1) * rows];
            let l = col[c];
            let r2 = l * l + sign * wc * wc;
            if !(r2 > 0.0 && r2.is_finite()) {
                return Err(NotPositive);
            }
            let r = r2.sqrt();
            let (cos, sin) = (r / l, wc / l);
            let (inv_cos, along) = (l / r, sign * sin);
            col[c] = r;
            for (lij, wi) in col[c + 1..].iter_mut().zip(&mut w[c + 1 - first..]) {
                let updated = (*lij + along * *wi) * inv_cos;
                *wi = cos * *wi - sin * updated;
                *lij = updated;
            }
        }
        Ok(())
    }
}

/// [`Rotation::apply`] compiled for AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rotate_avx2(rotation: Rotation<'_>) -> Result<(), NotPositive> {
    rotation.run()
}
