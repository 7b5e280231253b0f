//! pg_namespace, pg_class and pg_attribute (every table, index, view and sequence with its
//! columns) and the pg_tables view.

use super::{b, Ty, B, F8, I2, I4, N, OID, T, T_ARRAY};
use crate::error::Result;
use crate::sql::catalog::types::column_type;
use crate::sql::catalog::{
    int, relation, sequence_oid, text, view_oid, Relation, Snapshot, AM_TABLE, PUBLIC_NS, ROLE_NAME,
    ROLE_OID, SCHEMAS,
};
use crate::types::{DataType, Value};

pub(super) fn namespaces() -> Result<Relation> {
    relation(
        &[("oid", OID), ("nspname", T), ("nspowner", OID), ("nspacl", T)],
        SCHEMAS
            .iter()
            .map(|(oid, n)| vec![int(*oid), text(*n), int(ROLE_OID), N])
            .collect(),
    )
}

const CLASS_COLS: &[(&str, Ty)] = &[
    ("oid", OID),
    ("relname", T),
    ("relnamespace", OID),
    ("reltype", OID),
    ("reloftype", OID),
    ("relowner", OID),
    ("relam", OID),
    ("relfilenode", OID),
    ("reltablespace", OID),
    ("relpages", I4),
    ("reltuples", F8),
    ("relallvisible", I4),
    ("reltoastrelid", OID),
    ("relhasindex", B),
    ("relisshared", B),
    ("relpersistence", T),
    ("relkind", T),
    ("relnatts", I2),
    ("relchecks", I2),
    ("relhasrules", B),
    ("relhastriggers", B),
    ("relhassubclass", B),
    ("relrowsecurity", B),
    ("relforcerowsecurity", B),
    ("relispopulated", B),
    ("relreplident", T),
    ("relispartition", B),
    ("relrewrite", OID),
    ("relacl", T),
    ("reloptions", T_ARRAY),
    ("relpartbound", T),
];

/// One pg_class row: (oid, name, kind, access method, number of columns, has indexes).
pub(super) fn class_row(
    oid: i64,
    name: &str,
    kind: &str,
    am: i64,
    natts: usize,
    has_index: bool,
) -> Vec<Value> {
    vec![
        int(oid),
        text(name),
        int(PUBLIC_NS),
        int(0),
        int(0),
        int(ROLE_OID),
        int(am),
        int(oid),
        int(0),
        Value::Int(0),
        Value::Float(-1.0),
        Value::Int(0),
        int(0),
        b(has_index),
        b(false),
        text("p"),
        text(kind),
        Value::Int(natts as i64),
        Value::Int(0),
        b(false),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        text(if kind == "r" { "d" } else { "n" }),
        b(false),
        int(0),
        N,
        N,
        N,
    ]
}

pub(super) fn classes(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        let mut row = class_row(
            t.oid,
            &def.name,
            "r",
            AM_TABLE,
            def.columns.len(),
            !t.indexes.is_empty(),
        );
        row[18] = Value::Int(def.checks.len() as i64);
        row[20] = b(s.has_triggers(t));
        rows.push(row);
        for ix in &t.indexes {
            rows.push(class_row(
                ix.oid,
                &ix.name,
                "i",
                ix.am_oid(),
                ix.columns.len(),
                false,
            ));
        }
    }
    for v in &s.views {
        rows.push(class_row(
            view_oid(&v.name),
            &v.name,
            "v",
            0,
            v.columns.len(),
            false,
        ));
    }
    for q in &s.sequences {
        rows.push(class_row(sequence_oid(&q.name), &q.name, "S", 0, 3, false));
    }
    relation(CLASS_COLS, rows)
}

const ATTRIBUTE_COLS: &[(&str, Ty)] = &[
    ("attrelid", OID),
    ("attname", T),
    ("atttypid", OID),
    ("attstattarget", I4),
    ("attlen", I2),
    ("attnum", I2),
    ("attndims", I4),
    ("attcacheoff", I4),
    ("atttypmod", I4),
    ("attbyval", B),
    ("attalign", T),
    ("attstorage", T),
    ("attcompression", T),
    ("attnotnull", B),
    ("atthasdef", B),
    ("atthasmissing", B),
    ("attidentity", T),
    ("attgenerated", T),
    ("attisdropped", B),
    ("attislocal", B),
    ("attinhcount", I4),
    ("attcollation", OID),
    ("attacl", T),
    ("attoptions", T),
    ("attfdwoptions", T),
    ("attmissingval", T),
];

/// One pg_attribute row of relation `rel` for a column of type `ty`, numbered `num` (1-based).
pub(super) fn attribute_row(
    rel: i64,
    name: &str,
    ty: DataType,
    num: usize,
    not_null: bool,
    has_def: bool,
) -> Vec<Value> {
    let (oid, typmod) = column_type(ty);
    let pt = crate::sql::catalog::types::by_oid(oid);
    vec![
        int(rel),
        text(name),
        int(oid),
        Value::Int(-1),
        Value::Int(pt.map_or(-1, |t| t.len)),
        Value::Int(num as i64),
        Value::Int(0),
        Value::Int(-1),
        Value::Int(typmod),
        b(pt.is_some_and(|t| t.byval)),
        text(pt.map_or("i", |t| t.align)),
        text(pt.map_or("x", |t| t.storage)),
        text(""),
        b(not_null),
        b(has_def),
        b(false),
        text(""),
        text(""),
        b(false),
        b(true),
        Value::Int(0),
        int(if pt.is_some_and(|t| t.collatable) { 100 } else { 0 }),
        N,
        N,
        N,
        N,
    ]
}

/// The user columns (attnum > 0) of every table and index; Augur has no system columns.
pub(super) fn attributes(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        let def = &t.def;
        for (i, c) in def.columns.iter().enumerate() {
            let not_null = !c.nullable || def.primary_key.contains(&i);
            rows.push(attribute_row(
                t.oid,
                &c.name,
                c.ty,
                i + 1,
                not_null,
                c.default
                    .as_ref()
                    .is_some_and(|d| crate::sql::catalog::deparse::default_def(def, d, c.ty).is_some()),
            ));
        }
        for ix in &t.indexes {
            for (k, &c) in ix.columns.iter().enumerate() {
                let col = &def.columns[c];
                rows.push(attribute_row(ix.oid, &col.name, col.ty, k + 1, false, false));
            }
        }
    }
    for q in &s.sequences {
        let oid = sequence_oid(&q.name);
        rows.push(attribute_row(oid, "last_value", DataType::Int8, 1, true, false));
        rows.push(attribute_row(oid, "log_cnt", DataType::Int8, 2, true, false));
        rows.push(attribute_row(oid, "is_called", DataType::Bool, 3, true, false));
    }
    for v in &s.views {
        let oid = view_oid(&v.name);
        for (k, (name, ty)) in v.columns.iter().enumerate() {
            rows.push(attribute_row(oid, name, *ty, k + 1, false, false));
        }
    }
    relation(ATTRIBUTE_COLS, rows)
}

pub(super) fn tables(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("schemaname", T),
        ("tablename", T),
        ("tableowner", T),
        ("tablespace", T),
        ("hasindexes", B),
        ("hasrules", B),
        ("hastriggers", B),
        ("rowsecurity", B),
    ];
    let rows = s
        .tables
        .iter()
        .map(|t| {
            vec![
                text("public"),
                text(&t.def.name),
                text(ROLE_NAME),
                N,
                b(!t.indexes.is_empty()),
                b(false),
                b(false),
                b(false),
            ]
        })
        .collect();
    relation(cols, rows)
}
