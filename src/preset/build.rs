//! [`Preset::build`]: the model, parameters and source mesh of a preset.

use std::path::Path;

use super::{BuildKind, MeshSource, PinSpec, Preset, PresetError, PresetErrorKind, Selector};
use crate::mesh::{self, ImportOptions, SurfaceMesh, TexCoords, ValidateOptions, Vec3};
use crate::model::tetra::{self, TetraOptions};
use crate::model::{Attachment, ClothGrid, Model, Pins, Skin};
use crate::solver::{Collider, SimParams};

/// What [`Preset::build`] makes.
#[derive(Clone, Debug)]
pub struct Built {
    /// The model with its pins.
    pub model: Model,
    /// The simulation parameters.
    pub params: SimParams,
    /// The OBJ surface the model was built from, if any (for a tet model,
    /// the model's skin).
    pub surface: Option<SurfaceMesh>,
    /// The generated grid, for the grid selectors.
    grid: Option<ClothGrid>,
    /// What the mesh's import repaired or found off, and what the
    /// tetrahedraliser had to guess, in plain words (as `softbody inspect`
    /// and `softbody tetrahedralize` say them); none for a grid.
    pub warnings: Vec<String>,
    /// Metres per unit of the mesh file ([`Build::scale`](super::Build::scale)):
    /// exports that overlay the file (a bake) divide by it.
    pub scale: f64,
    /// Whether the surface is flat (see [`tetra::is_flat`]).
    flat: bool,
}

impl Built {
    /// Whether the model is a generated grid (which the top edge and top
    /// corners selectors need).
    pub fn is_grid(&self) -> bool {
        self.grid.is_some()
    }

    /// Whether the model can be built as tets: its mesh is a surface that
    /// is not flat (a grid and a flat OBJ enclose no volume).
    pub fn can_be_tets(&self) -> bool {
        self.surface.is_some() && !self.flat
    }
}

/// Counts of a built model, for reports (`softbody inspect`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BuildSummary {
    /// Simulated vertices.
    pub vertices: usize,
    /// Structural springs.
    pub structural: usize,
    /// Shear springs.
    pub shear: usize,
    /// Bending springs.
    pub bending: usize,
    /// Tetrahedra.
    pub tets: usize,
    /// Hard-pinned vertices.
    pub hard_pins: usize,
    /// Soft-pinned vertices.
    pub soft_pins: usize,
    /// Total mass in kg.
    pub total_mass: f64,
    /// Vertices of the skin drawn instead of the model's own triangles.
    pub skin_vertices: Option<usize>,
    /// Texture coordinates the exports carry ([`TexCoords::exported`] of
    /// [`Built::texcoords`]; 0 without).
    pub texcoords: usize,
}

impl Built {
    /// The pins `spec` selects on this model, as [`Preset::build`] resolves
    /// them: hard pins, then soft pins on vertices not hard-pinned, each at
    /// its rest position. Needs only the model's rest positions and skin,
    /// not its current pins, so it is cheap to call on a changed spec.
    ///
    /// # Errors
    /// [`PresetErrorKind::UnknownGroup`] for a group the mesh lacks;
    /// [`PresetErrorKind::IndexOutOfRange`] for an index beyond the model;
    /// [`PresetErrorKind::Invalid`] for a selector that selects no vertex.
    pub fn resolve_pins(&self, spec: &PinSpec) -> Result<Pins, PresetErrorKind> {
        let select_all =
            |list: &str, selectors: &[Selector]| -> Result<Vec<u32>, PresetErrorKind> {
                let mut all = Vec::new();
                for (i, s) in selectors.iter().enumerate() {
                    let field = format!("pins.{list}[{i}]");
                    let selected = self.select_at(s, &field)?;
                    if selected.is_empty() {
                        return Err(PresetErrorKind::Invalid {
                            field,
                            message: "selects no vertex".to_owned(),
                        });
                    }
                    all.extend(selected);
                }
                Ok(all)
            };
        let mut pins = Pins::hard(select_all("hard", &spec.hard)?);
        let mut soft: Vec<u32> = select_all("soft", &spec.soft)?
            .into_iter()
            .filter(|&v| !pins.is_hard(v))
            .collect();
        soft.sort_unstable();
        soft.dedup();
        pins.soft = soft
            .into_iter()
            .map(|vertex| Attachment {
                vertex,
                target: self.model.rest[vertex as usize],
            })
            .collect();
        Ok(pins)
    }

    /// The model vertices `selector` picks, sorted and unique.
    ///
    /// # Errors
    /// As [`Built::resolve_pins`], naming the field `selector`.
    pub fn select(&self, selector: &Selector) -> Result<Vec<u32>, PresetErrorKind> {
        let mut selected = self.select_at(selector, "selector")?;
        selected.sort_unstable();
        selected.dedup();
        Ok(selected)
    }

    fn select_at(&self, selector: &Selector, field: &str) -> Result<Vec<u32>, PresetErrorKind> {
        select(
            selector,
            field,
            &self.model,
            self.surface.as_ref(),
            self.grid.as_ref(),
        )
    }

    /// The texture coordinates of the model's drawn and exported triangles
    /// ([`Model::render_triangles`]): the OBJ file's or the grid's; `None`
    /// for a mesh without (a tet file, an OBJ without `vt`) or a model whose
    /// triangles are not its source's.
    pub fn texcoords(&self) -> Option<&TexCoords> {
        let (triangles, texcoords) = match (&self.grid, &self.surface) {
            (Some(grid), _) => (&grid.triangles[..], &grid.texcoords),
            (None, Some(surface)) => (surface.triangles(), surface.texcoords()?),
            (None, None) => return None,
        };
        (self.model.render_triangles() == triangles).then_some(texcoords)
    }

    /// The counts of the model.
    pub fn summary(&self) -> BuildSummary {
        let m = &self.model;
        BuildSummary {
            vertices: m.vertex_count(),
            structural: m.springs.structural.len(),
            shear: m.springs.shear.len(),
            bending: m.springs.bending.len(),
            tets: m.tets.len(),
            hard_pins: m.pins.hard_vertices().len(),
            soft_pins: m.pins.soft.len(),
            total_mass: m.total_mass(),
            skin_vertices: m.skin.as_ref().map(|s| s.embedding.len()),
            texcoords: self.texcoords().map_or(0, TexCoords::exported),
        }
    }
}

impl std::fmt::Display for BuildSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "  vertices:    {}", self.vertices)?;
        writeln!(
            f,
            "  springs:     {} structural, {} shear, {} bending",
            self.structural, self.shear, self.bending
        )?;
        writeln!(f, "  tets:        {}", self.tets)?;
        if let Some(skin) = self.skin_vertices {
            writeln!(f, "  skin:        {skin} vertices")?;
        }
        if self.texcoords > 0 {
            writeln!(f, "  texture:     {} coordinates", self.texcoords)?;
        }
        writeln!(
            f,
            "  pins:        {} hard, {} soft",
            self.hard_pins, self.soft_pins
        )?;
        writeln!(
            f,
            "  total mass:  {} kg",
            crate::param::format_value(self.total_mass)
        )
    }
}

/// The built model before pins, with what the pin selectors need.
struct Source {
    model: Model,
    surface: Option<SurfaceMesh>,
    grid: Option<ClothGrid>,
    warnings: Vec<String>,
}

impl Preset {
    /// Builds the model: loads the mesh (paths relative to `preset_path`'s
    /// directory), makes springs or tets, and resolves the pins.
    ///
    /// # Errors
    /// [`PresetErrorKind::Mesh`] or [`PresetErrorKind::TetFile`] if the mesh
    /// cannot be loaded; [`PresetErrorKind::Tetrahedralize`] if it cannot be
    /// tetrahedralised; [`PresetErrorKind::UnknownGroup`] for a group the
    /// mesh lacks; [`PresetErrorKind::IndexOutOfRange`] for an index beyond
    /// the model; [`PresetErrorKind::Invalid`] for a preset that fails
    /// [`Preset::validate`] or a selector that selects no vertex. Errors
    /// name `preset_path`, without a line (the text is not at hand).
    pub fn build(&self, preset_path: &Path) -> Result<Built, PresetError> {
        let fail = |kind| PresetError::new(preset_path, kind);
        self.validate().map_err(fail)?;
        let Source {
            model,
            surface,
            grid,
            warnings,
        } = self.source(preset_path).map_err(fail)?;
        let mut built = Built {
            model,
            params: self.sim.clone(),
            flat: surface.as_ref().is_some_and(tetra::is_flat),
            surface,
            grid,
            warnings,
            scale: self.build.scale,
        };
        built.model.pins = built.resolve_pins(&self.pins).map_err(fail)?;
        let vertices = built.model.vertex_count();
        if let Some(saved) = self.pins.model_vertices.filter(|&n| n != vertices) {
            return Err(fail(PresetErrorKind::Invalid {
                field: "pins.model_vertices".to_owned(),
                message: format!(
                    "the pins' vertex numbers were saved for a model of {saved} vertices, and \
                     the mesh and build now make {vertices} (the mesh, or the build's kind, \
                     resolution or scale, changed since): they would pin other vertices; set \
                     the build back, or remove the numbered pins and this line and pin again"
                ),
            }));
        }
        let inside = collider_warnings(&built.model, &self.sim.colliders);
        built.warnings.extend(inside);
        built.warnings.extend(weight_warnings(&built.model));
        Ok(built)
    }

    /// The model without pins, its files named relative to the preset at
    /// `preset_path`.
    fn source(&self, preset_path: &Path) -> Result<Source, PresetErrorKind> {
        let material = &self.material;
        let tets = self.build.kind == BuildKind::Tets;
        let mut source = match &self.mesh {
            MeshSource::Grid(spec) => {
                let mut grid = ClothGrid::new(spec.n, spec.width);
                if spec.horizontal {
                    grid.lie_flat();
                }
                let model = Model::from_cloth_grid(&grid, material.density, material.weights);
                let warnings = grid_size_warning(&model.rest).into_iter().collect();
                Source {
                    model,
                    surface: None,
                    grid: Some(grid),
                    warnings,
                }
            }
            MeshSource::Obj(file) => {
                let (surface, report) = mesh::load_obj(
                    &super::beside_preset(preset_path, file),
                    &ImportOptions::default(),
                    &ValidateOptions::default(),
                )
                .map_err(|error| PresetErrorKind::Mesh {
                    field: "mesh.obj".to_owned(),
                    error: Box::new(error),
                })?;
                let surface = surface.scaled(self.build.scale);
                // The tetrahedraliser's first for tets (what the body is
                // made of), the import's repairs after.
                let mut warnings: Vec<String> =
                    tetra::crossing_warning(&surface).into_iter().collect();
                let model = if tets {
                    let options = TetraOptions {
                        resolution: self
                            .build
                            .resolution
                            .unwrap_or(TetraOptions::DEFAULT_RESOLUTION),
                    };
                    let tetra = tetra::tetrahedralize(&surface, &options)
                        .map_err(|e| PresetErrorKind::Tetrahedralize(Box::new(e)))?;
                    warnings.splice(0..0, tetra.warnings(&surface));
                    Model::from_tetrahedralization(
                        &surface,
                        &tetra,
                        material.density,
                        material.weights,
                        self.build.edge_springs,
                    )
                } else {
                    Model::from_surface(&surface, material.density, material.weights)
                };
                // (A tet build has no bending springs to miss.)
                let springs_only =
                    crate::mesh::report::non_manifold_note(report.non_manifold_edges);
                let kept = report.warnings.into_iter();
                warnings.extend(kept.filter(|w| !tets || *w != springs_only));
                // First: the one a note on opening shows, and the one to
                // act on before the others (a body 150 m long sags as one).
                if let Some(size) = size_warning(surface.positions(), self.build.scale) {
                    warnings.insert(0, size);
                }
                Source {
                    model,
                    surface: Some(surface),
                    grid: None,
                    warnings,
                }
            }
            MeshSource::TetFile(file) => {
                let mesh = mesh::read_tet_mesh(&super::beside_preset(preset_path, file)).map_err(
                    |error| PresetErrorKind::TetFile {
                        field: "mesh.tet_file".to_owned(),
                        error: Box::new(error),
                    },
                )?;
                // Checked again (its size, its tets' shapes) only at another
                // scale: the reader checked it as it is.
                let scale = self.build.scale;
                let (mesh, unused) = mesh.without_unused();
                let mesh = if scale == 1.0 {
                    mesh
                } else {
                    mesh.scaled(scale).map_err(|e| PresetErrorKind::Invalid {
                        field: "build.scale".to_owned(),
                        message: format!(
                            "{} at a scale of {}: {e}",
                            file.display(),
                            crate::param::format_value(scale)
                        ),
                    })?
                };
                let mut warnings: Vec<String> = size_warning(mesh.positions(), self.build.scale)
                    .into_iter()
                    .collect();
                if let Some(first) = unused.first() {
                    // (An unused vertex has no mass: it failed as "vertex
                    // 491 has mass 0", a simulation parameter.)
                    let verb = if unused.len() == 1 { "is" } else { "are" };
                    warnings.push(format!(
                        "{}: {} of its {} vertices {verb} used by no tetrahedron (the first is \
                         its vertex {} in order, counted from 1): left out, the others \
                         renumbered",
                        file.display(),
                        unused.len(),
                        mesh.positions().len() + unused.len(),
                        first + 1
                    ));
                }
                Source {
                    model: Model::from_tet_mesh(
                        &mesh,
                        material.density,
                        material.weights,
                        self.build.edge_springs,
                    ),
                    surface: None,
                    grid: None,
                    warnings,
                }
            }
        };
        source.model.limits = material.limits;
        Ok(source)
    }
}

/// Notes of weights that leave the model's constraints holding nothing:
/// every elastic weight 0 (its vertices fell as dust, unsaid), soft pins
/// of attachment weight 0.
fn weight_warnings(model: &Model) -> Vec<String> {
    let w = &model.weights;
    let springs = &model.springs;
    let held = [
        (springs.structural.len(), w.structural),
        (springs.shear.len(), w.shear),
        (springs.bending.len(), w.bending),
        (model.tets.len(), w.strain.max(w.strain_limit).max(w.volume)),
    ]
    .iter()
    .any(|&(count, weight)| count > 0 && weight > 0.0);
    let mut warnings = Vec::new();
    if !held && model.vertex_count() > 1 {
        warnings.push(
            "no constraint holds the body's shape (its elastic weights are 0): its vertices \
             move alone"
                .to_owned(),
        );
    }
    let soft = model.pins.soft.len();
    if soft > 0 && w.attachment == 0.0 {
        warnings.push(format!(
            "the attachment weight is 0: its {soft} soft {} hold nothing",
            if soft == 1 { "pin" } else { "pins" }
        ));
    }
    warnings
}

/// The sizes of a body in metres (its bounding box's diagonal) that say
/// nothing of its file's units: a body from a centimetre to a hundred
/// metres across may well be in metres.
const PLAUSIBLE_SIZE: std::ops::RangeInclusive<f64> = 0.01..=100.0;

/// A note that a body built at `scale` is outside [`PLAUSIBLE_SIZE`] (a file
/// in centimetres read as metres makes a cow 150 m long, which sags as
/// one), with the scale that would bring it near a metre.
fn size_warning(positions: &[Vec3], scale: f64) -> Option<String> {
    let size = implausible_size(positions)?;
    // The power of ten that brings it nearest 1 m.
    let factor = 10f64.powf(-size.log10().round());
    let suggested = scale * factor;
    let shown = crate::param::format_value(suggested);
    let advice = if super::Build::SCALE_RANGE.contains(&suggested) {
        format!("set the build's scale (e.g. {shown})")
    } else {
        // (It suggested 1e5, which the scale's range refuses.)
        format!(
            "rescale the file in a modeller: a scale of about {shown} is outside the build's range"
        )
    };
    Some(format!(
        "the body is {} m across at a scale of {} m per file unit: if the file is not in \
         metres, {advice}",
        crate::param::format_value(size),
        crate::param::format_value(scale),
    ))
}

/// A note that a generated cloth is outside [`PLAUSIBLE_SIZE`] (its width
/// is in metres, without a scale: QA's 1e9 m grid said nothing).
fn grid_size_warning(positions: &[Vec3]) -> Option<String> {
    let size = implausible_size(positions)?;
    Some(format!(
        "the cloth is {} m across (its grid's width is in metres): a body under 1 cm or over \
         100 m across is seldom meant, and its weights and time step want other values",
        crate::param::format_value(size)
    ))
}

/// The size of the body at `positions` (its bounding box's diagonal) when
/// it is outside [`PLAUSIBLE_SIZE`] (and not 0 or infinite, which say
/// nothing).
fn implausible_size(positions: &[Vec3]) -> Option<f64> {
    let (lo, hi) = crate::mesh::bounds(positions);
    let size = (hi - lo).norm();
    (!PLAUSIBLE_SIZE.contains(&size) && size.is_finite() && size > 0.0).then_some(size)
}

/// Notes on the colliders the body starts inside. Its free vertices there
/// are pushed out in the first frame, a jump that stores energy (QA: a
/// cloth cutting through a ball gained 58.6 J in its first frame); its
/// hard-pinned ones stay there. A vertex within a millionth of the body's
/// size of the surface is on it, not inside.
fn collider_warnings(model: &Model, colliders: &[Collider]) -> Vec<String> {
    let (lo, hi) = crate::mesh::bounds(&model.rest);
    let tolerance = 1e-6 * (hi - lo).norm();
    let mut warnings = Vec::new();
    for (k, c) in colliders.iter().enumerate() {
        let (mut free, mut pinned) = (0usize, 0usize);
        for (v, x) in model.rest.iter().enumerate() {
            if c.depth(*x) > tolerance {
                if model.pins.is_hard(v as u32) {
                    pinned += 1;
                } else {
                    free += 1;
                }
            }
        }
        let what = match c {
            Collider::Ground { .. } => "ground",
            Collider::Sphere { .. } => "sphere",
        };
        let vertices = |n: usize| match n {
            1 => "1 vertex".to_owned(),
            n => format!("{n} vertices"),
        };
        if free > 0 {
            warnings.push(format!(
                "the body starts with {} inside sim.colliders[{k}] (a {what}): the first frame \
                 pushes them out, a jump that stores energy; move the body or the collider",
                vertices(free)
            ));
        }
        if pinned > 0 {
            warnings.push(format!(
                "hard pins hold {} inside sim.colliders[{k}] (a {what})",
                vertices(pinned)
            ));
        }
    }
    warnings
}

/// The corners of the tet carrying skin vertex `v` that it moves with (its
/// weight in them is not zero): pinned, they hold it exactly.
fn carriers(skin: &Skin, v: usize) -> impl Iterator<Item = u32> + '_ {
    let (corners, weights) = (skin.embedding.corners[v], skin.embedding.weights[v]);
    (0..4)
        .filter(move |&k| weights[k] != 0.0)
        .map(move |k| corners[k])
}

/// The model vertices `selector` picks (unsorted, possibly repeated).
fn select(
    selector: &Selector,
    field: &str,
    model: &Model,
    surface: Option<&SurfaceMesh>,
    grid: Option<&ClothGrid>,
) -> Result<Vec<u32>, PresetErrorKind> {
    // The model vertices at rest where `keep` holds; on a tet model with a
    // skin, also every corner that carries a surface vertex there, so that
    // the surface the rule covers is held exactly (the skin's vertices lie
    // inside tets whose other corners the rule may miss: a clamped face
    // moved by up to 0.6 % of the body's size).
    let where_rest = |keep: &dyn Fn(&Vec3) -> bool| -> Vec<u32> {
        let mut selected: Vec<u32> = (0..model.vertex_count() as u32)
            .filter(|&v| keep(&model.rest[v as usize]))
            .collect();
        if let (Some(skin), Some(surface)) = (&model.skin, surface) {
            for (v, p) in surface.positions().iter().enumerate() {
                if keep(p) {
                    selected.extend(carriers(skin, v));
                }
            }
        }
        selected
    };
    match selector {
        Selector::Indices(indices) => {
            in_range(indices, field, model)?;
            Ok(indices.clone())
        }
        Selector::Group(name) => {
            let groups = surface.map_or(&[][..], SurfaceMesh::groups);
            let group = groups.iter().find(|g| &g.name == name).ok_or_else(|| {
                PresetErrorKind::UnknownGroup {
                    field: field.to_owned(),
                    name: name.clone(),
                    available: groups.iter().map(|g| g.name.clone()).collect(),
                }
            })?;
            Ok(match &model.skin {
                // The tet corners that carry the group's surface vertices.
                Some(skin) => group
                    .vertices
                    .iter()
                    .flat_map(|&v| carriers(skin, v as usize))
                    .collect(),
                None => group.vertices.clone(),
            })
        }
        Selector::Plane {
            point,
            normal,
            distance,
        } => {
            // Scaled first: the norm of a huge normal overflows (and its
            // normalisation would be zero, selecting every vertex).
            let n = (normal / normal.amax()).normalize();
            Ok(where_rest(&|x| (x - point).dot(&n).abs() <= *distance))
        }
        Selector::Box { min, max } => Ok(where_rest(&|x| {
            x.iter()
                .zip(min.iter().zip(max.iter()))
                .all(|(c, (lo, hi))| lo <= c && c <= hi)
        })),
        // Validation allows these only with a grid (else they select nothing).
        Selector::TopCorners => Ok(grid.map_or(Vec::new(), |g| g.top_corners().to_vec())),
        Selector::TopEdge => Ok(grid.map_or(Vec::new(), ClothGrid::top_edge)),
        Selector::Except { of, indices } => {
            let mut selected = select(of, &format!("{field}.except.of"), model, surface, grid)?;
            // (Out of range, they were taken for vertices the rule left
            // alone: a mesh renumbered under them went unsaid.)
            in_range(indices, &format!("{field}.except.indices"), model)?;
            let mut left_out = indices.clone();
            left_out.sort_unstable();
            selected.retain(|v| left_out.binary_search(v).is_err());
            Ok(selected)
        }
    }
}

/// Fails at the first of `indices` (of the selector at `field`) that is no
/// vertex of `model`.
fn in_range(indices: &[u32], field: &str, model: &Model) -> Result<(), PresetErrorKind> {
    let vertices = model.vertex_count();
    match indices.iter().find(|&&i| i as usize >= vertices) {
        Some(&index) => Err(PresetErrorKind::IndexOutOfRange {
            field: field.to_owned(),
            index,
            vertices,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale a size warning suggests is one the build takes; past its
    /// range the warning says to rescale the file (it suggested 1e5 for a
    /// body 1e-5 across, which the preset then refused).
    #[test]
    fn a_size_warning_suggests_only_scales_in_range() {
        let body = |size: f64| [Vec3::zeros(), Vec3::new(size, 0.0, 0.0)];
        let warning = size_warning(&body(150.0), 1.0).unwrap();
        assert!(
            warning.ends_with("set the build's scale (e.g. 0.01)"),
            "{warning}"
        );
        for (size, scale) in [(1e-5, 1.0), (5e4, 1e-3)] {
            let warning = size_warning(&body(size), scale).unwrap();
            assert!(
                warning.contains("rescale the file in a modeller"),
                "{warning}"
            );
        }
        assert_eq!(size_warning(&body(2.0), 1.0), None);
    }
}
