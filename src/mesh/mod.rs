//! Surface meshes: reading OBJ files, validating them into a [`SurfaceMesh`],
//! and the edge topology that springs and reports are built from; and
//! tetrahedral meshes ([`TetMesh`]) with their files in [`tet_io`] (TetGen,
//! Gmsh, VTK).
//!
//! The pipeline is `bytes ──obj::parse──▶ RawMesh ──validate──▶ SurfaceMesh`.
//! Only [`validate()`] makes a [`SurfaceMesh`]; code after it trusts the
//! invariants documented on the type.

pub mod obj;
pub mod primitives;
mod raw;
pub(crate) mod report;
pub mod tet;
pub mod tet_io;
mod texcoords;
pub mod topology;
mod triangulate;
mod validate;

pub use obj::{
    ImportError, ImportErrorKind, ImportOptions, ParseStats, import_obj, import_obj_bytes,
    write_obj,
};
pub use raw::{GroupKind, NO_MATERIAL, NO_TEXCOORD, RawGroup, RawMesh};
pub use report::{Bounds, GroupSummary, MeshReport};
pub use tet::{TetMesh, TetMeshError};
pub use tet_io::{
    MshVersion, TetIoError, TetIoErrorKind, check_tet_output, read_tet_mesh, tetgen_paths,
    write_tet_mesh,
};
pub use texcoords::TexCoords;
pub use topology::EdgeTopology;
pub use validate::{
    SIZE_RANGE, SourceLayout, SurfaceMesh, ValidateOptions, ValidationStats, VertexGroup, validate,
};

/// A position in model space (metres by convention).
pub type Vec3 = nalgebra::Vector3<f64>;

/// Axis-aligned bounds `(min, max)` of `points`, component-wise;
/// `(+∞, −∞)` when there are none.
pub(crate) fn bounds<'a>(points: impl IntoIterator<Item = &'a Vec3>) -> (Vec3, Vec3) {
    points.into_iter().fold(
        (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
        |(lo, hi), p| (lo.inf(p), hi.sup(p)),
    )
}

/// Two unit vectors across the unit vector `n` and each other: `u = n × a`
/// (`a` the x axis, or the y axis where `n` lies near x) and `v = n × u`,
/// so `(u, v, n)` is right-handed.
pub(crate) fn across(n: Vec3) -> (Vec3, Vec3) {
    let a = if n.x.abs() < 0.9 {
        Vec3::x()
    } else {
        Vec3::y()
    };
    let u = n.cross(&a).normalize();
    (u, n.cross(&u))
}

/// Reads, validates and reports on an OBJ file in one call.
///
/// # Errors
/// Any [`ImportError`] from reading, parsing or validating `path`.
pub fn load_obj(
    path: &std::path::Path,
    import: &ImportOptions,
    validate_options: &ValidateOptions,
) -> Result<(SurfaceMesh, MeshReport), ImportError> {
    let (raw, parse) = import_obj(path, import)?;
    let (surface, stats) = validate(&raw, path, validate_options)?;
    let report = MeshReport::new(&path.display().to_string(), Some(parse), stats, &surface);
    Ok((surface, report))
}
