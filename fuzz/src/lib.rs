//! Harnesses of Augur's fuzz targets (`fuzz_targets/`). Each module is also compiled into the
//! stable test suite (`tests/fuzz_regressions.rs` includes it by path) to replay the seeds and
//! every crash input kept in `fuzz/regressions/`, so the harnesses use only `augur`, `tokio`
//! and `std`.

pub mod alex;
pub mod scratch;
pub mod sql;
pub mod wire;
