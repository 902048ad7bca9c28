//! Simulation models built from meshes: rest positions, lumped masses, typed
//! constraints with their weights, and pins.

pub mod cloth_grid;
pub mod mass;
pub mod pins;
pub mod skin;
pub mod springs;
pub mod tetra;
pub mod tets;

pub use cloth_grid::ClothGrid;
pub use pins::{Attachment, Pins};
pub use skin::{Embedding, Skin};
pub use springs::{Spring, SpringKind, Springs};
pub use tets::{Tet, TetLimits};

use crate::mesh::{SurfaceMesh, TetMesh, Vec3};

/// Constraint weights (stiffnesses), one per constraint type.
///
/// Springs: `k` in N/m in `E = k/2 (‖x_i − x_j‖ − r)²`. Attachments (soft
/// pins): N/m in `E = w/2 ‖x_i − t‖²`. Tet constraints: `w` per unit rest
/// volume (Pa = J/m³) in `E = w|V₀|/2 ‖F − P(F)‖²`, so a refined mesh of
/// the same body has the same stiffness; 0 turns a constraint type off.
/// Deserialising takes a missing weight from [`Weights::default`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Structural (edge) springs.
    pub structural: f64,
    /// Shear springs (diagonals of grid cells and of a mesh's quads).
    pub shear: f64,
    /// Bending springs.
    pub bending: f64,
    /// Soft pins.
    pub attachment: f64,
    /// Corotated (ARAP) tet strain: projection onto the rotations.
    pub strain: f64,
    /// Tet strain limiting: principal stretches outside
    /// `[strain_min, strain_max]` of the model's [`TetLimits`] are pulled back.
    pub strain_limit: f64,
    /// Tet volume: `det F` outside `[volume_min, volume_max]` of the
    /// model's [`TetLimits`] is pulled back.
    pub volume: f64,
}

impl Default for Weights {
    /// Cotton-like spring values for a 1 m cloth of a few thousand vertices;
    /// for tets, a soft-rubber ARAP body and the optional constraints off.
    ///
    /// `strain = 10⁵ Pa`: `w/2 ‖F − R‖²` is the corotated energy with shear
    /// modulus `μ = w/2 = 50 kPa` (and no Lamé `λ` term), a soft silicone
    /// rubber (gelatin desserts are 1–10 kPa, rubber bands 0.3–1 MPa). A
    /// 1 m cube of 1000 kg/m³ held by one side face (the `tet12` and `tet22`
    /// bench scenes, `h = 1/60`, 10 iterations) droops by 0.27 m at rest and
    /// 0.38 m at its first swing: plainly soft, yet it keeps its shape
    /// (2·10⁴ Pa droops by more than its own size). The stiffness-to-inertia
    /// ratio per element, `w h² / (ρ l²)`, is 12 for 21 cells per side, and
    /// both meshes settle within 2 % of each other, so 10 PD iterations are
    /// enough (PD is stable at any stiffness; too stiff a body only
    /// converges slower and looks softer than it is).
    fn default() -> Self {
        Self {
            structural: 1000.0,
            shear: 500.0,
            bending: 20.0,
            attachment: 1000.0,
            strain: 1.0e5,
            strain_limit: 0.0,
            volume: 0.0,
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

    /// The weights of the three tet constraint types, `[strain,
    /// strain_limit, volume]` (they share one stencil `G`).
    pub fn tet(&self) -> [f64; 3] {
        [self.strain, self.strain_limit, self.volume]
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
    /// Tetrahedra (empty for cloth and spring models).
    pub tets: Vec<Tet>,
    /// Stiffness per constraint type.
    pub weights: Weights,
    /// Ranges of the strain-limiting and volume constraints.
    pub limits: TetLimits,
    /// Hard and soft pins.
    pub pins: Pins,
    /// The full-resolution surface a tet model was built from, carried by
    /// its tets (drawn and exported instead of `triangles` when present).
    pub skin: Option<Skin>,
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
            tets: Vec::new(),
            weights,
            limits: TetLimits::default(),
            pins: Pins::default(),
            skin: None,
        }
    }

    /// The seed cloth grid with areal density `density` (kg/m²), no pins.
    pub fn from_cloth_grid(grid: &ClothGrid, density: f64, weights: Weights) -> Self {
        Self {
            rest: grid.positions.clone(),
            masses: mass::lumped_area_masses(&grid.positions, &grid.triangles, density),
            triangles: grid.triangles.clone(),
            springs: grid.springs.clone(),
            tets: Vec::new(),
            weights,
            limits: TetLimits::default(),
            pins: Pins::default(),
            skin: None,
        }
    }

    /// A tet model of `mesh` with `density` (kg/m³, lumped per volume), no
    /// pins, default [`TetLimits`]. `triangles` are the mesh's boundary
    /// faces; with `edge_springs`, every tet edge is also a structural
    /// spring at its rest length.
    pub fn from_tet_mesh(
        mesh: &TetMesh,
        density: f64,
        weights: Weights,
        edge_springs: bool,
    ) -> Self {
        let x = mesh.positions();
        let structural = if edge_springs {
            mesh.edges()
                .into_iter()
                .map(|(a, b)| Spring::at_rest(x, a, b))
                .collect()
        } else {
            Vec::new()
        };
        Self {
            rest: x.to_vec(),
            masses: mass::lumped_volume_masses(x, mesh.tets(), density),
            triangles: mesh.boundary_faces(),
            springs: Springs {
                structural,
                ..Springs::default()
            },
            tets: mesh
                .tets()
                .iter()
                .map(|&t| Tet::at_rest(x, t).expect("a TetMesh has no degenerate tetrahedra"))
                .collect(),
            weights,
            limits: TetLimits::default(),
            pins: Pins::default(),
            skin: None,
        }
    }

    /// A tet model from a tetrahedralisation of `surface` (see
    /// [`Model::from_tet_mesh`]) that carries `surface` as its skin.
    pub fn from_tetrahedralization(
        surface: &SurfaceMesh,
        tetra: &tetra::Tetrahedralization,
        density: f64,
        weights: Weights,
        edge_springs: bool,
    ) -> Self {
        Self {
            skin: Some(Skin {
                triangles: surface.triangles().to_vec(),
                embedding: tetra.embedding.clone(),
            }),
            ..Self::from_tet_mesh(&tetra.mesh, density, weights, edge_springs)
        }
    }

    /// The triangles to draw and export: the skin's, else `triangles`.
    pub fn render_triangles(&self) -> &[[u32; 3]] {
        self.skin.as_ref().map_or(&self.triangles, |s| &s.triangles)
    }

    /// The vertices of [`Model::render_triangles`] for simulated positions
    /// `x` (`m × 3`): the skin's embedded vertices, else `x` itself.
    pub fn render_positions(&self, x: &[Vec3], out: &mut Vec<Vec3>) {
        match &self.skin {
            Some(skin) => {
                out.resize(skin.embedding.len(), Vec3::zeros());
                skin.embedding.apply(x, out);
            }
            None => {
                out.clear();
                out.extend_from_slice(x);
            }
        }
    }

    /// Lumped masses (length `m`) at `density` as the constructors compute
    /// them: kg/m³ over the tets of a tet model, else kg/m² over the
    /// triangles.
    pub fn lumped_masses(&self, density: f64) -> Vec<f64> {
        if self.tets.is_empty() {
            mass::lumped_area_masses(&self.rest, &self.triangles, density)
        } else {
            let tets: Vec<[u32; 4]> = self.tets.iter().map(|t| t.vertices).collect();
            mass::lumped_volume_masses(&self.rest, &tets, density)
        }
    }

    /// Number of vertices `m`.
    pub fn vertex_count(&self) -> usize {
        self.rest.len()
    }

    /// The vertices that share a tetrahedron or a structural or shear
    /// spring with `v`: its ring of neighbours, sorted, without `v`.
    pub fn ring(&self, v: u32) -> Vec<u32> {
        let springs = (self.springs.structural.iter()).chain(&self.springs.shear);
        let by_springs = (springs.filter(|s| s.a == v || s.b == v)).flat_map(|s| [s.a, s.b]);
        let by_tets = (self.tets.iter())
            .filter(|t| t.vertices.contains(&v))
            .flat_map(|t| t.vertices);
        let mut ring: Vec<u32> = by_springs.chain(by_tets).filter(|&u| u != v).collect();
        ring.sort_unstable();
        ring.dedup();
        ring
    }

    /// Total mass.
    pub fn total_mass(&self) -> f64 {
        self.masses.iter().sum()
    }
}
