//! augur_bench: the code the benchmark and stress programs share: counting allocator, seeded
//! key sets, perf counters, machine and provenance, measured memory and its budget, the
//! machine's memory latency, summary statistics, chart axes, Augur's benchmark options,
//! stress_100m's report writer.

pub mod alloc;
pub mod augur_side;
pub mod budget;
pub mod chart;
pub mod counters;
pub mod keys;
pub mod machine;
pub mod measure;
pub mod memlat;
pub mod provenance;
pub mod stats;
pub mod stress_report;
