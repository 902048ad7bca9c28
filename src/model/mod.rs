//! Simulation models built from meshes: rest positions, lumped masses, typed
//! constraints with their weights, and pins.

pub mod cloth_grid;
pub mod mass;
pub mod pins;
pub mod springs;
pub mod tetra;

pub use cloth_grid::ClothGrid;
pub use pins::{Attachment, Pins};
pub use springs::{Spring, SpringKind, Springs};

use crate::mesh::{SurfaceMesh, Vec3};

/// Constraint weights (stiffnesses), one per constraint type.
///
/// Springs: `k` in N/m in `E = k/2 (‖x_i − x_j‖ − r)²`. Attachments (soft
/// pins): N/m in `E = w/2 ‖x_i − t‖²`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Weights {
    /// Structural (edge) springs.
    pub structural: f64,
    /// Shear springs (grid diagonals).
    pub shear: f64,
    /// Bending springs.
    pub bending: f64,
    /// Soft pins.
    pub attachment: f64,
}

impl Default for Weights {
    /// Cotton-like values for a 1 m cloth of a few thousand vertices.
    fn default() -> Self {
        Self {
            structural: 1000.0,
            shear: 500.0,
            bending: 20.0,
            attachment: 1000.0,
        }
    }
}

impl Weights {
    /// The weight of a spring kind.
    pub fn spring(&self, kind: SpringKind) -> f64 {
        match kind {
            SpringKind::Structural => self.structural,
            SpringKind::Shear => self.shear,
            SpringKind::Bending => self.bending,
        }
    }
}

/// Everything the solver needs: `m` vertices with rest positions and masses,
/// typed constraints, weights and pins.
#[derive(Clone, Debug)]
pub struct Model {
    /// Rest (and initial) positions, `m × 3`.
    pub rest: Vec<Vec3>,
    /// Lumped masses, length `m`, all positive.
    pub masses: Vec<f64>,
    /// Surface triangles, for drawing and export.
    pub triangles: Vec<[u32; 3]>,
    /// Springs by kind.
    pub springs: Springs,
    /// Stiffness per constraint type.
    pub weights: Weights,
    /// Hard and soft pins.
    pub pins: Pins,
}

impl Model {
    /// A spring model of a validated surface with areal density `density`
    /// (kg/m²), no pins.
    pub fn from_surface(mesh: &SurfaceMesh, density: f64, weights: Weights) -> Self {
        Self {
            rest: mesh.positions().to_vec(),
            masses: mass::lumped_area_masses(mesh.positions(), mesh.triangles(), density),
            triangles: mesh.triangles().to_vec(),
            springs: Springs::from_surface(mesh),
            weights,
            pins: Pins::default(),
        }
    }

    /// The seed cloth grid with areal density `density` (kg/m²), no pins.
    pub fn from_cloth_grid(grid: &ClothGrid, density: f64, weights: Weights) -> Self {
        Self {
            rest: grid.positions.clone(),
            masses: mass::lumped_area_masses(&grid.positions, &grid.triangles, density),
            triangles: grid.triangles.clone(),
            springs: grid.springs.clone(),
            weights,
            pins: Pins::default(),
        }
    }

    /// Number of vertices `m`.
    pub fn vertex_count(&self) -> usize {
        self.rest.len()
    }

    /// Total mass.
    pub fn total_mass(&self) -> f64 {
        self.masses.iter().sum()
    }
}
