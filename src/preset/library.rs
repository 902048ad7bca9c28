//! The shipped presets (`presets/*.toml`), compiled into the binary so the
//! editor's one-click materials work from any directory.

use std::path::Path;
use std::sync::LazyLock;

use super::{BuildKind, Material, Preset};

/// The shipped preset files: name (file stem) and text.
const FILES: [(&str, &str); 9] = [
    (
        "hanging_cloth",
        include_str!("../../presets/hanging_cloth.toml"),
    ),
    ("silk", include_str!("../../presets/silk.toml")),
    ("cotton", include_str!("../../presets/cotton.toml")),
    ("denim", include_str!("../../presets/denim.toml")),
    ("leather", include_str!("../../presets/leather.toml")),
    (
        "rubber_sheet",
        include_str!("../../presets/rubber_sheet.toml"),
    ),
    ("jelly", include_str!("../../presets/jelly.toml")),
    (
        "soft_rubber",
        include_str!("../../presets/soft_rubber.toml"),
    ),
    (
        "firm_rubber",
        include_str!("../../presets/firm_rubber.toml"),
    ),
];

/// A shipped preset's material, for the build kind it was tuned for
/// (densities of spring models are per area, of tet models per volume).
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryMaterial {
    /// The preset's file stem (`silk`, `jelly`, ...).
    pub name: &'static str,
    /// Springs or tets.
    pub kind: BuildKind,
    /// Density, weights and limits.
    pub material: Material,
}

impl LibraryMaterial {
    /// Whether `preset`'s material is this one in what applying it sets
    /// ([`Material::taking`]): the density and the weights of the
    /// constraints a model of this kind has, with the tet limits. The
    /// weights of the other kind do not count: a body built as tets, given
    /// jelly, then built as springs has cotton's values in every field
    /// shown, and was not cotton (QA); nor does the attachment weight, the
    /// preset's own.
    pub fn is_in(&self, preset: &Preset) -> bool {
        let current = preset.material;
        self.kind == preset.build.kind && current.taking(&self.material, self.kind) == current
    }
}

/// The materials of the shipped presets, in library order (cloth first).
/// The hanging cloth's material is cotton's, so it is listed once. Parsed
/// once, on first use (the editor lists them every frame).
pub fn materials() -> &'static [LibraryMaterial] {
    static MATERIALS: LazyLock<Vec<LibraryMaterial>> = LazyLock::new(parse_materials);
    &MATERIALS
}

fn parse_materials() -> Vec<LibraryMaterial> {
    FILES
        .iter()
        .filter(|(name, _)| *name != "hanging_cloth")
        .filter_map(|&(name, text)| {
            // The files are checked by `every_shipped_preset_is_compiled_in`.
            let preset = Preset::parse(text, Path::new(name)).ok()?.preset;
            Some(LibraryMaterial {
                name,
                kind: preset.build.kind,
                material: preset.material,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_preset_is_compiled_in_and_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut compiled: Vec<String> = FILES.iter().map(|(n, _)| (*n).to_owned()).collect();
        compiled.sort();
        assert_eq!(on_disk, compiled);
        for (name, text) in FILES {
            Preset::parse(text, Path::new(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        let materials = materials();
        assert_eq!(materials.len(), FILES.len() - 1);
        let tets = materials.iter().filter(|m| m.kind == BuildKind::Tets);
        assert_eq!(
            tets.map(|m| m.name).collect::<Vec<_>>(),
            ["jelly", "soft_rubber", "firm_rubber"]
        );
    }

    /// A material is recognised by what the model uses: the other kind's
    /// weights, which a body keeps across builds, do not count.
    #[test]
    fn a_material_is_recognised_by_the_weights_its_kind_uses() {
        let [cotton, jelly] = ["cotton", "jelly"]
            .map(|name| materials().iter().find(|m| m.name == name).unwrap().clone());
        let mut preset = Preset {
            material: cotton.material,
            ..Preset::default()
        };
        preset.material.weights.strain = jelly.material.weights.strain;
        preset.material.weights.attachment = 3.0;
        assert!(cotton.is_in(&preset));
        preset.material.weights.bending *= 2.0;
        assert!(!cotton.is_in(&preset));
        preset.build.kind = BuildKind::Tets;
        preset.material = jelly.material;
        preset.material.weights.structural = 1.0;
        assert!(jelly.is_in(&preset));
        preset.material.limits.volume_max += 0.1;
        assert!(!jelly.is_in(&preset));
    }
}
