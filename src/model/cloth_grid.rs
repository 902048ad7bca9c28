//! The regular cloth grid of seed 000 (Liu et al. 2013's demo), the standard
//! benchmark scene: `n × n` nodes with structural, shear (both diagonals) and
//! bending (over two cells) springs, `6n² − 10n + 2` in all.

use super::springs::{Spring, Springs};
use crate::mesh::primitives::cloth_square;
use crate::mesh::{TexCoords, Vec3};

/// An `n × n` cloth grid in the seed layout.
#[derive(Clone, Debug)]
pub struct ClothGrid {
    /// Nodes per side.
    pub n: usize,
    /// Node positions, `n² × 3`; node `(i, j)` (column `i`, row `j` from the
    /// top) is at index `j·n + i`, in the vertical `x`-`y` plane centred on
    /// the origin.
    pub positions: Vec<Vec3>,
    /// Two triangles per cell, for drawing and for lumped masses.
    pub triangles: Vec<[u32; 3]>,
    /// Structural `2n(n−1)`, shear `2(n−1)²`, bending `2n(n−2)`.
    pub springs: Springs,
    /// The unit square over the cloth, one coordinate per node (for the
    /// exports).
    pub texcoords: TexCoords,
}

impl ClothGrid {
    /// Builds the grid with side length `width` (node spacing `width / (n − 1)`).
    ///
    /// # Panics
    /// If `n < 2`.
    pub fn new(n: usize, width: f64) -> Self {
        assert!(n >= 2, "a cloth grid needs at least 2 × 2 nodes");
        let raw = cloth_square(n, width, false);
        let triangles: Vec<[u32; 3]> = (0..raw.polygon_count())
            .map(|p| <[u32; 3]>::try_from(raw.polygon(p)).expect("cloth_square makes triangles"))
            .collect();
        let texcoords = TexCoords {
            coords: raw.texcoords,
            // A node's texture coordinate has the node's index.
            triangles: triangles.iter().copied().map(Some).collect(),
        };
        let positions = raw.positions;
        let id = |i: usize, j: usize| (j * n + i) as u32;
        let spring = |a, b| Spring::at_rest(&positions, a, b);
        let mut springs = Springs::default();
        for j in 0..n {
            for i in 0..n {
                if i + 1 < n {
                    springs.structural.push(spring(id(i, j), id(i + 1, j)));
                }
                if j + 1 < n {
                    springs.structural.push(spring(id(i, j), id(i, j + 1)));
                }
                if i + 1 < n && j + 1 < n {
                    springs.shear.push(spring(id(i, j), id(i + 1, j + 1)));
                    springs.shear.push(spring(id(i + 1, j), id(i, j + 1)));
                }
                if i + 2 < n {
                    springs.bending.push(spring(id(i, j), id(i + 2, j)));
                }
                if j + 2 < n {
                    springs.bending.push(spring(id(i, j), id(i, j + 2)));
                }
            }
        }
        Self {
            n,
            positions,
            triangles,
            springs,
            texcoords,
        }
    }

    /// Lays the grid flat: rotated about its top edge (row 0, which stays
    /// at `y = width / 2`, `z = 0`) into the horizontal `x`-`z` plane, the
    /// rows reaching towards +z. Held by its top corners or edge, it then
    /// falls and swings down to where the upright grid hangs.
    pub fn lie_flat(&mut self) {
        let top = self.positions.first().map_or(0.0, |p| p.y);
        for p in &mut self.positions {
            *p = Vec3::new(p.x, top, top - p.y);
        }
    }

    /// The two top corners, which the seed scene pins.
    pub fn top_corners(&self) -> [u32; 2] {
        [0, (self.n - 1) as u32]
    }

    /// The top row of nodes, left to right.
    pub fn top_edge(&self) -> Vec<u32> {
        (0..self.n as u32).collect()
    }
}
