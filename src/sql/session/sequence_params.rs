//! A sequence's parameters from the options of CREATE SEQUENCE, ALTER SEQUENCE and an identity
//! column, set and checked as PostgreSQL's `init_params` does, in its order and with its
//! messages (22023): the type (`AS smallint | integer | bigint`), INCREMENT, CYCLE, MAXVALUE
//! and MINVALUE (given, `NO ...`, or the type's bound), START. The current value is checked
//! against the new bounds by the engine (`Database::alter_sequence`).

use sqlparser::ast as A;

use crate::engine::SequenceDef;
use crate::error::{Error, Result, SqlState};
use crate::sql::bind::parse_type;
use crate::types::DataType;

fn bad(m: String) -> Error {
    Error::new(SqlState::INVALID_PARAMETER_VALUE, m)
}

/// The type of `AS type`: smallint, integer or bigint (22023 for another type).
pub(super) fn sequence_type(dt: &A::DataType) -> Result<DataType> {
    let ty = parse_type(dt)?.0;
    match ty {
        DataType::Int2 | DataType::Int4 | DataType::Int8 => Ok(ty),
        _ => Err(bad("sequence type must be smallint, integer, or bigint".into())),
    }
}

/// Sets `sd`'s parameters from `as_type` and `opts`. `init` for a new sequence (CREATE, an
/// identity column): what is not given takes PostgreSQL's default. Otherwise (ALTER) what is
/// not given stays, except that a new type moves a bound that was the old type's own to the
/// new type's (as PostgreSQL; a bound the user chose stays, and must fit the new type).
pub(super) fn init_params(
    sd: &mut SequenceDef,
    as_type: Option<DataType>,
    opts: &[A::SequenceOptions],
    init: bool,
) -> Result<()> {
    let int = sequence_int;
    let (mut reset_max, mut reset_min) = (false, false);
    if let Some(ty) = as_type {
        if !init {
            let old_max = integer_max(sd.data_type()).unwrap_or(i64::MAX);
            reset_max = sd.max == old_max;
            reset_min = sd.min == integer_min(old_max);
        }
        sd.ty = Some(ty);
    }
    let (mut increment, mut min, mut max, mut start, mut cycle) = (None, None, None, None, None);
    for o in opts {
        match o {
            A::SequenceOptions::IncrementBy(e, _) => increment = Some(int(e)?),
            A::SequenceOptions::MinValue(e) => min = Some(e.as_ref().map(int).transpose()?),
            A::SequenceOptions::MaxValue(e) => max = Some(e.as_ref().map(int).transpose()?),
            A::SequenceOptions::StartWith(e, _) => start = Some(int(e)?),
            A::SequenceOptions::Cache(e) => check_cache(e)?,
            A::SequenceOptions::Cycle(no) => cycle = Some(!*no),
        }
    }
    if let Some(i) = increment {
        if i == 0 {
            return Err(bad("INCREMENT must not be zero".into()));
        }
        sd.increment = i;
    } else if init {
        sd.increment = 1;
    }
    if let Some(c) = cycle {
        sd.cycle = c;
    } else if init {
        sd.cycle = false;
    }
    let ty = sd.data_type();
    let type_max = integer_max(ty).unwrap_or(i64::MAX);
    let type_min = integer_min(type_max);
    let in_type = |v: i64| (type_min..=type_max).contains(&v);
    match max {
        Some(Some(v)) => sd.max = v,
        _ if init || max.is_some() || reset_max => {
            sd.max = if sd.increment > 0 || reset_max {
                type_max
            } else {
                -1
            };
        }
        _ => {}
    }
    if !in_type(sd.max) {
        return Err(bad(format!(
            "MAXVALUE ({}) is out of range for sequence data type {}",
            sd.max,
            ty.sql_name()
        )));
    }
    match min {
        Some(Some(v)) => sd.min = v,
        _ if init || min.is_some() || reset_min => {
            sd.min = if sd.increment < 0 || reset_min {
                type_min
            } else {
                1
            };
        }
        _ => {}
    }
    if !in_type(sd.min) {
        return Err(bad(format!(
            "MINVALUE ({}) is out of range for sequence data type {}",
            sd.min,
            ty.sql_name()
        )));
    }
    if sd.min >= sd.max {
        return Err(bad(format!(
            "MINVALUE ({}) must be less than MAXVALUE ({})",
            sd.min, sd.max
        )));
    }
    if let Some(s) = start {
        sd.start = s;
    } else if init {
        sd.start = if sd.increment > 0 { sd.min } else { sd.max };
    }
    if sd.start < sd.min {
        return Err(bad(format!(
            "START value ({}) cannot be less than MINVALUE ({})",
            sd.start, sd.min
        )));
    }
    if sd.start > sd.max {
        return Err(bad(format!(
            "START value ({}) cannot be greater than MAXVALUE ({})",
            sd.start, sd.max
        )));
    }
    Ok(())
}

/// The integer a sequence option `e` gives (CREATE and ALTER SEQUENCE).
pub(super) fn sequence_int(e: &A::Expr) -> Result<i64> {
    e.to_string()
        .replace(' ', "")
        .parse::<i64>()
        .map_err(|_| Error::syntax(format!("sequence option must be an integer, not {e}")))
}

/// A sequence's `CACHE n`: accepted and not used (the engine reserves its own batches:
/// `engine/sequence.rs`), but, as in PostgreSQL, at least 1.
fn check_cache(e: &A::Expr) -> Result<()> {
    if sequence_int(e)? < 1 {
        return Err(bad(format!("CACHE ({e}) must be greater than zero")));
    }
    Ok(())
}

/// The smallest value of the integer type whose largest is `max` (a descending sequence's
/// default bound).
fn integer_min(max: i64) -> i64 {
    if max == i64::MAX {
        i64::MIN
    } else {
        -max - 1
    }
}

/// The largest value of integer type `ty` (a sequence's bound); None for any other type.
pub(super) fn integer_max(ty: DataType) -> Option<i64> {
    match ty {
        DataType::Int2 => Some(i16::MAX as i64),
        DataType::Int4 => Some(i32::MAX as i64),
        DataType::Int8 => Some(i64::MAX),
        _ => None,
    }
}
