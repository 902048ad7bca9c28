//! Validation: the only way to make a [`SurfaceMesh`].
//!
//! Steps, in order: check indices and coordinates, triangulate polygons, weld
//! coincident vertices (tolerance relative to the bounding-box diagonal), drop
//! degenerate (zero-area) and duplicate triangles, drop unreferenced vertices,
//! and build the edge topology. Everything dropped or merged is counted in
//! [`ValidationStats`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::Vec3;
use super::obj::{ImportError, ImportErrorKind};
use super::raw::{GroupKind, RawMesh};
use super::texcoords::TexCoords;
use super::topology::EdgeTopology;
use super::triangulate::Triangulator;

/// Options for [`validate()`].
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// Vertices closer than this fraction of the bounding-box diagonal are
    /// welded (default `1e-6`: exact duplicates and float noise from exporters,
    /// never intended geometry). `0` welds only exact duplicates.
    pub weld_relative: f64,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        Self {
            weld_relative: 1e-6,
        }
    }
}

/// A named set of vertices of a [`SurfaceMesh`] (from an OBJ `o` or `g`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VertexGroup {
    /// The name from the file.
    pub name: String,
    /// Object or group.
    pub kind: GroupKind,
    /// Sorted, unique vertex indices.
    pub vertices: Vec<u32>,
}

/// A validated triangle mesh.
///
/// Invariants: every coordinate is finite; every triangle has three distinct
/// in-range vertices and non-zero area; no two triangles share the same three
/// vertices; every vertex is used by a triangle; `topology` describes
/// `triangles`; `polygons` has one entry per triangle, and so has
/// `texcoords.triangles` when there are texture coordinates.
#[derive(Clone, Debug)]
pub struct SurfaceMesh {
    positions: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    polygons: Vec<u32>,
    groups: Vec<VertexGroup>,
    topology: EdgeTopology,
    texcoords: Option<TexCoords>,
    source: Arc<SourceLayout>,
}

/// The input's own layout of a surface: the mesh as read (its vertices in
/// their order, its polygons as written, quads staying quads, and their
/// texture coordinates), each vertex with the surface vertex it became
/// (coincident ones welded into one share it). Exports that must line up
/// with the asset vertex for vertex (a bake that Blender's shape keys or
/// Mesh Cache read onto the original) write this layout.
#[derive(Debug, PartialEq)]
pub struct SourceLayout {
    /// The input as read.
    pub raw: RawMesh,
    /// For each input vertex, the surface vertex it became, or
    /// [`SourceLayout::UNUSED`] where no face of the surface uses it (it
    /// stays where it was).
    pub vertex_of: Vec<u32>,
}

impl SourceLayout {
    /// [`SourceLayout::vertex_of`] of an input vertex no face uses.
    pub const UNUSED: u32 = u32::MAX;

    /// Writes the input's vertices for surface vertex positions `surface`
    /// into `out`: each the position of the surface vertex it became, or
    /// its own where no face uses it.
    pub fn positions_of(&self, surface: &[Vec3], out: &mut Vec<Vec3>) {
        out.clear();
        out.extend(
            self.vertex_of
                .iter()
                .zip(&self.raw.positions)
                .map(|(&v, p)| {
                    if v == Self::UNUSED {
                        *p
                    } else {
                        surface[v as usize]
                    }
                }),
        );
    }
}

impl SurfaceMesh {
    /// Vertex positions, `m × 3`.
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// This surface with its positions multiplied by `scale` (metres per
    /// unit of its file); its [`SourceLayout`] stays as read, in the file's
    /// units.
    #[must_use]
    pub fn scaled(mut self, scale: f64) -> Self {
        for p in &mut self.positions {
            *p *= scale;
        }
        self
    }

    /// The input's own layout of this surface (see [`SourceLayout`]).
    pub fn source(&self) -> &SourceLayout {
        &self.source
    }

    /// Triangles (counter-clockwise seen from outside when the input was
    /// oriented that way).
    pub fn triangles(&self) -> &[[u32; 3]] {
        &self.triangles
    }

    /// For each triangle, the input polygon (face of the file, counted from
    /// 0) it was cut from: the triangles of one quad share it, so an edge
    /// between two of them is a diagonal inside the quad, not an edge of the
    /// file.
    pub fn source_polygons(&self) -> &[u32] {
        &self.polygons
    }

    /// Named vertex sets from the file's objects and groups.
    pub fn groups(&self) -> &[VertexGroup] {
        &self.groups
    }

    /// The file's texture coordinates of the triangles' corners, if it had
    /// any.
    pub fn texcoords(&self) -> Option<&TexCoords> {
        self.texcoords.as_ref()
    }

    /// Unique edges and the triangles around them.
    pub fn topology(&self) -> &EdgeTopology {
        &self.topology
    }

    /// Axis-aligned bounds `(min, max)`.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        used_bounds(&self.positions, None)
    }

    /// Whether every edge has exactly two triangles (no boundary, no
    /// non-manifold edge).
    pub fn is_closed(&self) -> bool {
        use super::topology::EdgeKind;
        self.topology.count(EdgeKind::Boundary) == 0
            && self.topology.count(EdgeKind::NonManifold) == 0
    }

    /// Signed enclosed volume by the divergence theorem, `Σ a·(b×c) / 6`.
    /// Meaningful only for a closed, consistently oriented surface.
    pub fn signed_volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.positions[i as usize]);
                a.dot(&b.cross(&c))
            })
            .sum::<f64>()
            / 6.0
    }
}

/// What validation merged and dropped.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ValidationStats {
    /// Vertices in the input.
    pub input_vertices: usize,
    /// Polygons in the input.
    pub input_polygons: usize,
    /// Polygons with more than three corners that were triangulated.
    pub triangulated_polygons: usize,
    /// Absolute weld distance used.
    pub weld_tolerance: f64,
    /// Vertices merged into a coincident one.
    pub welded_vertices: usize,
    /// Zero-area triangles dropped (including ones that lost a corner to welding).
    pub degenerate_triangles: usize,
    /// Polygons that lost at least one triangle as zero-area.
    pub degenerate_polygons: usize,
    /// Source lines of the first `LISTED_LINES` of those polygons (0
    /// when generated).
    pub degenerate_lines: Vec<u32>,
    /// Polygons that cross themselves (a bowtie quad), cut into triangles
    /// that overlap.
    pub crossed_polygons: usize,
    /// Source lines of the first `LISTED_LINES` of those polygons (0 when
    /// generated).
    pub crossed_lines: Vec<u32>,
    /// Triangles dropped because another triangle has the same three vertices
    /// (either winding), or because their polygon has the same corners as
    /// an earlier one (from any corner, either winding: its diagonals may
    /// differ).
    pub duplicate_triangles: usize,
    /// Vertices no triangle uses, dropped.
    pub unreferenced_vertices: usize,
}

/// The bounds of the positions `used` marks (all without `used`); `(0, 0)`
/// when there are none.
fn used_bounds(positions: &[Vec3], used: Option<&[bool]>) -> (Vec3, Vec3) {
    let (lo, hi) = super::bounds(
        positions
            .iter()
            .enumerate()
            .filter(|&(i, _)| used.is_none_or(|u| u[i]))
            .map(|(_, p)| p),
    );
    if lo.x > hi.x {
        (Vec3::zeros(), Vec3::zeros())
    } else {
        (lo, hi)
    }
}

/// The bounding-box diagonals (in metres) of the meshes [`validate`]
/// accepts: a mesh far outside them is in the wrong units, and its masses,
/// areas and energies come near the ends of double precision.
pub const SIZE_RANGE: std::ops::RangeInclusive<f64> = 1e-9..=1e9;

/// Source lines of dropped polygons listed in [`ValidationStats`].
pub const LISTED_LINES: usize = 5;

/// Counts a polygon on `line` in `count`, listing its line among the first
/// [`LISTED_LINES`] in `lines`.
fn count_listed((count, lines): (&mut usize, &mut Vec<u32>), line: u32) {
    *count += 1;
    if lines.len() < LISTED_LINES {
        lines.push(line);
    }
}

/// Validates `raw` into a [`SurfaceMesh`]; `path` names the source in errors.
///
/// # Errors
/// [`ImportErrorKind::NoFaces`] for no polygons, [`ImportErrorKind::IndexOutOfRange`]
/// or [`ImportErrorKind::NonFinite`] for inconsistent generated data,
/// [`ImportErrorKind::Size`] for a diagonal outside [`SIZE_RANGE`], and
/// [`ImportErrorKind::NoValidTriangles`] when every triangle is degenerate.
pub fn validate(
    raw: &RawMesh,
    path: &Path,
    options: &ValidateOptions,
) -> Result<(SurfaceMesh, ValidationStats), ImportError> {
    let fail = |line: u32, kind| ImportError {
        path: path.to_owned(),
        line: (line > 0).then_some(line as usize),
        kind,
    };
    let n = raw.positions.len();
    let polygons = raw.polygon_count();
    if polygons == 0 {
        return Err(fail(0, ImportErrorKind::NoFaces { vertices: n }));
    }
    if n > u32::MAX as usize {
        return Err(fail(0, ImportErrorKind::TooManyVertices));
    }
    let mut used = vec![false; n];
    for p in 0..polygons {
        let line = raw.lines.get(p).copied().unwrap_or(0);
        for &i in raw.polygon(p) {
            let Some(u) = used.get_mut(i as usize) else {
                return Err(fail(
                    line,
                    ImportErrorKind::IndexOutOfRange {
                        index: i as i64 + 1,
                        defined: n,
                    },
                ));
            };
            *u = true;
            let x = raw.positions[i as usize];
            if !x.iter().all(|c| c.is_finite()) {
                let token = format!(
                    "{}",
                    x.iter()
                        .find(|c| !c.is_finite())
                        .copied()
                        .unwrap_or(f64::NAN)
                );
                return Err(fail(line, ImportErrorKind::NonFinite { token }));
            }
        }
    }
    let (lo, hi) = used_bounds(&raw.positions, Some(&used));
    // Scaled first: the squares inside the norm of a diagonal of 1e200
    // overflow.
    let extent = (hi - lo).amax();
    let diagonal = if extent.is_infinite() {
        // Coordinates near ±1.8e308: their span overflows.
        f64::INFINITY
    } else if extent > 0.0 {
        extent * ((hi - lo) / extent).norm()
    } else {
        0.0
    };
    // (A mesh of no size at all is all degenerate faces, below.)
    if diagonal > 0.0 && !SIZE_RANGE.contains(&diagonal) {
        return Err(fail(0, ImportErrorKind::Size { diagonal }));
    }
    let mut stats = ValidationStats {
        input_vertices: n,
        input_polygons: polygons,
        weld_tolerance: options.weld_relative * diagonal,
        ..ValidationStats::default()
    };

    // Weld; each polygon is triangulated on its own corners and its
    // triangles are then taken to the welded vertices.
    let remap = weld(&raw.positions, &used, stats.weld_tolerance);
    stats.welded_vertices = remap
        .iter()
        .enumerate()
        .filter(|&(i, &r)| used[i] && r as usize != i)
        .count();
    let mut triangles = Vec::with_capacity(raw.indices.len().saturating_sub(2 * polygons));
    let mut tri_polygon = Vec::with_capacity(triangles.capacity());
    let mut tri_texcoords = Vec::new();
    let mut triangulator = Triangulator::default();
    let mut cut = Vec::new();
    let area_eps = 1e-12 * diagonal * diagonal;
    let mut cycles = PolygonCycles::default();
    for p in 0..polygons {
        let poly = raw.polygon(p);
        if poly.len() > 3 {
            stats.triangulated_polygons += 1;
        }
        if poly.len() > 3 && !cycles.is_new(poly, &remap) {
            // A second copy of a polygon (a double-sided face, its corners
            // written the other way round) cut along another diagonal
            // shares no triangle with the first, and made its edges
            // non-manifold.
            stats.duplicate_triangles += poly.len() - 2;
            continue;
        }
        let first = triangles.len();
        // A polygon's texture coordinates, if every corner has one, in range
        // (a generator's mesh is checked too).
        let texcoords = raw
            .polygon_texcoords(p)
            .filter(|t| t.iter().all(|&c| (c as usize) < raw.texcoords.len()));
        cut.clear();
        let line = raw.lines.get(p).copied().unwrap_or(0);
        if triangulator.triangulate(&raw.positions, poly, &mut cut) {
            count_listed(
                (&mut stats.crossed_polygons, &mut stats.crossed_lines),
                line,
            );
        }
        for local in &cut {
            let welded = local.map(|k| remap[poly[k as usize] as usize]);
            let [a, b, c] = welded.map(|i| raw.positions[i as usize]);
            let twice_area = (b - a).cross(&(c - a)).norm();
            let distinct =
                welded[0] != welded[1] && welded[1] != welded[2] && welded[0] != welded[2];
            if distinct && twice_area > area_eps {
                triangles.push(welded);
                if !raw.texcoords.is_empty() {
                    tri_texcoords.push(texcoords.map(|t| local.map(|k| t[k as usize])));
                }
            } else {
                stats.degenerate_triangles += 1;
            }
        }
        if triangles.len() - first < cut.len() {
            // A polygon's triangles share its line: listed once.
            count_listed(
                (&mut stats.degenerate_polygons, &mut stats.degenerate_lines),
                line,
            );
        }
        tri_polygon.resize(triangles.len(), p as u32);
    }

    // Drop unreferenced vertices, keeping the file's order.
    let mut new_index = vec![u32::MAX; n];
    let mut positions = Vec::new();
    for t in &mut triangles {
        for v in t.iter_mut() {
            let slot = &mut new_index[*v as usize];
            if *slot == u32::MAX {
                *slot = 0; // mark; numbered below in file order
            }
        }
    }
    for (i, slot) in new_index.iter_mut().enumerate() {
        if *slot == 0 {
            *slot = positions.len() as u32;
            positions.push(raw.positions[i]);
        }
    }
    for t in &mut triangles {
        *t = t.map(|v| new_index[v as usize]);
    }
    stats.unreferenced_vertices = n - stats.welded_vertices - positions.len();

    let mut topology = EdgeTopology::new(positions.len(), &triangles);
    let duplicates = duplicate_triangles(&topology, &triangles);
    if !duplicates.is_empty() {
        stats.duplicate_triangles += duplicates.len();
        let mut keep = vec![true; triangles.len()];
        for d in duplicates {
            keep[d as usize] = false;
        }
        retain_kept(&mut triangles, &keep);
        retain_kept(&mut tri_polygon, &keep);
        retain_kept(&mut tri_texcoords, &keep);
        topology = EdgeTopology::new(positions.len(), &triangles);
    }
    if triangles.is_empty() {
        return Err(fail(
            0,
            ImportErrorKind::NoValidTriangles { faces: polygons },
        ));
    }
    let groups = vertex_groups(raw, positions.len(), &triangles, &tri_polygon);
    let source = SourceLayout {
        raw: raw.clone(),
        vertex_of: (0..n)
            .map(|i| match used[i] {
                true => new_index[remap[i] as usize],
                false => SourceLayout::UNUSED,
            })
            .collect(),
    };
    Ok((
        SurfaceMesh {
            positions,
            triangles,
            polygons: tri_polygon,
            groups,
            topology,
            texcoords: TexCoords::used(&raw.texcoords, tri_texcoords),
            source: Arc::new(source),
        },
        stats,
    ))
}

/// Keeps the items of `items` whose entry in `keep` is true (an empty
/// `items` stays empty).
fn retain_kept<T>(items: &mut Vec<T>, keep: &[bool]) {
    let mut k = 0;
    items.retain(|_| {
        k += 1;
        keep[k - 1]
    });
}

/// For each vertex, the index of the vertex it welds to (itself if none).
///
/// A hash grid with cells of four tolerances: a vertex looks only into the
/// neighbouring cells it is within `tol` of, so most vertices look into one.
/// Cells are never below 1e-12 of the largest coordinate: a tiny (or zero)
/// tolerance would otherwise overflow the cell keys into one cell and make
/// the search quadratic (any cell of at least `tol` finds every pair).
fn weld(positions: &[Vec3], used: &[bool], tol: f64) -> Vec<u32> {
    let mut remap: Vec<u32> = (0..positions.len() as u32).collect();
    let scale = positions
        .iter()
        .zip(used)
        .filter(|(_, u)| **u)
        .fold(0.0, |m: f64, (p, _)| m.max(p.amax()));
    let cell = Some((4.0 * tol).max(scale * 1e-12))
        .filter(|&c| c > 0.0)
        .unwrap_or(1.0);
    let key = |p: &Vec3| p.map(|c| (c / cell).floor() as i64);
    let mut heads: HashMap<(i64, i64, i64), u32, BuildFx> =
        HashMap::with_capacity_and_hasher(positions.len(), BuildFx);
    let mut next = vec![u32::MAX; positions.len()];
    let tol2 = tol * tol;
    for (i, p) in positions.iter().enumerate() {
        if !used[i] {
            continue;
        }
        let k = key(p);
        let mut found = None;
        let frac = p.map(|c| c / cell) - k.map(|c| c as f64);
        let range = |f: f64| -> std::ops::RangeInclusive<i64> {
            let lo = if tol > 0.0 && f * cell < tol { -1 } else { 0 };
            let hi = if tol > 0.0 && (1.0 - f) * cell <= tol {
                1
            } else {
                0
            };
            lo..=hi
        };
        'search: for dx in range(frac.x) {
            for dy in range(frac.y) {
                for dz in range(frac.z) {
                    let mut j = heads
                        .get(&(k.x + dx, k.y + dy, k.z + dz))
                        .copied()
                        .unwrap_or(u32::MAX);
                    while j != u32::MAX {
                        if (positions[j as usize] - p).norm_squared() <= tol2 {
                            found = Some(j);
                            break 'search;
                        }
                        j = next[j as usize];
                    }
                }
            }
        }
        match found {
            Some(j) => remap[i] = j,
            None => {
                let head = heads.entry((k.x, k.y, k.z)).or_insert(u32::MAX);
                next[i] = *head;
                *head = i as u32;
            }
        }
    }
    remap
}

/// A small multiplicative hasher for integer keys (the default SipHash is
/// several times slower here and hash flooding is not a concern).
#[derive(Clone, Copy, Default)]
struct BuildFx;

#[derive(Default)]
struct FxHasher(u64);

impl std::hash::BuildHasher for BuildFx {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher(0)
    }
}

impl std::hash::Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The polygons of more than three corners met so far, each as its cycle of
/// welded corners from its least corner, in the direction whose next corner
/// is less: the same for the same polygon written from any corner, either
/// way round. (Quads, most of them, are kept without an allocation each.)
#[derive(Default)]
struct PolygonCycles {
    quads: std::collections::HashSet<[u32; 4]>,
    others: std::collections::HashSet<Vec<u32>>,
    cycle: Vec<u32>,
    best: Vec<u32>,
}

/// The most occurrences of a polygon's least corner tried as its cycle's
/// start: more is a polygon welding folded onto itself, taken as new.
const CYCLE_STARTS: usize = 4;

impl PolygonCycles {
    /// Whether `poly` (corners before welding by `remap`) is new; notes it.
    fn is_new(&mut self, poly: &[u32], remap: &[u32]) -> bool {
        let k = poly.len();
        let corner = |i: usize| remap[poly[i % k] as usize];
        let least = (0..k).map(corner).min().unwrap_or(0);
        let starts = (0..k).filter(|&i| corner(i) == least);
        if starts.clone().count() > CYCLE_STARTS {
            return true;
        }
        self.best.clear();
        for start in starts {
            for forward in [true, false] {
                self.cycle.clear();
                self.cycle.extend((0..k).map(|j| {
                    if forward {
                        corner(start + j)
                    } else {
                        corner(start + k - j)
                    }
                }));
                if self.best.is_empty() || self.cycle < self.best {
                    std::mem::swap(&mut self.cycle, &mut self.best);
                }
            }
        }
        match <[u32; 4]>::try_from(&self.best[..]) {
            Ok(quad) => self.quads.insert(quad),
            Err(_) => self.others.insert(self.best.clone()),
        }
    }
}

/// Triangles with the same three vertices as an earlier triangle. Two such
/// triangles share every edge, so comparing the third vertices of the
/// triangles around each edge finds them all; the later one is marked.
fn duplicate_triangles(topology: &EdgeTopology, triangles: &[[u32; 3]]) -> Vec<u32> {
    let mut duplicate = vec![false; triangles.len()];
    let mut any = false;
    for e in 0..topology.edges().len() {
        let faces = topology.edge_faces(e);
        if faces.len() < 2 {
            continue;
        }
        let [a, b] = topology.edges()[e];
        let third = |t: u32| {
            triangles[t as usize]
                .into_iter()
                .find(|&v| v != a && v != b)
        };
        for (j, &later) in faces.iter().enumerate().skip(1) {
            if faces[..j]
                .iter()
                .any(|&earlier| third(earlier) == third(later))
            {
                duplicate[later as usize] = true;
                any = true;
            }
        }
    }
    if !any {
        return Vec::new();
    }
    (0..triangles.len() as u32)
        .filter(|&t| duplicate[t as usize])
        .collect()
}

fn vertex_groups(
    raw: &RawMesh,
    vertex_count: usize,
    triangles: &[[u32; 3]],
    tri_polygon: &[u32],
) -> Vec<VertexGroup> {
    let mut per_group: Vec<Vec<u32>> = vec![Vec::new(); raw.groups.len()];
    // `stamp[v] == g + 1` when v was just added to group g: skips the repeats
    // that dominate (each vertex is in about six triangles); the few left
    // when groups interleave are removed by the dedup below.
    let mut stamp = vec![
        0u32;
        if raw.groups.is_empty() {
            0
        } else {
            vertex_count
        }
    ];
    for (t, &p) in triangles.iter().zip(tri_polygon) {
        let membership = raw.membership.get(p as usize).copied().unwrap_or(0);
        for &g in &raw.memberships[membership as usize] {
            for &v in t {
                if stamp[v as usize] != g + 1 {
                    stamp[v as usize] = g + 1;
                    per_group[g as usize].push(v);
                }
            }
        }
    }
    raw.groups
        .iter()
        .zip(per_group)
        .map(|(g, mut vertices)| {
            vertices.sort_unstable();
            vertices.dedup();
            VertexGroup {
                name: g.name.clone(),
                kind: g.kind,
                vertices,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weld_merges_near_and_keeps_far() {
        let p = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1e-9, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(1.0, 1e-3, 0.0),
        ];
        let used = vec![true; 4];
        assert_eq!(weld(&p, &used, 1e-6), vec![0, 0, 2, 3]);
        // Across a cell boundary too.
        let q = vec![
            Vec3::new(4e-6 - 1e-9, 0.0, 0.0),
            Vec3::new(4e-6 + 1e-9, 0.0, 0.0),
        ];
        assert_eq!(weld(&q, &[true, true], 1e-6), vec![0, 0]);
    }
}
