pub mod alex;
pub mod keyed;
pub(crate) mod mem;
