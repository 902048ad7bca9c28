//! Springs from a triangle mesh by sorted edge triples (physics.md §4, seed 003).
//!
//! Every unique edge is a structural spring. Every interior edge (exactly two
//! triangles) adds a bending spring between the two vertices opposite it.
//! Non-manifold edges (three or more triangles) get a structural spring but no
//! bending spring, and are counted.

use crate::mesh::topology::EdgeKind;
use crate::mesh::{SurfaceMesh, Vec3};

/// A spring between vertices `a` and `b` with rest length `rest`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spring {
    /// First vertex.
    pub a: u32,
    /// Second vertex.
    pub b: u32,
    /// Rest length (may be 0).
    pub rest: f64,
}

impl Spring {
    /// A spring whose rest length is the current distance of its ends.
    pub fn at_rest(positions: &[Vec3], a: u32, b: u32) -> Self {
        Self {
            a,
            b,
            rest: (positions[a as usize] - positions[b as usize]).norm(),
        }
    }
}

/// The role of a spring, which decides its weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpringKind {
    /// Along mesh edges (or grid rows and columns): resists stretching.
    Structural,
    /// Cell diagonals of a grid: resists shearing.
    Shear,
    /// Across interior edges (or over two grid cells): resists bending.
    Bending,
}

/// Springs grouped by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Springs {
    /// Structural springs.
    pub structural: Vec<Spring>,
    /// Shear springs (grids only).
    pub shear: Vec<Spring>,
    /// Bending springs.
    pub bending: Vec<Spring>,
    /// Edges shared by three or more triangles, which got no bending spring.
    pub non_manifold_edges: usize,
}

impl Springs {
    /// Structural and bending springs of a validated surface, rest lengths
    /// from its positions.
    pub fn from_surface(mesh: &SurfaceMesh) -> Self {
        let x = mesh.positions();
        let topo = mesh.topology();
        let structural = topo
            .edges()
            .iter()
            .map(|&[a, b]| Spring::at_rest(x, a, b))
            .collect();
        let bending = topo
            .opposite_pairs(mesh.triangles())
            .map(|(_, [a, b])| Spring::at_rest(x, a, b))
            .collect();
        Self {
            structural,
            shear: Vec::new(),
            bending,
            non_manifold_edges: topo.count(EdgeKind::NonManifold),
        }
    }

    /// The springs of one kind.
    pub fn of_kind(&self, kind: SpringKind) -> &[Spring] {
        match kind {
            SpringKind::Structural => &self.structural,
            SpringKind::Shear => &self.shear,
            SpringKind::Bending => &self.bending,
        }
    }

    /// Total number of springs.
    pub fn len(&self) -> usize {
        self.structural.len() + self.shear.len() + self.bending.len()
    }

    /// Whether there are no springs at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
