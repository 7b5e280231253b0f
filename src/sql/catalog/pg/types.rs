//! pg_type (from the built-in type table), pg_collation and pg_am.

use super::{b, Ty, B, I2, I4, N, OID, T};
use crate::error::Result;
use crate::sql::catalog::types::TYPES;
use crate::sql::catalog::{
    int, relation, text, Relation, AM_ALEX, AM_BTREE, AM_TABLE, PG_CATALOG_NS, ROLE_OID,
};
use crate::types::Value;

pub(super) fn types() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("typname", T),
        ("typnamespace", OID),
        ("typowner", OID),
        ("typlen", I2),
        ("typbyval", B),
        ("typtype", T),
        ("typcategory", T),
        ("typispreferred", B),
        ("typisdefined", B),
        ("typdelim", T),
        ("typrelid", OID),
        ("typsubscript", T),
        ("typelem", OID),
        ("typarray", OID),
        ("typinput", T),
        ("typoutput", T),
        ("typreceive", T),
        ("typsend", T),
        ("typmodin", T),
        ("typmodout", T),
        ("typanalyze", T),
        ("typalign", T),
        ("typstorage", T),
        ("typnotnull", B),
        ("typbasetype", OID),
        ("typtypmod", I4),
        ("typndims", I4),
        ("typcollation", OID),
        ("typdefaultbin", T),
        ("typdefault", T),
        ("typacl", T),
    ];
    let rows = TYPES
        .iter()
        .map(|t| {
            let io = |f: &str| text(format!("{}{f}", t.io));
            let length_mod = matches!(t.oid, 1042 | 1043);
            vec![
                int(t.oid),
                text(t.name),
                int(PG_CATALOG_NS),
                int(ROLE_OID),
                Value::Int(t.len),
                b(t.byval),
                text("b"),
                text(t.category),
                b(t.preferred),
                b(true),
                text(","),
                int(0),
                text(if t.elem != 0 {
                    "array_subscript_handler"
                } else {
                    "-"
                }),
                int(t.elem),
                int(t.array),
                io("in"),
                io("out"),
                io("recv"),
                io("send"),
                text(if length_mod {
                    format!("{}typmodin", t.name)
                } else {
                    "-".into()
                }),
                text(if length_mod {
                    format!("{}typmodout", t.name)
                } else {
                    "-".into()
                }),
                text(if t.elem != 0 { "array_typanalyze" } else { "-" }),
                text(t.align),
                text(t.storage),
                b(false),
                int(0),
                Value::Int(-1),
                Value::Int(0),
                int(if t.collatable { 100 } else { 0 }),
                N,
                N,
                N,
            ]
        })
        .collect();
    relation(cols, rows)
}

/// The database default (text compares byte-wise: the C collation) and C / POSIX.
pub(super) fn collations() -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("collname", T),
        ("collnamespace", OID),
        ("collowner", OID),
        ("collprovider", T),
        ("collisdeterministic", B),
        ("collencoding", I4),
        ("collcollate", T),
        ("collctype", T),
        ("colliculocale", T),
        ("collversion", T),
    ];
    let row = |oid: i64, name: &str, provider: &str, locale: Option<&str>| {
        let loc = || locale.map_or(N, text);
        vec![
            int(oid),
            text(name),
            int(PG_CATALOG_NS),
            int(ROLE_OID),
            text(provider),
            b(true),
            Value::Int(-1),
            loc(),
            loc(),
            N,
            N,
        ]
    };
    relation(
        cols,
        vec![
            row(100, "default", "d", None),
            row(950, "C", "c", Some("C")),
            row(951, "POSIX", "c", Some("POSIX")),
        ],
    )
}

pub(super) fn access_methods() -> Result<Relation> {
    relation(
        &[("oid", OID), ("amname", T), ("amhandler", T), ("amtype", T)],
        vec![
            vec![int(AM_TABLE), text("augur"), text("-"), text("t")],
            vec![int(AM_BTREE), text("btree"), text("bthandler"), text("i")],
            vec![int(AM_ALEX), text("alex"), text("-"), text("i")],
        ],
    )
}
