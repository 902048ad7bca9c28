//! The skin: a full-resolution surface embedded in a tet model. Every
//! surface vertex rides on one tetrahedron with fixed barycentric
//! coordinates, so the viewport and the exports show the original mesh
//! deforming with the simulated tets.

use nalgebra::Matrix3;

use crate::mesh::{TetMesh, Vec3, bounds};

/// A surface carried by a tet model: its triangles index the embedded
/// points.
#[derive(Clone, Debug, PartialEq)]
pub struct Skin {
    /// Triangles over the embedded points.
    pub triangles: Vec<[u32; 3]>,
    /// Where each surface vertex sits in the tets.
    pub embedding: Embedding,
}

/// Barycentric embedding of `k` points in a tet mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// The corners of the tetrahedron carrying each point.
    pub corners: Vec<[u32; 4]>,
    /// The point's barycentric coordinates in it (sum 1; slightly outside
    /// `[0, 1]` for points just outside the tet mesh).
    pub weights: Vec<[f64; 4]>,
}

impl Embedding {
    /// Embeds `points` in `mesh`: each in the tet that contains it, or for a
    /// point outside every tet, the tet it is least outside of among those
    /// near it (its coordinates then extrapolate).
    pub fn new(mesh: &TetMesh, points: &[Vec3]) -> Self {
        let grid = TetGrid::new(mesh);
        let (corners, weights) = points
            .iter()
            .map(|&p| {
                let (t, w) = grid.locate(mesh, p);
                (mesh.tets()[t as usize], w)
            })
            .unzip();
        Self { corners, weights }
    }

    /// Number of embedded points.
    pub fn len(&self) -> usize {
        self.corners.len()
    }

    /// Whether no point is embedded.
    pub fn is_empty(&self) -> bool {
        self.corners.is_empty()
    }

    /// Of `points` (the points embedded, where they were embedded), those
    /// further than `limit` outside the tet carrying them, and the furthest
    /// distance: each point's distance from its coordinates clamped into
    /// the tet (no less than its distance from the tet: the clamped point
    /// lies on the tet, toward the corner opposite, not straight across).
    pub fn outside(&self, mesh: &TetMesh, points: &[Vec3], limit: f64) -> (usize, f64) {
        let mut count = 0;
        let mut furthest = 0.0f64;
        for ((p, t), w) in points.iter().zip(&self.corners).zip(&self.weights) {
            if w.iter().all(|&w| w >= 0.0) {
                continue;
            }
            let clamped = w.map(|w| w.max(0.0));
            let sum: f64 = clamped.iter().sum();
            let inside = (0..4)
                .map(|k| mesh.positions()[t[k] as usize] * (clamped[k] / sum))
                .sum::<Vec3>();
            let distance = (p - inside).norm();
            count += usize::from(distance > limit);
            furthest = furthest.max(distance);
        }
        (count, furthest)
    }

    /// Writes the embedded points for tet-mesh vertex positions `x` into
    /// `out` (length [`Embedding::len`]).
    pub fn apply(&self, x: &[Vec3], out: &mut [Vec3]) {
        for ((o, t), w) in out.iter_mut().zip(&self.corners).zip(&self.weights) {
            *o = x[t[0] as usize] * w[0]
                + x[t[1] as usize] * w[1]
                + x[t[2] as usize] * w[2]
                + x[t[3] as usize] * w[3];
        }
    }
}

/// Barycentric coordinates of `p` in tet `t` (`None` if it is degenerate).
fn barycentric(mesh: &TetMesh, t: [u32; 4], p: Vec3) -> Option<[f64; 4]> {
    let x = t.map(|v| mesh.positions()[v as usize]);
    let d = Matrix3::from_columns(&[x[0] - x[3], x[1] - x[3], x[2] - x[3]]);
    let l = d.try_inverse()? * (p - x[3]);
    Some([l.x, l.y, l.z, 1.0 - l.x - l.y - l.z])
}

/// Tets binned by their bounding boxes on a uniform grid.
struct TetGrid {
    lo: Vec3,
    cell: f64,
    n: [usize; 3],
    start: Vec<u32>,
    items: Vec<u32>,
}

impl TetGrid {
    fn new(mesh: &TetMesh) -> Self {
        let p = mesh.positions();
        let (lo, hi) = bounds(p);
        // Cells at least as wide as the widest tet, so the tets containing a
        // point are binned (by centroid) in its cell or the 26 around it.
        let widest = mesh
            .tets()
            .iter()
            .map(|t| {
                let x = t.map(|v| p[v as usize]);
                let (a, b) = bounds(&x);
                (b - a).max()
            })
            .fold(0.0, f64::max);
        let cell = widest.max((hi - lo).max() * 1e-3).max(f64::MIN_POSITIVE);
        let n = ((hi - lo) / cell).map(|e| (e.floor() as usize + 1).min(1024));
        let mut grid = Self {
            lo,
            cell,
            n: [n.x, n.y, n.z],
            start: Vec::new(),
            items: Vec::new(),
        };
        let cells = grid.n[0] * grid.n[1] * grid.n[2];
        let home: Vec<usize> = mesh
            .tets()
            .iter()
            .map(|t| grid.index(grid.cell_of(t.iter().map(|&v| p[v as usize]).sum::<Vec3>() / 4.0)))
            .collect();
        grid.start = vec![0; cells + 1];
        for &c in &home {
            grid.start[c + 1] += 1;
        }
        for i in 0..cells {
            grid.start[i + 1] += grid.start[i];
        }
        let mut fill = grid.start.clone();
        grid.items = vec![0; home.len()];
        for (k, &c) in home.iter().enumerate() {
            grid.items[fill[c] as usize] = k as u32;
            fill[c] += 1;
        }
        grid
    }

    fn cell_of(&self, p: Vec3) -> [usize; 3] {
        let c = (p - self.lo) / self.cell;
        [0, 1, 2].map(|k| (c[k].max(0.0) as usize).min(self.n[k] - 1))
    }

    fn index(&self, c: [usize; 3]) -> usize {
        c[0] + self.n[0] * (c[1] + self.n[1] * c[2])
    }

    /// The best tet for `p`: the one containing it, or else the one it is
    /// least outside of among the tets binned around `p`'s cell (growing
    /// the search until some tet is found).
    fn locate(&self, mesh: &TetMesh, p: Vec3) -> (u32, [f64; 4]) {
        let centre = self.cell_of(p);
        let widest = self.n.iter().copied().max().unwrap_or(1);
        let mut best: Option<(f64, u32, [f64; 4])> = None;
        for radius in 1..=widest {
            let lo = centre.map(|c| c.saturating_sub(radius));
            let hi = [0, 1, 2].map(|k| (centre[k] + radius).min(self.n[k] - 1));
            for_cells(lo, hi, |c| {
                let i = self.index(c);
                for &t in &self.items[self.start[i] as usize..self.start[i + 1] as usize] {
                    if let Some(w) = barycentric(mesh, mesh.tets()[t as usize], p) {
                        let score = w.iter().copied().fold(f64::MAX, f64::min);
                        if best.is_none_or(|b| score > b.0) {
                            best = Some((score, t, w));
                        }
                    }
                }
            });
            if let Some((_, t, w)) = best {
                return (t, w);
            }
        }
        // Unreachable for a non-empty mesh: every tet is binned.
        (0, [0.25; 4])
    }
}

/// Calls `f` for every cell in the box `a..=b`.
fn for_cells(a: [usize; 3], b: [usize; 3], mut f: impl FnMut([usize; 3])) {
    for z in a[2]..=b[2] {
        for y in a[1]..=b[1] {
            for x in a[0]..=b[0] {
                f([x, y, z]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_points_follow_an_affine_motion_exactly() {
        let p = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(1.0, 1.0, 1.0),
        ];
        let mesh = TetMesh::new(p.clone(), vec![[0, 1, 2, 3], [1, 2, 3, 4]]).unwrap();
        let points = [
            Vec3::new(0.1, 0.1, 0.1),
            Vec3::new(0.5, 0.5, 0.4),
            Vec3::new(0.6, 0.6, 0.6),
            // Just outside: extrapolated.
            Vec3::new(-0.01, 0.2, 0.2),
        ];
        let e = Embedding::new(&mesh, &points);
        assert_eq!(
            e.corners[..3],
            [mesh.tets()[0], mesh.tets()[1], mesh.tets()[1]]
        );
        let a = nalgebra::Matrix3::new(1.2, 0.1, 0.0, -0.2, 0.9, 0.3, 0.0, 0.1, 1.1);
        let moved: Vec<Vec3> = p.iter().map(|q| a * q + Vec3::new(1.0, 2.0, 3.0)).collect();
        let mut out = vec![Vec3::zeros(); points.len()];
        e.apply(&moved, &mut out);
        for (o, q) in out.iter().zip(&points) {
            assert!((o - (a * q + Vec3::new(1.0, 2.0, 3.0))).norm() < 1e-12);
        }
    }
}
