//! The memory the process holds, as the editor, the terminal UI and
//! `softbody bench` report it. A file of its own: it allocates and frees a
//! large block and reads the figures in between, which other tests
//! allocating in the same process would blur.

use std::hint::black_box;

use softbody::solver::memory::{reset_peak, resident};

const BLOCK: u64 = 256 << 20;

#[test]
fn the_figures_follow_an_allocation_and_the_peak_resets() {
    if !cfg!(target_os = "linux") {
        return;
    }
    let before = resident().expect("Linux reports the memory a process holds");
    // Written through, so every page is held.
    let block = black_box(vec![1u8; BLOCK as usize]);
    let during = resident().unwrap();
    assert!(
        during.current >= before.current + BLOCK * 9 / 10,
        "{before:?} then {during:?}"
    );
    drop(block);
    let after = resident().unwrap();
    // Freed (a block this large is mapped on its own and given back), and
    // the peak remembers it (to the kernel's accounting, which batches the
    // counts of each thread's pages: a few hundred kilobytes).
    assert!(after.current + BLOCK / 2 < during.current, "{after:?}");
    assert!(after.peak >= before.current + BLOCK * 9 / 10, "{after:?}");
    if reset_peak() {
        let reset = resident().unwrap();
        assert!(reset.peak + BLOCK / 2 < during.current, "{reset:?}");
        assert!(reset.peak >= reset.current);
    }
}
