//! Boundary snapping after stuffing.
//!
//! Stuffing puts every boundary vertex on the surface, but a boundary face
//! can still span a crease, cut off a tip or a feature thinner than a cell,
//! and stand off the surface by up to about half a cell. Snapping moves
//! boundary vertices towards the features their faces miss. Each vertex
//! whose faces stray farther than the tolerance tries, for each such face,
//! the surface point nearest to the face's worst sample and the corners and
//! edges of that point's triangle (where tips and creases are), all the way
//! and part of the way. A move counts when it lowers the largest distance
//! of the vertex's faces, or keeps it and lowers their summed excess over
//! the tolerance: a crease that a row of faces straddles is then followed
//! one vertex at a time, where no single move could lower the largest.
//!
//! The best few moves are tried in order until one fits: every tet around the
//! vertex positively oriented with dihedral angles within stuffing's
//! bounds. Where a tet falls outside them, its interior vertices are
//! relaxed to make room, each by a pattern search that raises the worst
//! margin of its tets without taking another out of bounds. The topology
//! never changes.

use rayon::prelude::*;

use super::quality::{dihedral_cosines, face_samples};
use super::tree::TriangleTree;
use crate::mesh::Vec3;
use crate::mesh::tet::signed_volume;
use crate::mesh::topology::Incidence;

/// Dihedral bounds a move must keep (isosurface stuffing's guarantee).
const MIN_DIHEDRAL: f64 = 10.7 * std::f64::consts::PI / 180.0;
const MAX_DIHEDRAL: f64 = 164.8 * std::f64::consts::PI / 180.0;

/// Snapping passes.
const PASSES: usize = 6;

/// Fractions of the way to a candidate point tried for a move.
const MOVES: [f64; 3] = [1.0, 0.6, 0.3];

/// Feature points (corners and edges of the nearest input triangle) farther
/// than this many lattice cells from the vertex are not tried.
const FEATURE_REACH: f64 = 2.0;

/// The least decrease of summed excess distance (as a fraction of the
/// tolerance) that makes a move worth taking when the largest distance stays.
const EXCESS_GAIN: f64 = 0.1;

/// Candidate moves of a vertex tried with relaxation, best first.
const RELAX_TRIES: usize = 6;

/// Rounds of relaxation over the tets around the moved vertex.
const RELAX_ROUNDS: usize = 4;

/// Steps of the relaxation's pattern search, as fractions of the shortest
/// edge at the vertex being relaxed.
const RELAX_STEPS: [f64; 4] = [0.3, 0.15, 0.07, 0.03];

/// Moves boundary vertices of the positively oriented `tets` so that their
/// faces come within `tolerance` of `tree`'s surface where quality allows;
/// faces farther than `reach` (a lattice cell) span holes of an open surface
/// and are left alone. Returns the number of moves.
pub(super) fn snap_boundary(
    tree: &TriangleTree,
    positions: &mut [Vec3],
    tets: &[[u32; 4]],
    tolerance: f64,
    reach: f64,
) -> usize {
    let faces = crate::mesh::tet::boundary_faces_of(tets);
    let around_face = Incidence::new(positions.len(), faces.iter().map(|f| f.as_slice()));
    let around_tet = Incidence::new(positions.len(), tets.iter().map(|t| t.as_slice()));
    // Distances beyond `reach` are not looked at.
    let limit = reach * 1.001;
    let deviation = faces
        .par_iter()
        .map(|f| worst(tree, f.map(|v| positions[v as usize]), tolerance, limit))
        .collect();
    Snap {
        tree,
        positions,
        tets,
        faces,
        around_face,
        around_tet,
        tolerance,
        reach,
        limit,
        deviation,
        scratch_tets: Vec::new(),
        scratch_vertices: Vec::new(),
        scratch_margins: Vec::new(),
    }
    .run()
}

/// The state of [`snap_boundary`].
struct Snap<'a> {
    tree: &'a TriangleTree,
    positions: &'a mut [Vec3],
    tets: &'a [[u32; 4]],
    /// The boundary faces, outward.
    faces: Vec<[u32; 3]>,
    around_face: Incidence,
    around_tet: Incidence,
    tolerance: f64,
    reach: f64,
    /// Distances are capped here.
    limit: f64,
    /// Each face's largest sampled distance from the surface, and where.
    deviation: Vec<(f64, Vec3)>,
    /// Reused buffers of the relaxation: tets out of bounds (with their
    /// margins), the vertices to relax, the margins of one vertex's tets.
    scratch_tets: Vec<(u32, f64)>,
    scratch_vertices: Vec<u32>,
    scratch_margins: Vec<f64>,
}

impl Snap<'_> {
    fn run(&mut self) -> usize {
        let mut moves = 0;
        // Vertices worth trying: at first all; later those next to a move.
        let mut active = vec![true; self.positions.len()];
        for _ in 0..PASSES {
            let mut offending: Vec<(f64, u32)> = Vec::new();
            for (k, f) in self.faces.iter().enumerate() {
                if self.offends(k as u32) {
                    let d = self.deviation[k].0;
                    offending.extend(f.iter().filter(|&&v| active[v as usize]).map(|&v| (d, v)));
                }
            }
            // Each vertex once, at its farthest face; farthest first.
            offending.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(b.0.total_cmp(&a.0)));
            offending.dedup_by_key(|x| x.1);
            offending.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut next = vec![false; self.positions.len()];
            let mut moved_this_pass = 0;
            for &(_, v) in &offending {
                let Some(moved) = self.best_move(v) else {
                    continue;
                };
                moved_this_pass += 1;
                for &(u, p) in &moved {
                    self.positions[u as usize] = p;
                }
                // New distances for the moved faces; the vertices of the
                // changed tets may move again in the next pass.
                for &(u, _) in &moved {
                    for &f in self.around_face.of(u) {
                        self.deviation[f as usize] =
                            worst(self.tree, self.face_corners(f), self.tolerance, self.limit);
                    }
                    for &t in self.around_tet.of(u) {
                        for &w in &self.tets[t as usize] {
                            next[w as usize] = true;
                        }
                    }
                }
            }
            moves += moved_this_pass;
            if moved_this_pass == 0 {
                break;
            }
            active = next;
        }
        debug_assert!(
            (0..self.tets.len() as u32).all(|t| {
                let x = self.tets[t as usize].map(|u| self.positions[u as usize]);
                signed_volume(&x[0], &x[1], &x[2], &x[3]) > 0.0
            }),
            "snapping inverted a tet"
        );
        moves
    }

    /// Whether face `f` strays beyond the tolerance but within reach.
    fn offends(&self, f: u32) -> bool {
        let d = self.deviation[f as usize].0;
        d > self.tolerance && d <= self.reach
    }

    fn face_corners(&self, f: u32) -> [Vec3; 3] {
        self.faces[f as usize].map(|u| self.positions[u as usize])
    }

    fn tet_margin(&self, t: u32) -> f64 {
        margin(self.tets[t as usize].map(|u| self.positions[u as usize]))
    }

    /// `score` (largest distance, summed excess over the tolerance) with a
    /// face at distance `d` added. Within the tolerance, `d` is only an
    /// upper bound (the first surface point that near, see [`worst`]); it
    /// still orders candidates roughly by closeness, which measured better
    /// than counting them all as the tolerance (the control cage's ears:
    /// 0.41 % against 0.70 %).
    fn add_to_score(&self, score: (f64, f64), d: f64) -> (f64, f64) {
        (d.max(score.0), score.1 + (d - self.tolerance).max(0.0))
    }

    /// The largest distance of `faces` from the surface and their summed
    /// excess over the tolerance, if it [`beats`] `bound` (given up as soon
    /// as it cannot).
    fn score_beating(&self, faces: &[u32], bound: (f64, f64)) -> Option<(f64, f64)> {
        let cap = above(bound.0);
        let gain = self.tolerance * EXCESS_GAIN;
        let mut score = (0.0, 0.0);
        for &g in faces {
            let d = worst(
                self.tree,
                self.face_corners(g),
                self.tolerance,
                cap.min(self.limit),
            )
            .0;
            if d >= cap {
                return None;
            }
            score = self.add_to_score(score, d);
            // Tied on the largest distance, and the excess only grows.
            if score.0 >= bound.0 && score.1 >= bound.1 - gain {
                return None;
            }
        }
        beats(score, bound, gain).then_some(score)
    }

    /// The best move of boundary vertex `v` that fits (see the module
    /// docs): the new positions of `v` and of the vertices relaxed with it.
    /// Leaves the positions as they were.
    fn best_move(&mut self, v: u32) -> Option<Vec<(u32, Vec3)>> {
        let origin = self.positions[v as usize];
        // A vertex of a face that spans a hole stays: its distance there is
        // not measured beyond the cap, so a move could only make it worse.
        if self
            .around_face
            .of(v)
            .iter()
            .any(|&f| self.deviation[f as usize].0 > self.reach)
        {
            return None;
        }
        // Farthest first: a move that leaves one of these far is rejected
        // after one face.
        let mut incident = self.around_face.of(v).to_vec();
        incident.sort_unstable_by(|&a, &b| {
            self.deviation[b as usize]
                .0
                .total_cmp(&self.deviation[a as usize].0)
        });
        // To beat: the largest distance of the faces, then their summed
        // excess over the tolerance (so that a crease that several faces
        // straddle is followed one vertex at a time).
        let bound = incident.iter().fold((0.0, 0.0), |score, &f| {
            self.add_to_score(score, self.deviation[f as usize].0)
        });
        // The moves that bring the faces closer, best first; the first that
        // fits (after relaxing) is taken.
        let mut candidates: Vec<((f64, f64), Vec3)> = Vec::new();
        for target in self.targets(v, &incident) {
            for s in MOVES {
                let p = origin.lerp(&target, s);
                self.positions[v as usize] = p;
                if let Some(score) = self.score_beating(&incident, bound) {
                    candidates.push((score, p));
                }
            }
        }
        candidates.sort_by(|a, b| a.0.0.total_cmp(&b.0.0).then(a.0.1.total_cmp(&b.0.1)));
        let mut relaxed = Vec::new();
        let mut best = None;
        for &(_, p) in candidates.iter().take(RELAX_TRIES) {
            self.positions[v as usize] = p;
            relaxed.clear();
            let fits = self.relax(v, &mut relaxed);
            if fits {
                let mut positions = vec![(v, p)];
                positions.extend(
                    relaxed
                        .iter()
                        .map(|&(u, _)| (u, self.positions[u as usize])),
                );
                best = Some(positions);
            }
            for &(u, p) in relaxed.iter().rev() {
                self.positions[u as usize] = p;
            }
            if best.is_some() {
                break;
            }
        }
        self.positions[v as usize] = origin;
        best
    }

    /// Where vertex `v` may move: for each of its faces that strays, the
    /// surface point nearest the face's worst sample, and the corners and
    /// edges of that point's triangle (where creases and tips are) within
    /// [`FEATURE_REACH`] cells; without repeats.
    fn targets(&self, v: u32, incident: &[u32]) -> Vec<Vec3> {
        let origin = self.positions[v as usize];
        let mut targets: Vec<Vec3> = Vec::new();
        for &f in incident {
            if !self.offends(f) {
                continue;
            }
            let sample = self.deviation[f as usize].1;
            let Some((point, corners)) = self.tree.closest_triangle(sample) else {
                continue;
            };
            let edges =
                [0, 1, 2].map(|k| closest_on_segment(sample, corners[k], corners[(k + 1) % 3]));
            for t in std::iter::once(point).chain(
                corners
                    .into_iter()
                    .chain(edges)
                    .filter(|c| (c - origin).norm() < FEATURE_REACH * self.reach),
            ) {
                if !targets.iter().any(|u| (u - t).norm() < self.reach * 1e-6) {
                    targets.push(t);
                }
            }
        }
        targets
    }

    /// Brings every tet around the just-moved boundary vertex `v` within
    /// bounds by moving the interior vertices of the tets out of bounds, one
    /// at a time, each to where its worst tet margin is highest without
    /// taking a tet of it out of bounds. Moved vertices are pushed to `moved`
    /// with their positions before the move (restore in reverse order to
    /// undo). Returns whether every tet around `v` ends in bounds.
    fn relax(&mut self, v: u32, moved: &mut Vec<(u32, Vec3)>) -> bool {
        let mut bad = std::mem::take(&mut self.scratch_tets);
        let mut free = std::mem::take(&mut self.scratch_vertices);
        let mut rounds = 0;
        let fits = loop {
            bad.clear();
            bad.extend(
                self.around_tet
                    .of(v)
                    .iter()
                    .map(|&t| (t, self.tet_margin(t)))
                    .filter(|&(_, m)| m < 0.0),
            );
            if bad.is_empty() {
                break true;
            }
            // A tet out of bounds with no interior vertex cannot be helped;
            // an inverted one is given up too (relaxing hardly ever rights
            // one, and trying was most of the time on open surfaces).
            let interior = |u: &u32| self.around_face.of(*u).is_empty();
            if rounds == RELAX_ROUNDS
                || bad.iter().any(|&(t, m)| {
                    m == f64::NEG_INFINITY || !self.tets[t as usize].iter().any(interior)
                })
            {
                break false;
            }
            rounds += 1;
            free.clear();
            free.extend(
                bad.iter()
                    .flat_map(|&(t, _)| self.tets[t as usize])
                    .filter(interior),
            );
            free.sort_unstable();
            free.dedup();
            let mut improved = false;
            for &u in &free {
                let origin = self.positions[u as usize];
                if self.improve_vertex(u) {
                    moved.push((u, origin));
                    improved = true;
                }
            }
            if !improved {
                break false;
            }
        };
        self.scratch_tets = bad;
        self.scratch_vertices = free;
        fits
    }

    /// Pattern search for interior vertex `u` (see [`Snap::relax`]);
    /// returns whether it moved.
    fn improve_vertex(&mut self, u: u32) -> bool {
        let around = self.around_tet.of(u);
        let mut before = std::mem::take(&mut self.scratch_margins);
        before.clear();
        before.extend(around.iter().map(|&t| self.tet_margin(t)));
        let mut worst_margin = before.iter().copied().fold(f64::INFINITY, f64::min);
        let origin = self.positions[u as usize];
        let shortest = around
            .iter()
            .flat_map(|&t| self.tets[t as usize])
            .filter(|&w| w != u)
            .map(|w| (self.positions[w as usize] - origin).norm())
            .fold(f64::INFINITY, f64::min);
        let mut at = origin;
        for step in RELAX_STEPS.map(|s| s * shortest) {
            for d in RELAX_DIRECTIONS {
                let trial = at + Vec3::from(d) * step;
                self.positions[u as usize] = trial;
                let mut lowest = f64::INFINITY;
                let mut keeps = true;
                for (&t, &b) in around.iter().zip(&before) {
                    let m = self.tet_margin(t);
                    lowest = lowest.min(m);
                    if (b >= 0.0 && m < 0.0) || lowest <= worst_margin {
                        keeps = false;
                        break;
                    }
                }
                if keeps {
                    worst_margin = lowest;
                    at = trial;
                }
            }
        }
        self.positions[u as usize] = at;
        self.scratch_margins = before;
        at != origin
    }
}

/// Just above `x`: a cap that the unchanged distance `x` stays under.
fn above(x: f64) -> f64 {
    x * (1.0 + 1e-9) + f64::MIN_POSITIVE
}

/// Whether `(largest distance, summed excess)` `a` improves on `b`: a lower
/// largest distance, or the same one and at least `gain` less excess.
fn beats(a: (f64, f64), b: (f64, f64), gain: f64) -> bool {
    a.0 < b.0 || (a.0 <= b.0 && a.1 < b.1 - gain)
}

/// The farthest sample of a triangle from the surface, and that sample;
/// distances are capped at `limit` (and the search stops at a sample that
/// far), and are only some value `≤ floor` when at most `floor`.
fn worst(tree: &TriangleTree, [a, b, c]: [Vec3; 3], floor: f64, limit: f64) -> (f64, Vec3) {
    let mut best = (0.0, a);
    for q in face_samples(a, b, c) {
        let d = tree.distance_beyond(q, floor, limit);
        if d > best.0 {
            best = (d, q);
            if d >= limit {
                break;
            }
        }
    }
    best
}

/// The point of segment `a b` nearest to `q`.
fn closest_on_segment(q: Vec3, a: Vec3, b: Vec3) -> Vec3 {
    let ab = b - a;
    let t = (q - a).dot(&ab) / ab.norm_squared().max(f64::MIN_POSITIVE);
    a + ab * t.clamp(0.0, 1.0)
}

/// How far tet `x`'s dihedral angles lie within bounds, measured in their
/// cosines: negative when one is out of bounds, −∞ when the tet is inverted
/// or flat.
fn margin(x: [Vec3; 4]) -> f64 {
    if signed_volume(&x[0], &x[1], &x[2], &x[3]) <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let cosines = dihedral_cosines(x);
    // A degenerate face's normal is NaN, which `min` would skip.
    if cosines.iter().any(|c| c.is_nan()) {
        return f64::NEG_INFINITY;
    }
    let (lo, hi) = (MAX_DIHEDRAL.cos(), MIN_DIHEDRAL.cos());
    cosines
        .iter()
        .map(|&c| (hi - c).min(c - lo))
        .fold(f64::INFINITY, f64::min)
}

/// Unit directions of [`Snap::improve_vertex`]'s pattern search: the axes
/// and the cube's diagonals.
const RELAX_DIRECTIONS: [[f64; 3]; 14] = {
    const D: f64 = 0.577_350_269_189_625_8;
    [
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
        [D, D, D],
        [D, D, -D],
        [D, -D, D],
        [D, -D, -D],
        [-D, D, D],
        [-D, D, -D],
        [-D, -D, D],
        [-D, -D, -D],
    ]
};
