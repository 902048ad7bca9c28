//! Import + validation + spring generation of a generated 1,000,000-triangle
//! OBJ (a 708 × 708-node triangulated cloth, 999,698 triangles), from bytes
//! in memory, and the pieces on their own.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use softbody::mesh::{self, ImportOptions, ValidateOptions, primitives};
use softbody::model::Springs;

fn million_triangles(c: &mut Criterion) {
    let mut raw = primitives::cloth_square(708, 1.0, false);
    // Positions and faces only, as the figures in the README were measured
    // (the generator has made texture coordinates since).
    raw.texcoords.clear();
    raw.corner_texcoords.clear();
    let mut text = Vec::new();
    mesh::write_obj(&mut text, &raw, &["benchmark"]).unwrap();
    let path = Path::new("million.obj");
    let (import, validate) = (ImportOptions::default(), ValidateOptions::default());

    let mut group = c.benchmark_group("million_triangles");
    group.sample_size(10);
    group.bench_function("parse", |b| {
        b.iter(|| black_box(mesh::import_obj_bytes(&text, path, &import).unwrap()))
    });
    let (parsed, _) = mesh::import_obj_bytes(&text, path, &import).unwrap();
    group.bench_function("validate", |b| {
        b.iter(|| black_box(mesh::validate(&parsed, path, &validate).unwrap()))
    });
    let (surface, _) = mesh::validate(&parsed, path, &validate).unwrap();
    group.bench_function("springs", |b| {
        b.iter(|| black_box(Springs::from_surface(&surface)))
    });
    group.bench_function("parse_validate_springs", |b| {
        b.iter(|| {
            let (raw, _) = mesh::import_obj_bytes(&text, path, &import).unwrap();
            let (surface, _) = mesh::validate(&raw, path, &validate).unwrap();
            black_box(Springs::from_surface(&surface))
        })
    });
    group.finish();
}

criterion_group!(benches, million_triangles);
criterion_main!(benches);
