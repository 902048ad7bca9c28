//! The `softbody` binary end to end: output, JSON and exit codes.

mod common;

use common::{cube_obj, scratch_dir, scratch_path, softbody, softbody_ok};

#[test]
fn inspect_prints_the_report() {
    let out = softbody(&["inspect", "meshes/box.obj"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("386 vertices, 768 triangles, 1152 edges"),
        "{text}"
    );
    assert!(text.contains("closed"), "{text}");
    // 384 quads: 1152 edges less the 384 cuts are structural; the cuts and
    // the springs across them (each quad's two diagonals) shear.
    assert!(
        text.contains("768 structural, 768 shear, 768 bending"),
        "{text}"
    );
}

#[test]
fn inspect_json_is_one_object() {
    let out = softbody(&["inspect", "--json", "meshes/cloth_quad.obj"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["vertices"], 625);
    assert_eq!(v["edges"], 3 * 625 - 4 * 25 + 1);
    assert_eq!(v["boundary_edges"], 96);
    assert_eq!(v["closed"], false);
    assert_eq!(v["validation"]["triangulated_polygons"], 576);
    // One texture coordinate per node, on every triangle.
    assert_eq!(v["texcoords"], 625);
    assert_eq!(v["textured_triangles"], 2 * 576);
    // The seed grid's springs (n = 25) but for bending, which crosses the
    // quads' interior sides.
    assert_eq!(v["springs"]["structural"], 2 * 25 * 24);
    assert_eq!(v["springs"]["shear"], 2 * 24 * 24);
    assert_eq!(v["springs"]["bending"], 2 * 24 * 23);
}

#[test]
fn bad_input_exits_2_with_file_and_line() {
    let dir = scratch_dir("cli-inspect");
    let file = dir.join("broken.obj");
    std::fs::write(&file, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n").unwrap();
    let out = softbody(&["inspect", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("broken.obj:4:"), "{err}");
    assert!(err.contains("out of range"), "{err}");
    let missing = softbody(&["inspect", "no/such/file.obj"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn bench_json_has_the_documented_fields() {
    let out = softbody_ok(&[
        "bench", "--scene", "cloth30", "--frames", "5", "--warmup", "1", "--json",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "one line for 1 thread, one for all cores: {text}"
    );
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["scene"], "cloth30");
        assert_eq!(v["n"], 30);
        assert_eq!(v["nodes"], 900);
        assert_eq!(v["springs"], 6 * 900 - 10 * 30 + 2);
        assert_eq!(v["iterations"], 10);
        for key in [
            "threads",
            "factor_ms",
            "frame_ms_median",
            "factor_nnz",
            "setup_ms",
        ] {
            assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {line}");
        }
        if cfg!(target_os = "linux") {
            let [now, peak] = ["resident_bytes", "peak_resident_bytes"]
                .map(|key| v[key].as_u64().unwrap_or_else(|| panic!("{key} in {line}")));
            // The factor's values alone are 8 bytes an entry.
            let factor = 8 * v["factor_nnz"].as_u64().unwrap();
            assert!(now > factor && peak >= now, "{line}");
        }
    }
    let bad = softbody(&["bench", "--scene", "teapot"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn tetrahedralize_writes_a_mesh_that_reads_back_and_reports_json() {
    let dir = scratch_dir("cli-tet");
    let out_file = dir.join("sphere.msh");
    let out = softbody_ok(&[
        "tetrahedralize",
        "meshes/sphere.obj",
        "--resolution",
        "12",
        "--json",
        "-o",
        out_file.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in [
        "tets",
        "vertices",
        "min_dihedral_deg",
        "p1_dihedral_deg",
        "volume_error",
        "boundary_distance",
        "seconds",
    ] {
        assert!(!v[key].is_null(), "{key} missing: {v}");
    }
    assert!(v["min_dihedral_deg"].as_f64().unwrap() >= 10.7);
    let mesh = softbody::mesh::read_tet_mesh(&out_file).unwrap();
    assert_eq!(mesh.tets().len() as u64, v["tets"].as_u64().unwrap());
    assert_eq!(
        mesh.positions().len() as u64,
        v["vertices"].as_u64().unwrap()
    );

    // Text report, and the TetGen pair.
    let node = dir.join("sphere.node");
    let out = softbody(&[
        "tetrahedralize",
        "meshes/sphere.obj",
        "--resolution",
        "8",
        "-o",
        node.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("dihedral:") && text.contains("boundary:"),
        "{text}"
    );
    assert!(dir.join("sphere.ele").is_file());

    // Into a directory not made yet: made, as a bake's is (QA: the work
    // was done, then the write failed, exit 1); a file on the way is bad
    // input before the work.
    let deep = dir.join("new").join("dir").join("sphere.vtk");
    let tet = |out: &std::path::Path| {
        let args = ["tetrahedralize", "meshes/sphere.obj", "--resolution", "6"];
        softbody(&[&args[..], &["-o", out.to_str().unwrap()]].concat())
    };
    assert!(tet(&deep).status.success());
    assert!(deep.is_file());
    let o = tet(&dir.join("sphere.ele").join("x.msh"));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sphere.ele is a file, not a directory"),
        "{err}"
    );
}

/// Input the tetrahedraliser has to guess about is reported: an open
/// sleeve (filled across its openings) with a warning in the text and the
/// JSON; a closed sphere with none.
#[test]
fn tetrahedralize_warns_where_it_guessed() {
    let out = softbody_ok(&["tetrahedralize", "meshes/sleeve.obj", "--resolution", "8"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  warnings:\n    the surface is open (64 boundary edges)"),
        "{text}"
    );
    let out = softbody_ok(&[
        "tetrahedralize",
        "meshes/sphere.obj",
        "--resolution",
        "8",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["warnings"], serde_json::json!([]));
    // The import's repairs too, as a tet build says them: a cube whose
    // faces point inwards read "warnings: none".
    let text = tetrahedralize_edited_box("inward", |line| {
        let corners = line.strip_prefix("f ")?;
        let reversed: Vec<&str> = corners.split_whitespace().rev().collect();
        Some(format!("f {}", reversed.join(" ")))
    });
    assert!(
        text.contains("  warnings:\n    faces point inwards (negative volume)"),
        "{text}"
    );
}

/// The report gives lengths and volumes in significant digits: a cube
/// 5e-6 m across (inside the size limit) read "cell 0.0000" and "volume:
/// 0.000000 vs 0.000000 enclosed".
#[test]
fn tetrahedralize_reports_small_sizes_in_significant_digits() {
    let text = tetrahedralize_edited_box("small", |line| {
        let xyz = line.strip_prefix("v ")?;
        let scaled: Vec<String> = xyz
            .split_whitespace()
            .map(|c| format!("{}", c.parse::<f64>().unwrap() * 1e-5))
            .collect();
        Some(format!("v {}", scaled.join(" ")))
    });
    assert!(text.contains("(cell 1.250e-6)"), "{text}");
    assert!(text.contains(" vs 1.250e-16 enclosed"), "{text}");
}

/// The report of `tetrahedralize --resolution 4` on `meshes/box.obj` with
/// the lines `edit` rewrites rewritten (the others kept), written as
/// `{name}.obj` in a scratch directory.
fn tetrahedralize_edited_box(name: &str, edit: impl Fn(&str) -> Option<String>) -> String {
    let dir = scratch_dir(&format!("tetrahedralize-{name}"));
    let edited: String = std::fs::read_to_string("meshes/box.obj")
        .unwrap()
        .lines()
        .map(|line| edit(line).unwrap_or_else(|| line.to_owned()) + "\n")
        .collect();
    let path = dir.join(format!("{name}.obj"));
    std::fs::write(&path, edited).unwrap();
    let out = softbody_ok(&[
        "tetrahedralize",
        path.to_str().unwrap(),
        "--resolution",
        "4",
    ]);
    String::from_utf8(out.stdout).unwrap()
}

/// Two overlapping cubes in one file: `inspect` says the surface passes
/// through itself, and that its volume (the sum of both, 2) counts the
/// overlap twice; one cube alone has no such warning.
#[test]
fn inspect_warns_of_a_surface_passing_through_itself() {
    let dir = scratch_dir("cli-crossing");
    let two = dir.join("two.obj");
    std::fs::write(
        &two,
        cube_obj([0.0; 3], 0) + &cube_obj([0.5, 0.25, 0.5 / 3.0], 8),
    )
    .unwrap();
    let one = dir.join("one.obj");
    std::fs::write(&one, cube_obj([0.0; 3], 0)).unwrap();
    let text = String::from_utf8(softbody_ok(&["inspect", two.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("volume:      2\n"), "{text}");
    assert!(
        text.contains("the surface passes through itself (")
            && text.contains("its volume counts overlapping parts twice"),
        "{text}"
    );
    let text = String::from_utf8(softbody_ok(&["inspect", one.to_str().unwrap()]).stdout).unwrap();
    assert!(text.contains("warnings:    none"), "{text}");
}

#[test]
fn tetrahedralize_rejects_flat_input_and_unknown_formats_with_exit_2() {
    let out = softbody(&["tetrahedralize", "meshes/cloth_tri.obj"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("cloth_tri.obj") && err.contains("flat"),
        "{err}"
    );
    let out = softbody(&["tetrahedralize", "meshes/sphere.obj", "-o", "out.stl"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("out.stl"), "{err}");
    assert!(
        !std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("out.stl")
            .exists()
    );
}

#[test]
fn bench_runs_a_tet_scene() {
    let out = softbody_ok(&[
        "bench",
        "--scene",
        "tet4",
        "--frames",
        "3",
        "--warmup",
        "1",
        "--json",
        "--threads",
        "1",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scene"], "tet4");
    assert_eq!(v["nodes"], 64);
    assert_eq!(v["tets"], 6 * 27);
    assert_eq!(v["springs"], 0);
    assert!(v["local_ms_median"].as_f64().is_some_and(|x| x > 0.0));
}

/// The text report names the machine its timings come from, then the
/// table: its header and one row per thread count.
#[test]
fn bench_text_names_the_machine_first() {
    let out = softbody_ok(&[
        "bench", "--scene", "cloth10", "--frames", "2", "--warmup", "0",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].starts_with("machine: ") && lines[0].contains("logical CPU"),
        "{text}"
    );
    assert!(lines[1].starts_with("scene"), "{text}");
    assert!(
        lines[2..].iter().all(|l| l.starts_with("cloth10 ")),
        "{text}"
    );
}

#[test]
fn bench_accuracy_reports_every_method_against_newton() {
    let out = softbody_ok(&[
        "bench",
        "--accuracy",
        "--scene",
        "cloth12",
        "--steps",
        "3",
        "--every",
        "4",
        "--json",
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let methods: Vec<_> = lines
        .iter()
        .map(|v| (v["method"].as_str().unwrap(), v["guess"].as_str().unwrap()))
        .collect();
    let each = ["plain", "chebyshev", "anderson"];
    let expected: Vec<_> = ["inertial", "extrapolated"]
        .into_iter()
        .flat_map(|g| each.map(|m| (m, g)))
        .collect();
    assert_eq!(methods, expected);
    let its = |v: &serde_json::Value| v["iterations_to_1e3"].as_u64().unwrap();
    for v in &lines {
        assert_eq!(v["scene"], "cloth12");
        assert_eq!(v["steps"], 3);
        for key in ["ms_to_1e3", "ms_to_1e5", "error_at_default", "newton_ms"] {
            assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {v}");
        }
        assert!(its(v) >= 1);
        assert_eq!(v["iterations_at_default"], 10);
    }
    // Anderson needs fewer iterations than plain PD for the same accuracy,
    // from either guess.
    assert!(its(&lines[2]) < its(&lines[0]), "{lines:?}");
    assert!(its(&lines[5]) < its(&lines[3]), "{lines:?}");
    // What it is doing, on standard error (not a terminal here: a line per
    // report): every stage in order, a method's stages naming it and, as
    // every method reaches 1e-3, each its search for that count; then the
    // timing of each tolerance.
    let stderr = String::from_utf8(out.stderr).unwrap();
    let stage = |line: &str| -> usize {
        let rest = line.strip_prefix("cloth12: stage ").expect(line);
        let (stage, rest) = rest.split_once('/').expect(line);
        assert!(rest.starts_with("8 at "), "{line}");
        stage.parse().expect(line)
    };
    let mut stages: Vec<usize> = stderr.lines().map(stage).collect();
    assert!(stages.is_sorted(), "{stderr}");
    stages.dedup();
    assert_eq!(stages, (1..=8).collect::<Vec<_>>(), "{stderr}");
    for line in stderr.lines() {
        let k = stage(line);
        let what = match expected.get(k - 1) {
            Some((method, guess)) => format!("{method} from the {guess} guess: "),
            None => format!("timing the frames that reach 1e-{}", [3, 5][k - 7]),
        };
        assert!(line.contains(&what), "{line}");
    }
    for k in 1..=6 {
        let searched = stderr.lines().any(|l| {
            l.starts_with(&format!("cloth12: stage {k}/8 at ")) && l.contains(" a frame for 1e-3, ")
        });
        assert!(searched, "stage {k}: {stderr}");
    }
}

/// A preset's name is one line in the report: its control characters
/// (a newline, a carriage return) were printed raw.
#[test]
fn inspect_prints_a_preset_s_name_on_one_line() {
    let dir = scratch_dir("cli-inspect-name");
    let path = dir.join("named.toml");
    std::fs::write(
        &path,
        "version = 1\nname = \"one\\ntwo\\rthree\"\n[mesh]\ngrid = { n = 4, width = 1.0 }\n\
         [material]\ndensity = 0.2\n",
    )
    .unwrap();
    let out = softbody_ok(&["inspect", path.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.ends_with(" (one two three)"), "{text:?}");
}

#[test]
fn inspect_reports_a_preset() {
    let out = softbody_ok(&["inspect", "presets/hanging_cloth.toml"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("vertices:    900"), "{text}");
    assert!(
        text.contains("1740 structural, 1682 shear, 1680 bending"),
        "{text}"
    );
    assert!(text.contains("2 hard, 0 soft"), "{text}");
    assert!(text.contains("texture:     900 coordinates"), "{text}");
    assert!(text.contains("non-zeros in L"), "{text}");
    // What it sets, as the terminal UI lists it (it said nothing of it).
    assert!(
        text.contains(
            "settings:    structural 1000, shear 500, bending 20, attachment 1000, density 0.15, \
             dt 0.0167, iterations 10"
        ),
        "{text}"
    );
    assert!(
        text.contains("solver:      anderson iterations from the extrapolated guess"),
        "{text}"
    );
    assert!(
        text.contains("pin rules:   hard: the top corners; soft: none"),
        "{text}"
    );
    let json = softbody(&["inspect", "--json", "presets/jelly.toml"]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["name"], "Jelly");
    assert!(v["tets"].as_u64().unwrap() > 0);
    assert!(v["soft_pins"].as_u64().unwrap() > 0);
    assert!(v["factor_nnz"].as_u64().unwrap() > 0);
    assert!(v["total_mass"].as_f64().unwrap() > 0.0);
    // The sample sphere has no texture coordinates.
    assert_eq!(v["texcoords"], 0);
    assert_eq!(v["settings"]["strain"], 2e4);
    assert_eq!(v["settings"]["density"], 1050.0);
    assert_eq!(v["settings"]["strain_limit"], 0.0);
    assert_eq!(v["settings"]["iterations"], 10);
    assert!(v["settings"]["structural"].is_null(), "a tet model's list");
    assert_eq!(v["acceleration"], "anderson");
    assert_eq!(v["pin_rules"]["soft"], serde_json::json!(["a plane"]));
}

#[test]
fn a_bad_preset_exits_2_with_file_line_and_field() {
    let dir = scratch_dir("cli-preset");
    let file = dir.join("typo.toml");
    std::fs::write(
        &file,
        "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 0.2\nweight = {}\n",
    )
    .unwrap();
    let out = softbody(&["inspect", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "typo.toml:6: material.weight: unknown field `weight`; did you mean `weights`?"
        ),
        "{err}"
    );
}

/// A reader that stops early (`softbody bench | head -1`) ends the output
/// quietly, as for any Unix filter: no panic, exit 0. The pipe's read end
/// is closed before the binary starts, so every write to it fails.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    for args in [
        &["inspect", "meshes/box.obj"][..],
        &["inspect", "--json", "presets/jelly.toml"],
        &[
            "bench", "--scene", "cloth10", "--frames", "2", "--warmup", "0",
        ],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

/// A standard error whose reader has gone (a log pipe that died) changes
/// nothing but the messages: bad input still exits 2, and a bake, whose
/// progress lines go there when no terminal is attached, still writes every
/// file and exits 0. (`eprintln!` panicked on the failed write: exit 101.)
#[test]
fn a_closed_error_pipe_changes_only_the_messages() {
    let run = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(writer)
            .output()
            .unwrap()
    };
    let bad = run(&["inspect", "no/such/mesh.obj"]);
    assert_eq!(bad.status.code(), Some(2), "{:?}", bad.status);

    let dir = scratch_path("cli-stderr");
    let baked = run(&[
        "bake",
        "presets/hanging_cloth.toml",
        "--frames",
        "20",
        "--every",
        "10",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(baked.status.success(), "{:?}", baked.status);
    for file in [
        "hanging_cloth_0000.obj",
        "hanging_cloth_0010.obj",
        "hanging_cloth_0020.obj",
        "hanging_cloth_energy.csv",
        "hanging_cloth_summary.json",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
}

/// Numbers that would take hours, all memory or a hang are refused with the
/// limit: worker threads, bench scene sizes and accuracy sampling, and the
/// weld tolerance (a negative one welded everything, a tiny one made the
/// weld quadratic and overflowed its cell keys).
#[test]
fn absurd_numbers_are_refused_with_the_limit() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    for (args, says) in [
        (
            &["--threads", "1000000", "inspect", "meshes/box.obj"][..],
            "[0, 1024]",
        ),
        (&["bench", "--scene", "tet61"], "2 ≤ N ≤ 60"),
        (&["bench", "--scene", "cloth100000"], "3 ≤ N ≤ 1000"),
        (
            &["bench", "--accuracy", "--steps", "18446744073709551615"],
            "[1, 1000]",
        ),
        (
            &["bench", "--accuracy", "--max-iterations", "2000000000"],
            "[1, 10000]",
        ),
        (&["inspect", "meshes/sphere.obj", "--weld=-1"], "[0, 0.1]"),
        (
            &["inspect", "meshes/sphere.obj", "--weld", "NaN"],
            "[0, 0.1]",
        ),
        (
            &["tetrahedralize", "meshes/box.obj", "--resolution", "256"],
            "256 is not in [2, 128]",
        ),
        // A negative number reaches the check (clap's tip to write `-- -5`
        // was wrong).
        (
            &["tetrahedralize", "meshes/box.obj", "--resolution", "-3"],
            "-3 is not in [2, 128]",
        ),
        (
            &["bake", "presets/denim.toml", "--frames", "-5", "--out", "x"],
            "-5 is not in [0, 1000000]",
        ),
        (
            &["bake", "presets/denim.toml", "--every", "-1", "--out", "x"],
            "-1 is not in [0, 1000000]",
        ),
        // Past i128 is still a whole number out of range.
        (
            &[
                "bench",
                "--frames",
                "1000000000000000000000000000000000000000",
            ],
            "1000000000000000000000000000000000000000 is not in [1, 1000000]",
        ),
        // -0 is 0 (it was "-0 is not in [0, 1000000]"); a fraction is not
        // a count.
        (&["bench", "--frames", "-0"], ": 0 is not in [1, 1000000]"),
        // (0 ran as 1, QA.)
        (
            &["bench", "--accuracy", "--every", "0"],
            ": 0 is not in [1, 10000]",
        ),
        (
            &[
                "bake",
                "presets/denim.toml",
                "--every",
                "-1.5",
                "--out",
                "x",
            ],
            "'-1.5' is not a whole number",
        ),
        // A bake of 1e11 frames wrote until the disk filled; a bench of 0
        // frames printed NaN times.
        (
            &[
                "bake",
                "presets/denim.toml",
                "--frames",
                "99999999999",
                "--out",
                "x",
            ],
            "[0, 1000000]",
        ),
        (&["bench", "--frames", "0"], "[1, 1000000]"),
        (&["bench", "--accuracy", "--every", "1000000"], "[1, 10000]"),
        (
            &["inspect", "presets/denim.toml", "--weld", "0.01"],
            "--weld applies to OBJ files",
        ),
        // Refused before the work, naming the directory.
        (
            &["tetrahedralize", "meshes/box.obj", "-o", "tests"],
            "tests: is a directory; name the file to write in it",
        ),
        // Options of the other mode are refused, not ignored.
        (&["bench", "--every", "5"], "--accuracy"),
        (&["bench", "--max-iterations", "5"], "--accuracy"),
        // With a scene clap let them through, ignored.
        (
            &["bench", "--scene", "cloth16", "--steps", "3"],
            "--steps measures accuracy: it needs --accuracy",
        ),
        (
            &["bench", "--accuracy", "--frames", "5"],
            "cannot be used with",
        ),
        // `gui --frames 1000001` ran until killed; 0 played ten frames.
        #[cfg(feature = "gui")]
        (&["gui", "--frames", "1000001"], "[1, 1000000]"),
        #[cfg(feature = "gui")]
        (&["gui", "--frames", "0"], "[1, 1000000]"),
    ] {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // The smallest weld tolerances still run, and weld no more than exact
    // duplicates.
    for weld in ["0", "1e-300"] {
        let out = run(&["inspect", "--json", "meshes/sphere.obj", "--weld", weld]);
        assert!(
            out.status.success(),
            "{weld}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A mesh error inside a preset error is said once (the error chain used to
/// repeat it: `mesh.obj: empty.obj: the file is empty: empty.obj: the file
/// is empty`), and a device is refused before reading (`/dev/zero` read
/// until memory ran out).
#[test]
fn mesh_errors_are_said_once_and_devices_refused() {
    let dir = scratch_dir("cli-empty");
    std::fs::write(dir.join("empty.obj"), "").unwrap();
    let preset = dir.join("empty.toml");
    std::fs::write(
        &preset,
        "version = 1\n[mesh]\nobj = \"empty.obj\"\n[material]\ndensity = 1.0\n",
    )
    .unwrap();
    let run = |file: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
            .arg("inspect")
            .arg(file)
            .output()
            .unwrap()
    };
    let out = run(&preset);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.matches("the file is empty").count(), 1, "{stderr}");
    assert!(stderr.contains("empty.toml:3: mesh.obj: "), "{stderr}");
    #[cfg(unix)]
    {
        let out = run(std::path::Path::new("/dev/zero"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("not a regular file"), "{stderr}");
    }
    let out = softbody(&["inspect", "meshes"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("meshes: cannot read the file: it is a directory"),
        "{stderr}"
    );
}

/// `bake` of an OBJ says it takes a preset (it read the mesh as TOML and
/// reported "invalid TOML" on its first line), and an `--out` that is a file
/// is bad input, said before the build (it said "File exists", then exit 1
/// with "cannot write: not a directory"), the file left as it was.
#[test]
fn bake_names_what_is_wrong_with_its_input_and_output() {
    let out = softbody(&["bake", "meshes/box.obj", "--frames", "2", "--out", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("meshes/box.obj: bake takes a preset"), "{err}");
    let dir = scratch_dir("cli-out");
    let file = dir.join("afile");
    std::fs::write(&file, "mine").unwrap();
    let path = file.to_str().unwrap();
    let out = softbody(&["bake", "presets/denim.toml", "--frames", "2", "--out", path]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("afile: --out names no directory: ") && err.contains("afile is a file"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // A device is no directory either (it said "File exists").
    #[cfg(unix)]
    {
        let out = softbody(&["bake", "presets/denim.toml", "--out", "/dev/null"]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("/dev/null is not a directory"), "{err}");
        // Nor is a link to nothing, below or at the end of the path (it
        // said "cannot write: File exists").
        let link = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &link).unwrap();
        for out in [link.clone(), link.join("frames")] {
            let out = softbody(&["bake", "presets/denim.toml", "--out", out.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(2));
            let err = String::from_utf8(out.stderr).unwrap();
            assert!(
                err.contains("dangling is a symbolic link to ")
                    && err.contains("leads to no directory"),
                "{err}"
            );
        }
        assert!(!dir.join("nowhere").exists());
    }
    // A directory that cannot be made says so (it said "cannot write").
    #[cfg(target_os = "linux")]
    {
        let out = softbody(&["bake", "presets/denim.toml", "--out", "/proc/softbody-test"]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains("/proc/softbody-test: cannot make the output directory: "),
            "{err}"
        );
    }
}

/// A bake that blows up says it stopped, before why (QA: "0 frames in
/// 0.01 s, 1 OBJ file" read as a success), and a body started deep in the
/// ground is told to move, not to shorten its steps.
#[test]
fn a_bake_started_inside_the_ground_says_it_stopped_and_why() {
    let dir = scratch_dir("cli-inside");
    let preset = dir.join("sunk.toml");
    let mesh = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj");
    std::fs::write(
        &preset,
        format!(
            "version = 1\n[mesh]\nobj = {:?}\n[material]\ndensity = 100.0\n\
             weights = {{ structural = 1000.0, shear = 1000.0, bending = 10.0 }}\n[sim]\n\
             colliders = [{{ type = \"ground\", height = 3.0, friction = 0.5 }}]\n",
            mesh.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let run = softbody(&[
        "bake",
        preset.to_str().unwrap(),
        "--frames",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(1));
    let (stdout, stderr) = (
        String::from_utf8(run.stdout).unwrap(),
        String::from_utf8(run.stderr).unwrap(),
    );
    assert!(
        stdout.contains("sunk.toml: stopped after 0 of 5 frames in "),
        "{stdout}"
    );
    assert!(stderr.contains("inside sim.colliders[0]"), "{stderr}");
    assert!(stderr.contains("move the body or the collider"), "{stderr}");
    assert!(!stderr.contains("nothing doing work"), "{stderr}");
}

/// `softbody tui` without a terminal says it needs one (raw mode failed
/// with "No such device or address (os error 6)").
/// A screenshot path that cannot be written is refused before the editor
/// opens (no display needed): a `.jpg` used to play every frame, then fail
/// with the file of that name emptied.
#[cfg(feature = "gui")]
#[test]
fn screenshot_paths_are_checked_before_anything_runs() {
    let dir = scratch_dir("cli-shot");
    let jpg = dir.join("keep.jpg");
    std::fs::write(&jpg, "mine").unwrap();
    let missing = dir.join("no-such-dir").join("shot.png");
    for (path, says) in [(&jpg, "only PNG is written"), (&missing, "does not exist")] {
        let out = softbody(&[
            "gui",
            "presets/hanging_cloth.toml",
            "--screenshot",
            path.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&jpg).unwrap(), "mine");
}

#[cfg(feature = "tui")]
#[test]
fn the_terminal_ui_without_a_terminal_says_so() {
    let out = softbody(&["tui", "presets/denim.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("needs a terminal"), "{err}");
    // A terminal that cannot move its cursor is told so first.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
        .args(["tui", "presets/denim.toml"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TERM", "dumb")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("TERM is `dumb`"), "{err}");
}

/// More threads than the machine has CPUs are not started: the command says
/// so and runs on one per CPU (1,024 made a small cloth's bake 25× slower),
/// the work still split for the threads asked for (their frames).
#[test]
fn threads_beyond_the_cpus_are_capped_with_a_note() {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if cpus >= 1024 {
        return;
    }
    let out = softbody_ok(&[
        "--threads",
        "1024",
        "bench",
        "--scene",
        "tet4",
        "--frames",
        "1",
        "--warmup",
        "0",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // (A tet body's split keeps a buffer of its size a part: at most 64.)
    assert_eq!(v["threads"], softbody::solver::MAX_PARTS);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "--threads 1024 is more than the {cpus} logical CPUs here: {cpus} run the work, \
             split for 64 (the frames of --threads 1024 anywhere)"
        )),
        "{err}"
    );
}

/// `softbody FILE` opens the file as plain `softbody` would open the
/// default scene (here, with no display and no terminal, the terminal UI
/// says what it needs); a word that is neither a file nor a subcommand is
/// bad input, a subcommand's typo named as such.
#[cfg(feature = "tui")]
#[test]
fn a_file_without_a_subcommand_is_opened() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_softbody"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .output()
            .unwrap()
    };
    let out = run(&["presets/denim.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("needs a terminal"), "{err}");
    let out = run(&["bak"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`bak` is neither a file nor a subcommand; did you mean `softbody bake`?"),
        "{err}"
    );
    // With arguments after it too (QA: "unexpected argument
    // 'meshes/box.obj' found"), the global option before it or not.
    for args in [
        &["inspct", "meshes/box.obj"][..],
        &["--threads", "2", "inspct", "meshes/box.obj", "--json"],
    ] {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(
                "`inspct` is neither a file nor a subcommand; did you mean `softbody inspect`?"
            ),
            "{err}"
        );
    }
    // An existing file with a stray argument, and a subcommand's mistyped
    // option, keep clap's own words.
    let out = run(&["presets/denim.toml", "extra"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unexpected argument 'extra'"), "{err}");
    let out = run(&["inspect", "presets/denim.toml", "--jsn"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unexpected argument '--jsn'"), "{err}");
    assert!(!err.contains("neither a file nor a subcommand"), "{err}");
    let out = run(&["zzzzzz"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("(see `softbody --help`)"), "{err}");
    // A missing file is said before what the front end would need.
    let out = run(&["presets/no_such.toml"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("presets/no_such.toml: no such file"), "{err}");
}

/// `inspect` of a preset lists what its build warns of, as the editor and
/// the terminal UI say on opening it: here a body 173 m across.
#[test]
fn inspecting_a_preset_lists_its_warnings() {
    let dir = scratch_dir("cli-inspect-warnings");
    std::fs::write(dir.join("cube.obj"), cube_obj([0.0; 3], 0)).unwrap();
    let preset = dir.join("big.toml");
    std::fs::write(
        &preset,
        "version = 1\n[mesh]\nobj = \"cube.obj\"\n[build]\nscale = 100.0\n[material]\ndensity = 0.2\n",
    )
    .unwrap();
    let text = softbody_ok(&["inspect", preset.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(
            "  warnings:\n    - the body is 173.2 m across at a scale of 100 m per file unit"
        ),
        "{text}"
    );
    let json = softbody_ok(&["inspect", preset.to_str().unwrap(), "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let warnings = value["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{value}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("the body is 173.2 m across")
    );
}

/// A signal the process was started ignoring (`nohup`, a script's
/// background job) stays ignored by a command that takes no stop requests
/// (the editor, `inspect`, `bench`): blocked in every thread and taken by
/// one with `sigwait`, it ended the process by its default action (review).
/// One not ignored still ends it.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_ignored_at_the_start_stays_ignored() {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_softbody"));
    command
        .args(["bench", "--scene", "cloth30", "--frames", "1000000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = command.spawn().unwrap();
    let waits = |pid| {
        common::threads_of(pid)
            .iter()
            .any(|(name, _)| name == "signals")
    };
    let started = std::time::Instant::now();
    while !waits(child.id()) {
        assert!(
            started.elapsed().as_secs() < 60,
            "no thread takes the signals"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let pid = child.id().to_string();
    let send = |name: &str| {
        let kill = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap();
        assert!(kill.success());
    };
    send("HUP");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "an ignored SIGHUP ended it"
    );
    send("TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
}
