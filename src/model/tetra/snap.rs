//! Boundary snapping after stuffing.
//!
//! Stuffing puts every boundary vertex on the surface, but a boundary face
//! can still span a crease or a feature thinner than a cell and stand off
//! the surface by up to about half a cell. Snapping moves boundary vertices
//! along the surface towards the features their faces miss: each vertex
//! whose faces stray farther than the tolerance tries the surface points
//! nearest to its faces' worst samples (and points part of the way there),
//! and takes the move that most reduces the largest distance of its faces,
//! provided every tet around it keeps a positive volume and dihedral angles
//! within stuffing's bounds. The topology never changes.

use rayon::prelude::*;

use super::quality::{dihedral_angles, face_samples};
use super::tree::TriangleTree;
use crate::mesh::Vec3;
use crate::mesh::tet::signed_volume;

/// Dihedral bounds a move must keep (isosurface stuffing's guarantee).
const MIN_DIHEDRAL: f64 = 10.7 * std::f64::consts::PI / 180.0;
const MAX_DIHEDRAL: f64 = 164.8 * std::f64::consts::PI / 180.0;

/// Snapping passes.
const PASSES: usize = 6;

/// Fractions of the way to a candidate point tried for a move.
const MOVES: [f64; 3] = [1.0, 0.6, 0.3];

/// Moves boundary vertices of the positively oriented `tets` so that their
/// faces come within `tolerance` of `tree`'s surface where quality allows;
/// faces farther than `reach` span holes of an open surface and are left
/// alone. Returns the number of moves.
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
    let mut moves = 0;
    // Vertices worth trying: at first all; later those next to a move.
    let mut active = vec![true; positions.len()];
    // Distances beyond `reach` are not looked at.
    let limit = reach * 1.001;
    let mut deviation: Vec<(f64, Vec3)> = faces
        .par_iter()
        .map(|f| worst(tree, f.map(|v| positions[v as usize]), limit))
        .collect();
    for _ in 0..PASSES {
        let offends = |f: u32, deviation: &[(f64, Vec3)]| {
            let d = deviation[f as usize].0;
            d > tolerance && d <= reach
        };
        let mut offending: Vec<(f64, u32)> = Vec::new();
        for (k, f) in faces.iter().enumerate() {
            if offends(k as u32, &deviation) {
                let d = deviation[k].0;
                offending.extend(f.iter().filter(|&&v| active[v as usize]).map(|&v| (d, v)));
            }
        }
        offending.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        offending.dedup_by_key(|x| x.1);
        let mut next = vec![false; positions.len()];
        let mut moved_this_pass = 0;
        for &(_, v) in &offending {
            let incident = around_face.of(v);
            let face_corners =
                |f: u32, positions: &[Vec3]| faces[f as usize].map(|u| positions[u as usize]);
            let origin = positions[v as usize];
            let mut best = (
                incident
                    .iter()
                    .map(|&f| deviation[f as usize].0)
                    .fold(0.0, f64::max),
                origin,
            );
            for &f in incident.iter().filter(|&&f| offends(f, &deviation)) {
                let Some(target) = tree.closest_point(deviation[f as usize].1) else {
                    continue;
                };
                for s in MOVES {
                    positions[v as usize] = origin.lerp(&target, s);
                    let quality = around_tet
                        .of(v)
                        .iter()
                        .all(|&t| good(tets[t as usize].map(|u| positions[u as usize])));
                    if !quality {
                        continue;
                    }
                    // The largest distance of the moved faces, given up as
                    // soon as it cannot beat the best.
                    let mut after = 0.0;
                    for &g in incident {
                        after = worst(tree, face_corners(g, positions), best.0).0.max(after);
                        if after >= best.0 {
                            break;
                        }
                    }
                    if after < best.0 {
                        best = (after, positions[v as usize]);
                        break;
                    }
                }
            }
            positions[v as usize] = best.1;
            if best.1 != origin {
                moved_this_pass += 1;
                for &f in incident {
                    deviation[f as usize] = worst(tree, face_corners(f, positions), limit);
                    for &u in &faces[f as usize] {
                        next[u as usize] = true;
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
    moves
}

/// The farthest sample of a triangle from the surface, and that sample;
/// distances are capped at `limit` (and the search stops at a sample that
/// far).
fn worst(tree: &TriangleTree, [a, b, c]: [Vec3; 3], limit: f64) -> (f64, Vec3) {
    let mut best = (0.0, a);
    for q in face_samples(a, b, c) {
        let d = tree.distance_within(q, limit);
        if d > best.0 {
            best = (d, q);
            if d >= limit {
                break;
            }
        }
    }
    best
}

/// Whether tet `x` is positively oriented with dihedral angles in bounds.
fn good(x: [Vec3; 4]) -> bool {
    signed_volume(&x[0], &x[1], &x[2], &x[3]) > 0.0
        && dihedral_angles(x)
            .iter()
            .all(|&a| (MIN_DIHEDRAL..=MAX_DIHEDRAL).contains(&a))
}

/// The items (faces or tets) around each vertex, in compressed rows.
struct Incidence {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Incidence {
    fn new<'a>(vertices: usize, items: impl Iterator<Item = &'a [u32]> + Clone) -> Self {
        let mut start = vec![0u32; vertices + 1];
        for item in items.clone() {
            for &v in item {
                start[v as usize + 1] += 1;
            }
        }
        for v in 0..vertices {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[vertices] as usize];
        for (k, item) in items.enumerate() {
            for &v in item {
                list[fill[v as usize] as usize] = k as u32;
                fill[v as usize] += 1;
            }
        }
        Self { start, items: list }
    }

    fn of(&self, v: u32) -> &[u32] {
        &self.items[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
}
