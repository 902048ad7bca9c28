use softbody::bench::Scene;
use softbody::solver::{SimParams, Solver, State};
use std::time::Instant;
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let tol: f64 = std::env::args().nth(2).unwrap().parse().unwrap();
    let scene = Scene::by_name(&name).unwrap();
    let model = scene.model();
    let p = SimParams { tolerance: tol, ..scene.params() };
    let mut s = Solver::new(&model, &p).unwrap();
    let mut state = State::at_rest(&model);
    let mut line = String::new();
    let t0 = Instant::now();
    for f in 0..60 { let r = s.step(&mut state).unwrap(); if f % 3 == 0 { line += &format!("{} ", r.objective.len() - 1); } }
    println!("{name} tol {tol}: its {line} | {:.1} ms/frame", t0.elapsed().as_secs_f64() * 1e3 / 60.0);
}
