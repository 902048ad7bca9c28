//! Fuzz target: see [`softbody::fuzzing::msh`].
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() <= softbody::fuzzing::MAX_INPUT {
        softbody::fuzzing::msh(data);
    }
});
