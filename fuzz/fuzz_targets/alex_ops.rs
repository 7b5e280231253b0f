#![no_main]
//! ALEX vs BTreeMap on random operation sequences: see `augur_fuzz::alex`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| augur_fuzz::alex::run(data));
