//! Tetrahedral meshes: vertices and positively oriented tetrahedra.

use super::Vec3;

/// The six edges of a tetrahedron, as pairs of its corners' positions
/// `0..4` in its vertex array.
pub const TET_EDGES: [(usize, usize); 6] = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];

/// A tetrahedral mesh. Every tetrahedron `[a, b, c, d]` is positively
/// oriented: `(b − a) · ((c − a) × (d − a)) > 0`, and indexes existing
/// vertices. [`TetMesh::new`] enforces both.
#[derive(Clone, Debug, PartialEq)]
pub struct TetMesh {
    positions: Vec<Vec3>,
    tets: Vec<[u32; 4]>,
}

/// Why a list of tetrahedra is not a tet mesh.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TetMeshError {
    /// A tetrahedron names a vertex that does not exist.
    #[error("tetrahedron {tet} uses vertex {vertex}, but there are only {vertices} vertices")]
    IndexOutOfRange {
        /// The tetrahedron (0-based).
        tet: usize,
        /// The vertex index it uses.
        vertex: u32,
        /// Vertices in the mesh.
        vertices: usize,
    },
    /// A vertex position is NaN or infinite.
    #[error("vertex {0} has a non-finite coordinate")]
    NonFinite(usize),
    /// A tetrahedron has (numerically) zero volume or repeats a vertex.
    #[error("tetrahedron {0} is degenerate (zero volume or a repeated vertex)")]
    Degenerate(usize),
    /// No tetrahedra at all.
    #[error("the mesh has no tetrahedra")]
    Empty,
    /// The mesh is too small or too large to simulate in metres.
    #[error(
        "the mesh is {diagonal:.3e} across (its bounding box's diagonal); meshes from 1e-9 to \
         1e9 across can be simulated"
    )]
    Size {
        /// The bounding box's diagonal.
        diagonal: f64,
    },
}

/// Signed volume of the tetrahedron `a b c d`, `(b − a) · ((c − a) × (d − a)) / 6`:
/// positive when `a b c` turns counter-clockwise seen from `d`.
#[inline]
pub fn signed_volume(a: &Vec3, b: &Vec3, c: &Vec3, d: &Vec3) -> f64 {
    (b - a).dot(&(c - a).cross(&(d - a))) / 6.0
}

impl TetMesh {
    /// A tet mesh from positions and tetrahedra. Negatively oriented
    /// tetrahedra are flipped (two vertices swapped); degenerate ones, bad
    /// indices and non-finite positions are errors.
    ///
    /// # Errors
    /// [`TetMeshError`] naming the first offending tetrahedron or vertex.
    pub fn new(positions: Vec<Vec3>, mut tets: Vec<[u32; 4]>) -> Result<Self, TetMeshError> {
        if tets.is_empty() {
            return Err(TetMeshError::Empty);
        }
        if let Some(i) = positions
            .iter()
            .position(|p| !p.iter().all(|c| c.is_finite()))
        {
            return Err(TetMeshError::NonFinite(i));
        }
        // Before the shapes: a body 1e200 across overflowed its volumes and
        // was said to be degenerate (QA). The vertices no tet uses do not
        // count (TetGen keeps input points it left out); a vertex number out
        // of range is reported below.
        let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
        let mut in_range = true;
        for &v in tets.iter().flatten() {
            match positions.get(v as usize) {
                Some(p) => (lo, hi) = (lo.inf(p), hi.sup(p)),
                None => in_range = false,
            }
        }
        // (Scaled by its largest coordinate: a diagonal of 1e200 squared
        // overflows.)
        let d = hi - lo;
        let largest = d.amax();
        let diagonal = if largest > 0.0 && largest.is_finite() {
            largest * (d / largest).norm()
        } else {
            largest
        };
        if in_range && !super::SIZE_RANGE.contains(&diagonal) {
            return Err(TetMeshError::Size { diagonal });
        }
        for (t, tet) in tets.iter_mut().enumerate() {
            if let Some(&vertex) = tet.iter().find(|&&v| v as usize >= positions.len()) {
                return Err(TetMeshError::IndexOutOfRange {
                    tet: t,
                    vertex,
                    vertices: positions.len(),
                });
            }
            let [a, b, c, d] = tet.map(|v| positions[v as usize]);
            if signed_volume(&a, &b, &c, &d) < 0.0 {
                tet.swap(2, 3);
            }
            // Checked in the stored order: the rest shape depends on which
            // vertex is last, and the model computes it in this order.
            let [a, b, c, d] = tet.map(|v| positions[v as usize]);
            if rest_shape(a, b, c, d).is_none() {
                return Err(TetMeshError::Degenerate(t));
            }
        }
        Ok(Self { positions, tets })
    }

    /// Vertex positions.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// This mesh with its positions multiplied by `scale` (positive: the
    /// tets keep their orientation), checked again as [`TetMesh::new`]
    /// checks: a thin tetrahedron can become degenerate by round-off at
    /// another scale, and a large one overflow (QA: a centimetre file at
    /// scale 0.01 panicked where the model took its tets' rest shapes).
    ///
    /// # Errors
    /// As [`TetMesh::new`].
    pub fn scaled(self, scale: f64) -> Result<Self, TetMeshError> {
        let positions = self.positions.into_iter().map(|p| p * scale).collect();
        Self::new(positions, self.tets)
    }

    /// Without the vertices no tetrahedron uses (TetGen's output often keeps
    /// input points it left out, and an unused vertex has no mass), the
    /// others renumbered in order; and the indices of those dropped.
    pub fn without_unused(mut self) -> (Self, Vec<usize>) {
        let mut used = vec![false; self.positions.len()];
        for &v in self.tets.iter().flatten() {
            used[v as usize] = true;
        }
        let unused: Vec<usize> = (0..used.len()).filter(|&v| !used[v]).collect();
        if unused.is_empty() {
            return (self, unused);
        }
        let mut new_index = vec![u32::MAX; used.len()];
        let mut kept = 0;
        for (v, &u) in used.iter().enumerate() {
            if u {
                new_index[v] = kept;
                self.positions[kept as usize] = self.positions[v];
                kept += 1;
            }
        }
        self.positions.truncate(kept as usize);
        for v in self.tets.iter_mut().flatten() {
            *v = new_index[*v as usize];
        }
        (self, unused)
    }

    /// Positively oriented tetrahedra.
    pub fn tets(&self) -> &[[u32; 4]] {
        &self.tets
    }

    /// Total volume.
    pub fn volume(&self) -> f64 {
        self.tets
            .iter()
            .map(|t| {
                let [a, b, c, d] = t.map(|v| self.positions[v as usize]);
                signed_volume(&a, &b, &c, &d)
            })
            .sum()
    }

    /// The boundary: faces that belong to exactly one tetrahedron, oriented
    /// with outward normals (counter-clockwise seen from outside), in a
    /// deterministic order.
    pub fn boundary_faces(&self) -> Vec<[u32; 3]> {
        boundary_faces_of(&self.tets)
    }

    /// Takes the mesh apart into its positions and tetrahedra.
    pub fn into_parts(self) -> (Vec<Vec3>, Vec<[u32; 4]>) {
        (self.positions, self.tets)
    }

    /// The unique edges `(a, b)`, `a < b`, sorted.
    pub fn edges(&self) -> Vec<(u32, u32)> {
        let mut edges: Vec<(u32, u32)> = Vec::with_capacity(self.tets.len() * 6);
        for t in &self.tets {
            for (i, j) in TET_EDGES {
                let (a, b) = (t[i], t[j]);
                edges.push((a.min(b), a.max(b)));
            }
        }
        edges.sort_unstable();
        edges.dedup();
        edges
    }
}

/// The faces of exactly one of the positively oriented `tets`, oriented
/// outward (counter-clockwise seen from outside), in a deterministic order.
pub fn boundary_faces_of(tets: &[[u32; 4]]) -> Vec<[u32; 3]> {
    // The faces of a positively oriented tet `a b c d`, each
    // counter-clockwise seen from outside.
    let mut faces: Vec<([u32; 3], [u32; 3])> = Vec::with_capacity(tets.len() * 4);
    for &[a, b, c, d] in tets {
        for f in [[a, c, b], [a, b, d], [a, d, c], [b, c, d]] {
            let mut key = f;
            key.sort_unstable();
            faces.push((key, f));
        }
    }
    faces.sort_unstable_by_key(|&(k, _)| k);
    let mut out = Vec::new();
    let mut i = 0;
    while i < faces.len() {
        let mut j = i + 1;
        while j < faces.len() && faces[j].0 == faces[i].0 {
            j += 1;
        }
        if j - i == 1 {
            out.push(faces[i].1);
        }
        i = j;
    }
    out
}

/// The rest shape of tet `a b c d`: `D_m⁻¹` for `D_m = [a − d, b − d, c − d]`
/// and the unsigned volume, or `None` when the tet is degenerate: flat
/// relative to its own size (`|det D_m| ≤ 10⁻¹⁴ ‖D_m‖³`, whatever the model's
/// scale) or with a repeated vertex, or too small or large to invert in
/// floating point.
pub fn rest_shape(a: Vec3, b: Vec3, c: Vec3, d: Vec3) -> Option<(nalgebra::Matrix3<f64>, f64)> {
    let dm = nalgebra::Matrix3::from_columns(&[a - d, b - d, c - d]);
    let det = dm.determinant().abs();
    if !det.is_finite() || det <= 1e-14 * dm.norm().powi(3) {
        return None;
    }
    let inverse = dm.try_inverse()?;
    inverse
        .iter()
        .all(|v| v.is_finite())
        .then_some((inverse, det / 6.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit() -> Vec<Vec3> {
        vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(1.0, 1.0, 1.0),
        ]
    }

    #[test]
    fn orientation_is_fixed_and_boundary_is_outward() {
        let mesh = TetMesh::new(unit(), vec![[0, 2, 1, 3], [1, 2, 3, 4]]).unwrap();
        assert_eq!(mesh.tets()[0], [0, 2, 3, 1]);
        let p = mesh.positions();
        for t in mesh.tets() {
            assert!(
                signed_volume(
                    &p[t[0] as usize],
                    &p[t[1] as usize],
                    &p[t[2] as usize],
                    &p[t[3] as usize]
                ) > 0.0
            );
        }
        // Two tets sharing face 1 2 3: 6 boundary faces, 9 edges.
        let faces = mesh.boundary_faces();
        assert_eq!(faces.len(), 6);
        assert_eq!(mesh.edges().len(), 9);
        // Outward: the divergence theorem gives back the volume.
        let vol: f64 = faces
            .iter()
            .map(|f| p[f[0] as usize].dot(&p[f[1] as usize].cross(&p[f[2] as usize])) / 6.0)
            .sum();
        assert!(
            (vol - mesh.volume()).abs() < 1e-12,
            "{vol} vs {}",
            mesh.volume()
        );
    }

    #[test]
    fn bad_tets_are_errors() {
        assert_eq!(
            TetMesh::new(unit(), vec![[0, 1, 2, 7]]),
            Err(TetMeshError::IndexOutOfRange {
                tet: 0,
                vertex: 7,
                vertices: 5
            })
        );
        assert_eq!(
            TetMesh::new(unit(), vec![[0, 1, 1, 3]]),
            Err(TetMeshError::Degenerate(0))
        );
        assert_eq!(TetMesh::new(unit(), vec![]), Err(TetMeshError::Empty));
    }
}
