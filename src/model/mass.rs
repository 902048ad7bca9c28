//! Lumped masses.

use crate::mesh::Vec3;
use crate::mesh::tet::signed_volume;

/// Lumped vertex masses of a surface with areal `density` (kg/m²): each
/// triangle gives a third of its mass to each corner. Length `m`.
pub fn lumped_area_masses(positions: &[Vec3], triangles: &[[u32; 3]], density: f64) -> Vec<f64> {
    let mut masses = vec![0.0; positions.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        let share = density * (b - a).cross(&(c - a)).norm() / 6.0;
        for &v in t {
            masses[v as usize] += share;
        }
    }
    masses
}

/// Lumped vertex masses of a tet mesh with `density` (kg/m³): each
/// tetrahedron gives a quarter of its mass `ρ |V₀|` to each corner. Length `m`.
pub fn lumped_volume_masses(positions: &[Vec3], tets: &[[u32; 4]], density: f64) -> Vec<f64> {
    let mut masses = vec![0.0; positions.len()];
    for t in tets {
        let [a, b, c, d] = t.map(|i| positions[i as usize]);
        let share = density * signed_volume(&a, &b, &c, &d).abs() / 4.0;
        for &v in t {
            masses[v as usize] += share;
        }
    }
    masses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_square_of_two_triangles_weighs_its_density() {
        let p = [
            Vec3::zeros(),
            Vec3::x(),
            Vec3::new(1.0, 1.0, 0.0),
            Vec3::y(),
        ];
        let m = lumped_area_masses(&p, &[[0, 1, 2], [0, 2, 3]], 0.3);
        assert!((m.iter().sum::<f64>() - 0.3).abs() < 1e-15);
        assert!((m[0] - 0.1).abs() < 1e-15 && (m[1] - 0.05).abs() < 1e-15);
    }

    #[test]
    fn unit_cube_of_tets_weighs_its_density() {
        let mesh = crate::mesh::primitives::tet_box(Vec3::new(1.0, 2.0, 0.5), [2, 3, 1]);
        let m = lumped_volume_masses(mesh.positions(), mesh.tets(), 800.0);
        assert!((m.iter().sum::<f64>() - 800.0).abs() < 1e-10);
        assert!(m.iter().all(|&x| x > 0.0));
        let one = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let m = lumped_volume_masses(&one, &[[0, 1, 2, 3]], 600.0);
        assert_eq!(m, vec![25.0; 4]);
    }
}
