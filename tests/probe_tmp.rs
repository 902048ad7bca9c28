use softbody::mesh::{self, ImportOptions, ValidateOptions, Vec3};
use softbody::model::tetra::{self, TetraOptions, TriangleTree};
#[test]
fn probe() {
    for name in [
        "spot",
        "fandisk",
        "two_spheres",
        "spot_control_mesh",
        "teapot",
        "torus",
    ] {
        let p = format!("../shared/testdata/good/{name}.obj");
        let s = mesh::load_obj(
            std::path::Path::new(&p),
            &ImportOptions::default(),
            &ValidateOptions::default(),
        )
        .unwrap()
        .0;
        let t = tetra::tetrahedralize(&s, &TetraOptions::default()).unwrap();
        let tree = TriangleTree::new(s.positions(), s.triangles());
        let (lo, hi) = s.bounds();
        let diag = (hi - lo).norm();
        let faces = t.mesh.boundary_faces();
        let pos = t.mesh.positions();
        let mut d: Vec<(f64, Vec3)> = faces
            .iter()
            .map(|f| {
                let [a, b, c] = f.map(|v| pos[v as usize]);
                [
                    a,
                    (a + b) * 0.5,
                    (b + c) * 0.5,
                    (c + a) * 0.5,
                    (a + b + c) / 3.0,
                ]
                .into_iter()
                .map(|q| (tree.distance(q) / diag, q))
                .fold((0.0, Vec3::zeros()), |x, y| if y.0 > x.0 { y } else { x })
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = d.len();
        let over = d.iter().filter(|x| x.0 > 0.005).count();
        let vd: f64 = pos.iter().map(|q| 0.0f64.max(0.0) + 0.0 * q.x).sum();
        let _ = vd;
        eprintln!(
            "{name}: faces {n} p50 {:.4} p90 {:.4} p99 {:.4} max {:.4} at {:?}; over 0.5%: {over}; cell/diag {:.4}",
            d[n / 2].0 * 100.0,
            d[n * 9 / 10].0 * 100.0,
            d[n * 99 / 100].0 * 100.0,
            d[n - 1].0 * 100.0,
            d[n - 1].1,
            t.cell / diag * 100.0
        );
    }
}
