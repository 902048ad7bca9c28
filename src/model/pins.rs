//! Hard pins (vertices removed from the unknowns) and soft pins (attachment
//! constraints pulling a vertex towards a target that may move).

use crate::mesh::Vec3;

/// A soft pin: energy `w/2 ‖x_i − target‖²` with the model's attachment weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attachment {
    /// The attached vertex.
    pub vertex: u32,
    /// Where it is pulled to.
    pub target: Vec3,
}

/// The pin set of a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pins {
    hard: Vec<u32>,
    /// Soft pins, at most one per vertex.
    pub soft: Vec<Attachment>,
}

impl Pins {
    /// Hard pins on `vertices` (sorted and deduplicated), no soft pins.
    pub fn hard(vertices: impl IntoIterator<Item = u32>) -> Self {
        let mut hard: Vec<u32> = vertices.into_iter().collect();
        hard.sort_unstable();
        hard.dedup();
        Self {
            hard,
            soft: Vec::new(),
        }
    }

    /// Hard-pinned vertices, sorted and unique.
    pub fn hard_vertices(&self) -> &[u32] {
        &self.hard
    }

    /// Whether `v` is hard-pinned.
    pub fn is_hard(&self, v: u32) -> bool {
        self.hard.binary_search(&v).is_ok()
    }

    /// Adds hard pins.
    pub fn pin(&mut self, vertices: impl IntoIterator<Item = u32>) {
        self.hard.extend(vertices);
        self.hard.sort_unstable();
        self.hard.dedup();
    }

    /// Removes hard and soft pins from `vertices`.
    pub fn unpin(&mut self, vertices: &[u32]) {
        self.hard.retain(|v| !vertices.contains(v));
        self.soft.retain(|a| !vertices.contains(&a.vertex));
    }
}

/// Pinned vertices carried to a model that numbers its vertices anew (a
/// rebuild as springs or tets, or at another tet resolution): `pinned`,
/// numbers of the vertices at `old`, become numbers of the vertices at
/// `new` (rest positions in one frame). Sorted and unique; numbers beyond
/// `old` are left out.
///
/// A new vertex is pinned where the old vertex nearest it was, within the
/// old model's spacing (the median distance between neighbours) of it: a
/// pinned region keeps its extent whether the new model is finer or
/// coarser (with each old pin taken only to its nearest new vertex, a
/// region thinned at every coarser build and stayed thin at a finer one:
/// QA's cow lost four fifths of its pinned feet going from tet resolution
/// 30 to 15 and back), and a surface's pins do not reach deep into a
/// volume built from it. The new vertex nearest each old pin is pinned too, so no pin is lost
/// (a lone vertex, a region thinner than the new cells) and a fine
/// surface's pins cover the coarser lattice corners about them (alone, the
/// first rule pinned half as many: review); a model carried to itself
/// keeps its pins.
pub fn carried(old: &[Vec3], pinned: &[u32], new: &[Vec3]) -> Vec<u32> {
    let mut is_pinned = vec![false; old.len()];
    let pins: Vec<Vec3> = pinned
        .iter()
        .filter_map(|&v| {
            let slot = is_pinned.get_mut(v as usize)?;
            *slot = true;
            Some(old[v as usize])
        })
        .collect();
    if pins.is_empty() || new.is_empty() {
        return Vec::new();
    }
    let (old_tree, new_tree) = (Points::new(old), Points::new(new));
    let reach = old_tree.spacing();
    let mut carried: Vec<u32> = (0..new.len())
        .filter(|&v| {
            let (near, d2) = old_tree.nearest(&new[v]);
            is_pinned[near] && d2 <= reach * reach
        })
        .map(|v| v as u32)
        .collect();
    carried.extend(pins.iter().map(|p| new_tree.nearest(p).0 as u32));
    carried.sort_unstable();
    carried.dedup();
    carried
}

/// Points in a k-d tree, for [`carried`].
struct Points {
    coords: Vec<[f64; 3]>,
    tree: kiddo::ImmutableKdTree<f64, 3>,
}

impl Points {
    /// The tree of `points` (not empty).
    fn new(points: &[Vec3]) -> Self {
        let coords: Vec<[f64; 3]> = points.iter().map(|p| [p.x, p.y, p.z]).collect();
        let tree = kiddo::ImmutableKdTree::new_from_slice(&coords);
        Self { coords, tree }
    }

    /// The number of the point nearest `x`, and its squared distance.
    fn nearest(&self, x: &Vec3) -> (usize, f64) {
        let found = self
            .tree
            .nearest_one::<kiddo::SquaredEuclidean>(&[x.x, x.y, x.z]);
        (found.item as usize, found.distance)
    }

    /// The median distance from a point to its nearest neighbour, over up
    /// to 256 points spread through the set: how far apart the model's
    /// vertices are (0 for a single point).
    fn spacing(&self) -> f64 {
        const TWO: std::num::NonZero<usize> = std::num::NonZero::new(2).unwrap();
        let step = self.coords.len().div_ceil(256).max(1);
        let mut gaps: Vec<f64> = (self.coords.iter().step_by(step))
            .filter_map(|x| {
                let found = self.tree.nearest_n::<kiddo::SquaredEuclidean>(x, TWO);
                found.get(1).map(|f| f.distance.sqrt())
            })
            .collect();
        gaps.sort_by(f64::total_cmp);
        gaps.get(gaps.len() / 2).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points on a cube lattice of `n` per side, `h` apart, centred on 0.
    fn lattice(n: usize, h: f64) -> Vec<Vec3> {
        let c = 0.5 * (n - 1) as f64;
        let at = |i: usize| (i as f64 - c) * h;
        (0..n * n * n)
            .map(|i| Vec3::new(at(i % n), at(i / n % n), at(i / (n * n))))
            .collect()
    }

    #[test]
    fn a_lone_pin_survives_a_coarser_model_and_a_region_keeps_its_extent() {
        let (fine, coarse) = (lattice(21, 0.05), lattice(7, 1.0 / 6.0));
        let corner = fine
            .iter()
            .position(|p| p.iter().all(|&c| c < -0.49))
            .unwrap() as u32;
        let lone = carried(&fine, &[corner], &coarse);
        assert_eq!(lone.len(), 1);
        assert!(coarse[lone[0] as usize].iter().all(|&c| c < -0.49));
        // The top slab (y ≥ 0.2): the coarse lattice's, and the layer its
        // edge is nearest (0.2 lies nearer 1/6 than 1/3); and back, the
        // fine lattice's, to within a coarse cell of the edge either way.
        let slab = |points: &[Vec3], from: f64| -> Vec<u32> {
            (0..points.len() as u32)
                .filter(|&v| points[v as usize].y > from)
                .collect()
        };
        let there = carried(&fine, &slab(&fine, 0.199), &coarse);
        assert_eq!(there, slab(&coarse, 0.16));
        let back = carried(&coarse, &there, &fine);
        let edge = 1.0 / 6.0;
        assert!(back.iter().all(|&v| fine[v as usize].y > 0.199 - edge));
        let inside = slab(&fine, 0.199)
            .into_iter()
            .filter(|&v| fine[v as usize].y > 0.2 + edge);
        assert!(inside.into_iter().all(|v| back.contains(&v)));
        // Numbers beyond the old model are left out.
        assert!(carried(&coarse, &[10_000], &fine).is_empty());
    }

    /// A surface's pins reach a volume built from it within a spacing of
    /// the surface, not along the whole way to the middle.
    #[test]
    fn a_surface_s_pins_stay_near_it_in_a_volume() {
        let surface: Vec<Vec3> = lattice(21, 0.05)
            .into_iter()
            .filter(|p| p.amax() > 0.49)
            .collect();
        let top: Vec<u32> = (0..surface.len() as u32)
            .filter(|&v| surface[v as usize].y > 0.49)
            .collect();
        let volume = lattice(11, 0.1);
        let pinned = carried(&surface, &top, &volume);
        let ys: Vec<f64> = pinned.iter().map(|&v| volume[v as usize].y).collect();
        assert!(!ys.is_empty() && ys.iter().all(|&y| y > 0.35), "{ys:?}");
        // A coarse lattice a cell inside the surface, farther from it than
        // the surface's spacing: its top layer pinned whole (nearest to
        // each pin), nothing below it.
        let mut inside = lattice(7, 0.8 / 6.0);
        // One corner near the surface, which the first rule pins: it kept
        // the pins about it from pinning their own nearest (review).
        let middle = (inside.iter())
            .position(|p| p.y > 0.39 && p.x.abs() < 0.01 && p.z.abs() < 0.01)
            .unwrap();
        inside[middle].y = 0.47;
        let pinned = carried(&surface, &top, &inside);
        let layer: Vec<u32> = (0..inside.len() as u32)
            .filter(|&v| inside[v as usize].y > 0.39)
            .collect();
        assert_eq!(pinned, layer);
    }
}
