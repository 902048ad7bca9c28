//! Texture coordinates carried from an OBJ file (or a generated grid) to
//! the exports. They belong to triangle corners, as OBJ keeps them: along a
//! seam one vertex has a coordinate in each of its faces.

/// The texture coordinates of a triangle mesh's corners.
#[derive(Clone, Debug, PartialEq)]
pub struct TexCoords {
    /// `(u, v)` pairs, each used by some triangle.
    pub coords: Vec<[f64; 2]>,
    /// For each triangle of the mesh, its corners' coordinates (into
    /// `coords`), or `None` for a triangle without.
    pub triangles: Vec<Option<[u32; 3]>>,
}

impl TexCoords {
    /// The coordinates of `triangles` (indices into `coords`), keeping only
    /// the coordinates some triangle uses, in their order in `coords`;
    /// `None` if no triangle has any.
    pub(crate) fn used(coords: &[[f64; 2]], mut triangles: Vec<Option<[u32; 3]>>) -> Option<Self> {
        let mut renumbered = vec![u32::MAX; coords.len()];
        for t in triangles.iter().flatten() {
            for &c in t {
                renumbered[c as usize] = 0;
            }
        }
        let mut used = Vec::new();
        for (slot, uv) in renumbered.iter_mut().zip(coords) {
            if *slot == 0 {
                *slot = used.len() as u32;
                used.push(*uv);
            }
        }
        if used.is_empty() {
            return None;
        }
        for t in triangles.iter_mut().flatten() {
            *t = t.map(|c| renumbered[c as usize]);
        }
        Some(Self {
            coords: used,
            triangles,
        })
    }

    /// Triangles that have coordinates.
    pub fn textured(&self) -> usize {
        self.triangles.iter().flatten().count()
    }

    /// Whether some triangle has no coordinates.
    pub fn some_untextured(&self) -> bool {
        self.triangles.iter().any(Option::is_none)
    }

    /// The coordinates an exported OBJ carries: these, and one at `(0, 0)`
    /// for the triangles without when there are some (every face of an
    /// export has the same form, `f v/vt`).
    pub fn exported(&self) -> usize {
        self.coords.len() + usize::from(self.some_untextured())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_used_coordinates_are_kept_in_order() {
        let coords = [[0.0, 0.0], [0.5, 0.5], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        let t = TexCoords::used(&coords, vec![Some([4, 2, 0]), None, Some([0, 2, 3])]).unwrap();
        assert_eq!(
            t.coords,
            vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
        );
        assert_eq!(t.triangles, vec![Some([3, 1, 0]), None, Some([0, 1, 2])]);
        assert_eq!(t.textured(), 2);
        assert!(t.some_untextured());
        assert_eq!(t.exported(), 5);
        assert_eq!(TexCoords::used(&coords, vec![None, None]), None);
    }
}
