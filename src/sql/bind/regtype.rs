//! `regtype`, the type `pg_typeof` returns: a type held as its name as PostgreSQL prints it,
//! converted to and from OIDs where it meets one (PostgreSQL compares regtypes as OIDs).

use super::catalog::{as_text, case_of, lit_int, lit_text};
use crate::error::{Error, Result, SqlState};
use crate::sql::catalog::types;
use crate::sql::expr::{Expr, Ty};
use crate::types::Value;

/// A regtype value (a type's name as PostgreSQL prints it) as the type's OID; NULL for a
/// name no type has.
pub(super) fn regtype_oid(e: Expr) -> Expr {
    match e {
        Expr::Lit(Value::Text(s)) => Expr::Lit(types::by_name(&s).map_or(Value::Null, |t| Value::Int(t.oid))),
        e => {
            let whens = types::TYPES
                .iter()
                .map(|t| (lit_text(t.display), lit_int(t.oid)))
                .collect();
            case_of(e, whens, Expr::Lit(Value::Null))
        }
    }
}

/// `e` of type `from` (an untyped literal or parameter, an OID) as a regtype: the type's name
/// as PostgreSQL prints it (42704 for a literal naming no type; an OID of no type prints as
/// its number, as PostgreSQL's regtypeout).
pub(super) fn to_regtype(e: Expr, from: Ty) -> Result<Expr> {
    let display = |s: &str| {
        types::by_name(s)
            .map(|t| t.display)
            .ok_or_else(|| Error::new(SqlState::UNDEFINED_OBJECT, format!("type \"{s}\" does not exist")))
    };
    Ok(match e {
        Expr::Lit(Value::Null) => Expr::Lit(Value::Null),
        Expr::Lit(Value::Text(s)) if from == Ty::Unknown => lit_text(display(&s)?),
        Expr::Lit(Value::Int(o)) => {
            lit_text(types::by_oid(o).map_or(o.to_string(), |t| t.display.to_string()))
        }
        e if from.is_int() => {
            let whens = types::TYPES
                .iter()
                .map(|t| (lit_int(t.oid), lit_text(t.display)))
                .collect();
            case_of(e.clone(), whens, as_text(e))
        }
        e => {
            // An unquoted `char` is character (bpchar); `"char"` the one-byte type.
            let bpchar = types::by_oid(1042).map_or("character", |t| t.display);
            let whens = [(lit_text("char"), lit_text(bpchar))]
                .into_iter()
                .chain(types::TYPES.iter().flat_map(|t| {
                    [
                        (lit_text(t.name), lit_text(t.display)),
                        (lit_text(t.display), lit_text(t.display)),
                    ]
                }))
                .collect();
            case_of(as_text(e), whens, Expr::Lit(Value::Null))
        }
    })
}
