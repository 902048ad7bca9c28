use softbody::session::Session;
use softbody::solver::Precision;
use std::path::Path;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s = Session::open(Path::new(&args[1])).unwrap();
    for p in [Precision::Double, Precision::Mixed] {
        let mut solver = s.solver().clone();
        solver.set_precision(p).unwrap();
        let mut state = s.state().clone();
        let mut ok = 0;
        for _ in 0..60 {
            match solver.step(&mut state) {
                Ok(_) => ok += 1,
                Err(e) => {
                    println!("{p:?}: {e}");
                    break;
                }
            }
        }
        println!("{p:?}: {ok} frames");
    }
}
