//! The tetrahedraliser: any validated surface (open, self-intersecting,
//! multi-component or non-manifold) to a tet mesh with bounded dihedral
//! angles, plus the embedding that carries the full-resolution surface.
//!
//! Inside and outside are decided by the generalised winding number (`|w| >
//! ½` is inside), which closes small holes and takes the union of
//! overlapping parts; a surface whose faces all point inwards is filled as
//! if turned outwards, and one with some faces flipped as if each patch
//! were wound as most of its faces are. The region is filled by isosurface stuffing on a body-centred
//! cubic lattice (Labelle and Shewchuk 2007), whose stencils guarantee
//! dihedral angles in [10.7°, 164.8°] whatever the surface does, and whose
//! cost is linear in the number of lattice cells. Delaunay refinement (TetGen)
//! conforms to sharp features but needs a clean, closed,
//! non-self-intersecting input, which real files rarely are; see
//! [`tetrahedralize`] for the measured trade-off.

pub mod quality;
mod snap;
mod stuffing;
mod tree;

use std::time::Instant;

pub use tree::TriangleTree;

use super::skin::Embedding;
use crate::mesh::{SurfaceMesh, TetMesh, TetMeshError, Vec3};

/// Boundary faces farther than this fraction of the bounding-box diagonal
/// from the surface have their vertices snapped towards it.
const SNAP_TOLERANCE: f64 = 0.004;

/// Options of [`tetrahedralize`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TetraOptions {
    /// Lattice cells across the longest side of the bounding box. Default
    /// [`TetraOptions::DEFAULT_RESOLUTION`]; must lie in
    /// [`TetraOptions::RESOLUTION_RANGE`].
    pub resolution: usize,
}

impl TetraOptions {
    /// The default resolution: 4,000 to 16,000 vertices for the compact
    /// bodies of the test data, the coarsest at which every closed one keeps
    /// its volume within 1 %.
    pub const DEFAULT_RESOLUTION: usize = 30;
    /// Valid resolutions: below 2 cells nothing is resolved; at 128 a cubic
    /// body's lattice holds 2.1 million vertices and the tetrahedraliser
    /// peaks near 3 GB (`meshes/box.obj`), eight times that at 256.
    pub const RESOLUTION_RANGE: std::ops::RangeInclusive<usize> = 2..=128;
    /// Bounding-box diagonals the tetrahedraliser takes, in the mesh's units:
    /// past them its volumes and distances (powers of the size) leave
    /// double precision's range or resolution.
    pub const SIZE_RANGE: std::ops::RangeInclusive<f64> = 1e-6..=1e6;
}

impl Default for TetraOptions {
    fn default() -> Self {
        Self {
            resolution: Self::DEFAULT_RESOLUTION,
        }
    }
}

/// Why a surface could not be tetrahedralised.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TetraError {
    /// The resolution is out of range.
    #[error(
        "resolution {0} is out of range: use {min} to {max} cells across the longest side",
        min = TetraOptions::RESOLUTION_RANGE.start(),
        max = TetraOptions::RESOLUTION_RANGE.end()
    )]
    Resolution(usize),
    /// The mesh is too small or too large for the lattice's arithmetic.
    #[error(
        "the mesh is {diagonal:.3e} across: tetrahedralising needs {min:e} to {max:e} \
         (rescale it)",
        min = TetraOptions::SIZE_RANGE.start(),
        max = TetraOptions::SIZE_RANGE.end()
    )]
    Size {
        /// Bounding-box diagonal.
        diagonal: f64,
    },
    /// All vertices lie in one plane: there is no volume to fill.
    #[error(
        "the surface is flat ({} {} across): it encloses no volume; build it as springs \
         (cloth) instead",
        if *thickness == 0.0 {
            "all vertices in one plane,".to_owned()
        } else {
            format!("all vertices within {thickness:.3e} of one plane,")
        },
        crate::param::format_value(*diagonal)
    )]
    Flat {
        /// Largest distance of a vertex from the best-fit plane.
        thickness: f64,
        /// Bounding-box diagonal.
        diagonal: f64,
    },
    /// No lattice vertex is inside the surface.
    #[error(
        "the surface encloses no volume at resolution {resolution} (cells of {cell:.3e}): \
         it is open or thinner than a cell; raise the resolution or build it as springs"
    )]
    NoInterior {
        /// The resolution used.
        resolution: usize,
        /// Lattice cell size.
        cell: f64,
    },
    /// The stuffed tets failed validation (a bug: the stencils guarantee
    /// positive volumes).
    #[error("internal error: the generated tet mesh is invalid: {0}")]
    Invalid(TetMeshError),
}

// By hand, not `#[from]`: that would also make the error its `source()`, and
// error chains (`{:#}`) would print it twice.
impl From<TetMeshError> for TetraError {
    fn from(e: TetMeshError) -> Self {
        Self::Invalid(e)
    }
}

/// The result of [`tetrahedralize`].
#[derive(Clone, Debug)]
pub struct Tetrahedralization {
    /// The tet mesh.
    pub mesh: TetMesh,
    /// The input surface's vertices embedded in `mesh` (same order as the
    /// surface's positions; the surface's triangles index them).
    pub embedding: Embedding,
    /// Lattice cell size.
    pub cell: f64,
    /// Triangles the inside test turned over: those wound against most of
    /// their patch (a flipped face takes its share of the winding number
    /// away instead of adding it, and the body behind it was left empty: a
    /// tetrahedron with one face flipped lost a fifth of its volume).
    pub reoriented: usize,
    /// Wall-clock time of the tetrahedralisation and embedding, seconds.
    pub seconds: f64,
}

impl Tetrahedralization {
    /// What `surface` (the one tetrahedralised) made the tetrahedraliser
    /// guess, in plain words: an open surface's inside, faces it turned
    /// over ([`QualityReport::warnings`]).
    pub fn warnings(&self, surface: &SurfaceMesh) -> Vec<String> {
        use crate::mesh::topology::EdgeKind;
        let mut warnings = Vec::new();
        let boundary = surface.topology().count(EdgeKind::Boundary);
        if boundary > 0 {
            warnings.push(format!(
                "the surface is open ({boundary} boundary edges): its inside is what the \
                 winding number says, which closes small holes but fills a wide opening \
                 across; check the body against the surface"
            ));
        }
        // A cell: the sphere's skin lies up to 0.014 cells outside its tets
        // (chords under a curved surface), the cow's ears 0.8–0.9 at
        // resolutions 20–40 and fandisk's fins 0.7 at 30, where they move
        // with their tets; at 16 they lie 1.8 cells out, and QA saw two of
        // their vertices 6 cm apart end 1.6 m apart (the skin torn).
        let (outside, furthest) =
            self.embedding
                .outside(&self.mesh, surface.positions(), self.cell);
        if outside > 0 {
            warnings.push(format!(
                "{outside} surface {} more than a lattice cell outside the tets \
                 (up to {:.1} cells): parts thinner than a cell are not filled, and the skin \
                 there follows the nearest tets from outside, which can tear it as they move; \
                 raise the resolution",
                if outside == 1 {
                    "vertex lies"
                } else {
                    "vertices lie"
                },
                furthest / self.cell
            ));
        }
        if self.reoriented > 0 {
            warnings.push(format!(
                "{} of {} triangles are wound against the rest of their part: they were \
                 taken as turned over for the inside (the file is unchanged)",
                self.reoriented,
                surface.triangles().len()
            ));
        }
        warnings
    }
}

/// "The surface passes through itself (N crossings of an edge through a
/// face)" where it does (two overlapping parts, a lid sunk into its pot:
/// tets fill their union, springs let them pass through each other);
/// `None` where no edge crosses a face. For the warnings of `softbody
/// inspect` and of a build.
pub fn crossing_warning(surface: &SurfaceMesh) -> Option<String> {
    if is_flat(surface) {
        // An edge crosses a face only from one side of its plane to the
        // other, and a flat surface has one plane: its long thin triangles
        // (a 20,000-gon's) overlap in every box, and the search took 11 s.
        return None;
    }
    let tree = TriangleTree::new(surface.positions(), surface.triangles());
    let crossings = tree.edge_crossings(surface.positions(), surface.topology().edges());
    (crossings > 0).then(|| {
        format!(
            "the surface passes through itself ({crossings} crossing{} of an edge through a face)",
            if crossings == 1 { "" } else { "s" }
        )
    })
}

/// The thickness, over its bounding-box diagonal, within which a surface
/// is flat: refused by the tetrahedraliser, no crossings searched for.
const FLAT: f64 = 1e-9;

/// Whether `surface` is flat: its points within 1e-9 of its diagonal of
/// their least-squares plane (it cannot be built as tets).
pub fn is_flat(surface: &SurfaceMesh) -> bool {
    let (lo, hi) = surface.bounds();
    flatness(surface.positions()) <= FLAT * (hi - lo).norm()
}

/// Fills the inside of `surface` with tetrahedra at `options.resolution`
/// lattice cells across its longest side.
///
/// Measured on the real-world meshes in the project's test data (release,
/// default resolution): every dihedral angle ≥ 10.7° as the stencils
/// guarantee, enclosed volume within 1 %, the tet boundary within 0.5 % of
/// the diagonal from a closed surface (snapping onto its tips and creases),
/// 0.1 to 0.45 s per closed mesh and up to 0.6 s for an open one.
///
/// # Errors
/// [`TetraError::Resolution`] out of range, [`TetraError::Size`] for a
/// mesh too small or large, [`TetraError::Flat`] for a planar surface, [`TetraError::NoInterior`] when nothing is inside at this
/// resolution.
pub fn tetrahedralize(
    surface: &SurfaceMesh,
    options: &TetraOptions,
) -> Result<Tetrahedralization, TetraError> {
    let start = Instant::now();
    if !TetraOptions::RESOLUTION_RANGE.contains(&options.resolution) {
        return Err(TetraError::Resolution(options.resolution));
    }
    let positions = surface.positions();
    let (lo, hi) = surface.bounds();
    let diagonal = (hi - lo).norm();
    if !TetraOptions::SIZE_RANGE.contains(&diagonal) {
        return Err(TetraError::Size { diagonal });
    }
    let thickness = flatness(positions);
    if thickness <= FLAT * diagonal {
        return Err(TetraError::Flat {
            thickness,
            diagonal,
        });
    }
    let cell = (hi - lo).max() / options.resolution as f64;
    let flips = surface.topology().consistent_flips(surface.triangles());
    let reoriented = flips.iter().filter(|&&f| f).count();
    let triangles: Vec<[u32; 3]> = (surface.triangles().iter().zip(&flips))
        .map(|(&[a, b, c], &flip)| if flip { [a, c, b] } else { [a, b, c] })
        .collect();
    let tree = TriangleTree::new(positions, &triangles);
    let stuffed = stuffing::stuff(&tree, lo, hi, cell);
    if stuffed.tets.is_empty() {
        return Err(TetraError::NoInterior {
            resolution: options.resolution,
            cell,
        });
    }
    // Oriented by the first validation, snapped, and validated again.
    let (mut positions, tets) = TetMesh::new(stuffed.positions, stuffed.tets)?.into_parts();
    snap::snap_boundary(
        &tree,
        &mut positions,
        &tets,
        SNAP_TOLERANCE * diagonal,
        cell,
    );
    let mesh = TetMesh::new(positions, tets)?;
    let embedding = Embedding::new(&mesh, surface.positions());
    Ok(Tetrahedralization {
        mesh,
        embedding,
        cell,
        reoriented,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Quality and fidelity of a tet mesh built from a surface (the
/// `tetrahedralize` command's report).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct QualityReport {
    /// Tetrahedra.
    pub tets: usize,
    /// Vertices.
    pub vertices: usize,
    /// Smallest dihedral angle, degrees.
    pub min_dihedral_deg: f64,
    /// 1st percentile of all dihedral angles, degrees.
    pub p1_dihedral_deg: f64,
    /// Largest dihedral angle, degrees.
    pub max_dihedral_deg: f64,
    /// Largest circumradius-to-shortest-edge ratio (0.612 is a regular tet).
    pub max_radius_edge_ratio: f64,
    /// Volume of the tet mesh.
    pub volume: f64,
    /// Volume enclosed by the surface (its union where parts overlap), for
    /// closed surfaces.
    pub surface_volume: Option<f64>,
    /// `(volume − surface_volume) / surface_volume`; `None` for open input.
    pub volume_error: Option<f64>,
    /// Largest distance from the tet boundary to the surface, relative to
    /// the bounding-box diagonal: how far the simulated body departs from
    /// the input (sampled at ten points per boundary face).
    pub boundary_distance: f64,
    /// Largest distance from the surface to the tet boundary, relative: the
    /// other direction, large where the input has parts the body does not
    /// follow (surfaces inside a self-intersecting union, open sheets,
    /// features thinner than a cell).
    pub surface_to_boundary: f64,
    /// Lattice cells across the longest side.
    pub resolution: usize,
    /// Lattice cell size.
    pub cell: f64,
    /// Time to tetrahedralise, seconds (the report's own measurements
    /// excluded).
    pub seconds: f64,
    /// What the input made the tetrahedraliser guess, in plain words: an
    /// open surface's inside, faces it turned over.
    pub warnings: Vec<String>,
}

/// Rays per side when measuring a closed surface's enclosed volume.
const VOLUME_RAYS: usize = 512;

impl QualityReport {
    /// Measures `result` against the `surface` it was built from.
    pub fn new(surface: &SurfaceMesh, result: &Tetrahedralization, resolution: usize) -> Self {
        let mesh = &result.mesh;
        let angles = quality::angle_stats(mesh);
        let (lo, hi) = surface.bounds();
        let diagonal = (hi - lo).norm();
        let tree = TriangleTree::new(surface.positions(), surface.triangles());
        let boundary = mesh.boundary_faces();
        let boundary_tree = TriangleTree::new(mesh.positions(), &boundary);
        let boundary_distance =
            quality::max_distance_to(&tree, mesh.positions(), &boundary) / diagonal;
        let surface_to_boundary =
            quality::max_distance_to(&boundary_tree, surface.positions(), surface.triangles())
                / diagonal;
        let volume = quality::volume(mesh);
        let surface_volume = surface
            .is_closed()
            .then(|| quality::enclosed_volume(&tree, lo, hi, VOLUME_RAYS));
        Self {
            tets: mesh.tets().len(),
            vertices: mesh.positions().len(),
            min_dihedral_deg: angles.min_deg,
            p1_dihedral_deg: angles.p1_deg,
            max_dihedral_deg: angles.max_deg,
            max_radius_edge_ratio: angles.max_radius_edge,
            volume,
            surface_volume,
            volume_error: surface_volume.map(|v| (volume - v) / v),
            boundary_distance,
            surface_to_boundary,
            resolution,
            cell: result.cell,
            seconds: result.seconds,
            warnings: result.warnings(surface),
        }
    }
}

/// Lengths and volumes in significant digits: fixed decimals read a 1e-5 m
/// cube's cell and volume as 0.0000, a 5e5 m one's volume in 18 digits.
impl std::fmt::Display for QualityReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "  tets:        {} ({} vertices), resolution {} (cell {})",
            self.tets,
            self.vertices,
            self.resolution,
            crate::param::format_value(self.cell)
        )?;
        writeln!(
            f,
            "  dihedral:    min {:.2}°, 1st percentile {:.2}°, max {:.2}°",
            self.min_dihedral_deg, self.p1_dihedral_deg, self.max_dihedral_deg
        )?;
        writeln!(
            f,
            "  radius/edge: max {:.3} (regular tet 0.612)",
            self.max_radius_edge_ratio
        )?;
        match (self.surface_volume, self.volume_error) {
            (Some(s), Some(e)) => writeln!(
                f,
                "  volume:      {} vs {} enclosed ({:+.3}%)",
                crate::param::format_value(self.volume),
                crate::param::format_value(s),
                e * 100.0
            )?,
            _ => writeln!(
                f,
                "  volume:      {} (open surface)",
                crate::param::format_value(self.volume)
            )?,
        }
        writeln!(
            f,
            "  boundary:    {:.3}% of the diagonal from the surface (surface to tets {:.3}%)",
            self.boundary_distance * 100.0,
            self.surface_to_boundary * 100.0
        )?;
        writeln!(f, "  time:        {:.1} ms", self.seconds * 1e3)?;
        match self.warnings.as_slice() {
            [] => writeln!(f, "  warnings:    none"),
            warnings => {
                writeln!(f, "  warnings:")?;
                warnings.iter().try_for_each(|w| writeln!(f, "    {w}"))
            }
        }
    }
}

/// Largest distance of a point from the least-squares plane of `points`.
fn flatness(points: &[Vec3]) -> f64 {
    let n = points.len().max(1) as f64;
    let mean = points.iter().sum::<Vec3>() / n;
    let cov = points.iter().fold(nalgebra::Matrix3::zeros(), |acc, p| {
        let d = p - mean;
        acc + d * d.transpose()
    });
    let eig = cov.symmetric_eigen();
    let normal = eig.eigenvectors.column(eig.eigenvalues.imin()).into_owned();
    points
        .iter()
        .map(|p| (p - mean).dot(&normal).abs())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::mesh::{RawMesh, ValidateOptions, primitives, validate};

    fn surface(raw: &RawMesh) -> SurfaceMesh {
        validate(raw, Path::new("t.obj"), &ValidateOptions::default())
            .unwrap()
            .0
    }

    /// One 20,000-gon (ear-clipped into thin triangles that overlap in every
    /// box) and a flat cloth are flat: no search, no crossing. Lift one
    /// corner of the cloth, or close the surface, and it is searched.
    #[test]
    fn only_a_flat_surface_skips_the_search_for_crossings() {
        let n = 20_000;
        let mut disc = RawMesh::new();
        disc.positions = (0..n)
            .map(|k| {
                let a = std::f64::consts::TAU * k as f64 / n as f64;
                Vec3::new(a.cos(), 0.3, a.sin())
            })
            .collect();
        disc.indices = (0..n as u32).rev().collect();
        disc.offsets.push(n as u32);
        let disc = surface(&disc);
        assert!(is_flat(&disc));
        assert_eq!(crossing_warning(&disc), None);
        let mut cloth = primitives::cloth_square(10, 1.0, true);
        assert!(is_flat(&surface(&cloth)));
        cloth.positions[0].z += 1e-3;
        assert!(!is_flat(&surface(&cloth)));
        let cube = surface(&primitives::cuboid(Vec3::new(1.0, 2.0, 3.0), 2));
        assert!(!is_flat(&cube));
        assert_eq!(crossing_warning(&cube), None);
    }
}
