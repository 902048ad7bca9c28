//! Presets: the saved state of a scene as plain serde data in TOML — the
//! mesh and how the model is built from it, the material (density, weights,
//! tet limits), pins, [`SimParams`] with colliders, and the view. A preset
//! is the unit of undo (`Clone + PartialEq`); everything derived from it
//! (the [`Model`](crate::model::Model), the solver) is rebuilt with
//! [`Preset::build`].
//!
//! # Format (version 1)
//! ```toml
//! version = 1
//! name = "Hanging cloth"              # optional; shown in titles
//!
//! [mesh]                               # exactly one of:
//! grid = { n = 30, width = 1.0 }       #   generated n × n cloth grid, width in m
//! # obj = "../meshes/sphere.obj"       #   OBJ, relative to the preset file
//! # tet_file = "../meshes/cube.msh"    #   .node/.ele or .msh tet mesh
//!
//! [build]                              # optional
//! kind = "springs"                     # "springs" (default) or "tets"
//! # resolution = 12                    # tets from an OBJ: lattice cells (default 30)
//! # edge_springs = false               # tets: every tet edge also a spring
//!
//! [material]
//! density = 0.2                        # kg/m² (springs) or kg/m³ (tets)
//! weights = { structural = 1000.0, shear = 500.0, bending = 20.0 }  # missing: Weights::default()
//! # limits = { strain_min = 0.9, ... } # TetLimits; missing: TetLimits::default()
//!
//! [pins]                               # optional; each a list of selectors
//! hard = ["top_corners"]
//! soft = [{ indices = [3, 4] }, { group = "left" },
//!         { plane = { point = [0, 0.5, 0], normal = [0, 1, 0], distance = 0.01 } },
//!         { box = { min = [-1, -1, -1], max = [1, 1, 1] } }]
//!
//! [sim]                                # optional; missing fields: SimParams::default()
//! dt = 0.016666666666666666
//! iterations = 10
//! colliders = [{ type = "ground", height = -1.0, friction = 0.5 }]
//!
//! [view]                               # optional camera
//! eye = [0.0, 0.0, 2.5]
//! ```
//! Selectors: `indices` (explicit model vertices), `group` (an OBJ `o`/`g`
//! name), `plane` (vertices within `distance` of the plane through `point`
//! with `normal`), `box` (vertices inside the axis-aligned box), and for a
//! grid `"top_corners"` and `"top_edge"`; `except` takes a selector's
//! vertices but some (`{ except = { of = "top_edge", indices = [0] } }`,
//! written when the editor unpins part of a rule). Rules and groups survive
//! re-meshing; indices do not (but a session that builds its mesh another
//! way moves them to the nearest vertices of the new model). A soft pin pulls its vertex to its rest
//! position with the `attachment` weight; a vertex both hard- and
//! soft-pinned is hard.
//!
//! Every table refuses unknown keys (with the closest valid name
//! suggested); [`Preset::load`] then checks the values (see
//! [`PresetErrorKind`]), and [`Preset::build`] what needs the mesh (group
//! names, vertex indices).
//!
//! # Version 0
//! The first format was flat, springs-only, and pinned by index:
//! ```toml
//! version = 0
//! mesh = "cloth.obj"
//! density = 0.3
//! stiffness = { stretch = 1000.0, shear = 500.0, bend = 20.0 }  # shear optional (stretch/2)
//! dt = 0.016666666666666666   # optional, as the SimParams default
//! iterations = 10             # optional
//! gravity = -9.8              # optional: the y component
//! pins = [0, 29]              # optional: hard pins
//! ```
//! It is migrated on load ([`Preset::load_reporting`] says so); saving
//! always writes the current version.

mod build;
mod diff;
mod error;
mod layout;
pub mod library;
mod migrate;

use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use build::{BuildSummary, Built};
pub use diff::describe_changes;
pub use error::{PresetError, PresetErrorKind, UnknownKind};

use crate::mesh::{SIZE_RANGE, Vec3};
use crate::model::tetra::TetraOptions;
use crate::model::{TetLimits, Weights};
use crate::solver::{Collider, SimParams};
use error::Locator;

/// The format version [`Preset::save`] writes.
pub const CURRENT_VERSION: u32 = 1;

/// Largest cloth grid side (nodes): 10⁶ vertices.
pub const MAX_GRID_NODES: usize = 1000;

/// The largest constraint weight (N/m for springs, Pa for tets: steel's
/// shear modulus is 8e10 Pa). Past it a weight is a typo, and one of 1e20
/// leaves the system matrix beyond double precision.
pub const MAX_WEIGHT: f64 = 1e12;

/// The largest magnitude of gravity a preset takes, m/s²: far past any
/// scene (the tests drive blow-ups with it), and 1e300 overflowed the
/// energies to infinity.
pub const MAX_GRAVITY: f64 = 1e12;

/// The largest friction coefficient a collider takes: rubber on concrete is
/// about 1, and past a few any contact sticks; 1e308 overflowed the
/// contacts' forces.
pub const MAX_FRICTION: f64 = 1e3;

/// How far from the origin a collider may lie, m (the largest grid a
/// preset takes is as wide): a ground at 1e308 threw the body there and
/// the step was reported as a blow-up.
pub const MAX_COLLIDER_EXTENT: f64 = 1e9;

/// How far from the origin the camera may be, m: 1,000 times the largest
/// body away (an eye at 1e308 overflowed its distance to the target, and
/// was said to be at the target).
pub const MAX_VIEW_EXTENT: f64 = 1e12;

/// The densities a preset takes (kg/m² for a surface, kg/m³ for a volume:
/// tissue paper is 0.02 kg/m², osmium 22,590 kg/m³).
pub const DENSITY_RANGE: (f64, f64) = (1e-6, 1e6);

/// The largest preset file read: far above any real one (every vertex of a
/// million-vertex mesh pinned by index takes ~8 MB), far below memory.
pub const MAX_PRESET_BYTES: u64 = 64 << 20;

/// The whole-number fields whose range is narrower than their type's:
/// their checks, and the errors of values that are not whole numbers at
/// all, name it.
static WHOLE_RANGES: [(&str, RangeInclusive<usize>); 4] = [
    ("mesh.grid.n", 2..=MAX_GRID_NODES),
    ("build.resolution", TetraOptions::RESOLUTION_RANGE),
    ("sim.iterations", 1..=SimParams::MAX_ITERATIONS),
    ("sim.substeps", 1..=SimParams::MAX_SUBSTEPS),
];

/// The range of `field` if it is one of [`WHOLE_RANGES`].
pub(crate) fn whole_range(field: &str) -> Option<RangeInclusive<usize>> {
    (WHOLE_RANGES.iter())
        .find(|(f, _)| *f == field)
        .map(|(_, r)| r.clone())
}

/// `[a, b]`.
pub(crate) fn interval(r: RangeInclusive<usize>) -> String {
    format!("[{}, {}]", r.start(), r.end())
}

/// A scene's saved state. See the [module docs](self) for the TOML format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Format version; [`CURRENT_VERSION`] once loaded.
    pub version: u32,
    /// A display name. Default empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Where the vertices come from.
    pub mesh: MeshSource,
    /// How the model is built from the mesh. Default: springs.
    #[serde(default)]
    pub build: Build,
    /// Density, weights and tet limits.
    pub material: Material,
    /// Hard and soft pins. Default: none.
    #[serde(default)]
    pub pins: PinSpec,
    /// Time stepping, gravity and colliders. Default [`SimParams::default`].
    #[serde(default)]
    pub sim: SimParams,
    /// The camera, as the editor saved it (it opens the preset looking
    /// from there); none: the editor frames the model, looking along
    /// [`View::THREE_QUARTER`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<View>,
}

/// The mesh a model is built from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MeshSource {
    /// The generated cloth grid of [`ClothGrid`](crate::model::ClothGrid):
    /// needs no file.
    Grid(GridSpec),
    /// An OBJ file, relative to the preset file.
    Obj(PathBuf),
    /// A `.node`/`.ele` or `.msh` tet mesh file, relative to the preset file.
    TetFile(PathBuf),
}

/// A generated cloth grid.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    /// Nodes per side, 2 to [`MAX_GRID_NODES`].
    pub n: usize,
    /// Side length in metres, positive.
    pub width: f64,
    /// Whether the cloth starts lying flat, its top edge where the hanging
    /// cloth's is and its rows reaching towards +z, so that it falls and
    /// swings down from its pins when played (see
    /// [`ClothGrid::lie_flat`](crate::model::ClothGrid::lie_flat)). Default
    /// false: hanging in the `x`-`y` plane, the seed's layout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub horizontal: bool,
}

/// How a model is built from its mesh.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// Springs or tets. Default springs.
    #[serde(default)]
    pub kind: BuildKind,
    /// Tets from an OBJ: lattice cells across the longest side (default
    /// [`TetraOptions::DEFAULT_RESOLUTION`], range
    /// [`TetraOptions::RESOLUTION_RANGE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<usize>,
    /// Tets: every tet edge is also a structural spring. Default false.
    #[serde(default)]
    pub edge_springs: bool,
    /// Metres per unit of the mesh file (an OBJ or a tet file): its
    /// coordinates are multiplied by it when the model is built, and the
    /// model, its pins' rules, colliders and camera are in metres; baked
    /// frames are written back in the file's units, so they overlay the
    /// mesh they came from. Default 1 (a file in metres, as Blender writes
    /// them); 0.01 for a file in centimetres. In [`Build::SCALE_RANGE`]; a
    /// grid's size is its width (a grid takes 1 only).
    #[serde(
        default = "Build::unit_scale",
        skip_serializing_if = "Build::is_unit_scale"
    )]
    pub scale: f64,
}

impl Default for Build {
    fn default() -> Self {
        Self {
            kind: BuildKind::default(),
            resolution: None,
            edge_springs: false,
            scale: 1.0,
        }
    }
}

impl Build {
    /// The scales a mesh file may take: a micrometre to a kilometre per
    /// unit.
    pub const SCALE_RANGE: std::ops::RangeInclusive<f64> = 1e-6..=1e3;

    fn unit_scale() -> f64 {
        1.0
    }

    fn is_unit_scale(scale: &f64) -> bool {
        *scale == 1.0
    }
}

/// The constraint family of a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildKind {
    /// Springs from the surface's edges: structural on its edges, shear
    /// across its quads and polygons (and a grid's cells), bending across
    /// interior edges.
    #[default]
    Springs,
    /// Tetrahedra: the tet file's, or the OBJ tetrahedralised (the OBJ is
    /// then carried as the model's skin).
    Tets,
}

impl BuildKind {
    /// The density a preset takes when it switches to this kind: a
    /// density's unit changes with the kind (kg/m² ↔ kg/m³), so the old
    /// number means nothing in the new one (a cloth's 0.15 kg/m² read as
    /// kg/m³ made a body lighter than air). Springs: cotton's 0.15 kg/m²,
    /// the default cloth; tets: soft rubber's 1100 kg/m³, the body the
    /// default tet weights describe.
    pub fn default_density(self) -> f64 {
        match self {
            Self::Springs => 0.15,
            Self::Tets => 1100.0,
        }
    }

    /// The kind in words: `springs` or `tetrahedra`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Springs => "springs",
            Self::Tets => "tetrahedra",
        }
    }

    /// The unit of a density of this kind: `kg/m²` or `kg/m³`.
    pub fn density_unit(self) -> &'static str {
        match self {
            Self::Springs => "kg/m²",
            Self::Tets => "kg/m³",
        }
    }
}

/// Mass and stiffness.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Material {
    /// Areal density in kg/m² for spring models, volume density in kg/m³
    /// for tet models; positive.
    pub density: f64,
    /// Constraint weights (units in [`Weights`]). Missing weights take
    /// [`Weights::default`].
    #[serde(default)]
    pub weights: Weights,
    /// Ranges of the tet strain-limit and volume constraints. Default
    /// [`TetLimits::default`].
    #[serde(default)]
    pub limits: TetLimits,
}

impl Material {
    /// This material with what `other` sets for a model of `kind`: its
    /// density and the weights of that kind's constraints (with the tet
    /// limits for tets). The attachment weight, which belongs to the pins
    /// and the grab, and the other kind's weights, which a build of that
    /// kind takes back, stay.
    #[must_use]
    pub fn taking(mut self, other: &Material, kind: BuildKind) -> Material {
        let (ours, theirs) = (&mut self.weights, &other.weights);
        self.density = other.density;
        match kind {
            BuildKind::Springs => {
                (ours.structural, ours.shear, ours.bending) =
                    (theirs.structural, theirs.shear, theirs.bending);
            }
            BuildKind::Tets => {
                (ours.strain, ours.strain_limit, ours.volume) =
                    (theirs.strain, theirs.strain_limit, theirs.volume);
                self.limits = other.limits;
            }
        }
        self
    }
}

/// Hard and soft pins as selectors, resolved against the built model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PinSpec {
    /// Vertices removed from the unknowns.
    pub hard: Vec<Selector>,
    /// Vertices pulled to their rest positions with the attachment weight.
    pub soft: Vec<Selector>,
    /// The vertices of the model the selectors' vertex numbers were saved
    /// for (a save writes it where any selector has numbers): a model built
    /// with another count is refused, since the numbers would pin other
    /// vertices (QA set a cow's tet resolution by hand and its pinned feet
    /// became its neck). Sessions hold presets without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_vertices: Option<usize>,
}

impl PinSpec {
    /// Both lists with each selector mapped by `f` (dropped where it gives
    /// `None`).
    pub fn map(&self, f: impl Fn(&Selector) -> Option<Selector>) -> Self {
        Self {
            hard: self.hard.iter().filter_map(&f).collect(),
            soft: self.soft.iter().filter_map(&f).collect(),
            model_vertices: self.model_vertices,
        }
    }

    /// Whether a selector names vertices by number (those that mean only
    /// the model they were made on).
    pub fn has_indices(&self) -> bool {
        (self.hard.iter().chain(&self.soft))
            .any(|s| matches!(s, Selector::Indices(_) | Selector::Except { .. }))
    }
}

/// A set of model vertices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Selector {
    /// Explicit vertex indices of the built model.
    Indices(Vec<u32>),
    /// An OBJ object or group by name (for tets from an OBJ: the tet vertex
    /// nearest each group vertex, by its embedding weights).
    Group(String),
    /// Vertices within `distance` (m, ≥ 0) of the plane through `point`
    /// with (non-zero) `normal`.
    Plane {
        /// A point on the plane.
        point: Vec3,
        /// The plane's normal, any length but 0.
        normal: Vec3,
        /// Largest distance from the plane.
        distance: f64,
    },
    /// Vertices inside the axis-aligned box (bounds included).
    Box {
        /// Lower corner.
        min: Vec3,
        /// Upper corner, `≥ min` in every coordinate.
        max: Vec3,
    },
    /// A grid's two top corners.
    TopCorners,
    /// A grid's whole top row.
    TopEdge,
    /// The vertices of `of` but `indices`: how the editor unpins part of a
    /// rule or group and keeps the rule (an empty result is an error like
    /// any selector's).
    Except {
        /// The selector to take vertices from.
        of: Box<Selector>,
        /// Model vertices left out.
        indices: Vec<u32>,
    },
}

impl Selector {
    /// This selector for the body resized by `ratio` about the origin
    /// ([`Preset::resized`]): a plane's point and distance and a box's
    /// corners scale; indices, groups and a grid's rows stay.
    #[must_use]
    pub fn resized(&self, ratio: f64) -> Selector {
        match self {
            Selector::Plane {
                point,
                normal,
                distance,
            } => Selector::Plane {
                point: resize3(point, ratio),
                normal: *normal,
                distance: resize(*distance, ratio),
            },
            Selector::Box { min, max } => Selector::Box {
                min: resize3(min, ratio),
                max: resize3(max, ratio),
            },
            Selector::Except { of, indices } => Selector::Except {
                of: Box::new(of.resized(ratio)),
                indices: indices.clone(),
            },
            Selector::Indices(_)
            | Selector::Group(_)
            | Selector::TopCorners
            | Selector::TopEdge => self.clone(),
        }
    }

    /// What the selector holds, in words: "the top corners", "group feet",
    /// "a plane", "12 vertices by number", …
    pub fn describe(&self) -> String {
        match self {
            Selector::Indices(v) if v.len() == 1 => "1 vertex by number".to_owned(),
            Selector::Indices(v) => format!("{} vertices by number", v.len()),
            Selector::Group(name) => format!("group {name}"),
            Selector::Plane { .. } => "a plane".to_owned(),
            Selector::Box { .. } => "a box".to_owned(),
            Selector::TopCorners => "the top corners".to_owned(),
            Selector::TopEdge => "the top edge".to_owned(),
            Selector::Except { of, indices } => {
                format!("{} but {} of its vertices", of.describe(), indices.len())
            }
        }
    }

    /// The horizontal plane through the highest (`top`) or lowest rest
    /// vertex of `model`, selecting the vertices within 1 % of its height
    /// of it (a body's top, or its feet); `None` for a model that lies flat
    /// (its height under 1 % of its size), whose planes would hold every
    /// vertex (silk at rest).
    pub fn extreme_plane(model: &crate::model::Model, top: bool) -> Option<Selector> {
        let (lo, hi) = crate::mesh::bounds(&model.rest);
        let (low, high) = (lo.y, hi.y);
        (high - low > 0.01 * (hi - lo).norm()).then(|| Selector::Plane {
            point: Vec3::new(0.0, if top { high } else { low }, 0.0),
            normal: Vec3::y(),
            distance: 0.01 * (high - low),
        })
    }
}

/// The camera: where the editor's viewport looks from and to.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct View {
    /// Eye position (m).
    pub eye: Vec3,
    /// The point looked at (m).
    pub target: Vec3,
    /// Vertical field of view in degrees, in `(0, 180)`.
    pub fov_deg: f64,
}

impl View {
    /// The hanging cloth's camera: from the front right and a little
    /// above, 45°; the direction a model without a camera is framed from.
    pub const THREE_QUARTER: View = View {
        eye: Vec3::new(1.2, 0.1, 1.9),
        target: Vec3::new(0.0, -0.3, 0.0),
        fov_deg: 45.0,
    };

    /// Where the eye lies from the target, as `[yaw, pitch]` (radians): yaw
    /// about +y from +z towards +x, pitch up from the horizontal; `None`
    /// where the eye is at the target.
    pub fn angles(&self) -> Option<[f64; 2]> {
        let d = self.eye - self.target;
        let norm = d.norm();
        (norm > 1e-9).then(|| [d.x.atan2(d.z), (d.y / norm).asin()])
    }
}

impl Default for View {
    /// Looking at the origin along −z from 2.5 m, 45° (a 1 m cloth or body
    /// fills about half the height).
    fn default() -> Self {
        Self {
            eye: Vec3::new(0.0, 0.0, 2.5),
            target: Vec3::zeros(),
            fov_deg: 45.0,
        }
    }
}

/// A loaded preset and whether it was migrated.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedPreset {
    /// The preset, in the current version.
    pub preset: Preset,
    /// The version of the file when it was older than [`CURRENT_VERSION`].
    pub migrated_from: Option<u32>,
}

impl Default for Preset {
    /// The scene the editor opens on: a 1 m cotton cloth, a 30 × 30 grid,
    /// hanging from its two top corners (`presets/hanging_cloth.toml`).
    fn default() -> Self {
        Self {
            version: CURRENT_VERSION,
            name: "Hanging cloth".to_owned(),
            mesh: MeshSource::Grid(GridSpec {
                n: 30,
                width: 1.0,
                horizontal: false,
            }),
            build: Build::default(),
            material: Material {
                density: BuildKind::Springs.default_density(),
                weights: Weights {
                    structural: 1000.0,
                    shear: 500.0,
                    bending: 20.0,
                    ..Weights::default()
                },
                limits: TetLimits::default(),
            },
            pins: PinSpec {
                hard: vec![Selector::TopCorners],
                ..PinSpec::default()
            },
            sim: SimParams::default(),
            view: Some(View::THREE_QUARTER),
        }
    }
}

/// `v` times `ratio` to 12 significant digits: the products of a scale
/// change (`-0.52 × 0.1`) came out as `-0.052000000000000005`, which the
/// saved file then showed.
fn resize(v: f64, ratio: f64) -> f64 {
    let v = v * ratio;
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    format!("{v:.11e}").parse().unwrap_or(v)
}

/// [`resize`] of each coordinate of `v`.
fn resize3(v: &Vec3, ratio: f64) -> Vec3 {
    v.map(|c| resize(c, ratio))
}

/// `file`, named relative to the preset at `preset_path`, as a path from
/// here: beside the preset as named, else, where `preset_path` is a
/// symbolic link and the file is there, beside the preset the link names
/// (QA: a link to a shipped preset looked for `../meshes/cloth_quad.obj`
/// beside the link only).
pub fn beside_preset(preset_path: &Path, file: &Path) -> PathBuf {
    let beside = preset_path.parent().unwrap_or(Path::new("")).join(file);
    if beside.exists() || file.is_absolute() {
        return beside;
    }
    let real = std::fs::canonicalize(preset_path).ok();
    (real.as_deref().and_then(Path::parent))
        .map(|dir| dir.join(file))
        .filter(|p| p.exists())
        .unwrap_or(beside)
}

/// `name`, else (blank) the stem of the preset's file `path`, else
/// `untitled`: what a preset without a name is called where it is shown
/// or baked (a bake's frames read `o ` with no name, QA).
pub fn shown_name<'a>(name: &'a str, path: Option<&Path>) -> std::borrow::Cow<'a, str> {
    if !name.trim().is_empty() {
        return name.into();
    }
    (path.and_then(Path::file_stem)).map_or_else(
        || "untitled".into(),
        |s| s.to_string_lossy().into_owned().into(),
    )
}

/// The start of the first line of a saved preset, before the version.
const FORMAT_LINE: &str = "# Softbody Studio preset (format version";

/// Creates the directory `path` is to be saved in, if it is missing.
///
/// # Errors
/// [`PresetErrorKind::Write`] naming the directory that could not be made.
pub fn create_dir_of(path: &Path) -> Result<(), PresetError> {
    crate::fsutil::create_dir_of(path)
        .map_err(|message| PresetError::new(path, PresetErrorKind::Write(message)))
}

/// The comment lines a preset file's `text` opens with (blank lines between
/// them kept), without the format line a save writes itself; `None` if
/// there are none. A save keeps them (see [`Preset::save_over`]).
pub fn header_comments(text: &str) -> Option<String> {
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with(FORMAT_LINE) {
            continue;
        }
        if trimmed.starts_with('#') || trimmed.is_empty() {
            lines.push(line.trim_end());
        } else {
            break;
        }
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let first = lines.iter().position(|l| !l.is_empty())?;
    Some(lines[first..].join("\n"))
}

/// `text` with a format line among the comment lines it opens with (an
/// older version's) made the current one (what follows its `)` stays);
/// `text` without one stays without: a save over a file written by hand,
/// as the shipped presets are, changes its values and nothing else (it
/// gained this line, an unasked-for change in every diff).
fn with_format_line(text: &str) -> String {
    let line = format!("{FORMAT_LINE} {CURRENT_VERSION})");
    let mut offset = 0;
    for old in text.split_inclusive('\n') {
        let trimmed = old.trim();
        if trimmed.starts_with(FORMAT_LINE) {
            let after = old.find(')').map_or("\n", |i| &old[i + 1..]);
            let (before, rest) = (&text[..offset], &text[offset + old.len()..]);
            return format!("{before}{line}{after}{rest}");
        }
        if !(trimmed.is_empty() || trimmed.starts_with('#')) {
            break;
        }
        offset += old.len();
    }
    text.to_owned()
}

/// How [`Preset::save_over`] wrote a preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Laid out as the file it replaced (or new, with none to follow).
    AsLaidOut,
    /// In full after the replaced file's opening comments: its text could
    /// not be followed (it is not TOML, e.g. edited elsewhere since it was
    /// opened), and its other comments are gone.
    InFull,
}

/// `version` alone, read before the rest to choose the layout.
#[derive(Deserialize)]
struct VersionOnly {
    version: Option<i64>,
}

impl Preset {
    /// This preset with its mesh file read at `scale` metres per unit
    /// ([`Build::scale`]) and the rest of its scene resized with the body
    /// (about the origin, where the file's coordinates are scaled from):
    /// the pins' plane and box rules, the colliders and the camera, so they
    /// keep holding, touching and framing the same parts. Materials and
    /// gravity are per unit of size already and stay.
    #[must_use]
    pub fn resized(&self, scale: f64) -> Preset {
        let ratio = scale / self.build.scale;
        let mut next = self.clone();
        next.build.scale = scale;
        next.pins = next.pins.map(|s| Some(s.resized(ratio)));
        for collider in &mut next.sim.colliders {
            match collider {
                Collider::Ground { height, .. } => *height = resize(*height, ratio),
                Collider::Sphere { center, radius, .. } => {
                    *center = resize3(center, ratio);
                    *radius = resize(*radius, ratio);
                }
            }
        }
        if let Some(view) = &mut next.view {
            view.eye = resize3(&view.eye, ratio);
            view.target = resize3(&view.target, ratio);
        }
        next
    }

    /// A new untitled preset for the OBJ at `path` (named after the file):
    /// the default material and simulation, springs, no pins, no camera.
    pub fn for_obj(path: &Path) -> Self {
        let name = path
            .file_stem()
            .map_or_else(|| "untitled".into(), |s| s.to_string_lossy().into_owned());
        Self {
            name,
            mesh: MeshSource::Obj(path.to_owned()),
            pins: PinSpec::default(),
            // Framed, whatever its size and place.
            view: None,
            ..Self::default()
        }
    }

    /// The mesh file this preset reads, if any, as a path from where the
    /// preset file at `preset_path` is (relative paths in a preset are
    /// relative to its directory).
    pub fn mesh_file(&self, preset_path: &Path) -> Option<PathBuf> {
        match &self.mesh {
            MeshSource::Obj(file) | MeshSource::TetFile(file) => {
                Some(beside_preset(preset_path, file))
            }
            MeshSource::Grid(_) => None,
        }
    }

    /// Reads and checks a preset file (see [`Preset::load_reporting`]).
    ///
    /// # Errors
    /// As [`Preset::load_reporting`].
    pub fn load(path: &Path) -> Result<Preset, PresetError> {
        Self::load_reporting(path).map(|loaded| loaded.preset)
    }

    /// Reads and checks a preset file (at most [`MAX_PRESET_BYTES`]),
    /// migrating an older version.
    ///
    /// # Errors
    /// [`PresetErrorKind::Read`] if the file cannot be read, else as
    /// [`Preset::parse`].
    pub fn load_reporting(path: &Path) -> Result<LoadedPreset, PresetError> {
        use std::io::Read;
        let read = |e: std::io::Error| PresetError::new(path, PresetErrorKind::Read(e.to_string()));
        // At most MAX_PRESET_BYTES and one more: a 4 GB file aborted the
        // process allocating for it.
        let mut bytes = Vec::new();
        // Before opening: a named pipe without a writer blocks the open,
        // and a device read 64 MB, then was "larger than any preset".
        if let Some(what) = crate::fsutil::not_regular(&std::fs::metadata(path).map_err(read)?) {
            return Err(read(std::io::Error::other(what)));
        }
        let file = std::fs::File::open(path).map_err(read)?;
        file.take(MAX_PRESET_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        if bytes.len() as u64 > MAX_PRESET_BYTES {
            return Err(read(std::io::Error::other(format!(
                "larger than any preset ({} MB at most)",
                MAX_PRESET_BYTES >> 20
            ))));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            // The line of the first byte that is not UTF-8, as for any
            // other error in the text.
            let good = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let line = 1 + bytes[..good].iter().filter(|&&b| b == b'\n').count();
            let kind = PresetErrorKind::Read(format!(
                "not UTF-8 text (byte 0x{:02x}); save the preset as UTF-8",
                bytes[good]
            ));
            PresetError {
                line: Some(line),
                ..PresetError::new(path, kind)
            }
        })?;
        Self::parse(&text, path)
    }

    /// Parses and checks preset text (see [`Preset::parse`]) and drops the
    /// migration note.
    ///
    /// # Errors
    /// As [`Preset::parse`].
    pub fn from_toml_str(text: &str, path: &Path) -> Result<Preset, PresetError> {
        Self::parse(text, path).map(|loaded| loaded.preset)
    }

    /// Parses and checks preset text; `path` names the file in errors.
    ///
    /// # Errors
    /// Each with the line where known: [`PresetErrorKind::Syntax`] for text
    /// that is not TOML; [`PresetErrorKind::Version`] for an unknown version;
    /// [`PresetErrorKind::Unknown`] for an unknown key or variant (with the
    /// closest valid name); [`PresetErrorKind::Invalid`] for a missing key,
    /// a value of the wrong type, or one out of range (see
    /// [`Preset::validate`]).
    pub fn parse(text: &str, path: &Path) -> Result<LoadedPreset, PresetError> {
        let locator = Locator::new(text, path)?;
        let de_error = |e: toml::de::Error| locator.deserialize_error(path, &e);
        let version = toml::from_str::<VersionOnly>(text)
            .map_err(de_error)?
            .version
            .ok_or_else(|| {
                PresetError::new(
                    path,
                    PresetErrorKind::Invalid {
                        field: "version".to_owned(),
                        message: format!(
                            "missing; the current format is version {CURRENT_VERSION}"
                        ),
                    },
                )
            })?;
        let (preset, migrated_from) = match version {
            0 => (
                migrate::from_v0(toml::from_str(text).map_err(de_error)?),
                Some(0),
            ),
            1 => (toml::from_str::<Preset>(text).map_err(de_error)?, None),
            other => {
                return Err(locator.at_field(path, "version", PresetErrorKind::Version(other)));
            }
        };
        if let Err((field, message)) = validate::preset(&preset) {
            let field = match migrated_from {
                Some(0) => migrate::v0_field(&field).to_owned(),
                _ => field,
            };
            let line_field = field.clone();
            return Err(locator.at_field(
                path,
                &line_field,
                PresetErrorKind::Invalid { field, message },
            ));
        }
        Ok(LoadedPreset {
            preset,
            migrated_from,
        })
    }

    /// The preset as TOML in the current version, preceded by a one-line
    /// header comment. Floats are written in shortest round-trip form, so
    /// parsing the text gives back an equal preset.
    ///
    /// # Errors
    /// A [`toml::ser::Error`] for a value TOML cannot hold (an integer above
    /// `i64::MAX`, a path that is not UTF-8).
    pub fn to_toml_string(&self) -> Result<String, toml::ser::Error> {
        self.to_toml_string_with_header(None)
    }

    /// [`Preset::to_toml_string`] with the comment lines `header` (see
    /// [`header_comments`]) after the format line.
    fn to_toml_string_with_header(&self, header: Option<&str>) -> Result<String, toml::ser::Error> {
        let body = layout::short_floats(&toml::to_string(&Preset {
            version: CURRENT_VERSION,
            ..self.clone()
        })?);
        let header = header.map_or_else(String::new, |h| format!("{h}\n"));
        Ok(format!("{FORMAT_LINE} {CURRENT_VERSION})\n{header}{body}"))
    }

    /// Writes the preset to `path` atomically (a temporary file in the same
    /// directory renamed over it; see
    /// [`fsutil::write_atomically`](crate::fsutil::write_atomically)),
    /// without comments (see [`Preset::save_over`]). A missing
    /// directory is created first (a "save as" typed into a new folder).
    ///
    /// # Errors
    /// [`PresetErrorKind::Write`] if serialising or writing fails; the
    /// previous file at `path`, if any, is then intact.
    pub fn save(&self, path: &Path) -> Result<(), PresetError> {
        self.save_over(path, None).map(|_| ())
    }

    /// [`Preset::save`] over a file whose text was `previous`, keeping its
    /// layout: its comments, the order and form of its keys and tables and
    /// the spelling of the values that did not change. A value that changed
    /// keeps the comment after it; a key the preset no longer has goes with
    /// its comments; a new one is appended to its table, unless the file
    /// reads the same without it (a default the file did not spell out).
    /// Where that would not read back as this preset (`previous` is not
    /// TOML), the preset is written in full after `previous`'s opening
    /// comments (see [`header_comments`]), and [`Written::InFull`] says so.
    ///
    /// # Errors
    /// As [`Preset::save`].
    pub fn save_over(&self, path: &Path, previous: Option<&str>) -> Result<Written, PresetError> {
        let write_error = |message: String| PresetError::new(path, PresetErrorKind::Write(message));
        let (text, written) = self
            .to_toml_string_over(previous, path)
            .map_err(|e| write_error(e.to_string()))?;
        create_dir_of(path)?;
        crate::fsutil::write_atomically(path, |out| {
            std::io::Write::write_all(out, text.as_bytes())
        })
        .map_err(|e| write_error(e.to_string()))?;
        Ok(written)
    }

    /// The text [`Preset::save_over`] writes to `path`, and how.
    pub(crate) fn to_toml_string_over(
        &self,
        previous: Option<&str>,
        path: &Path,
    ) -> Result<(String, Written), toml::ser::Error> {
        let full = self.to_toml_string()?;
        let Some(previous) = previous else {
            return Ok((full, Written::AsLaidOut));
        };
        let saved = Preset {
            version: CURRENT_VERSION,
            ..self.clone()
        };
        let read_back =
            |text: &str| Preset::from_toml_str(text, path).is_ok_and(|read| read == saved);
        let body = previous.trim_start_matches('\u{feff}');
        // What the file implied, its defaults spelled out.
        let implied =
            (Preset::from_toml_str(body, path).ok()).and_then(|p| p.to_toml_string().ok());
        match layout::keep(previous, &full, implied.as_deref(), read_back) {
            Some(text) => Ok((text, Written::AsLaidOut)),
            None => {
                let header = header_comments(body);
                let text = self.to_toml_string_with_header(header.as_deref())?;
                Ok((layout::with_line_ends_of(previous, &text), Written::InFull))
            }
        }
    }

    /// Checks every value that does not need the mesh.
    ///
    /// # Errors
    /// [`PresetErrorKind::Invalid`] naming the first field out of range: a
    /// version other than [`CURRENT_VERSION`]; a grid outside `2..=`
    /// [`MAX_GRID_NODES`] nodes or of a width outside an imported mesh's
    /// [`SIZE_RANGE`] (1e-9 to 1e9 m); a build option
    /// that does not apply to the mesh (tets from a grid, springs from a
    /// tet file, a resolution for anything but tets from an OBJ, edge
    /// springs without tets) or a resolution out of range; a non-positive
    /// density outside [`DENSITY_RANGE`]; a weight outside
    /// `[0, `[`MAX_WEIGHT`]`]`; tet limits that exclude
    /// the rest state; `top_corners`/`top_edge` without a grid; a plane
    /// with a zero normal or negative distance; a box with `min > max`; a
    /// `dt` outside `[1e-6, 10]` s, iterations outside `1..=`
    /// [`SimParams::MAX_ITERATIONS`] or substeps outside `1..=`
    /// [`SimParams::MAX_SUBSTEPS`], damping outside
    /// `[0, 1]`; a collider with a negative friction or non-positive
    /// radius; a field of view outside `(0, 180)`; any non-finite number.
    pub fn validate(&self) -> Result<(), PresetErrorKind> {
        validate::preset(self)
            .map_err(|(field, message)| PresetErrorKind::Invalid { field, message })
    }
}

mod validate {
    //! Range checks of [`Preset::validate`]: each returns the field path and
    //! what is wrong.

    use super::*;

    type Check = Result<(), (String, String)>;

    fn fail(field: impl Into<String>, message: impl Into<String>) -> Check {
        Err((field.into(), message.into()))
    }

    fn finite(field: &str, v: f64) -> Check {
        if v.is_finite() {
            Ok(())
        } else {
            fail(field, format!("{v} is not a finite number"))
        }
    }

    /// `v` as a message shows it: scientific notation for the very small
    /// and very large (`1e-300`, not three hundred zeros).
    fn number(v: f64) -> String {
        if v != 0.0 && !(1e-4..1e6).contains(&v.abs()) {
            format!("{v:e}")
        } else {
            format!("{v}")
        }
    }

    fn positive(field: &str, v: f64) -> Check {
        finite(field, v)?;
        if v > 0.0 {
            Ok(())
        } else {
            fail(field, format!("must be positive, found {}", number(v)))
        }
    }

    fn non_negative(field: &str, v: f64) -> Check {
        finite(field, v)?;
        if v >= 0.0 {
            Ok(())
        } else {
            fail(field, format!("must not be negative, found {}", number(v)))
        }
    }

    /// A whole number of [`WHOLE_RANGES`] in its range.
    fn whole(field: &str, n: usize) -> Check {
        let range = whole_range(field);
        debug_assert!(range.is_some(), "{field} has a range");
        match range {
            Some(r) if !r.contains(&n) => {
                fail(field, format!("must lie in {}, found {n}", interval(r)))
            }
            _ => Ok(()),
        }
    }

    fn within(field: &str, v: f64, lo: f64, hi: f64) -> Check {
        finite(field, v)?;
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            // A bound of the smallest positive or the largest double
            // reads as what it means, not as its 309 digits.
            let range = match (lo == f64::MIN_POSITIVE, hi == f64::MAX) {
                (true, _) => format!("must lie in (0, {}]", number(hi)),
                (false, true) => format!("must be at least {}", number(lo)),
                (false, false) => format!("must lie in [{}, {}]", number(lo), number(hi)),
            };
            fail(field, format!("{range}, found {}", number(v)))
        }
    }

    fn finite3(field: &str, v: &Vec3) -> Check {
        if v.iter().all(|c| c.is_finite()) {
            Ok(())
        } else {
            fail(field, "has a non-finite coordinate")
        }
    }

    pub(super) fn preset(p: &Preset) -> Check {
        let Preset {
            version,
            name: _,
            mesh,
            build,
            material,
            pins,
            sim,
            view,
        } = p;
        if *version != CURRENT_VERSION {
            return fail(
                "version",
                format!("must be {CURRENT_VERSION} in memory, found {version}"),
            );
        }
        mesh_and_build(mesh, build)?;
        self::material(material)?;
        for (list, selectors) in [("hard", &pins.hard), ("soft", &pins.soft)] {
            for (i, s) in selectors.iter().enumerate() {
                selector(&format!("pins.{list}[{i}]"), s, mesh)?;
            }
        }
        self::sim(sim)?;
        view.as_ref().map_or(Ok(()), self::view)
    }

    fn view(view: &View) -> Check {
        let View {
            eye,
            target,
            fov_deg,
        } = view;
        for (field, point) in [("view.eye", eye), ("view.target", target)] {
            finite3(field, point)?;
            for (axis, c) in ["x", "y", "z"].into_iter().zip(point.iter()) {
                let far = MAX_VIEW_EXTENT;
                within(&format!("{field}.{axis}"), *c, -far, far)?;
            }
        }
        // No direction to look in (the editor drew nothing, and blamed
        // the body).
        let scale = eye.norm().max(target.norm()).max(f64::MIN_POSITIVE);
        if (eye - target).norm() <= 1e-12 * scale {
            return fail(
                "view.target",
                format!(
                    "must differ from view.eye (the camera looks from the eye towards the \
                     target), found both at [{}, {}, {}]",
                    eye.x, eye.y, eye.z
                ),
            );
        }
        finite("view.fov_deg", *fov_deg)?;
        if !(*fov_deg > 0.0 && *fov_deg < 180.0) {
            return fail(
                "view.fov_deg",
                format!("must lie in (0, 180) degrees, found {fov_deg}"),
            );
        }
        Ok(())
    }

    /// What an empty mesh path is told.
    const EMPTY_PATH: &str = "the path is empty: name a mesh file";

    fn mesh_and_build(mesh: &MeshSource, build: &Build) -> Check {
        let Build {
            kind,
            resolution,
            edge_springs,
            scale,
        } = *build;
        let (smallest, largest) = (*Build::SCALE_RANGE.start(), *Build::SCALE_RANGE.end());
        within("build.scale", scale, smallest, largest)?;
        match mesh {
            MeshSource::Grid(GridSpec { n, width, .. }) => {
                if !(2..=MAX_GRID_NODES).contains(n) {
                    return fail(
                        "mesh.grid.n",
                        format!("must lie in 2 to {MAX_GRID_NODES} nodes per side, found {n}"),
                    );
                }
                let (smallest, largest) = (*SIZE_RANGE.start(), *SIZE_RANGE.end());
                within("mesh.grid.width", *width, smallest, largest)?;
                if kind == BuildKind::Tets {
                    return fail("build.kind", "a grid is cloth: build it as \"springs\"");
                }
                if scale != 1.0 {
                    return fail(
                        "build.scale",
                        "applies only to a mesh file: a grid's size is its width",
                    );
                }
            }
            MeshSource::TetFile(_) if kind == BuildKind::Springs => {
                return fail(
                    "build.kind",
                    "a tet file is built as tets: set `kind = \"tets\"` in `[build]` (springs \
                     are the default)",
                );
            }
            // (An empty path read the preset's directory as the file.)
            MeshSource::Obj(path) if path.as_os_str().is_empty() => {
                return fail("mesh.obj", EMPTY_PATH);
            }
            MeshSource::TetFile(path) if path.as_os_str().is_empty() => {
                return fail("mesh.tet_file", EMPTY_PATH);
            }
            MeshSource::Obj(_) | MeshSource::TetFile(_) => {}
        }
        let tets_from_obj = matches!(mesh, MeshSource::Obj(_)) && kind == BuildKind::Tets;
        if let Some(r) = resolution {
            if !tets_from_obj {
                return fail("build.resolution", "applies only to tets built from an OBJ");
            }
            whole("build.resolution", r)?;
        }
        if edge_springs && kind != BuildKind::Tets {
            return fail("build.edge_springs", "applies only to tets");
        }
        Ok(())
    }

    fn material(m: &Material) -> Check {
        let (lightest, heaviest) = DENSITY_RANGE;
        within("material.density", m.density, lightest, heaviest)?;
        let Weights {
            structural,
            shear,
            bending,
            attachment,
            strain,
            strain_limit,
            volume,
        } = m.weights;
        for (name, w) in [
            ("structural", structural),
            ("shear", shear),
            ("bending", bending),
            ("attachment", attachment),
            ("strain", strain),
            ("strain_limit", strain_limit),
            ("volume", volume),
        ] {
            let field = format!("material.weights.{name}");
            non_negative(&field, w)?;
            within(&field, w, 0.0, MAX_WEIGHT)?;
        }
        let TetLimits {
            strain_min,
            strain_max,
            volume_min,
            volume_max,
        } = m.limits;
        within("material.limits.strain_min", strain_min, 0.0, 1.0)?;
        within("material.limits.strain_max", strain_max, 1.0, f64::MAX)?;
        within(
            "material.limits.volume_min",
            volume_min,
            f64::MIN_POSITIVE,
            1.0,
        )?;
        within("material.limits.volume_max", volume_max, 1.0, f64::MAX)
    }

    fn selector(field: &str, s: &Selector, mesh: &MeshSource) -> Check {
        match s {
            Selector::Indices(_) | Selector::Group(_) => Ok(()),
            Selector::Plane {
                point,
                normal,
                distance,
            } => {
                finite3(&format!("{field}.plane.point"), point)?;
                finite3(&format!("{field}.plane.normal"), normal)?;
                if normal.amax() == 0.0 {
                    return fail(format!("{field}.plane.normal"), "must not be zero");
                }
                non_negative(&format!("{field}.plane.distance"), *distance)
            }
            Selector::Box { min, max } => {
                finite3(&format!("{field}.box.min"), min)?;
                finite3(&format!("{field}.box.max"), max)?;
                if min.iter().zip(max.iter()).any(|(a, b)| a > b) {
                    return fail(
                        format!("{field}.box"),
                        "min must not exceed max in any coordinate",
                    );
                }
                Ok(())
            }
            Selector::Except { of, indices: _ } => {
                selector(&format!("{field}.except.of"), of, mesh)
            }
            Selector::TopCorners | Selector::TopEdge => match mesh {
                MeshSource::Grid(_) => Ok(()),
                _ => fail(
                    field,
                    "`top_corners` and `top_edge` need a grid mesh; use a plane or box rule",
                ),
            },
        }
    }

    fn sim(s: &SimParams) -> Check {
        let SimParams {
            dt,
            iterations,
            substeps,
            damping,
            gravity,
            colliders,
            acceleration: _,
            extrapolate: _,
            tolerance,
        } = s;
        // Below a microsecond `M/h²` overflows the matrix; above 10 s a
        // frame is no longer an animation step.
        within("sim.dt", *dt, 1e-6, 10.0)?;
        // A fraction of the step's update: 1 already stops after the
        // first iteration that moves less than the step.
        within("sim.tolerance", *tolerance, 0.0, 1.0)?;
        whole("sim.iterations", *iterations)?;
        whole("sim.substeps", *substeps)?;
        within("sim.damping", *damping, 0.0, 1.0)?;
        finite3("sim.gravity", gravity)?;
        // (Scaled: the squares of 1e300 overflow.)
        let largest = gravity.amax();
        let magnitude = if largest > 0.0 {
            largest * (gravity / largest).norm()
        } else {
            0.0
        };
        if magnitude > MAX_GRAVITY {
            return fail(
                "sim.gravity",
                format!(
                    "its magnitude must be at most {} m/s², found {}",
                    number(MAX_GRAVITY),
                    number(magnitude)
                ),
            );
        }
        for (i, c) in colliders.iter().enumerate() {
            let field = format!("sim.colliders[{i}]");
            match c {
                Collider::Ground { height, friction } => {
                    let far = MAX_COLLIDER_EXTENT;
                    within(&format!("{field}.height"), *height, -far, far)?;
                    within(&format!("{field}.friction"), *friction, 0.0, MAX_FRICTION)?;
                }
                Collider::Sphere {
                    center,
                    radius,
                    friction,
                } => {
                    let far = MAX_COLLIDER_EXTENT;
                    for (axis, c) in ["x", "y", "z"].into_iter().zip(center.iter()) {
                        within(&format!("{field}.center.{axis}"), *c, -far, far)?;
                    }
                    positive(&format!("{field}.radius"), *radius)?;
                    within(&format!("{field}.radius"), *radius, 0.0, far)?;
                    within(&format!("{field}.friction"), *friction, 0.0, MAX_FRICTION)?;
                }
            }
        }
        Ok(())
    }
}
