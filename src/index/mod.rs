//! Indexes from keys to row positions: the ALEX learned index, the keyed interface over it and
//! the ordered fallback, and the memory they live in (heap or a mapped image).
pub mod alex;
pub mod keyed;
pub mod mapped;
pub(crate) mod mem;
