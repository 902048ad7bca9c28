//! Element quality and fidelity measures of a tet mesh against the surface
//! it was built from.

use rayon::prelude::*;

use super::tree::TriangleTree;
use crate::mesh::tet::{TET_EDGES, signed_volume};
use crate::mesh::{TetMesh, Vec3};

/// The six dihedral angles of tet `x` in radians, at edges
/// `01, 02, 03, 12, 13, 23`.
pub fn dihedral_angles(x: [Vec3; 4]) -> [f64; 6] {
    dihedral_cosines(x).map(f64::acos)
}

/// The cosines of [`dihedral_angles`] (cheaper: no inverse cosine).
pub fn dihedral_cosines(x: [Vec3; 4]) -> [f64; 6] {
    // Face k is opposite vertex k; its normal points away from vertex k.
    let face = |k: usize| {
        let [a, b, c] = match k {
            0 => [x[1], x[2], x[3]],
            1 => [x[0], x[2], x[3]],
            2 => [x[0], x[1], x[3]],
            _ => [x[0], x[1], x[2]],
        };
        let n = (b - a).cross(&(c - a));
        if n.dot(&(a - x[k])) < 0.0 { -n } else { n }
    };
    let n = [0, 1, 2, 3].map(|k| face(k).normalize());
    // The edge i j lies on the two faces opposite the other two vertices;
    // the dihedral angle is π minus the angle between their normals.
    [(2, 3), (1, 3), (1, 2), (0, 3), (0, 2), (0, 1)].map(|(p, q)| -n[p].dot(&n[q]).clamp(-1.0, 1.0))
}

/// Circumradius over shortest edge of tet `x` (`√6/4 ≈ 0.612` for a
/// regular tet; large for slivers and needles).
pub fn radius_edge_ratio(x: [Vec3; 4]) -> f64 {
    let (a, b, c) = (x[1] - x[0], x[2] - x[0], x[3] - x[0]);
    let num = b.cross(&c) * a.norm_squared()
        + c.cross(&a) * b.norm_squared()
        + a.cross(&b) * c.norm_squared();
    let radius = num.norm() / (2.0 * a.dot(&b.cross(&c))).abs();
    let shortest = TET_EDGES
        .iter()
        .map(|&(i, j)| (x[i] - x[j]).norm())
        .fold(f64::INFINITY, f64::min);
    radius / shortest
}

/// Angle statistics of a whole mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AngleStats {
    /// Smallest dihedral angle, degrees.
    pub min_deg: f64,
    /// 1st percentile of the dihedral angles, degrees.
    pub p1_deg: f64,
    /// Largest dihedral angle, degrees.
    pub max_deg: f64,
    /// Largest circumradius-to-shortest-edge ratio.
    pub max_radius_edge: f64,
}

/// Dihedral angle and radius-edge statistics of `mesh`.
pub fn angle_stats(mesh: &TetMesh) -> AngleStats {
    let p = mesh.positions();
    let corners = |t: &[u32; 4]| t.map(|v| p[v as usize]);
    let mut angles: Vec<f64> = mesh
        .tets()
        .par_iter()
        .flat_map_iter(|t| dihedral_angles(corners(t)))
        .collect();
    angles.sort_unstable_by(f64::total_cmp);
    let max_radius_edge = mesh
        .tets()
        .par_iter()
        .map(|t| radius_edge_ratio(corners(t)))
        .reduce(|| 0.0, f64::max);
    let deg = f64::to_degrees;
    AngleStats {
        min_deg: angles.first().copied().map_or(0.0, deg),
        p1_deg: angles.get(angles.len() / 100).copied().map_or(0.0, deg),
        max_deg: angles.last().copied().map_or(0.0, deg),
        max_radius_edge,
    }
}

/// Volume enclosed by a closed surface where its winding number is at least
/// 1 in magnitude (the union of overlapping parts, which the signed volume
/// would count twice; a surface facing inwards counts as turned outwards,
/// as the tetrahedraliser fills it), by casting `rays × rays` rays along `z` and integrating the
/// inside length of each exactly.
pub fn enclosed_volume(tree: &TriangleTree, lo: Vec3, hi: Vec3, rays: usize) -> f64 {
    let size = hi - lo;
    let (dx, dy) = (size.x / rays as f64, size.y / rays as f64);
    let margin = Vec3::new(0.0, 0.0, size.z.max(size.max() * 1e-3));
    (0..rays * rays)
        .into_par_iter()
        .map_init(Vec::new, |hits, r| {
            // Ray positions off the cell centres by irrational fractions, so
            // no ray runs exactly through a lattice of mesh edges.
            let x = lo.x + dx * ((r % rays) as f64 + 0.5 + 0.013_721);
            let y = lo.y + dy * ((r / rays) as f64 + 0.5 - 0.021_313);
            let a = Vec3::new(x, y, lo.z) - margin;
            let b = Vec3::new(x, y, hi.z) + margin;
            hits.clear();
            tree.signed_segment_hits(a, b, hits);
            hits.sort_unstable_by(|p: &(f64, i32), q| p.0.total_cmp(&q.0));
            let mut winding = 0;
            let mut inside = 0.0;
            for w in hits.windows(2) {
                winding += w[0].1;
                if winding != 0 {
                    inside += w[1].0 - w[0].0;
                }
            }
            inside * (b - a).norm() * dx * dy
        })
        .sum()
}

/// Sample points of triangle `a b c`: the ten points with barycentric
/// coordinates in thirds (corners, edge thirds and the centroid).
pub fn face_samples(a: Vec3, b: Vec3, c: Vec3) -> [Vec3; 10] {
    let mut out = [a; 10];
    let mut k = 0;
    for i in 0..=3 {
        for j in 0..=3 - i {
            let (u, v) = (i as f64 / 3.0, j as f64 / 3.0);
            out[k] = a * (1.0 - u - v) + b * u + c * v;
            k += 1;
        }
    }
    out
}

/// Largest distance from the surface `tree` to the samples
/// ([`face_samples`]) of `faces`.
pub fn max_distance_to(tree: &TriangleTree, positions: &[Vec3], faces: &[[u32; 3]]) -> f64 {
    faces
        .par_iter()
        .map(|f| {
            let [a, b, c] = f.map(|v| positions[v as usize]);
            face_samples(a, b, c)
                .into_iter()
                .map(|q| tree.distance(q))
                .fold(0.0, f64::max)
        })
        .reduce(|| 0.0, f64::max)
}

/// Total volume of `mesh` (positive: its tets are positively oriented).
pub fn volume(mesh: &TetMesh) -> f64 {
    let p = mesh.positions();
    mesh.tets()
        .iter()
        .map(|t| {
            let [a, b, c, d] = t.map(|v| p[v as usize]);
            signed_volume(&a, &b, &c, &d)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_tet_has_the_textbook_angles_and_ratio() {
        let x = [
            Vec3::new(1.0, 1.0, 1.0),
            Vec3::new(1.0, -1.0, -1.0),
            Vec3::new(-1.0, 1.0, -1.0),
            Vec3::new(-1.0, -1.0, 1.0),
        ];
        for a in dihedral_angles(x) {
            assert!((a.to_degrees() - 70.528_779_365_509_31).abs() < 1e-9);
        }
        assert!((radius_edge_ratio(x) - 6f64.sqrt() / 4.0).abs() < 1e-12);
        // The corner of a cube: three right angles and three of 54.7°.
        let corner = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let mut a = dihedral_angles(corner).map(f64::to_degrees);
        a.sort_by(f64::total_cmp);
        assert!((a[0] - 54.735_610_317_245_35).abs() < 1e-9 && (a[5] - 90.0).abs() < 1e-9);
    }

    #[test]
    fn enclosed_volume_counts_overlaps_once() {
        use crate::mesh::{ValidateOptions, primitives, validate};
        let raw = primitives::cuboid(Vec3::new(1.0, 1.0, 1.0), 2);
        let (s, _) =
            validate(&raw, std::path::Path::new("c"), &ValidateOptions::default()).unwrap();
        // Two unit cubes overlapping in a 0.5 × 1 × 1 slab: union 1.5.
        let shift = Vec3::new(0.5, 0.0, 0.0);
        let mut positions = s.positions().to_vec();
        positions.extend(s.positions().iter().map(|p| p + shift));
        let n = s.positions().len() as u32;
        let mut tris = s.triangles().to_vec();
        tris.extend(s.triangles().iter().map(|t| t.map(|v| v + n)));
        let tree = TriangleTree::new(&positions, &tris);
        let (lo, hi) = crate::mesh::bounds(&positions);
        let v = enclosed_volume(&tree, lo, hi, 64);
        assert!((v - 1.5).abs() < 0.02, "{v}");
    }
}
