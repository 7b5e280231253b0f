pub mod alex;
pub mod keyed;
