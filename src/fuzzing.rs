//! Entry points for the fuzz targets (`fuzz/`, cargo-fuzz + libFuzzer) and
//! their regression tests (`tests/fuzz_regressions.rs`): each takes
//! untrusted bytes through the same path the product takes a file, and
//! must return (an error is fine) without panicking, hanging or blowing up
//! memory.

use std::path::Path;

use crate::mesh::topology::EdgeKind;
use crate::mesh::{self, ImportOptions, ValidateOptions, tet_io};
use crate::model::{Model, Springs, Weights};
use crate::preset::Preset;

/// The largest input the targets pass on: the parsers' work is linear, and
/// bigger inputs only slow the fuzzer down.
pub const MAX_INPUT: usize = 1 << 16;

/// An OBJ file: parse, validate, and build the spring model.
pub fn obj(data: &[u8]) {
    let path = Path::new("fuzz.obj");
    let Ok((raw, _)) = mesh::import_obj_bytes(data, path, &ImportOptions::default()) else {
        return;
    };
    let Ok((surface, _)) = mesh::validate(&raw, path, &ValidateOptions::default()) else {
        return;
    };
    let model = Model::from_surface(&surface, 0.1, Weights::default());
    assert_eq!(model.rest.len(), surface.positions().len());
    let springs = Springs::from_surface(&surface);
    // A spring per edge and one across each interior edge, whatever kinds
    // the file's polygons make them.
    let topo = surface.topology();
    assert_eq!(surface.source_polygons().len(), surface.triangles().len());
    // Texture coordinates, if kept: one entry per triangle, every index in
    // range, and none unused.
    if let Some(t) = surface.texcoords() {
        assert_eq!(t.triangles.len(), surface.triangles().len());
        let mut used = vec![false; t.coords.len()];
        for &c in t.triangles.iter().flatten().flatten() {
            used[c as usize] = true;
        }
        assert!(used.iter().all(|&u| u));
    }
    assert_eq!(
        springs.len(),
        topo.edges().len() + topo.count(EdgeKind::Interior)
    );
    let all = [&springs.structural, &springs.shear, &springs.bending];
    assert!(
        all.iter()
            .flat_map(|k| k.iter())
            .all(|s| s.rest.is_finite())
    );
}

/// A preset file: parse and check it; a valid one must save, in full and
/// over its own text (see [`Preset::save_over`]; also with changes to its
/// view and pin lists), and parse back equal.
pub fn preset(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.toml");
    let Ok(loaded) = Preset::parse(text, path) else {
        return;
    };
    let saved = loaded
        .preset
        .to_toml_string()
        .expect("a parsed preset serialises");
    let again = Preset::parse(&saved, path).expect("a saved preset parses");
    assert_eq!(again.preset, loaded.preset);
    // Saved over its own text: as it is, without its view, with its pin
    // lists reversed and with their first rules dropped.
    let unviewed = Preset {
        view: None,
        ..loaded.preset.clone()
    };
    let mut reversed = loaded.preset.clone();
    reversed.pins.hard.reverse();
    reversed.pins.soft.reverse();
    let mut shorter = loaded.preset.clone();
    for list in [&mut shorter.pins.hard, &mut shorter.pins.soft] {
        if !list.is_empty() {
            list.remove(0);
        }
    }
    for preset in [&loaded.preset, &unviewed, &reversed, &shorter] {
        let (over, _) = (preset.to_toml_string_over(Some(text), path))
            .expect("a parsed preset serialises over its text");
        let again = Preset::parse(&over, path).expect("a preset saved over its text parses");
        assert_eq!(&again.preset, preset);
    }
}

/// A TetGen pair: the bytes before the first NUL are the `.node` file, the
/// rest the `.ele` file. A mesh that reads builds a tet model.
pub fn tetgen(data: &[u8]) {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (node, ele) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    if let Ok(mesh) = tet_io::parse_tetgen(node, ele, Path::new("fuzz.node")) {
        tet_model(&mesh);
    }
}

/// A Gmsh `.msh` file (2.2 or 4.1 ASCII). A mesh that reads builds a tet
/// model.
pub fn msh(data: &[u8]) {
    if let Ok(mesh) = tet_io::parse_msh(data, Path::new("fuzz.msh")) {
        tet_model(&mesh);
    }
}

fn tet_model(mesh: &mesh::TetMesh) {
    let model = Model::from_tet_mesh(mesh, 1000.0, Weights::default(), false);
    assert!(model.masses.iter().all(|m| m.is_finite() && *m >= 0.0));
}
