//! A bounding-volume hierarchy over a triangle soup, answering the three
//! queries the tetrahedraliser needs: the generalised winding number of a
//! point (inside/outside on open, self-intersecting and multi-component
//! surfaces), the crossings of a segment with the surface, and the distance
//! from a point to the surface.
//!
//! Winding numbers follow Jacobson et al. 2013 ("Robust inside-outside
//! segmentation using generalized winding numbers") with the far-field
//! dipole approximation of Barill et al. 2018 ("Fast winding numbers for
//! soups and clouds"): a node seen from farther than [`BETA`] times its
//! radius contributes `N · (c − q) / ‖c − q‖³` (its area-weighted normal `N`
//! at its area-weighted centroid `c`); nearer nodes are opened, and leaves sum
//! exact solid angles (Van Oosterom and Strackee 1983).

use std::f64::consts::PI;

use crate::mesh::Vec3;

/// Far-field threshold: a node is approximated when the query is farther
/// than `BETA` times its radius (Barill et al. use 2; the first-order error
/// then stays below a few hundredths, far from the 0.5 decision threshold).
const BETA: f64 = 2.0;

/// Triangles per leaf.
const LEAF: usize = 4;

/// Depth bound of the traversal stacks (a median split of 2³² triangles is 32 deep).
const STACK: usize = 64;

#[derive(Clone, Debug)]
struct Node {
    lo: Vec3,
    hi: Vec3,
    /// Area-weighted centroid.
    center: Vec3,
    /// Sum of the triangles' area vectors `½ (b − a) × (c − a)`.
    normal: Vec3,
    /// Largest distance from `center` to a corner of the node's triangles.
    radius: f64,
    /// Leaf: first triangle; inner: index of the right child (the left
    /// child follows its parent).
    start: u32,
    /// Triangles in a leaf, 0 for an inner node.
    count: u32,
}

/// A bounding-volume hierarchy over triangles given as corner positions.
#[derive(Clone, Debug)]
pub struct TriangleTree {
    nodes: Vec<Node>,
    triangles: Vec<[Vec3; 3]>,
}

impl TriangleTree {
    /// Builds the tree (median split along the longest axis of the
    /// centroids' bounds). Triangles of zero area are kept; they contribute
    /// nothing to winding numbers.
    pub fn new(positions: &[Vec3], triangles: &[[u32; 3]]) -> Self {
        let mut tris: Vec<[Vec3; 3]> = triangles
            .iter()
            .map(|t| t.map(|i| positions[i as usize]))
            .collect();
        let mut nodes = Vec::with_capacity(2 * tris.len() / LEAF + 1);
        if !tris.is_empty() {
            let n = tris.len();
            build(&mut nodes, &mut tris, 0, n);
        }
        Self {
            nodes,
            triangles: tris,
        }
    }

    /// The generalised winding number of `q`: 1 inside a closed outward
    /// oriented surface, 0 outside, fractional near holes, 2 where two
    /// closed parts overlap.
    pub fn winding_number(&self, q: Vec3) -> f64 {
        if self.nodes.is_empty() {
            return 0.0;
        }
        let mut omega = 0.0;
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = &self.nodes[stack[top] as usize];
            let d = node.center - q;
            let dist = d.norm();
            if node.count == 0 && dist > BETA * node.radius {
                omega += node.normal.dot(&d) / (dist * dist * dist);
            } else if node.count > 0 {
                let s = node.start as usize;
                for t in &self.triangles[s..s + node.count as usize] {
                    omega += solid_angle(t, q);
                }
            } else {
                let index = children(node, stack[top]);
                stack[top] = index.0;
                stack[top + 1] = index.1;
                top += 2;
            }
        }
        omega / (4.0 * PI)
    }

    /// Appends to `out` the parameters `t ∈ [0, 1]` at which the segment
    /// `a + t (b − a)` crosses a triangle, unsorted.
    pub fn segment_hits(&self, a: Vec3, b: Vec3, out: &mut Vec<f64>) {
        self.visit_segment_hits(a, b, |t, _| out.push(t));
    }

    /// How often an edge of `edges` (between `positions`) passes through a
    /// triangle of the tree: where a surface passes through itself (two
    /// overlapping parts, a lid sunk into its pot). An edge's own triangles
    /// hold it and its neighbours touch it at an end, so neither counts.
    pub fn edge_crossings(&self, positions: &[Vec3], edges: &[[u32; 2]]) -> usize {
        let mut crossings = 0;
        for &[a, b] in edges {
            let (a, b) = (positions[a as usize], positions[b as usize]);
            self.visit_segment_triangles(a, b, |tri| {
                crossings += usize::from(segment_passes_through(a, b, tri));
            });
        }
        crossings
    }

    /// Like [`TriangleTree::segment_hits`], with the change of winding
    /// number at each crossing: +1 entering through a face's back (into a
    /// closed outward-oriented surface), −1 leaving.
    pub fn signed_segment_hits(&self, a: Vec3, b: Vec3, out: &mut Vec<(f64, i32)>) {
        self.visit_segment_hits(a, b, |t, entering| {
            out.push((t, if entering { 1 } else { -1 }))
        });
    }

    /// Calls `f(t, entering)` for every crossing of the segment `a b`.
    fn visit_segment_hits(&self, a: Vec3, b: Vec3, mut f: impl FnMut(f64, bool)) {
        let dir = b - a;
        self.visit_segment_triangles(a, b, |tri| {
            if let Some(t) = segment_triangle(a, dir, tri) {
                let normal = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
                f(t, normal.dot(&dir) < 0.0);
            }
        });
    }

    /// Calls `f` with every triangle in a leaf whose box the segment `a b`
    /// meets.
    fn visit_segment_triangles(&self, a: Vec3, b: Vec3, mut f: impl FnMut(&[Vec3; 3])) {
        if self.nodes.is_empty() {
            return;
        }
        let inv = (b - a).map(|c| 1.0 / c);
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let id = stack[top];
            let node = &self.nodes[id as usize];
            if !segment_meets_box(a, inv, node.lo, node.hi) {
                continue;
            }
            if node.count > 0 {
                let s = node.start as usize;
                self.triangles[s..s + node.count as usize]
                    .iter()
                    .for_each(&mut f);
            } else {
                let index = children(node, id);
                stack[top] = index.0;
                stack[top + 1] = index.1;
                top += 2;
            }
        }
    }

    /// Distance from `q` to the nearest triangle (infinite for an empty tree).
    pub fn distance(&self, q: Vec3) -> f64 {
        self.distance_within(q, f64::INFINITY)
    }

    /// `min(distance(q), limit)`, faster than [`TriangleTree::distance`]
    /// for a small `limit`: nothing farther is looked at.
    pub fn distance_within(&self, q: Vec3, limit: f64) -> f64 {
        self.distance_beyond(q, 0.0, limit)
    }

    /// Like [`TriangleTree::distance_within`], but when the distance is at
    /// most `floor` only some value `≤ floor` (the search stops at the first
    /// triangle that near).
    pub fn distance_beyond(&self, q: Vec3, floor: f64, limit: f64) -> f64 {
        self.nearest(q, floor, limit)
            .map_or(limit, |(p, _)| (p - q).norm().min(limit))
    }

    /// The point of the surface nearest to `q` and the corners of the
    /// triangle it lies on (`None` for an empty tree).
    pub fn closest_triangle(&self, q: Vec3) -> Option<(Vec3, [Vec3; 3])> {
        self.nearest(q, 0.0, f64::INFINITY)
    }

    /// The nearest surface point closer than `limit` and its triangle, if
    /// any; or the first one found at most `floor` away.
    fn nearest(&self, q: Vec3, floor: f64, limit: f64) -> Option<(Vec3, [Vec3; 3])> {
        let floor = floor * floor;
        if self.nodes.is_empty() {
            return None;
        }
        let mut best_d2 = limit * limit;
        let mut best = None;
        let mut stack = [0u32; STACK];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let id = stack[top];
            let node = &self.nodes[id as usize];
            if box_distance_sq(q, node.lo, node.hi) >= best_d2 {
                continue;
            }
            if node.count > 0 {
                let s = node.start as usize;
                for t in &self.triangles[s..s + node.count as usize] {
                    let p = closest_point_on_triangle(q, t);
                    let d = (p - q).norm_squared();
                    if d < best_d2 {
                        best_d2 = d;
                        best = Some((p, *t));
                        if d <= floor {
                            return best;
                        }
                    }
                }
            } else {
                // Visit the nearer child first (pushed last).
                let (l, r) = children(node, id);
                let dl = box_distance_sq(q, self.nodes[l as usize].lo, self.nodes[l as usize].hi);
                let dr = box_distance_sq(q, self.nodes[r as usize].lo, self.nodes[r as usize].hi);
                let (near, far) = if dl <= dr { (l, r) } else { (r, l) };
                stack[top] = far;
                stack[top + 1] = near;
                top += 2;
            }
        }
        best
    }
}

/// The two children of inner node `id`.
#[inline]
fn children(node: &Node, id: u32) -> (u32, u32) {
    (id + 1, node.start)
}

/// Builds the subtree over `tris[start..end]`, returns its index.
fn build(nodes: &mut Vec<Node>, tris: &mut [[Vec3; 3]], start: usize, end: usize) -> u32 {
    let id = nodes.len() as u32;
    let slice = &tris[start..end];
    let (mut lo, mut hi) = (Vec3::repeat(f64::MAX), Vec3::repeat(f64::MIN));
    let (mut clo, mut chi) = (Vec3::repeat(f64::MAX), Vec3::repeat(f64::MIN));
    let mut normal = Vec3::zeros();
    let mut weighted = Vec3::zeros();
    let mut area = 0.0;
    for t in slice {
        for p in t {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        let c = (t[0] + t[1] + t[2]) / 3.0;
        clo = clo.inf(&c);
        chi = chi.sup(&c);
        let n = (t[1] - t[0]).cross(&(t[2] - t[0])) * 0.5;
        let a = n.norm();
        normal += n;
        weighted += c * a;
        area += a;
    }
    let center = if area > 0.0 {
        weighted / area
    } else {
        (lo + hi) * 0.5
    };
    let radius = slice
        .iter()
        .flat_map(|t| t.iter())
        .map(|p| (p - center).norm())
        .fold(0.0, f64::max);
    nodes.push(Node {
        lo,
        hi,
        center,
        normal,
        radius,
        start: start as u32,
        count: (end - start) as u32,
    });
    if end - start > LEAF {
        let extent = chi - clo;
        let axis = extent.imax();
        let mid = (end - start) / 2;
        let key = |t: &[Vec3; 3]| t[0][axis] + t[1][axis] + t[2][axis];
        tris[start..end].select_nth_unstable_by(mid, |a, b| key(a).total_cmp(&key(b)));
        build(nodes, tris, start, start + mid);
        let right = build(nodes, tris, start + mid, end);
        let node = &mut nodes[id as usize];
        node.start = right;
        node.count = 0;
    }
    id
}

/// Signed solid angle of triangle `t` seen from `q` (Van Oosterom and
/// Strackee 1983): positive when `q` is behind the counter-clockwise face.
#[inline]
fn solid_angle(t: &[Vec3; 3], q: Vec3) -> f64 {
    let (a, b, c) = (t[0] - q, t[1] - q, t[2] - q);
    let (la, lb, lc) = (a.norm(), b.norm(), c.norm());
    let det = a.dot(&b.cross(&c));
    let den = la * lb * lc + a.dot(&b) * lc + b.dot(&c) * la + c.dot(&a) * lb;
    2.0 * det.atan2(den)
}

/// Whether the segment from `a` with reciprocal direction `inv` (over
/// `t ∈ [0, 1]`) meets the box.
#[inline]
fn segment_meets_box(a: Vec3, inv: Vec3, lo: Vec3, hi: Vec3) -> bool {
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for k in 0..3 {
        let (mut u, mut v) = ((lo[k] - a[k]) * inv[k], (hi[k] - a[k]) * inv[k]);
        if u > v {
            std::mem::swap(&mut u, &mut v);
        }
        // NaN (0 · ∞, the segment lies in a slab plane) keeps the bounds.
        if u > t0 {
            t0 = u;
        }
        if v < t1 {
            t1 = v;
        }
        if t0 > t1 {
            return false;
        }
    }
    true
}

/// Whether the segment `a b` passes through triangle `tri`: its ends on
/// either side of the triangle's plane, each clearly off it ("clearly": by
/// a millionth of the segment's length), and the crossing point in the
/// triangle or on its border (through a quad's diagonal, say, it passes
/// both triangles). A segment in the triangle's plane (its own triangle) or
/// ending on it (a neighbour's corner) never passes.
fn segment_passes_through(a: Vec3, b: Vec3, tri: &[Vec3; 3]) -> bool {
    const CLEAR: f64 = 1e-6;
    let normal = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    let size = normal.norm();
    let (da, db) = (normal.dot(&(a - tri[0])), normal.dot(&(b - tri[0])));
    let off = CLEAR * size * (b - a).norm();
    if !((da > off && db < -off) || (da < -off && db > off)) {
        return false;
    }
    let p = a + (b - a) * (da / (da - db));
    // Each corner's barycentric weight, as twice the area of the triangle p
    // makes with the opposite side, along the normal.
    (0..3).all(|k| {
        let (u, v) = (tri[(k + 1) % 3], tri[(k + 2) % 3]);
        (u - p).cross(&(v - p)).dot(&normal) >= -CLEAR * size * size
    })
}

/// Möller–Trumbore: the parameter `t ∈ [0, 1]` at which `a + t·dir` meets
/// triangle `tri`, if it does (either side).
#[inline]
fn segment_triangle(a: Vec3, dir: Vec3, tri: &[Vec3; 3]) -> Option<f64> {
    let e1 = tri[1] - tri[0];
    let e2 = tri[2] - tri[0];
    let p = dir.cross(&e2);
    let det = e1.dot(&p);
    if det.abs() <= f64::EPSILON * e1.norm() * e2.norm() * dir.norm() {
        return None;
    }
    let inv = 1.0 / det;
    let s = a - tri[0];
    let u = s.dot(&p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let v = dir.dot(&q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (0.0..=1.0).contains(&t).then_some(t)
}

#[inline]
fn box_distance_sq(q: Vec3, lo: Vec3, hi: Vec3) -> f64 {
    let d = (lo - q).sup(&Vec3::zeros()).sup(&(q - hi));
    d.norm_squared()
}

/// The point of triangle `t` closest to `p` (Ericson, Real-Time Collision
/// Detection, §5.1.5).
pub(crate) fn closest_point_on_triangle(p: Vec3, t: &[Vec3; 3]) -> Vec3 {
    let [a, b, c] = *t;
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(&ap);
    let d2 = ac.dot(&ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let d3 = ab.dot(&bp);
    let d4 = ac.dot(&bp);
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let d5 = ab.dot(&cp);
    let d6 = ac.dot(&cp);
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = va + vb + vc;
    if denom == 0.0 {
        // Degenerate (zero-area) triangle: the nearest of its corners.
        return [a, b, c]
            .into_iter()
            .min_by(|x, y| (x - p).norm_squared().total_cmp(&(y - p).norm_squared()))
            .unwrap_or(a);
    }
    let v = vb / denom;
    let w = vc / denom;
    a + ab * v + ac * w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::{ValidateOptions, primitives, validate};

    fn sphere() -> TriangleTree {
        let raw = primitives::uv_sphere(1.0, 32, 16);
        let (s, _) = validate(
            &raw,
            std::path::Path::new("sphere"),
            &ValidateOptions::default(),
        )
        .unwrap();
        TriangleTree::new(s.positions(), s.triangles())
    }

    /// A sphere's edges cross none of its faces (its own and its
    /// neighbours' touch them); two spheres overlapping by half a radius
    /// cross each other along a circle, each edge through it once.
    #[test]
    fn edges_crossing_faces_are_where_a_surface_passes_through_itself() {
        let one = primitives::uv_sphere(1.0, 32, 16);
        let (s, _) = validate(
            &one,
            std::path::Path::new("one"),
            &ValidateOptions::default(),
        )
        .unwrap();
        let tree = TriangleTree::new(s.positions(), s.triangles());
        assert_eq!(tree.edge_crossings(s.positions(), s.topology().edges()), 0);
        let mut two = one.clone();
        let shifted = one.positions.len() as u32;
        two.positions
            .extend(one.positions.iter().map(|p| p + Vec3::new(1.5, 0.1, 0.05)));
        for k in 0..one.offsets.len() - 1 {
            let corners = &one.indices[one.offsets[k] as usize..one.offsets[k + 1] as usize];
            let moved: Vec<u32> = corners.iter().map(|&v| v + shifted).collect();
            two.push_polygon(&moved, 0, 0);
        }
        let (s, _) = validate(
            &two,
            std::path::Path::new("two"),
            &ValidateOptions::default(),
        )
        .unwrap();
        let tree = TriangleTree::new(s.positions(), s.triangles());
        let crossings = tree.edge_crossings(s.positions(), s.topology().edges());
        // The circle of intersection (radius ~0.66) crosses each sphere's
        // mesh along a band: some tens of its edges on either side.
        assert!((40..400).contains(&crossings), "{crossings}");
    }

    #[test]
    fn winding_number_is_one_inside_and_zero_outside() {
        let tree = sphere();
        for q in [
            Vec3::zeros(),
            Vec3::new(0.3, -0.5, 0.2),
            Vec3::new(0.9, 0.0, 0.0),
        ] {
            // First order far field: within a few hundredths.
            assert!((tree.winding_number(q) - 1.0).abs() < 0.05, "{q:?}");
        }
        for q in [
            Vec3::new(1.2, 0.0, 0.0),
            Vec3::new(5.0, 5.0, 5.0),
            Vec3::new(0.0, 0.0, -40.0),
        ] {
            assert!(tree.winding_number(q).abs() < 1e-2, "{q:?}");
        }
    }

    #[test]
    fn winding_number_matches_the_exact_sum() {
        let raw = primitives::torus(1.0, 0.3, 24, 12);
        let (s, _) =
            validate(&raw, std::path::Path::new("t"), &ValidateOptions::default()).unwrap();
        let tree = TriangleTree::new(s.positions(), s.triangles());
        for k in 0..50 {
            let q = Vec3::new(
                (k as f64 * 0.37).sin() * 1.6,
                (k as f64 * 0.71).cos() * 1.6,
                (k as f64 * 0.13).sin() * 0.5,
            );
            let exact: f64 = s
                .triangles()
                .iter()
                .map(|t| solid_angle(&t.map(|i| s.positions()[i as usize]), q))
                .sum::<f64>()
                / (4.0 * PI);
            assert!((tree.winding_number(q) - exact).abs() < 0.05, "{q:?}");
            assert_eq!(tree.winding_number(q) > 0.5, exact > 0.5, "{q:?}");
        }
    }

    #[test]
    fn segment_crosses_the_sphere_twice_and_distance_is_exact() {
        let tree = sphere();
        let mut hits = Vec::new();
        tree.segment_hits(
            Vec3::new(-2.0, 0.01, 0.02),
            Vec3::new(2.0, 0.01, 0.02),
            &mut hits,
        );
        hits.sort_by(f64::total_cmp);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!((hits[0] - 0.25).abs() < 0.01 && (hits[1] - 0.75).abs() < 0.01);
        // The polygonal sphere lies within 1 % of the unit sphere.
        let d = tree.distance(Vec3::new(0.0, 3.0, 0.0));
        assert!((d - 2.0).abs() < 0.01, "{d}");
        let brute = tree
            .triangles
            .iter()
            .map(|t| {
                (closest_point_on_triangle(Vec3::new(0.3, 1.4, -0.2), t)
                    - Vec3::new(0.3, 1.4, -0.2))
                .norm()
            })
            .fold(f64::INFINITY, f64::min);
        assert_eq!(tree.distance(Vec3::new(0.3, 1.4, -0.2)), brute);
    }
}
