//! `softbody bake` end to end: every shipped preset bakes; the OBJ sequence
//! reads back (tobj) with the model's vertex count and frame 0 at the rest
//! pose; `{stem}_energy.csv` has a header and a row per frame; Ctrl-C stops cleanly.

use std::path::{Path, PathBuf};
use std::process::Command;

use softbody::mesh::Vec3;
use softbody::preset::Preset;

mod common;

use common::{CUBE_FACES, scratch_path, softbody};

/// An OBJ file read by tobj (as Blender's importer would read the
/// sequence: one object of triangles): its positions (in tobj's order of
/// first use), triangles over them, and the triangles' corners' texture
/// coordinates (empty without).
type ObjRead = (Vec<[f64; 3]>, Vec<[usize; 3]>, Vec<[[f32; 2]; 3]>);

fn read_obj(path: &Path) -> ObjRead {
    // Polygons as triangle fans, as an importer may cut them.
    let options = tobj::LoadOptions {
        triangulate: true,
        ..Default::default()
    };
    // Blender splits by object, not by group (tobj does both): the `g`
    // lines of a source with groups are left out.
    let text = std::fs::read_to_string(path).unwrap();
    let objects: String = text
        .lines()
        .filter(|l| *l != "g" && !l.starts_with("g "))
        .flat_map(|l| [l, "\n"])
        .collect();
    let (models, _) = tobj::load_obj_buf(&mut objects.as_bytes(), &options, |_| {
        Err(tobj::LoadError::OpenFileFailed)
    })
    .unwrap();
    assert_eq!(models.len(), 1, "{}", path.display());
    let mesh = &models[0].mesh;
    let p = mesh
        .positions
        .chunks(3)
        .map(|c| [c[0] as f64, c[1] as f64, c[2] as f64])
        .collect();
    let t = mesh
        .indices
        .chunks(3)
        .map(|c| [c[0] as usize, c[1] as usize, c[2] as usize])
        .collect();
    let uv = |i: &u32| {
        let i = *i as usize;
        [mesh.texcoords[2 * i], mesh.texcoords[2 * i + 1]]
    };
    let texcoords = mesh
        .texcoord_indices
        .chunks(3)
        .map(|c| [uv(&c[0]), uv(&c[1]), uv(&c[2])])
        .collect();
    (p, t, texcoords)
}

/// A face's corners: (1-based vertex, texture coordinate).
type Face = Vec<(usize, Option<usize>)>;

/// An OBJ frame's `v` and `vt` lines and its faces' corners (1-based
/// vertex, texture coordinate), read as the bake writes them.
fn obj_layout(path: &Path) -> (Vec<Vec3>, Vec<[f64; 2]>, Vec<Face>) {
    let text = std::fs::read_to_string(path).unwrap();
    let numbers = |line: &str| -> Vec<f64> {
        line.split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let (mut vertices, mut coords, mut faces) = (Vec::new(), Vec::new(), Vec::new());
    for line in text.lines() {
        if line.starts_with("v ") {
            vertices.push(Vec3::from_column_slice(&numbers(line)));
        } else if line.starts_with("vt ") {
            let uv = numbers(line);
            coords.push([uv[0], uv[1]]);
        } else if line.starts_with("f ") {
            let corner = |c: &str| {
                let mut parts = c.split('/').map(|x| x.parse::<usize>().unwrap());
                (parts.next().unwrap(), parts.next())
            };
            faces.push(line.split_whitespace().skip(1).map(corner).collect());
        }
    }
    (vertices, coords, faces)
}

#[test]
fn every_shipped_preset_bakes_and_reads_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut presets: Vec<PathBuf> = std::fs::read_dir(root.join("presets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    presets.sort();
    assert!(presets.len() >= 9);
    let mut textured = 0;
    for preset_path in presets {
        let stem = preset_path
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let out = scratch_path(&format!("bake-{stem}"));
        let o = bake_every(&preset_path, "120", "40", &out);
        assert!(
            o.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&o.stderr)
        );

        // The model the preset builds, for counts and the rest pose.
        let preset = Preset::load(&preset_path).unwrap();
        let built = preset.build(&preset_path).unwrap();
        // An OBJ's preset: the file as read, whose layout its frames have.
        let source = built.surface.as_ref().map(|_| {
            let softbody::preset::MeshSource::Obj(mesh) = &preset.mesh else {
                panic!("{stem}: an OBJ preset")
            };
            let file = preset_path.parent().unwrap().join(mesh);
            softbody::mesh::import_obj(&file, &Default::default())
                .unwrap()
                .0
        });
        let mut rest = Vec::new();
        built.model.render_positions(&built.model.rest, &mut rest);
        let triangles = built.model.render_triangles();
        // The grid's and the sample cloths' texture coordinates (every
        // triangle has them), none for the closed sample meshes.
        let texcoords = built.texcoords();
        textured += usize::from(texcoords.is_some());
        for frame in [0, 40, 80, 120] {
            let file = out.join(format!("{stem}_{frame:04}.obj"));
            let (positions, tris, uvs) = read_obj(&file);
            if let Some(raw) = &source {
                // Its vertices, polygons and texture coordinates; frame 0
                // has its positions.
                let (vertices, coords, faces) = obj_layout(&file);
                assert_eq!(vertices.len(), raw.positions.len(), "{stem} frame {frame}");
                assert_eq!(faces.len(), raw.polygon_count(), "{stem} frame {frame}");
                assert_eq!(coords, raw.texcoords, "{stem} frame {frame}");
                for (p, face) in faces.iter().enumerate() {
                    let t = raw.polygon_texcoords(p);
                    let expected: Face = (raw.polygon(p).iter().enumerate())
                        .map(|(c, &v)| (v as usize + 1, t.map(|t| t[c] as usize + 1)))
                        .collect();
                    assert_eq!(face, &expected, "{stem} frame {frame} face {p}");
                }
                if frame == 0 {
                    // (A tet body's skin: its positions from barycentric
                    // coordinates, to round-off.)
                    for (k, (p, r)) in vertices.iter().zip(&raw.positions).enumerate() {
                        assert!((p - r).norm() < 1e-12, "{stem} vertex {k}: {p:?} vs {r:?}");
                    }
                }
                continue;
            }
            assert_eq!(positions.len(), rest.len(), "{stem} frame {frame}");
            assert_eq!(tris.len(), triangles.len(), "{stem} frame {frame}");
            match texcoords {
                Some(t) => {
                    assert_eq!(uvs.len(), tris.len(), "{stem} frame {frame}");
                    for (theirs, ours) in uvs.iter().zip(&t.triangles) {
                        let ours = ours
                            .unwrap()
                            .map(|c| t.coords[c as usize].map(|x| x as f32));
                        assert_eq!(*theirs, ours, "{stem} frame {frame}");
                    }
                }
                None => assert!(uvs.is_empty(), "{stem} frame {frame}"),
            }
            if frame == 0 {
                // Corner by corner (tobj renumbers vertices by first use);
                // it reads f32, so equal to f32 precision.
                for (t, ours) in tris.iter().zip(triangles) {
                    for (&i, &j) in t.iter().zip(ours) {
                        let (p, r) = (positions[i], rest[j as usize]);
                        for c in 0..3 {
                            assert!(
                                (p[c] - r[c]).abs() <= 1e-6 * r[c].abs().max(1.0),
                                "{stem}: {p:?} vs {r:?}"
                            );
                        }
                    }
                }
            }
        }
        assert!(
            !out.join(format!("{stem}_0001.obj")).exists(),
            "only every 40th"
        );
        let csv = std::fs::read_to_string(out.join(format!("{stem}_energy.csv"))).unwrap();
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with("frame,time,kinetic,gravitational,"),
            "{header}"
        );
        let columns = header.split(',').count();
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 121, "{stem}: frames 0 to 120");
        // Frame 0 is the rest pose: its energies, no step's timings.
        let rest: Vec<&str> = rows[0].split(',').collect();
        assert_eq!(rest.len(), columns);
        assert_eq!(&rest[..2], ["0", "0.0"], "{stem}");
        let energies: Vec<f64> = rest[2..columns - 3]
            .iter()
            .map(|v| v.parse().unwrap())
            .collect();
        assert!(energies.iter().all(|e| e.is_finite()), "{stem}: {rest:?}");
        assert_eq!(
            energies[..2],
            [0.0, 0.0],
            "{stem}: at rest, kinetic and gravitational"
        );
        assert_eq!(rest[columns - 3..], ["", "", ""], "{stem}");
        for (k, row) in rows.iter().enumerate().skip(1) {
            let values: Vec<f64> = row.split(',').map(|v| v.parse().unwrap()).collect();
            assert_eq!(values.len(), columns);
            assert_eq!(values[0], k as f64);
            assert!(values.iter().all(|v| v.is_finite()), "{stem} row {k}");
        }
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("{stem}_summary.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["frames"], 120);
        assert_eq!(summary["dt"].as_f64(), Some(built.params.dt), "{stem}");
        assert_eq!(summary["objs_written"], 4);
        let written = std::fs::read_to_string(out.join(format!("{stem}_0000.obj"))).unwrap();
        let vt = written.lines().filter(|l| l.starts_with("vt ")).count();
        assert_eq!(summary["obj_texcoords"], vt, "{stem}");
        if built.surface.is_none() {
            assert_eq!(vt, texcoords.map_or(0, |t| t.exported()), "{stem}");
        }
        let total = header.split(',').position(|c| c == "total").unwrap();
        let last: f64 = rows[120].split(',').nth(total).unwrap().parse().unwrap();
        assert_eq!(summary["final_total"].as_f64(), Some(last), "{stem}");
        assert!(summary["stopped"].is_null());
        // The bake's process held at least the model's positions, twice.
        if cfg!(target_os = "linux") {
            let peak = summary["peak_resident_bytes"].as_u64().unwrap();
            let vertices = summary["sim_vertices"].as_u64().unwrap();
            assert!(peak > 48 * vertices, "{stem}: {peak} bytes");
        }
    }
    // Four grids, cotton's quad cloth, leather's triangle cloth.
    assert_eq!(textured, 6);
}

/// A tet model built from a textured OBJ exports its skin with the file's
/// texture coordinates: six faces of a cube, each with its own four, so
/// every cube corner has three (seams along every edge).
#[test]
fn a_tet_body_keeps_the_texture_coordinates_of_its_surface() {
    let dir = scratch_path("bake-textured-tets");
    std::fs::create_dir_all(&dir).unwrap();
    let corner = |k: usize| {
        let c = |bit: usize| if k & bit == 0 { -0.25 } else { 0.25 };
        [c(1), c(2), c(4)]
    };
    let mut obj = String::new();
    for k in 0..8 {
        let [x, y, z] = corner(k);
        obj += &format!("v {x} {y} {z}\n");
    }
    // Face f's corners at u = (f + 0 or 1) / 6, v = 0 or 1.
    let faces = CUBE_FACES;
    let square = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)];
    let uv = |f: usize, c: usize| [(f as f64 + square[c].0) / 6.0, square[c].1];
    for (f, face) in faces.iter().enumerate() {
        for c in 0..4 {
            let [u, v] = uv(f, c);
            obj += &format!("vt {u} {v}\n");
        }
        let corner = |c: usize| format!("{}/{}", face[c] + 1, 4 * f + c + 1);
        obj += &format!(
            "f {} {} {} {}\n",
            corner(0),
            corner(1),
            corner(2),
            corner(3)
        );
    }
    std::fs::write(dir.join("cube.obj"), obj).unwrap();
    let (preset_path, built) = write_preset(
        &dir,
        "textured.toml",
        "version = 1\nname = \"Textured\"\n[mesh]\nobj = \"cube.obj\"\n\
         [build]\nkind = \"tets\"\nresolution = 4\n\
         [material]\ndensity = 1100.0\nweights = { strain = 1.0e5 }\n",
    );
    let out = dir.join("out");
    let o = bake(&preset_path, "2", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(built.model.skin.is_some());
    assert_eq!(built.texcoords().map(|t| t.coords.len()), Some(24));
    // Frame 0 is the rest pose: each triangle lies in one face of the cube,
    // and each of its corners has that face's coordinate of that corner.
    for frame in ["0000", "0002"] {
        let (positions, tris, uvs) = read_obj(&out.join(format!("textured_{frame}.obj")));
        assert_eq!((tris.len(), uvs.len()), (12, 12), "frame {frame}");
        if frame == "0002" {
            // The moved skin keeps the rest pose's coordinates.
            let (_, _, rest) = read_obj(&out.join("textured_0000.obj"));
            assert_eq!(uvs, rest);
            continue;
        }
        let at = |i: usize| positions[i].map(|x| x as f32);
        let vertex = |p: [f32; 3]| (0..8).find(|&k| corner(k).map(|x| x as f32) == p).unwrap();
        for (tri, coords) in tris.iter().zip(&uvs) {
            let vertices = tri.map(|i| vertex(at(i)));
            let f = faces
                .iter()
                .position(|face| vertices.iter().all(|v| face.contains(v)))
                .expect("a triangle inside one face");
            for (v, got) in vertices.iter().zip(coords) {
                let c = faces[f].iter().position(|x| x == v).unwrap();
                assert_eq!(*got, uv(f, c).map(|x| x as f32), "face {f} corner {c}");
            }
        }
    }
}

/// The frames keep the source's objects, groups and materials, and name
/// its material library relative to the frames' directory: an OBJ reader
/// (tobj) finds the library and gives each face its material back.
#[test]
fn frames_keep_the_source_s_groups_and_materials() {
    let dir = scratch_path("bake-materials");
    let assets = dir.join("assets");
    std::fs::create_dir_all(&assets).unwrap();
    std::fs::write(
        assets.join("sheet.mtl"),
        "newmtl red\nKd 1 0 0\nnewmtl blue\nKd 0 0 1\n",
    )
    .unwrap();
    // The left two quads red (group "left"), the right one blue (group
    // "right").
    let (vertices, quad) = strip(1.0);
    let mut obj = format!("mtllib sheet.mtl\no sheet\n{vertices}");
    obj += &format!("g left\nusemtl red\n{}{}", quad(0), quad(1));
    obj += &format!("g right\nusemtl blue\n{}", quad(2));
    std::fs::write(assets.join("sheet.obj"), obj).unwrap();
    let (preset_path, _) = write_preset(
        &dir,
        "sheet.toml",
        "version = 1\nname = \"Sheet\"\n[mesh]\nobj = \"assets/sheet.obj\"\n\
         [material]\ndensity = 0.3\nweights = { structural = 1000.0 }\n\
         [pins]\nhard = [{ group = \"left\" }]\n",
    );
    let out = dir.join("out");
    let o = bake(&preset_path, "2", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let frame = out.join("sheet_0002.obj");
    let text = std::fs::read_to_string(&frame).unwrap();
    let statements: Vec<&str> = text
        .lines()
        .filter(|l| {
            ["mtllib", "o ", "g ", "usemtl"]
                .iter()
                .any(|k| l.starts_with(k))
        })
        .collect();
    assert_eq!(
        statements,
        [
            "o sheet",
            "mtllib ../assets/sheet.mtl",
            "g left",
            "usemtl red",
            "g right",
            "usemtl blue"
        ]
    );
    let options = tobj::LoadOptions {
        triangulate: true,
        ..Default::default()
    };
    let (models, materials) = tobj::load_obj(&frame, &options).unwrap();
    let materials = materials.expect("the library is found from the frame");
    let names: Vec<&str> = materials.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["red", "blue"]);
    // tobj makes a model per group: the left's 4 triangles red, the
    // right's 2 blue.
    let by_model: Vec<(usize, Option<usize>)> = models
        .iter()
        .map(|m| (m.mesh.indices.len() / 3, m.mesh.material_id))
        .collect();
    assert_eq!(by_model, [(4, Some(0)), (2, Some(1))]);
    // Named through `..`, the frames' directory is where the file system
    // takes it: beside `out`, one folder below the assets' parent (the
    // library was named three folders up).
    let out = dir.join("elsewhere").join("..").join("again");
    let o = bake(&preset_path, "1", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("sheet_0001.obj")).unwrap();
    assert!(text.contains("\nmtllib ../assets/sheet.mtl\n"), "{text}");
}

/// A bake says the build's warnings before it starts, as `inspect` does,
/// and keeps them in its summary: a sheet 3 mm across (a file in metres
/// read as millimetres) is far from a plausible size.
#[test]
fn a_bake_says_the_build_s_warnings() {
    let dir = scratch_path("bake-warnings");
    std::fs::create_dir_all(&dir).unwrap();
    let (vertices, quad) = strip(0.001);
    let obj = vertices + &quad(0) + &quad(1) + &quad(2);
    std::fs::write(dir.join("tiny.obj"), obj).unwrap();
    let (preset_path, built) = write_preset(
        &dir,
        "tiny.toml",
        "version = 1\nname = \"Tiny\"\n[mesh]\nobj = \"tiny.obj\"\n\
         [material]\ndensity = 0.3\n",
    );
    assert!(!built.warnings.is_empty());
    let out = dir.join("out");
    let o = bake(&preset_path, "1", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    for warning in &built.warnings {
        let said = format!("{}: warning: {warning}", preset_path.display());
        assert!(stderr.contains(&said), "{stderr}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tiny_summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["warnings"], serde_json::json!(built.warnings));
}

/// A body from a tet file writes its boundary alone: its interior nodes
/// are not `v` lines of the OBJ (Blender kept them as loose points inside
/// the mesh).
#[test]
fn a_tet_file_body_writes_no_interior_vertices() {
    let dir = scratch_path("bake-tet-file");
    std::fs::create_dir_all(&dir).unwrap();
    // A unit cube's corners (1–8) and its centre (9); two tets from the
    // centre over each face's two triangles.
    let mut node = "9 3 0 0\n".to_owned();
    for k in 0..8 {
        let c = |bit: usize| if k & bit == 0 { 0 } else { 1 };
        node += &format!("{} {} {} {}\n", k + 1, c(1), c(2), c(4));
    }
    node += "9 0.5 0.5 0.5\n";
    let faces = CUBE_FACES;
    let mut ele = "12 4 0\n".to_owned();
    for (f, q) in faces.iter().enumerate() {
        for (t, tri) in [[q[0], q[1], q[2]], [q[0], q[2], q[3]]].iter().enumerate() {
            // Positive volume: the centre on the inside of each face,
            // counter-clockwise from outside.
            ele += &format!(
                "{} {} {} {} 9\n",
                2 * f + t + 1,
                tri[0] + 1,
                tri[2] + 1,
                tri[1] + 1
            );
        }
    }
    std::fs::write(dir.join("cube.node"), node).unwrap();
    std::fs::write(dir.join("cube.ele"), ele).unwrap();
    let (preset_path, built) = write_preset(
        &dir,
        "block.toml",
        "version = 1\nname = \"Block\"\n[mesh]\ntet_file = \"cube.node\"\n\
         [build]\nkind = \"tets\"\n\
         [material]\ndensity = 1100.0\nweights = { strain = 1.0e5 }\n",
    );
    assert_eq!(
        (built.model.vertex_count(), built.model.tets.len()),
        (9, 12)
    );
    let out = dir.join("out");
    let o = bake(&preset_path, "3", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for frame in ["0000", "0003"] {
        let text = std::fs::read_to_string(out.join(format!("block_{frame}.obj"))).unwrap();
        let vertices = text.lines().filter(|l| l.starts_with("v ")).count();
        assert_eq!(vertices, 8, "frame {frame}: the centre is not written");
        let mut used = [false; 8];
        for line in text.lines().filter(|l| l.starts_with("f ")) {
            for v in line.split_whitespace().skip(1) {
                used[v.parse::<usize>().unwrap() - 1] = true;
            }
        }
        assert!(
            used.iter().all(|&u| u),
            "frame {frame}: every vertex is a corner"
        );
        let (positions, triangles, _) = read_obj(&out.join(format!("block_{frame}.obj")));
        assert_eq!((positions.len(), triangles.len()), (8, 12));
    }
    let summary = std::fs::read_to_string(out.join("block_summary.json")).unwrap();
    assert!(summary.contains("\"obj_vertices\": 8"), "{summary}");
    assert!(summary.contains("\"sim_vertices\": 9"), "{summary}");
}

#[test]
fn bad_presets_exit_2_and_name_the_file() {
    let out = scratch_path("bake-bad");
    let o = softbody(&[
        "bake",
        "no/such/preset.toml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_refused(&o, "preset.toml");
    assert!(!out.exists(), "nothing written for bad input");
}

/// A strip of three square quads of side `cell` along x, in the x–z
/// plane: its `v` lines, and the `f` line of quad 0, 1 or 2.
fn strip(cell: f64) -> (String, impl Fn(usize) -> String) {
    let vertices = (0..4)
        .map(|x| {
            let x = x as f64 * cell;
            format!("v {x} 0 0\nv {x} 0 {cell}\n")
        })
        .collect();
    let quad = |x: usize| {
        format!(
            "f {} {} {} {}\n",
            2 * x + 1,
            2 * x + 3,
            2 * x + 4,
            2 * x + 2
        )
    };
    (vertices, quad)
}

/// Writes `text` as the preset `name` in `dir`: its path, and the model
/// it builds.
fn write_preset(dir: &Path, name: &str, text: &str) -> (PathBuf, softbody::preset::Built) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let built = Preset::load(&path).unwrap().build(&path).unwrap();
    (path, built)
}

/// Writes the preset `{stem}.toml` in `dir` on the OBJ `obj` there: its
/// path.
fn preset_on(dir: &Path, stem: &str, obj: &str) -> PathBuf {
    let path = dir.join(format!("{stem}.toml"));
    std::fs::write(
        &path,
        format!(
            "version = 1\nname = \"{stem}\"\n[mesh]\nobj = \"{obj}\"\n[material]\ndensity = 0.3\n"
        ),
    )
    .unwrap();
    path
}

/// That the run `o` was refused as bad input (exit 2), saying `says`.
fn assert_refused(o: &std::process::Output, says: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(says), "{err}");
}

/// `softbody bake PRESET --frames FRAMES --out OUT`, to its end.
fn bake(preset: &Path, frames: &str, out: &Path) -> std::process::Output {
    bake_every(preset, frames, "1", out)
}

/// `softbody bake PRESET --frames FRAMES --every EVERY --out OUT`.
fn bake_every(preset: &Path, frames: &str, every: &str, out: &Path) -> std::process::Output {
    softbody(&[
        "bake",
        preset.to_str().unwrap(),
        "--frames",
        frames,
        "--every",
        every,
        "--out",
        out.to_str().unwrap(),
    ])
}

/// `softbody bake PRESET --frames FRAMES --out OUT` in the background.
#[cfg(unix)]
fn spawn_bake(preset: &Path, frames: &str, out: &Path) -> std::process::Child {
    spawn_bake_every(preset, frames, "1", out)
}

/// `softbody bake PRESET --frames FRAMES --every EVERY --out OUT` in the
/// background.
#[cfg(unix)]
fn spawn_bake_every(preset: &Path, frames: &str, every: &str, out: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_softbody"))
        .arg("bake")
        .arg(preset)
        .args(["--frames", frames, "--every", every, "--out"])
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        // (A line a tenth of the way, and what a stop request says: far
        // less than a pipe holds.)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most two minutes) until `path` exists.
#[cfg(unix)]
fn wait_for(path: &Path) {
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(started.elapsed().as_secs() < 120, "no {}", path.display());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Sends `child` a SIGINT (Ctrl-C).
#[cfg(unix)]
fn interrupt(child: &std::process::Child) {
    signal(child, "INT");
}

/// The exit status of a run the signal called `name` stopped: 128 + its
/// number, as shells report it (a script tells a `kill` from a Ctrl-C).
#[cfg(unix)]
fn exit_status(name: &str) -> i32 {
    128 + match name {
        "HUP" => 1,
        "INT" => 2,
        "TERM" => 15,
        _ => unreachable!("{name}"),
    }
}

/// Sends `child` the signal called `name` (`INT`, `TERM`, ...).
#[cfg(unix)]
fn signal(child: &std::process::Child, name: &str) {
    let kill = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
}

/// Until its first frame is done a bake has nothing to keep, and a stop
/// ends it at once: setting up a large model takes minutes, and a stop that
/// waited for the first frame took 127 s (QA). The 250 × 250 cloth's
/// factorisation is the window: the signal goes as soon as the process
/// takes stop requests (its thread for them is named so after the build).
/// SIGTERM too: METIS's GKlib catches it with a handler of its own while
/// it orders the system, which took it as its own error (the bake went on)
/// or hung the process (QA); meanwhile every thread of the bake keeps the
/// stop signals blocked, so no handler runs for them.
#[cfg(target_os = "linux")]
#[test]
fn a_stop_while_setting_up_ends_the_bake_at_once() {
    for name in ["INT", "TERM"] {
        let out = scratch_path(&format!("bake-setting-up-{name}"));
        let mut child = spawn_bake(Path::new("presets/scale/cloth250.toml"), "3", &out);
        let takes_requests =
            |threads: &[(String, String)]| threads.iter().any(|(name, _)| name == "stop requests");
        let started = std::time::Instant::now();
        while !takes_requests(&common::threads_of(child.id())) {
            assert!(started.elapsed().as_secs() < 120, "no stop requests taken");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Every thread blocks SIGINT, SIGTERM and SIGHUP (signals 2, 15 and
        // 1: bits 1, 14 and 0 of the mask) but the one waiting for them
        // (sigwait unblocks them while it waits, and takes them in place of
        // a handler).
        let stop_signals = (1u64 << 1) | (1 << 14) | 1;
        let threads = common::threads_of(child.id());
        assert!(threads.len() > 1, "{threads:?}");
        for (thread, status) in threads.into_iter().filter(|(t, _)| t != "stop requests") {
            let blocked = status.lines().find_map(|l| l.strip_prefix("SigBlk:"));
            let mask = blocked.map_or(0, |m| u64::from_str_radix(m.trim(), 16).unwrap_or(0));
            assert_eq!(mask & stop_signals, stop_signals, "{thread}: {status}");
        }
        signal(&child, name);
        let code = child.wait().unwrap().code();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(code, Some(exit_status(name)), "{name}: {stderr}");
        assert!(
            stderr.contains("stopped at once: nothing was simulated yet"),
            "{stderr}"
        );
        assert!(!out.join("cloth250_summary.json").exists());
    }
}

/// A second bake of a preset into a directory where one is running is
/// refused before it touches anything (two at once mixed their frames and
/// lost rows of each other's CSV); once the first is over, one runs.
#[cfg(unix)]
#[test]
fn a_second_bake_into_the_same_directory_waits_its_turn() {
    let out = scratch_path("bake-twice");
    let preset = Path::new("presets/hanging_cloth.toml");
    let mut first = spawn_bake(preset, "100000", &out);
    wait_for(&out.join("hanging_cloth_000005.obj"));
    let second = bake(preset, "3", &out);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("another bake of this preset is writing into this directory"),
        "{stderr}"
    );
    assert!(out.join("hanging_cloth_000005.obj").exists(), "untouched");
    interrupt(&first);
    assert_eq!(first.wait().unwrap().code(), Some(130));
    let csv = std::fs::read_to_string(out.join("hanging_cloth_energy.csv")).unwrap();
    let frames = csv.lines().count() - 2;
    assert!(frames >= 5);
    assert!(out.join(format!("hanging_cloth_{frames:06}.obj")).exists());
    // Its turn now.
    let third = bake(preset, "3", &out);
    assert!(
        third.status.success(),
        "{}",
        String::from_utf8_lossy(&third.stderr)
    );
}

/// SIGTERM (`kill`, `timeout`, a job scheduler) and SIGHUP (a closed SSH
/// session) stop a bake as Ctrl-C does, with its summary written; they used
/// to end it mid-frame without one. The exit status names the signal (both
/// were 130, Ctrl-C's).
#[cfg(unix)]
#[test]
fn termination_signals_stop_a_bake_cleanly() {
    for name in ["TERM", "HUP"] {
        let out = scratch_path(&format!("bake-{name}"));
        let mut child = spawn_bake(Path::new("presets/hanging_cloth.toml"), "100000", &out);
        wait_for(&out.join("hanging_cloth_000005.obj"));
        signal(&child, name);
        assert_eq!(
            child.wait().unwrap().code(),
            Some(exit_status(name)),
            "{name}"
        );
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("hanging_cloth_summary.json")).unwrap(),
        )
        .unwrap();
        let stopped = summary["stopped"].as_str().unwrap();
        assert!(stopped.starts_with("interrupted"), "{name}: {stopped}");
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_with_what_was_written_intact() {
    let out = scratch_path("bake-interrupt");
    // The most frames a bake takes: no allocation up front (the most a
    // `usize` holds used to abort), and frame numbers of the last frame's
    // seven digits.
    let mut child = spawn_bake(Path::new("presets/hanging_cloth.toml"), "1000000", &out);
    // Wait until it is well under way, then interrupt it.
    wait_for(&out.join("hanging_cloth_0000020.obj"));
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("hanging_cloth_summary.json")).unwrap(),
    )
    .unwrap();
    let frames = summary["frames"].as_u64().unwrap() as usize;
    assert!(
        summary["stopped"]
            .as_str()
            .unwrap()
            .starts_with("interrupted")
    );
    assert!(frames >= 20);
    // Every frame simulated has its CSV row and its complete OBJ.
    let csv = std::fs::read_to_string(out.join("hanging_cloth_energy.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        frames + 2,
        "the header, frames 0 to {frames}"
    );
    for frame in 0..=frames {
        let (positions, ..) = read_obj(&out.join(format!("hanging_cloth_{frame:07}.obj")));
        assert_eq!(positions.len(), 900, "frame {frame}");
    }
    assert!(
        !out.join(format!("hanging_cloth_{:07}.obj", frames + 1))
            .exists()
    );
}

/// A second Ctrl-C ends a bake at once, mid-frame: what was written stays
/// whole, every simulated frame's CSV row included (the CSV used to be
/// left empty in its unflushed buffer), and no temporary file is left. So
/// does a second SIGTERM: after the factorisation's nested dissection
/// (METIS) the first had reset SIGTERM to its default, and the second
/// killed the process (status 143).
#[cfg(unix)]
#[test]
fn a_second_ctrl_c_keeps_what_was_written() {
    for name in ["INT", "TERM"] {
        stopped_twice(name);
    }
}

/// [`a_second_ctrl_c_keeps_what_was_written`] with the signal `name`.
#[cfg(unix)]
fn stopped_twice(name: &str) {
    let out = scratch_path(&format!("bake-interrupt-twice-{name}"));
    std::fs::create_dir_all(&out).unwrap();
    // Slow frames: the second signal arrives while one is being solved.
    let preset = out.join("slow.toml");
    std::fs::write(
        &preset,
        "version = 1\nname = \"slow\"\n[mesh]\ngrid = { n = 80, width = 1.0 }\n\
         [material]\ndensity = 0.3\n[pins]\nhard = [\"top_corners\"]\n[sim]\niterations = 400\n",
    )
    .unwrap();
    let frames = out.join("frames");
    let mut child = spawn_bake(&preset, "1000", &frames);
    wait_for(&frames.join("slow_0001.obj"));
    // Each request is answered at once, a frame can take long. The second
    // goes once the first is answered (30 ms later, as before, it could
    // find the frame over and the bake ended by the first).
    signal(&child, name);
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("\nstopping after the current frame (") {
        let read = std::io::BufRead::read_line(&mut stderr, &mut said).unwrap();
        assert!(read > 0, "{said}");
    }
    signal(&child, name);
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert_eq!(
        child.wait().unwrap().code(),
        Some(exit_status(name)),
        "{said}"
    );
    assert!(said.contains("\nstopped at once: "), "{said}");
    // Ended by the second signal, mid-frame: the first one's clean stop
    // would have written the summary.
    assert!(
        !frames.join("slow_summary.json").exists(),
        "not the second Ctrl-C's path"
    );
    let csv = std::fs::read_to_string(frames.join("slow_energy.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines.len() >= 3, "header, frames 0 and 1 at least: {csv:?}");
    let fields = lines[0].split(',').count();
    for (k, line) in lines.iter().enumerate().skip(1) {
        assert_eq!(line.split(',').count(), fields, "row {k}: {line}");
        assert!(line.starts_with(&format!("{},", k - 1)), "row {k}: {line}");
    }
    // Every OBJ there is whole: no half-written frame, and no temporary.
    let mut objs = 0;
    for entry in std::fs::read_dir(&frames).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            path.extension().is_none_or(|e| e != "tmp"),
            "{}",
            path.display()
        );
        if path.extension().is_some_and(|e| e == "obj") {
            let (positions, ..) = read_obj(&path);
            assert_eq!(positions.len(), 6400, "{}", path.display());
            objs += 1;
        }
    }
    assert!(objs >= 2);
}

/// `--every K` writes every K-th frame and the last, where the simulation
/// ended (the sequence used to stop at the last multiple of K).
#[test]
fn a_sparse_sequence_ends_with_the_last_frame() {
    let out = scratch_path("bake-every");
    let o = bake_every(Path::new("presets/hanging_cloth.toml"), "10", "4", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for frame in 0..=10 {
        let path = out.join(format!("hanging_cloth_{frame:04}.obj"));
        let wanted = [0, 4, 8, 10].contains(&frame);
        assert_eq!(path.exists(), wanted, "frame {frame}");
    }
}

/// A sparse sequence stopped early ends with the last frame simulated too,
/// as one that ran to the end does.
#[cfg(unix)]
#[test]
fn a_stopped_sparse_sequence_ends_with_the_last_frame_simulated() {
    let out = scratch_path("bake-every-interrupt");
    let mut child = spawn_bake_every(
        Path::new("presets/hanging_cloth.toml"),
        "1000000",
        "100000",
        &out,
    );
    let csv = out.join("hanging_cloth_energy.csv");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&csv).map_or(0, |c| c.lines().count()) < 30 {
        assert!(
            started.elapsed().as_secs() < 120,
            "no 30 rows in {}",
            csv.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("hanging_cloth_summary.json")).unwrap(),
    )
    .unwrap();
    let frames = summary["frames"].as_u64().unwrap() as usize;
    assert!((28..100_000).contains(&frames), "{frames}");
    let mut objs: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".obj"))
        .collect();
    objs.sort();
    assert_eq!(
        objs,
        [
            "hanging_cloth_0000000.obj".to_owned(),
            format!("hanging_cloth_{frames:07}.obj")
        ]
    );
    assert_eq!(summary["objs_written"].as_u64(), Some(2));
}

/// A bake into a directory holding an earlier bake's frames removes them
/// first (a sequence importer would play the stale ones after the new),
/// and says so; files that are not its frames stay.
#[test]
fn rebaking_removes_the_earlier_frames() {
    let out = scratch_path("bake-again");
    let cloth = Path::new("presets/hanging_cloth.toml");
    assert!(bake(cloth, "5", &out).status.success());
    let keep = [
        "hanging_cloth_final.obj",
        "notes_0001.obj",
        "hanging_cloth_0001.txt",
        "hanging_cloth_60.obj",
    ];
    for name in keep {
        std::fs::write(out.join(name), "kept").unwrap();
    }
    // Left by a bake ended mid-frame: removed, not counted.
    let leftover = out.join(".hanging_cloth_0006.obj.123-4.tmp");
    std::fs::write(&leftover, "half").unwrap();
    // An energies-only bake (`--every 0`) writes no frames and keeps them.
    let o = bake_every(cloth, "1", "0", &out);
    assert!(o.status.success());
    assert!(out.join("hanging_cloth_0005.obj").exists());
    let o = bake(cloth, "2", &out);
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("removed 6 OBJ frames of an earlier bake"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    for frame in 0..=5 {
        let path = out.join(format!("hanging_cloth_{frame:04}.obj"));
        assert_eq!(path.exists(), frame <= 2, "frame {frame}");
    }
    for name in keep {
        assert_eq!(std::fs::read_to_string(out.join(name)).unwrap(), "kept");
    }
    assert!(!leftover.exists());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("hanging_cloth_summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["earlier_objs_removed"], 6);
}

/// A file named like a frame that no bake wrote — here the preset's own
/// mesh, `scan_0001.obj` beside `scan.toml` — stops the bake before
/// anything is written: it used to be removed as an "earlier frame" (or
/// overwritten by frame 1), and the preset then loaded the deformed frame
/// as its rest shape.
#[test]
fn a_mesh_named_like_a_frame_is_never_removed_or_overwritten() {
    let dir = scratch_path("bake-own-mesh");
    std::fs::create_dir_all(&dir).unwrap();
    let mesh = dir.join("scan_0001.obj");
    std::fs::copy("meshes/cloth_quad.obj", &mesh).unwrap();
    let original = std::fs::read(&mesh).unwrap();
    let preset = preset_on(&dir, "scan", "scan_0001.obj");
    // Bad input (2): the user's own file where the bake would write.
    assert_refused(
        &bake(&preset, "3", &dir),
        "scan_0001.obj: the preset's mesh",
    );
    assert_eq!(std::fs::read(&mesh).unwrap(), original);
    // A person's file of a frame's name that is not the mesh: left alone.
    let theirs = dir.join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    let frame = theirs.join("scan_0002.obj");
    std::fs::copy("meshes/cloth_quad.obj", &frame).unwrap();
    assert_refused(
        &bake(&preset, "3", &theirs),
        "scan_0002.obj: not written by an earlier bake",
    );
    assert_eq!(std::fs::read(&frame).unwrap(), original);
    std::fs::remove_dir_all(&theirs).unwrap();
    // Nothing written: no frame, and no energy CSV either (an empty one was
    // left behind).
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["scan.toml", "scan_0001.obj"]);
    // Into a directory of its own, the same preset bakes.
    let out = dir.join("frames");
    let o = bake(&preset, "3", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("scan_0003.obj").exists());
    assert_eq!(std::fs::read(&mesh).unwrap(), original);
}

/// A frame of an earlier bake kept as a preset's mesh (a pose adopted as
/// the new rest shape) is never removed or replaced by that preset's bake
/// into the same directory (QA: the mesh was overwritten by the new frame
/// of its number, or removed with the other frames, in silence).
#[test]
fn a_baked_frame_kept_as_the_mesh_is_never_removed_or_replaced() {
    let dir = scratch_path("bake-adopted-frame");
    let o = bake(Path::new("presets/silk.toml"), "6", &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mesh = dir.join("silk_0005.obj");
    let original = std::fs::read(&mesh).unwrap();
    let preset = preset_on(&dir, "silk", "silk_0005.obj");
    for frames in ["2", "8"] {
        assert_refused(
            &bake(&preset, frames, &dir),
            "silk_0005.obj: the preset's mesh",
        );
        assert_eq!(std::fs::read(&mesh).unwrap(), original, "{frames}");
        assert!(dir.join("silk_0006.obj").exists(), "nothing removed");
    }
}

/// A bake with `--threads 2` on one CPU (`taskset`) writes the frames it
/// writes on two: the work is split for the threads asked for whatever
/// runs it (QA: the count was capped to the CPUs, and the jelly's frame 30
/// differed, as README promised it would not).
#[cfg(target_os = "linux")]
#[test]
fn the_same_threads_bake_the_same_frames_on_one_cpu() {
    // The first CPU this process may run on (CPU 0 may be another
    // container's).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cpu = (status.lines())
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|list| list.trim().split([',', '-']).next().map(str::to_owned));
    let usable = |cpu: &String| {
        let run = Command::new("taskset").args(["-c", cpu, "true"]).output();
        run.is_ok_and(|o| o.status.success())
    };
    let Some(cpu) = cpu.filter(usable) else {
        eprintln!("no taskset here, or no CPU it may pin to: skipped");
        return;
    };
    let dir = scratch_path("bake-threads-one-cpu");
    let frame = |pinned: bool| {
        let out = dir.join(if pinned { "one" } else { "all" });
        let mut command = if pinned {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu]).arg(env!("CARGO_BIN_EXE_softbody"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_softbody"))
        };
        let o = command
            .args(["--threads", "2", "bake", "presets/jelly.toml"])
            .args(["--frames", "30", "--every", "30", "--out"])
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(out.join("jelly_0030.obj")).unwrap()
    };
    assert!(frame(true) == frame(false));
}

/// A preset without a name bakes under its file's (QA: every frame read
/// `# Softbody Studio bake: , frame 3` and `o ` with no name).
#[test]
fn a_preset_without_a_name_bakes_under_its_file_s() {
    let dir = scratch_path("bake-unnamed");
    std::fs::create_dir_all(&dir).unwrap();
    let (preset, _) = write_preset(
        &dir,
        "flag.toml",
        "version = 1\n[mesh]\ngrid = { n = 4, width = 1.0 }\n[material]\ndensity = 0.2\n",
    );
    let o = bake(&preset, "1", &dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("flag_0001.obj")).unwrap();
    assert!(
        text.starts_with("# Softbody Studio bake: flag, frame 1"),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "o flag"), "{text}");
}

/// A preset whose model cannot be factorised is bad input, as `inspect`
/// says (exit 2; the bake said 1), and its bake makes no output directory.
#[test]
fn a_bake_that_cannot_start_is_bad_input_and_makes_nothing() {
    let dir = scratch_path("bake-cannot-start");
    std::fs::create_dir_all(&dir).unwrap();
    let preset = dir.join("singular.toml");
    std::fs::write(
        &preset,
        "version = 1\nname = \"singular\"\n[mesh]\ngrid = { n = 10, width = 1.0 }\n\
         [material]\ndensity = 0.15\n\
         weights = { structural = 1e-6, shear = 1e-6, bending = 1e12 }\n\
         [pins]\nhard = [\"top_corners\"]\n[sim]\ndt = 10.0\n",
    )
    .unwrap();
    let inspect = softbody(&["inspect", preset.to_str().unwrap()]);
    assert_eq!(inspect.status.code(), Some(2), "{inspect:?}");
    let out = dir.join("frames");
    let o = bake(&preset, "3", &out);
    assert_refused(&o, "singular.toml: cannot set up the solver");
    assert!(String::from_utf8_lossy(&o.stderr).contains("factorised"));
    assert!(!out.exists());
}

/// Two presets baked into one directory keep their own energies and
/// summaries (a second preset's bake used to replace the first's
/// `energy.csv` and `summary.json`); a person's file of those names stops
/// the bake and stays as it was, and a bake's own is replaced.
#[test]
fn presets_sharing_a_directory_keep_their_energies_and_nothing_else_is_replaced() {
    let out = scratch_path("bake-shared");
    for (preset, frames) in [("hanging_cloth", "3"), ("silk", "5")] {
        let o = bake(Path::new(&format!("presets/{preset}.toml")), frames, &out);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    for (stem, frames) in [("hanging_cloth", 3), ("silk", 5)] {
        let csv = std::fs::read_to_string(out.join(format!("{stem}_energy.csv"))).unwrap();
        assert_eq!(csv.lines().count(), frames + 2, "{stem}: header and frames");
        let summary: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(format!("{stem}_summary.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(summary["frames"], frames, "{stem}");
    }
    // A rebake replaces its own files.
    assert!(
        bake(Path::new("presets/silk.toml"), "2", &out)
            .status
            .success()
    );
    let csv = std::fs::read_to_string(out.join("silk_energy.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    // Files a person wrote under those names stop it, untouched, and so do
    // directories (the CSV's was read, and failed as a runtime error).
    for (name, text) in [
        ("silk_energy.csv", Some("my,precious,data\n")),
        ("silk_summary.json", Some("{\"mine\": true}\n")),
        ("silk_energy.csv", None),
        ("silk_summary.json", None),
    ] {
        let path = out.join(name);
        let own = std::fs::read(&path).unwrap();
        match text {
            Some(text) => std::fs::write(&path, text).unwrap(),
            None => {
                std::fs::remove_file(&path).unwrap();
                std::fs::create_dir(&path).unwrap();
            }
        }
        assert_refused(
            &bake(Path::new("presets/silk.toml"), "2", &out),
            &format!("{name}: not written by an earlier bake"),
        );
        match text {
            Some(text) => assert_eq!(std::fs::read_to_string(&path).unwrap(), text),
            None => std::fs::remove_dir(&path).unwrap(),
        }
        std::fs::write(&path, own).unwrap();
    }
    assert!(
        bake(Path::new("presets/silk.toml"), "2", &out)
            .status
            .success()
    );
}

/// A preset name with a newline stays in its comment line: it cannot add
/// statements (a vertex) to the baked OBJ.
#[test]
fn a_name_with_a_newline_stays_one_line() {
    let out = scratch_path("bake-name");
    std::fs::create_dir_all(&out).unwrap();
    let text = std::fs::read_to_string("presets/hanging_cloth.toml").unwrap();
    let name_line = text.lines().find(|l| l.starts_with("name =")).unwrap();
    let preset = out.join("named.toml");
    std::fs::write(
        &preset,
        text.replace(name_line, "name = \"cloth\\nv 9 9 9\\n#\"")
            .replace("../meshes/", "../../meshes/"),
    )
    .unwrap();
    let o = bake(&preset, "1", &out.join("frames"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let obj = std::fs::read_to_string(out.join("frames").join("named_0001.obj")).unwrap();
    assert_eq!(obj.lines().filter(|l| l.starts_with("v ")).count(), 900);
    assert!(
        obj.lines().next().unwrap().contains("cloth v 9 9 9 #"),
        "{obj:.80}"
    );
}

/// A bake of an OBJ writes each frame in the file's own layout, so that it
/// lines up with the asset vertex for vertex (Blender's shape keys and
/// Mesh Cache read by index): every vertex in the file's order (coincident
/// ones, welded for the simulation, move together; one no face uses stays
/// put), and its polygons as written, quads included. The frames had the
/// welded, triangulated surface.
#[test]
fn an_obj_is_baked_in_its_own_layout() {
    let dir = scratch_path("bake-source-layout");
    std::fs::create_dir_all(&dir).unwrap();
    // Two quads side by side, their shared edge written twice (2 = 5, 3 =
    // 6, as at a texture seam), and a loose vertex 9 no face uses.
    let obj = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 1 0 0\nv 1 1 0\nv 2 0 0\nv 2 1 0\n\
               v 5 5 5\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
               f 1/1 2/2 3/3 4/4\nf 5/1 7/2 8/3 6/4\n";
    std::fs::write(dir.join("strip.obj"), obj).unwrap();
    let (preset_path, built) = write_preset(
        &dir,
        "strip.toml",
        "version = 1\nname = \"Strip\"\n[mesh]\nobj = \"strip.obj\"\n[material]\ndensity = 0.2\n\
         [pins]\nhard = [{ plane = { point = [0.0, 1.0, 0.0], normal = [0.0, 1.0, 0.0], distance = 0.001 } }]\n",
    );
    assert_eq!(
        built.model.vertex_count(),
        6,
        "welded, without the loose one"
    );
    let out = dir.join("out");
    let o = bake(&preset_path, "10", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for frame in ["0000", "0010"] {
        let (v, vt, faces) = obj_layout(&out.join(format!("strip_{frame}.obj")));
        assert_eq!(v.len(), 9, "frame {frame}");
        assert_eq!(vt, [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]);
        let quad =
            |v: [usize; 4]| -> Face { v.iter().zip(1..).map(|(&v, t)| (v, Some(t))).collect() };
        assert_eq!(
            faces,
            [quad([1, 2, 3, 4]), quad([5, 7, 8, 6])],
            "frame {frame}"
        );
        assert_eq!(
            (v[1], v[2]),
            (v[4], v[5]),
            "frame {frame}: the seam moves as one"
        );
        assert_eq!(
            v[8],
            Vec3::new(5.0, 5.0, 5.0),
            "frame {frame}: the loose vertex stays"
        );
        if frame == "0010" {
            assert!(v[0].y < -1e-4, "the free edge falls: {:?}", v[0]);
            assert_eq!(v[3], Vec3::new(0.0, 1.0, 0.0), "the pinned edge stays");
        }
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("strip_summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        (
            &summary["obj_vertices"],
            &summary["obj_faces"],
            &summary["obj_texcoords"]
        ),
        (&9.into(), &2.into(), &4.into())
    );
    // Blender-like readers take it: two quads, four triangles cut.
    let (_, triangles, uvs) = read_obj(&out.join("strip_0010.obj"));
    assert_eq!((triangles.len(), uvs.len()), (4, 4));
}

/// A preset reading its mesh in centimetres (`build.scale = 0.01`) is
/// simulated in metres and baked in the file's units: frame 0 is the file's
/// own vertices, so the sequence overlays the asset it came from, and a
/// free fall of three frames (at most `6 g h²`, 16 mm) reads about 1.6
/// units there.
#[test]
fn a_scaled_mesh_bakes_in_its_file_s_units() {
    let dir = scratch_path("bake-scaled");
    std::fs::create_dir_all(&dir).unwrap();
    let cube: String = common::cube_obj([0.0; 3], 0)
        .lines()
        .map(|line| match line.strip_prefix("v ") {
            Some(xyz) => {
                let p: Vec<String> = xyz
                    .split(' ')
                    .map(|c| (c.parse::<f64>().unwrap() * 100.0).to_string())
                    .collect();
                format!("v {}\n", p.join(" "))
            }
            None => format!("{line}\n"),
        })
        .collect();
    std::fs::write(dir.join("cube.obj"), &cube).unwrap();
    let (preset_path, built) = write_preset(
        &dir,
        "box.toml",
        "version = 1\n[mesh]\nobj = \"cube.obj\"\n[build]\nscale = 0.01\n\
         [material]\ndensity = 0.2\n",
    );
    let (lo, hi) = built
        .model
        .rest
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.y), hi.max(p.y))
        });
    assert!((hi - lo - 1.0).abs() < 1e-12, "a 1 m box, {}", hi - lo);
    let out = dir.join("out");
    let o = bake(&preset_path, "3", &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file: Vec<Vec3> = cube
        .lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|xyz| Vec3::from_iterator(xyz.split(' ').map(|c| c.parse::<f64>().unwrap())))
        .collect();
    let (first, _, _) = obj_layout(&out.join("box_0000.obj"));
    assert_eq!(first.len(), file.len());
    for (baked, read) in first.iter().zip(&file) {
        assert!((baked - read).norm() < 1e-12, "{baked} against {read}");
    }
    let (last, _, _) = obj_layout(&out.join("box_0003.obj"));
    for (fallen, read) in last.iter().zip(&file) {
        let drop = read.y - fallen.y;
        assert!((0.5..2.5).contains(&drop), "fell {drop} units");
    }
}
