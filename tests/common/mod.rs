//! Helpers shared by the integration tests that run the `softbody` binary.

use std::process::{Command, Output};

/// Runs the binary with `args` from the package root.
pub fn softbody(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softbody"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}
