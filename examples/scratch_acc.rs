use softbody::bench::Scene;
use softbody::solver::{Acceleration, SimParams, Solver, State, accuracy};
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let scene = Scene::by_name(&name).unwrap();
    let model = scene.model();
    for m in [Acceleration::Plain, Acceleration::Anderson] {
        let p = SimParams {
            acceleration: m,
            ..scene.params()
        };
        let mut s = Solver::new(&model, &p).unwrap();
        let mut state = State::at_rest(&model);
        for _ in 0..4 {
            for _ in 0..10 {
                s.step(&mut state).unwrap();
            }
            let a = accuracy::measure(&s, &state, 12).unwrap();
            let mut run = s.clone();
            run.set_params(&SimParams {
                iterations: 12,
                ..p.clone()
            })
            .unwrap();
            let mut xs: Vec<Vec<_>> = vec![];
            run.step_observed(&mut state.clone(), &mut |_, x| xs.push(x.to_vec()))
                .unwrap();
            let q = &state.positions;
            let upd: Vec<f64> = (0..xs.len() - 1)
                .map(|k| {
                    let num: f64 = xs[k + 1]
                        .iter()
                        .zip(&xs[k])
                        .map(|(a, b)| (a - b).norm_squared())
                        .sum::<f64>()
                        .sqrt();
                    let den: f64 = xs[k + 1]
                        .iter()
                        .zip(q)
                        .map(|(a, b)| (a - b).norm_squared())
                        .sum::<f64>()
                        .sqrt();
                    num / den
                })
                .collect();
            println!(
                "{m:9} err {}",
                a.errors
                    .iter()
                    .take(12)
                    .map(|e| format!("{e:.1e}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            println!(
                "{m:9} upd {}",
                upd.iter()
                    .map(|e| format!("{e:.1e}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
}
