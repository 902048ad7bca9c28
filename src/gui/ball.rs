//! The drawn surface of a sphere collider, tessellated for the view.
//!
//! A fixed unit sphere scaled to the collider cannot serve every radius: the
//! facets of a 24-segment sphere lie inside it by ~1 % of its radius, so a
//! cloth resting on a ball of radius 100 m floated 2 m above what was drawn
//! (with the 2 % the ball was drawn smaller by, against a draped body's
//! chords), and one of radius 1e6 m (a curved ground) was drawn 20 km low and
//! past the far plane: not at all. Scaled in the shader, single precision
//! also loses a large ball's surface near the origin (`1e6 · (1 − ε) − 1e6`).
//!
//! So the surface is made for the view ([`BallView`]): rings about the point
//! of the sphere nearest the camera's target, spaced finely there and wider
//! away from it, out to the far plane (the whole sphere where that reaches
//! round it), with every position worked out in double precision relative to
//! the world's origin. It is drawn inside the sphere by [`BallView::inset`]:
//! 2 % of a small ball's radius, as before, and for a large one a small
//! fraction of the view's distance, far above the depth buffer's resolution
//! there and far below what shows.

use crate::mesh::Vec3;

/// Rings about the apex (the point nearest the camera's target).
const RINGS: usize = 64;

/// Vertices per ring.
const SEGMENTS: usize = 96;

/// How far along the surface the rings reach, over the view's distance
/// (the far plane is at 100 of them from the eye).
const REACH: f64 = 200.0;

/// The first ring's distance from the apex, over the view's distance:
/// finer than a pixel at the target.
const FIRST_RING: f64 = 1.0 / 200.0;

/// A sphere collider as seen: its centre and radius, the camera's target
/// and distance, and the size of the body that may rest on it (the drawn
/// surface is made again when they change: [`BallView::close_to`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BallView {
    /// The sphere's centre (m).
    pub centre: Vec3,
    /// The sphere's radius (m).
    pub radius: f64,
    /// The point the camera orbits (m).
    pub target: Vec3,
    /// The camera's distance from it (m).
    pub distance: f64,
    /// The size of the body (its rest pose's bounding-box diagonal, m).
    pub body: f64,
}

/// The drawn surface: positions and unit normals in double precision, and
/// triangles (three indices each, wound outward).
#[derive(Debug, Default)]
pub struct BallMesh {
    /// Positions (m, world).
    pub positions: Vec<Vec3>,
    /// Outward unit normals, one per position.
    pub normals: Vec<Vec3>,
    /// Vertex indices, three per triangle.
    pub indices: Vec<u32>,
}

impl BallView {
    /// How far inside the sphere its surface is drawn: 2 % of its radius (a
    /// body draped over a ball has its vertices on it and its triangles
    /// inside, as chords spanning up to a third of the radius), at most
    /// 0.2 % of the view's distance (a large ball's chords under a body are
    /// flat; the depth buffer resolves ~1e-5 of the distance there) unless
    /// the body's chords sink deeper: those of a tenth of its size, `(s /
    /// 10)² / 8r` (seen from close by, a small ball showed through a
    /// draped cloth).
    pub fn inset(&self) -> f64 {
        let chords = (0.1 * self.body).powi(2) / (8.0 * self.radius);
        (0.02 * self.radius).min((0.002 * self.distance).max(chords))
    }

    /// Whether a surface made for `other` serves this view too: the same
    /// ball and body, the camera's target within 2 % of the distance and
    /// the distance within 2 % (its rings shift by less; made again every
    /// frame of a zoom or pan, each ball was 6,145 vertices a frame).
    pub fn close_to(&self, other: &BallView) -> bool {
        (self.centre, self.radius, self.body) == (other.centre, other.radius, other.body)
            && (self.target - other.target).norm() <= 0.02 * other.distance
            && (self.distance / other.distance - 1.0).abs() <= 0.02
    }

    /// The unit vector from the centre to the apex: towards the camera's
    /// target (up when the target is the centre).
    fn axis(&self) -> Vec3 {
        let d = self.target - self.centre;
        let n = d.norm();
        if n > 1e-12 * self.radius.max(1.0) && n.is_finite() {
            d / n
        } else {
            Vec3::y()
        }
    }

    /// The angle from the apex the rings reach (radians, at most π).
    fn reach(&self) -> f64 {
        (REACH * self.distance / self.radius).min(std::f64::consts::PI)
    }

    /// The rings' angles from the apex, the last at [`BallView::reach`]:
    /// evenly spaced where that puts the first within [`FIRST_RING`] of the
    /// view's distance from the apex, else growing geometrically
    /// (`θ_k = reach · ((1 + c)^(k/n) − 1) / c`, `c` chosen so the first is
    /// there).
    fn ring_angles(&self) -> [f64; RINGS] {
        let reach = self.reach();
        let first = FIRST_RING * self.distance / self.radius;
        let n = RINGS as f64;
        let spread = |c: f64, k: f64| {
            if c <= 0.0 {
                k / n
            } else {
                (c * k / n).exp_m1() / c.exp_m1()
            }
        };
        // `spread(c, 1)` falls as `c` grows (`c` is ln(1 + c) above):
        // bisect for the `c` that puts the first ring at `first`.
        let c = if spread(0.0, 1.0) * reach <= first {
            0.0
        } else {
            let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
            while spread(hi, 1.0) * reach > first && hi < 1e3 {
                hi *= 2.0;
            }
            for _ in 0..100 {
                let mid = 0.5 * (lo + hi);
                if spread(mid, 1.0) * reach > first {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi
        };
        std::array::from_fn(|k| reach * spread(c, (k + 1) as f64))
    }

    /// The surface to draw: the apex, then 64 rings of 96 vertices, at the
    /// drawn radius (the sphere's less [`BallView::inset`]).
    pub fn mesh(&self) -> BallMesh {
        let axis = self.axis();
        // (u, v, axis) right-handed: the triangles below wind outward.
        let (u, v) = crate::mesh::across(axis);
        let drawn = self.radius - self.inset();
        let apex = self.centre + drawn * axis;
        let mut mesh = BallMesh::default();
        mesh.positions.push(apex);
        mesh.normals.push(axis);
        for theta in self.ring_angles() {
            let (sin, cos) = theta.sin_cos();
            // 1 − cos θ as 2 sin²(θ/2): the apex's neighbourhood of a large
            // ball keeps its precision.
            let drop = 2.0 * (theta / 2.0).sin().powi(2);
            for s in 0..SEGMENTS {
                let phi = std::f64::consts::TAU * s as f64 / SEGMENTS as f64;
                let (sp, cp) = phi.sin_cos();
                let radial = sin * (cp * u + sp * v);
                mesh.positions.push(apex + drawn * (radial - drop * axis));
                mesh.normals.push(radial + cos * axis);
            }
        }
        let ring = |k: usize, s: usize| (1 + k * SEGMENTS + s % SEGMENTS) as u32;
        for s in 0..SEGMENTS {
            mesh.indices.extend([0, ring(0, s), ring(0, s + 1)]);
        }
        for k in 0..RINGS - 1 {
            for s in 0..SEGMENTS {
                let (a, b) = (ring(k, s), ring(k, s + 1));
                let (c, d) = (ring(k + 1, s), ring(k + 1, s + 1));
                mesh.indices.extend([a, c, d, a, d, b]);
            }
        }
        mesh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How far inside the drawn sphere each triangle's centroid lies, with
    /// its largest distance from `from`.
    fn centroid_depths(view: &BallView, mesh: &BallMesh, from: Vec3) -> Vec<(f64, f64)> {
        let drawn = view.radius - view.inset();
        mesh.indices
            .chunks(3)
            .map(|t| {
                let p = t.iter().map(|&i| mesh.positions[i as usize]);
                let far = p.clone().map(|p| (p - from).norm()).fold(0.0, f64::max);
                let c = p.fold(Vec3::zeros(), |a, p| a + p) / 3.0;
                (drawn - (c - view.centre).norm(), far)
            })
            .collect()
    }

    /// A ball seen from 3 m, a 1 m body on it.
    fn seen(centre: Vec3, radius: f64, target: Vec3) -> BallView {
        BallView {
            centre,
            radius,
            target,
            distance: 3.0,
            body: 1.0,
        }
    }

    fn check_on_sphere(view: &BallView, mesh: &BallMesh) {
        let drawn = view.radius - view.inset();
        for (p, n) in mesh.positions.iter().zip(&mesh.normals) {
            let r = p - view.centre;
            assert!((r.norm() - drawn).abs() <= 1e-9 * view.radius, "{r:?}");
            assert!((n.norm() - 1.0).abs() < 1e-12);
            assert!((r.normalize() - n).norm() < 1e-9, "{n:?} at {r:?}");
        }
        let count = mesh.positions.len() as u32;
        assert!(mesh.indices.iter().all(|&i| i < count));
        // Wound outward: each triangle's normal points away from the centre.
        for t in mesh.indices.chunks(3) {
            let [a, b, c] = [0, 1, 2].map(|k| mesh.positions[t[k] as usize]);
            let normal = (b - a).cross(&(c - a));
            if normal.norm() > 1e-9 * (b - a).norm() * (c - a).norm() {
                assert!(normal.dot(&((a + b + c) / 3.0 - view.centre)) > 0.0);
            }
        }
    }

    #[test]
    fn a_curved_ground_is_drawn_where_the_body_rests() {
        // A ball of radius 1e6 m under a 1 m cloth seen from 3 m: the old
        // unit sphere put its top 20 km low and past the far plane.
        let view = seen(
            Vec3::new(0.0, -1e6 - 1.5, 0.0),
            1e6,
            Vec3::new(0.0, -0.3, 0.0),
        );
        let mesh = view.mesh();
        check_on_sphere(&view, &mesh);
        // The top, under the target, within the inset (6 mm) of the surface.
        let top = Vec3::new(0.0, -1.5, 0.0);
        assert!((mesh.positions[0] - top).norm() <= view.inset() + 1e-9);
        assert!(view.inset() <= 0.01);
        // Triangles near the body are within 0.1 mm of the drawn sphere,
        // and the rings reach past the far plane (300 m from the eye).
        let depths = centroid_depths(&view, &mesh, top);
        for (depth, far) in &depths {
            if *far < 30.0 {
                assert!(*depth < 1e-4, "{depth} m inside, {far} m out");
            }
        }
        let reach = mesh.positions.iter().map(|p| (p - top).norm());
        assert!(reach.fold(0.0, f64::max) >= 300.0);
    }

    #[test]
    fn a_small_ball_is_drawn_whole_and_round() {
        // A 0.3 m ball seen from 3 m: evenly spaced rings all round it, the
        // facets within 0.1 % of the radius of the drawn sphere.
        for target in [
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.2, -0.1, 0.0),
            Vec3::zeros(),
        ] {
            let view = seen(Vec3::zeros(), 0.3, target);
            assert!((view.inset() - 0.006).abs() < 1e-12);
            // Seen from 0.1 m, as deep as a tenth of the body's chords
            // (4.2 mm), not 0.2 mm.
            let close = BallView {
                distance: 0.1,
                ..view
            };
            assert!((close.inset() - 0.01 / 2.4).abs() < 1e-12);
            assert!(close.close_to(&close));
            assert!(!close.close_to(&view));
            let mesh = view.mesh();
            check_on_sphere(&view, &mesh);
            let angles = view.ring_angles();
            assert!((angles[RINGS - 1] - std::f64::consts::PI).abs() < 1e-12);
            assert!((angles[0] - std::f64::consts::PI / RINGS as f64).abs() < 1e-12);
            for (depth, _) in centroid_depths(&view, &mesh, Vec3::zeros()) {
                assert!((0.0..1e-3 * 0.3).contains(&depth), "{depth}");
            }
        }
    }

    #[test]
    fn a_large_ball_is_drawn_finely_near_the_target() {
        // Radius 100 m under a cloth seen from 3 m (the old sphere was drawn
        // 2 m low there).
        let view = seen(
            Vec3::new(0.0, -101.5, 0.0),
            100.0,
            Vec3::new(0.3, -0.2, 0.1),
        );
        let mesh = view.mesh();
        check_on_sphere(&view, &mesh);
        let angles = view.ring_angles();
        assert!(angles.windows(2).all(|w| w[1] > w[0]));
        assert!((angles[0] * view.radius - FIRST_RING * view.distance).abs() < 1e-9);
        assert!((angles[RINGS - 1] - std::f64::consts::PI).abs() < 1e-12);
        // Within 2 mm of the drawn sphere over 10 m from the top.
        let apex = mesh.positions[0];
        for (depth, far) in centroid_depths(&view, &mesh, apex) {
            if far < 10.0 {
                assert!(depth < 2e-3, "{depth} m inside, {far} m out");
            }
        }
    }
}
