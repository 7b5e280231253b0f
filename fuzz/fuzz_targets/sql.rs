#![no_main]
//! SQL text into parse, plan and execute on a scratch database: see `augur_fuzz::sql`.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| augur_fuzz::sql::run(data));
