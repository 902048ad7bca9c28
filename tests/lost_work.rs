//! No lost work: a save that cannot be completed because the disk fills up
//! half-way keeps the previous file intact, leaves no temporary file and
//! reports the error naming the file. (Read-only targets:
//! `tests/presets.rs`; the editor's unsaved-changes question and crash
//! recovery: `tests/gui.rs` and `src/autosave.rs`.)

use std::path::Path;
use std::process::Command;

use softbody::preset::{Preset, Selector};

mod common;
use common::scratch_dir;

const CHILD: &str = "SOFTBODY_TEST_FULL_DISK_DIR";

/// A preset whose file is several kilobytes (many pin indices).
fn big_preset() -> Preset {
    let mut pins = Preset::default().pins;
    pins.hard = vec![Selector::Indices((0..900).collect())];
    Preset {
        name: "big".into(),
        pins,
        ..Preset::default()
    }
}

/// Runs in a child process (it changes process-wide limits): files may
/// grow to 1 KiB only, as if the disk filled up during the write.
fn save_with_a_full_disk(dir: &Path) {
    // SAFETY: plain libc calls on this process; no memory is shared.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let limit = libc::rlimit {
            rlim_cur: 1024,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    let file = dir.join("preset.toml");
    let err = big_preset().save(&file).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("preset.toml"), "{message}");
    println!("the failed save said: {message}");
}

#[test]
fn a_save_on_a_full_disk_keeps_the_previous_file() {
    if let Some(dir) = std::env::var_os(CHILD) {
        save_with_a_full_disk(Path::new(&dir));
        return;
    }
    let dir = scratch_dir("lost-work-full");
    let file = dir.join("preset.toml");
    Preset::default().save(&file).unwrap();
    let before = std::fs::read(&file).unwrap();
    assert!(before.len() < 1024, "the old file fits the limit");
    // The child's output goes to pipes: were it a file (CI redirects to
    // one), the child's own printing would run into the size limit too.
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_save_on_a_full_disk_keeps_the_previous_file",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, dir.as_os_str())
        .output()
        .unwrap();
    assert!(
        child.status.success(),
        "the child's save did not fail cleanly:\n{}{}",
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );
    let said = String::from_utf8_lossy(&child.stdout);
    assert!(said.contains("the failed save said"), "{said}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the old file changed"
    );
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["preset.toml"]);
}
