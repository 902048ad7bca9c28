//! Polygon triangulation that respects concave and non-planar polygons.
//!
//! Triangles pass through. Quads are split along the diagonal that keeps both
//! halves facing the quad's normal (so concave quads are split correctly),
//! preferring the shorter diagonal. Larger polygons are projected onto the
//! plane of their Newell normal and ear-clipped with `earcut` (the mapbox
//! algorithm); if ear clipping cannot use every corner (a self-intersecting
//! polygon), the polygon falls back to a fan around its centroid-nearest
//! corner. Winding is preserved in every case.

use super::Vec3;

/// Reusable buffers for triangulating many polygons without allocating.
#[derive(Default)]
pub(crate) struct Triangulator {
    earcut: earcut::Earcut<f64>,
    projected: Vec<[f64; 2]>,
    local: Vec<u32>,
    sorted: Vec<u32>,
}

/// Corners from which a polygon that goes round the same vertices again
/// and again is fanned instead of ear-clipped (see `Triangulator::ear_clip`).
const MANY_CORNERS: usize = 64;

/// Newell's normal of a polygon (unnormalised; twice the vector area).
fn newell_normal(positions: &[Vec3], corners: &[u32]) -> Vec3 {
    let mut n = Vec3::zeros();
    let mut prev = positions[corners[corners.len() - 1] as usize];
    for &c in corners {
        let cur = positions[c as usize];
        n += (prev - cur).cross(&(prev + cur));
        prev = cur;
    }
    n * 0.5
}

impl Triangulator {
    /// Appends the triangles of polygon `corners` to `out`, as positions in
    /// `corners` (so that what each corner carries, its vertex or its
    /// texture coordinate, can be looked up). Returns whether the polygon
    /// crosses itself (a bowtie quad, a pentagram): its triangles then
    /// overlap, some facing away from it. (A polygon without area is not
    /// counted: its triangles are degenerate, and dropped as such.)
    pub(crate) fn triangulate(
        &mut self,
        positions: &[Vec3],
        corners: &[u32],
        out: &mut Vec<[u32; 3]>,
    ) -> bool {
        match *corners {
            [_, _, _] => {
                out.push([0, 1, 2]);
                false
            }
            [a, b, c, d] => {
                let (split, crossed) = split_quad(positions, [a, b, c, d]);
                out.extend(split);
                crossed
            }
            _ => self.ear_clip(positions, corners, out),
        }
    }

    fn ear_clip(&mut self, positions: &[Vec3], corners: &[u32], out: &mut Vec<[u32; 3]>) -> bool {
        let normal = newell_normal(positions, corners);
        let norm = normal.norm();
        if norm == 0.0 || !norm.is_finite() {
            // No usable plane: a fan keeps the connectivity, and the
            // validator drops whatever comes out degenerate.
            fan(corners.len(), 0, out);
            return false;
        }
        if corners.len() > MANY_CORNERS && self.mostly_repeated(corners) {
            // Ear clipping such a polygon took cubic time (QA: `f 1 2 3 1 2
            // 3 …` of 8,000 corners, 96 s); a polygon that revisits a vertex
            // or two (a keyhole round a hole) is still clipped.
            return fan_crossed(positions, corners, normal, out);
        }
        let (u, v) = super::across(normal / norm);
        let origin = positions[corners[0] as usize];
        self.projected.clear();
        self.projected.extend(corners.iter().map(|&c| {
            let d = positions[c as usize] - origin;
            [d.dot(&u), d.dot(&v)]
        }));
        self.earcut
            .earcut_slice(&self.projected, &[] as &[u32], &mut self.local);
        if self.local.len() != 3 * (corners.len() - 2) {
            return fan_crossed(positions, corners, normal, out);
        }
        for t in self.local.chunks_exact(3) {
            let [p, q, r] = [t[0], t[1], t[2]].map(|i| self.projected[i as usize]);
            let area = (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]);
            let [a, b, c] = [t[0], t[1], t[2]];
            // (u, v, n) is right-handed, so the polygon winds counter-clockwise
            // in the projection; keep each triangle the same way round.
            out.push(if area >= 0.0 { [a, b, c] } else { [a, c, b] });
        }
        false
    }

    /// Whether most of `corners` name a vertex named before in it.
    fn mostly_repeated(&mut self, corners: &[u32]) -> bool {
        self.sorted.clear();
        self.sorted.extend_from_slice(corners);
        self.sorted.sort_unstable();
        self.sorted.dedup();
        2 * self.sorted.len() < corners.len()
    }
}

/// Appends a fan of polygon `corners` (of Newell normal `normal`) around
/// its centre-most corner; returns whether a triangle of it faces against
/// the polygon (it crosses itself).
fn fan_crossed(positions: &[Vec3], corners: &[u32], normal: Vec3, out: &mut Vec<[u32; 3]>) -> bool {
    let first = out.len();
    fan(corners.len(), centre_corner(positions, corners), out);
    out[first..].iter().any(|t| {
        let [a, b, c] = t.map(|k| positions[corners[k as usize] as usize]);
        (b - a).cross(&(c - a)).dot(&normal) < 0.0
    })
}

/// Splits a quad along the diagonal whose two triangles both face the quad's
/// normal, preferring the shorter diagonal when both do (triangles of
/// corner positions 0–3); and whether the quad crosses itself.
fn split_quad(positions: &[Vec3], q: [u32; 4]) -> ([[u32; 3]; 2], bool) {
    let p = q.map(|i| positions[i as usize]);
    let normal = newell_normal(positions, &q);
    let faces_up =
        |a: usize, b: usize, c: usize| (p[b] - p[a]).cross(&(p[c] - p[a])).dot(&normal) > 0.0;
    let diag02 = [[0, 1, 2], [0, 2, 3]];
    let diag13 = [[0, 1, 3], [1, 2, 3]];
    let ok02 = faces_up(0, 1, 2) && faces_up(0, 2, 3);
    let ok13 = faces_up(0, 1, 3) && faces_up(1, 2, 3);
    // Crossed where each diagonal cuts it into triangles facing opposite
    // ways, more than 120° apart (a bowtie, 180°, whose lobes' areas may
    // cancel in the normal; a dart has one diagonal inside, a doubled corner
    // a triangle of no area, a warped quad folds by less).
    let area = |a: usize, b: usize, c: usize| (p[b] - p[a]).cross(&(p[c] - p[a]));
    let opposed = |s: Vec3, t: Vec3| s.dot(&t) < -0.5 * s.norm() * t.norm();
    let crossed = opposed(area(0, 1, 2), area(0, 2, 3)) && opposed(area(0, 1, 3), area(1, 2, 3));
    let split = match (ok02, ok13) {
        (true, false) => diag02,
        (false, true) => diag13,
        _ => {
            if (p[2] - p[0]).norm_squared() <= (p[3] - p[1]).norm_squared() {
                diag02
            } else {
                diag13
            }
        }
    };
    (split, crossed)
}

/// The corner closest to the polygon's centroid (the best fan apex for a
/// star-shaped polygon).
fn centre_corner(positions: &[Vec3], corners: &[u32]) -> usize {
    let centroid = corners
        .iter()
        .fold(Vec3::zeros(), |acc, &c| acc + positions[c as usize])
        / corners.len() as f64;
    (0..corners.len())
        .min_by(|&i, &j| {
            let di = (positions[corners[i] as usize] - centroid).norm_squared();
            let dj = (positions[corners[j] as usize] - centroid).norm_squared();
            di.total_cmp(&dj)
        })
        .unwrap_or(0)
}

/// A fan of an `n`-gon's corner positions around `apex`.
fn fan(n: usize, apex: usize, out: &mut Vec<[u32; 3]>) {
    for k in 1..n - 1 {
        let b = (apex + k) % n;
        let c = (apex + k + 1) % n;
        out.push([apex, b, c].map(|i| i as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn area_normal(positions: &[Vec3], tris: &[[u32; 3]]) -> Vec3 {
        tris.iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| positions[i as usize]);
                (b - a).cross(&(c - a)) * 0.5
            })
            .sum()
    }

    /// A polygon that goes round a triangle hundreds of times is fanned
    /// (ear clipping it took cubic time); one that revisits two vertices
    /// (a keyhole round a hole) is still ear-clipped, its hole left open.
    #[test]
    fn only_polygons_mostly_repeating_their_vertices_are_fanned() {
        let n = 60;
        let ring = |r: f64| {
            (0..n).map(move |k| {
                let a = std::f64::consts::TAU * k as f64 / n as f64;
                Vec3::new(r * a.cos(), r * a.sin(), 0.0)
            })
        };
        let positions: Vec<Vec3> = ring(2.0).chain(ring(1.0)).collect();
        let n = n as u32;
        let mut keyhole: Vec<u32> = (0..n).collect();
        keyhole.extend([0, n]);
        keyhole.extend((n + 1..2 * n).rev());
        keyhole.push(n);
        let mut t = Triangulator::default();
        assert!(!t.mostly_repeated(&keyhole));
        let mut out = Vec::new();
        assert!(!t.triangulate(&positions, &keyhole, &mut out));
        assert_eq!(out.len(), keyhole.len() - 2);
        let at_corners: Vec<[u32; 3]> =
            out.iter().map(|t| t.map(|k| keyhole[k as usize])).collect();
        let polygon =
            |r: f64| 0.5 * f64::from(n) * (std::f64::consts::TAU / f64::from(n)).sin() * r * r;
        let annulus = polygon(2.0) - polygon(1.0);
        assert!((area_normal(&positions, &at_corners) - Vec3::z() * annulus).norm() < 1e-9);

        let round: Vec<u32> = (0..3 * 700).map(|k| k % 3).collect();
        assert!(t.mostly_repeated(&round));
        out.clear();
        t.triangulate(&positions, &round, &mut out);
        assert_eq!(out.len(), round.len() - 2);
    }

    #[test]
    fn concave_quad_is_split_on_the_inside_diagonal() {
        // An arrowhead: corner 0 points inwards, so only the 0-2 diagonal is
        // inside, although the 1-3 diagonal is shorter.
        let p = vec![
            Vec3::new(0.0, 0.1, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 3.0, 0.0),
            Vec3::new(-1.0, 0.0, 0.0),
        ];
        let mut t = Triangulator::default();
        let mut out = Vec::new();
        t.triangulate(&p, &[0, 1, 2, 3], &mut out);
        assert_eq!(out, vec![[0, 1, 2], [0, 2, 3]]);
        let expected_area = newell_normal(&p, &[0, 1, 2, 3]) * 0.5;
        assert!((area_normal(&p, &out) - expected_area).norm() < 1e-12);
    }

    /// Triangles are of positions in the polygon, not of its vertices,
    /// however it is cut: a quad, an ear-clipped hexagon, and a
    /// self-intersecting pentagram (the fan fallback).
    #[test]
    fn triangles_index_the_polygons_corners() {
        let ring = |n: usize, step: usize| -> Vec<Vec3> {
            (0..n)
                .map(|k| {
                    let a = std::f64::consts::TAU * (k * step % n) as f64 / n as f64;
                    Vec3::new(a.cos(), a.sin(), 0.0)
                })
                .collect()
        };
        for (points, expected) in [(ring(4, 1), 2), (ring(6, 1), 4), (ring(5, 2), 3)] {
            // The polygon's vertices are 10, 12, ... in a larger array.
            let mut positions = vec![Vec3::repeat(9.0); 10 + 2 * points.len()];
            let corners: Vec<u32> = (0..points.len()).map(|k| (10 + 2 * k) as u32).collect();
            for (&c, p) in corners.iter().zip(&points) {
                positions[c as usize] = *p;
            }
            let mut out = Vec::new();
            Triangulator::default().triangulate(&positions, &corners, &mut out);
            assert_eq!(out.len(), expected);
            let mut used = vec![false; points.len()];
            for t in &out {
                for &k in t {
                    used[k as usize] = true;
                }
                // The same triangle as the points at those positions.
                let [a, b, c] = t.map(|k| points[k as usize]);
                assert!((b - a).cross(&(c - a)).norm() > 1e-3);
            }
            assert!(used.iter().all(|&u| u), "every corner used");
        }
    }

    #[test]
    fn concave_polygon_ear_clipping_preserves_area_and_winding() {
        // An "E"-like concave 12-gon in the xz plane.
        let outline = [
            (0.0, 0.0),
            (3.0, 0.0),
            (3.0, 1.0),
            (1.0, 1.0),
            (1.0, 2.0),
            (2.0, 2.0),
            (2.0, 3.0),
            (1.0, 3.0),
            (1.0, 4.0),
            (3.0, 4.0),
            (3.0, 5.0),
            (0.0, 5.0),
        ];
        let p: Vec<Vec3> = outline
            .iter()
            .map(|&(x, z)| Vec3::new(x, 0.0, -z))
            .collect();
        let corners: Vec<u32> = (0..12).collect();
        let mut t = Triangulator::default();
        let mut out = Vec::new();
        t.triangulate(&p, &corners, &mut out);
        assert_eq!(out.len(), 10);
        let expected = newell_normal(&p, &corners) * 0.5;
        let got = area_normal(&p, &out);
        assert!((got - expected).norm() < 1e-12, "{got} vs {expected}");
        // Every triangle faces the same way as the polygon (no fan flips).
        for tri in &out {
            let [a, b, c] = tri.map(|i| p[i as usize]);
            assert!((b - a).cross(&(c - a)).dot(&expected) > 0.0);
        }
    }
}
