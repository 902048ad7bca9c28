//! Spring models: exact counts on known meshes and the sorted-triple
//! algorithm against a naive quadratic one.

use std::path::Path;

use proptest::prelude::*;
use softbody::mesh::topology::{EdgeKind, EdgeTopology};
use softbody::mesh::{RawMesh, ValidateOptions, Vec3, primitives, validate};
use softbody::model::{ClothGrid, Springs};

fn surface(raw: &RawMesh) -> softbody::mesh::SurfaceMesh {
    validate(raw, Path::new("generated"), &ValidateOptions::default())
        .unwrap()
        .0
}

#[test]
fn triangulated_grid_counts() {
    for n in [2usize, 3, 4, 7, 10, 31] {
        for quads in [false, true] {
            let mesh = surface(&primitives::cloth_square(n, 1.0, quads));
            let topo = mesh.topology();
            let edges = 3 * n * n - 4 * n + 1;
            let boundary = 4 * (n - 1);
            assert_eq!(topo.edges().len(), edges, "n = {n}");
            assert_eq!(topo.count(EdgeKind::Boundary), boundary, "n = {n}");
            assert_eq!(topo.count(EdgeKind::Interior), edges - boundary, "n = {n}");
            let springs = Springs::from_surface(&mesh);
            assert_eq!(springs.non_manifold_edges, 0);
            if quads {
                // The seed grid's structural and shear springs; bending
                // only across the quads' interior sides.
                assert_eq!(springs.structural.len(), 2 * n * (n - 1));
                assert_eq!(springs.shear.len(), 2 * (n - 1) * (n - 1));
                assert_eq!(springs.bending.len(), 2 * (n - 1) * (n - 2));
            } else {
                assert_eq!(springs.structural.len(), edges);
                assert!(springs.shear.is_empty());
                assert_eq!(springs.bending.len(), edges - boundary);
            }
        }
    }
}

/// One polygon through all of `corners`, in order.
fn polygon(corners: Vec<Vec3>) -> RawMesh {
    let mut raw = RawMesh::new();
    let order: Vec<u32> = (0..corners.len() as u32).collect();
    raw.positions = corners;
    raw.push_polygon(&order, 1, 0);
    raw
}

/// A quad's diagonals are both shear springs, whichever one cut it, so it
/// resists shear the same both ways; a pentagon's two cuts and the springs
/// across them are shear springs too.
#[test]
fn polygons_get_shear_springs_across_their_diagonals() {
    let square = vec![
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(1.0, 1.0, 0.0),
        Vec3::new(0.0, 1.0, 0.0),
    ];
    let quad = polygon(square.clone());
    let springs = Springs::from_surface(&surface(&quad));
    assert_eq!(springs.structural.len(), 4);
    assert!(springs.bending.is_empty());
    let mut diagonals: Vec<[u32; 2]> = (springs.shear.iter())
        .map(|s| [s.a.min(s.b), s.a.max(s.b)])
        .collect();
    diagonals.sort_unstable();
    assert_eq!(diagonals, [[0, 2], [1, 3]]);
    assert!((springs.shear.iter()).all(|s| (s.rest - 2f64.sqrt()).abs() < 1e-12));
    // The same square as two triangles of the file: no shear springs.
    let pair = RawMesh::from_triangles(square, &[[0, 1, 2], [0, 2, 3]]);
    let springs = Springs::from_surface(&surface(&pair));
    assert_eq!((springs.structural.len(), springs.shear.len()), (5, 0));
    assert_eq!(springs.bending.len(), 1);

    let pentagon: Vec<Vec3> = (0..5)
        .map(|k| {
            let a = f64::from(k) * std::f64::consts::TAU / 5.0;
            Vec3::new(a.cos(), a.sin(), 0.0)
        })
        .collect();
    let pentagon = polygon(pentagon);
    let springs = Springs::from_surface(&surface(&pentagon));
    assert_eq!(springs.structural.len(), 5);
    assert_eq!(springs.shear.len(), 4);
    assert!(springs.bending.is_empty());
}

#[test]
fn closed_meshes_satisfy_euler() {
    let cases: [(RawMesh, i64); 3] = [
        (primitives::uv_sphere(1.0, 12, 7), 2),
        (primitives::torus(1.0, 0.3, 10, 6), 0),
        (primitives::cuboid(Vec3::repeat(1.0), 4), 2),
    ];
    for (raw, chi) in cases {
        let mesh = surface(&raw);
        let (v, e, f) = (
            mesh.positions().len() as i64,
            mesh.topology().edges().len() as i64,
            mesh.triangles().len() as i64,
        );
        assert_eq!(v - e + f, chi);
        assert_eq!(2 * e, 3 * f);
        let springs = Springs::from_surface(&mesh);
        // Closed: every edge is interior and gets a bending spring, except
        // the quads' cuts, whose springs (both diagonals) are shear.
        let quads = f - raw.polygon_count() as i64; // a quad is two triangles
        assert_eq!(springs.shear.len() as i64, 2 * quads);
        assert_eq!(springs.structural.len() as i64, e - quads);
        assert_eq!(springs.bending.len() as i64, e - quads);
    }
    // Sphere by construction: V = s(r−1)+2, F = 2s(r−1).
    let mesh = surface(&primitives::uv_sphere(1.0, 12, 7));
    assert_eq!(mesh.positions().len(), 12 * 6 + 2);
    assert_eq!(mesh.triangles().len(), 2 * 12 * 6);
}

#[test]
fn seed_grid_has_6n2_minus_10n_plus_2_springs() {
    for n in [2usize, 3, 5, 30, 60] {
        let grid = ClothGrid::new(n, 1.0);
        let s = &grid.springs;
        assert_eq!(s.structural.len(), 2 * n * (n - 1));
        assert_eq!(s.shear.len(), 2 * (n - 1) * (n - 1));
        assert_eq!(s.bending.len(), 2 * n * (n - 2));
        assert_eq!(s.len(), 6 * n * n - 10 * n + 2);
        assert_eq!(grid.positions.len(), n * n);
        // Rest lengths: spacing, diagonal, twice the spacing.
        let d = 1.0 / (n - 1) as f64;
        assert!(s.structural.iter().all(|sp| (sp.rest - d).abs() < 1e-12));
        assert!(
            s.shear
                .iter()
                .all(|sp| (sp.rest - d * 2f64.sqrt()).abs() < 1e-12)
        );
        assert!(s.bending.iter().all(|sp| (sp.rest - 2.0 * d).abs() < 1e-12));
    }
}

#[test]
fn bending_springs_join_the_opposite_vertices() {
    // Two triangles sharing edge 1-2: the bending spring joins 0 and 3.
    let p = vec![
        Vec3::new(0.0, 0.0, 0.0),
        Vec3::new(1.0, 0.0, 0.0),
        Vec3::new(0.0, 1.0, 0.0),
        Vec3::new(1.0, 1.0, 0.5),
    ];
    let mesh = surface(&RawMesh::from_triangles(p, &[[0, 1, 2], [2, 1, 3]]));
    let springs = Springs::from_surface(&mesh);
    assert_eq!(springs.bending.len(), 1);
    let b = springs.bending[0];
    assert_eq!((b.a.min(b.b), b.a.max(b.b)), (0, 3));
    assert!((b.rest - 1.5).abs() < 1e-12);
}

/// The obvious O(E²) algorithm: a list of edges, scanned linearly.
fn naive(triangles: &[[u32; 3]]) -> Vec<([u32; 2], Vec<u32>)> {
    let mut edges: Vec<([u32; 2], Vec<u32>)> = Vec::new();
    for (t, tri) in triangles.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            let key = [a.min(b), a.max(b)];
            match edges.iter_mut().find(|(e, _)| *e == key) {
                Some((_, faces)) => faces.push(t as u32),
                None => edges.push((key, vec![t as u32])),
            }
        }
    }
    edges.sort();
    edges
}

fn soup() -> impl Strategy<Value = (usize, Vec<[u32; 3]>)> {
    (3usize..9).prop_flat_map(|n| {
        let tri = proptest::sample::subsequence((0..n as u32).collect::<Vec<_>>(), 3)
            .prop_shuffle()
            .prop_map(|v| [v[0], v[1], v[2]]);
        (Just(n), proptest::collection::vec(tri, 1..40))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Random triangle soups over few vertices are full of duplicate and
    /// non-manifold edges; both algorithms must find the same edges, the same
    /// triangles per edge and the same bending pairs.
    #[test]
    fn sorted_triples_match_naive((n, triangles) in soup()) {
        let topo = EdgeTopology::new(n, &triangles);
        let expected = naive(&triangles);
        prop_assert_eq!(topo.edges().len(), expected.len());
        for (e, (key, faces)) in expected.iter().enumerate() {
            prop_assert_eq!(topo.edges()[e], *key);
            prop_assert_eq!(topo.edge_faces(e), faces.as_slice());
            let kind = match faces.len() {
                1 => EdgeKind::Boundary,
                2 => EdgeKind::Interior,
                _ => EdgeKind::NonManifold,
            };
            prop_assert_eq!(topo.kind(e), kind);
        }
        let bending: Vec<[u32; 2]> = topo.opposite_pairs(&triangles).map(|(_, p)| p).collect();
        let expected_bending: Vec<[u32; 2]> = expected
            .iter()
            .filter(|(_, f)| f.len() == 2)
            .map(|([a, b], f)| {
                let opp = |t: u32| triangles[t as usize].into_iter().find(|v| v != a && v != b).unwrap();
                [opp(f[0]), opp(f[1])]
            })
            .collect();
        prop_assert_eq!(bending, expected_bending);
    }
}
