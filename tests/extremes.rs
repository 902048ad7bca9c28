//! Extremes: the smallest meshes, every vertex pinned or none, zero-length
//! springs, collapsed and inverted tets in the input, absurd parameters.
//! Each either simulates soundly or is refused with a clear error.

use std::path::Path;

use softbody::mesh::{self, ImportOptions, TetMesh, TetMeshError, ValidateOptions, Vec3, tet_io};
use softbody::model::{Model, Pins, Spring, Springs, Weights};
use softbody::solver::{SimParams, Solver, State};

fn finite(state: &State) -> bool {
    state
        .positions
        .iter()
        .chain(&state.velocities)
        .all(|p| p.iter().all(|c| c.is_finite()))
}

/// Steps `frames` frames without damping, checking every state is finite.
fn run(model: &Model, frames: usize) -> State {
    let params = SimParams {
        damping: 0.0,
        ..SimParams::default()
    };
    let mut solver = Solver::new(model, &params).unwrap();
    let mut state = State::at_rest(model);
    for _ in 0..frames {
        solver.step(&mut state).unwrap();
        assert!(finite(&state));
    }
    state
}

/// How far implicit Euler at 60 Hz, undamped, falls from rest in `frames`
/// frames: `g h² (1 + 2 + … + frames)`.
fn free_fall(frames: usize) -> f64 {
    let h = 1.0 / 60.0;
    9.8 * h * h * (frames * (frames + 1) / 2) as f64
}

fn surface(obj: &str) -> mesh::SurfaceMesh {
    let path = Path::new("extreme.obj");
    let (raw, _) = mesh::import_obj_bytes(obj.as_bytes(), path, &ImportOptions::default()).unwrap();
    mesh::validate(&raw, path, &ValidateOptions::default())
        .unwrap()
        .0
}

fn signed_volume(p: [Vec3; 4]) -> f64 {
    (p[1] - p[0]).cross(&(p[2] - p[0])).dot(&(p[3] - p[0])) / 6.0
}

fn one_tet() -> TetMesh {
    TetMesh::new(
        vec![Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()],
        vec![[0, 1, 2, 3]],
    )
    .unwrap()
}

#[test]
fn one_triangle_falls_freely_and_keeps_its_shape() {
    let s = surface("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    let model = Model::from_surface(&s, 0.1, Weights::default());
    assert_eq!(model.springs.structural.len(), 3);
    assert!(model.springs.bending.is_empty());
    let state = run(&model, 60);
    // One second of free fall, exactly as implicit Euler falls:
    // g h² (1 + 2 + … + 60). The edges kept their length.
    for (p, r) in state.positions.iter().zip(&model.rest) {
        assert!((p.y - r.y + free_fall(60)).abs() < 1e-9, "{p} from {r}");
    }
    for s in &model.springs.structural {
        let length = (state.positions[s.a as usize] - state.positions[s.b as usize]).norm();
        assert!((length - s.rest).abs() < 1e-9);
    }
}

#[test]
fn one_tet_falls_freely_and_keeps_its_shape() {
    let model = Model::from_tet_mesh(&one_tet(), 1000.0, Weights::default(), false);
    let state = run(&model, 60);
    let volume = signed_volume([0, 1, 2, 3].map(|v| state.positions[v]));
    assert!((volume.abs() - 1.0 / 6.0).abs() < 1e-9);
    for (p, r) in state.positions.iter().zip(&model.rest) {
        assert!((p.y - r.y + free_fall(60)).abs() < 1e-9, "{p} from {r}");
    }
}

#[test]
fn every_vertex_pinned_holds_still() {
    let mut model = Model::from_tet_mesh(&one_tet(), 1000.0, Weights::default(), false);
    model.pins = Pins::hard(0..4);
    let state = run(&model, 10);
    assert_eq!(state.positions, model.rest);
}

#[test]
fn zero_length_springs_stay_finite() {
    // Two vertices at the same place joined by a spring of rest length 0,
    // and a spring of positive rest length between coincident points.
    let s = surface("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    let mut model = Model::from_surface(&s, 0.1, Weights::default());
    model.rest.push(Vec3::zeros());
    model.masses.push(0.01);
    model.springs = Springs {
        structural: vec![
            Spring {
                a: 0,
                b: 3,
                rest: 0.0,
            },
            Spring {
                a: 1,
                b: 2,
                rest: 2f64.sqrt(),
            },
            Spring {
                a: 0,
                b: 3,
                rest: 0.5,
            },
        ],
        ..model.springs
    };
    model.pins = Pins::hard([1]);
    run(&model, 120);
}

#[test]
fn collapsed_tets_are_refused_and_inverted_ones_turned() {
    let x = vec![
        Vec3::zeros(),
        Vec3::x(),
        Vec3::y(),
        Vec3::z(),
        Vec3::new(0.5, 0.5, 0.0),
    ];
    // Flat: four points in z = 0.
    assert!(matches!(
        TetMesh::new(x.clone(), vec![[0, 1, 2, 4]]),
        Err(TetMeshError::Degenerate(0))
    ));
    // A repeated vertex.
    assert!(matches!(
        TetMesh::new(x.clone(), vec![[0, 1, 2, 3], [0, 0, 2, 3]]),
        Err(TetMeshError::Degenerate(1))
    ));
    // Inverted (negative orientation): accepted, turned the right way.
    let inverted = TetMesh::new(x, vec![[0, 2, 1, 3]]).unwrap();
    let corners = inverted.tets()[0].map(|v| inverted.positions()[v as usize]);
    assert!(signed_volume(corners) > 0.0);
    // The same through a file names the file, the tet and what is wrong.
    let node = b"5 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n4 0.5 0.5 0\n";
    let ele = b"1 4 0\n0 0 1 2 4\n";
    let err = tet_io::parse_tetgen(node, ele, Path::new("flat.node")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("flat") && message.contains("degenerate"),
        "{message}"
    );
}

#[test]
fn extreme_weights_and_time_steps_stay_finite_or_are_reported() {
    let s = surface("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n");
    for weight in [1e-6, 1.0, 1e9] {
        for dt in [1e-5, 0.1] {
            let mut model = Model::from_surface(&s, 0.1, Weights::default());
            model.weights.structural = weight;
            model.weights.bending = weight;
            model.pins = Pins::hard([0]);
            let params = SimParams {
                dt,
                ..SimParams::default()
            };
            let mut solver = Solver::new(&model, &params).unwrap();
            let mut state = State::at_rest(&model);
            for _ in 0..30 {
                match solver.step(&mut state) {
                    Ok(_) => assert!(finite(&state), "w {weight}, dt {dt}"),
                    // Detected and reported, the state left at the last good frame.
                    Err(e) => {
                        assert!(finite(&state), "w {weight}, dt {dt}: {e}");
                        break;
                    }
                }
            }
        }
    }
}

/// The process's peak resident memory (MiB), from `/proc/self/status`.
fn peak_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// A million triangles through import, validation, springs, the solver and
/// a few frames. Slow in debug: run by hand with
/// `cargo test --release --test extremes -- --ignored --nocapture`.
#[test]
#[ignore = "a million triangles: run in release by hand"]
fn a_million_triangles_import_build_and_step() {
    // A 708 × 708 grid of vertices: 2 × 707² = 999,698 triangles.
    let n = 708;
    let mut obj = String::with_capacity(n * n * 40);
    for j in 0..n {
        for i in 0..n {
            obj.push_str(&format!(
                "v {} {} 0\n",
                i as f64 / n as f64,
                j as f64 / n as f64
            ));
        }
    }
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let v = j * n + i + 1;
            obj.push_str(&format!(
                "f {} {} {}\nf {} {} {}\n",
                v,
                v + 1,
                v + n + 1,
                v,
                v + n + 1,
                v + n
            ));
        }
    }
    let start = std::time::Instant::now();
    let s = surface(&obj);
    assert_eq!(s.triangles().len(), 2 * (n - 1) * (n - 1));
    let import = start.elapsed();
    let mut model = Model::from_surface(&s, 0.1, Weights::default());
    model.pins = Pins::hard(((n * (n - 1)) as u32..(n * n) as u32).collect::<Vec<_>>());
    let state = run(&model, 3);
    assert!(finite(&state));
    println!(
        "1M triangles: import + validate {:.2} s, model + 3 frames {:.2} s, peak {:.0} MiB",
        import.as_secs_f64(),
        (start.elapsed() - import).as_secs_f64(),
        peak_mib().unwrap_or(f64::NAN)
    );
}
