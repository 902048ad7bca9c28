//! Springs from a triangle mesh by sorted edge triples (physics.md §4, seed 003).
//!
//! Every unique edge is a spring: structural, or shear for a cut inside a
//! polygon (below). Every interior edge (exactly two triangles) adds a
//! spring between the two vertices opposite it: bending, or shear across a
//! cut. Non-manifold edges (three or more triangles) get a structural spring
//! but no spring across, and are counted.
//!
//! Quads and larger polygons of the file are cut into triangles on import;
//! the edges that cut them are not edges of the file but diagonals inside a
//! face. As in Blender's cloth, a diagonal and the spring across it (the
//! quad's other diagonal) are shear springs: a quad gets four structural
//! springs on its sides and two shear springs, one per diagonal, instead of a
//! structural spring along one diagonal and a bending spring along the other,
//! which resisted shear one way 50 times more than the other with the
//! default weights (1000 against 20 N/m). Folding along a quad's diagonal
//! is then resisted by the shear weight, as in Blender, so a quad cloth
//! folds along its quads' sides.

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
    /// Diagonals of grid cells and of a mesh's quads and polygons: resists
    /// shearing.
    Shear,
    /// Across interior edges (or over two grid cells): resists bending.
    Bending,
}

/// Springs grouped by kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Springs {
    /// Structural springs.
    pub structural: Vec<Spring>,
    /// Shear springs: grid cell diagonals, and the diagonals inside the
    /// quads and polygons of a mesh.
    pub shear: Vec<Spring>,
    /// Bending springs.
    pub bending: Vec<Spring>,
    /// Edges shared by three or more triangles, which got no bending spring.
    pub non_manifold_edges: usize,
}

impl Springs {
    /// The springs of a validated surface, rest lengths from its
    /// positions: structural and bending springs, and shear springs inside
    /// the file's quads and polygons (see the module documentation).
    pub fn from_surface(mesh: &SurfaceMesh) -> Self {
        let x = mesh.positions();
        let topo = mesh.topology();
        let polygon = mesh.source_polygons();
        // Shear for edge `e` when it cuts a polygon (its two triangles
        // come from one), else `kind`.
        let kind_at = |e: usize, kind| match *topo.edge_faces(e) {
            [t1, t2] if polygon[t1 as usize] == polygon[t2 as usize] => SpringKind::Shear,
            _ => kind,
        };
        let mut springs = Self {
            non_manifold_edges: topo.count(EdgeKind::NonManifold),
            ..Self::default()
        };
        for (e, &[a, b]) in topo.edges().iter().enumerate() {
            springs
                .of_kind_mut(kind_at(e, SpringKind::Structural))
                .push(Spring::at_rest(x, a, b));
        }
        for (e, [a, b]) in topo.opposite_pairs(mesh.triangles()) {
            springs
                .of_kind_mut(kind_at(e, SpringKind::Bending))
                .push(Spring::at_rest(x, a, b));
        }
        springs
    }

    /// The springs of one kind.
    pub fn of_kind(&self, kind: SpringKind) -> &[Spring] {
        match kind {
            SpringKind::Structural => &self.structural,
            SpringKind::Shear => &self.shear,
            SpringKind::Bending => &self.bending,
        }
    }

    /// The springs of one kind, to add to.
    fn of_kind_mut(&mut self, kind: SpringKind) -> &mut Vec<Spring> {
        match kind {
            SpringKind::Structural => &mut self.structural,
            SpringKind::Shear => &mut self.shear,
            SpringKind::Bending => &mut self.bending,
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
