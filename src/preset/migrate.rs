//! Version 0 (see the [module docs](super)) and its migration.

use std::path::PathBuf;

use serde::Deserialize;

use super::{Build, CURRENT_VERSION, Material, MeshSource, PinSpec, Preset, Selector};
use crate::mesh::Vec3;
use crate::model::{TetLimits, Weights};
use crate::solver::SimParams;

/// A version-0 preset.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PresetV0 {
    /// Always 0 here; read so that the key is not unknown.
    #[serde(rename = "version")]
    _version: u32,
    mesh: PathBuf,
    density: f64,
    stiffness: StiffnessV0,
    dt: Option<f64>,
    iterations: Option<usize>,
    gravity: Option<f64>,
    #[serde(default)]
    pins: Vec<u32>,
}

/// Version 0's spring stiffnesses (N/m).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StiffnessV0 {
    stretch: f64,
    /// Optional: version 0 built no shear springs from a mesh, and its
    /// quads' cutting diagonals were structural springs. They are shear
    /// springs now, so a missing shear is half the stretch (the defaults'
    /// ratio), not 0, which would leave a quad mesh nothing but its bending
    /// springs against shear.
    shear: Option<f64>,
    bend: f64,
}

/// The version-0 key a field of the migrated preset comes from (the field
/// itself if it kept its path), for errors that name the key as written
/// and find its line: a version-0 `stiffness.stretch = -1` was reported
/// as `material.weights.structural`, with no line (QA).
pub(super) fn v0_field(field: &str) -> &str {
    match field {
        "material.density" => "density",
        "material.weights.structural" => "stiffness.stretch",
        "material.weights.shear" => "stiffness.shear",
        "material.weights.bending" => "stiffness.bend",
        "sim.dt" => "dt",
        "sim.iterations" => "iterations",
        "sim.gravity" => "gravity",
        other => other,
    }
}

/// The version-1 preset of a version-0 one: an OBJ built as springs, the
/// stiffnesses as structural, shear (half the stretch if missing) and
/// bending weights (the others at their defaults), `gravity` as its `y`
/// component, `pins` as one hard index selector.
pub(super) fn from_v0(v0: PresetV0) -> Preset {
    let PresetV0 {
        _version,
        mesh,
        density,
        stiffness,
        dt,
        iterations,
        gravity,
        pins,
    } = v0;
    let defaults = SimParams::default();
    Preset {
        version: CURRENT_VERSION,
        name: String::new(),
        mesh: MeshSource::Obj(mesh),
        build: Build::default(),
        material: Material {
            density,
            weights: Weights {
                structural: stiffness.stretch,
                shear: stiffness.shear.unwrap_or(stiffness.stretch / 2.0),
                bending: stiffness.bend,
                ..Weights::default()
            },
            limits: TetLimits::default(),
        },
        pins: PinSpec {
            hard: if pins.is_empty() {
                Vec::new()
            } else {
                vec![Selector::Indices(pins)]
            },
            ..PinSpec::default()
        },
        sim: SimParams {
            dt: dt.unwrap_or(defaults.dt),
            iterations: iterations.unwrap_or(defaults.iterations),
            gravity: gravity.map_or(defaults.gravity, |g| Vec3::new(0.0, g, 0.0)),
            ..defaults
        },
        view: None,
    }
}
