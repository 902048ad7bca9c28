//! Presets: TOML round trip, located error messages, migration, atomic
//! save, and every shipped preset loading, building and running.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use softbody::mesh::Vec3;
use softbody::model::{TetLimits, Weights};
use softbody::preset::{
    Build, BuildKind, Built, GridSpec, Material, MeshSource, PinSpec, Preset, PresetErrorKind,
    Selector, View, Written,
};
use softbody::solver::{Collider, SimParams, Solver, State};

mod common;
use common::scratch_dir;

fn presets_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("presets")
}

fn shipped() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(presets_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_shipped_preset_loads_builds_and_runs() {
    let files = shipped();
    let names: Vec<_> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "hanging_cloth",
        "silk",
        "cotton",
        "denim",
        "leather",
        "rubber_sheet",
        "jelly",
        "soft_rubber",
        "firm_rubber",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "missing {expected}.toml"
        );
    }
    for file in &files {
        let loaded = Preset::load_reporting(file).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.migrated_from, None, "{}", file.display());
        let preset = loaded.preset;
        assert!(!preset.name.is_empty(), "{}", file.display());
        let built = preset.build(file).unwrap_or_else(|e| panic!("{e}"));
        let summary = built.summary();
        assert!(
            summary.hard_pins + summary.soft_pins > 0,
            "{}",
            file.display()
        );
        let mut solver = Solver::new(&built.model, &built.params).unwrap();
        let mut state = State::at_rest(&built.model);
        let diagonal = extent(&built.model.rest).norm();
        for _ in 0..30 {
            solver
                .step(&mut state)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
        let moved = state
            .positions
            .iter()
            .zip(&built.model.rest)
            .map(|(x, r)| (x - r).norm())
            .fold(0.0, f64::max);
        assert!(
            moved.is_finite() && moved < diagonal,
            "{}: moved {moved}",
            file.display()
        );
        assert!(moved > 1e-4, "{}: nothing moved", file.display());
    }
}

/// The size of the box around `x`, along each axis.
fn extent(x: &[Vec3]) -> Vec3 {
    let (lo, hi) = x.iter().fold(
        (Vec3::repeat(f64::MAX), Vec3::repeat(f64::MIN)),
        |(lo, hi), p| (lo.inf(p), hi.sup(p)),
    );
    hi - lo
}

/// The shipped preset `file` built, its solver, and its body at rest.
fn at_rest(file: &str) -> (Built, Solver, State) {
    let path = presets_dir().join(file);
    let built = Preset::load(&path).unwrap().build(&path).unwrap();
    let solver = Solver::new(&built.model, &built.params).unwrap();
    let state = State::at_rest(&built.model);
    (built, solver, state)
}

#[test]
fn the_default_scene_is_the_hanging_cloth_preset() {
    let file = presets_dir().join("hanging_cloth.toml");
    assert_eq!(Preset::load(&file).unwrap(), Preset::default());
    let built = Preset::default().build(&file).unwrap();
    assert_eq!(built.model.pins.hard_vertices(), &[0, 29]);
    assert!(built.surface.is_none());
}

/// The bottom of a cloth hung from its top after `frames` frames.
fn hang(file: &str, frames: usize) -> f64 {
    let (_, mut solver, mut state) = at_rest(file);
    for _ in 0..frames {
        solver.step(&mut state).unwrap();
    }
    state.positions.iter().map(|x| x.y).fold(f64::MAX, f64::min)
}

/// The denim of the bake journey (`softbody bake presets/denim.toml`)
/// moves in three dimensions: hung upright in the plane of gravity it only
/// sagged in that plane, and its bake was 240 frames of a flat square (QA).
#[test]
fn the_denim_drapes_in_three_dimensions() {
    let (_, mut solver, mut state) = at_rest("denim.toml");
    // Its 240 frames: it fell from lying flat, and hangs with depth.
    for _ in 0..240 {
        solver.step(&mut state).unwrap();
    }
    let now = extent(&state.positions);
    assert!(now.y > 0.5, "it hangs {} m", now.y);
    assert!(now.z > 0.02, "its drape is {} m deep", now.z);
}

#[test]
fn stretchy_cloth_sags_more_than_stiff_cloth() {
    // Same grid and pins (the top edge): rubber stretches far more than silk.
    let silk = hang("silk.toml", 120);
    let rubber = hang("rubber_sheet.toml", 120);
    assert!(rubber < silk - 0.01, "rubber {rubber}, silk {silk}");
}

/// The jelly rests on the ground, softly pinned: it slumps and wobbles but
/// stays where it stands and loses energy. (While the ground only pushed
/// vertices out after each step, its bottom layer was crushed every step:
/// it slid 0.24 m in these 150 frames and its total energy rose by 230 J
/// after frame 60.)
#[test]
fn the_jelly_settles_where_it_stands() {
    let (built, mut solver, mut state) = at_rest("jelly.toml");
    let totals: Vec<f64> = (0..150)
        .map(|_| solver.step(&mut state).unwrap().energies.total())
        .collect();
    let masses = &built.model.masses;
    let mass: f64 = masses.iter().sum();
    let centre = state
        .positions
        .iter()
        .zip(masses)
        .fold(Vec3::zeros(), |c, (x, m)| c + x * *m)
        / mass;
    let drift = centre.x.hypot(centre.z);
    assert!(drift < 0.02, "the jelly moved {drift} m across the ground");
    let settled = totals[59];
    let highest = totals[60..].iter().copied().fold(f64::MIN, f64::max);
    assert!(
        highest <= settled,
        "energy rose from {settled} J (frame 60) to {highest} J"
    );
}

/// The surface a pin rule or a group covers stays exactly where it was on
/// a tet body: the rule pins the corners of the tets carrying it too. (Its
/// skin vertices ride on tets whose other corners the rule missed, and a
/// clamped face moved by 2.5 mm on the 0.5 m soft rubber cube.)
#[test]
fn a_pinned_surface_stays_put_on_a_tet_body() {
    let rule = presets_dir().join("soft_rubber.toml");
    let rule = Preset::load(&rule).unwrap().build(&rule).unwrap();
    let on_face = |x: &Vec3| (x.x + 0.25).abs() < 1e-9;
    let dir = scratch_dir("presets-pinned-skin");
    let file = dir.join("box.toml");
    std::fs::write(
        &file,
        format!(
            "version = 1\n[mesh]\nobj = {:?}\n[material]\ndensity = 1100.0\n",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj")
        ),
    )
    .unwrap();
    let group = text_with_group(&file, "left", "tets");
    for built in [rule, group] {
        let mut surface = Vec::new();
        built
            .model
            .render_positions(&built.model.rest, &mut surface);
        let held: Vec<usize> = (0..surface.len())
            .filter(|&v| on_face(&surface[v]))
            .collect();
        assert_eq!(held.len(), 81);
        let mut solver = Solver::new(&built.model, &built.params).unwrap();
        let mut state = State::at_rest(&built.model);
        for _ in 0..30 {
            solver.step(&mut state).unwrap();
        }
        let mut moved = Vec::new();
        built.model.render_positions(&state.positions, &mut moved);
        let sag = moved.iter().map(|x| x.y).fold(f64::MAX, f64::min);
        assert!(sag < -0.26, "the body sags: lowest {sag}");
        for v in held {
            assert!(
                (moved[v] - surface[v]).norm() < 1e-12,
                "surface vertex {v} moved {} m",
                (moved[v] - surface[v]).norm()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Round trip.

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        -1e6..1e6f64,
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
        Just(0.0),
        Just(-0.0),
    ]
}

fn vec3() -> impl Strategy<Value = Vec3> {
    (finite(), finite(), finite()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

fn selector() -> impl Strategy<Value = Selector> {
    prop_oneof![
        prop::collection::vec(any::<u32>(), 0..5).prop_map(Selector::Indices),
        "[a-z_ ]{0,8}".prop_map(Selector::Group),
        (vec3(), vec3(), finite()).prop_map(|(point, normal, distance)| Selector::Plane {
            point,
            normal,
            distance
        }),
        (vec3(), vec3()).prop_map(|(min, max)| Selector::Box { min, max }),
        Just(Selector::TopCorners),
        Just(Selector::TopEdge),
    ]
}

fn collider() -> impl Strategy<Value = Collider> {
    prop_oneof![
        (finite(), finite()).prop_map(|(height, friction)| Collider::Ground { height, friction }),
        (vec3(), finite(), finite()).prop_map(|(center, radius, friction)| Collider::Sphere {
            center,
            radius,
            friction
        }),
    ]
}

prop_compose! {
    fn weights()(w in prop::array::uniform7(finite())) -> Weights {
        Weights {
            structural: w[0], shear: w[1], bending: w[2], attachment: w[3],
            strain: w[4], strain_limit: w[5], volume: w[6],
        }
    }
}

prop_compose! {
    fn preset()(
        name in "[ -~]{0,12}",
        mesh in prop_oneof![
            (0..5000usize, finite(), any::<bool>())
                .prop_map(|(n, width, horizontal)| MeshSource::Grid(GridSpec { n, width, horizontal })),
            "[a-z/._é]{1,12}".prop_map(|p| MeshSource::Obj(p.into())),
            "[a-z/._]{1,12}".prop_map(|p| MeshSource::TetFile(p.into())),
        ],
        kind in prop_oneof![Just(BuildKind::Springs), Just(BuildKind::Tets)],
        resolution in prop::option::of(0..1000usize),
        (edge_springs, scale) in (any::<bool>(), finite()),
        density in finite(),
        weights in weights(),
        limits in prop::array::uniform4(finite()),
        hard in prop::collection::vec(selector(), 0..3),
        soft in prop::collection::vec(selector(), 0..3),
        model_vertices in prop::option::of(0..100_000usize),
        (dt, damping) in (finite(), finite()),
        (iterations, substeps) in (0..1000usize, 0..10usize),
        gravity in vec3(),
        colliders in prop::collection::vec(collider(), 0..3),
        (acceleration, extrapolate, tolerance) in (
            prop::sample::select(softbody::solver::Acceleration::ALL.to_vec()),
            prop::option::of(any::<bool>()),
            finite(),
        ),
        view in prop::option::of((vec3(), vec3(), finite())),
    ) -> Preset {
        Preset {
            version: 1,
            name,
            mesh,
            build: Build { kind, resolution, edge_springs, scale },
            material: Material {
                density,
                weights,
                limits: TetLimits {
                    strain_min: limits[0], strain_max: limits[1],
                    volume_min: limits[2], volume_max: limits[3],
                },
            },
            pins: PinSpec { hard, soft, model_vertices },
            sim: SimParams {
                dt, iterations, substeps, damping, gravity, colliders, acceleration, extrapolate,
                tolerance,
            },
            view: view.map(|(eye, target, fov_deg)| View { eye, target, fov_deg }),
        }
    }
}

proptest! {
    /// Any preset, valid or not, survives TOML exactly (bit for bit in
    /// every f64, since `PartialEq` on `-0.0` would not tell).
    #[test]
    fn toml_round_trip_is_exact(p in preset()) {
        let text = p.to_toml_string().unwrap();
        let back: Preset = toml::from_str(&text).unwrap();
        prop_assert_eq!(&back, &p);
        prop_assert_eq!(format!("{back:?}"), format!("{p:?}"));
        // Valid presets also pass the checked loader unchanged.
        if p.validate().is_ok() {
            prop_assert_eq!(Preset::from_toml_str(&text, Path::new("p.toml")).unwrap(), p);
        }
    }
}

/// Floats far from 1 are saved in exponent form, short decimals as they
/// are: `1e-300` was written as a 302-character literal (QA).
#[test]
fn far_floats_are_saved_short() {
    let mut preset = Preset::from_toml_str(HEADER, Path::new("p.toml")).unwrap();
    preset.material.weights.bending = 1e-300;
    preset.material.weights.shear = 2.5e-12;
    preset.material.weights.structural = 12345.678;
    preset.material.density = 0.0001;
    let text = preset.to_toml_string().unwrap();
    for expected in [
        "bending = 1e-300",
        "shear = 2.5e-12",
        "structural = 12345.678",
        "density = 0.0001",
    ] {
        assert!(text.contains(expected), "{expected} in\n{text}");
    }
    assert!(text.lines().all(|l| l.len() < 200), "{text}");
    assert_eq!(
        Preset::from_toml_str(&text, Path::new("p.toml")).unwrap(),
        preset
    );
}

// ---------------------------------------------------------------------------
// Errors.

const HEADER: &str =
    "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 0.2\n";

fn error(text: &str) -> String {
    match Preset::from_toml_str(text, Path::new("bad.toml")) {
        Ok(p) => match p.build(Path::new("bad.toml")) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    }
}

#[test]
fn each_invalid_preset_names_its_field_and_line() {
    let cases: &[(String, &str)] = &[
        (
            format!("{HEADER}[material.weights]\nbendng = 3.0\n"),
            "bad.toml:7: material.weights.bendng: unknown field `bendng`; did you mean `bending`?",
        ),
        (
            format!("{HEADER}[sim]\nitrations = 3\n"),
            "bad.toml:7: sim.itrations: unknown field `itrations`; did you mean `iterations`?",
        ),
        // Every unknown key of a table in one run, the first in the file
        // first (serde named one a run, in its own order: `bar` here).
        (
            format!("{HEADER}[sim]\nfoo = 1\ndt = 0.01\nbar = 2\nitrations = 3\n"),
            "bad.toml:7: sim.foo: unknown field `foo`; expected one of `dt`, `iterations`, \
             `substeps`, `damping`, `gravity`, `colliders`, `acceleration`, `extrapolate`, \
             `tolerance`; also unknown there: `bar` (line 9), `itrations` (line 10)",
        ),
        (
            format!("{HEADER}[pins]\nhard = [{{ plan = {{ point = [0, 0, 0], normal = [0, 1, 0], distance = 0.1 }} }}]\n"),
            "bad.toml:7: pins.hard[0].plan: unknown field `plan`; did you mean `plane`?",
        ),
        (
            format!("{HEADER}[sim]\ncolliders = [{{ type = \"ground\", height = 0.0, frction = 0.1 }}]\n"),
            "bad.toml:7: sim.colliders[0]: unknown field `frction`; did you mean `friction`?",
        ),
        // A collider's key on its own line, in the collider it is in (the
        // error named the array's first line); the tag is a key of it.
        (
            format!(
                "{HEADER}[sim]\ncolliders = [\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  \
                 {{ type = \"sphere\", center = [0, 0, 0], radius = 1.0, frction = 0.1 }},\n]\n"
            ),
            "bad.toml:9: sim.colliders[1]: unknown field `frction`; did you mean `friction`?",
        ),
        // A plane's keys as every table's (toml's own words said "unexpected
        // keys in table", with no suggestion).
        (
            format!("{HEADER}[pins]\nsoft = [{{ plane = {{ point = [0, 0, 0], normall = [0, 1, 0], distance = 0.1 }} }}]\n"),
            "bad.toml:7: pins.soft[0].plane.normall: unknown field `normall`; did you mean `normal`?",
        ),
        (
            format!("{HEADER}zzz = 1\n"),
            "bad.toml:6: material.zzz: unknown field `zzz`; expected one of `density`, `weights`, `limits`",
        ),
        (
            "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = \"heavy\"\n".to_owned(),
            "bad.toml:5: material.density: must be a number, found \"heavy\"",
        ),
        (
            format!("{HEADER}[sim]\ngravity = [0.0, -1e300, 0.0]\n"),
            "bad.toml:7: sim.gravity: its magnitude must be at most 1e12 m/s², found 1e300",
        ),
        // nalgebra's "invalid length 2, expected a matrix array".
        (
            format!("{HEADER}[sim]\ngravity = [0.0, -9.8]\n"),
            "bad.toml:7: sim.gravity: must be three numbers, [x, y, z], found [0.0, -9.8]",
        ),
        (
            format!("{HEADER}[view]\neye = 2.5\n"),
            "bad.toml:7: view.eye: must be three numbers, [x, y, z], found 2.5",
        ),
        // The range of the field, not of its type (QA: "0 or more").
        (
            "version = 1\n[mesh]\ngrid = { n = -3, width = 1.0 }\n[material]\ndensity = 0.3\n"
                .to_owned(),
            "bad.toml:3: mesh.grid.n: must be a whole number in [2, 1000], found -3",
        ),
        // A collider's value of the wrong type is named by its element and
        // key, as written (QA: "sim.colliders: must be three numbers,
        // [x, y, z], found 2", and a string radius as "sim.colliders").
        (
            format!(
                "{HEADER}[sim]\ncolliders = [\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  \
                 {{ type = \"sphere\", center = [0, 0], radius = 1, friction = 0.5 }},\n]\n"
            ),
            "bad.toml:9: sim.colliders[1].center: must be three numbers, [x, y, z], found [0, 0]",
        ),
        (
            format!(
                "{HEADER}[sim]\ncolliders = [{{ type = \"sphere\", center = [0, 0, 0], radius = \"1\", \
                 friction = 0.5 }}]\n"
            ),
            "bad.toml:7: sim.colliders[0].radius: must be a number, found \"1\"",
        ),
        (
            format!(
                "{HEADER}[sim]\ncolliders = [{{ type = \"sphere\", center = [0, \"a\", 0], radius = 1, \
                 friction = 0.5 }}]\n"
            ),
            "bad.toml:7: sim.colliders[0].center[1]: must be a number, found \"a\"",
        ),
        // No direction to look in: the editor drew nothing (QA).
        (
            format!("{HEADER}[view]\neye = [0, 0, 2]\ntarget = [0.0, 0.0, 2.0]\n"),
            "bad.toml:8: view.target: must differ from view.eye (the camera looks from the eye \
             towards the target), found both at [0, 0, 2]",
        ),
        // An eye so far that its distance to the target overflowed was said
        // to be at the target, on the target's line (QA).
        (
            format!("{HEADER}[view]\neye = [0.0, 0.2, 1e308]\ntarget = [0, 0, 0]\n"),
            "bad.toml:7: view.eye.z: must lie in [-1e12, 1e12], found 1e308",
        ),
        (
            format!("{HEADER}[sim]\niterations = 1e12\n"),
            "bad.toml:7: sim.iterations: must be a whole number in [1, 10000], found 1e12",
        ),
        // Vertex numbers where rules go (it said "wanted string or table").
        (
            format!("{HEADER}[pins]\nhard = [5, 500]\n"),
            "bad.toml:7: pins.hard[0]: wanted a rule, found 5: \"top_corners\", \"top_edge\", or a \
             table such as { indices = [5, 500] }, { group = \"feet\" }, { plane = … } or { box = … }",
        ),
        (
            format!("{HEADER}[pins]\nhard = [{{ indices = [0, 5000000000] }}]\n"),
            "bad.toml:7: pins.hard[0].indices[1]: must be at most 4294967295, found 5000000000",
        ),
        (
            "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n\n[material]\nweights = { bending = 1.0 }\n".to_owned(),
            "bad.toml:5: material: missing field `density`",
        ),
        (
            "version = 1\nname = \"x\"\n\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml: mesh: missing from the preset",
        ),
        (
            "version = 1\n[mesh]\nobj = \"a.obj\"\ngrid = { n = 3, width = 1.0 }\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:2: mesh: names more than one of its alternatives; keep exactly one",
        ),
        // A key that is no alternative beside one that is: that key on its
        // line (it said the table named several alternatives).
        (
            "version = 1\n[mesh]\ngrid = { n = 3, width = 1.0 }\nojb = \"a.obj\"\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:4: mesh: unknown field `ojb`; expected one of `grid`, `obj`, `tet_file`",
        ),
        (
            format!("{HEADER}[pins]\nsoft = [{{ indices = [1] }}, {{ indices = [2], grop = \"a\" }}]\n"),
            "bad.toml:7: pins.soft[1]: unknown field `grop`; did you mean `group`?",
        ),
        // Every unknown key of a selector's table, as of any table.
        (
            format!("{HEADER}[pins]\nhard = [{{ foo = 1,\n bar = 2 }}]\n"),
            "bad.toml:7: pins.hard[0]: unknown field `foo`; expected one of `indices`, `group`, \
             `plane`, `box`, `top_corners`, `top_edge`, `except`; also unknown there: `bar` (line 8)",
        ),
        // A value naming no alternative is still a variant.
        (
            format!("{HEADER}[sim]\nacceleration = \"chebychev\"\n"),
            "bad.toml:7: sim.acceleration: unknown variant `chebychev`; did you mean `chebyshev`?",
        ),
        (
            format!("{HEADER}[material.weights]\nbending = -1.0\n"),
            "bad.toml:7: material.weights.bending: must not be negative, found -1",
        ),
        (
            // Past double precision against the masses: it was a failed
            // factorisation naming faer's pivot and blaming zero masses.
            format!("{HEADER}[material.weights]\nbending = 1e20\n"),
            "bad.toml:7: material.weights.bending: must lie in [0, 1e12], found 1e20",
        ),
        (
            // A grid as small or large as an imported mesh may be: one of
            // 1e-12 m jittered in round-off instead of falling.
            "version = 1\n[mesh]\ngrid = { n = 10, width = 1e-12 }\n[material]\ndensity = 0.2\n".to_owned(),
            "bad.toml:3: mesh.grid.width: must lie in [1e-9, 1e9], found 1e-12",
        ),
        (
            "version = 1\n[mesh]\ngrid = { n = 10, width = 1e12 }\n[material]\ndensity = 0.2\n".to_owned(),
            "bad.toml:3: mesh.grid.width: must lie in [1e-9, 1e9], found 1e12",
        ),
        (
            "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 1e-300\n".to_owned(),
            "bad.toml:5: material.density: must lie in [1e-6, 1e6], found 1e-300",
        ),
        (
            format!("{HEADER}[sim]\ndt = 0.0\n"),
            "bad.toml:7: sim.dt: must lie in [1e-6, 10], found 0",
        ),
        (
            format!("{HEADER}[sim]\ndt = 1e-300\n"),
            "bad.toml:7: sim.dt: must lie in [1e-6, 10], found 1e-300",
        ),
        (
            format!("{HEADER}[sim]\niterations = 0\n"),
            "bad.toml:7: sim.iterations: must lie in [1, 10000], found 0",
        ),
        (
            format!("{HEADER}[sim]\niterations = 1000000000000\n"),
            "bad.toml:7: sim.iterations: must lie in [1, 10000], found 1000000000000",
        ),
        (
            format!("{HEADER}[sim]\ncolliders = [{{ type = \"ground\", height = 1e308, friction = 0.5 }}]\n"),
            "bad.toml:7: sim.colliders[0].height: must lie in [-1e9, 1e9], found 1e308",
        ),
        (
            format!("{HEADER}[sim]\ncolliders = [\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  {{ type = \"sphere\", center = [0.0, 0.0, 0.0], radius = 0.1, friction = 1e308 }},\n]\n"),
            "bad.toml:9: sim.colliders[1].friction: must lie in [0, 1000], found 1e308",
        ),
        (
            // A collider without a key: the element, on its line.
            format!("{HEADER}[sim]\ncolliders = [\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  {{ type = \"sphere\", center = [0.0, 0.0, 0.0], radius = 0.1 }},\n]\n"),
            "bad.toml:9: sim.colliders[1]: missing field `friction`",
        ),
        (
            // Of two lacking the key, the one whose kind another has it in
            // (a ground has no radius).
            format!("{HEADER}[sim]\ncolliders = [\n  {{ type = \"sphere\", center = [0.0, 0.0, 0.0], radius = 0.1, friction = 0.5 }},\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  {{ type = \"sphere\", center = [0.0, 0.0, 0.0], friction = 0.5 }},\n]\n"),
            "bad.toml:10: sim.colliders[2]: missing field `radius`",
        ),
        (
            // No element to tell which: the array.
            format!("{HEADER}[sim]\ncolliders = [\n  {{ type = \"ground\", height = 0.0, friction = 0.5 }},\n  {{ type = \"sphere\", center = [0.0, 0.0, 0.0], friction = 0.5 }},\n]\n"),
            "bad.toml:7: sim.colliders: missing field `radius`",
        ),
        (
            format!("{HEADER}[sim]\ntolerance = 12.0\n"),
            "bad.toml:7: sim.tolerance: must lie in [0, 1], found 12",
        ),
        (
            // An open bound reads as one, not as the smallest double.
            format!("{HEADER}[material.limits]\nvolume_min = 0.0\n"),
            "bad.toml:7: material.limits.volume_min: must lie in (0, 1], found 0",
        ),
        (
            format!("{HEADER}[material.limits]\nstrain_max = 0.5\n"),
            "bad.toml:7: material.limits.strain_max: must be at least 1, found 0.5",
        ),
        (
            format!("{HEADER}[sim]\nsubsteps = 101\n"),
            "bad.toml:7: sim.substeps: must lie in [1, 100], found 101",
        ),
        (
            "version = 1\n[mesh]\nobj = \"a.obj\"\n[build]\nkind = \"tets\"\nresolution = 1\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:6: build.resolution: must lie in [2, 128], found 1",
        ),
        // Not a whole number at all: the same range, not the type's.
        (
            "version = 1\n[mesh]\nobj = \"a.obj\"\n[build]\nkind = \"tets\"\nresolution = -1\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:6: build.resolution: must be a whole number in [2, 128], found -1",
        ),
        (
            "version = 1\n[mesh]\nobj = \"a.obj\"\n[build]\nscale = 0.0\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:5: build.scale: must lie in [1e-6, 1000], found 0",
        ),
        (
            "version = 1\n[mesh]\nobj = \"\"\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:3: mesh.obj: the path is empty: name a mesh file",
        ),
        (
            "version = 1\n[mesh]\ntet_file = \"a.node\"\n[build]\nkind = \"springs\"\n[material]\ndensity = 1.0\n".to_owned(),
            "bad.toml:5: build.kind: a tet file is built as tets: set `kind = \"tets\"` in `[build]` (springs are the default)",
        ),
        (
            format!("{HEADER}[build]\nscale = 0.01\n"),
            "bad.toml:7: build.scale: applies only to a mesh file: a grid's size is its width",
        ),
        (
            "version = 1\n[mesh]\nobj = \"a.obj\"\n[material]\ndensity = 1.0\n[pins]\nhard = [\"top_edge\"]\n".to_owned(),
            "bad.toml:7: pins.hard[0]: `top_corners` and `top_edge` need a grid mesh",
        ),
        (
            "version = 9\n[mesh]\n".to_owned(),
            "bad.toml:1: version: format version 9 is not supported; this build reads versions 0 to 1",
        ),
        (
            "[mesh]\ngrid = { n = 10, width = 1.0 }\n".to_owned(),
            "bad.toml: version: missing; the current format is version 1",
        ),
        (
            format!("{HEADER}[pins\n"),
            "bad.toml:6: invalid TOML:",
        ),
        (
            format!("{HEADER}[pins]\nsoft = [{{ indices = [5, 100] }}]\n"),
            "bad.toml: pins.soft[0]: vertex 100 is out of range: the model has 100 vertices",
        ),
        (
            format!("{HEADER}[pins]\nhard = [{{ except = {{ of = \"top_edge\", indices = [99, 4294967295] }} }}]\n"),
            "bad.toml: pins.hard[0].except.indices: vertex 4294967295 is out of range: the model has 100 vertices",
        ),
        (
            format!("{HEADER}[pins]\nhard = [{{ group = \"top\" }}]\n"),
            "bad.toml: pins.hard[0]: the mesh has no group named `top`; it has no named groups",
        ),
        (
            format!("{HEADER}[pins]\nhard = [{{ box = {{ min = [5, 5, 5], max = [6, 6, 6] }} }}]\n"),
            "bad.toml: pins.hard[0]: selects no vertex",
        ),
    ];
    for (text, expected) in cases {
        let message = error(text);
        assert!(
            message.starts_with(expected),
            "expected {expected}\n   found {message}"
        );
    }
}

#[test]
fn an_unknown_group_lists_the_mesh_groups() {
    let dir = scratch_dir("presets-groups");
    let file = dir.join("box.toml");
    let text = format!(
        "version = 1\n[mesh]\nobj = {:?}\n[material]\ndensity = 0.2\n[pins]\nhard = [{{ group = \"lef\" }}]\n",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj")
    );
    std::fs::write(&file, text).unwrap();
    let preset = Preset::load(&file).unwrap();
    let err = preset.build(&file).unwrap_err();
    assert!(matches!(*err.kind, PresetErrorKind::UnknownGroup { .. }));
    assert!(
        err.to_string().ends_with(
            "pins.hard[0]: the mesh has no group named `lef`; available: `left`, `right`, `bottom`, `top`, `back`, `front`"
        ),
        "{err}"
    );
    // Found while building, its line is the file's (as the CLI and the
    // session report it for a preset they just loaded).
    let located = err.with_line_from_file();
    assert_eq!(located.line, Some(7), "{located}");
    // The group itself pins its 81 vertices, here also when tetrahedralised.
    let ok = text_with_group(&file, "left", "springs");
    assert_eq!(ok.model.pins.hard_vertices().len(), 81);
    let tets = text_with_group(&file, "left", "tets");
    assert!(!tets.model.pins.hard_vertices().is_empty());
    assert!(
        tets.model
            .pins
            .hard_vertices()
            .iter()
            // The tets carrying the face: within a lattice cell (0.5 m / 8).
            .all(|&v| tets.model.rest[v as usize].x < -0.25 + 0.0625)
    );
}

fn text_with_group(file: &Path, group: &str, kind: &str) -> softbody::preset::Built {
    let mut preset = Preset::load(file).unwrap();
    preset.pins.hard = vec![Selector::Group(group.to_owned())];
    preset.build.kind = if kind == "tets" {
        BuildKind::Tets
    } else {
        BuildKind::Springs
    };
    if kind == "tets" {
        preset.build.resolution = Some(8);
    }
    preset.build(file).unwrap()
}

// ---------------------------------------------------------------------------
// Migration.

#[test]
fn version_0_is_migrated() {
    let v0 = "version = 0\nmesh = \"../meshes/cloth_quad.obj\"\ndensity = 0.3\n\
              stiffness = { stretch = 800.0, bend = 10.0 }\ndt = 0.01\ngravity = -5.0\npins = [600, 624]\n";
    let loaded = Preset::parse(v0, &presets_dir().join("old.toml")).unwrap();
    assert_eq!(loaded.migrated_from, Some(0));
    let p = &loaded.preset;
    assert_eq!(p.version, 1);
    assert_eq!(p.mesh, MeshSource::Obj("../meshes/cloth_quad.obj".into()));
    assert_eq!(p.build.kind, BuildKind::Springs);
    assert_eq!(p.material.density, 0.3);
    assert_eq!(
        (
            p.material.weights.structural,
            p.material.weights.shear,
            p.material.weights.bending
        ),
        (800.0, 400.0, 10.0),
        "a missing shear is half the stretch"
    );
    assert_eq!(p.material.weights.attachment, Weights::default().attachment);
    assert_eq!(p.sim.dt, 0.01);
    assert_eq!(p.sim.iterations, SimParams::default().iterations);
    assert_eq!(p.sim.gravity, Vec3::new(0.0, -5.0, 0.0));
    assert_eq!(p.pins.hard, vec![Selector::Indices(vec![600, 624])]);
    let built = p.build(&presets_dir().join("old.toml")).unwrap();
    assert_eq!(built.model.pins.hard_vertices(), &[600, 624]);
    // The quads' diagonals are shear springs now, and they resist.
    assert_eq!(built.model.springs.shear.len(), 2 * 24 * 24);
    assert_eq!(built.model.weights.shear, 400.0);
    // Saving writes version 1, which loads back equal and unmigrated.
    let text = p.to_toml_string().unwrap();
    assert!(text.contains("version = 1"), "{text}");
    let again = Preset::parse(&text, Path::new("new.toml")).unwrap();
    assert_eq!((again.preset, again.migrated_from), (p.clone(), None));
    // Version 0 errors are located too.
    let typo = v0.replace("bend =", "bent =");
    let err = Preset::parse(&typo, Path::new("old.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("old.toml:4: stiffness.bent: unknown field `bent`; did you mean `bend`?"),
        "{err}"
    );
    // Values out of range name the key as written, on its line (QA: they
    // named the migrated field, `material.weights.structural`, with no line).
    for (from, to, expected) in [
        (
            "stretch = 800.0",
            "stretch = -1.0",
            "old.toml:4: stiffness.stretch: ",
        ),
        ("bend = 10.0", "bend = -1.0", "old.toml:4: stiffness.bend: "),
        ("density = 0.3", "density = -0.3", "old.toml:3: density: "),
        ("dt = 0.01", "dt = 0.0", "old.toml:5: dt: "),
        ("gravity = -5.0", "gravity = nan", "old.toml:6: gravity: "),
        (
            "pins = [",
            "iterations = 0\npins = [",
            "old.toml:7: iterations: ",
        ),
    ] {
        let bad = v0.replace(from, to);
        let err = Preset::parse(&bad, Path::new("old.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(expected), "{to}: {err}");
    }
}

// ---------------------------------------------------------------------------
// Saving.

#[test]
fn save_writes_a_file_that_loads_back_equal() {
    let dir = scratch_dir("presets-save");
    let file = dir.join("scene.toml");
    let mut preset = Preset::default();
    preset.sim.dt = 0.1 + 0.2; // not a short decimal
    preset.save(&file).unwrap();
    assert_eq!(Preset::load(&file).unwrap(), preset);
    preset.name = "Second".to_owned();
    preset.save(&file).unwrap();
    assert_eq!(Preset::load(&file).unwrap(), preset);
    // Only the file: no temporary left behind.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

#[test]
fn failed_saves_keep_the_old_file() {
    let dir = scratch_dir("presets-fail");
    let file = dir.join("scene.toml");
    let old = Preset::default();
    old.save(&file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let mut new = old.clone();
    new.name = "New".to_owned();

    // A value TOML cannot hold (a path that is not UTF-8): serialising
    // fails before anything is written.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let mut unwritable = new.clone();
        unwritable.mesh = MeshSource::Obj(std::ffi::OsStr::from_bytes(b"\xff.obj").into());
        let err = unwritable.save(&file).unwrap_err();
        assert!(matches!(*err.kind, PresetErrorKind::Write(_)), "{err}");
        assert_eq!(std::fs::read(&file).unwrap(), before);
    }

    // The target is a directory: the rename over it fails.
    let blocked = dir.join("blocked.toml");
    std::fs::create_dir(&blocked).unwrap();
    assert!(matches!(
        *new.save(&blocked).unwrap_err().kind,
        PresetErrorKind::Write(_)
    ));
    assert!(blocked.is_dir());

    // A parent that is a file: nothing can be created.
    let err = new.save(&file.join("child.toml")).unwrap_err();
    assert!(err.to_string().contains("cannot write the preset"), "{err}");
    assert_eq!(std::fs::read(&file).unwrap(), before);

    // A read-only directory (only meaningful when not running as root,
    // which ignores the permission).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let root = std::fs::File::create(dir.join("probe")).is_ok();
        if !root {
            assert!(new.save(&file).is_err());
            assert_eq!(std::fs::read(&file).unwrap(), before);
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The scale presets (too large to build in a test) load and validate, with
/// the sizes the README reports: a 250 × 250 grid and tet resolution 36.
#[test]
fn the_scale_presets_load() {
    let dir = presets_dir().join("scale");
    let cloth = Preset::load(&dir.join("cloth250.toml")).unwrap();
    assert!(matches!(
        cloth.mesh,
        MeshSource::Grid(GridSpec { n: 250, .. })
    ));
    let tets = Preset::load(&dir.join("tet100k.toml")).unwrap();
    assert_eq!(tets.build.kind, BuildKind::Tets);
    assert_eq!(tets.build.resolution, Some(36));
    let MeshSource::Obj(obj) = &tets.mesh else {
        panic!("an OBJ mesh")
    };
    assert!(dir.join(obj).is_file(), "{}", obj.display());
}

/// A plane's normal is only a direction: a huge one (whose norm overflows)
/// selects what the unit one does, not every vertex.
#[test]
fn a_huge_plane_normal_selects_like_a_unit_one() {
    let dir = scratch_dir("presets-normal");
    let file = dir.join("cloth.toml");
    let pinned = |point: &str, normal: &str| {
        let text = format!(
            "version = 1\n[mesh]\ngrid = {{ n = 20, width = 1.0 }}\n[material]\ndensity = 0.2\n\
             [pins]\nhard = [{{ plane = {{ point = {point}, normal = {normal}, distance = 0.01 }} }}]\n"
        );
        std::fs::write(&file, text).unwrap();
        let built = Preset::load(&file).unwrap().build(&file).unwrap();
        built.model.pins.hard_vertices().to_vec()
    };
    let top = "[0, 0.5, 0]";
    let unit = pinned(top, "[0, 1, 0]");
    assert_eq!(unit.len(), 20, "the top row");
    assert_eq!(pinned(top, "[0, 1e300, 1e-300]"), unit);
    // The diagonal through the top-left corner.
    let corner = "[-0.5, 0.5, 0]";
    let diagonal = pinned(corner, "[1, 1, 0]");
    assert_eq!(diagonal.len(), 20);
    assert_eq!(pinned(corner, "[1e300, 1e300, 0]"), diagonal);
}

/// The comments a save keeps: the file's opening comment lines with the
/// blank lines between them, not the format line a save writes itself, and
/// nothing after the first key.
#[test]
fn header_comments_are_the_opening_comment_lines() {
    use softbody::preset::header_comments;
    let text = "# Softbody Studio preset (format version 1)\n# Denim\n#\n\n# Heavy.\nversion = 1\n# not this\n";
    assert_eq!(
        header_comments(text).as_deref(),
        Some("# Denim\n#\n\n# Heavy.")
    );
    assert_eq!(header_comments("version = 1\n# late\n"), None);
    assert_eq!(
        header_comments("# Softbody Studio preset (format version 1)\nversion = 1\n"),
        None
    );
    assert_eq!(header_comments(""), None);
}

/// Saving over a file keeps what its author wrote around the values: the
/// comments after a value and on lines of their own, a `[table]` written
/// as one, the spelling of a value that did not change; a changed value
/// keeps its comment, a table the preset no longer has goes with its
/// comment, and the file reads back as the preset saved.
#[test]
fn saving_over_a_file_keeps_its_comments_and_layout() {
    let dir = scratch_dir("presets-layout");
    let file = dir.join("mine.toml");
    let written = "# Softbody Studio preset (format version 1)
# My cloth, for the shop window.
version = 1
name = \"Mine\"   # shown in the title

[mesh]
grid = { n = 8, width = 1.0 }  # small, for speed

[material]
# areal density, kg/m²
density = 2e-1
[material.weights]
structural = 1e3 # N/m
shear = 500.0    # N/m
bending = 20.0

[pins]
hard = [
  \"top_corners\", # the two corners
]

[view] # where I left the camera
eye = [0.0, 0.0, 2.5]
target = [0.0, 0.0, 0.0]
";
    let mut preset = Preset::from_toml_str(written, &file).unwrap();
    preset.material.density = 0.3;
    preset.material.weights.shear = 600.0;
    preset.view = None;
    preset.save_over(&file, Some(written)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    for kept in [
        "# Softbody Studio preset (format version 1)\n# My cloth, for the shop window.\nversion = 1\n",
        "name = \"Mine\"   # shown in the title\n",
        "grid = { n = 8, width = 1.0 }  # small, for speed\n",
        "# areal density, kg/m²\ndensity = 0.3\n[material.weights]\nstructural = 1e3 # N/m\n",
        "shear = 600.0    # N/m\n",
        "  \"top_corners\", # the two corners\n]",
    ] {
        assert!(text.contains(kept), "{kept:?} not in:\n{text}");
    }
    assert!(
        !text.contains("[view]") && !text.contains("camera"),
        "{text}"
    );
    // Defaults the file did not spell out stay out.
    for default in ["[build]", "[sim]", "limits", "attachment", "soft"] {
        assert!(!text.contains(default), "{default} in:\n{text}");
    }
    assert_eq!(text.matches("format version").count(), 1, "{text}");
    assert_eq!(Preset::load(&file).unwrap(), preset);
    // Saved again unchanged, it is the same text.
    preset.save_over(&file, Some(&text)).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // A changed default is added, alone, after the last table.
    preset.sim.damping = 0.05;
    preset.save_over(&file, Some(&text)).unwrap();
    let damped = std::fs::read_to_string(&file).unwrap();
    assert_eq!(damped, format!("{text}\n[sim]\ndamping = 0.05\n"));
    assert_eq!(Preset::load(&file).unwrap(), preset);
}

/// Every shipped preset saved unchanged over its own file is the same text
/// (it gained the format line); so is one written in full by a save (its
/// pins as `[[pins.hard]]`), and a change there keeps that form.
#[test]
fn saving_an_unchanged_preset_over_its_file_changes_nothing() {
    let dir = scratch_dir("presets-layout-unchanged");
    let file = dir.join("out.toml");
    let mut checked = 0;
    for entry in std::fs::read_dir("presets").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let preset = Preset::load(&path).unwrap();
        preset.save_over(&file, Some(&text)).unwrap();
        let saved = std::fs::read_to_string(&file).unwrap();
        assert_eq!(saved, text, "{}", path.display());
        checked += 1;
    }
    assert_eq!(checked, 9);
    let mut preset = Preset::load(Path::new("presets/cotton.toml")).unwrap();
    let full = preset.to_toml_string().unwrap();
    assert!(full.contains("[[pins.hard]]"), "{full}");
    preset.save_over(&file, Some(&full)).unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), full);
    preset.pins.hard.push(Selector::Indices(vec![0]));
    preset.save_over(&file, Some(&full)).unwrap();
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(saved.matches("[[pins.hard]]").count(), 2, "{saved}");
    assert_eq!(Preset::load(&file).unwrap(), preset);
}

/// Lists keep the comments of their elements that stay; a changed element
/// loses its own; a pin list written as `[[pins.hard]]` that becomes a
/// list of names is written `hard = [...]` with the comment above it; a
/// key added to an inline table goes before its closing space; explicit
/// defaults and CRLF line endings stay; a format line below the first line
/// is updated in place.
#[test]
fn saving_over_a_file_follows_its_lists_and_forms() {
    let dir = scratch_dir("presets-layout-forms");
    let file = dir.join("forms.toml");
    let save = |preset: &Preset, previous: &str| -> String {
        assert_eq!(
            preset.save_over(&file, Some(previous)).unwrap(),
            Written::AsLaidOut
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(&Preset::load(&file).unwrap(), preset, "{text}");
        text
    };
    let corners = "
# Cloth
# Softbody Studio preset (format version 1) -- by hand
version = 1
name = \"\" # left blank

[mesh]
grid = { n = 10, width = 1.0, horizontal = false } # hangs

[material]
density = 0.2
weights = { structural = 1000.0, shear = 500.0, bending = 20.0 }

[pins]
hard = [
  # left corner
  { indices = [0] },
  # middle
  { indices = [5] },
  # right corner
  { indices = [9] },
]
";
    let mut preset = Preset::from_toml_str(corners, &file).unwrap();
    // The middle rule removed, attachment set: both the only change.
    preset.pins.hard.remove(1);
    preset.material.weights.attachment = 2000.0;
    let text = save(&preset, corners);
    let expected = corners
        .replace("  # middle\n  { indices = [5] },\n", "")
        .replace("bending = 20.0 }", "bending = 20.0, attachment = 2000.0 }");
    assert_eq!(text, expected);
    // Every rule replaced: the old comments go with them.
    preset.pins.hard = vec![Selector::Indices(vec![3]), Selector::Indices(vec![4])];
    let text = save(&preset, &expected);
    assert!(!text.contains("corner"), "{text}");
    assert!(
        text.contains("hard = [\n  { indices = [3] },\n  { indices = [4] },\n]"),
        "{text}"
    );
    // CRLF stays CRLF.
    let crlf = corners.replace('\n', "\r\n");
    preset.material.density = 0.25;
    let text = save(&preset, &crlf);
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
    assert!(text.contains("density = 0.25\r\n"), "{text:?}");
    // `[[pins.hard]]` become names.
    let tables = "version = 1
[mesh]
grid = { n = 10, width = 1.0 }
[material]
density = 0.2
# the top plane holds it
[[pins.hard]]
plane = { point = [0.0, 0.5, 0.0], normal = [0.0, 1.0, 0.0], distance = 0.001 }
";
    let mut preset = Preset::from_toml_str(tables, &file).unwrap();
    preset.pins.hard = vec![Selector::TopEdge];
    let text = save(&preset, tables);
    assert!(
        text.ends_with("[pins]\n# the top plane holds it\nhard = [\"top_edge\"]\n"),
        "{text}"
    );
    // The first of a list removed: the next takes its place after `[`.
    let two = "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 0.2\n[pins]\nhard = [{ indices = [1] }, { indices = [2] }]\n";
    let mut preset = Preset::from_toml_str(two, &file).unwrap();
    preset.pins.hard.remove(0);
    let text = save(&preset, two);
    assert!(text.ends_with("\nhard = [{ indices = [2] }]\n"), "{text}");
    // A comment after an element's comma is that element's, though TOML
    // keeps it before the next one or before `]`.
    let plane =
        "{ plane = { point = [0.0, 0.5, 0.0], normal = [0.0, 1.0, 0.0], distance = 0.01 } }";
    let commented = format!(
        "version = 1\n[mesh]\ngrid = {{ n = 10, width = 1.0 }}\n[material]\ndensity = 0.2\n[pins]\nhard = [\n  # plane element\n  {plane}, # top\n  # indices element\n  {{ indices = [0, 1, 2] }}, # three\n] # end of hard\n"
    );
    let mut preset = Preset::from_toml_str(&commented, &file).unwrap();
    preset.pins.hard.remove(1);
    let text = save(&preset, &commented);
    assert!(
        text.ends_with(&format!(
            "hard = [\n  # plane element\n  {plane}, # top\n] # end of hard\n"
        )),
        "{text}"
    );
    let mut preset = Preset::from_toml_str(&commented, &file).unwrap();
    preset.pins.hard[1] = Selector::Indices(vec![5]);
    let text = save(&preset, &commented);
    assert!(
        text.ends_with(&format!("hard = [\n  # plane element\n  {plane}, # top\n  {{ indices = [5] }},\n] # end of hard\n")),
        "{text}"
    );
    let mut preset = Preset::from_toml_str(&commented, &file).unwrap();
    preset.pins.hard.remove(0);
    let text = save(&preset, &commented);
    assert!(
        text.ends_with(
            "hard = [\n  # indices element\n  { indices = [0, 1, 2] }, # three\n] # end of hard\n"
        ),
        "{text}"
    );
    // `[[tables]]` are matched by what they hold: the one that stays keeps
    // its comments.
    let listed = "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 0.2\n\n[[pins.hard]]\nindices = [0]\n\n[[pins.hard]]\n# plane element\nplane = { point = [0.0, 0.5, 0.0], normal = [0.0, 1.0, 0.0], distance = 0.01 } # top\n";
    let mut preset = Preset::from_toml_str(listed, &file).unwrap();
    preset.pins.hard.remove(0);
    let text = save(&preset, listed);
    assert!(
        text.ends_with("[[pins.hard]]\n# plane element\nplane = { point = [0.0, 0.5, 0.0], normal = [0.0, 1.0, 0.0], distance = 0.01 } # top\n"),
        "{text}"
    );
    assert!(!text.contains("indices"), "{text}");
    // A file without pins gains an inline list, not scattered tables.
    let bare = "version = 1\n[mesh]\ngrid = { n = 10, width = 1.0 }\n[material]\ndensity = 0.2\n\n[view]\neye = [0.0, 0.0, 2.5]\ntarget = [0.0, 0.0, 0.0]\n";
    let mut preset = Preset::from_toml_str(bare, &file).unwrap();
    preset.pins.hard = vec![Selector::Indices(vec![1, 2])];
    let text = save(&preset, bare);
    assert_eq!(
        text,
        format!("{bare}\n[pins]\nhard = [{{ indices = [1, 2] }}]\n")
    );
}

/// A file that is not TOML (edited since it was opened) leaves the
/// preset written in full, after the comment lines it opened with.
#[test]
fn saving_over_a_file_that_is_not_toml_keeps_its_opening_comments() {
    let dir = scratch_dir("presets-layout-broken");
    let file = dir.join("broken.toml");
    let preset = Preset::load(Path::new("presets/silk.toml")).unwrap();
    let broken = "# Old notes\nthis = = not toml\n";
    assert_eq!(
        preset.save_over(&file, Some(broken)).unwrap(),
        Written::InFull
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# Softbody Studio preset (format version 1)\n# Old notes\nversion = 1\n"),
        "{text}"
    );
    assert!(!text.contains("not toml"), "{text}");
    assert_eq!(Preset::load(&file).unwrap(), preset);
    // Written in full, it keeps the file's CRLF line endings.
    let crlf = broken.replace('\n', "\r\n");
    preset.save_over(&file, Some(&crlf)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
    assert_eq!(Preset::load(&file).unwrap(), preset);
}

/// A symbolic link to a preset elsewhere finds its mesh beside the preset
/// it names, where it is not beside the link (QA: a link to a shipped
/// preset looked for `../meshes/cloth_quad.obj` beside the link only).
#[cfg(unix)]
#[test]
fn a_link_to_a_preset_finds_its_mesh() {
    let dir = scratch_dir("presets-link");
    let link = dir.join("link_cotton.toml");
    let real = std::fs::canonicalize("presets/cotton.toml").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let preset = Preset::load(&link).unwrap();
    let built = preset.build(&link).unwrap();
    let direct = Preset::load(&real).unwrap().build(&real).unwrap();
    assert_eq!(built.model.rest, direct.model.rest);
    assert_eq!(
        preset
            .mesh_file(&link)
            .map(|p| std::fs::canonicalize(p).unwrap()),
        std::fs::canonicalize("meshes/cloth_quad.obj").ok()
    );
}

/// A file larger than any preset is refused before it is read whole (a
/// 4 GB one aborted the process allocating for it).
#[test]
fn a_huge_file_is_refused_as_a_preset() {
    let dir = scratch_dir("presets-huge");
    let path = dir.join("huge.toml");
    let file = std::fs::File::create(&path).unwrap();
    // Sparse: no disk space taken.
    file.set_len(softbody::preset::MAX_PRESET_BYTES + 1)
        .unwrap();
    let err = Preset::load(&path).unwrap_err().to_string();
    assert!(
        err.contains("larger than any preset (64 MB at most)"),
        "{err}"
    );
    assert!(err.starts_with(&path.display().to_string()), "{err}");
    // A device is not read at all (it read 64 MB, then was "larger"), and
    // a directory is named as one.
    #[cfg(unix)]
    {
        let err = Preset::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a regular file (a device or a pipe)"),
            "{err}"
        );
    }
    let err = Preset::load(&dir).unwrap_err().to_string();
    assert!(err.contains("it is a directory"), "{err}");
}

/// A preset that is not UTF-8 (a Latin-1 é in a comment) is refused at
/// the line of its first such byte, as any error in the text is (it named
/// no line).
#[test]
fn a_preset_not_in_utf8_names_the_line() {
    let dir = scratch_dir("presets-latin1");
    let path = dir.join("latin1.toml");
    std::fs::write(&path, b"version = 1\nname = \"T\"\n# caf\xe9\n").unwrap();
    let err = Preset::load(&path).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}:3: cannot read the preset: not UTF-8 text (byte 0xe9); save the preset as UTF-8",
            path.display()
        )
    );
}

/// `build.scale` reads a mesh file in other units: the model is the file's
/// times the scale, for springs and tets alike (the same lattice, the mass
/// by the cube of it), a unit scale is not written and another one is, and
/// a body of implausible size says which scale would fix it.
#[test]
fn a_scale_reads_the_mesh_file_in_other_units() {
    let dir = scratch_dir("preset-scale");
    std::fs::write(dir.join("cube.obj"), common::cube_obj([0.0, 2.0, 0.0], 0)).unwrap();
    let file = dir.join("cube.toml");
    let built = |kind: &str, scale: f64| {
        let text = format!(
            "version = 1\n[mesh]\nobj = \"cube.obj\"\n[build]\nkind = \"{kind}\"\nscale = {scale:?}\n\
             [material]\ndensity = 1000.0\n"
        );
        let preset = Preset::from_toml_str(&text, &file).unwrap();
        assert_eq!(preset.build.scale, scale);
        let saved = preset.to_toml_string().unwrap();
        assert_eq!(saved.contains("scale = "), scale != 1.0, "{saved}");
        preset.build(&file).unwrap()
    };
    for kind in ["springs", "tets"] {
        let metres = built(kind, 1.0);
        let centimetres = built(kind, 0.01);
        let (a, b) = (&metres.model, &centimetres.model);
        assert_eq!(a.rest.len(), b.rest.len(), "{kind}");
        assert_eq!(a.tets.len(), b.tets.len(), "{kind}");
        assert_eq!(a.springs.structural.len(), b.springs.structural.len());
        for (p, q) in a.rest.iter().zip(&b.rest) {
            assert!((p * 0.01 - q).norm() <= 1e-15, "{kind}: {p} and {q}");
        }
        // 1000 kg/m³ (tets) of a 1 m cube, or 1000 kg/m² of its 6 m² (the
        // tets' volume is the lattice's, within a few per cent of it).
        let (mass, ratio) = if kind == "tets" {
            (1000.0, 1e-6)
        } else {
            (6000.0, 1e-4)
        };
        let (big, small) = (a.total_mass(), b.total_mass());
        assert!((big - mass).abs() < 0.05 * mass, "{kind}: {big} kg");
        assert!(
            (small - big * ratio).abs() < 1e-9 * small,
            "{kind}: {small} kg"
        );
        assert_eq!(centimetres.scale, 0.01);
        let sized = |b: &softbody::preset::Built| {
            b.warnings
                .iter()
                .filter(|w| w.contains("across"))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(sized(&metres), Vec::<String>::new());
        assert_eq!(sized(&centimetres), Vec::<String>::new());
        assert_eq!(
            sized(&built(kind, 100.0)),
            [
                "the body is 173.2 m across at a scale of 100 m per file unit: if the file is not \
              in metres, set the build's scale (e.g. 1)"
            ]
        );
    }
    // A generated cloth, in metres without a scale (QA: 1e9 m said
    // nothing); the shipped presets' cloths are not warned about.
    let cloth = |width: &str| {
        let text = format!(
            "version = 1\n[mesh]\ngrid = {{ n = 3, width = {width} }}\n[material]\n\
             density = 0.2\n"
        );
        let path = Path::new("p.toml");
        let built = Preset::parse(&text, path)
            .unwrap()
            .preset
            .build(path)
            .unwrap();
        built.warnings
    };
    assert_eq!(cloth("1.0"), Vec::<String>::new());
    for (width, across) in [("1e9", "1.414e9"), ("1e-9", "1.414e-9")] {
        let warnings = cloth(width);
        assert!(
            warnings.len() == 1
                && warnings[0].starts_with(&format!("the cloth is {across} m across")),
            "{warnings:?}"
        );
    }
}

/// A body that starts inside a collider is warned about at build: its
/// vertices there are pushed out in the first frame (a jump that stores
/// energy), and a hard pin there holds its vertex inside. A body resting
/// on a collider's surface is not.
#[test]
fn a_body_starting_inside_a_collider_is_warned_about() {
    let build = |sim: &str, pins: &str| {
        let text = format!(
            "version = 1\n[mesh]\ngrid = {{ n = 11, width = 1.0, horizontal = true }}\n\
             [material]\ndensity = 0.15\n{sim}{pins}"
        );
        let path = Path::new("p.toml");
        Preset::parse(&text, path)
            .unwrap()
            .preset
            .build(path)
            .unwrap()
    };
    let rest = build("", "").model.rest;
    let y = rest[0].y;
    let warnings = |collider: String, pins: &str| {
        let built = build(&format!("[sim]\ncolliders = [{collider}]\n"), pins);
        (built.warnings.into_iter())
            .filter(|w| w.contains("sim.colliders"))
            .collect::<Vec<_>>()
    };
    // Resting on a ground at its height: nothing.
    let ground = format!("{{ type = \"ground\", height = {y}, friction = 0.5 }}");
    assert_eq!(warnings(ground, ""), Vec::<String>::new());
    // A ball centred on the middle node: the nodes within its radius.
    let middle = rest[60];
    let inside = rest.iter().filter(|p| (*p - middle).norm() < 0.25).count();
    assert_eq!(inside, 21);
    let sphere = format!(
        "{{ type = \"sphere\", center = [{}, {}, {}], radius = 0.25, friction = 0.5 }}",
        middle.x, middle.y, middle.z
    );
    assert_eq!(
        warnings(sphere, "[pins]\nhard = [{ indices = [60] }]\n"),
        [
            "the body starts with 20 vertices inside sim.colliders[0] (a sphere): the first \
             frame pushes them out, a jump that stores energy; move the body or the collider",
            "hard pins hold 1 vertex inside sim.colliders[0] (a sphere)",
        ]
    );
}

/// A TetGen file's vertices that no tetrahedron uses (TetGen keeps input
/// points it left out) are left out with a warning naming the file; an
/// unused vertex has no mass, and the build failed as "invalid simulation
/// parameter: vertex 4 has mass 0".
#[test]
fn a_tet_file_s_unused_vertices_are_left_out_with_a_warning() {
    let dir = scratch_dir("tet-file-unused");
    std::fs::write(
        dir.join("one.node"),
        "6 3 0 0\n1 0 0 0\n2 1 0 0\n3 9 9 9\n4 0 1 0\n5 0 0 1\n6 7 7 7\n",
    )
    .unwrap();
    std::fs::write(dir.join("one.ele"), "1 4 0\n1 1 2 4 5\n").unwrap();
    let file = dir.join("one.toml");
    std::fs::write(
        &file,
        "version = 1\n[mesh]\ntet_file = \"one.node\"\n[build]\nkind = \"tets\"\n\
         [material]\ndensity = 1000.0\n",
    )
    .unwrap();
    let built = Preset::load(&file).unwrap().build(&file).unwrap();
    assert_eq!(built.model.vertex_count(), 4);
    assert_eq!(built.model.tets.len(), 1);
    assert!(built.model.masses.iter().all(|&m| m > 0.0));
    assert_eq!(
        built.warnings,
        [
            "one.node: 2 of its 6 vertices are used by no tetrahedron (the first is its vertex 3 \
          in order, counted from 1): left out, the others renumbered"
        ]
    );
    assert_eq!(built.model.rest[2], Vec3::new(0.0, 1.0, 0.0));
}

/// A tet file's tetrahedra are checked at the preset's scale: a thin one
/// that round-off makes degenerate there, or coordinates that overflow, are
/// errors naming the scale's line (QA: a centimetre file at scale 0.01
/// panicked building the model); a body outside 1e-9 to 1e9 m is refused
/// as an OBJ is.
#[test]
fn a_tet_file_is_checked_at_its_scale() {
    let dir = scratch_dir("tet-file-scale");
    let write = |name: &str, node: &str, scale: &str| {
        std::fs::write(dir.join(format!("{name}.node")), node).unwrap();
        std::fs::write(dir.join(format!("{name}.ele")), "1 4 0\n1 1 2 3 4\n").unwrap();
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                "version = 1\n[mesh]\ntet_file = \"{name}.node\"\n[build]\nkind = \"tets\"\n\
                 scale = {scale}\n[material]\ndensity = 1000.0\n"
            ),
        )
        .unwrap();
        Preset::load(&file)
            .unwrap()
            .build(&file)
            .map(|_| ())
            .map_err(|e| e.with_line_from_file())
    };
    let thin = "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n\
                4 0.49543508709194095 0.4494910647887381 1.7508056965488543e-14\n";
    let unit = "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n";
    let huge = "4 3 0 0\n1 0 0 0\n2 1e8 0 0\n3 0 1e8 0\n4 0 0 1e8\n";
    let small = "4 3 0 0\n1 0 0 0\n2 1e-4 0 0\n3 0 1e-4 0\n4 0 0 1e-4\n";
    write("thin", thin, "1.0").unwrap();
    write("unit", unit, "0.01").unwrap();
    for (name, node, scale, says) in [
        ("thin", thin, "0.01", "tetrahedron 0 is degenerate"),
        ("huge", huge, "1000.0", "the mesh is 1.732e11 across"),
        ("tiny", small, "1e-6", "the mesh is 1.732e-10 across"),
    ] {
        let error = write(name, node, scale).unwrap_err().to_string();
        assert!(
            error.contains(&format!(
                "{name}.toml:6: build.scale: {name}.node at a scale of "
            )) && error.contains(says),
            "{error}"
        );
    }
    // Out of range in the file itself: said of the file (its volumes
    // overflowed and a tetrahedron was said to be degenerate: QA).
    let far = "4 3 0 0\n1 0 0 0\n2 1e200 0 0\n3 0 1e200 0\n4 0 0 1e200\n";
    let error = write("far", far, "1.0").unwrap_err().to_string();
    assert!(
        error.contains("far.toml:3: mesh.tet_file: ")
            && error.contains("the mesh is 1.732e200 across"),
        "{error}"
    );
}

/// The note that non-manifold edges get no bending springs is for a spring
/// build only (QA: a beetle built as tets listed it among its notes).
#[test]
fn a_tet_build_is_not_told_of_bending_springs() {
    let dir = scratch_dir("non-manifold-note");
    // A closed cube with a fin on one edge: that edge has three faces.
    let mut obj = String::new();
    for z in [0, 1] {
        for y in [0, 1] {
            for x in [0, 1] {
                obj += &format!("v {x} {y} {z}\n");
            }
        }
    }
    obj += "v 0.5 -1 -1\n";
    for face in [
        "1 3 4 2", "5 6 8 7", "1 2 6 5", "3 7 8 4", "1 5 7 3", "2 4 8 6", "1 2 9",
    ] {
        obj += &format!("f {face}\n");
    }
    let file = dir.join("fin.obj");
    std::fs::write(&file, obj).unwrap();
    let note = "1 non-manifold edge (3+ faces): a spring build has no bending springs across it";
    let mut preset = Preset::for_obj(&file);
    let springs = preset.build(&file).unwrap();
    assert!(
        springs.warnings.iter().any(|w| w == note),
        "{:?}",
        springs.warnings
    );
    preset.build.kind = BuildKind::Tets;
    preset.build.resolution = Some(6);
    let tets = preset.build(&file).unwrap();
    assert!(!tets.model.tets.is_empty());
    assert!(
        !tets.warnings.iter().any(|w| w == note),
        "{:?}",
        tets.warnings
    );
}

/// Weights that leave the constraints holding nothing are noted: every
/// elastic weight 0 (the body fell as dust, unsaid), soft pins of
/// attachment 0. The shipped presets have neither.
#[test]
fn weights_that_hold_nothing_are_noted() {
    let built = |weights: &str| {
        let text = format!("{HEADER}weights = {{ {weights} }}\n[pins]\nsoft = [\"top_corners\"]\n");
        let path = Path::new("weights.toml");
        Preset::from_toml_str(&text, path)
            .unwrap()
            .build(path)
            .unwrap()
            .warnings
    };
    assert_eq!(
        built("structural = 0.0, shear = 0.0, bending = 0.0, attachment = 0.0"),
        [
            "no constraint holds the body's shape (its elastic weights are 0): its vertices \
             move alone",
            "the attachment weight is 0: its 2 soft pins hold nothing"
        ]
    );
    assert!(built("structural = 0.0, shear = 0.0").is_empty());
    for preset in shipped() {
        let warnings = Preset::load(&preset)
            .unwrap()
            .build(&preset)
            .unwrap()
            .warnings;
        assert!(
            !warnings.iter().any(|w| w.contains("hold")),
            "{}: {warnings:?}",
            preset.display()
        );
    }
}
