//! Tetrahedral elements: the rest shape each tet constraint measures its
//! deformation gradient against (physics.md §3, seed 004), and the limits of
//! the optional strain-limiting and volume constraints.

use nalgebra::Matrix3;

use crate::mesh::Vec3;

/// One tetrahedron `[x₁, x₂, x₃, x₄]` with its rest shape.
///
/// The deformation gradient is `F = D_s D_m⁻¹` with `D_s = [x₁−x₄, x₂−x₄,
/// x₃−x₄]` (columns) and `D_m` the same matrix at rest, so `F = I` at rest.
/// Written as a stencil on the four vertex rows (`m × 3` positions `x`),
/// `Fᵀ = G x` with `G = D_m⁻ᵀ S` (3 × 4), `S = [I | −1]`: column `j` of `G`
/// is `g_j` = row `j` of `D_m⁻¹` for `j < 3`, and `g₄ = −(g₁ + g₂ + g₃)`;
/// then `F = Σ_j x_j g_jᵀ`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tet {
    /// The four vertices.
    pub vertices: [u32; 4],
    /// `D_m⁻¹`, the inverse of the rest edge matrix.
    pub rest_inverse: Matrix3<f64>,
    /// Rest volume `|det D_m| / 6` (m³), positive.
    pub rest_volume: f64,
}

impl Tet {
    /// The tet `vertices` with its rest shape taken from `positions`, or
    /// `None` if it is degenerate there: `|det D_m| ≤ 10⁻¹⁴ ‖D_m‖³` (flat
    /// to round-off, the tolerance [`TetMesh::new`](crate::mesh::TetMesh::new)
    /// uses) or not invertible. Either orientation is accepted; only
    /// `|det D_m|` enters the weight, and `F = I` at rest in both cases.
    ///
    /// # Panics
    /// If a vertex index is out of range of `positions`.
    pub fn at_rest(positions: &[Vec3], vertices: [u32; 4]) -> Option<Self> {
        let [a, b, c, d] = vertices.map(|v| positions[v as usize]);
        let (rest_inverse, rest_volume) = crate::mesh::tet::rest_shape(a, b, c, d)?;
        Some(Self {
            vertices,
            rest_inverse,
            rest_volume,
        })
    }

    /// The stencil columns `g₁ … g₄` of `G` (see the type docs): the
    /// gradients of the four barycentric coordinates at rest, summing to 0.
    #[inline]
    pub fn stencil(&self) -> [Vec3; 4] {
        let r = &self.rest_inverse;
        let g = [0, 1, 2].map(|j| r.row(j).transpose());
        [g[0], g[1], g[2], -(g[0] + g[1] + g[2])]
    }

    /// Adds `m g_j` to the row of each vertex `j` in `rows`: the pull of a
    /// matrix `m` on `F = Σ x_j g_jᵀ` (`∂ tr(mᵀF) / ∂x_j`).
    #[inline(always)]
    pub fn scatter(&self, m: &Matrix3<f64>, rows: &mut [Vec3]) {
        for (&v, g) in self.vertices.iter().zip(self.stencil()) {
            rows[v as usize] += m * g;
        }
    }

    /// The deformation gradient `F = D_s D_m⁻¹` at positions `x`.
    #[inline]
    pub fn deformation_gradient(&self, x: &[Vec3]) -> Matrix3<f64> {
        let [a, b, c, d] = self.vertices.map(|v| x[v as usize]);
        Matrix3::from_columns(&[a - d, b - d, c - d]) * self.rest_inverse
    }
}

/// The sets the optional tet constraints project onto. Both are ranges
/// around the rest state (`1`), so a body at rest has zero energy in them.
/// Deserialising takes a missing limit from [`TetLimits::default`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TetLimits {
    /// Smallest principal stretch the strain limit allows, `σ_min ∈ [0, 1]`.
    pub strain_min: f64,
    /// Largest principal stretch the strain limit allows, `σ_max ≥ 1`.
    pub strain_max: f64,
    /// Smallest volume ratio `det F` the volume constraint allows, `v_min ∈ (0, 1]`.
    pub volume_min: f64,
    /// Largest volume ratio `det F` the volume constraint allows, `v_max ≥ 1`.
    pub volume_max: f64,
}

impl Default for TetLimits {
    /// Principal stretches within ±10 % and volume within ±5 %.
    ///
    /// The strain limit is a guard against the overstretching a soft ARAP
    /// body shows under load; ±10 % is the range cloth and soft-tissue
    /// strain-limiting papers use (Provot 1995 allows 10 % for cloth; Wang
    /// et al. 2010 use 5–10 %), leaving the ARAP term to set the look inside
    /// it. Rubber-like materials are nearly incompressible (Poisson's ratio
    /// near 0.5), but a PD volume constraint with an exact `det F = 1`
    /// fights the strain constraint on coarse tet meshes (volume locking);
    /// ±5 % keeps the visible volume within a few percent without locking.
    fn default() -> Self {
        Self {
            strain_min: 0.9,
            strain_max: 1.1,
            volume_min: 0.95,
            volume_max: 1.05,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_gradient_is_identity_and_stencil_sums_to_zero() {
        let p = [
            Vec3::new(0.1, 0.0, 0.0),
            Vec3::new(1.0, 0.2, 0.0),
            Vec3::new(0.0, 1.0, 0.3),
            Vec3::new(0.2, 0.1, 1.0),
        ];
        let tet = Tet::at_rest(&p, [0, 1, 2, 3]).unwrap();
        assert!((tet.deformation_gradient(&p) - Matrix3::identity()).norm() < 1e-14);
        let g = tet.stencil();
        assert!((g[0] + g[1] + g[2] + g[3]).norm() < 1e-14);
        // F = Σ x_j g_jᵀ for any positions, here a stretch and a shift.
        let x: Vec<Vec3> = p
            .iter()
            .map(|q| Vec3::new(2.0 * q.x, q.y, q.z) + Vec3::repeat(5.0))
            .collect();
        let f: Matrix3<f64> = (0..4).map(|j| x[j] * g[j].transpose()).sum();
        assert!((f - tet.deformation_gradient(&x)).norm() < 1e-13);
        assert!((f - Matrix3::from_diagonal(&Vec3::new(2.0, 1.0, 1.0))).norm() < 1e-13);
        let volume = (p[1] - p[0])
            .dot(&(p[2] - p[0]).cross(&(p[3] - p[0])))
            .abs()
            / 6.0;
        assert!((tet.rest_volume - volume).abs() < 1e-15);
        // Flat: no rest shape.
        let flat = [p[0], p[1], p[2], (p[0] + p[1]) * 0.5];
        assert_eq!(Tet::at_rest(&flat, [0, 1, 2, 3]), None);
    }
}
