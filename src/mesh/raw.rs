//! [`RawMesh`]: polygons exactly as a file or generator gave them, before validation.

use std::path::PathBuf;

use super::Vec3;

/// Whether a name came from an OBJ `o` (object) or `g` (group) statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupKind {
    /// An `o name` statement.
    Object,
    /// A `g name ...` statement.
    Group,
}

/// A named set of polygons (an OBJ object or group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawGroup {
    /// The name as written in the file.
    pub name: String,
    /// Object or group.
    pub kind: GroupKind,
}

/// Polygons with 0-based vertex indices, unvalidated.
///
/// Polygon `p` uses `indices[offsets[p]..offsets[p + 1]]`; every polygon has at
/// least three corners and every index is `< positions.len()` (the parser and the
/// generators guarantee both; [`crate::mesh::validate()`] checks them again).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawMesh {
    /// Vertex positions, `m × 3`.
    pub positions: Vec<Vec3>,
    /// Polygon start offsets into `indices`, `polygons + 1` entries starting at 0.
    pub offsets: Vec<u32>,
    /// Concatenated polygon corners.
    pub indices: Vec<u32>,
    /// The 1-based source line of each polygon (0 when generated).
    pub lines: Vec<u32>,
    /// For each polygon, an index into `memberships`.
    pub membership: Vec<u32>,
    /// Distinct sets of group indices (into `groups`) that polygons belong to.
    /// Entry 0 is always the empty set.
    pub memberships: Vec<Vec<u32>>,
    /// Object and group names in order of first appearance.
    pub groups: Vec<RawGroup>,
    /// Texture coordinates `(u, v)` (OBJ `vt`), in the order defined.
    pub texcoords: Vec<[f64; 2]>,
    /// The texture coordinate (into `texcoords`) of each corner in
    /// `indices`, [`NO_TEXCOORD`] for a corner without one; shorter than
    /// `indices` (empty if no corner has one) where the last polygons have
    /// none.
    pub corner_texcoords: Vec<u32>,
    /// Material names (OBJ `usemtl`), in order of first use.
    pub materials: Vec<String>,
    /// The material (into `materials`) of each polygon, [`NO_MATERIAL`] for
    /// none; shorter than the polygon count (empty if no polygon has one)
    /// where the last polygons have none.
    pub polygon_materials: Vec<u32>,
    /// The material libraries (OBJ `mtllib`), in the order named: as
    /// written, joined to the OBJ file's directory by
    /// [`import_obj`](crate::mesh::import_obj).
    pub material_libraries: Vec<PathBuf>,
}

/// A corner without a texture coordinate in [`RawMesh::corner_texcoords`].
pub const NO_TEXCOORD: u32 = u32::MAX;

/// A polygon without a material in [`RawMesh::polygon_materials`].
pub const NO_MATERIAL: u32 = u32::MAX;

impl RawMesh {
    /// An empty mesh ready for [`RawMesh::push_polygon`].
    pub fn new() -> Self {
        Self {
            offsets: vec![0],
            memberships: vec![Vec::new()],
            ..Self::default()
        }
    }

    /// Number of polygons.
    pub fn polygon_count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// The corners of polygon `p`.
    pub fn polygon(&self, p: usize) -> &[u32] {
        &self.indices[self.offsets[p] as usize..self.offsets[p + 1] as usize]
    }

    /// Appends a polygon with the given corners, source line and membership.
    pub fn push_polygon(&mut self, corners: &[u32], line: u32, membership: u32) {
        self.indices.extend_from_slice(corners);
        self.offsets.push(self.indices.len() as u32);
        self.lines.push(line);
        self.membership.push(membership);
    }

    /// Gives the corners of the polygon pushed last texture coordinates,
    /// one per corner ([`NO_TEXCOORD`] for none).
    ///
    /// # Panics
    /// If no polygon was pushed, or `texcoords` does not have one entry per
    /// corner of the last polygon.
    pub fn set_last_texcoords(&mut self, texcoords: &[u32]) {
        let start = self.offsets[self.offsets.len() - 2] as usize;
        assert_eq!(texcoords.len(), self.indices.len() - start);
        self.corner_texcoords.resize(start, NO_TEXCOORD);
        self.corner_texcoords.extend_from_slice(texcoords);
    }

    /// The texture coordinates of polygon `p`'s corners, if every corner
    /// has one (a polygon with only some is untextured as a whole, however
    /// it is cut).
    pub fn polygon_texcoords(&self, p: usize) -> Option<&[u32]> {
        let range = self.offsets[p] as usize..self.offsets[p + 1] as usize;
        self.corner_texcoords
            .get(range)
            .filter(|t| !t.contains(&NO_TEXCOORD))
    }

    /// Gives the polygon pushed last `material` (an index into
    /// [`RawMesh::materials`]).
    ///
    /// # Panics
    /// If no polygon was pushed.
    pub fn set_last_material(&mut self, material: u32) {
        let last = self.polygon_count() - 1;
        self.polygon_materials.resize(last, NO_MATERIAL);
        self.polygon_materials.push(material);
    }

    /// The material of polygon `p` (an index into [`RawMesh::materials`]),
    /// if it has one ([`NO_MATERIAL`], or an index past the names, has
    /// none: the fields are public, and a writer indexes the names).
    pub fn polygon_material(&self, p: usize) -> Option<u32> {
        self.polygon_materials
            .get(p)
            .copied()
            .filter(|&m| (m as usize) < self.materials.len())
    }

    /// Adds a material name (not looked for first) and returns its index.
    pub(crate) fn push_material(&mut self, name: String) -> u32 {
        self.materials.push(name);
        (self.materials.len() - 1) as u32
    }

    /// Registers a group name (or finds it) and returns its index.
    pub fn group_index(&mut self, name: &str, kind: GroupKind) -> u32 {
        if let Some(i) = self
            .groups
            .iter()
            .position(|g| g.kind == kind && g.name == name)
        {
            return i as u32;
        }
        self.push_group(name.to_owned(), kind)
    }

    /// Adds a group name (not looked for first) and returns its index.
    pub(crate) fn push_group(&mut self, name: String, kind: GroupKind) -> u32 {
        self.groups.push(RawGroup { name, kind });
        (self.groups.len() - 1) as u32
    }

    /// Registers a membership set (sorted group indices) and returns its index.
    pub fn membership_index(&mut self, mut set: Vec<u32>) -> u32 {
        set.sort_unstable();
        set.dedup();
        if let Some(i) = self.memberships.iter().position(|m| *m == set) {
            return i as u32;
        }
        self.push_membership(set)
    }

    /// Adds a membership set (sorted, without repeats; not looked for
    /// first) and returns its index.
    pub(crate) fn push_membership(&mut self, set: Vec<u32>) -> u32 {
        self.memberships.push(set);
        (self.memberships.len() - 1) as u32
    }

    /// Builds a raw mesh from triangles (no groups).
    pub fn from_triangles(positions: Vec<Vec3>, triangles: &[[u32; 3]]) -> Self {
        let mut raw = Self::new();
        raw.positions = positions;
        raw.indices.reserve(triangles.len() * 3);
        for t in triangles {
            raw.push_polygon(t, 0, 0);
        }
        raw
    }
}
