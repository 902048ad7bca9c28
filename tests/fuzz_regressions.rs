//! Every input under `fuzz/corpus/*/seed-*` and `fuzz/regressions/*/`
//! (crashes the fuzzers found, kept once fixed) goes through the fuzz
//! targets' entry points on every `cargo test`, with no fuzzer needed.

use std::path::Path;

use softbody::fuzzing;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut count = 0;
    for dir in [
        root.join("corpus").join(target),
        root.join("regressions").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let in_corpus = dir.ends_with(target) && dir.parent().unwrap().ends_with("corpus");
            if name.starts_with('.') || (in_corpus && !name.starts_with("seed-")) {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| run(&data));
            assert!(outcome.is_ok(), "{target}: {} panics", path.display());
            count += 1;
        }
    }
    count
}

#[test]
fn obj_inputs_never_panic() {
    assert!(replay("obj", fuzzing::obj) >= 2);
}

#[test]
fn preset_inputs_never_panic() {
    assert!(replay("preset", fuzzing::preset) >= 3);
}

#[test]
fn tetgen_inputs_never_panic() {
    assert!(replay("tetgen", fuzzing::tetgen) >= 2);
}

#[test]
fn msh_inputs_never_panic() {
    assert!(replay("msh", fuzzing::msh) >= 3);
}
