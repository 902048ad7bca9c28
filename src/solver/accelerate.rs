//! Acceleration of the local/global iterations: Chebyshev semi-iteration
//! (Wang 2015) and Anderson acceleration (Peng et al. 2018), both behind the
//! same energy safeguard.
//!
//! Plain PD is a fixed-point iteration `x ← G(x)` (a local then a global
//! step) that never increases the objective `g`. An accelerated iterate is a
//! combination of the last PD outputs; it may overshoot. The safeguard
//! (Peng et al. 2018, Algorithm 2) checks `g` at every accelerated iterate —
//! the local step computes it anyway — and, when it rose above the last
//! accepted value, falls back to the plain PD output `G(x_k)` and restarts
//! the acceleration. The accepted objectives therefore stay non-increasing,
//! like plain PD's; the price of a rejection is one extra local step.
//!
//! Anderson also carries secant pairs from substep to substep
//! ([`Secants`], kept in the [`State`](super::State)): the last
//! [`CARRIED_SECANTS`] made, in a ring, of which a substep contributes its
//! first ones (a substep of 2 or 3 iterations makes only 1 or 2, one more
//! when it continues the last substep's map (below), and the newest of
//! earlier substeps' fill the rest). The PD maps of consecutive substeps differ
//! little (the local step's linearisation follows the configuration, which
//! moves little in a substep), and their first secants span the directions
//! the iterations are slowest in, so the next substep's first iteration is
//! already an Anderson step in them. Along its own motion the n = 60 cloth
//! then reached 1e-3 relative error against Newton in 4 iterations instead
//! of 7 (its first iteration alone takes the error from ~0.4 to ~1e-3,
//! where a plain first step leaves ~0.15), and the n = 22 tet cube 1e-5 in
//! 5 instead of 6. The carried pairs are the window's first columns: a
//! substep's first columns replace the oldest of them as they appear (so
//! the carry needs no copy), and the columns it makes after its first
//! [`CARRIED_SECANTS`] go to [`EXTRA_COLUMNS`] more, which are not carried.
//! Their normal matrix is carried with them, so a substep starts without a
//! pass over them, and a step takes them from the state and hands them
//! back without copying (they are megabytes on a large model).
//!
//! **Why 24.** The pairs span the slow directions of the maps of recent
//! substeps; the more of them, the more of the slow error the first
//! iterations remove. Along the motion of the n = 22 tet cube run at 2
//! iterations per frame (median of five sampled steps), the error at 2
//! iterations was 1.8e-3 with 6 pairs, 1.8e-3 with 10, 1.3e-3 with 14,
//! 8.3e-4 with 22, 8.0e-4 with 24 and with 30: from 22 pairs 2 iterations reach
//! 1e-3, where 3 were needed. Carrying them costs memory (24 B per vertex
//! and pair in each state: 6.1 MB on the tet cube, 36 MB on the 250 × 250
//! cloth) and a pass over them per iteration, which grows with the pairs
//! held. The pairs are a secant
//! model of a neighbouring map, not of this one: after a weight change
//! they are older still. A carried pair that misleads is caught by the
//! safeguard like any other overshoot, and rows on vertices pinned since
//! are dropped, so a pin never moves.
//!
//! **The last evaluation continues into the next substep.** Consecutive
//! substeps' maps differ by a shift only: `G(x) = P⁻¹(c + Σ w Gᵀ p(x))`,
//! where the constant part `c` (inertia, pinned neighbours, attachment
//! targets) changes from substep to substep and the projections `p(x)`
//! depend on `x` alone, so `G'(x) = G(x) + P⁻¹(c' − c)`. One solve per
//! substep (`Accelerator::begin_substep`) moves the last substep's last
//! evaluation (`G` and `f` at the iterate its last global step started
//! from) onto the new map exactly, and the new substep's first iteration
//! adds the secant pair from there to its initial guess: a secant along
//! the step's own motion, the direction a few truncated iterations leave
//! behind, which differences within a substep never span (it is carried
//! on like them). In single precision or on the relaxed matrix a solve is
//! `x + P̃⁻¹(b − A x)` from its starting point `x`; the shift is then
//! `P̃⁻¹(c' − c)`, the same solve from 0. It is carried in the [`State`](super::State) with the pairs, and
//! made only under the matrix it was evaluated with (a fingerprint of the
//! matrices the solves use: a weight, mass, pin or time-step change, or a
//! switch to the relaxed matrix, drops it), without contact pins in either
//! substep (their solves are of another matrix), and on spring models
//! only (below). Along its own motion at 2
//! iterations per frame, the n = 60 cloth's error against Newton at 2
//! iterations fell from 9.7e-3 to 9.5e-5 (median of five sampled steps),
//! at 3 from 4.7e-4 to 5.2e-5; `softbody bench --accuracy` counts 2
//! iterations to 1e-3 instead of 3 and 4 to 1e-5 instead of 9. Measured
//! step by step from the same state, the pair gains little: what it buys
//! is a motion whose truncation errors no longer pile up (the n = 16 cloth
//! at 2 iterations drifted until its steps were 10–150 % off without it;
//! a test). The energy guard keeps it (it evaluates this map, it predicts
//! nothing); with it, a stiff-shear cloth that used to gain 136 J (shear
//! 500,000 N/m) gains none. Tet models do not continue: on the n = 22 tet
//! cube the error at 2 iterations fell only from 1.7e-3 to 1.0e-3 (15
//! steps), 1e-3 still took 3 iterations, now with one more solve, and 1e-5
//! took 6 instead of 5 (a secant across a whole step's rotations of every
//! tet is a poorer model than one within a substep).
//!
//! Chebyshev needs the spectral radius `ρ` of the PD iteration. It is
//! estimated per scene: a solver's first frames (and the first after a
//! refactorisation) run plain PD and measure how fast successive updates
//! shrink. That underestimates `ρ` (the first iterations shrink fastest),
//! so every substep without a rejection raises the estimate a little and
//! every rejection lowers it.

use super::columns::Columns;
use crate::mesh::Vec3;

/// How the local/global iterations are accelerated. Presets store it in
/// `[sim] acceleration`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Acceleration {
    /// Plain local/global iterations (Liu et al. 2013, Bouaziz et al. 2014).
    Plain,
    /// Chebyshev semi-iterative acceleration (Wang 2015) with an
    /// automatic spectral-radius estimate.
    Chebyshev,
    /// Anderson acceleration (Peng et al. 2018) over the
    /// [`CARRIED_SECANTS`] secant pairs carried from the last substeps and
    /// up to [`EXTRA_COLUMNS`] more of a long substep.
    #[default]
    Anderson,
}

impl Acceleration {
    /// Every method, plain first.
    pub const ALL: [Acceleration; 3] = [Self::Plain, Self::Chebyshev, Self::Anderson];

    /// The name used in presets and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Chebyshev => "chebyshev",
            Self::Anderson => "anderson",
        }
    }

    /// Parses [`Acceleration::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl std::fmt::Display for Acceleration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Secant pairs Anderson carries from substep to substep: the last ones
/// made, a substep's first ones (see the module docs).
pub const CARRIED_SECANTS: usize = 24;

/// Columns of Anderson's window beyond the carried pairs: those a substep
/// makes after its first [`CARRIED_SECANTS`] (which replace the carried
/// ones), in a ring of their own.
pub const EXTRA_COLUMNS: usize = 8;

/// Iterates of Anderson's least-squares problem: the carried pairs and the
/// extra columns.
pub const ANDERSON_WINDOW: usize = CARRIED_SECANTS + EXTRA_COLUMNS;

/// Chebyshev starts at this iteration of a substep; the first iterations
/// move the most and are the least linear.
const CHEBYSHEV_DELAY: usize = 2;

/// Highest spectral radius Chebyshev will use.
const RHO_MAX: f64 = 0.9995;

/// Plain frames measured before Chebyshev starts.
const ESTIMATION_FRAMES: usize = 2;

/// Iterations over which the update ratio is averaged (at most).
const RATIO_SPAN: usize = 5;

/// After a substep without a rejection, `ρ` moves this fraction of the way
/// to [`RHO_MAX`]: the early iterations of a short frame shrink faster than
/// the slowest mode, so the measured ratio starts low.
const RHO_GROWTH: f64 = 0.02;

/// The per-solver state of the chosen acceleration: history buffers,
/// allocated once per solver, and the spectral-radius estimate.
#[derive(Clone)]
pub(crate) struct Accelerator {
    method: Acceleration,
    /// Accelerated iterations since the last (re)start.
    count: usize,
    /// Chebyshev: `x_{k−1}` and the last weight `ω_k`.
    older: Vec<Vec3>,
    omega: f64,
    /// Chebyshev: the estimated spectral radius (`None` until measured) and
    /// the plain frames measured so far with their update norms.
    rho: Option<f64>,
    estimate: Estimate,
    /// Anderson's window: the carried pairs (`carry`'s slots
    /// `0..carried`, window columns `0..carried`), which this substep's
    /// first columns replace as they appear, oldest first, and the extra
    /// columns it makes after those (`extra`'s slots `0..extras`, window
    /// columns from [`CARRIED_SECANTS`] on), both `(ΔG, ΔF)` in single
    /// precision (columns.rs); the normal
    /// matrix `ΔFᵀΔF` over the window's columns; whether the last `G(x)`
    /// and residual `f = G(x) − x` (in `carry.last`) belong to this
    /// substep's map.
    carried: usize,
    extras: usize,
    /// (Allocated when a substep first makes more than
    /// [`CARRIED_SECANTS`] columns: 2 MB on the n = 22 tet cube that
    /// frames of a few iterations never use.)
    extra: Columns<EXTRA_COLUMNS>,
    /// The model's vertices.
    vertices: usize,
    normal: [[f64; ANDERSON_WINDOW]; ANDERSON_WINDOW],
    has_last: bool,
    /// Anderson: the pairs and the last evaluation carried into the next
    /// substep: a state's, taken for the step ([`Accelerator::load_secants`]).
    carry: Secants,
    /// Anderson: how many columns this substep has made.
    fresh: usize,
    /// Anderson: whether this substep continues the last one's map (its
    /// last evaluation was moved onto this one's, [`Accelerator::begin_substep`]),
    /// and whether this one's map can be (no contact pins, a spring model).
    continued: bool,
    continuable: bool,
}

/// The last Anderson secant pairs `(ΔG, ΔF)` made (each substep's first
/// ones, over substeps) and the last substep's last evaluation of its map,
/// which the next substep starts with (see the module docs): the part of a
/// [`State`](super::State) that Anderson acceleration learned from the
/// motion. Empty at rest, and for the other methods.
#[derive(Clone, Default)]
pub struct Secants {
    /// Pairs held (`0..=CARRIED_SECANTS`).
    count: usize,
    /// The slot the next substep's first pair goes to (a ring: the pairs
    /// are the last ones made, over substeps of few iterations too).
    next: usize,
    /// `(ΔG, ΔF)` of each pair (single precision, like the window).
    pairs: Columns<CARRIED_SECANTS>,
    /// `ΔFᵀΔF` of the pairs held, by slot (so a substep starts without a
    /// pass over them).
    normal: [[f64; CARRIED_SECANTS]; CARRIED_SECANTS],
    /// The last substep's last evaluation of its map.
    last: Evaluation,
    /// The fingerprint of the system on whose pinned vertices the pairs'
    /// rows are known to be zero (they were cleared, or made, under it), so
    /// a step of the same pins need not clear them again: in the blocks of
    /// columns.rs a vertex's rows lie on 144 cache lines.
    cleared: Option<u64>,
}

/// Anderson's last evaluation of a substep's PD map: `G(x)` and
/// `f = G(x) − x` at the last iterate a global step started from, the
/// constant part `c` of that substep's right-hand side, and the matrix it
/// was solved with. The next substep's map is the same up to a shift,
/// `G'(x) = G(x) + P⁻¹(c' − c)`, so one solve moves the evaluation onto it
/// and the step from it to the next substep's first iterate is one more
/// secant pair (see the module docs).
#[derive(Clone, Debug, Default)]
struct Evaluation {
    /// Whether `g` and `f` hold an evaluation the next substep may continue.
    valid: bool,
    /// The fingerprint of the matrix it was solved with.
    matrix: u64,
    g: Vec<Vec3>,
    f: Vec<Vec3>,
    constant: Vec<Vec3>,
}

impl Evaluation {
    fn new(m: usize) -> Self {
        Self {
            valid: false,
            matrix: 0,
            g: vec![Vec3::zeros(); m],
            f: vec![Vec3::zeros(); m],
            // Filled by the first substep that may be continued (none on
            // a tet model).
            constant: Vec::new(),
        }
    }

    /// Becomes a copy of `other` (its vectors only when it holds one,
    /// allocating only when their length differs).
    fn copy_from(&mut self, other: &Self) {
        self.valid = other.valid;
        self.matrix = other.matrix;
        if other.valid {
            self.g.clone_from(&other.g);
            self.f.clone_from(&other.f);
            self.constant.clone_from(&other.constant);
        }
    }
}

/// Equal when both hold none, or the same one.
impl PartialEq for Evaluation {
    fn eq(&self, other: &Self) -> bool {
        self.valid == other.valid
            && (!self.valid
                || (self.matrix == other.matrix
                    && self.g == other.g
                    && self.f == other.f
                    && self.constant == other.constant))
    }
}

/// Equal when they hold the same pairs (what lies beyond `count` is
/// scratch).
impl PartialEq for Secants {
    fn eq(&self, other: &Self) -> bool {
        let n = self.count;
        n == other.count
            && self.next == other.next
            && self.last == other.last
            && (n == 0 || self.pairs.first_equal(&other.pairs, n))
    }
}

impl Secants {
    /// How many pairs are held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether no pair is held (an evaluation may be).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Becomes a copy of `other`, allocating only when it holds more
    /// vertices' pairs than `self` had room for.
    pub(crate) fn copy_from(&mut self, other: &Self) {
        self.count = other.count;
        self.next = other.next;
        self.normal = other.normal;
        self.cleared = other.cleared;
        self.last.copy_from(&other.last);
        if other.count == 0 {
            return;
        }
        self.pairs.copy_from(&other.pairs);
    }

    /// Holds neither pairs nor an evaluation.
    fn forget(&mut self) {
        self.count = 0;
        self.next = 0;
        self.last.valid = false;
    }

    /// Makes room for `m` vertices: pairs and an evaluation of another
    /// vertex count (or none yet) are forgotten.
    fn fit(&mut self, m: usize) {
        if self.pairs.vertices() != m {
            self.pairs = Columns::new(m);
            self.count = 0;
            self.next = 0;
        }
        if self.last.g.len() != m {
            self.last = Evaluation::new(m);
        }
    }

    /// Zeroes the pairs' rows on the vertices that are not `free` (pinned
    /// since the pairs were made: a carried step must not move them) and,
    /// if any was not zero, sums their normal matrix anew.
    fn clear_pinned(&mut self, free: impl Fn(usize) -> bool) {
        let n = self.count;
        let mut changed = false;
        for i in 0..self.pairs.vertices() {
            if !free(i) {
                changed |= self.pairs.clear(i, n);
            }
        }
        if changed {
            self.normal = self.pairs.normal(n);
        }
    }
}

/// The pairs held and whether an evaluation is (not the vectors: a
/// 10,000-vertex body carries megabytes).
impl std::fmt::Debug for Secants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secants")
            .field("count", &self.count)
            .field("next", &self.next)
            .field("evaluation", &self.last.valid)
            .finish_non_exhaustive()
    }
}

/// Update norms of the plain frames that estimate `ρ`.
#[derive(Clone, Default)]
struct Estimate {
    frames: usize,
    ratios: Vec<f64>,
    updates: Vec<f64>,
}

impl Accelerator {
    /// An accelerator for `m` vertices.
    pub(crate) fn new(method: Acceleration, m: usize) -> Self {
        let older = match method {
            Acceleration::Chebyshev => m,
            _ => 0,
        };
        Self {
            method,
            count: 0,
            carried: 0,
            extras: 0,
            extra: Columns::default(),
            vertices: m,
            normal: [[0.0; ANDERSON_WINDOW]; ANDERSON_WINDOW],
            has_last: false,
            older: vec![Vec3::zeros(); older],
            omega: 1.0,
            rho: None,
            estimate: Estimate::default(),
            // A state's, during a step (none is allocated here: a solver
            // holds only what it swapped out of the state).
            carry: Secants::default(),
            fresh: 0,
            continued: false,
            continuable: false,
        }
    }

    /// The method.
    pub(crate) fn method(&self) -> Acceleration {
        self.method
    }

    /// The spectral radius Chebyshev uses (`None` while it is measured).
    pub(crate) fn spectral_radius(&self) -> Option<f64> {
        self.rho
    }

    /// Forgets the spectral-radius estimate and Anderson's window (the
    /// matrix changed). The pairs a state carries are loaded again at its
    /// next step, as a fresh solver would: they are secants of a
    /// neighbouring map in any case (see the module docs).
    pub(crate) fn invalidate(&mut self) {
        self.forget();
        self.rho = None;
        self.estimate = Estimate::default();
    }

    /// Takes the pairs a state carries for a step (Anderson only; they
    /// are moved, not copied: [`Accelerator::store_secants`] hands them
    /// back), without their rows on vertices that are not `free` (pins set
    /// since they were made must not move; `system` is the fingerprint of
    /// the step's system, and the rows are cleared once per system); a
    /// state of another vertex count carries none.
    pub(crate) fn load_secants(
        &mut self,
        secants: &mut Secants,
        (free, system): (impl Fn(usize) -> bool, u64),
    ) {
        if self.method != Acceleration::Anderson {
            return;
        }
        std::mem::swap(&mut self.carry, secants);
        self.carry.fit(self.vertices);
        if self.carry.cleared != Some(system) {
            self.carry.clear_pinned(free);
            self.carry.cleared = Some(system);
        }
    }

    /// Hands a step's pairs back to the state they were loaded from, or,
    /// if the step is not `kept` (it blew up), leaves it none: they were
    /// overwritten as the step made its own. The other methods leave none.
    pub(crate) fn store_secants(&mut self, secants: &mut Secants, kept: bool) {
        if self.method == Acceleration::Anderson {
            std::mem::swap(&mut self.carry, secants);
        }
        if !kept || self.method != Acceleration::Anderson {
            secants.forget();
        }
    }

    /// Carries no pairs into the next substep. (The last evaluation is
    /// kept: it is of this map, not learnt from earlier ones.)
    pub(crate) fn forget_secants(&mut self) {
        self.carry.count = 0;
        self.carry.next = 0;
    }

    /// Before a substep's iterations (Anderson only), given the constant
    /// part `constant` of its right-hand side, the fingerprint `matrix` of
    /// the matrix its solves are with and whether its map may be continued
    /// (`continuable`: no contact pins in its solves, which are then of
    /// another matrix, and a spring model): moves the last substep's last
    /// evaluation onto this substep's map, `G'(x) = G(x) + d` with
    /// `d = P⁻¹(c' − c)` computed by `solve(delta, d)` (`delta` is filled
    /// with `c' − c` and `d` with zeros first), so that its first iteration adds
    /// the secant pair from there. Skipped when the matrix changed (pins,
    /// weights, masses, the time step, the relaxed matrix) or either
    /// substep's map may not be continued.
    pub(crate) fn begin_substep(
        &mut self,
        constant: &[Vec3],
        (matrix, continuable): (u64, bool),
        (delta, d): (&mut [Vec3], &mut [Vec3]),
        solve: impl FnOnce(&[Vec3], &mut [Vec3]),
    ) {
        self.continued = false;
        self.continuable = false;
        if self.method != Acceleration::Anderson {
            return;
        }
        let last = &mut self.carry.last;
        if last.valid && last.matrix == matrix && continuable {
            for ((dc, new), old) in delta.iter_mut().zip(constant).zip(&last.constant) {
                *dc = new - old;
            }
            d.fill(Vec3::zeros());
            solve(delta, d);
            for ((g, f), d) in last.g.iter_mut().zip(&mut last.f).zip(d.iter()) {
                *g += d;
                *f += d;
            }
            self.continued = true;
        }
        last.valid = false;
        if continuable {
            last.constant.clear();
            last.constant.extend_from_slice(constant);
            last.matrix = matrix;
            self.continuable = true;
        }
    }

    /// Whether iterates may be rejected by the safeguard (plain PD's never
    /// need to be).
    pub(crate) fn is_safeguarded(&self) -> bool {
        self.method != Acceleration::Plain
    }

    /// Starts a substep: the next iteration is a plain PD step, or for
    /// Anderson with carried pairs, an Anderson step in them (they are the
    /// window's first columns, with their block of the normal matrix).
    pub(crate) fn restart(&mut self) {
        self.count = 0;
        self.omega = 1.0;
        self.forget();
        if self.method == Acceleration::Anderson {
            // The carry was fitted to the model when the step loaded it.
            let n = self.carry.count;
            self.carried = n;
            for (mine, block) in self.normal.iter_mut().zip(&self.carry.normal).take(n) {
                mine[..n].copy_from_slice(&block[..n]);
            }
        }
        self.has_last = self.continued;
    }

    /// Empties Anderson's window (the carried pairs are kept for the next
    /// substep).
    fn forget(&mut self) {
        self.carried = 0;
        self.extras = 0;
        self.has_last = false;
        self.fresh = 0;
    }

    /// After a rejection: Chebyshev restarts, more carefully; Anderson
    /// keeps its history, carried pairs included (the fallback `G(x_k)`
    /// continues it: the next secant pair runs from `x_k` to `G(x_k)`).
    /// Emptying the window of carried pairs after a rejection was measured:
    /// the n = 60 cloth's error at 4 iterations doubled.
    pub(crate) fn reject(&mut self) {
        if self.method == Acceleration::Anderson {
            return;
        }
        self.count = 0;
        self.omega = 1.0;
        if let Some(rho) = &mut self.rho {
            // The weights ω grow with ρ²: a rejection means they overshot.
            *rho = (*rho * *rho * 0.98).sqrt();
        }
    }

    /// The end of a substep's iterations (`rejected`: whether the
    /// safeguard rejected any): Anderson carries this substep's first pairs
    /// with the newest earlier ones (none if it made none: the older ones
    /// would describe a map further away); a plain Chebyshev frame turns its update norms into a
    /// spectral-radius estimate; a clean accelerated one raises it.
    pub(crate) fn finish_substep(&mut self, diagonal: f64, rejected: bool) {
        if self.method == Acceleration::Anderson {
            // They were written to the carry as they appeared, their
            // products to the window's normal matrix.
            let carry = &mut self.carry;
            carry.last.valid = self.continuable && self.has_last;
            let fresh = self.fresh.min(CARRIED_SECANTS);
            if fresh == 0 {
                carry.count = 0;
                carry.next = 0;
            } else {
                carry.count = (carry.count + fresh).min(CARRIED_SECANTS);
                carry.next = (carry.next + fresh) % CARRIED_SECANTS;
            }
            // The slots held are 0..count until the ring is full: the next
            // substep's first column goes to slot `count`.
            debug_assert!(carry.count == CARRIED_SECANTS || carry.next == carry.count);
            let n = carry.count;
            for (block, mine) in carry.normal.iter_mut().zip(&self.normal).take(n) {
                block[..n].copy_from_slice(&mine[..n]);
            }
        }
        if self.method != Acceleration::Chebyshev {
            return;
        }
        if let Some(rho) = &mut self.rho {
            if !rejected {
                *rho += RHO_GROWTH * (RHO_MAX - *rho);
            }
            return;
        }
        let u = &self.estimate.updates;
        // The mean ratio of the last updates, where the slowest mode
        // dominates; updates near round-off say nothing.
        let n = u.len();
        let span = RATIO_SPAN.min(n.saturating_sub(1));
        if span >= 1 && u[n - 1] > 1e-12 * diagonal {
            let ratio = (u[n - 1] / u[n - 1 - span]).powf(1.0 / span as f64);
            if ratio.is_finite() {
                self.estimate.ratios.push(ratio.min(RHO_MAX));
                self.estimate.frames += 1;
            }
        }
        self.estimate.updates.clear();
        if self.estimate.frames >= ESTIMATION_FRAMES {
            let r = &self.estimate.ratios;
            self.rho = Some(r.iter().copied().fold(f64::INFINITY, f64::min));
        }
    }

    /// Turns `x = x_k` into the next iterate, given the PD output
    /// `out = G(x_k)`. Anderson's passes over its columns run on two
    /// threads when `parallel` (the solver has more than one) and the model
    /// is large.
    pub(crate) fn combine(&mut self, x: &mut [Vec3], out: &[Vec3], parallel: bool) {
        match self.method {
            Acceleration::Plain => x.copy_from_slice(out),
            Acceleration::Chebyshev => self.chebyshev(x, out),
            Acceleration::Anderson => self.anderson(x, out, parallel),
        }
        self.count += 1;
    }

    fn chebyshev(&mut self, x: &mut [Vec3], out: &[Vec3]) {
        let Some(rho) = self.rho else {
            let update: f64 = x.iter().zip(out).map(|(a, b)| (a - b).norm_squared()).sum();
            self.estimate.updates.push(update.sqrt());
            x.copy_from_slice(out);
            return;
        };
        let k = self.count;
        let rho2 = rho * rho;
        self.omega = if k < CHEBYSHEV_DELAY {
            1.0
        } else if k == CHEBYSHEV_DELAY {
            2.0 / (2.0 - rho2)
        } else {
            4.0 / (4.0 - rho2 * self.omega)
        };
        // x_{k+1} = ω (x̂ − x_{k−1}) + x_{k−1} (Wang 2015, eq. 12 with γ = 1);
        // x_k becomes the next x_{k−1}.
        let omega = self.omega;
        for ((xi, old), g) in x.iter_mut().zip(&mut self.older).zip(out) {
            let current = *xi;
            *xi = (g - *old) * omega + *old;
            *old = current;
        }
    }

    fn anderson(&mut self, x: &mut [Vec3], out: &[Vec3], parallel: bool) {
        let b = if self.has_last {
            self.add_column(x, out, parallel)
        } else {
            self.first_residual(x, out, parallel)
        };
        match self.coefficients(&b) {
            Some(t) => self.mix(x, out, (&t, parallel)),
            None => x.copy_from_slice(out),
        }
    }

    /// The first iteration of a substep: remembers `G(x)` and
    /// `f = G(x) − x`, and returns `ΔFᵀf` over the carried pairs in the
    /// window (none: θ is empty and the step is the plain `G(x)`).
    fn first_residual(
        &mut self,
        x: &[Vec3],
        out: &[Vec3],
        parallel: bool,
    ) -> [f64; ANDERSON_WINDOW] {
        let carry = &mut self.carry;
        for ((f, o), x) in carry.last.f.iter_mut().zip(out).zip(x) {
            *f = o - x;
        }
        carry.last.g.copy_from_slice(out);
        self.has_last = true;
        let mut b = [0.0; ANDERSON_WINDOW];
        let n = self.carried;
        if n > 0 {
            let f = &carry.last.f;
            let [sums] = carry.pairs.f_sums((n, parallel), |i| [f[i]]);
            b[..n].copy_from_slice(&sums[..n]);
        }
        b
    }

    /// Two passes: the first makes the new column `ΔG = G_k − G_{k−1}`,
    /// `ΔF = f_k − f_{k−1}` (`f = G(x) − x`), written over the oldest
    /// carried pair while this substep has made fewer than
    /// [`CARRIED_SECANTS`] (so the carry holds it for the next substep),
    /// else to the extra columns' ring, and makes the last G and f `G_k`
    /// and `f_k`; the second sums the new row of `ΔFᵀΔF` and `ΔFᵀf_k`
    /// (returned).
    fn add_column(&mut self, x: &[Vec3], out: &[Vec3], parallel: bool) -> [f64; ANDERSON_WINDOW] {
        let made = self.fresh;
        self.fresh += 1;
        let (slot, j) = if made < CARRIED_SECANTS {
            let slot = (self.carry.next + made) % CARRIED_SECANTS;
            self.carried = self.carried.max(slot + 1);
            (Slot::Carried(slot), slot)
        } else {
            let slot = (made - CARRIED_SECANTS) % EXTRA_COLUMNS;
            self.extras = (self.extras + 1).min(EXTRA_COLUMNS);
            if self.extra.vertices() != self.vertices {
                self.extra = Columns::new(self.vertices);
            }
            (Slot::Extra(slot), CARRIED_SECANTS + slot)
        };
        let (carried, extras) = (self.carried, self.extras);
        let (carry, extra) = (&mut self.carry, &mut self.extra);
        let last = [&mut carry.last.g[..], &mut carry.last.f[..]];
        let pair = |i: usize, [g, f]: [&mut Vec3; 2]| {
            let (o, new) = (out[i], out[i] - x[i]);
            let pair = [(o - *g).cast::<f32>(), (new - *f).cast::<f32>()];
            (*g, *f) = (o, new);
            pair
        };
        match slot {
            Slot::Carried(s) => carry.pairs.set_column((s, parallel), last, pair),
            Slot::Extra(s) => extra.set_column((s, parallel), last, pair),
        }
        // The new ΔF as stored, and f_k.
        let (pairs, f) = (&carry.pairs, &carry.last.f);
        let new = |i: usize| match slot {
            Slot::Carried(s) => pairs.pair(i, s)[1],
            Slot::Extra(s) => extra.pair(i, s)[1],
        };
        let vectors = |i: usize| [new(i).cast::<f64>(), f[i]];
        let mut row = [0.0; ANDERSON_WINDOW];
        let mut b = [0.0; ANDERSON_WINDOW];
        let [r, sums] = pairs.f_sums((carried, parallel), vectors);
        row[..carried].copy_from_slice(&r[..carried]);
        b[..carried].copy_from_slice(&sums[..carried]);
        if extras > 0 {
            let [r, sums] = extra.f_sums((extras, parallel), vectors);
            let window = CARRIED_SECANTS..CARRIED_SECANTS + extras;
            row[window.clone()].copy_from_slice(&r[..extras]);
            b[window].copy_from_slice(&sums[..extras]);
        }
        for c in self.columns() {
            self.normal[c][j] = row[c];
            self.normal[j][c] = row[c];
        }
        b
    }

    /// The window's columns in use.
    fn columns(&self) -> impl Iterator<Item = usize> + use<> {
        (0..self.carried).chain(CARRIED_SECANTS..CARRIED_SECANTS + self.extras)
    }

    /// `x_{k+1} = G_k − ΔG θ` over the window's columns.
    fn mix(&self, x: &mut [Vec3], out: &[Vec3], (t, parallel): (&[f64; ANDERSON_WINDOW], bool)) {
        let mut carried = [0.0; CARRIED_SECANTS];
        carried[..self.carried].copy_from_slice(&t[..self.carried]);
        self.carry.pairs.sub_g((&carried, parallel), Some(out), x);
        if self.extras > 0 {
            let mut extra = [0.0; EXTRA_COLUMNS];
            extra[..self.extras]
                .copy_from_slice(&t[CARRIED_SECANTS..CARRIED_SECANTS + self.extras]);
            self.extra.sub_g((&extra, parallel), None, x);
        }
    }

    /// θ = argmin ‖f − ΔF θ‖ from `b = ΔFᵀf` and the normal matrix, with
    /// the columns scaled to unit norm and a small ridge against
    /// near-dependence; `None` if it is singular or not finite. The unused
    /// slots, and columns with `ΔF = 0` (no information: a step from a
    /// fixed point, or a carried pair whose rows were all on vertices
    /// pinned since), get an identity block and a zero right-hand side, so
    /// θ is 0 there and one fixed-size (stack) Cholesky serves every window.
    fn coefficients(&self, b: &[f64; ANDERSON_WINDOW]) -> Option<[f64; ANDERSON_WINDOW]> {
        let mut used = [false; ANDERSON_WINDOW];
        for c in self.columns() {
            used[c] = self.normal[c][c] != 0.0;
        }
        let scale: [f64; ANDERSON_WINDOW] = std::array::from_fn(|c| {
            if used[c] {
                self.normal[c][c].sqrt()
            } else {
                1.0
            }
        });
        if scale.iter().any(|s| s.is_nan() || *s <= 0.0) {
            return None;
        }
        let inside = |r: usize, c: usize| used[r] && used[c];
        let a = Normal::from_fn(|r, c| {
            if inside(r, c) {
                self.normal[r][c] / (scale[r] * scale[c]) + if r == c { 1e-10 } else { 0.0 }
            } else if r == c {
                1.0
            } else {
                0.0
            }
        });
        let rhs = Window::from_fn(|r, _| if used[r] { b[r] / scale[r] } else { 0.0 });
        let theta = a.cholesky()?.solve(&rhs);
        let t: [f64; ANDERSON_WINDOW] = std::array::from_fn(|c| theta[c] / scale[c]);
        t.iter().all(|t| t.is_finite()).then_some(t)
    }
}

/// Where a new column of Anderson's window goes: a slot of the carried
/// pairs or of the extra columns.
#[derive(Clone, Copy)]
enum Slot {
    Carried(usize),
    Extra(usize),
}

/// Anderson's normal matrix and a vector of its window.
type Normal = nalgebra::SMatrix<f64, ANDERSON_WINDOW, ANDERSON_WINDOW>;
type Window = nalgebra::SVector<f64, ANDERSON_WINDOW>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Acceleration::ALL {
            assert_eq!(Acceleration::from_name(a.name()), Some(a));
        }
        assert_eq!(Acceleration::from_name("newton"), None);
    }

    /// On a linear contraction `G(x) = M x + c`, both methods converge
    /// much faster than the plain iteration.
    #[test]
    fn both_methods_beat_the_plain_iteration_on_a_linear_map() {
        // A diagonal contraction with rates spread over [0.5, 0.98].
        let m = 40;
        let rate = |i: usize| 0.5 + 0.48 * i as f64 / (m - 1) as f64;
        let fixed: Vec<Vec3> = (0..m).map(|i| Vec3::new(i as f64, 1.0, -2.0)).collect();
        let g = |x: &[Vec3], out: &mut [Vec3]| {
            for i in 0..m {
                out[i] = fixed[i] + (x[i] - fixed[i]) * rate(i);
            }
        };
        let error_after = |method: Acceleration, iterations: usize| {
            let mut acc = loaded(method, m);
            acc.rho = Some(0.98);
            acc.restart();
            let mut x = vec![Vec3::zeros(); m];
            let mut next = x.clone();
            for _ in 0..iterations {
                g(&x, &mut next);
                acc.combine(&mut x, &next, true);
            }
            x.iter()
                .zip(&fixed)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max)
        };
        let plain = error_after(Acceleration::Plain, 30);
        let chebyshev = error_after(Acceleration::Chebyshev, 30);
        let anderson = error_after(Acceleration::Anderson, 30);
        assert!(plain > 1.0, "{plain}");
        assert!(chebyshev < plain / 20.0, "{chebyshev} vs {plain}");
        assert!(anderson < plain / 100.0, "{anderson} vs {plain}");
    }

    /// Two substeps of a linear contraction with a slow and a fast
    /// eigenvalue, the second's fixed point moved along the first's
    /// (like consecutive steps of one motion): the pairs carried from the
    /// first substep span its error, so the second's first iteration, an
    /// Anderson step in them, all but solves it; started afresh, the first
    /// iteration is a plain step that leaves the slow error.
    #[test]
    fn carried_pairs_speed_up_the_next_substep() {
        let m = 40;
        let rate = |i: usize| if i < 3 { 0.98 } else { 0.1 };
        let target = |t: f64| -> Vec<Vec3> {
            (0..m)
                .map(|i| Vec3::new(1.0 + i as f64, (i % 7) as f64, -2.0) * t)
                .collect()
        };
        let iterate = |acc: &mut Accelerator, x: &mut Vec<Vec3>, c: &[Vec3], n: usize| {
            run_substep(acc, x, n, |_, i, x| c[i] + (x - c[i]) * rate(i));
            x.iter()
                .zip(c)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max)
        };
        let mut carried = loaded(Acceleration::Anderson, m);
        let mut x = vec![Vec3::zeros(); m];
        iterate(&mut carried, &mut x, &target(1.0), CARRIED_SECANTS + 1);
        assert_eq!(carried.carry.len(), CARRIED_SECANTS);
        // The first pair is the first secant: G(x₁) − G(x₀) and f₁ − f₀.
        let first = carried.carry.pairs.pair(m - 1, 0);
        assert!(first[0].norm() > 0.0 && first[1].norm() > 0.0);
        let mut afresh = loaded(Acceleration::Anderson, m);
        let mut y = x.clone();
        let with = iterate(&mut carried, &mut x, &target(1.5), 1);
        let without = iterate(&mut afresh, &mut y, &target(1.5), 1);
        assert!(without > 0.1, "{without}");
        assert!(with < without * 1e-6, "{with} vs {without}");
    }

    /// Substeps of two iterations make one pair each: the carry keeps the
    /// last [`CARRIED_SECANTS`] of them, across substeps, the newest
    /// replacing the oldest (it used to keep only the last substep's one
    /// pair, so few-iteration frames barely learned); a substep of one
    /// iteration makes none and empties it.
    #[test]
    fn substeps_of_few_iterations_carry_their_last_pairs() {
        let m = 3;
        let mut acc = loaded(Acceleration::Anderson, m);
        let mut x = vec![Vec3::zeros(); m];
        // A contraction that changes every substep.
        let substep = |acc: &mut Accelerator, x: &mut [Vec3], n, s: usize| {
            let rate = 0.3 + 0.5 * s as f64 / (CARRIED_SECANTS + 2) as f64;
            run_substep(acc, x, n, |_, i, x| {
                Vec3::repeat(s as f64 + i as f64) + x * rate
            });
        };
        for s in 0..CARRIED_SECANTS + 2 {
            substep(&mut acc, &mut x, 2, s);
            assert_eq!(acc.carry.len(), (s + 1).min(CARRIED_SECANTS), "{s}");
        }
        // Every slot holds a pair of its own substep: all differ.
        let pair = |c| acc.carry.pairs.pair(m - 1, c);
        for a in 0..CARRIED_SECANTS {
            for b in 0..a {
                assert_ne!(pair(a), pair(b), "slots {a} and {b}");
            }
        }
        substep(&mut acc, &mut x, 1, 0);
        assert!(acc.carry.is_empty());
        substep(&mut acc, &mut x, 2, 1);
        assert_eq!(acc.carry.len(), 1);
    }

    /// The carried normal matrix is the pairs' own `ΔFᵀΔF`, summed afresh,
    /// after substeps of every length (fewer columns than slots, a column
    /// replacing a carried one, more columns than slots and extra columns,
    /// none) and after the pairs are forgotten.
    #[test]
    fn the_carried_normal_matrix_is_that_of_the_pairs() {
        let m = 5;
        let mut acc = loaded(Acceleration::Anderson, m);
        let mut x = vec![Vec3::zeros(); m];
        let check = |acc: &Accelerator, label: &str| {
            let carry = &acc.carry;
            let n = carry.count;
            assert!(n == CARRIED_SECANTS || carry.next == n, "{label}");
            for r in 0..n {
                for c in 0..n {
                    let df = |i, c| carry.pairs.pair(i, c)[1].cast::<f64>();
                    let sum: f64 = (0..m).map(|i| df(i, r).dot(&df(i, c))).sum();
                    let held = carry.normal[r][c];
                    assert!(
                        (held - sum).abs() <= 1e-12 * sum.abs().max(1e-300),
                        "{label}: ({r}, {c}) {held} vs {sum}"
                    );
                }
            }
        };
        for (s, n) in [2, 3, 1, 2, 30, 40, 5].into_iter().enumerate() {
            // A contraction that changes every substep and iteration.
            run_substep(&mut acc, &mut x, n, |k, i, x| {
                let rate = 0.5 + 0.3 * ((s + k) % 3) as f64 / 3.0;
                Vec3::new(s as f64, i as f64, (i * k) as f64) + x * rate
            });
            check(&acc, &format!("substep {s} of {n}"));
            if s == 3 {
                acc.forget_secants();
                check(&acc, "forgotten");
            }
        }
        assert_eq!(acc.carry.len(), CARRIED_SECANTS);
    }

    /// An accelerator for `m` vertices that has loaded a state at rest (no
    /// pairs), as a step does before its substeps.
    fn loaded(method: Acceleration, m: usize) -> Accelerator {
        let mut acc = Accelerator::new(method, m);
        acc.load_secants(&mut Secants::default(), (|_| true, 0));
        acc
    }

    /// One substep of `n` iterations from `x` of the map whose output at
    /// vertex `i` in iteration `k` is `map(k, i, x_i)`.
    fn run_substep(
        acc: &mut Accelerator,
        x: &mut [Vec3],
        n: usize,
        map: impl Fn(usize, usize, &Vec3) -> Vec3,
    ) {
        acc.restart();
        let mut out = x.to_vec();
        for k in 0..n {
            for (i, (o, xi)) in out.iter_mut().zip(x.iter()).enumerate() {
                *o = map(k, i, xi);
            }
            acc.combine(x, &out, true);
        }
        acc.finish_substep(1.0, false);
    }

    /// Pairs loaded from a state lose their rows on vertices that are not
    /// free, so a carried step never moves a pin.
    #[test]
    fn loaded_pairs_have_no_rows_on_pins() {
        let m = 4;
        let one = Vec3::new(1.0, 2.0, 3.0);
        let mut normal = [[0.0; CARRIED_SECANTS]; CARRIED_SECANTS];
        for row in &mut normal[..2] {
            row[..2].fill(m as f64 * one.norm_squared());
        }
        let secants = Secants {
            count: 2,
            next: 2,
            pairs: {
                let mut pairs = Columns::new(m);
                for i in 0..m {
                    for c in 0..CARRIED_SECANTS {
                        pairs.set(i, c, [one.cast(); 2]);
                    }
                }
                pairs
            },
            normal,
            last: Evaluation::default(),
            cleared: None,
        };
        let mut acc = Accelerator::new(Acceleration::Anderson, m);
        acc.load_secants(&mut secants.clone(), (|i| i != 2, 1));
        assert_eq!(acc.carry.len(), 2);
        for i in 0..m {
            let expected = if i == 2 { Vec3::zeros() } else { one }.cast();
            let pair = |c| acc.carry.pairs.pair(i, c);
            assert!((0..2).all(|c| pair(c) == [expected; 2]), "{i}");
        }
        // Their normal matrix is summed anew, without the pin's rows.
        let without = (m - 1) as f64 * one.norm_squared();
        for row in &acc.carry.normal[..2] {
            assert_eq!(row[..2], [without; 2]);
        }
        // Handed back, the state holds them; loaded under another system
        // (another pin), the new pin's rows go too.
        let mut state = Secants::default();
        acc.store_secants(&mut state, true);
        assert_eq!(state.len(), 2);
        acc.load_secants(&mut state, (|i| i != 2 && i != 3, 2));
        for i in 0..m {
            let expected = if i == 2 || i == 3 { Vec3::zeros() } else { one }.cast();
            assert_eq!(acc.carry.pairs.pair(i, 1), [expected; 2], "{i}");
        }
        acc.store_secants(&mut state, true);
        // Another vertex count, or another method: nothing is loaded.
        let mut other = Accelerator::new(Acceleration::Anderson, m + 1);
        other.load_secants(&mut secants.clone(), (|_| true, 0));
        assert!(other.carry.is_empty());
        let mut plain = Accelerator::new(Acceleration::Plain, m);
        let mut kept = secants.clone();
        plain.load_secants(&mut kept, (|_| true, 0));
        assert!(plain.carry.is_empty());
        plain.store_secants(&mut kept, true);
        assert!(kept.is_empty());
    }
}

/// The last evaluation continued into the next substep, on the solver.
#[cfg(test)]
mod continued {
    use crate::bench::Scene;
    use crate::model::Weights;
    use crate::solver::{SimParams, Solver, State, accuracy};

    /// The n = 16 cloth at 2 iterations per frame, stepped 60 frames with
    /// the last evaluation continued or dropped after every step (so that
    /// neither the next step nor a measurement continues it): each
    /// motion's error against Newton every 10 frames, stepped from its own
    /// states as it was.
    fn errors_along(continued: bool) -> Vec<f64> {
        let scene = Scene::cloth(16);
        let model = scene.model();
        let params = SimParams {
            iterations: 2,
            ..scene.params()
        };
        let mut solver = Solver::new(&model, &params).unwrap();
        let mut state = State::at_rest(&model);
        let mut errors = Vec::new();
        for frame in 1..=60 {
            solver.step(&mut state).unwrap();
            state.secants.last.valid &= continued;
            if frame % 10 == 0 {
                let measured = accuracy::measure(&solver, &state, 2).unwrap();
                errors.push(measured.errors[2]);
            }
        }
        errors.sort_by(f64::total_cmp);
        errors
    }

    /// Continuing the last evaluation keeps a motion of few iterations
    /// near the exact one: without it (the carried pairs alone) the 2
    /// iterations' errors pile up into the motion until its steps are
    /// 10–150 % off; with it they stay near 1e-4–2e-3 (2026-11-27).
    #[test]
    fn the_last_evaluation_keeps_a_motion_of_few_iterations_accurate() {
        let with = errors_along(true);
        let without = errors_along(false);
        let median = |e: &[f64]| e[e.len() / 2];
        assert!(median(&with) < 2e-3, "{with:?}");
        assert!(
            median(&with) * 10.0 < median(&without),
            "{with:?} vs {without:?}"
        );
    }

    /// The moved evaluation is the next substep's map at the same point,
    /// `G'(x) = G(x) + P⁻¹(c' − c)`, to round-off: with soft pins whose
    /// targets move between frames (a drag), in every precision (the
    /// relaxed solve corrects against `A` from its starting point).
    #[test]
    fn the_moved_evaluation_is_the_next_map_at_the_same_point() {
        use crate::mesh::Vec3;
        use crate::model::Attachment;
        use crate::solver::Precision;
        let scene = Scene::cloth(16);
        let mut model = scene.model();
        let bottom: Vec<u32> = (16 * 15..16 * 16).step_by(5).collect();
        model.pins.soft = bottom
            .iter()
            .map(|&v| Attachment {
                vertex: v,
                target: model.rest[v as usize],
            })
            .collect();
        let params = SimParams {
            iterations: 3,
            ..scene.params()
        };
        for precision in [Precision::Double, Precision::Mixed, Precision::Relaxed] {
            let mut solver = Solver::new(&model, &params).unwrap();
            solver.set_precision(precision).unwrap();
            let mut state = State::at_rest(&model);
            let mut targets: Vec<Vec3> = bottom.iter().map(|&v| model.rest[v as usize]).collect();
            for _ in 0..8 {
                for t in &mut targets {
                    *t += Vec3::new(0.01, 0.0, 0.02);
                }
                solver.set_attachment_targets(&targets).unwrap();
                solver.step(&mut state).unwrap();
            }
            for t in &mut targets {
                *t += Vec3::new(0.01, 0.0, 0.02);
            }
            solver.set_attachment_targets(&targets).unwrap();
            // The next step's set-up, as `step_observed` does it.
            let h = solver.params.substep_dt();
            solver.x.copy_from_slice(&state.positions);
            let system = &solver.system;
            solver.accel.load_secants(
                &mut state.secants,
                (|i| system.is_free(i), system.fingerprint()),
            );
            solver.set_up_substep(&state.velocities, h);
            assert!(solver.accel.continued, "{precision:?}");
            let last = &solver.accel.carry.last;
            let (moved, at): (Vec<Vec3>, Vec<Vec3>) =
                last.g.iter().zip(&last.f).map(|(g, f)| (*g, g - f)).unzip();
            solver.x.copy_from_slice(&at);
            solver.project(true);
            let mut direct = at.clone();
            let parallel = solver.threads > 1;
            solver.system.solve(&solver.rhs, &mut direct, parallel);
            let apart = moved
                .iter()
                .zip(&direct)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            let step = moved
                .iter()
                .zip(&state.positions)
                .map(|(a, q)| (a - q).norm())
                .fold(0.0, f64::max);
            let tolerance = if precision == Precision::Double {
                1e-9
            } else {
                1e-5
            };
            assert!(
                apart <= tolerance * step,
                "{precision:?}: {apart:e} of {step:e}"
            );
        }
    }

    /// A state's evaluation is continued only under the matrix it was
    /// made with: in a solver of another bending weight its step is that
    /// of the state without one, also when the factor is of the relaxed
    /// matrix (which leaves the bending springs out, but its solves
    /// correct against `A`).
    #[test]
    fn another_matrix_does_not_continue_the_evaluation() {
        use crate::solver::Precision;
        let scene = Scene::cloth(16);
        let model = scene.model();
        for precision in [Precision::Double, Precision::Relaxed] {
            let mut solver = Solver::new(&model, &scene.params()).unwrap();
            solver.set_precision(precision).unwrap();
            assert_eq!(
                solver.factor_stats().relaxed,
                precision == Precision::Relaxed
            );
            let mut state = State::at_rest(&model);
            for _ in 0..10 {
                solver.step(&mut state).unwrap();
            }
            assert!(state.secants.last.valid);
            let mut bare = state.clone();
            bare.secants.last.valid = false;
            let step = |solver: &Solver, state: &State| {
                let mut state = state.clone();
                solver.clone().step(&mut state).unwrap();
                state.positions
            };
            assert_ne!(step(&solver, &state), step(&solver, &bare));
            let stiffer = Weights {
                bending: model.weights.bending * 2.0,
                ..model.weights
            };
            let mut other = solver.clone();
            other.refactor(stiffer, None, &scene.params()).unwrap();
            assert_eq!(
                other.factor_stats().relaxed,
                precision == Precision::Relaxed
            );
            assert_eq!(step(&other, &state), step(&other, &bare), "{precision:?}");
        }
    }
}
