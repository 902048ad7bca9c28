use softbody::bench::Scene;
use softbody::solver::{Acceleration, Solver, State};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plain = args.get(1).map(|s| s == "plain").unwrap_or(false);
    let frames: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(600);
    let scene = Scene::tet(22);
    let model = scene.model();
    let mut params = scene.params();
    if plain {
        params.acceleration = Acceleration::Plain;
        params.extrapolate = false;
        params.iterations = 8;
    } else {
        params.iterations = 2;
    }
    let mut solver = Solver::new(&model, &params).unwrap();
    let mut state = State::at_rest(&model);
    for _ in 0..30 {
        solver.step(&mut state).unwrap();
    }
    let mut t = Vec::new();
    let mut loc = Vec::new();
    let mut glo = Vec::new();
    let mut oth = Vec::new();
    for _ in 0..frames {
        let t0 = Instant::now();
        let r = solver.step(&mut state).unwrap();
        t.push(t0.elapsed().as_secs_f64() * 1e3);
        loc.push(r.timings.local_ms);
        glo.push(r.timings.global_ms);
        oth.push(r.timings.other_ms);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    println!(
        "{} frame {:.3} local {:.3} global {:.3} other {:.3}",
        if plain { "plain8" } else { "default2" },
        med(&mut t),
        med(&mut loc),
        med(&mut glo),
        med(&mut oth)
    );
}
