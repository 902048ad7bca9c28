//! Fuzz target: see [`softbody::fuzzing::obj`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() <= softbody::fuzzing::MAX_INPUT {
        softbody::fuzzing::obj(data);
    }
});
