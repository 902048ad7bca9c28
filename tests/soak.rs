//! Soak: long random sequences of session commands — play, step, pins on
//! random selections, weights over 1e-6…1e9, time steps 1e-5…0.1, grab and
//! drag, undo/redo, save/load — never panic, never leave a non-finite
//! position, catch blow-ups (paused, reported), keep the preset valid and
//! the memory bounded.

use std::path::Path;

use proptest::prelude::*;
use softbody::command::{Command, Param, WeightKind};
use softbody::mesh::Vec3;
use softbody::preset::{GridSpec, MeshSource, Preset};
use softbody::session::{Applied, Session};

mod common;
use common::scratch_dir;

/// Side of the soak grid (small, so 10,000 commands run in seconds).
const N: usize = 6;
const VERTICES: u32 = (N * N) as u32;
/// Commands per case; × [`CASES`] = 10,000.
const COMMANDS: usize = 1000;
const CASES: u32 = 10;
/// Undo steps kept in the soak (small, to reach the cap often).
const UNDO_LIMIT: usize = 20;

/// What a random command is made from.
#[derive(Clone, Debug)]
enum Op {
    Play,
    Pause,
    Tick,
    Step(usize),
    Reset,
    Weight(WeightKind, f64),
    Density(f64),
    Dt(f64),
    Iterations(usize),
    Substeps(usize),
    Damping(f64),
    Gravity(f64),
    PinHard(Vec<u32>),
    PinSoft(Vec<u32>),
    Unpin(Vec<u32>),
    Grab(u32, [f64; 3]),
    Drag([f64; 3]),
    Release,
    Undo,
    Redo,
    Save,
    Load,
}

/// Log-uniform in `[lo, hi]`.
fn log_range(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (lo.ln()..hi.ln()).prop_map(f64::exp)
}

fn vertices() -> impl Strategy<Value = Vec<u32>> {
    // Sometimes beyond the model: the session must refuse, not panic.
    prop::collection::vec(0..VERTICES + 2, 0..8)
}

fn point() -> impl Strategy<Value = [f64; 3]> {
    [-3.0..3.0f64, -3.0..3.0f64, -3.0..3.0f64]
}

fn op() -> impl Strategy<Value = Op> {
    let kind = prop::sample::select(vec![
        WeightKind::Structural,
        WeightKind::Shear,
        WeightKind::Bending,
        WeightKind::Attachment,
    ]);
    prop_oneof![
        2 => Just(Op::Play),
        1 => Just(Op::Pause),
        6 => Just(Op::Tick),
        3 => (1..4usize).prop_map(Op::Step),
        1 => Just(Op::Reset),
        3 => (kind, prop_oneof![log_range(1e-6, 1e9), Just(0.0)]).prop_map(|(k, w)| Op::Weight(k, w)),
        1 => log_range(1e-3, 1e3).prop_map(Op::Density),
        2 => log_range(1e-5, 0.1).prop_map(Op::Dt),
        1 => (1..30usize).prop_map(Op::Iterations),
        1 => (1..4usize).prop_map(Op::Substeps),
        1 => (0.0..1.0f64).prop_map(Op::Damping),
        1 => (-100.0..100.0f64).prop_map(Op::Gravity),
        // Absurd gravity: the runaway detector must catch what follows.
        1 => (log_range(1e6, 1e12), any::<bool>())
            .prop_map(|(g, up)| Op::Gravity(if up { g } else { -g })),
        2 => vertices().prop_map(Op::PinHard),
        2 => vertices().prop_map(Op::PinSoft),
        2 => vertices().prop_map(Op::Unpin),
        2 => (0..VERTICES + 1, point()).prop_map(|(v, p)| Op::Grab(v, p)),
        3 => point().prop_map(Op::Drag),
        1 => Just(Op::Release),
        2 => Just(Op::Undo),
        1 => Just(Op::Redo),
        1 => Just(Op::Save),
        1 => Just(Op::Load),
    ]
}

/// The command for `op`; `None` for a tick (what a front end's frame does).
fn command(op: &Op, file: &Path) -> Option<Command> {
    let v3 = |p: &[f64; 3]| Vec3::new(p[0], p[1], p[2]);
    Some(match op {
        Op::Tick => return None,
        Op::Play => Command::Play,
        Op::Pause => Command::Pause,
        Op::Step(n) => Command::Step(*n),
        Op::Reset => Command::Reset,
        Op::Weight(k, w) => Command::SetWeight(*k, *w),
        Op::Density(d) => Command::SetDensity(*d),
        Op::Dt(dt) => Command::SetParam(Param::Dt(*dt)),
        Op::Iterations(n) => Command::SetParam(Param::Iterations(*n)),
        Op::Substeps(n) => Command::SetParam(Param::Substeps(*n)),
        Op::Damping(d) => Command::SetParam(Param::Damping(*d)),
        Op::Gravity(g) => Command::SetParam(Param::Gravity(Vec3::new(0.0, *g, 0.0))),
        Op::PinHard(v) => Command::PinHard(v.clone()),
        Op::PinSoft(v) => Command::PinSoft(v.clone()),
        Op::Unpin(v) => Command::Unpin(v.clone()),
        Op::Grab(v, p) => Command::Grab {
            vertex: *v,
            target: v3(p),
        },
        Op::Drag(p) => Command::Drag { target: v3(p) },
        Op::Release => Command::Release,
        Op::Undo => Command::Undo,
        Op::Redo => Command::Redo,
        Op::Save => Command::Save(Some(file.to_owned())),
        Op::Load => Command::Load(file.to_owned()),
    })
}

fn small_cloth() -> Preset {
    Preset {
        mesh: MeshSource::Grid(GridSpec {
            n: N,
            width: 1.0,
            horizontal: false,
        }),
        ..Preset::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        // Shrinking 1000-command runs is slow and the log says enough.
        max_shrink_iters: 50,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_command_sequences_keep_the_session_sound(
        ops in prop::collection::vec(op(), COMMANDS),
        case in 0u64..u64::MAX,
    ) {
        let dir = scratch_dir(&format!("soak-{case}"));
        let file = dir.join("soak.toml");
        let mut session = Session::new(small_cloth(), None).unwrap();
        session.set_undo_limit(UNDO_LIMIT);
        for (i, op) in ops.iter().enumerate() {
            let before = session.state().positions.clone();
            // Load without a saved file is an error like any other: the
            // session must stay as it was.
            let preset_before = session.preset().clone();
            let result = match command(op, &file) {
                Some(command) => session.apply(command),
                None => session.tick(),
            };
            match &result {
                Ok(Applied::BlewUp { .. }) => {
                    // Caught: paused at the last good frame, reported.
                    prop_assert!(!session.is_playing(), "#{i} {op:?}: still playing after a blow-up");
                    prop_assert!(session.warning().is_some(), "#{i} {op:?}: no warning");
                }
                Ok(_) => {}
                Err(_) => {
                    if !matches!(op, Op::Load | Op::Save) {
                        // A refused command changes nothing.
                        prop_assert_eq!(session.preset(), &preset_before, "#{} {:?}", i, op);
                        prop_assert_eq!(&session.state().positions, &before, "#{} {:?}", i, op);
                    }
                }
            }
            prop_assert!(
                session.state().positions.iter().all(|p| p.iter().all(|c| c.is_finite())),
                "#{i} {op:?}: a non-finite position"
            );
            prop_assert!(session.state().velocities.iter().all(|v| v.iter().all(|c| c.is_finite())));
            prop_assert!(session.preset().validate().is_ok(), "#{i} {op:?}: invalid preset");
            prop_assert!(session.undo_len() <= UNDO_LIMIT);
            prop_assert!(session.history().frames().len() <= session.history().capacity());
            prop_assert_eq!(session.state().positions.len(), VERTICES as usize);
        }
        // Whatever happened, the preset still saves and loads back equal
        // (the file with the count of the model numbered pins are of), and
        // opens as it was.
        let end = dir.join("end.toml");
        session.apply(Command::Save(Some(end.clone()))).unwrap();
        let mut loaded = Preset::load(&end).unwrap();
        let numbered = session.preset().pins.has_indices();
        prop_assert_eq!(loaded.pins.model_vertices, numbered.then_some(VERTICES as usize));
        loaded.pins.model_vertices = None;
        prop_assert_eq!(&loaded, session.preset());
        prop_assert!(Session::open(&end).is_ok());
    }
}
