//! Local-step projections: pure functions on fixed-size vectors.
//!
//! Each returns the point `p_c` of the constraint set closest to `G_c x`
//! (physics.md §2–3).

use crate::mesh::Vec3;

/// Spring (Liu et al. 2013, eq. 9): `G x = x_i − x_j`, projected onto the
/// sphere of radius `rest`: `p = rest · d / ‖d‖`. A zero-length `d` has no
/// direction; any unit vector is a closest point, and we take `+x`.
#[inline(always)]
pub fn spring(d: Vec3, rest: f64) -> Vec3 {
    spring_with_stretch(d, rest).0
}

/// [`spring`] and the stretch `‖d‖ − rest`, whose square is `‖d − p‖²`
/// (one square root for both; the local step needs both).
#[inline(always)]
pub fn spring_with_stretch(d: Vec3, rest: f64) -> (Vec3, f64) {
    let len = d.norm();
    if len > 0.0 {
        (d * (rest / len), len - rest)
    } else {
        (Vec3::new(rest, 0.0, 0.0), -rest)
    }
}

/// Spring energy `w/2 (‖d‖ − r)²`, which equals `w/2 ‖d − spring(d, r)‖²`.
#[inline(always)]
pub fn spring_energy(d: Vec3, rest: f64, weight: f64) -> f64 {
    let stretch = d.norm() - rest;
    0.5 * weight * stretch * stretch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spring_projection_is_the_closest_point_at_rest_length() {
        let d = Vec3::new(3.0, 4.0, 0.0);
        let p = spring(d, 2.0);
        assert!((p.norm() - 2.0).abs() < 1e-15);
        assert!((p.normalize() - d.normalize()).norm() < 1e-15);
        assert!((0.5 * 7.0 * (d - p).norm_squared() - spring_energy(d, 2.0, 7.0)).abs() < 1e-12);
        assert_eq!(spring(Vec3::zeros(), 0.5).norm(), 0.5);
        let (q, stretch) = spring_with_stretch(d, 2.0);
        assert_eq!(q, p);
        assert!((stretch * stretch - (d - p).norm_squared()).abs() < 1e-12);
    }
}
