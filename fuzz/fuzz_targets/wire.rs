#![no_main]
//! Arbitrary bytes into the server's connection handling: see `augur_fuzz::wire`.
//!
//! Inputs that make pgwire's decoder panic (contained by the server, not a crash) are saved,
//! one per panic location, under `$AUGUR_FUZZ_CONTAINED_DIR` when it is set.

use std::hash::{Hash, Hasher};

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let before = augur_fuzz::wire::contained_panics();
    augur_fuzz::wire::run(data);
    if augur_fuzz::wire::contained_panics() != before {
        if let Ok(dir) = std::env::var("AUGUR_FUZZ_CONTAINED_DIR") {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let at = augur_fuzz::wire::last_contained();
            at.split(": ").next().unwrap_or_default().hash(&mut h);
            let path = std::path::Path::new(&dir).join(format!("contained-{:016x}", h.finish()));
            if !path.exists() {
                let _ = std::fs::create_dir_all(&dir);
                let _ = std::fs::write(&path, data);
                let _ = std::fs::write(path.with_extension("txt"), format!("{at}\n"));
            }
        }
    }
});
