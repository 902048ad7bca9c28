//! [`MeshReport`]: what `softbody inspect` prints about a surface mesh.

use std::fmt;

use super::obj::ParseStats;
use super::raw::GroupKind;
use super::topology::{EdgeKind, connected_components};
use super::validate::{SurfaceMesh, ValidationStats};
use crate::param::{format_value, format_within};

/// Axis-aligned bounding box.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Bounds {
    /// Minimum corner.
    pub min: [f64; 3],
    /// Maximum corner.
    pub max: [f64; 3],
    /// Length of the diagonal.
    pub diagonal: f64,
}

/// A named vertex set and its size.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GroupSummary {
    /// Name from the file.
    pub name: String,
    /// Object or group.
    pub kind: GroupKind,
    /// Vertices in the set.
    pub vertices: usize,
}

/// Everything known about an imported surface: what the file held, what
/// validation changed, and the topology of the result.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MeshReport {
    /// The file, as given.
    pub file: String,
    /// Statement counts from the parser (absent for generated meshes).
    pub parse: Option<ParseStats>,
    /// What validation merged and dropped.
    pub validation: ValidationStats,
    /// Vertices after validation.
    pub vertices: usize,
    /// Triangles after validation.
    pub triangles: usize,
    /// Unique edges.
    pub edges: usize,
    /// Edges used by one triangle.
    pub boundary_edges: usize,
    /// Edges used by two triangles.
    pub interior_edges: usize,
    /// Edges used by three or more triangles (no bending springs there).
    pub non_manifold_edges: usize,
    /// Interior edges whose triangles disagree in winding.
    pub inconsistent_edges: usize,
    /// Connected components.
    pub components: usize,
    /// `V − E + F`.
    pub euler_characteristic: i64,
    /// No boundary and no non-manifold edges.
    pub closed: bool,
    /// Enclosed volume when closed and consistently oriented (negative when
    /// the faces point inwards).
    pub volume: Option<f64>,
    /// Bounding box.
    pub bounds: Bounds,
    /// Named vertex sets from `o` / `g` statements.
    pub groups: Vec<GroupSummary>,
    /// Texture coordinates kept for the exports (0 without).
    pub texcoords: usize,
    /// Triangles that have texture coordinates.
    pub textured_triangles: usize,
    /// Things a person should know, in plain words.
    pub warnings: Vec<String>,
}

/// The note on `edges` non-manifold edges (3+ faces), which only a spring
/// build is told of (a tet build has no bending springs to miss).
pub fn non_manifold_note(edges: usize) -> String {
    format!(
        "{} (3+ faces): a spring build has no bending springs across {}",
        counted(edges, "non-manifold edge", "non-manifold edges"),
        if edges == 1 { "it" } else { "them" }
    )
}

impl MeshReport {
    /// Builds the report of a validated mesh.
    pub fn new(
        file: &str,
        parse: Option<ParseStats>,
        validation: ValidationStats,
        mesh: &SurfaceMesh,
    ) -> Self {
        let topo = mesh.topology();
        let triangles = mesh.triangles();
        let boundary_edges = topo.count(EdgeKind::Boundary);
        let interior_edges = topo.count(EdgeKind::Interior);
        let non_manifold_edges = topo.count(EdgeKind::NonManifold);
        let inconsistent_edges = topo.inconsistent_orientations(triangles);
        let closed = mesh.is_closed();
        let volume = (closed && inconsistent_edges == 0).then(|| mesh.signed_volume());
        let (lo, hi) = mesh.bounds();
        let mut warnings = Vec::new();
        let v = &validation;
        if v.welded_vertices > 0 {
            let apart = if v.weld_tolerance > 0.0 {
                format!("closer than {:.3e}", v.weld_tolerance)
            } else {
                "at the same position".to_owned()
            };
            warnings.push(format!(
                "welded {} ({apart})",
                counted(
                    v.welded_vertices,
                    "coincident vertex",
                    "coincident vertices"
                )
            ));
        }
        if v.degenerate_triangles > 0 {
            warnings.push(format!(
                "dropped {}{}",
                counted(
                    v.degenerate_triangles,
                    "zero-area triangle",
                    "zero-area triangles"
                ),
                lines_suffix(&v.degenerate_lines, v.degenerate_polygons)
            ));
        }
        if v.crossed_polygons > 0 {
            warnings.push(format!(
                "{}{}, cut into triangles that overlap (some face away from the rest); \
                 split or redraw them in a modeller",
                counted(
                    v.crossed_polygons,
                    "polygon crosses itself",
                    "polygons cross themselves"
                ),
                lines_suffix(&v.crossed_lines, v.crossed_polygons)
            ));
        }
        if v.duplicate_triangles > 0 {
            warnings.push(format!(
                "dropped {}",
                counted(
                    v.duplicate_triangles,
                    "duplicate triangle",
                    "duplicate triangles"
                )
            ));
        }
        if v.unreferenced_vertices > 0 {
            warnings.push(format!(
                "dropped {} no face uses",
                counted(v.unreferenced_vertices, "vertex", "vertices")
            ));
        }
        if non_manifold_edges > 0 {
            warnings.push(non_manifold_note(non_manifold_edges));
        }
        if inconsistent_edges > 0 {
            warnings.push(format!(
                "{} where neighbouring faces disagree in winding",
                counted(inconsistent_edges, "edge", "edges")
            ));
        }
        if volume.is_some_and(|vol| vol < 0.0) {
            warnings.push("faces point inwards (negative volume)".to_owned());
        }
        let empty: Vec<&str> = mesh
            .groups()
            .iter()
            .filter(|g| g.vertices.is_empty())
            .map(|g| g.name.as_str())
            .collect();
        if !empty.is_empty() {
            warnings.push(format!(
                "groups with no faces: {} (an 'o'/'g' line written after its faces names the faces that follow it)",
                empty.join(", ")
            ));
        }
        let textured_triangles = mesh.texcoords().map_or(0, |t| t.textured());
        if let Some(p) = &parse
            && let Some((faces, line)) = p.partly_textured_faces
            && p.texcoords_dropped.is_none()
        {
            warnings.push(format!(
                "{} texture coordinates for some corners only (the first on line {line}): \
                 {} none in the exports",
                counted(faces, "face gives", "faces give"),
                if faces == 1 { "it has" } else { "they have" }
            ));
        }
        if let Some(p) = &parse
            && let Some((why, line)) = &p.texcoords_dropped
        {
            warnings.push(format!(
                "dropped the texture coordinates: {why} (line {line}); the exports will have none"
            ));
        } else if textured_triangles > 0 && textured_triangles < triangles.len() {
            warnings.push(format!(
                "{} of {} triangles have no texture coordinates",
                triangles.len() - textured_triangles,
                triangles.len()
            ));
        }
        if let Some(line) = parse.as_ref().and_then(|p| p.latin1_names) {
            warnings.push(format!(
                "object or group names that are not UTF-8 were read as Latin-1 (first on line {line})"
            ));
        }
        if let Some(p) = &parse
            && let Some((word, line)) = &p.first_vertex_word
        {
            warnings.push(format!(
                "ignored words after the coordinates of {} (first: '{word}' on line {line})",
                if p.vertex_words == 1 {
                    "a vertex".to_owned()
                } else {
                    format!("{} vertices", p.vertex_words)
                }
            ));
        }
        if let Some(p) = &parse
            && let Some(line) = p.first_line_or_point
        {
            // (Said in the JSON alone, curves and hair vanished unnoticed.)
            warnings.push(format!(
                "ignored {} line and point elements (`l`, `p`; first on line {line}): only \
                 faces are simulated",
                p.lines_and_points
            ));
        }
        if let Some(p) = &parse
            && let Some((word, line)) = &p.first_unsupported
        {
            warnings.push(format!(
                "ignored {} unsupported statements (first: '{word}' on line {line})",
                p.unsupported
            ));
        }
        Self {
            file: file.to_owned(),
            parse,
            validation,
            vertices: mesh.positions().len(),
            triangles: triangles.len(),
            edges: topo.edges().len(),
            boundary_edges,
            interior_edges,
            non_manifold_edges,
            inconsistent_edges,
            components: connected_components(mesh.positions().len(), triangles),
            euler_characteristic: mesh.positions().len() as i64 - topo.edges().len() as i64
                + triangles.len() as i64,
            closed,
            volume,
            bounds: Bounds {
                min: lo.into(),
                max: hi.into(),
                diagonal: (hi - lo).norm(),
            },
            groups: mesh
                .groups()
                .iter()
                .map(|g| GroupSummary {
                    name: g.name.clone(),
                    kind: g.kind,
                    vertices: g.vertices.len(),
                })
                .collect(),
            texcoords: mesh.texcoords().map_or(0, |t| t.coords.len()),
            textured_triangles,
            warnings,
        }
    }
}

/// ` (lines 3, 8, ...)`: the known lines of `lines`, the first of `of`
/// polygons, with `...` when some were not listed; empty when none is known.
/// `n` and the noun that goes with it: `1 edge`, `2 edges`.
pub(crate) fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn lines_suffix(lines: &[u32], of: usize) -> String {
    let known: Vec<String> = lines
        .iter()
        .filter(|&&l| l > 0)
        .map(|l| l.to_string())
        .collect();
    if known.is_empty() {
        String::new()
    } else {
        format!(
            " ({} {}{})",
            if known.len() == 1 && of <= lines.len() {
                "line"
            } else {
                "lines"
            },
            known.join(", "),
            if of > lines.len() { ", ..." } else { "" }
        )
    }
}

impl fmt::Display for MeshReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.file)?;
        if let Some(p) = &self.parse {
            writeln!(
                f,
                "  file:        {} vertices, {} faces ({} polygons with 4+ corners)",
                p.vertices, p.faces, p.polygons
            )?;
        }
        writeln!(
            f,
            "  mesh:        {} vertices, {} triangles, {} edges",
            self.vertices, self.triangles, self.edges
        )?;
        writeln!(
            f,
            "  edges:       {} boundary, {} interior, {} non-manifold",
            self.boundary_edges, self.interior_edges, self.non_manifold_edges
        )?;
        writeln!(
            f,
            "  topology:    {} component(s), Euler characteristic {}, {}",
            self.components,
            self.euler_characteristic,
            if self.closed { "closed" } else { "open" }
        )?;
        match self.volume {
            Some(v) => writeln!(f, "  volume:      {}", format_value(v))?,
            None => writeln!(
                f,
                "  volume:      none (not a closed, consistently oriented surface)"
            )?,
        }
        if self.texcoords > 0 {
            writeln!(
                f,
                "  texture:     {} coordinates on {} triangles",
                self.texcoords, self.textured_triangles
            )?;
        }
        let b = &self.bounds;
        let corner = |c: &[f64; 3]| c.map(|x| format_within(x, b.diagonal)).join(", ");
        writeln!(
            f,
            "  bounds:      [{}] .. [{}] (diagonal {})",
            corner(&b.min),
            corner(&b.max),
            format_value(b.diagonal)
        )?;
        if !self.groups.is_empty() {
            writeln!(f, "  groups:")?;
            for g in &self.groups {
                let kind = match g.kind {
                    GroupKind::Object => "object",
                    GroupKind::Group => "group",
                };
                writeln!(f, "    {:<6} {:<24} {} vertices", kind, g.name, g.vertices)?;
            }
        }
        if self.warnings.is_empty() {
            writeln!(f, "  warnings:    none")?;
        } else {
            writeln!(f, "  warnings:")?;
            for w in &self.warnings {
                writeln!(f, "    - {w}")?;
            }
        }
        Ok(())
    }
}
