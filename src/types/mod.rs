//! Column types, values, and their byte encodings.
//!
//! - [`DataType`] / [`Value`]: what a column holds.
//! - [`Key`]: a primary-key value as the indexes see it: `Int` for integer, timestamp and date keys
//!   (served by ALEX), `Bytes` (an order-preserving encoding) for every other key.
//! - [`RowRef`] / [`ValueRef`]: a row and its values borrowed in place (no allocation).
//! - [`codec`]: order-preserving key encoding and the compact row encoding stored in RocksDB.
//! - [`numeric`]: exact decimals (`numeric`) with PostgreSQL's scales, on rust_decimal.
//! - [`interval`]: `interval` values, their text forms, order and date/time arithmetic.
//! - [`jsonb`]: `jsonb` documents, their text form, operators, order and key encoding.
//! - [`mod@array`]: arrays in PostgreSQL's text form, the form query results hold them in.

pub mod array;
pub mod codec;
mod data_type;
pub(crate) mod datetime;
pub mod interval;
pub mod json;
pub mod jsonb;
pub mod keyspace;
pub mod numeric;
mod rowref;
pub mod session_zone;
pub mod time;
mod value;
pub mod zone;

pub use data_type::{bpchar_assign, bpchar_pad, numeric_len, numeric_mod, numeric_typmod, DataType};
pub(crate) use datetime::now_micros;
pub use datetime::{
    add_months, date_is_finite, date_to_micros, format_date, format_timestamp, micros_to_date,
    parse_datetime, parse_timestamp, ts_is_finite, DATE_INFINITY, DATE_NEG_INFINITY, MICROS_PER_DAY,
    TIMESTAMP_RANGE, TS_INFINITY, TS_NEG_INFINITY,
};
pub use interval::Interval;
pub use jsonb::Json;
pub use rowref::{JsonbRef, RowRef, RowRefIter, ValueRef};
pub use rust_decimal::Decimal;
pub use uuid::Uuid;
pub use value::{format_float, Key, Row, Value};
