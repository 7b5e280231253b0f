//! Helpers of the stress binary: counting allocator, key sets, perf counters, machine
//! description, reports.

pub mod alloc;
pub mod counters;
pub mod keys;
pub mod machine;
pub mod report;
