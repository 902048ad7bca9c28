//! OBJ import and validation: real files from `../shared/testdata`, the
//! malformed ones with their specific errors, tobj as an oracle, and the
//! shipped sample meshes.

use std::path::{Path, PathBuf};

use softbody::mesh::{
    self, GroupKind, ImportErrorKind, ImportOptions, MeshReport, RawMesh, ValidateOptions,
    import_obj, import_obj_bytes, primitives, validate,
};

fn testdata(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/testdata")
        .join(sub);
    dir.is_dir().then_some(dir)
}

fn obj_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "obj"))
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Result<MeshReport, mesh::ImportError> {
    mesh::load_obj(path, &ImportOptions::default(), &ValidateOptions::default()).map(|(_, r)| r)
}

#[test]
fn every_good_file_imports() {
    let Some(dir) = testdata("good") else {
        eprintln!("skipped: ../shared/testdata not present");
        return;
    };
    let files = obj_files(&dir);
    assert!(files.len() >= 10);
    for path in files {
        let report = load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(report.triangles > 0, "{}", path.display());
    }
}

#[test]
fn known_facts_about_real_files() {
    let Some(dir) = testdata("good") else {
        return;
    };
    let teapot = load(&dir.join("teapot.obj")).unwrap();
    assert_eq!(teapot.validation.welded_vertices, 403);
    assert_eq!(teapot.boundary_edges, 160);
    assert_eq!(teapot.components, 3);
    assert!(!teapot.closed);

    let beetle = load(&dir.join("beetle.obj")).unwrap();
    assert_eq!(beetle.non_manifold_edges, 47);
    assert_eq!(beetle.boundary_edges, 296);
    assert_eq!(beetle.groups.len(), 1);
    assert_eq!(beetle.groups[0].name, "VWBUG");

    let spot = load(&dir.join("spot.obj")).unwrap();
    assert!(spot.closed);
    assert_eq!(spot.euler_characteristic, 2);
    assert!(spot.volume.unwrap() > 0.0);

    let torus = load(&dir.join("torus.obj")).unwrap();
    assert!(torus.closed);
    assert_eq!(torus.euler_characteristic, 0);

    let spheres = load(&dir.join("two_spheres.obj")).unwrap();
    assert_eq!(spheres.components, 2);
    assert_eq!(spheres.euler_characteristic, 4);

    // Quads and pentagons are triangulated: F = faces + Σ(corners − 3).
    let cage = load(&dir.join("spot_control_mesh.obj")).unwrap();
    assert!(cage.closed);
    assert_eq!(cage.euler_characteristic, 2);
    assert!(cage.validation.triangulated_polygons > 100);

    // Groups, tabs and relative indices; duplicate faces dropped.
    let cornell = load(&dir.join("CornellBox-Original.obj")).unwrap();
    let names: Vec<&str> = cornell.groups.iter().map(|g| g.name.as_str()).collect();
    assert!(names.contains(&"floor") && names.contains(&"light"));
    assert!(cornell.validation.duplicate_triangles > 0);

    // One concave 12-gon: ear clipping gives 10 triangles whose area is the
    // polygon's (a fan from vertex 0 would overlap and overshoot it).
    let (raw, _) = import_obj(&dir.join("E.obj"), &ImportOptions::default()).unwrap();
    let (surface, _) = validate(&raw, Path::new("E.obj"), &ValidateOptions::default()).unwrap();
    assert_eq!(surface.triangles().len(), 10);
    let p = surface.positions();
    let mut area = 0.0;
    for t in surface.triangles() {
        let [a, b, c] = t.map(|i| p[i as usize]);
        area += (b - a).cross(&(c - a)).norm() / 2.0;
    }
    let poly = raw.polygon(0);
    let newell: f64 = (0..poly.len())
        .map(|k| {
            let (a, b) = (
                raw.positions[poly[k] as usize],
                raw.positions[poly[(k + 1) % poly.len()] as usize],
            );
            (a.x - b.x) * (a.y + b.y) / 2.0
        })
        .sum();
    assert!((area - newell.abs()).abs() < 1e-9, "{area} vs {newell}");
}

#[test]
fn bad_files_give_their_specific_errors() {
    let Some(dir) = testdata("bad") else {
        return;
    };
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("EXPECTED.json")).unwrap()).unwrap();
    for case in expected.as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let path = dir.join(file);
        let result = load(&path);
        let err = result.as_ref().err().cloned();
        let err = err.as_ref();
        let kind = err.map(|e| e.kind.clone());
        let line = err.and_then(|e| e.line);
        match file {
            "binary_garbage.obj" => assert_eq!(kind, Some(ImportErrorKind::NotText)),
            "empty.obj" => assert_eq!(kind, Some(ImportErrorKind::Empty)),
            "face_bad_token.obj" => {
                assert_eq!(kind, Some(ImportErrorKind::BadIndex { token: "x".into() }));
                assert_eq!(line, Some(8));
            }
            "face_index_zero.obj" => {
                assert_eq!(kind, Some(ImportErrorKind::IndexZero));
                assert_eq!(line, Some(5));
            }
            "index_out_of_range.obj" => {
                assert_eq!(
                    kind,
                    Some(ImportErrorKind::IndexOutOfRange {
                        index: 5,
                        defined: 4
                    })
                );
                assert_eq!(line, Some(8));
            }
            "inf_coord.obj" => {
                assert_eq!(
                    kind,
                    Some(ImportErrorKind::NonFinite {
                        token: "inf".into()
                    })
                );
                assert_eq!(line, Some(3));
            }
            "nan_coord.obj" => {
                assert_eq!(
                    kind,
                    Some(ImportErrorKind::NonFinite {
                        token: "nan".into()
                    })
                );
                assert_eq!(line, Some(2));
            }
            "negative_index_forward.obj" => {
                assert_eq!(
                    kind,
                    Some(ImportErrorKind::IndexOutOfRange {
                        index: -3,
                        defined: 2
                    })
                );
                assert_eq!(line, Some(3));
            }
            "no_faces.obj" => assert_eq!(kind, Some(ImportErrorKind::NoFaces { vertices: 4 })),
            "truncated_line.obj" => {
                assert_eq!(kind, Some(ImportErrorKind::TooFewCorners { found: 2 }));
                assert_eq!(line, Some(8));
            }
            "truncated_number.obj" => {
                assert_eq!(
                    kind,
                    Some(ImportErrorKind::BadNumber { token: "1e".into() })
                );
                assert_eq!(line, Some(4));
            }
            "v_two_coords.obj" => {
                assert_eq!(kind, Some(ImportErrorKind::TooFewCoordinates { found: 2 }));
                assert_eq!(line, Some(2));
            }
            "negative_indices_valid.obj" => {
                let r = result.unwrap();
                assert_eq!((r.vertices, r.triangles), (4, 4));
                assert!(r.closed);
                assert!((r.volume.unwrap() - 1.0 / 6.0).abs() < 1e-12);
            }
            "flat_zero_volume.obj" => {
                // Parses; the two reversed copies are duplicates, and what is
                // left is a flat open square (the tetrahedraliser rejects it).
                let r = result.unwrap();
                assert_eq!(r.validation.duplicate_triangles, 2);
                assert!(!r.closed);
                assert_eq!(r.volume, None);
            }
            other => panic!("no expectation written for {other}"),
        }
        if let Some(e) = err {
            // Every message names the file (and the line where there is one).
            let message = e.to_string();
            assert!(message.contains(file), "{message}");
            if let Some(l) = e.line {
                assert!(message.contains(&format!(":{l}:")), "{message}");
            }
        }
    }
}

/// The faces of an OBJ file as tobj reads them (untriangulated, indices
/// per attribute), each a list of `corner(mesh, c)` over the index `c` of
/// each of its corners in its model's mesh.
fn tobj_faces<T>(path: &Path, corner: impl Fn(&tobj::Mesh, usize) -> T) -> Vec<Vec<T>> {
    let options = tobj::LoadOptions {
        triangulate: false,
        single_index: false,
        ignore_points: true,
        ignore_lines: true,
    };
    let (models, _) = tobj::load_obj(path, &options).unwrap();
    let mut faces = Vec::new();
    for m in &models {
        let mesh = &m.mesh;
        // (tobj leaves the arities out when every face is a triangle.)
        let arities = if mesh.face_arities.is_empty() {
            vec![3; mesh.indices.len() / 3]
        } else {
            mesh.face_arities.clone()
        };
        let mut k = 0;
        for a in arities {
            faces.push((k..k + a as usize).map(|c| corner(mesh, c)).collect());
            k += a as usize;
        }
    }
    faces
}

/// Our reader and tobj must agree on every face of every file tobj accepts:
/// the same corner positions in the same order.
#[test]
fn tobj_agrees_on_faces() {
    let Some(dir) = testdata("good") else {
        return;
    };
    for path in obj_files(&dir) {
        let (raw, stats) = import_obj(&path, &ImportOptions::default()).unwrap();
        let theirs = tobj_faces(&path, |mesh, c| {
            let i = mesh.indices[c] as usize;
            [0, 1, 2].map(|d| mesh.positions[3 * i + d])
        });
        assert_eq!(theirs.len(), stats.faces, "{}", path.display());
        // tobj reads single precision.
        let ours: Vec<Vec<[f32; 3]>> = (0..raw.polygon_count())
            .map(|p| {
                raw.polygon(p)
                    .iter()
                    .map(|&i| raw.positions[i as usize].map(|c| c as f32).into())
                    .collect()
            })
            .collect();
        // tobj groups faces by model; compare as multisets of faces.
        let key = |f: &Vec<[f32; 3]>| format!("{f:?}");
        let mut a: Vec<String> = ours.iter().map(key).collect();
        let mut b: Vec<String> = theirs.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{}", path.display());
    }
}

/// Our reader and tobj agree on every face corner's texture coordinate of
/// every file with texture coordinates (the real ones and the sample
/// cloths), and validation keeps each triangle corner's: a triangle's
/// corners carry the coordinates of the face corners they were cut from.
#[test]
fn texture_coordinates_agree_with_tobj_and_follow_their_corners() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes");
    let mut files = vec![
        samples.join("cloth_quad.obj"),
        samples.join("cloth_tri.obj"),
    ];
    if let Some(dir) = testdata("good") {
        files.extend(["spot.obj", "circle.obj"].map(|f| dir.join(f)));
    }
    for path in files {
        let (raw, stats) = import_obj(&path, &ImportOptions::default()).unwrap();
        assert_eq!(stats.texcoords_dropped, None, "{}", path.display());
        // Each face corner as (position, texture coordinate), in f32.
        let mut theirs: Vec<String> = tobj_faces(&path, |mesh, c| {
            let (i, t) = (mesh.indices[c] as usize, mesh.texcoord_indices[c] as usize);
            let p = &mesh.positions[3 * i..3 * i + 3];
            let uv = &mesh.texcoords[2 * t..2 * t + 2];
            [p[0], p[1], p[2], uv[0], uv[1]]
        })
        .iter()
        .map(|face| format!("{face:?}"))
        .collect();
        let corner = |i: u32, t: u32| {
            let (p, uv) = (raw.positions[i as usize], raw.texcoords[t as usize]);
            [p.x, p.y, p.z, uv[0], uv[1]].map(|c| c as f32)
        };
        let mut ours: Vec<String> = (0..raw.polygon_count())
            .map(|p| {
                let t = raw.polygon_texcoords(p).unwrap();
                let face: Vec<[f32; 5]> = raw
                    .polygon(p)
                    .iter()
                    .zip(t)
                    .map(|(&i, &t)| corner(i, t))
                    .collect();
                format!("{face:?}")
            })
            .collect();
        theirs.sort();
        ours.sort();
        assert_eq!(ours, theirs, "{}", path.display());

        // Every triangle corner: a (position, coordinate) pair of a corner of
        // the face it was cut from.
        let (surface, _) = validate(&raw, &path, &ValidateOptions::default()).unwrap();
        let t = surface.texcoords().unwrap();
        assert_eq!(t.triangles.len(), surface.triangles().len());
        assert_eq!(
            t.textured(),
            surface.triangles().len(),
            "{}",
            path.display()
        );
        for ((tri, uv), &p) in surface
            .triangles()
            .iter()
            .zip(&t.triangles)
            .zip(surface.source_polygons())
        {
            let face: Vec<[f32; 5]> = raw
                .polygon(p as usize)
                .iter()
                .zip(raw.polygon_texcoords(p as usize).unwrap())
                .map(|(&i, &t)| corner(i, t))
                .collect();
            for (&v, &c) in tri.iter().zip(&uv.unwrap()) {
                let q = surface.positions()[v as usize];
                let c = t.coords[c as usize];
                let ours = [q.x, q.y, q.z, c[0], c[1]].map(|x| x as f32);
                assert!(
                    face.contains(&ours),
                    "{}: {ours:?} not in {face:?}",
                    path.display()
                );
            }
        }
    }
}

/// A closed cube of quads with two more copies of its last face, one from
/// another corner, one from another corner the other way round (cut along
/// the other diagonal, its triangles are none of the first's): both are
/// dropped, and the cube stays closed with its 12 triangles and every edge
/// manifold (kept, the reversed copy made 4 edges non-manifold and the
/// cube open). So is a pentagon's copy written the other way round through
/// a welded copy of one corner.
#[test]
fn a_polygon_repeated_from_another_corner_or_way_round_is_dropped() {
    let cube = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n\
                f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n\
                f 5 8 4 1\nf 8 5 1 4\n";
    let path = Path::new("doubled.obj");
    let (raw, _) = import_obj_bytes(cube.as_bytes(), path, &ImportOptions::default()).unwrap();
    let (surface, stats) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    assert_eq!(stats.duplicate_triangles, 4);
    let report = MeshReport::new("doubled.obj", None, stats, &surface);
    assert_eq!(surface.triangles().len(), 12);
    assert_eq!(report.non_manifold_edges, 0);
    assert!(report.closed);
    let pentagon = "v 0 0 0\nv 2 0 0\nv 3 1 0\nv 1 2 0\nv -1 1 0\nv 3 1 0\n\
                    f 1 2 3 4 5\nf 4 6 2 1 5\n";
    let (raw, _) = import_obj_bytes(pentagon.as_bytes(), path, &ImportOptions::default()).unwrap();
    let (surface, stats) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    assert_eq!((stats.welded_vertices, stats.duplicate_triangles), (1, 3));
    assert_eq!(surface.triangles().len(), 3);
}

/// Two quads side by side whose shared edge is duplicated in the file (a UV
/// seam: the right quad's texture is offset by 10): welding merges the
/// seam's positions, each triangle keeps its own face's coordinates; so do
/// an ear-clipped pentagon's (u, v = x, y) and a self-intersecting
/// pentagram's (fanned; offset by 20). A quad with a corner without one is
/// untextured as a whole.
#[test]
fn a_welded_seam_keeps_both_sides_texture_coordinates() {
    let text = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
                 v 1 0 0\nv 2 0 0\nv 2 1 0\nv 1 1 0\n\
                 v 0 2 0\nv 1 2 0\nv 1.5 2.5 0\nv 1 3 0\nv 0 3 0\n\
                 vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 11 0\nvt 12 0\nvt 12 1\nvt 11 1\n\
                 vt 0 2\nvt 1 2\nvt 1.5 2.5\nvt 1 3\nvt 0 3\nvt 99 99\n\
                 f 1/1 2/2 3/3 4/4\nf 5/-10 6/-9 7/-8 8/-7\nf 9/9 10/10 11/11 12/12 13/13\n\
                 v 5 1 0\nv 5.75 -1 0\nv 4 0.25 0\nv 6 0.25 0\nv 4.25 -1 0\n\
                 vt 25 1\nvt 25.75 -1\nvt 24 0.25\nvt 26 0.25\nvt 24.25 -1\n\
                 f 14/15 15/16 16/17 17/18 18/19\n\
                 v 8 0 0\nv 9 0 0\nv 9 1 0\nv 8 1 0\nf 19/1 20/2 21 22/4\n";
    let path = Path::new("seam.obj");
    let (raw, _) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    let (surface, stats) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    assert_eq!(stats.welded_vertices, 2);
    assert_eq!(surface.positions().len(), 20);
    let t = surface.texcoords().unwrap();
    // The unused `vt 99 99` is not kept.
    assert_eq!(t.coords.len(), 18);
    assert_eq!((t.triangles.len(), t.textured()), (12, 10));
    for ((tri, uv), &face) in surface
        .triangles()
        .iter()
        .zip(&t.triangles)
        .zip(surface.source_polygons())
    {
        let offset = match face {
            1 => 10.0,
            3 => 20.0,
            4 => {
                assert_eq!(*uv, None, "the partly textured quad");
                continue;
            }
            _ => 0.0,
        };
        for (&v, &c) in tri.iter().zip(&uv.unwrap()) {
            let p = surface.positions()[v as usize];
            assert_eq!(t.coords[c as usize], [p.x + offset, p.y], "face {face}");
        }
    }
    // The writer writes the partly textured quad untextured, the others
    // with theirs.
    let mut written = Vec::new();
    mesh::write_obj(&mut written, &raw, &[]).unwrap();
    let written = String::from_utf8(written).unwrap();
    assert!(written.contains("\nf 19 20 21 22\n"), "{written}");
    assert!(written.contains("\nf 5/5 6/6 7/7 8/8\n"), "{written}");
    // The writer keeps them (the generated quad cloth has one per node).
    let cloth = primitives::cloth_square(4, 1.0, true);
    let mut text = Vec::new();
    mesh::write_obj(&mut text, &cloth, &[]).unwrap();
    let (back, _) = import_obj_bytes(&text, path, &ImportOptions::default()).unwrap();
    assert_eq!(back.texcoords, cloth.texcoords);
    assert_eq!(back.corner_texcoords, cloth.corner_texcoords);
}

/// Texture coordinates that are not numbers, or a corner that refers to
/// one not defined, drop the texture coordinates (the report names the
/// line), not the mesh; faces without any are fine next to faces with.
#[test]
fn bad_texture_coordinates_drop_them_not_the_mesh() {
    let path = Path::new("bad_vt.obj");
    for (text, line, why) in [
        (
            &b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt nan 0\nf 1/1 2/1 3/1\n"[..],
            5,
            "not a finite number",
        ),
        (
            b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvt\nf 1 2 3\n",
            4,
            "not a finite number",
        ),
        (
            b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/2 3/1\n",
            5,
            "not defined",
        ),
        (
            b"v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/-2 2/1 3/1\n",
            5,
            "not defined",
        ),
    ] {
        let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
        let (dropped, at) = stats.texcoords_dropped.clone().unwrap();
        assert!(dropped.contains(why), "{dropped}");
        assert_eq!(at, line);
        assert!(raw.texcoords.is_empty() && raw.corner_texcoords.is_empty());
        let (surface, v) = validate(&raw, path, &ValidateOptions::default()).unwrap();
        assert_eq!(surface.triangles().len(), 1);
        assert!(surface.texcoords().is_none());
        let report = MeshReport::new("bad_vt.obj", Some(stats), v, &surface);
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains(&format!("line {line}"))),
            "{:?}",
            report.warnings
        );
    }
    // One face with, one without: the first keeps its coordinates.
    let text = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 0 1\n\
                 f 1/1 2/2 3/3\nf 2 4 3\n";
    let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    let (surface, v) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    let t = surface.texcoords().unwrap();
    assert_eq!(t.triangles, vec![Some([0, 1, 2]), None]);
    let report = MeshReport::new("mixed.obj", Some(stats), v, &surface);
    assert_eq!((report.texcoords, report.textured_triangles), (3, 1));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("1 of 2 triangles"))
    );
    assert!(!report.warnings.iter().any(|w| w.contains("some corners")));
    // A face with coordinates at some corners only has none: said, with
    // the first such face's line.
    let text = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvt 0 0\n\
                 f 1/1 3 2\nf 1 2 4\nf 1/1 4/1 3\nf 2 3 4\n";
    let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    assert_eq!(stats.partly_textured_faces, Some((2, 6)));
    let (surface, v) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    assert!(surface.texcoords().is_none());
    let report = MeshReport::new("partly.obj", Some(stats), v, &surface);
    assert!(
        report.warnings.contains(
            &"2 faces give texture coordinates for some corners only (the first on line 6): \
              they have none in the exports"
                .to_owned()
        ),
        "{:?}",
        report.warnings
    );
}

#[test]
fn committed_meshes_match_the_generator() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes");
    for sample in primitives::samples() {
        let mut expected = Vec::new();
        mesh::write_obj(
            &mut expected,
            &sample.mesh,
            &[
                sample.about,
                "generated by `cargo run --example make_meshes`",
            ],
        )
        .unwrap();
        let committed = std::fs::read(dir.join(sample.file)).unwrap();
        assert!(
            committed == expected,
            "meshes/{} is stale: run `cargo run --example make_meshes`",
            sample.file
        );
    }
}

#[test]
fn sample_meshes_have_the_topology_of_their_shapes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes");
    let r = |f: &str| load(&dir.join(f)).unwrap();
    for (file, closed, chi, components) in [
        ("cloth_tri.obj", false, 1, 1),
        ("cloth_quad.obj", false, 1, 1),
        ("sphere.obj", true, 2, 1),
        ("torus.obj", true, 0, 1),
        ("box.obj", true, 2, 1),
        ("sleeve.obj", false, 0, 1),
    ] {
        let report = r(file);
        assert_eq!(report.closed, closed, "{file}");
        assert_eq!(report.euler_characteristic, chi, "{file}");
        assert_eq!(report.components, components, "{file}");
        assert_eq!(report.non_manifold_edges, 0, "{file}");
        assert_eq!(report.inconsistent_edges, 0, "{file}");
        if closed {
            // Closed triangle meshes: every edge has two faces, so 2E = 3F.
            assert_eq!(2 * report.edges, 3 * report.triangles, "{file}");
            assert!(report.volume.unwrap() > 0.0, "{file} must face outwards");
        }
    }
    let cube = r("box.obj");
    assert!((cube.volume.unwrap() - 0.125).abs() < 1e-12);
    let names: Vec<&str> = cube.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["left", "right", "bottom", "top", "back", "front"]);
    // A side of 8 × 8 quads has 9 × 9 vertices.
    assert!(cube.groups.iter().all(|g| g.vertices == 81));
    // The sleeve's two boundary loops.
    assert_eq!(r("sleeve.obj").boundary_edges, 64);
}

#[test]
fn writer_and_reader_round_trip() {
    let raw = primitives::cuboid(softbody::mesh::Vec3::new(1.0, 2.0, 3.0), 3);
    let mut text = Vec::new();
    mesh::write_obj(&mut text, &raw, &["test"]).unwrap();
    let (back, _) =
        import_obj_bytes(&text, Path::new("mem.obj"), &ImportOptions::default()).unwrap();
    assert_eq!(back.positions, raw.positions);
    assert_eq!(back.indices, raw.indices);
    assert_eq!(back.offsets, raw.offsets);
    assert_eq!(back.groups, raw.groups);
}

/// Words after a vertex's coordinates that are not numbers are noted (a
/// weight or a colour are numbers, and pass): `v 0 0 0 junk` passed
/// unnoticed.
#[test]
fn words_after_a_vertex_s_coordinates_are_reported() {
    let text = "v 0 0 0 junk\nv 1 0 0 1.0\nv 0 1 0 0.5 0.5 0.5\nv 0 0 1 x y\nf 1 2 3\nf 1 3 4\n";
    let path = Path::new("words.obj");
    let (raw, stats) = import_obj_bytes(text.as_bytes(), path, &ImportOptions::default()).unwrap();
    assert_eq!(raw.positions.len(), 4);
    assert_eq!(stats.vertex_words, 2);
    assert_eq!(stats.first_vertex_word, Some(("junk".to_owned(), 1)));
    let (surface, validation) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    let report = MeshReport::new("words.obj", Some(stats), validation, &surface);
    assert!(
        report.warnings.contains(
            &"ignored words after the coordinates of 2 vertices (first: 'junk' on line 1)"
                .to_owned()
        ),
        "{:?}",
        report.warnings
    );
}

/// Lines ended by CR alone (classic Mac OS) are lines: it read as one line,
/// "no faces (1 vertices, 0 faces)". So are they in such a file with a
/// stray LF (it read as two lines).
#[test]
fn a_file_of_carriage_returns_alone_reads_line_by_line() {
    let text = "# square\rv 0 0 0\rv 1 0 0\rv 1 1 0\rv 0 1 0\rf 1 2 3 4\rf 1 x 3\r";
    let path = Path::new("mac.obj");
    let error = import_obj_bytes(text.as_bytes(), path, &ImportOptions::default()).unwrap_err();
    assert_eq!(error.line, Some(7), "{error}");
    let stray = text.replacen("v 1 0 0\r", "v 1 0 0\n", 1);
    let error = import_obj_bytes(stray.as_bytes(), path, &ImportOptions::default()).unwrap_err();
    assert_eq!(error.line, Some(7), "{error}");
    let good = text.replace("f 1 x 3\r", "");
    let (raw, stats) = import_obj_bytes(good.as_bytes(), path, &ImportOptions::default()).unwrap();
    assert_eq!(
        (raw.positions.len(), raw.polygon_count(), stats.faces),
        (4, 1, 1)
    );
}

/// A name or set of groups met again is the one registered before: the
/// same group in another order, an object and a group of one name kept
/// apart, no group after groups (the empty set, entry 0).
#[test]
fn names_and_group_sets_met_again_are_registered_once() {
    let text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n\
                g a b\nusemtl m\nf 1 2 3\ng b a a\nusemtl n\nf 1 2 4\n\
                o a\ng\nusemtl m\nf 1 3 4\ng a\nf 2 3 4\n";
    let path = Path::new("sets.obj");
    let (raw, _) = import_obj_bytes(text.as_bytes(), path, &ImportOptions::default()).unwrap();
    let names: Vec<(&str, GroupKind)> = raw
        .groups
        .iter()
        .map(|g| (g.name.as_str(), g.kind))
        .collect();
    assert_eq!(
        names,
        [
            ("a", GroupKind::Group),
            ("b", GroupKind::Group),
            ("a", GroupKind::Object)
        ]
    );
    assert_eq!(raw.materials, ["m", "n"]);
    assert_eq!(raw.polygon_materials, [0, 1, 0, 0]);
    assert_eq!(raw.membership[0], raw.membership[1]);
    let sets: Vec<&[u32]> = raw
        .membership
        .iter()
        .map(|&m| &raw.memberships[m as usize][..])
        .collect();
    assert_eq!(sets, [&[0, 1][..], &[0, 1], &[2], &[0, 2]]);
    assert!(raw.memberships[0].is_empty());
    // (And `{a, b, object a}`, current between `o a` and `g`.)
    assert_eq!(raw.memberships.len(), 5);
}

/// Materials are kept: each polygon's `usemtl` name, and the `mtllib`
/// files joined to the OBJ file's directory (never read: a missing one is no
/// error). The writer sets objects, groups and materials where they change,
/// all of a polygon's groups on one `g` line, and the reader gets back what
/// it read.
#[test]
fn materials_and_groups_are_kept_and_written_back() {
    let text = "mtllib a.mtl b.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n\
                f 1 2 3\no body\ng left top\nusemtl red paint\nf 1 2 4\nf 1 3 4\n\
                g\nusemtl blue\nf 2 3 4\ng left\nusemtl red paint\nf 1 3 2\n";
    let dir = std::env::temp_dir().join(format!("softbody-materials-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.obj");
    std::fs::write(&path, text).unwrap();
    let (raw, stats) = mesh::import_obj(&path, &ImportOptions::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(stats.unsupported, 0);
    assert_eq!(
        raw.material_libraries,
        [dir.join("a.mtl"), dir.join("b.mtl")]
    );
    assert_eq!(raw.materials, ["red paint", "blue"]);
    let materials: Vec<Option<u32>> = (0..5).map(|p| raw.polygon_material(p)).collect();
    assert_eq!(materials, [None, Some(0), Some(0), Some(1), Some(0)]);
    let mut written = Vec::new();
    mesh::write_obj(&mut written, &raw, &[]).unwrap();
    let written = String::from_utf8(written).unwrap();
    let statements: Vec<&str> = written
        .lines()
        .filter(|l| !l.starts_with("v ") && !l.starts_with("f "))
        .collect();
    let (a, b) = (dir.join("a.mtl"), dir.join("b.mtl"));
    let libraries = [
        format!("mtllib {}", a.display()),
        format!("mtllib {}", b.display()),
    ];
    assert_eq!(
        statements,
        [
            libraries[0].as_str(),
            libraries[1].as_str(),
            "o body",
            "g left top",
            "usemtl red paint",
            "g",
            "usemtl blue",
            "g left",
            "usemtl red paint",
        ]
    );
    let (back, _) = import_obj_bytes(written.as_bytes(), &path, &ImportOptions::default()).unwrap();
    assert_eq!(back.materials, raw.materials);
    assert_eq!(back.polygon_materials, raw.polygon_materials);
    assert_eq!(back.material_libraries, raw.material_libraries);
    let sets = |r: &mesh::RawMesh| -> Vec<Vec<String>> {
        (0..r.polygon_count())
            .map(|p| {
                let mut names: Vec<String> = r.memberships[r.membership[p] as usize]
                    .iter()
                    .map(|&g| r.groups[g as usize].name.clone())
                    .collect();
                names.sort();
                names
            })
            .collect()
    };
    assert_eq!(sets(&back), sets(&raw));
    assert_eq!(sets(&raw)[1], ["body", "left", "top"]);
}

#[test]
fn odd_but_legal_syntax_is_accepted() {
    let text = b"# comment\r\nmtllib missing.mtl\r\nv 0 0 0 1.0\r\nv 1 0 0 0.5 0.5 0.5\nv\t0\t1\t0\nvt 0 0\nvn 0 0 1\n\
                 o thing\ng a b\nusemtl red\ns 1\nf 1/1/1 2/1/1 3/1/1\nf 1//1 3//1 -1//1\nl 1 2\ncstype bezier\n";
    let (raw, stats) =
        import_obj_bytes(text, Path::new("odd.obj"), &ImportOptions::default()).unwrap();
    assert_eq!(raw.positions.len(), 3);
    assert_eq!(stats.faces, 2);
    assert_eq!(stats.lines_and_points, 1);
    assert_eq!(stats.unsupported, 1);
    assert_eq!(stats.first_unsupported, Some(("cstype".to_owned(), 15)));
    let (surface, v) = validate(&raw, Path::new("odd.obj"), &ValidateOptions::default()).unwrap();
    // The second face repeats a vertex (3 and -1 are the same): degenerate.
    assert_eq!(v.degenerate_triangles, 1);
    assert_eq!(v.degenerate_lines, vec![13]);
    assert_eq!(surface.triangles().len(), 1);
    let names: Vec<&str> = surface.groups().iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["thing", "a", "b"]);
}

/// A UTF-8 byte-order mark is skipped: it used to make the first
/// statement unknown, so its vertex was dropped and a later face pointed
/// out of range.
#[test]
fn a_byte_order_mark_is_skipped() {
    let text = b"\xEF\xBB\xBFv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
    let (raw, stats) =
        import_obj_bytes(text, Path::new("bom.obj"), &ImportOptions::default()).unwrap();
    assert_eq!(raw.positions.len(), 3);
    assert_eq!(stats.unsupported, 0);
}

/// A quad that crosses itself (a bowtie) is reported with its line, cut
/// into triangles that overlap; a concave dart, a quad with a doubled
/// corner and a convex hexagon are not. (It was triangulated silently.)
#[test]
fn a_polygon_crossing_itself_is_reported_with_its_line() {
    let text = b"v 0 0 0\nv 2 2 0\nv 2 0 0\nv 0 2 0\n\
                 v 5 0 0\nv 7 0 0\nv 6 0.5 0\nv 6 2 0\n\
                 v 10 0 0\nv 11 0 0\nv 11 1 0\n\
                 v 20 0 0\nv 21 0 0\nv 22 1 0\nv 21 2 0\nv 20 2 0\nv 19 1 0\n\
                 f 1 2 3 4\nf 5 6 7 8\nf 9 10 11 11\nf 12 13 14 15 16 17\n";
    let path = Path::new("bowtie.obj");
    let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    let (surface, validation) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    assert_eq!(
        (validation.crossed_polygons, &validation.crossed_lines[..]),
        (1, &[18][..])
    );
    let report = MeshReport::new("bowtie.obj", Some(stats), validation, &surface);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("1 polygon crosses itself (line 18)")),
        "{:?}",
        report.warnings
    );
}

/// Object and group names that are not UTF-8 (Latin-1 from an older
/// exporter) are read as Latin-1 with a warning naming the line, where the
/// whole file was refused as binary data.
#[test]
fn names_not_in_utf8_are_read_as_latin1() {
    let text = b"v 0 0 0\nv 1 0 0\nv 0 1 0\no Fl\xe4che\ng Gr\xfcn gut\nf 1 2 3\n";
    let path = Path::new("latin1.obj");
    let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    assert_eq!(stats.latin1_names, Some(4));
    let (surface, validation) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    let names: Vec<&str> = surface.groups().iter().map(|g| g.name.as_str()).collect();
    for name in ["Fläche", "Grün", "gut"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    let report = MeshReport::new("latin1.obj", Some(stats), validation, &surface);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains("Latin-1") && w.contains("line 4")),
        "{:?}",
        report.warnings
    );
    // Binary data is still not a mesh.
    let err = import_obj_bytes(
        b"v 0 0 0\n\x01\xff\xfe 1\n",
        path,
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ImportErrorKind::NotText);
}

/// A statement continued over lines ending in `\` (as the OBJ format
/// allows) is one statement (it was "'\' is not a number"); an error in it
/// names the line it starts on, and a `\` inside a comment continues
/// nothing.
#[test]
fn statements_continue_over_lines_ending_in_a_backslash() {
    let path = Path::new("continued.obj");
    let text = b"v 0 0 0\nv 1 0 \\\n  0\nv 0 1 0 # note \\\nv 1 1 0\r\nf 1 2 \\\r\n 4 \\\n3\n";
    let (raw, stats) = import_obj_bytes(text, path, &ImportOptions::default()).unwrap();
    assert_eq!(raw.positions.len(), 4);
    assert_eq!(raw.positions[1], softbody::mesh::Vec3::new(1.0, 0.0, 0.0));
    assert_eq!(raw.indices, vec![0, 1, 3, 2]);
    assert_eq!(raw.lines, vec![6]);
    assert_eq!((stats.vertices, stats.faces), (4, 1));
    let err =
        import_obj_bytes(b"v 0 0 0\nv 1 \\\nx 0\n", path, &ImportOptions::default()).unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
}

/// A file with no OBJ statement at all (a Gmsh mesh, a preset, prose) is
/// named as not OBJ at its first statement's line; it used to be "no faces
/// (0 vertices, 0 faces)".
#[test]
fn a_file_of_another_kind_is_not_obj() {
    let msh = b"$MeshFormat\n4.1 0 8\n$EndMeshFormat\n";
    let err = import_obj_bytes(msh, Path::new("cube.msh"), &ImportOptions::default()).unwrap_err();
    assert_eq!(
        err.kind,
        ImportErrorKind::NotObj {
            keyword: "$MeshFormat".into()
        }
    );
    assert_eq!(err.line, Some(1));
    let text = err.to_string();
    assert!(text.starts_with("cube.msh:1:"), "{text}");
    assert!(text.contains("mesh.tet_file"), "{text}");
    // Vertices alone are still an OBJ without faces.
    let err = import_obj_bytes(
        b"v 0 0 0\n",
        Path::new("dots.obj"),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, ImportErrorKind::NoFaces { vertices: 1 });
}

#[test]
fn size_limit_is_enforced_with_a_clear_message() {
    let options = ImportOptions { max_bytes: 10 };
    let err = import_obj_bytes(b"v 0 0 0\nv 1 0 0\n", Path::new("big.obj"), &options).unwrap_err();
    assert!(matches!(
        err.kind,
        ImportErrorKind::TooLarge {
            size: 16,
            limit: 10
        }
    ));
    assert!(err.to_string().contains("big.obj"));
}

#[test]
fn all_degenerate_faces_is_an_error() {
    let mut raw = RawMesh::new();
    raw.positions = vec![softbody::mesh::Vec3::zeros(); 3];
    raw.push_polygon(&[0, 1, 2], 1, 0);
    let err = validate(&raw, Path::new("dot.obj"), &ValidateOptions::default()).unwrap_err();
    assert_eq!(err.kind, ImportErrorKind::NoValidTriangles { faces: 1 });
    assert!(
        err.to_string().contains("the only face is degenerate"),
        "{err}"
    );
}

/// A mesh in the wrong units is refused with its size: at 1e-100 or 1e200
/// across it used to be "all faces degenerate" (the squares inside a cross
/// product's norm underflowed or overflowed). Within the range, the same
/// faces at every scale.
#[test]
fn meshes_far_too_small_or_large_are_refused_with_their_size() {
    let unit = primitives::cuboid(softbody::mesh::Vec3::new(1.0, 2.0, 3.0), 3);
    let check = |scale: f64| {
        let mut raw = unit.clone();
        for p in &mut raw.positions {
            *p *= scale;
        }
        validate(&raw, Path::new("scaled.obj"), &ValidateOptions::default())
            .map(|(surface, stats)| (surface.triangles().to_vec(), stats.degenerate_triangles))
    };
    let expected = check(1.0).unwrap();
    for scale in [1e-9, 1e-3, 1e3, 1e8] {
        assert_eq!(check(scale).unwrap(), expected, "scale {scale:e}");
    }
    let diagonal = 14f64.sqrt();
    for scale in [1e-300, 1e-100, 1e-10, 1e9, 1e100, 1e300] {
        let err = check(scale).unwrap_err();
        let ImportErrorKind::Size { diagonal: d } = err.kind else {
            panic!("scale {scale:e}: {err}");
        };
        assert!((d / (diagonal * scale) - 1.0).abs() < 1e-12, "{d:e}");
        assert!(!mesh::SIZE_RANGE.contains(&d));
        let message = err.to_string();
        assert!(message.contains("scaled.obj") && message.contains(&format!("{d:.3e}")));
    }
    // Coordinates near the largest double: their span overflows (this was
    // "all faces are degenerate").
    let mut raw = unit.clone();
    raw.positions[0].x = -1e308;
    raw.positions[1].x = 1e308;
    let err = validate(&raw, Path::new("huge.obj"), &ValidateOptions::default()).unwrap_err();
    assert_eq!(
        err.kind,
        ImportErrorKind::Size {
            diagonal: f64::INFINITY
        }
    );
    assert!(
        err.to_string().contains("too large to measure across"),
        "{err}"
    );
}

/// A polygon whose triangles are all degenerate is listed by its line once
/// (`inspect --weld 0.1` on the box read "lines 390, 390, 391, 391, …").
#[test]
fn a_degenerate_polygon_is_listed_once() {
    let text = b"v 0 0 0\nv 1 0 0\nv 2 0 0\nv 3 0 0\nv 0 1 0\nf 1 2 3 4\nf 1 2 5\nf 2 3 4\n";
    let (raw, _) =
        import_obj_bytes(text, Path::new("line.obj"), &ImportOptions::default()).unwrap();
    let (_, v) = validate(&raw, Path::new("line.obj"), &ValidateOptions::default()).unwrap();
    assert_eq!(v.degenerate_triangles, 3);
    assert_eq!(v.degenerate_lines, vec![6, 8]);
}

/// The report lists the first five degenerate polygons' lines and adds
/// "..." only when there were more (it used to whenever five were listed).
#[test]
fn degenerate_lines_end_in_dots_only_when_some_are_left_out() {
    for (flat, dots) in [(5, false), (6, true)] {
        let mut text = String::from("v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 4\n");
        for _ in 0..flat {
            text.push_str("f 1 2 3\n");
        }
        let (raw, parse) = import_obj_bytes(
            text.as_bytes(),
            Path::new("flat.obj"),
            &ImportOptions::default(),
        )
        .unwrap();
        let (surface, v) =
            validate(&raw, Path::new("flat.obj"), &ValidateOptions::default()).unwrap();
        assert_eq!(v.degenerate_polygons, flat);
        assert_eq!(v.degenerate_lines, vec![6, 7, 8, 9, 10]);
        let report = MeshReport::new("flat.obj", Some(parse), v, &surface);
        let warning = report
            .warnings
            .iter()
            .find(|w| w.contains("zero-area"))
            .unwrap();
        assert_eq!(warning.ends_with(", ...)"), dots, "{warning}");
    }
}

/// Line and point elements are warned about in the text report too (they
/// were counted in the JSON alone: curves vanished unnoticed).
#[test]
fn line_and_point_elements_are_reported() {
    let text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nl 1 2\np 3\nl 2 3\n";
    let path = Path::new("curves.obj");
    let (raw, stats) = import_obj_bytes(text.as_bytes(), path, &ImportOptions::default()).unwrap();
    assert_eq!(
        (stats.lines_and_points, stats.first_line_or_point),
        (3, Some(5))
    );
    let (surface, validation) = validate(&raw, path, &ValidateOptions::default()).unwrap();
    let report = MeshReport::new("curves.obj", Some(stats), validation, &surface);
    assert!(
        report.warnings.contains(
            &"ignored 3 line and point elements (`l`, `p`; first on line 5): only faces are \
              simulated"
                .to_owned()
        ),
        "{:?}",
        report.warnings
    );
}
