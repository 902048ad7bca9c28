//! Solver benchmarks on the seed cloth scenes, the tet cube and the jelly
//! cube (see `softbody::bench`): one frame (10 local/global iterations, the default
//! acceleration; and cloth60 with each method), a numeric refactorisation, and
//! the sparse Cholesky choice: faer (AMD ordering, supernodal) against
//! nalgebra-sparse's `CscCholesky` (no fill-reducing ordering).

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use nalgebra_sparse::factorization::CscCholesky;
use softbody::bench::Scene;
use softbody::solver::{Acceleration, Solver, State};

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    for scene in [30, 60, 100].map(Scene::cloth) {
        bench_frame(&mut group, &scene);
    }
    group.finish();
    // A frame of tet22 takes tens of milliseconds, of jelly16 (SVDs,
    // volume projections, contacts) about a hundred: fewer samples.
    let mut group = c.benchmark_group("tet_frame");
    group.sample_size(10);
    bench_frame(&mut group, &Scene::tet(22));
    bench_frame(&mut group, &Scene::jelly(16));
    group.finish();
    // What one frame of each acceleration method costs at the same
    // iteration count (`softbody bench --accuracy` gives what each buys).
    let mut group = c.benchmark_group("acceleration");
    for acceleration in Acceleration::ALL {
        let scene = Scene {
            name: format!("cloth60_{acceleration}"),
            acceleration,
            ..Scene::cloth(60)
        };
        bench_frame(&mut group, &scene);
    }
    group.finish();
}

/// One frame of `scene` after 30 frames of warm-up.
fn bench_frame(group: &mut BenchmarkGroup<'_, WallTime>, scene: &Scene) {
    let model = scene.model();
    let mut solver = Solver::new(&model, &scene.params()).unwrap();
    let mut state = State::at_rest(&model);
    for _ in 0..30 {
        solver.step(&mut state).unwrap();
    }
    group.bench_function(&scene.name, |b| {
        b.iter(|| black_box(solver.step(&mut state).unwrap()))
    });
}

fn factorisation(c: &mut Criterion) {
    let mut group = c.benchmark_group("factor");
    group.sample_size(20);
    for n in [30, 60] {
        let scene = Scene::cloth(n);
        let model = scene.model();
        let params = scene.params();
        let mut solver = Solver::new(&model, &params).unwrap();
        group.bench_function(format!("faer_refactor_{}", scene.name), |b| {
            b.iter(|| solver.refactor(model.weights, None, &params).unwrap())
        });
        let a = solver.system_matrix();
        let mut nalgebra = CscCholesky::factor(&a).unwrap();
        eprintln!(
            "{}: faer L nnz {}, nalgebra-sparse L nnz {}",
            scene.name,
            solver.factor_stats().factor_nnz,
            nalgebra.l().nnz()
        );
        group.bench_function(format!("nalgebra_refactor_{}", scene.name), |b| {
            b.iter(|| nalgebra.refactor(a.values()).unwrap())
        });
        let mut rhs = nalgebra::DMatrix::<f64>::from_element(a.nrows(), 3, 1.0);
        group.bench_function(format!("nalgebra_solve3_{}", scene.name), |b| {
            b.iter(|| nalgebra.solve_mut(&mut rhs))
        });
    }
    group.finish();
}

criterion_group!(benches, frames, factorisation);
criterion_main!(benches);
