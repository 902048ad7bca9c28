//! The tetrahedraliser at its default resolution: the shipped sample meshes,
//! and the real-world files of `../shared/testdata/good` when present (the
//! closed ones and the open teapot).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use softbody::mesh::{self, ImportOptions, ValidateOptions};
use softbody::model::tetra::{self, TetraOptions};

fn tetrahedralize(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = ["box", "sphere", "torus"]
        .iter()
        .map(|m| root.join("meshes").join(format!("{m}.obj")))
        .collect();
    let testdata = root.join("../shared/testdata/good");
    files.extend(
        [
            "spot",
            "spot_control_mesh",
            "fandisk",
            "torus",
            "two_spheres",
            "teapot",
        ]
        .iter()
        .map(|m| testdata.join(format!("{m}.obj")))
        .filter(|p| p.is_file()),
    );
    let mut group = c.benchmark_group("tetrahedralize");
    group.sample_size(10);
    for file in files {
        let (surface, _) = mesh::load_obj(
            &file,
            &ImportOptions::default(),
            &ValidateOptions::default(),
        )
        .unwrap();
        let parent = file.parent().and_then(Path::file_name).unwrap();
        let name = format!(
            "{}/{}",
            parent.to_string_lossy(),
            file.file_stem().unwrap().to_string_lossy()
        );
        group.bench_function(name, |b| {
            b.iter(|| black_box(tetra::tetrahedralize(&surface, &TetraOptions::default()).unwrap()))
        });
    }
    group.finish();
}

criterion_group!(benches, tetrahedralize);
criterion_main!(benches);
