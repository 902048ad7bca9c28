//! Helpers shared by the integration tests: running the `softbody` binary
//! and scratch directories. (Each test file compiles this module on its own
//! and uses part of it.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary with `args` from the package root.
pub fn softbody(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_softbody"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// [`softbody`], which must succeed (else its stderr is the failure).
pub fn softbody_ok(args: &[&str]) -> Output {
    let out = softbody(args);
    assert!(
        out.status.success(),
        "softbody {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A scratch directory for one test, `softbody-{test}-{pid}` under the
/// system's temporary directory (the process id keeps parallel runs
/// apart): removed if a previous run left it, and removed when dropped,
/// also as a failing test unwinds (a failure used to leave it behind).
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The [`Scratch`] directory of `test`, not created.
pub fn scratch_path(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("softbody-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Scratch(dir)
}

/// [`scratch_path`], created empty.
pub fn scratch_dir(test: &str) -> Scratch {
    let dir = scratch_path(test);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The faces of a cube whose corner `k` has bit 1, 2 and 4 of `k` set
/// where x, y and z are high, counter-clockwise from outside.
pub const CUBE_FACES: [[usize; 4]; 6] = [
    [0, 4, 6, 2],
    [1, 3, 7, 5],
    [0, 1, 5, 4],
    [2, 6, 7, 3],
    [0, 2, 3, 1],
    [4, 5, 7, 6],
];

/// OBJ text of a unit cube moved by `offset`, its vertices numbered from
/// `first + 1` (so two can share a file), its six faces outward quads.
pub fn cube_obj(offset: [f64; 3], first: usize) -> String {
    let mut text = String::new();
    for k in 0..8 {
        let corner = [k & 1, (k >> 1) & 1, (k >> 2) & 1];
        let [x, y, z] = [0, 1, 2].map(|i| f64::from(corner[i]) + offset[i]);
        text += &format!("v {x} {y} {z}\n");
    }
    for face in CUBE_FACES {
        let [a, b, c, d] = face.map(|v| v + first + 1);
        text += &format!("f {a} {b} {c} {d}\n");
    }
    text
}

/// OBJ text of a square of two triangles with the first given twice: the
/// import drops the copy and says so.
pub const DUPLICATED_FACE_OBJ: &str =
    "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\nf 1 2 3\n";

/// The threads of the process `pid`, as `/proc` lists them: each one's
/// name and status text (none once it has ended).
#[cfg(target_os = "linux")]
pub fn threads_of(pid: u32) -> Vec<(String, String)> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let read =
        |task: &Path, file: &str| std::fs::read_to_string(task.join(file)).unwrap_or_default();
    tasks
        .filter_map(Result::ok)
        .map(|t| {
            (
                read(&t.path(), "comm").trim().to_owned(),
                read(&t.path(), "status"),
            )
        })
        .collect()
}
