//! `softbody bake` end to end: every shipped preset bakes; the OBJ sequence
//! reads back (tobj) with the model's vertex count and frame 0 at the rest
//! pose; `energy.csv` has a header and a row per frame; Ctrl-C stops cleanly.

use std::path::{Path, PathBuf};
use std::process::Command;

use softbody::preset::Preset;

mod common;

use common::{scratch_path, softbody};

/// An OBJ file read by tobj (as Blender's importer would read the
/// sequence: one object of triangles): its positions (in tobj's order of
/// first use) and triangles over them.
fn read_obj(path: &Path) -> (Vec<[f64; 3]>, Vec<[usize; 3]>) {
    let (models, _) = tobj::load_obj(path, &tobj::LoadOptions::default()).unwrap();
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
    (p, t)
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
    for preset_path in presets {
        let stem = preset_path
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .to_string();
        let out = scratch_path(&format!("bake-{stem}"));
        let o = softbody(&[
            "bake",
            preset_path.to_str().unwrap(),
            "--frames",
            "120",
            "--every",
            "40",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            o.status.success(),
            "{stem}: {}",
            String::from_utf8_lossy(&o.stderr)
        );

        // The model the preset builds, for counts and the rest pose.
        let built = Preset::load(&preset_path)
            .unwrap()
            .build(&preset_path)
            .unwrap();
        let mut rest = Vec::new();
        built.model.render_positions(&built.model.rest, &mut rest);
        let triangles = built.model.render_triangles();
        for frame in [0, 40, 80, 120] {
            let file = out.join(format!("{stem}_{frame:04}.obj"));
            let (positions, tris) = read_obj(&file);
            assert_eq!(positions.len(), rest.len(), "{stem} frame {frame}");
            assert_eq!(tris.len(), triangles.len(), "{stem} frame {frame}");
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
        let csv = std::fs::read_to_string(out.join("energy.csv")).unwrap();
        let mut lines = csv.lines();
        let header = lines.next().unwrap();
        assert!(
            header.starts_with("frame,time,kinetic,gravitational,"),
            "{header}"
        );
        let columns = header.split(',').count();
        let rows: Vec<&str> = lines.collect();
        assert_eq!(rows.len(), 120, "{stem}");
        for (k, row) in rows.iter().enumerate() {
            let values: Vec<f64> = row.split(',').map(|v| v.parse().unwrap()).collect();
            assert_eq!(values.len(), columns);
            assert_eq!(values[0], (k + 1) as f64);
            assert!(values.iter().all(|v| v.is_finite()), "{stem} row {k}");
        }
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["frames"], 120);
        assert_eq!(summary["objs_written"], 4);
        assert!(summary["stopped"].is_null());
        std::fs::remove_dir_all(&out).unwrap();
    }
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
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("preset.toml"));
    assert!(!out.exists(), "nothing written for bad input");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_cleanly_with_what_was_written_intact() {
    let out = scratch_path("bake-interrupt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_softbody"))
        .args([
            "bake",
            "presets/hanging_cloth.toml",
            "--frames",
            "1000000",
            "--out",
        ])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until it is well under way, then interrupt it.
    let started = std::time::Instant::now();
    while !out.join("hanging_cloth_0020.obj").exists() {
        assert!(started.elapsed().as_secs() < 60, "the bake did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let frames = summary["frames"].as_u64().unwrap() as usize;
    assert!(
        summary["stopped"]
            .as_str()
            .unwrap()
            .starts_with("interrupted")
    );
    assert!(frames >= 20);
    // Every frame simulated has its CSV row and its complete OBJ.
    let csv = std::fs::read_to_string(out.join("energy.csv")).unwrap();
    assert_eq!(csv.lines().count(), frames + 1);
    for frame in 0..=frames {
        let (positions, _) = read_obj(&out.join(format!("hanging_cloth_{frame:04}.obj")));
        assert_eq!(positions.len(), 900, "frame {frame}");
    }
    assert!(
        !out.join(format!("hanging_cloth_{:04}.obj", frames + 1))
            .exists()
    );
    std::fs::remove_dir_all(&out).unwrap();
}
