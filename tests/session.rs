//! Session: commands do the least work that is correct (refactor, rebuild,
//! nothing), rebuilds keep the motion continuous, undo/redo restores
//! presets, blow-ups pause, load/save round trip, grab/drag stays out of the
//! preset.

use std::path::{Path, PathBuf};

use softbody::command::{Command, Param, WeightKind};
use softbody::mesh::Vec3;
use softbody::preset::{GridSpec, MeshSource, Preset, Selector, View};
use softbody::session::{Applied, Session, SessionError};
use softbody::solver::SimParams;

mod common;
use common::{DUPLICATED_FACE_OBJ, cube_obj, scratch_dir};

/// Side of the test grid.
const N: u32 = 10;

/// The default hanging cloth on a small grid.
fn small_cloth() -> Preset {
    Preset {
        mesh: MeshSource::Grid(GridSpec {
            n: N as usize,
            width: 1.0,
            horizontal: false,
        }),
        ..Preset::default()
    }
}

fn session() -> Session {
    Session::new(small_cloth(), None).unwrap()
}

/// The middle vertex of the bottom row.
fn bottom_middle() -> u32 {
    (N - 1) * N + N / 2
}

fn apply(session: &mut Session, command: Command) -> Applied {
    session
        .apply(command.clone())
        .unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

fn max_jump(a: &[Vec3], b: &[Vec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max)
}

/// Weights, density and `dt` refactorise on the same analysis; iterations
/// only set a parameter.
#[test]
fn weight_change_refactors_not_rebuilds() {
    let mut s = session();
    let before = s.solver().factor_stats();
    assert_eq!(before.refactors, 0);
    assert_eq!(
        apply(&mut s, Command::SetWeight(WeightKind::Structural, 2000.0)),
        Applied::Refactored
    );
    let after = s.solver().factor_stats();
    assert_eq!(after.refactors, 1);
    assert_eq!(after.analyse_ms, before.analyse_ms, "no new analysis");
    assert_eq!(s.solver().model().weights.structural, 2000.0);
    assert_eq!(s.preset().material.weights.structural, 2000.0);

    assert_eq!(apply(&mut s, Command::SetDensity(0.3)), Applied::Refactored);
    let fresh = s.preset().build(Path::new("x.toml")).unwrap();
    assert_eq!(s.solver().model().masses, fresh.model.masses);
    assert_eq!(
        apply(&mut s, Command::SetParam(Param::Dt(0.01))),
        Applied::Refactored
    );
    assert_eq!(s.solver().factor_stats().refactors, 3);

    assert_eq!(
        apply(&mut s, Command::SetParam(Param::Iterations(5))),
        Applied::Updated
    );
    assert_eq!(
        apply(&mut s, Command::SetParam(Param::Damping(0.1))),
        Applied::Updated
    );
    assert_eq!(s.solver().factor_stats().refactors, 3);
    assert_eq!(s.solver().params().iterations, 5);
    // The same value again changes nothing and leaves no undo step.
    let undo = s.undo_len();
    assert_eq!(
        apply(&mut s, Command::SetParam(Param::Iterations(5))),
        Applied::Nothing
    );
    assert_eq!(s.undo_len(), undo);
}

/// A hard pin rebuilds; the command itself moves nothing and the next frame
/// moves no more than a frame of the run without it.
#[test]
fn pin_rebuilds_and_keeps_positions_continuous() {
    let mut pinned = session();
    let mut reference = session();
    for s in [&mut pinned, &mut reference] {
        assert_eq!(apply(s, Command::Step(20)), Applied::Stepped(20));
    }
    let before = pinned.state().clone();
    let v = bottom_middle();
    assert_eq!(
        apply(&mut pinned, Command::PinHard(vec![v])),
        Applied::Rebuilt
    );
    assert_eq!(pinned.solver().factor_stats().refactors, 0, "a new system");
    assert!(pinned.model().pins.is_hard(v));
    assert_eq!(pinned.state(), &before, "the rebuild keeps the state");

    apply(&mut pinned, Command::Step(1));
    apply(&mut reference, Command::Step(1));
    let jump = max_jump(&before.positions, &pinned.state().positions);
    let frame = max_jump(&before.positions, &reference.state().positions);
    assert!(
        jump <= 2.0 * frame,
        "jump {jump} vs a frame's motion {frame}"
    );
    assert_eq!(
        pinned.state().positions[v as usize],
        before.positions[v as usize],
        "the new pin holds its vertex where it was"
    );

    // Unpinning part of a rule keeps the rule with an exception.
    let before = pinned.state().clone();
    assert_eq!(
        apply(&mut pinned, Command::Unpin(vec![0])),
        Applied::Rebuilt
    );
    assert_eq!(pinned.state(), &before);
    assert_eq!(
        pinned.preset().pins.hard,
        vec![
            Selector::Except {
                of: Box::new(Selector::TopCorners),
                indices: vec![0],
            },
            Selector::Indices(vec![v]),
        ]
    );
    assert_eq!(pinned.model().pins.hard_vertices(), &[N - 1, v]);
    // Pinning it again lifts the exception.
    apply(&mut pinned, Command::PinHard(vec![0]));
    assert_eq!(
        pinned.preset().pins.hard,
        vec![Selector::TopCorners, Selector::Indices(vec![v])]
    );
    // Unpinning all of a rule drops it.
    apply(&mut pinned, Command::Unpin(vec![0, N - 1, v]));
    assert!(pinned.preset().pins.hard.is_empty());
}

/// Soft pins only add to the diagonal: pinning or unpinning one, or moving
/// its target, is no rebuild.
#[test]
fn soft_pins_refactor_and_targets_move_without_factorising() {
    let mut s = session();
    apply(&mut s, Command::Step(5));
    let v = bottom_middle();
    let before = s.state().clone();
    assert_eq!(
        apply(&mut s, Command::PinSoft(vec![v])),
        Applied::Refactored
    );
    assert_eq!(s.state(), &before);
    assert_eq!(s.model().pins.soft.len(), 1);
    // Soft-pinning a hard-pinned corner moves it from hard to soft.
    assert_eq!(apply(&mut s, Command::PinSoft(vec![0])), Applied::Rebuilt);
    assert!(!s.model().pins.is_hard(0));
    assert_eq!(s.model().pins.soft.len(), 2);

    let refactors = s.solver().factor_stats().refactors;
    let target = Vec3::new(0.2, -1.0, 0.1);
    let preset = s.preset().clone();
    assert_eq!(
        apply(&mut s, Command::MoveSoftPinTarget { vertex: v, target }),
        Applied::Updated
    );
    assert_eq!(s.solver().factor_stats().refactors, refactors);
    assert_eq!(s.preset(), &preset, "targets are runtime state");
    let solver_pin = s.solver().model().pins.soft.iter().find(|a| a.vertex == v);
    assert_eq!(solver_pin.map(|a| a.target), Some(target));
    // The moved target survives a weight change.
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 5.0));
    let solver_pin = s.solver().model().pins.soft.iter().find(|a| a.vertex == v);
    assert_eq!(solver_pin.map(|a| a.target), Some(target));
    assert!(matches!(
        s.apply(Command::MoveSoftPinTarget { vertex: 1, target }),
        Err(SessionError::NotSoftPinned(1))
    ));

    assert_eq!(apply(&mut s, Command::Unpin(vec![v])), Applied::Refactored);
    assert!(s.solver().model().pins.soft.iter().all(|a| a.vertex != v));
}

/// Undo walks back through every preset exactly, with the model of each;
/// redo walks forward again.
#[test]
fn undo_redo_restores_identical_presets_and_models() {
    let mut s = session();
    let commands = [
        Command::SetWeight(WeightKind::Shear, 250.0),
        Command::SetDensity(0.4),
        Command::PinHard(vec![bottom_middle()]),
        Command::PinSoft(vec![5]),
        Command::Unpin(vec![0]),
        Command::SetParam(Param::Dt(0.02)),
        Command::SetParam(Param::Gravity(Vec3::new(0.0, -5.0, 0.0))),
    ];
    let mut presets = vec![s.preset().clone()];
    for c in commands {
        apply(&mut s, c);
        apply(&mut s, Command::Step(2));
        presets.push(s.preset().clone());
    }
    assert!(s.is_dirty());
    assert_eq!(s.undo_len(), presets.len() - 1);
    let check = |s: &Session, expected: &Preset| {
        assert_eq!(s.preset(), expected);
        let fresh = expected.build(Path::new("x.toml")).unwrap();
        assert_eq!(s.model().pins, fresh.model.pins);
        assert_eq!(s.model().masses, fresh.model.masses);
        assert_eq!(s.model().weights, fresh.model.weights);
        assert_eq!(s.solver().model().pins, fresh.model.pins);
        assert_eq!(s.solver().model().masses, fresh.model.masses);
        assert_eq!(s.solver().params(), &fresh.params);
    };
    for expected in presets.iter().rev().skip(1) {
        apply(&mut s, Command::Undo);
        check(&s, expected);
    }
    assert!(!s.is_dirty(), "back at the opened preset");
    assert_eq!(apply(&mut s, Command::Undo), Applied::Nothing);
    for expected in presets.iter().skip(1) {
        apply(&mut s, Command::Redo);
        check(&s, expected);
    }
    assert_eq!(apply(&mut s, Command::Redo), Applied::Nothing);
    // A new change clears the redo stack.
    apply(&mut s, Command::Undo);
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 1.0));
    assert_eq!(s.redo_len(), 0);
}

/// The undo stack keeps the newest changes only.
#[test]
fn undo_history_is_bounded() {
    let mut s = session();
    s.set_undo_limit(3);
    for k in 1..=5 {
        apply(&mut s, Command::SetWeight(WeightKind::Bending, k as f64));
    }
    assert_eq!(s.undo_len(), 3);
    for expected in [4.0, 3.0, 2.0] {
        apply(&mut s, Command::Undo);
        assert_eq!(s.preset().material.weights.bending, expected);
    }
    assert_eq!(apply(&mut s, Command::Undo), Applied::Nothing);
    assert_eq!(s.preset().material.weights.bending, 2.0, "1.0 was dropped");
}

/// Play and pause touch neither the solver nor the state; ticks step only
/// while playing and fill the history.
#[test]
fn play_pause_do_nothing_to_the_solver() {
    let mut s = session();
    let stats = s.solver().factor_stats();
    let state = s.state().clone();
    assert_eq!(s.tick().unwrap(), Applied::Nothing);
    assert_eq!(apply(&mut s, Command::Play), Applied::Nothing);
    assert_eq!(s.solver().factor_stats(), stats);
    assert_eq!(s.state(), &state);
    assert!(s.is_playing());
    for _ in 0..3 {
        assert_eq!(s.tick().unwrap(), Applied::Stepped(1));
    }
    assert_eq!(apply(&mut s, Command::TogglePlay), Applied::Nothing);
    assert!(!s.is_playing());
    let state = s.state().clone();
    assert_eq!(s.tick().unwrap(), Applied::Nothing);
    assert_eq!(s.state(), &state);
    assert_eq!(s.solver().factor_stats(), stats);

    let history = s.history();
    assert_eq!(history.frames().len(), 4, "the start and 3 frames");
    assert_eq!(history.last().unwrap().frame, 3);
    assert_eq!(history.objective().len(), s.preset().sim.iterations + 1);
    assert_eq!(apply(&mut s, Command::Reset), Applied::Reset);
    assert_eq!(s.state().frame, 0);
    assert_eq!(s.history().frames().len(), 1);
}

/// A diverging scene pauses at the last good frame with a warning instead
/// of an error or garbage.
#[test]
fn blow_up_pauses_at_the_last_good_frame() {
    let mut s = session();
    apply(&mut s, Command::Step(3));
    apply(
        &mut s,
        Command::SetParam(Param::Gravity(Vec3::new(0.0, -1.0e12, 0.0))),
    );
    apply(&mut s, Command::Play);
    let good = s.state().clone();
    match s.tick().unwrap() {
        Applied::BlewUp { frames: 0, .. } => {}
        other => panic!("expected a blow-up, got {other:?}"),
    }
    assert!(!s.is_playing());
    assert!(s.warning().is_some());
    // The last good frame, without Anderson's carried pairs (the step that
    // blew up made its own over them; the next step starts afresh).
    assert!(!good.secants.is_empty());
    assert!(s.state().secants.is_empty());
    let mut without = good.clone();
    without.secants = s.state().secants.clone();
    assert_eq!(s.state(), &without);
    assert!(
        s.state()
            .positions
            .iter()
            .all(|x| x.iter().all(|c| c.is_finite()))
    );
    // Undoing the gravity recovers the scene; the warning stays until a
    // frame steps (it stayed until Play).
    apply(&mut s, Command::Undo);
    assert!(s.warning().is_some());
    assert_eq!(apply(&mut s, Command::Step(2)), Applied::Stepped(2));
    assert!(s.warning().is_none());
}

/// Saving writes the preset (with an `except` selector) and clears the
/// dirty flag; loading it back gives an equal preset and a fresh history.
#[test]
fn load_and_save_through_the_session() {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/hanging_cloth.toml");
    let mut s = Session::open(&shipped).unwrap();
    assert!(!s.is_dirty());
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 7.5));
    apply(&mut s, Command::Unpin(vec![0]));
    assert!(s.is_dirty());
    let dir = scratch_dir("session-save");
    let file = dir.join("saved.toml");
    assert_eq!(
        apply(&mut s, Command::Save(Some(file.clone()))),
        Applied::Saved(file.clone())
    );
    assert!(!s.is_dirty());
    assert_eq!(s.path(), Some(file.as_path()));
    // (With the count of the model its numbered pin is of.)
    let mut loaded = Preset::load(&file).unwrap();
    assert_eq!(loaded.pins.model_vertices, Some(900));
    loaded.pins.model_vertices = None;
    assert_eq!(&loaded, s.preset());

    // A directory, existing or spelled with a separator at the end, is
    // refused: `.toml` added to it used to save beside it, not in it.
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 2.5));
    let missing = PathBuf::from(format!("{}/", dir.join("new_folder").display()));
    for target in [dir.to_path_buf(), missing] {
        let refused = s.apply(Command::Save(Some(target.clone())));
        assert!(
            matches!(&refused, Err(SessionError::IsADirectory(p)) if *p == target),
            "{refused:?}"
        );
        assert!(s.is_dirty());
        assert_eq!(s.path(), Some(file.as_path()));
    }
    assert!(!dir.with_extension("toml").exists());
    assert!(!dir.join("new_folder.toml").exists());
    apply(&mut s, Command::Undo);

    let edited = s.preset().clone();
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 1.0));
    assert_eq!(
        apply(&mut s, Command::Load(file.clone())),
        Applied::Reloaded
    );
    assert_eq!(s.preset(), &edited);
    assert_eq!(s.undo_len(), 0);
    assert!(!s.is_dirty());
    assert_eq!(s.state().frame, 0);
    assert_eq!(apply(&mut s, Command::Save(None)), Applied::Saved(file));

    let mut untitled = session();
    assert!(matches!(
        untitled.apply(Command::Save(None)),
        Err(SessionError::NoPath)
    ));
    assert!(matches!(
        untitled.apply(Command::Load(PathBuf::from("/nonexistent/x.toml"))),
        Err(SessionError::Preset(_))
    ));
}

/// A grab pulls its vertex towards the target and leaves the preset and
/// the undo history alone; dragging does not factorise.
#[test]
fn grab_and_drag_move_the_vertex_without_touching_the_preset() {
    let mut s = session();
    apply(&mut s, Command::Step(10));
    let v = bottom_middle();
    let start = s.state().positions[v as usize];
    let target = start + Vec3::new(0.3, 0.0, 0.0);
    let preset = s.preset().clone();
    assert_eq!(
        apply(&mut s, Command::Grab { vertex: v, target }),
        Applied::Refactored
    );
    assert_eq!(s.grabbed(), Some(v));
    let refactors = s.solver().factor_stats().refactors;
    let target = start + Vec3::new(0.4, 0.0, 0.0);
    assert_eq!(apply(&mut s, Command::Drag { target }), Applied::Updated);
    assert_eq!(s.solver().factor_stats().refactors, refactors);
    apply(&mut s, Command::Step(30));
    let end = s.state().positions[v as usize];
    assert!(
        (end - target).norm() < 0.5 * (start - target).norm(),
        "{start} -> {end}, target {target}"
    );
    // A weight change keeps the grab: the vertex and its ring.
    apply(&mut s, Command::SetWeight(WeightKind::Structural, 1500.0));
    assert_eq!(s.model().ring(v).len(), 5, "2 beside, 1 above, 2 diagonal");
    let held = s.held().to_vec();
    assert_eq!(
        (held.len(), held[0]),
        (4, v),
        "the vertex and its 3 nearest"
    );
    let soft: Vec<u32> = s
        .solver()
        .model()
        .pins
        .soft
        .iter()
        .map(|a| a.vertex)
        .collect();
    assert_eq!(soft, held);
    assert_eq!(apply(&mut s, Command::Release), Applied::Refactored);
    assert!(s.solver().model().pins.soft.is_empty());
    assert_eq!(s.grabbed(), None);
    assert_eq!(apply(&mut s, Command::Release), Applied::Nothing);
    assert_eq!(apply(&mut s, Command::Drag { target }), Applied::Nothing);

    assert_eq!(s.preset().pins, preset.pins);
    assert_eq!(s.undo_len(), 1, "only the weight change");
    assert!(matches!(
        s.apply(Command::Grab { vertex: 0, target }),
        Err(SessionError::HardPinned(0))
    ));
    apply(&mut s, Command::SetWeight(WeightKind::Attachment, 0.0));
    assert!(matches!(
        s.apply(Command::Grab { vertex: v, target }),
        Err(SessionError::NoAttachmentWeight)
    ));
}

/// A grab holds its vertex's ring too, so it moves a heavy body: QA
/// dragged a 750 kg cow by one vertex, which the attachment weight pulled
/// out of the body as a spike while the body barely moved.
#[test]
fn a_grab_moves_a_heavy_body() {
    let mut s = Session::open(Path::new("presets/jelly.toml")).unwrap();
    apply(&mut s, Command::Step(30));
    let x = &s.state().positions;
    let top = (0..x.len() as u32)
        .max_by(|&a, &b| x[a as usize].y.total_cmp(&x[b as usize].y))
        .unwrap();
    let mass = s.model().masses.clone();
    let centre = |s: &Session| {
        let x = &s.state().positions;
        let m: f64 = mass.iter().sum();
        x.iter().zip(&mass).map(|(p, m)| p * *m).sum::<Vec3>() / m
    };
    let (start, before) = (x[top as usize], centre(&s));
    let target = start + Vec3::new(0.4, 0.0, 0.0);
    apply(
        &mut s,
        Command::Grab {
            vertex: top,
            target,
        },
    );
    apply(&mut s, Command::Step(60));
    let moved = centre(&s).x - before.x;
    let left = (s.state().positions[top as usize] - target).norm();
    // (4 cm and 13 cm; by one vertex, 1.8 cm and 22 cm.)
    assert!(moved > 0.03, "the body's centre moved {moved} m");
    assert!(left < 0.15, "the vertex is {left} m short of the target");
}

/// On a large model a grab and its release update the factor, as with one
/// vertex: the whole ring refactorised for seconds on the editor's UI
/// thread (review).
#[test]
fn a_grab_on_a_large_model_updates_the_factor() {
    let text = std::fs::read_to_string("presets/hanging_cloth.toml").unwrap();
    let preset =
        Preset::from_toml_str(&text.replace("n = 30,", "n = 100,"), Path::new("big.toml")).unwrap();
    let mut s = Session::new(preset, None).unwrap();
    let stats = s.solver().factor_stats();
    assert!(stats.factor_nnz >= 500_000, "{}", stats.factor_nnz);
    let v = 100 * 99 + 50;
    let target = s.state().positions[v as usize] + Vec3::new(0.1, 0.0, 0.0);
    apply(&mut s, Command::Grab { vertex: v, target });
    let stats = s.solver().factor_stats();
    assert_eq!(stats.updated_rows, 4);
    let refactors = stats.refactors;
    apply(&mut s, Command::Release);
    assert_eq!(s.solver().factor_stats().refactors, refactors);
}

/// Bad input is refused with a typed error and changes nothing.
#[test]
fn bad_commands_leave_the_session_unchanged() {
    let mut s = session();
    let preset = s.preset().clone();
    // The field and what is wrong, not the preset's file (which is not at
    // fault: it read `untitled.toml: material.weights.shear: …`).
    let negative = s.apply(Command::SetWeight(WeightKind::Shear, -1.0));
    assert!(matches!(negative, Err(SessionError::Rejected(_))));
    assert_eq!(
        negative.unwrap_err().to_string(),
        "material.weights.shear: must not be negative, found -1"
    );
    assert!(matches!(
        s.apply(Command::SetParam(Param::Dt(0.0))),
        Err(SessionError::Rejected(_))
    ));
    assert!(matches!(
        s.apply(Command::PinHard(vec![3, N * N])),
        Err(SessionError::VertexOutOfRange { vertex, vertices })
            if vertex == N * N && vertices == (N * N) as usize
    ));
    assert_eq!(s.preset(), &preset);
    assert_eq!(s.undo_len(), 0);
    assert_eq!(s.solver().model().weights, preset.material.weights);
}

/// Saving is offered at the preset's file; for an OBJ opened alone, beside
/// it under its name (it was `untitled.toml` in the working directory).
#[test]
fn saving_is_offered_beside_an_opened_mesh() {
    let obj = Session::new(Preset::for_obj(Path::new("meshes/box.obj")), None).unwrap();
    assert_eq!(obj.suggested_path(), PathBuf::from("meshes/box.toml"));
    // A generated cloth: under the preset's name.
    let grid = Session::new(Preset::default(), None).unwrap();
    assert_eq!(grid.suggested_path(), PathBuf::from("hanging_cloth.toml"));
    for (name, file) in [
        ("Mädchen's  Rock (2)", "mädchen_s_rock_2.toml"),
        ("?!", "untitled.toml"),
    ] {
        let preset = Preset {
            name: name.to_owned(),
            ..Preset::default()
        };
        let grid = Session::new(preset, None).unwrap();
        assert_eq!(grid.suggested_path(), PathBuf::from(file), "{name}");
    }
    let file = Session::open(Path::new("presets/denim.toml")).unwrap();
    assert_eq!(file.suggested_path(), PathBuf::from("presets/denim.toml"));
}

/// Saving as into another directory keeps the mesh: a relative mesh path
/// is rewritten to name the same file from there, and the saved preset
/// loads and builds the same model.
#[test]
fn save_as_elsewhere_keeps_the_mesh_reachable() {
    let dir = scratch_dir("session-save-as-mesh");
    let sessions = [
        // `../meshes/sphere.obj`, relative to `presets/`.
        Session::open(Path::new("presets/jelly.toml")).unwrap(),
        // `meshes/box.obj`, relative to the working directory.
        Session::new(Preset::for_obj(Path::new("meshes/box.obj")), None).unwrap(),
    ];
    for mut s in sessions {
        let vertices = s.model().vertex_count();
        let density = s.preset().material.density;
        apply(&mut s, Command::SetDensity(density * 2.0));
        // Into a directory that does not exist yet: made, then named from.
        let target = dir.join(format!("new{vertices}/elsewhere.toml"));
        apply(&mut s, Command::Save(Some(target.clone())));
        assert!(!s.is_dirty());
        // Undo after the save-as is a density change, not a new mesh.
        assert_eq!(apply(&mut s, Command::Undo), Applied::Refactored);
        apply(&mut s, Command::Redo);
        let saved = Preset::load(&target).unwrap();
        let (MeshSource::Obj(mesh) | MeshSource::TetFile(mesh)) = &saved.mesh else {
            panic!("an OBJ preset");
        };
        assert!(mesh.is_absolute(), "{}", mesh.display());
        let reopened = Session::open(&target).unwrap();
        assert_eq!(reopened.model().vertex_count(), vertices);
    }
}

/// Within one project directory, save as into a sibling directory keeps
/// the mesh path relative (`../meshes/box.obj`): the project can move or be
/// shared whole (the path used to become absolute unless the mesh lay under
/// the new directory).
#[test]
fn save_as_within_a_project_keeps_the_mesh_path_relative() {
    let project = scratch_dir("session-save-as-project");
    std::fs::create_dir_all(project.join("meshes")).unwrap();
    std::fs::create_dir_all(project.join("presets")).unwrap();
    std::fs::copy("meshes/box.obj", project.join("meshes/box.obj")).unwrap();
    let mut preset = Preset::for_obj(Path::new("../meshes/box.obj"));
    preset.name = "box".into();
    let first = project.join("presets/box.toml");
    preset.save(&first).unwrap();
    let mut s = Session::open(&first).unwrap();
    // (Into a directory that does not exist yet, as above.)
    let target = project.join("saved/box.toml");
    apply(&mut s, Command::Save(Some(target.clone())));
    let saved = Preset::load(&target).unwrap();
    assert_eq!(
        saved.mesh,
        MeshSource::Obj(PathBuf::from("../meshes/box.obj"))
    );
    // The whole project moved elsewhere still opens.
    let moved = scratch_dir("session-save-as-project-moved");
    std::fs::remove_dir(&moved).ok();
    std::fs::rename(&project, &moved).unwrap();
    let reopened = Session::open(&moved.join("saved/box.toml")).unwrap();
    assert_eq!(reopened.model().vertex_count(), 386);
}

/// A preset saved away from its project names its mesh absolutely; saved
/// back into the project, relatively again (it stayed absolute, and the
/// project no longer moved whole).
#[test]
fn save_as_back_into_the_project_makes_the_mesh_path_relative_again() {
    let project = scratch_dir("session-save-as-back");
    let away = scratch_dir("session-save-as-away");
    std::fs::create_dir_all(project.join("meshes")).unwrap();
    std::fs::create_dir_all(project.join("presets")).unwrap();
    std::fs::copy("meshes/box.obj", project.join("meshes/box.obj")).unwrap();
    let first = project.join("presets/box.toml");
    Preset::for_obj(Path::new("../meshes/box.obj"))
        .save(&first)
        .unwrap();
    let mut s = Session::open(&first).unwrap();
    let mesh_of = |path: &Path| match Preset::load(path).unwrap().mesh {
        MeshSource::Obj(mesh) => mesh,
        other => panic!("not an OBJ: {other:?}"),
    };
    // Two levels below a sibling of the project: three `..` away.
    let far = away.join("two/levels/box.toml");
    apply(&mut s, Command::Save(Some(far.clone())));
    assert!(mesh_of(&far).is_absolute());
    let back = project.join("presets/again.toml");
    apply(&mut s, Command::Save(Some(back.clone())));
    assert_eq!(mesh_of(&back), PathBuf::from("../meshes/box.obj"));
    assert_eq!(Session::open(&back).unwrap().model().vertex_count(), 386);
}

/// An absolute mesh path that stays absolute after a save as is kept as
/// written: a symbolic link in it (`/data/current/box.obj`, `current` a
/// link to this release's directory) is not resolved away.
#[cfg(unix)]
#[test]
fn save_as_keeps_an_absolute_mesh_path_as_written() {
    let data = scratch_dir("session-save-as-link");
    let away = scratch_dir("session-save-as-link-away");
    std::fs::create_dir_all(data.join("v3")).unwrap();
    std::fs::copy("meshes/box.obj", data.join("v3/box.obj")).unwrap();
    std::os::unix::fs::symlink(data.join("v3"), data.join("current")).unwrap();
    let written = data.join("current/box.obj");
    assert!(written.is_absolute());
    let first = data.join("box.toml");
    Preset::for_obj(&written).save(&first).unwrap();
    let mut s = Session::open(&first).unwrap();
    let far = away.join("two/levels/box.toml");
    apply(&mut s, Command::Save(Some(far.clone())));
    assert_eq!(Preset::load(&far).unwrap().mesh, MeshSource::Obj(written));
}

/// An OBJ that fails to import, opened on its own (no preset file), is
/// reported as the OBJ's error with its line: it read `untitled.toml:
/// mesh.obj: bad.obj:2: …`, naming a file that does not exist.
#[test]
fn a_bad_obj_opened_alone_names_only_itself() {
    let dir = scratch_dir("session-bad-obj");
    let bad = dir.join("bad.obj");
    std::fs::write(&bad, "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let expected = format!("{}:2:", bad.display());
    let Err(e) = Session::new(Preset::for_obj(&bad), None) else {
        panic!("a NaN coordinate imported");
    };
    let text = e.to_string();
    assert!(text.starts_with(&expected), "{text}");
    assert!(!text.contains("untitled"), "{text}");
    let mut s = session();
    let e = s.apply(Command::Load(bad.clone())).unwrap_err().to_string();
    assert!(e.starts_with(&expected) && !e.contains("untitled"), "{e}");
}

/// Saving keeps the comment lines the preset's file opens with (the shipped
/// presets explain their material there; a save replaced them with one
/// format line), on a save in place, a save as elsewhere and a second save
/// alike, without repeating them; a save in place changes the changed
/// value's line alone.
#[test]
fn saving_keeps_the_file_s_opening_comments() {
    let dir = scratch_dir("session-save-comments");
    let cotton = std::fs::read_to_string("presets/cotton.toml").unwrap();
    let header: Vec<&str> = cotton.lines().take_while(|l| l.starts_with('#')).collect();
    assert_eq!(header.len(), 10);
    let file = dir.join("cotton.toml");
    std::fs::write(&file, cotton.replace("../meshes", "meshes")).unwrap();
    std::fs::create_dir_all(dir.join("meshes")).unwrap();
    std::fs::copy("meshes/cloth_quad.obj", dir.join("meshes/cloth_quad.obj")).unwrap();
    let mut s = Session::open(&file).unwrap();
    apply(&mut s, Command::SetDensity(0.2));
    let opening = |path: &Path| -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .take_while(|l| l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let kept: Vec<String> = header.iter().map(|l| (*l).to_owned()).collect();
    apply(&mut s, Command::Save(None));
    assert_eq!(opening(&file), kept);
    assert_eq!(Preset::load(&file).unwrap().material.density, 0.2);
    // The rest of the file is as it was: the change is one line.
    let original = cotton.replace("../meshes", "meshes");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        original.replace("density = 0.15", "density = 0.2")
    );
    apply(&mut s, Command::Save(None));
    assert_eq!(opening(&file), kept, "saved twice");
    // Saved as another file, it is laid out as this one.
    let elsewhere = dir.join("copy.toml");
    apply(&mut s, Command::Save(Some(elsewhere.clone())));
    assert_eq!(opening(&elsewhere), kept);
    // An untitled preset has none to keep: a new file says what wrote it.
    let mut untitled = session();
    let fresh = dir.join("fresh.toml");
    apply(&mut untitled, Command::Save(Some(fresh.clone())));
    assert_eq!(
        opening(&fresh),
        ["# Softbody Studio preset (format version 1)"]
    );
}

/// The accuracy figure runs in the background and describes the scene it
/// measured: a preset change abandons a running measurement and forgets
/// the last one.
#[test]
fn accuracy_measurements_belong_to_the_scene_they_measured() {
    let mut session = Session::open(Path::new("presets/hanging_cloth.toml")).unwrap();
    session.apply(Command::Step(3)).unwrap();
    let wait = |session: &mut Session| {
        let start = std::time::Instant::now();
        loop {
            if let Some(result) = session.collect_accuracy() {
                return result.map(|a| a.error());
            }
            assert!(
                start.elapsed().as_secs() < 60,
                "the measurement never ended"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    assert!(session.collect_accuracy().is_none(), "nothing started");
    assert!(session.measure_accuracy());
    assert!(session.is_measuring());
    let error = wait(&mut session).unwrap();
    assert!(!session.is_measuring());
    assert_eq!(
        session.accuracy().map(|(f, a)| (f, a.error())),
        Some((3, error))
    );
    assert_eq!(session.state().frame, 3, "measuring does not step");
    // A cancelled measurement stops running and keeps the last figure; no
    // other starts until its thread has ended.
    assert_eq!(session.measuring_for(), None);
    assert!(!session.cancel_accuracy(), "nothing to cancel");
    assert!(session.measure_accuracy());
    assert!(session.measuring_for().is_some());
    assert!(session.cancel_accuracy());
    assert!(!session.is_measuring());
    assert_eq!(session.measuring_for(), None);
    assert!(session.collect_accuracy().is_none(), "nothing to take in");
    // A front end's "still stopping" line changes once it has stopped
    // (QA: it stayed 25 s after), and not before.
    let mut line = softbody::session::STILL_STOPPING.to_owned();
    let start = std::time::Instant::now();
    while session.is_stopping() {
        softbody::session::stopped_note(&mut line, &session);
        assert!(
            line == softbody::session::STILL_STOPPING || !session.is_stopping(),
            "{line}"
        );
        if session.measure_accuracy() {
            // The cancelled thread ended between the two calls: this new
            // one is cancelled and waited for instead.
            assert!(session.cancel_accuracy());
        }
        assert!(!session.is_measuring());
        assert!(start.elapsed().as_secs() < 60, "it never stopped");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    softbody::session::stopped_note(&mut line, &session);
    assert_eq!(line, softbody::session::STOPPED);
    assert_eq!(
        session.accuracy().map(|(f, a)| (f, a.error())),
        Some((3, error))
    );
    // Reset leaves no figure of a frame the motion no longer has.
    session.apply(Command::Reset).unwrap();
    assert!(
        session.accuracy().is_none(),
        "frame 3's figure after a reset"
    );
    session.apply(Command::Step(3)).unwrap();
    assert!(session.measure_accuracy());
    wait(&mut session).unwrap();

    session
        .apply(Command::SetWeight(WeightKind::Shear, 250.0))
        .unwrap();
    assert!(session.accuracy().is_none(), "the old figure is forgotten");
    assert!(session.measure_accuracy());
    session.apply(Command::Undo).unwrap();
    assert!(!session.is_measuring(), "the running one is abandoned");
    assert!(session.collect_accuracy().is_none());

    // At the most iterations a preset takes, the measurement (which tries
    // up to four times as many) stays within the solver's limit.
    session
        .apply(Command::SetParam(Param::Iterations(
            SimParams::MAX_ITERATIONS,
        )))
        .unwrap();
    // (Once the one abandoned above has stopped.)
    let start = std::time::Instant::now();
    while !session.measure_accuracy() {
        assert!(start.elapsed().as_secs() < 60, "it never stopped");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(wait(&mut session).is_ok());
}

/// Undo in the middle of a drag: the rest of the drag is an undo step of
/// its own, so undo after it goes back to where the first undo went (it
/// used to merge into the undone step and leave nothing to go back to).
#[test]
fn undo_mid_gesture_starts_a_new_step() {
    let mut s = session();
    let original = s.preset().clone();
    s.begin_gesture();
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 30.0));
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 40.0));
    apply(&mut s, Command::Undo);
    assert_eq!(s.preset(), &original);
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 50.0));
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 60.0));
    s.end_gesture();
    assert_eq!(s.undo_len(), 1);
    apply(&mut s, Command::Undo);
    assert_eq!(s.preset(), &original);
}

/// Pins set by vertex index follow the body when it is built another way:
/// a surface and a tet lattice share no numbering, so each pinned vertex
/// becomes the new model's vertex nearest its rest position (they used to
/// land on unrelated lattice vertices, and the way back was refused as out
/// of range). Undo restores the pins as they were.
#[test]
fn pins_by_index_stay_in_place_across_a_build_change() {
    use softbody::preset::{Build, BuildKind};
    let sphere = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
    let mut s = Session::new(Preset::for_obj(&sphere), None).unwrap();
    let top = |s: &Session| {
        let rest = &s.model().rest;
        rest.iter().map(|x| x.y).fold(f64::NEG_INFINITY, f64::max)
    };
    let cap = top(&s) - 0.15;
    let picked: Vec<u32> = (0..s.model().vertex_count() as u32)
        .filter(|&v| s.model().rest[v as usize].y > cap)
        .collect();
    assert!(picked.len() > 3);
    apply(&mut s, Command::PinHard(picked.clone()));
    // A rule that leaves out an index beyond the model is refused, as a
    // numbered pin beyond it is (it was taken for a vertex left alone, and
    // a mesh renumbered under it went unsaid); one within it is renumbered
    // with the others.
    let bottom = Selector::Box {
        min: Vec3::repeat(-1.0),
        max: Vec3::new(1.0, -0.45, 1.0),
    };
    let mut pins = s.preset().pins.clone();
    pins.soft = vec![Selector::Except {
        of: Box::new(bottom.clone()),
        indices: vec![1_000_000],
    }];
    let refused = s.apply(Command::SetPins(pins.clone()));
    assert!(
        matches!(refused, Err(SessionError::Rejected(_))),
        "{refused:?}"
    );
    let left_out = (0..s.model().vertex_count() as u32)
        .find(|&v| s.model().rest[v as usize].y < -0.45)
        .unwrap();
    pins.soft = vec![Selector::Except {
        of: Box::new(bottom),
        indices: vec![left_out],
    }];
    apply(&mut s, Command::SetPins(pins));
    let springs = s.preset().clone();
    let pinned_near_the_top = |s: &Session| {
        let hard = s.model().pins.hard_vertices();
        assert!(!hard.is_empty());
        let rest = &s.model().rest;
        assert!(
            hard.iter().all(|&v| rest[v as usize].y > cap - 0.1),
            "pins away from the top: {:?}",
            hard.iter().map(|&v| rest[v as usize].y).collect::<Vec<_>>()
        );
        hard.len()
    };
    let tets = Build {
        kind: BuildKind::Tets,
        resolution: Some(10),
        ..Build::default()
    };
    apply(&mut s, Command::SetBuild(tets));
    assert!(!s.model().tets.is_empty());
    pinned_near_the_top(&s);
    assert_eq!(
        s.undo_len(),
        3,
        "a step each for the pins, the rule and the build"
    );
    // Another resolution renumbers again.
    apply(
        &mut s,
        Command::SetBuild(Build {
            resolution: Some(14),
            ..tets
        }),
    );
    pinned_near_the_top(&s);
    // And back to springs: the same surface vertices or their neighbours.
    apply(&mut s, Command::SetBuild(Build::default()));
    assert!(s.model().tets.is_empty());
    assert!(pinned_near_the_top(&s) > 0);
    for _ in 0..3 {
        apply(&mut s, Command::Undo);
    }
    assert_eq!(s.preset(), &springs);
    assert_eq!(s.model().pins.hard_vertices(), &picked[..]);
}

/// A pinned region keeps its extent through coarser and finer builds: QA
/// box-selected a cow's feet at tet resolution 30 (1,268 pins), went to 15
/// and back, and had 261 pins left, the feet's solid red become scattered
/// dots (each pin had gone to its nearest vertex of the coarser lattice,
/// and those to theirs of the finer one).
#[test]
fn a_pinned_region_keeps_its_extent_through_another_resolution() {
    use softbody::preset::{Build, BuildKind};
    let sphere = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
    let mut preset = Preset::for_obj(&sphere);
    preset.build = Build {
        kind: BuildKind::Tets,
        resolution: Some(14),
        ..Build::default()
    };
    let mut s = Session::new(preset, None).unwrap();
    let cap = 0.25;
    let in_cap = |s: &Session| -> Vec<u32> {
        let rest = &s.model().rest;
        (0..rest.len() as u32)
            .filter(|&v| rest[v as usize].y > cap)
            .collect()
    };
    let picked = in_cap(&s);
    apply(&mut s, Command::PinHard(picked.clone()));
    let at = |s: &mut Session, resolution| {
        let build = Build {
            resolution: Some(resolution),
            ..s.preset().build
        };
        apply(s, Command::SetBuild(build));
        let pinned = s.model().pins.hard_vertices().to_vec();
        let wanted = in_cap(s);
        let missed = wanted.iter().filter(|v| !pinned.contains(v)).count();
        let beyond = pinned.iter().filter(|v| !wanted.contains(v)).count();
        (pinned.len(), wanted.len(), missed, beyond)
    };
    for resolution in [7, 14, 20, 7, 14] {
        let (pinned, wanted, missed, beyond) = at(&mut s, resolution);
        // Within a cell of the region's edge: a few in or out.
        assert!(
            missed * 5 <= wanted && beyond * 5 <= wanted,
            "resolution {resolution}: {pinned} pinned, {wanted} in the region, \
             {missed} of them not pinned, {beyond} pinned beyond it"
        );
        // Back where they were set, the pins are those set: each build
        // carries them from there, not from the last.
        if resolution == 14 {
            assert_eq!(s.model().pins.hard_vertices(), &picked[..]);
        }
    }
    // Pins set on another model are carried from there.
    at(&mut s, 7);
    let top = s
        .model()
        .rest
        .iter()
        .map(|x| x.y)
        .fold(f64::NEG_INFINITY, f64::max);
    let lone = (0..s.model().vertex_count() as u32)
        .find(|&v| s.model().rest[v as usize].y == top)
        .unwrap();
    apply(
        &mut s,
        Command::SetPins(softbody::preset::PinSpec::default()),
    );
    apply(&mut s, Command::PinHard(vec![lone]));
    at(&mut s, 14);
    let rest = &s.model().rest;
    let pinned: Vec<f64> = s
        .model()
        .pins
        .hard_vertices()
        .iter()
        .map(|&v| rest[v as usize].y)
        .collect();
    assert!(
        !pinned.is_empty() && pinned.iter().all(|&y| y > top - 0.15),
        "{pinned:?}"
    );
}

/// Pinning exactly an OBJ group's vertices (as the editor selects a group
/// by name) stores the group's name, not their indices: the preset reads as
/// what was picked, survives a re-export that renumbers the mesh, and needs
/// no renumbering when the body is built as tets. Other selections are
/// indices as before.
#[test]
fn pinning_an_obj_group_pins_it_by_name() {
    use softbody::preset::{Build, BuildKind};
    let boxed = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj");
    let mut s = Session::new(Preset::for_obj(&boxed), None).unwrap();
    let left = Selector::Group("left".to_owned());
    let vertices = s.built().select(&left).unwrap();
    assert_eq!(vertices.len(), 81);
    apply(&mut s, Command::PinHard(vertices.clone()));
    assert_eq!(s.preset().pins.hard, vec![left.clone()]);
    assert_eq!(s.model().pins.hard_vertices(), &vertices[..]);
    // Freeing one of them leaves the rule with an exception.
    apply(&mut s, Command::Unpin(vec![vertices[0]]));
    assert_eq!(
        s.preset().pins.hard,
        vec![Selector::Except {
            of: Box::new(left.clone()),
            indices: vec![vertices[0]],
        }]
    );
    // A group pinned beside a rule that pins some of it already (`top`
    // shares an edge with `left`) is kept by its name too.
    apply(&mut s, Command::PinHard(vec![vertices[0]]));
    let top = Selector::Group("top".to_owned());
    let top_vertices = s.built().select(&top).unwrap();
    assert!(top_vertices.iter().any(|v| vertices.contains(v)));
    apply(&mut s, Command::PinHard(top_vertices));
    assert_eq!(s.preset().pins.hard, vec![left.clone(), top]);
    apply(&mut s, Command::Undo);
    // A selection that is no group stays indices.
    let some = vec![vertices[0], vertices[1]];
    apply(&mut s, Command::PinSoft(some.clone()));
    assert_eq!(s.preset().pins.soft, vec![Selector::Indices(some)]);
    apply(&mut s, Command::SetPins(Default::default()));
    apply(&mut s, Command::PinHard(vertices));
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Tets,
            resolution: Some(8),
            ..Build::default()
        }),
    );
    assert_eq!(s.preset().pins.hard, vec![left]);
    let pinned = s.model().pins.hard_vertices();
    assert!(!pinned.is_empty());
    // The tets carrying the face: within a lattice cell (0.5 m / 8) of it.
    assert!(
        pinned
            .iter()
            .all(|&v| s.model().rest[v as usize].x < -0.25 + 0.0625)
    );
}

/// A density's unit changes with the build (kg/m² ↔ kg/m³), so switching
/// kinds takes the new kind's density: a sphere 1 m across built as tets
/// weighs what soft rubber that size does (it kept the cloth's 0.15, a body
/// of 0.08 kg, lighter than air), and back as springs the areal density
/// it had. Undo brings back the tuned density.
#[test]
fn a_build_change_takes_the_new_kind_s_density() {
    use softbody::preset::{Build, BuildKind};
    let sphere = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
    let mut s = Session::new(Preset::for_obj(&sphere), None).unwrap();
    apply(&mut s, Command::SetDensity(0.4));
    let tuned = s.preset().clone();
    let tets = Build {
        kind: BuildKind::Tets,
        resolution: Some(10),
        ..Build::default()
    };
    apply(&mut s, Command::SetBuild(tets));
    assert_eq!(s.preset().material.density, 1100.0);
    let ball = 1100.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.5f64.powi(3);
    let mass = s.model().total_mass();
    assert!(
        (mass - ball).abs() < 0.1 * ball,
        "{mass} kg for a 1 m soft-rubber ball of {ball} kg"
    );
    // Another resolution is the same kind: the density stays.
    apply(&mut s, Command::SetDensity(1050.0));
    apply(
        &mut s,
        Command::SetBuild(Build {
            resolution: Some(12),
            ..tets
        }),
    );
    assert_eq!(s.preset().material.density, 1050.0);
    // Back as springs, the cloth's density it had.
    apply(&mut s, Command::SetBuild(Build::default()));
    assert_eq!(s.preset().material.density, 0.4);
    for _ in 0..4 {
        apply(&mut s, Command::Undo);
    }
    assert_eq!(s.preset(), &tuned);
}

/// A one-click material replaces density, weights and limits but keeps the
/// attachment weight, which belongs to the pins and the grab (it used to
/// go back to the library's 1000).
#[test]
fn a_material_keeps_the_attachment_weight() {
    use softbody::preset::library;
    let mut s = session();
    apply(&mut s, Command::SetWeight(WeightKind::Attachment, 250.0));
    let denim = library::materials()
        .iter()
        .find(|m| m.name == "denim")
        .expect("denim in the library")
        .material;
    apply(&mut s, Command::SetMaterial(denim));
    let material = &s.preset().material;
    assert_eq!(material.weights.attachment, 250.0);
    assert_eq!(material.weights.structural, denim.weights.structural);
    assert_eq!(material.density, denim.density);
    assert_eq!(s.model().weights.attachment, 250.0);
}

/// A one-click material sets the weights of the model's kind and keeps the
/// other kind's, which a build of that kind takes back (QA: tets given soft
/// rubber, built as springs and given denim, were plain tets again when
/// built back).
#[test]
fn a_material_keeps_the_other_kind_s_weights() {
    use softbody::preset::library::materials;
    use softbody::preset::{Build, BuildKind};
    let named = |name: &str| materials().iter().find(|m| m.name == name).unwrap().clone();
    let (rubber, denim) = (named("soft_rubber"), named("denim"));
    let mut s = Session::open(Path::new("presets/jelly.toml")).unwrap();
    apply(&mut s, Command::SetMaterial(rubber.material));
    assert!(rubber.is_in(s.preset()));
    let tets = s.preset().build;
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Springs,
            ..tets
        }),
    );
    apply(&mut s, Command::SetMaterial(denim.material));
    assert!(denim.is_in(s.preset()));
    apply(&mut s, Command::SetBuild(tets));
    assert!(rubber.is_in(s.preset()), "{:?}", s.preset().material);
}

/// A build that fails on a mesh opened alone names the mesh's file, not a
/// preset file: there is none (the message began "untitled.toml: build:").
#[test]
fn a_failed_build_of_a_mesh_opened_alone_names_the_mesh_file() {
    use softbody::preset::{Build, BuildKind};
    let mut s = Session::new(Preset::for_obj(Path::new("meshes/cloth_tri.obj")), None).unwrap();
    let err = s
        .apply(Command::SetBuild(Build {
            kind: BuildKind::Tets,
            ..Build::default()
        }))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("meshes/cloth_tri.obj: ")
            && err.contains("flat")
            && !err.contains("untitled"),
        "{err}"
    );
}

/// A save over the preset's own file refuses to overwrite a change made to
/// it elsewhere since the session read or wrote it (an edit in another
/// program, another window): the file stays as changed. Saving anyway
/// overwrites it; after that, and after the session's own saves, a save
/// goes through; reopening takes the change in.
#[test]
fn a_save_over_a_file_changed_elsewhere_is_refused_until_confirmed() {
    let dir = scratch_dir("session-changed-on-disk");
    let file = dir.join("cloth.toml");
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/denim.toml");
    std::fs::copy(&shipped, &file).unwrap();
    let mut s = Session::open(&file).unwrap();
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 7.5));
    // Its own saves, and saves of nothing changed since, go through.
    assert_eq!(
        apply(&mut s, Command::Save(None)),
        Applied::Saved(file.clone())
    );
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 8.5));
    assert_eq!(
        apply(&mut s, Command::Save(None)),
        Applied::Saved(file.clone())
    );

    let theirs = std::fs::read_to_string(&file)
        .unwrap()
        .replace("density = 0.40", "density = 0.55  # heavier");
    assert!(theirs.contains("0.55"));
    std::fs::write(&file, &theirs).unwrap();
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 9.5));
    for save in [Command::Save(None), Command::Save(Some(file.clone()))] {
        let refused = s.apply(save);
        assert!(
            matches!(&refused, Err(SessionError::ChangedOnDisk(p)) if *p == file),
            "{refused:?}"
        );
        assert!(s.is_dirty());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
    }
    // Spelled another way, it is the same file.
    let dotted = dir.join(".").join("cloth.toml");
    assert!(matches!(
        s.apply(Command::Save(Some(dotted))),
        Err(SessionError::ChangedOnDisk(_))
    ));
    // Saved as another file: nothing of this one is overwritten.
    let other = dir.join("other.toml");
    assert_eq!(
        apply(&mut s, Command::Save(Some(other.clone()))),
        Applied::Saved(other.clone())
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);

    // Reopened, the change is in; anyway, it is overwritten.
    apply(&mut s, Command::Load(file.clone()));
    assert_eq!(s.preset().material.density, 0.55);
    std::fs::write(&file, theirs.replace("0.55", "0.6")).unwrap();
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 10.5));
    assert!(matches!(
        s.apply(Command::Save(None)),
        Err(SessionError::ChangedOnDisk(_))
    ));
    assert_eq!(
        apply(&mut s, Command::SaveAnyway(None)),
        Applied::Saved(file.clone())
    );
    let saved = Preset::load(&file).unwrap();
    assert_eq!(saved.material.weights.bending, 10.5);
    assert_eq!(saved.material.density, 0.55);
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 11.5));
    assert_eq!(apply(&mut s, Command::Save(None)), Applied::Saved(file));
}

/// A kept camera is rounded below a millionth of its distance: the
/// orbit's round-off (`5.551115123125783e-17` for 0) does not reach the
/// saved file.
#[test]
fn a_kept_camera_drops_the_orbits_round_off() {
    let mut s = session();
    s.keep_view(View {
        eye: Vec3::new(1.2000000000000002, 5.551115123125783e-17, 1.9),
        target: Vec3::new(-5.551115123125783e-17, -0.30000000000000004, 0.0),
        fov_deg: 45.00000000000001,
    });
    let view = s.preset().view.unwrap();
    assert_eq!(view.eye, Vec3::new(1.2, 0.0, 1.9));
    assert_eq!(view.target, Vec3::new(0.0, -0.3, 0.0));
    assert!(view.target.x.is_sign_positive(), "not -0.0");
    assert_eq!(view.fov_deg, 45.0);
}

/// Plain `softbody` opens a copy of the shipped hanging cloth, untitled: a
/// save asks where (offering the preset's name), so the shipped file is
/// not overwritten by Ctrl+S.
#[test]
fn the_default_scene_is_an_untitled_copy_of_the_shipped_preset() {
    let (mut s, from) = Session::open_or_default(None).unwrap();
    assert_eq!(
        from.as_deref(),
        Some(Path::new(softbody::session::DEFAULT_PRESET))
    );
    assert_eq!(s.path(), None);
    let shipped = Preset::load(Path::new(softbody::session::DEFAULT_PRESET)).unwrap();
    assert_eq!(s.preset(), &shipped);
    assert!(!s.is_dirty());
    apply(&mut s, Command::SetWeight(WeightKind::Bending, 7.5));
    assert!(matches!(
        s.apply(Command::Save(None)),
        Err(SessionError::NoPath)
    ));
    assert_eq!(s.suggested_path(), Path::new("hanging_cloth.toml"));
}

/// What the mesh's import repaired and what the tetrahedraliser guessed
/// reach the session (the front ends say it on opening and rebuilding; the
/// terminal UI said nothing): a duplicated face is dropped, a sleeve built
/// as tets is open.
#[test]
fn the_meshs_warnings_are_kept_for_the_front_ends() {
    let dir = scratch_dir("session-mesh-note");
    let file = dir.join("twice.obj");
    std::fs::write(&file, DUPLICATED_FACE_OBJ).unwrap();
    let (s, _) = Session::open_or_default(Some(&file)).unwrap();
    assert_eq!(
        s.mesh_note("").as_deref(),
        Some("the mesh: dropped 1 duplicate triangle")
    );
    let sleeve = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sleeve.obj");
    let (mut s, _) = Session::open_or_default(Some(&sleeve)).unwrap();
    assert_eq!(s.mesh_note(""), None, "open is fine for a cloth");
    apply(
        &mut s,
        Command::SetBuild(softbody::preset::Build {
            kind: softbody::preset::BuildKind::Tets,
            resolution: Some(8),
            ..softbody::preset::Build::default()
        }),
    );
    let note = s.mesh_note("").unwrap();
    assert!(
        note.starts_with("the mesh: the surface is open (64 boundary edges)"),
        "{note}"
    );
    // Two cubes overlapping: the surface passes through itself.
    let two = dir.join("two.obj");
    // (Crossing through the quads' diagonals.)
    std::fs::write(&two, cube_obj([0.0; 3], 0) + &cube_obj([0.5; 3], 8)).unwrap();
    let (s, _) = Session::open_or_default(Some(&two)).unwrap();
    let note = s.mesh_note("").unwrap();
    assert!(
        note.starts_with("the mesh: the surface passes through itself ("),
        "{note}"
    );
}

/// Another scale builds the body at its new size and resizes the scene
/// with it: a plane rule pins the same vertices, the ground and the camera
/// move with the body, index pins on tets meshed again stay on the same
/// points of the body, and one undo brings it all back.
#[test]
fn another_scale_resizes_the_scene_with_the_body() {
    use softbody::preset::{Build, BuildKind, PinSpec};
    use softbody::solver::Collider;
    let sphere = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
    let mut s = Session::new(Preset::for_obj(&sphere), None).unwrap();
    let tets = Build {
        kind: BuildKind::Tets,
        resolution: Some(6),
        ..Build::default()
    };
    apply(&mut s, Command::SetBuild(tets));
    let feet = Selector::extreme_plane(s.model(), false).unwrap();
    let side = s
        .model()
        .rest
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.x.total_cmp(&b.1.x))
        .map(|(i, _)| i as u32)
        .unwrap();
    let pins = PinSpec {
        hard: vec![feet],
        soft: vec![Selector::Indices(vec![side])],
        ..PinSpec::default()
    };
    apply(&mut s, Command::SetPins(pins));
    let ground = Collider::Ground {
        height: -0.6,
        friction: 0.5,
    };
    apply(&mut s, Command::SetParam(Param::Colliders(vec![ground])));
    let view = View {
        eye: Vec3::new(1.0, 2.0, 3.0),
        target: Vec3::new(0.0, -0.25, 0.0),
        fov_deg: 40.0,
    };
    s.keep_view(view);
    let before = s.preset().clone();
    let rest = s.model().rest.clone();
    let hard = s.model().pins.hard_vertices().to_vec();
    let undo = s.undo_len();

    let small = Build { scale: 0.1, ..tets };
    assert_eq!(apply(&mut s, Command::SetBuild(small)), Applied::Reloaded);
    assert_eq!(s.undo_len(), undo + 1, "one undo step");
    assert_eq!(s.preset().build.scale, 0.1);
    // Meshed again: the same lattice, its snapping to the surface within
    // round-off (which turns some of its choices: 0.2 % of the size).
    let new_rest = &s.model().rest;
    let size = |x: &[Vec3]| {
        let (lo, hi) = x.iter().fold(
            (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
            |(lo, hi), p| (lo.inf(p), hi.sup(p)),
        );
        hi - lo
    };
    assert!((size(&rest) * 0.1 - size(new_rest)).norm() < 1e-2 * 0.1);
    let new_hard = s.model().pins.hard_vertices();
    assert_eq!(new_hard.len(), hard.len());
    let lowest = |x: &[Vec3], pins: &[u32]| {
        pins.iter()
            .map(|&v| x[v as usize].y)
            .fold(f64::MIN, f64::max)
    };
    assert!((lowest(&rest, &hard) * 0.1 - lowest(new_rest, new_hard)).abs() < 1e-2 * 0.1);
    // The soft pin's vertex number follows its point of the body.
    let soft: Vec<u32> = s.model().pins.soft.iter().map(|a| a.vertex).collect();
    assert_eq!(soft.len(), 1);
    let moved = (new_rest[soft[0] as usize] - rest[side as usize] * 0.1).norm();
    assert!(moved < 0.1 / 6.0 / 4.0, "{moved} m from its point");
    assert_eq!(
        s.preset().sim.colliders,
        // (To 12 digits: -0.6 × 0.1 is -0.06000000000000001.)
        [Collider::Ground {
            height: -0.06,
            friction: 0.5
        }]
    );
    let resized = s.preset().view.unwrap();
    assert!((resized.eye - view.eye * 0.1).norm() < 1e-12);
    assert!((resized.target - view.target * 0.1).norm() < 1e-12);
    assert_eq!(resized.fov_deg, view.fov_deg);

    apply(&mut s, Command::Undo);
    assert_eq!(s.preset(), &before);
    assert_eq!(s.model().rest, rest);
}

/// Built as springs and back as tets, a body takes back its tets'
/// resolution and density (the jelly's 10 cells and 1050 kg/m³; it became
/// the default 30 cells, 20 times the vertices, and 1100 kg/m³), whatever
/// tet options the springs were asked for with (the editor's radio button
/// keeps them, a terminal UI key does not).
#[test]
fn springs_and_back_keep_the_tets_resolution_and_density() {
    use softbody::preset::{Build, BuildKind};
    let mut s = Session::open(Path::new("presets/jelly.toml")).unwrap();
    let tets = s.preset().build;
    assert_eq!((tets.kind, tets.resolution), (BuildKind::Tets, Some(10)));
    let (vertices, density) = (s.model().vertex_count(), s.preset().material.density);
    assert_eq!(density, 1050.0);
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Springs,
            ..tets
        }),
    );
    assert_eq!(s.preset().build.resolution, None);
    assert_eq!(s.preset().material.density, 0.15);
    apply(&mut s, Command::SetDensity(0.3));
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Tets,
            ..Build::default()
        }),
    );
    assert_eq!(s.preset().build, tets);
    assert_eq!(s.preset().material.density, density);
    assert_eq!(s.model().vertex_count(), vertices);
    // And the cloth's tuned density on the way back to springs.
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Springs,
            ..Build::default()
        }),
    );
    assert_eq!(s.preset().material.density, 0.3);
}

/// Tets built from an OBJ write their resolution out, the default too: pins
/// by vertex number are numbers of that lattice, and a saved file without
/// it would build another if the default changed or someone set it there
/// believing it was the default (QA pinned a cow's feet and got its neck).
#[test]
fn tets_from_an_obj_record_their_resolution() {
    use softbody::model::tetra::TetraOptions;
    use softbody::preset::{Build, BuildKind};
    let sphere = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
    let mut s = Session::new(Preset::for_obj(&sphere), None).unwrap();
    apply(
        &mut s,
        Command::SetBuild(Build {
            kind: BuildKind::Tets,
            ..Build::default()
        }),
    );
    let resolution = Some(TetraOptions::DEFAULT_RESOLUTION);
    assert_eq!(s.preset().build.resolution, resolution);
    let text = s.preset().to_toml_string().unwrap();
    assert!(text.contains("resolution = 30"), "{text}");
}

/// A save with pins by vertex number writes the model's vertex count, and a
/// model built with another count is refused with the line (the pins would
/// hold other vertices: QA set a cow's tet resolution by hand, and its
/// pinned feet became its neck); the same file opens as saved, the session
/// holds no count, and pins by rule write none.
#[test]
fn numbered_pins_are_refused_on_another_model() {
    use softbody::preset::{Build, BuildKind};
    let dir = scratch_dir("session-model-vertices");
    std::fs::copy("meshes/sphere.obj", dir.join("sphere.obj")).unwrap();
    let mut s = Session::new(Preset::for_obj(&dir.join("sphere.obj")), None).unwrap();
    let tets = Build {
        kind: BuildKind::Tets,
        resolution: Some(6),
        ..Build::default()
    };
    apply(&mut s, Command::SetBuild(tets));
    apply(&mut s, Command::PinHard(vec![0, 1]));
    let file = dir.join("ball.toml");
    apply(&mut s, Command::Save(Some(file.clone())));
    let vertices = s.model().vertex_count();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains(&format!("model_vertices = {vertices}")),
        "{text}"
    );
    assert_eq!(s.preset().pins.model_vertices, None);
    assert!(!s.is_dirty());
    // As saved: it opens, and its build may change (the pins move with it).
    let mut reopened = Session::open(&file).unwrap();
    assert_eq!(reopened.preset().pins.model_vertices, None);
    apply(
        &mut reopened,
        Command::SetBuild(Build {
            resolution: Some(8),
            ..tets
        }),
    );
    // Another resolution written by hand: refused, naming the line.
    std::fs::write(&file, text.replace("resolution = 6", "resolution = 8")).unwrap();
    let error = Session::open(&file).err().expect("refused").to_string();
    let line = text
        .lines()
        .position(|l| l.starts_with("model_vertices"))
        .unwrap()
        + 1;
    assert!(
        error.contains(&format!("ball.toml:{line}: pins.model_vertices: the pins' vertex numbers were saved for a model of {vertices} vertices")),
        "{error}"
    );
    // Pins by rule: no count.
    apply(
        &mut s,
        Command::SetPins(softbody::preset::PinSpec::default()),
    );
    apply(&mut s, Command::SaveAnyway(None));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("model_vertices"), "{text}");
}

/// A frame of another model (a front end that did not hand its simulation
/// thread this session) is handed back, not taken: taken, the editor drew
/// a cloth's frame over the jelly opened while it played, and crashed.
#[test]
fn a_frame_of_another_model_is_not_taken() {
    let mut session = Session::open(Path::new("presets/hanging_cloth.toml")).unwrap();
    let jelly = Session::open(Path::new("presets/jelly.toml")).unwrap();
    let foreign = jelly.state().clone();
    let before = session.state().clone();
    let report = softbody::solver::StepReport::default();
    let back = session.accept_frame(foreign.clone(), &report);
    assert_eq!(back.positions, foreign.positions);
    assert_eq!(session.state().positions, before.positions);
    assert_eq!(session.state().frame, before.frame);
    // One of its own is taken.
    let mut next = before.clone();
    next.frame += 1;
    session.accept_frame(next, &report);
    assert_eq!(session.state().frame, before.frame + 1);
}
