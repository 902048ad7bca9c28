//! Edge topology of a triangle mesh from sorted `(min, max, triangle)` triples.
//!
//! Every triangle emits one triple per edge; after sorting, equal vertex pairs
//! are adjacent (physics.md §4, seed 003). A pair seen once is a boundary
//! edge, twice an interior edge, three or more times a non-manifold edge.
//!
//! The sort is a bucket (counting) sort on the smaller vertex followed by an
//! insertion sort of each bucket on `(max, triangle)`: linear in the number of
//! triangles, since a vertex starts only a handful of edges.

/// The items (faces, tets, springs: anything listing its vertices) around
/// each vertex, in compressed rows.
pub(crate) struct Incidence {
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Incidence {
    /// The items around each of `vertices` vertices; item `k` is the `k`-th
    /// of `items`, each the list of its vertices (all `< vertices`).
    pub(crate) fn new<'a>(vertices: usize, items: impl Iterator<Item = &'a [u32]> + Clone) -> Self {
        let mut start = vec![0u32; vertices + 1];
        for item in items.clone() {
            for &v in item {
                start[v as usize + 1] += 1;
            }
        }
        for v in 0..vertices {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[vertices] as usize];
        for (k, item) in items.enumerate() {
            for &v in item {
                list[fill[v as usize] as usize] = k as u32;
                fill[v as usize] += 1;
            }
        }
        Self { start, items: list }
    }

    /// The items around vertex `v`, in increasing order.
    pub(crate) fn of(&self, v: u32) -> &[u32] {
        &self.items[self.start[v as usize] as usize..self.start[v as usize + 1] as usize]
    }
}

/// Unique edges of a triangle mesh and the triangles around each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeTopology {
    /// Unique edges `[a, b]` with `a < b`, sorted lexicographically.
    edges: Vec<[u32; 2]>,
    /// `faces[offsets[e]..offsets[e + 1]]` are the triangles using edge `e`,
    /// in increasing order.
    offsets: Vec<u32>,
    faces: Vec<u32>,
}

/// Kind of an edge by the number of triangles using it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// Used by one triangle.
    Boundary,
    /// Used by exactly two triangles.
    Interior,
    /// Used by three or more triangles.
    NonManifold,
}

impl EdgeTopology {
    /// Builds the topology of `triangles` over `vertex_count` vertices.
    ///
    /// Every index must be `< vertex_count` and triangles must not repeat a
    /// vertex (the validator guarantees both).
    pub fn new(vertex_count: usize, triangles: &[[u32; 3]]) -> Self {
        // Counting sort of the triples by their smaller vertex.
        let mut start = vec![0u32; vertex_count + 1];
        for t in triangles {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                start[a.min(b) as usize + 1] += 1;
            }
        }
        for v in 0..vertex_count {
            start[v + 1] += start[v];
        }
        let mut fill = start.clone();
        let mut triples = vec![(0u32, 0u32); triangles.len() * 3];
        for (ti, t) in triangles.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                let slot = &mut fill[a.min(b) as usize];
                triples[*slot as usize] = (a.max(b), ti as u32);
                *slot += 1;
            }
        }
        // Each bucket holds the few edges that start at one vertex.
        let mut edges = Vec::with_capacity(triangles.len() * 3 / 2 + 16);
        let mut offsets = Vec::with_capacity(edges.capacity() + 1);
        let mut faces = Vec::with_capacity(triples.len());
        for v in 0..vertex_count {
            let bucket = &mut triples[start[v] as usize..start[v + 1] as usize];
            sort_bucket(bucket);
            let mut i = 0;
            while i < bucket.len() {
                let max = bucket[i].0;
                edges.push([v as u32, max]);
                offsets.push(faces.len() as u32);
                while i < bucket.len() && bucket[i].0 == max {
                    faces.push(bucket[i].1);
                    i += 1;
                }
            }
        }
        offsets.push(faces.len() as u32);
        Self {
            edges,
            offsets,
            faces,
        }
    }

    /// Unique edges `[a, b]`, `a < b`, sorted.
    pub fn edges(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// Triangles using edge `e`, in increasing order.
    pub fn edge_faces(&self, e: usize) -> &[u32] {
        &self.faces[self.offsets[e] as usize..self.offsets[e + 1] as usize]
    }

    /// Boundary, interior or non-manifold.
    pub fn kind(&self, e: usize) -> EdgeKind {
        match self.offsets[e + 1] - self.offsets[e] {
            1 => EdgeKind::Boundary,
            2 => EdgeKind::Interior,
            _ => EdgeKind::NonManifold,
        }
    }

    /// Number of edges of the given kind.
    pub fn count(&self, kind: EdgeKind) -> usize {
        (0..self.edges.len())
            .filter(|&e| self.kind(e) == kind)
            .count()
    }

    /// For every interior edge, the edge index and the two vertices opposite
    /// it (one from each triangle): the endpoints of its bending spring.
    pub fn opposite_pairs<'a>(
        &'a self,
        triangles: &'a [[u32; 3]],
    ) -> impl Iterator<Item = (usize, [u32; 2])> + 'a {
        (0..self.edges.len()).filter_map(move |e| {
            let [t1, t2] = *self.edge_faces(e) else {
                return None;
            };
            let [a, b] = self.edges[e];
            let opposite = |t: u32| {
                let tri = triangles[t as usize];
                tri.into_iter().find(|&v| v != a && v != b)
            };
            Some((e, [opposite(t1)?, opposite(t2)?]))
        })
    }

    /// Interior edges whose two triangles traverse them in the same direction
    /// (the triangles' windings disagree across the edge).
    pub fn inconsistent_orientations(&self, triangles: &[[u32; 3]]) -> usize {
        (0..self.edges.len())
            .filter(|&e| {
                let [t1, t2] = *self.edge_faces(e) else {
                    return false;
                };
                let [a, b] = self.edges[e];
                goes_forward(triangles[t1 as usize], a, b)
                    == goes_forward(triangles[t2 as usize], a, b)
            })
            .count()
    }

    /// Which triangles to turn over (reverse their winding) so that each
    /// patch, the triangles joined across interior edges, is wound one way:
    /// the way most of its triangles already are, so a file with a few
    /// faces flipped is mended and one wound inwards throughout stays so.
    /// A patch that cannot be wound one way (a Möbius strip) is left as
    /// the walk across it meets it. Non-manifold edges join nothing.
    pub fn consistent_flips(&self, triangles: &[[u32; 3]]) -> Vec<bool> {
        // Across each interior edge: the two triangles, and whether they
        // traverse it the same way (then one of them must turn over).
        let mut start = vec![0u32; triangles.len() + 1];
        let joins: Vec<([u32; 2], bool)> = (0..self.edges.len())
            .filter_map(|e| {
                let [t1, t2] = *self.edge_faces(e) else {
                    return None;
                };
                let [a, b] = self.edges[e];
                let same = goes_forward(triangles[t1 as usize], a, b)
                    == goes_forward(triangles[t2 as usize], a, b);
                Some(([t1, t2], same))
            })
            .collect();
        for ([t1, t2], _) in &joins {
            start[*t1 as usize + 1] += 1;
            start[*t2 as usize + 1] += 1;
        }
        for t in 0..triangles.len() {
            start[t + 1] += start[t];
        }
        let mut fill = start.clone();
        let mut neighbours = vec![(0u32, false); 2 * joins.len()];
        for &([t1, t2], same) in &joins {
            for (from, to) in [(t1, t2), (t2, t1)] {
                neighbours[fill[from as usize] as usize] = (to, same);
                fill[from as usize] += 1;
            }
        }
        let mut flip = vec![false; triangles.len()];
        let mut seen = vec![false; triangles.len()];
        let mut patch = Vec::new();
        for seed in 0..triangles.len() {
            if seen[seed] {
                continue;
            }
            seen[seed] = true;
            patch.clear();
            patch.push(seed as u32);
            let mut next = 0;
            while let Some(&t) = patch.get(next) {
                next += 1;
                let t = t as usize;
                for &(n, same) in &neighbours[start[t] as usize..start[t + 1] as usize] {
                    if !seen[n as usize] {
                        seen[n as usize] = true;
                        flip[n as usize] = flip[t] ^ same;
                        patch.push(n);
                    }
                }
            }
            let flipped = patch.iter().filter(|&&t| flip[t as usize]).count();
            if 2 * flipped > patch.len() {
                // The seed was among the few: keep the many as they are.
                for &t in &patch {
                    flip[t as usize] = !flip[t as usize];
                }
            }
        }
        flip
    }
}

/// Whether triangle `t` contains the directed edge `a → b`.
fn goes_forward(t: [u32; 3], a: u32, b: u32) -> bool {
    (0..3).any(|k| t[k] == a && t[(k + 1) % 3] == b)
}

/// Sorts a bucket: by insertion while it holds the few edges of a vertex,
/// as it does in a mesh; else in `n log n` (a polygon going round the same
/// triangle 200,000 times made one of 600,000, and insertion took minutes).
fn sort_bucket(bucket: &mut [(u32, u32)]) {
    if bucket.len() > 32 {
        bucket.sort_unstable();
        return;
    }
    for i in 1..bucket.len() {
        let mut j = i;
        while j > 0 && bucket[j - 1] > bucket[j] {
            bucket.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// Number of connected components of the vertex graph of `triangles`
/// (isolated vertices excluded).
pub fn connected_components(vertex_count: usize, triangles: &[[u32; 3]]) -> usize {
    let (labels, count) = component_labels(vertex_count, triangles.iter().map(|t| &t[..]));
    let mut seen = vec![false; count];
    for &v in triangles.iter().flatten() {
        seen[labels[v as usize] as usize] = true;
    }
    seen.iter().filter(|&&s| s).count()
}

/// The connected component of each vertex of the graph in which the
/// vertices of each of `cells` (triangles, tets) are connected, numbered
/// from 0 in the order of their first vertices, and how many there are (an
/// isolated vertex is one).
pub fn component_labels<'a>(
    vertex_count: usize,
    cells: impl IntoIterator<Item = &'a [u32]>,
) -> (Vec<u32>, usize) {
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let grand = parent[parent[x as usize] as usize];
            parent[x as usize] = grand;
            x = grand;
        }
        x
    }
    let mut parent: Vec<u32> = (0..vertex_count as u32).collect();
    for cell in cells {
        if let Some((&first, rest)) = cell.split_first() {
            let r0 = find(&mut parent, first);
            for &v in rest {
                let r = find(&mut parent, v);
                if r != r0 {
                    parent[r as usize] = r0;
                }
            }
        }
    }
    // A root's label is set at the first vertex of its component.
    let mut labels = vec![u32::MAX; vertex_count];
    let mut count = 0;
    for v in 0..vertex_count {
        let root = find(&mut parent, v as u32) as usize;
        if labels[root] == u32::MAX {
            labels[root] = count;
            count += 1;
        }
        labels[v] = labels[root];
    }
    (labels, count as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vertex shared by hundreds of triangles (a closed fan, and a
    /// polygon going round one triangle: each edge used many times) has
    /// its edges and their faces in order, as a few do.
    #[test]
    fn a_vertex_of_many_triangles_has_its_edges_in_order() {
        let n = 300u32;
        let mut triangles: Vec<[u32; 3]> = (0..n).map(|k| [0, 1 + k, 1 + (k + 1) % n]).collect();
        triangles.extend((0..100).map(|_| [0, 1, 2]));
        let topology = EdgeTopology::new(n as usize + 1, &triangles);
        assert_eq!(topology.edges().len(), 2 * n as usize);
        assert!(topology.edges().windows(2).all(|w| w[0] < w[1]));
        for e in 0..topology.edges().len() {
            let faces = topology.edge_faces(e);
            assert!(faces.windows(2).all(|w| w[0] < w[1]), "{faces:?}");
        }
        let spoke = topology.edges().iter().position(|&e| e == [0, 1]).unwrap();
        assert_eq!(topology.edge_faces(spoke).len(), 2 + 100);
    }

    #[test]
    fn components_are_labelled_in_the_order_of_their_first_vertices() {
        // Two tets without a common vertex (0 2 4 8 and 1 3 5 7), 6 alone.
        let tets = [[8u32, 2, 4, 0], [7, 5, 3, 1]];
        let (labels, count) = component_labels(9, tets.iter().map(|t| &t[..]));
        assert_eq!(count, 3);
        assert_eq!(labels, [0, 1, 0, 1, 0, 1, 2, 1, 0]);
        let tris = [[0u32, 1, 2], [3, 4, 5], [2, 6, 0]];
        assert_eq!(connected_components(8, &tris), 2);
    }

    #[test]
    fn tetrahedron_is_closed_and_consistent() {
        let tris = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
        let topo = EdgeTopology::new(4, &tris);
        assert_eq!(topo.edges().len(), 6);
        assert_eq!(topo.count(EdgeKind::Interior), 6);
        assert_eq!(topo.count(EdgeKind::Boundary), 0);
        assert_eq!(topo.inconsistent_orientations(&tris), 0);
        assert_eq!(topo.opposite_pairs(&tris).count(), 6);
        assert_eq!(connected_components(4, &tris), 1);
    }

    /// The few triangles wound against their patch are the ones turned
    /// over, patch by patch: a tetrahedron with one face flipped, one wound
    /// inwards throughout (left so), and two patches apart.
    #[test]
    fn the_few_against_their_patch_are_turned_over() {
        let outward = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
        let flip = |t: [u32; 3]| [t[0], t[2], t[1]];
        let mut tris = outward.to_vec();
        tris[2] = flip(tris[2]);
        let inward: Vec<_> = outward.iter().map(|&t| flip(t).map(|v| v + 4)).collect();
        tris.extend(inward);
        let topo = EdgeTopology::new(8, &tris);
        let flips = topo.consistent_flips(&tris);
        assert_eq!(
            flips,
            [false, false, true, false, false, false, false, false]
        );
        let mended: Vec<_> = (tris.iter().zip(&flips))
            .map(|(&t, &f)| if f { flip(t) } else { t })
            .collect();
        assert_eq!(topo.inconsistent_orientations(&mended), 0);
        assert_eq!(topo.inconsistent_orientations(&tris), 3);
    }

    #[test]
    fn flipped_triangle_is_inconsistent() {
        let tris = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 3, 2]];
        let topo = EdgeTopology::new(4, &tris);
        assert_eq!(topo.inconsistent_orientations(&tris), 3);
    }

    #[test]
    fn three_triangles_on_one_edge_are_non_manifold() {
        let tris = [[0, 1, 2], [1, 0, 3], [0, 1, 4]];
        let topo = EdgeTopology::new(5, &tris);
        let e = topo.edges().iter().position(|&e| e == [0, 1]).unwrap();
        assert_eq!(topo.kind(e), EdgeKind::NonManifold);
        assert_eq!(topo.edge_faces(e), &[0, 1, 2]);
        assert_eq!(topo.count(EdgeKind::NonManifold), 1);
        assert_eq!(topo.opposite_pairs(&tris).count(), 0);
    }
}
