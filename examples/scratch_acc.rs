use softbody::bench::Scene;
use softbody::solver::{Acceleration, SimParams, Solver, State, accuracy};
fn main() {
    let name = std::env::args().nth(1).unwrap();
    let scene = Scene::by_name(&name).unwrap();
    let model = scene.model();
    for m in [Acceleration::Anderson] {
        let p = SimParams {
            acceleration: m,
            ..scene.params()
        };
        let mut s = Solver::new(&model, &p).unwrap();
        let mut state = State::at_rest(&model);
        let mut rej = 0;
        for _ in 0..5 {
            for _ in 0..10 {
                rej += s.step(&mut state).unwrap().rejected;
            }
            let a = accuracy::measure(&s, &state, 14).unwrap();
            println!(
                "{m:10} {}",
                a.errors
                    .iter()
                    .map(|e| format!("{e:.1e}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        println!("rejected {rej}");
    }
}
