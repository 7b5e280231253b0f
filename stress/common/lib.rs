//! augur_bench: the code the benchmark and stress programs share (counting allocator, seeded
//! key sets, perf counters, machine description, stress_100m's report writer).

pub mod alloc;
pub mod counters;
pub mod keys;
pub mod machine;
pub mod report;
