//! Fuzz target: see [`softbody::fuzzing::tetgen`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() <= softbody::fuzzing::MAX_INPUT {
        softbody::fuzzing::tetgen(data);
    }
});
