//! Isosurface stuffing (Labelle and Shewchuk 2007, "Isosurface Stuffing:
//! Fast Tetrahedral Meshes with Good Dihedral Angles").
//!
//! A body-centred cubic (BCC) lattice covers the surface's bounding box:
//! grid `A` at the cube corners and grid `B` at the cube centres. Its
//! tetrahedra have two *long* edges (between neighbours of one grid, length
//! `h`) and four *short* ones (between the grids, `√3/2 h`). Each lattice
//! vertex is inside (−), outside (+) or on (0) the surface; every edge from
//! − to + gets a *cut point* on the surface. A vertex closer to a cut point
//! than `α` times the edge length is *warped* onto it (and becomes 0), which
//! removes the cases that would make slivers. Each lattice tet is then filled
//! by a stencil: the part with `f ≤ 0`, split into tets, quadrilateral faces
//! split by a rule that depends only on the face, so neighbours agree.
//! With `α_long = 0.24999` and `α_short = 0.41189` the paper proves every
//! dihedral angle lies in [10.7°, 164.8°].
//!
//! Vertices are addressed in *doubled* lattice coordinates: grid `A` at even
//! coordinates `2(i, j, k)`, grid `B` at odd ones `2(i, j, k) + 1`.

use std::collections::HashMap;

use rayon::prelude::*;

use super::tree::TriangleTree;
use crate::mesh::Vec3;

/// Warp threshold for cut points on long edges (Labelle and Shewchuk, §4).
const ALPHA_LONG: f64 = 0.24999;
/// Warp threshold for cut points on short edges.
const ALPHA_SHORT: f64 = 0.41189;

/// Bisection steps when a sign change is not at a triangle crossing (near a
/// hole of an open surface): `2⁻³⁰` of an edge.
const BISECTIONS: usize = 30;

/// The BCC lattice over a box: `n[d]` cubes of side `h` along axis `d`.
struct Lattice {
    origin: Vec3,
    h: f64,
    n: [usize; 3],
}

impl Lattice {
    fn a_count(&self) -> usize {
        (self.n[0] + 1) * (self.n[1] + 1) * (self.n[2] + 1)
    }

    fn b_count(&self) -> usize {
        self.n[0] * self.n[1] * self.n[2]
    }

    fn a(&self, i: usize, j: usize, k: usize) -> u32 {
        (i + (self.n[0] + 1) * (j + (self.n[1] + 1) * k)) as u32
    }

    fn b(&self, i: usize, j: usize, k: usize) -> u32 {
        (self.a_count() + i + self.n[0] * (j + self.n[1] * k)) as u32
    }

    /// Doubled lattice coordinates of vertex `v`.
    fn coords(&self, v: u32) -> [i64; 3] {
        let v = v as usize;
        let na = self.a_count();
        if v < na {
            let (nx, ny) = (self.n[0] + 1, self.n[1] + 1);
            let (i, j, k) = (v % nx, (v / nx) % ny, v / (nx * ny));
            [2 * i as i64, 2 * j as i64, 2 * k as i64]
        } else {
            let v = v - na;
            let (nx, ny) = (self.n[0], self.n[1]);
            let (i, j, k) = (v % nx, (v / nx) % ny, v / (nx * ny));
            [2 * i as i64 + 1, 2 * j as i64 + 1, 2 * k as i64 + 1]
        }
    }

    fn position(&self, v: u32) -> Vec3 {
        let c = self.coords(v);
        self.origin + Vec3::new(c[0] as f64, c[1] as f64, c[2] as f64) * (0.5 * self.h)
    }

    /// Whether `u v` is a long edge (both ends in the same grid).
    fn is_long(&self, u: u32, v: u32) -> bool {
        let na = self.a_count() as u32;
        (u < na) == (v < na)
    }

    /// Every lattice tetrahedron `[b₁, b₂, e₀, e₁]`: the long edge `b₁ b₂`
    /// between two neighbouring cube centres and one long edge `e₀ e₁` of
    /// the face they share. Each cube owns 12 (volume `h³/12` each).
    fn tets(&self) -> Vec<[u32; 4]> {
        let [nx, ny, nz] = self.n;
        let mut out = Vec::with_capacity(12 * nx * ny * nz);
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    let c = [i, j, k];
                    for d in 0..3 {
                        if c[d] + 1 >= self.n[d] {
                            continue;
                        }
                        let mut c2 = c;
                        c2[d] += 1;
                        let (b1, b2) = (self.b(i, j, k), self.b(c2[0], c2[1], c2[2]));
                        let (u, v) = ((d + 1) % 3, (d + 2) % 3);
                        // The shared face's corners, `du, dv ∈ {0, 1}`.
                        let corner = |du: usize, dv: usize| {
                            let mut p = c;
                            p[d] += 1;
                            p[u] += du;
                            p[v] += dv;
                            self.a(p[0], p[1], p[2])
                        };
                        for (e0, e1) in [
                            (corner(0, 0), corner(1, 0)),
                            (corner(0, 1), corner(1, 1)),
                            (corner(0, 0), corner(0, 1)),
                            (corner(1, 0), corner(1, 1)),
                        ] {
                            out.push([b1, b2, e0, e1]);
                        }
                    }
                }
            }
        }
        out
    }
}

/// What stuffing produced: vertex positions and tets (of either orientation).
pub(super) struct Stuffed {
    pub positions: Vec<Vec3>,
    pub tets: Vec<[u32; 4]>,
}

/// Fills the region where the winding number of `tree` exceeds ½ in
/// magnitude with tetrahedra from a BCC lattice of cube side `h` over the
/// box `lo..hi`.
pub(super) fn stuff(tree: &TriangleTree, lo: Vec3, hi: Vec3, h: f64) -> Stuffed {
    // Two cells of padding keep every cut point between lattice vertices
    // and every boundary lattice tet outside. The odd fractions keep lattice
    // planes off the bounding box, where axis-aligned faces (common in CAD
    // parts) would put lattice vertices exactly on the surface.
    let origin = lo - Vec3::new(2.0 + 0.1371, 2.0 + 0.0713, 2.0 + 0.0291) * h;
    let n = ((hi - lo) / h).map(|e| e.ceil() as usize + 5);
    let lattice = Lattice {
        origin,
        h,
        n: [n.x, n.y, n.z],
    };
    let count = lattice.a_count() + lattice.b_count();
    let mut positions: Vec<Vec3> = (0..count as u32).map(|v| lattice.position(v)).collect();
    // −1 inside, +1 outside, 0 on the surface.
    let mut sign: Vec<i8> = positions
        .par_iter()
        .map(|&p| classify(tree.winding_number(p)))
        .collect();
    let tets = lattice.tets();
    let tets: Vec<[u32; 4]> = tets
        .into_iter()
        .filter(|t| t.iter().any(|&v| sign[v as usize] < 0))
        .collect();

    // Cut points on every edge from − to +.
    let mut edges: Vec<(u32, u32)> = tets
        .iter()
        .flat_map(tet_edges)
        .filter(|&(u, v)| sign[u as usize] * sign[v as usize] < 0)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let cuts: Vec<f64> = edges
        .par_iter()
        .map(|&(u, v)| {
            cut_parameter(
                tree,
                positions[u as usize],
                positions[v as usize],
                sign[u as usize],
            )
        })
        .collect();

    // Warp: vertices too close to a cut point move onto the nearest one;
    // positive vertices first, as in the paper's proof.
    let mut violations: Vec<(u32, f64, usize)> = Vec::new();
    for (e, (&(u, v), &t)) in edges.iter().zip(&cuts).enumerate() {
        let alpha = if lattice.is_long(u, v) {
            ALPHA_LONG
        } else {
            ALPHA_SHORT
        };
        if t < alpha {
            violations.push((u, t, e));
        }
        if 1.0 - t < alpha {
            violations.push((v, 1.0 - t, e));
        }
    }
    violations.sort_unstable_by(|a, b| {
        (sign[a.0 as usize] < 0, a.0)
            .cmp(&(sign[b.0 as usize] < 0, b.0))
            .then(a.1.total_cmp(&b.1))
    });
    let cut_position = |e: usize, positions: &[Vec3]| {
        let (u, v) = edges[e];
        positions[u as usize].lerp(&positions[v as usize], cuts[e])
    };
    let mut i = 0;
    while i < violations.len() {
        let vertex = violations[i].0;
        let mut j = i;
        while j < violations.len() && violations[j].0 == vertex {
            j += 1;
        }
        // The nearest violated cut point whose edge still crosses (its
        // other end was not warped already).
        let nearest = violations[i..j].iter().find(|&&(_, _, e)| {
            let (u, v) = edges[e];
            sign[u as usize] * sign[v as usize] < 0
        });
        if let Some(&(_, _, e)) = nearest {
            positions[vertex as usize] = cut_position(e, &positions);
            sign[vertex as usize] = 0;
        }
        i = j;
    }

    // Surviving cut points get vertex ids after the lattice's.
    let mut cut_id: HashMap<(u32, u32), u32> = HashMap::new();
    for (e, &(u, v)) in edges.iter().enumerate() {
        if sign[u as usize] * sign[v as usize] < 0 {
            cut_id.insert((u, v), positions.len() as u32);
            positions.push(cut_position(e, &positions));
        }
    }
    let mut out = Vec::with_capacity(tets.len() * 2);
    {
        let ctx = Stencil {
            lattice: &lattice,
            sign: &sign,
            cut_id: &cut_id,
        };
        for t in &tets {
            ctx.fill(t, &mut out);
        }
    }
    compact(positions, out)
}

/// Renumbers the used vertices `0..k` in order of first use.
fn compact(positions: Vec<Vec3>, mut tets: Vec<[u32; 4]>) -> Stuffed {
    let mut map = vec![u32::MAX; positions.len()];
    let mut kept = Vec::new();
    for t in &mut tets {
        for v in t.iter_mut() {
            let m = &mut map[*v as usize];
            if *m == u32::MAX {
                *m = kept.len() as u32;
                kept.push(positions[*v as usize]);
            }
            *v = *m;
        }
    }
    Stuffed {
        positions: kept,
        tets,
    }
}

/// The sign of `½ − |w|`: −1 inside, +1 outside. (The magnitude: a closed
/// surface whose faces all point inwards has `w = −1` inside, and is filled
/// as if turned outwards; a cavity of opposite orientation inside a body
/// still has `w = 0`.)
fn classify(w: f64) -> i8 {
    let w = w.abs();
    if w > 0.5 {
        -1
    } else if w < 0.5 {
        1
    } else {
        0
    }
}

/// The six edges of a tet, each `(min, max)`.
fn tet_edges(t: &[u32; 4]) -> [(u32, u32); 6] {
    crate::mesh::tet::TET_EDGES.map(|(i, j)| (t[i].min(t[j]), t[i].max(t[j])))
}

/// Where on the segment `a b` (as `t ∈ [0, 1]` from `a`) the inside region
/// ends, given `a`'s sign. A single crossing is the answer; with several,
/// the first one after which the winding number changes class; with none
/// (the region ends at a hole of an open surface), bisection.
fn cut_parameter(tree: &TriangleTree, a: Vec3, b: Vec3, sign_a: i8) -> f64 {
    let mut hits = Vec::new();
    tree.segment_hits(a, b, &mut hits);
    let at = |t: f64| classify(tree.winding_number(a.lerp(&b, t)));
    match hits.len() {
        1 => hits[0],
        0 => {
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..BISECTIONS {
                let mid = 0.5 * (lo + hi);
                if at(mid) == sign_a {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            0.5 * (lo + hi)
        }
        _ => {
            hits.sort_unstable_by(f64::total_cmp);
            hits.windows(2)
                .find(|w| at(0.5 * (w[0] + w[1])) != sign_a)
                .map_or(hits[hits.len() - 1], |w| w[0])
        }
    }
}

/// The data a stencil reads.
struct Stencil<'a> {
    lattice: &'a Lattice,
    sign: &'a [i8],
    cut_id: &'a HashMap<(u32, u32), u32>,
}

impl Stencil<'_> {
    /// The cut point on edge `u v`.
    fn cut(&self, u: u32, v: u32) -> u32 {
        self.cut_id[&(u.min(v), u.max(v))]
    }

    /// For the quadrilateral on lattice face `a b t` with kept lattice
    /// vertices `a`, `b` and cut points `c_a` on `a t`, `c_b` on `b t`:
    /// whether its diagonal is `a c_b` (else `b c_a`). A cut point on a long
    /// edge takes the diagonal; when `a b` is the long edge, the paper's
    /// parity rule decides. Both tets sharing the face get the same answer.
    fn diagonal_from_a(&self, a: u32, b: u32, t: u32) -> bool {
        if self.lattice.is_long(a, t) {
            return false;
        }
        if self.lattice.is_long(b, t) {
            return true;
        }
        let (ca, cb, ct) = (
            self.lattice.coords(a),
            self.lattice.coords(b),
            self.lattice.coords(t),
        );
        // Coordinates in which `a` exceeds `c_b` (which lies strictly
        // between `b` and `t`): along the long axis, where `a > b`; across
        // it, where `t < a`.
        let greater: usize = (0..3)
            .map(|k| {
                if ca[k] != cb[k] {
                    (ca[k] > cb[k]) as usize
                } else {
                    (ct[k] < ca[k]) as usize
                }
            })
            .sum();
        let in_a_grid = (a as usize) < self.lattice.a_count();
        (greater % 2 == 1) == in_a_grid
    }

    /// Emits the stencil tets of lattice tet `t`.
    fn fill(&self, t: &[u32; 4], out: &mut Vec<[u32; 4]>) {
        let s = t.map(|v| self.sign[v as usize]);
        let neg = s.iter().filter(|&&x| x < 0).count();
        let pos = s.iter().filter(|&&x| x > 0).count();
        if neg == 0 {
            return;
        }
        if pos == 0 {
            out.push(*t);
            return;
        }
        let of = |want: i8| -> Vec<u32> {
            t.iter()
                .zip(&s)
                .filter(|&(_, &x)| x == want)
                .map(|(&v, _)| v)
                .collect()
        };
        let (negs, poss, zeros) = (of(-1), of(1), of(0));
        match (neg, pos) {
            (1, _) => {
                // The corner at the one inside vertex.
                let m = negs[0];
                let mut tet = [m; 4];
                for (slot, &o) in tet[1..].iter_mut().zip(zeros.iter().chain(&poss)) {
                    *slot = if self.sign[o as usize] > 0 {
                        self.cut(m, o)
                    } else {
                        o
                    };
                }
                out.push(tet);
            }
            (2, 1) => {
                // A pyramid: apex at the zero vertex, base the quadrilateral
                // `l m c_m c_l` on the face opposite it.
                let (l, m, top) = (negs[0], negs[1], poss[0]);
                let quad = [l, m, self.cut(m, top), self.cut(l, top)];
                pyramid(zeros[0], quad, self.diagonal_from_a(l, m, top), out);
            }
            (3, 1) => {
                // A prism between the inside face and its cut points.
                let top = poss[0];
                let bottom = [negs[0], negs[1], negs[2]];
                let cuts = bottom.map(|v| self.cut(v, top));
                let rising =
                    [0, 1, 2].map(|k| self.diagonal_from_a(bottom[k], bottom[(k + 1) % 3], top));
                prism(bottom, cuts, rising, out);
            }
            _ => {
                // (2, 2): a prism along the inside edge `l r`.
                let (l, r) = (negs[0], negs[1]);
                let (t0, m) = (poss[0], poss[1]);
                let bottom = [l, self.cut(l, t0), self.cut(l, m)];
                let top = [r, self.cut(r, t0), self.cut(r, m)];
                let first = self.diagonal_from_a(l, r, t0);
                let last = !self.diagonal_from_a(l, r, m);
                // The middle quadrilateral is the cut surface, owned by this
                // tet alone: choose it so the three diagonals are not cyclic.
                let middle = if first == last { !first } else { true };
                prism(bottom, top, [first, middle, last], out);
            }
        }
    }
}

/// Two tets for the pyramid with `apex` over the quadrilateral `q` (in
/// cyclic order), split along `q₀ q₂` when `diagonal_02`, else `q₁ q₃`.
fn pyramid(apex: u32, q: [u32; 4], diagonal_02: bool, out: &mut Vec<[u32; 4]>) {
    if diagonal_02 {
        out.push([apex, q[0], q[1], q[2]]);
        out.push([apex, q[0], q[2], q[3]]);
    } else {
        out.push([apex, q[1], q[2], q[3]]);
        out.push([apex, q[1], q[3], q[0]]);
    }
}

/// Three tets for the prism with triangles `a` and `b` (`aₖ bₖ` are its
/// vertical edges). Side `k` is the quadrilateral `aₖ aₖ₊₁ bₖ₊₁ bₖ`, split
/// along `aₖ bₖ₊₁` when `rising[k]`, else along `aₖ₊₁ bₖ`. The three
/// splits must not all rise or all fall (no prism can then be split).
fn prism(a: [u32; 3], b: [u32; 3], rising: [bool; 3], out: &mut Vec<[u32; 4]>) {
    // A corner of `a` where two diagonals meet: side k rises from it and
    // side k − 1 falls into it.
    let k = (0..3)
        .find(|&k| rising[k] && !rising[(k + 2) % 3])
        .unwrap_or_else(|| {
            debug_assert!(false, "cyclic prism diagonals {rising:?}");
            0
        });
    let (k1, k2) = ((k + 1) % 3, (k + 2) % 3);
    out.push([a[k], b[0], b[1], b[2]]);
    pyramid(a[k], [a[k1], a[k2], b[k2], b[k1]], rising[k1], out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lattice_tets_tile_the_interior_cubes() {
        let lattice = Lattice {
            origin: Vec3::zeros(),
            h: 1.0,
            n: [3, 3, 3],
        };
        let tets = lattice.tets();
        // 3 axes × 2·3·3 neighbouring pairs × 4 tets, each h³/12.
        assert_eq!(tets.len(), 3 * 18 * 4);
        for t in &tets {
            let [a, b, c, d] = t.map(|v| lattice.position(v));
            let v = crate::mesh::tet::signed_volume(&a, &b, &c, &d).abs();
            assert!((v - 1.0 / 12.0).abs() < 1e-12);
            assert!(lattice.is_long(t[0], t[1]) && lattice.is_long(t[2], t[3]));
            assert!(!lattice.is_long(t[0], t[2]));
        }
    }

    #[test]
    fn prism_split_covers_the_prism() {
        // A unit triangular prism: volume ½, for every non-cyclic rule.
        let p = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(1.0, 0.0, 1.0),
            Vec3::new(0.0, 1.0, 1.0),
        ];
        for bits in 1..7u8 {
            let rising = [bits & 1 != 0, bits & 2 != 0, bits & 4 != 0];
            let mut out = Vec::new();
            prism([0, 1, 2], [3, 4, 5], rising, &mut out);
            let vol: f64 = out
                .iter()
                .map(|t| {
                    let [a, b, c, d] = t.map(|v| p[v as usize]);
                    crate::mesh::tet::signed_volume(&a, &b, &c, &d).abs()
                })
                .sum();
            assert!((vol - 0.5).abs() < 1e-12, "{rising:?}: {vol}");
            // The split uses the requested diagonal of every side.
            for k in 0..3 {
                let (a, b) = if rising[k] {
                    (k, 3 + (k + 1) % 3)
                } else {
                    ((k + 1) % 3, 3 + k)
                };
                assert!(
                    out.iter()
                        .any(|t| t.contains(&(a as u32)) && t.contains(&(b as u32))),
                    "{rising:?} side {k}"
                );
            }
        }
    }
}
