//! The orbit camera of the 3D view and its projection: the one place the
//! view and projection matrices are made, for drawing (three-d), for the
//! overlays and for picking alike.

use nalgebra::{Matrix4, Point3, Vector4};

use crate::mesh::Vec3;
use crate::preset::View;

/// The orbit camera: looks at `target` from `distance` along the direction
/// given by `yaw` (about +y) and `pitch` (up from the horizontal).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orbit {
    /// The point orbited (m).
    pub target: Vec3,
    /// Rotation about the vertical axis (radians).
    pub yaw: f64,
    /// Elevation (radians, within ±[`MAX_PITCH`]).
    pub pitch: f64,
    /// Distance from the target (m, > 0).
    pub distance: f64,
    /// Vertical field of view (degrees).
    pub fov_deg: f64,
}

/// The steepest elevation, just short of the poles (where "up" is lost).
pub const MAX_PITCH: f64 = 1.55;

/// The nearest and farthest the camera comes to its target (m): about a
/// body of the sizes a mesh may have, 1e-9 to 1e9 m (a zoom clamped to
/// 1 mm – 10 km jumped a 1,000 km body's camera inside it at the first
/// scroll, and a 1 µm body's out to 1 mm), and within the eye's range in a
/// preset ([`MAX_VIEW_EXTENT`](crate::preset::MAX_VIEW_EXTENT)).
pub const DISTANCE_RANGE: (f64, f64) = (1e-10, 1e11);

impl Default for Orbit {
    fn default() -> Self {
        Self {
            target: Vec3::zeros(),
            yaw: 0.0,
            pitch: 0.2,
            distance: 3.0,
            fov_deg: 45.0,
        }
    }
}

impl Orbit {
    /// The camera position.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        self.target + self.distance * Vec3::new(cp * sy, sp, cp * cy)
    }

    /// The unit vector the camera looks along.
    pub fn forward(&self) -> Vec3 {
        (self.target - self.eye()).normalize()
    }

    /// The near and far clipping distances.
    pub fn clip_planes(&self) -> (f64, f64) {
        (self.distance * 0.01, self.distance * 100.0)
    }

    /// Rotates by a mouse drag of `dx`, `dy` points.
    pub fn rotate(&mut self, dx: f64, dy: f64) {
        self.yaw -= dx * 0.01;
        self.pitch = (self.pitch + dy * 0.01).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Moves the target in the view plane by a drag of `dx`, `dy` points in
    /// a view `height` points tall, so the point under the cursor follows it.
    pub fn pan(&mut self, dx: f64, dy: f64, height: f64) {
        let scale = 2.0 * self.distance * (self.fov_deg.to_radians() / 2.0).tan() / height.max(1.0);
        let forward = self.forward();
        let right = forward.cross(&Vec3::y()).normalize();
        let up = right.cross(&forward);
        self.target += scale * (-dx * right + dy * up);
    }

    /// Zooms by a scroll of `dy` points (positive: closer).
    pub fn zoom(&mut self, dy: f64) {
        let (near, far) = DISTANCE_RANGE;
        self.distance = (self.distance * (-dy * 0.002).exp()).clamp(near, far);
    }

    /// Aims at the bounding sphere of `points` so it fills the view,
    /// keeping the direction. Nothing for no points.
    pub fn frame(&mut self, points: &[Vec3]) {
        if points.is_empty() {
            return;
        }
        let (lo, hi) = crate::mesh::bounds(points);
        let radius = (hi - lo).norm() / 2.0;
        self.target = (lo + hi) / 2.0;
        let (near, far) = DISTANCE_RANGE;
        self.distance = (1.15 * radius / (self.fov_deg.to_radians() / 2.0).sin()).clamp(near, far);
    }

    /// Looks from a preset's `view`: its eye and target (the pitch within
    /// ±[`MAX_PITCH`]), and its field of view.
    pub fn look_from(&mut self, view: &View) {
        self.look_along(view);
        self.target = view.target;
        let (near, far) = DISTANCE_RANGE;
        self.distance = (view.eye - view.target).norm().clamp(near, far);
        self.fov_deg = view.fov_deg;
    }

    /// Looks along a preset's `view` ([`View::angles`]), keeping the
    /// target and distance.
    pub fn look_along(&mut self, view: &View) {
        if let Some([yaw, pitch]) = view.angles() {
            self.yaw = yaw;
            self.pitch = pitch.clamp(-MAX_PITCH, MAX_PITCH);
        }
    }

    /// The view-projection matrix (OpenGL clip space, right-handed, +y up)
    /// for a view `aspect` = width / height.
    pub fn view_projection(&self, aspect: f64) -> Matrix4<f64> {
        let (near, far) = self.clip_planes();
        let projection =
            Matrix4::new_perspective(aspect.max(1e-6), self.fov_deg.to_radians(), near, far);
        let view = Matrix4::look_at_rh(
            &Point3::from(self.eye()),
            &Point3::from(self.target),
            &Vec3::y(),
        );
        projection * view
    }
}

/// The camera as seen in a view rectangle: maps world points to screen
/// points (egui points, y down) and screen points to rays.
#[derive(Clone, Copy, Debug)]
pub struct Projection {
    view_projection: Matrix4<f64>,
    inverse: Matrix4<f64>,
    /// The view rectangle: left, top, width, height (points).
    rect: [f64; 4],
}

/// A world point on screen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projected {
    /// Screen position (points, y down).
    pub screen: [f64; 2],
    /// Distance along the view direction (m, positive in front).
    pub depth: f64,
}

impl Projection {
    /// The projection of `orbit` into the view rectangle `rect` (left, top,
    /// width, height in points).
    pub fn new(orbit: &Orbit, rect: [f64; 4]) -> Self {
        let view_projection = orbit.view_projection(rect[2] / rect[3].max(1e-6));
        let inverse = view_projection
            .try_inverse()
            .unwrap_or_else(Matrix4::identity);
        Self {
            view_projection,
            inverse,
            rect,
        }
    }

    /// Where `p` appears, or `None` behind the camera.
    pub fn project(&self, p: &Vec3) -> Option<Projected> {
        let clip = self.view_projection * Vector4::new(p.x, p.y, p.z, 1.0);
        if clip.w <= 1e-12 {
            return None;
        }
        let [left, top, width, height] = self.rect;
        Some(Projected {
            screen: [
                left + (clip.x / clip.w + 1.0) / 2.0 * width,
                top + (1.0 - clip.y / clip.w) / 2.0 * height,
            ],
            depth: clip.w,
        })
    }

    /// The ray through screen point `s`: origin on the near plane and unit
    /// direction.
    pub fn ray(&self, s: [f64; 2]) -> (Vec3, Vec3) {
        let [left, top, width, height] = self.rect;
        let x = (s[0] - left) / width.max(1e-6) * 2.0 - 1.0;
        let y = 1.0 - (s[1] - top) / height.max(1e-6) * 2.0;
        let unproject = |z: f64| {
            let h = self.inverse * Vector4::new(x, y, z, 1.0);
            Vec3::new(h.x, h.y, h.z) / h.w
        };
        let near = unproject(-1.0);
        let far = unproject(1.0);
        (near, (far - near).normalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_projects_to_the_view_centre_and_back() {
        let orbit = Orbit {
            target: Vec3::new(0.3, -0.2, 0.1),
            yaw: 0.7,
            pitch: 0.4,
            ..Orbit::default()
        };
        let projection = Projection::new(&orbit, [100.0, 50.0, 800.0, 600.0]);
        let p = projection.project(&orbit.target).unwrap();
        assert!((p.screen[0] - 500.0).abs() < 1e-9 && (p.screen[1] - 350.0).abs() < 1e-9);
        assert!((p.depth - orbit.distance).abs() < 1e-9);
        // The ray through any screen point passes through what projects there.
        let q = Vec3::new(0.8, 0.4, -0.3);
        let s = projection.project(&q).unwrap();
        let (origin, direction) = projection.ray(s.screen);
        let off = (q - origin) - direction * (q - origin).dot(&direction);
        assert!(off.norm() < 1e-9, "{off}");
        // Up on screen is up in the world.
        let above = projection
            .project(&(orbit.target + Vec3::y() * 0.1))
            .unwrap();
        assert!(above.screen[1] < p.screen[1]);
        // Behind the camera: nothing.
        assert!(
            projection
                .project(&(orbit.eye() - orbit.forward()))
                .is_none()
        );
    }

    /// A body of any size a mesh may have is framed and zoomed about
    /// itself: a zoom clamped to 1 mm – 10 km jumped a 1,000 km body's
    /// camera inside it at the first scroll, and a 1 µm body's out to 1 mm.
    #[test]
    fn bodies_of_every_size_frame_and_zoom_about_themselves() {
        for size in [1e-6, 1.0, 1e6] {
            let mut orbit = Orbit::default();
            orbit.frame(&[Vec3::zeros(), Vec3::repeat(size)]);
            let framed = orbit.distance;
            assert!(framed > size && framed < 10.0 * size, "{size}: {framed}");
            orbit.zoom(10.0);
            assert!(
                orbit.distance < framed && orbit.distance > 0.9 * framed,
                "{size}"
            );
            orbit.zoom(-20.0);
            assert!(
                orbit.distance > framed && orbit.distance < 1.1 * framed,
                "{size}"
            );
        }
    }

    #[test]
    fn framing_keeps_the_box_in_view() {
        let mut orbit = Orbit::default();
        orbit.frame(&[Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 2.0, 0.0)]);
        assert_eq!(orbit.target, Vec3::new(0.0, 1.0, 0.0));
        let projection = Projection::new(&orbit, [0.0, 0.0, 400.0, 400.0]);
        for corner in [Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 2.0, 0.0)] {
            let s = projection.project(&corner).unwrap().screen;
            assert!(s.iter().all(|&c| (0.0..=400.0).contains(&c)), "{s:?}");
        }
    }

    #[test]
    fn panning_moves_the_target_across_the_view() {
        let mut orbit = Orbit::default();
        let before = Projection::new(&orbit, [0.0, 0.0, 400.0, 300.0]);
        let anchor = Vec3::new(0.2, 0.1, 0.0);
        let s0 = before.project(&anchor).unwrap().screen;
        orbit.pan(30.0, -20.0, 300.0);
        let s1 = Projection::new(&orbit, [0.0, 0.0, 400.0, 300.0])
            .project(&anchor)
            .unwrap()
            .screen;
        // The point moved with the mouse (exactly at the target's depth).
        assert!((s1[0] - s0[0] - 30.0).abs() < 1.5, "{s0:?} {s1:?}");
        assert!((s1[1] - s0[1] + 20.0).abs() < 1.5, "{s0:?} {s1:?}");
    }
}
