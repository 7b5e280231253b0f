//! pg_index, pg_constraint (primary keys, UNIQUE, CHECK, FOREIGN KEY), pg_attrdef and the
//! pg_indexes view.

use super::{attnums, b, Ty, B, I2, I2_ARRAY, I4, N, OID, T};
use crate::error::Result;
use crate::sql::catalog::deparse;
use crate::sql::catalog::{index_def, int, relation, text, Relation, Snapshot, PUBLIC_NS};
use crate::types::Value;

pub(super) fn indexes(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("indexrelid", OID),
        ("indrelid", OID),
        ("indnatts", I2),
        ("indnkeyatts", I2),
        ("indisunique", B),
        ("indnullsnotdistinct", B),
        ("indisprimary", B),
        ("indisexclusion", B),
        ("indimmediate", B),
        ("indisclustered", B),
        ("indisvalid", B),
        ("indcheckxmin", B),
        ("indisready", B),
        ("indislive", B),
        ("indisreplident", B),
        ("indkey", T),
        ("indcollation", T),
        ("indclass", T),
        ("indoption", T),
        ("indexprs", T),
        ("indpred", T),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in &t.indexes {
            let n = ix.columns.len();
            let zeros = text(vec!["0"; n].join(" "));
            rows.push(vec![
                int(ix.oid),
                int(t.oid),
                Value::Int(n as i64),
                Value::Int(n as i64),
                b(ix.unique),
                b(false),
                b(ix.primary),
                b(false),
                b(true),
                b(false),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                attnums(&ix.columns, false),
                zeros.clone(),
                zeros.clone(),
                zeros,
                N,
                N,
            ]);
        }
    }
    relation(cols, rows)
}

pub(super) fn constraints(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("oid", OID),
        ("conname", T),
        ("connamespace", OID),
        ("contype", T),
        ("condeferrable", B),
        ("condeferred", B),
        ("convalidated", B),
        ("conrelid", OID),
        ("contypid", OID),
        ("conindid", OID),
        ("conparentid", OID),
        ("confrelid", OID),
        ("confupdtype", T),
        ("confdeltype", T),
        ("confmatchtype", T),
        ("conislocal", B),
        ("coninhcount", I4),
        ("connoinherit", B),
        ("conkey", I2_ARRAY),
        ("confkey", I2_ARRAY),
        ("conpfeqop", T),
        ("conppeqop", T),
        ("conffeqop", T),
        ("confdelsetcols", I2_ARRAY),
        ("conexclop", T),
        ("conbin", T),
    ];
    let mut rows = Vec::new();
    // One row: (oid, name, type, table, index, conkey) and, for a foreign key, (parent,
    // actions, confkey); for a CHECK, conbin.
    let row = |oid: i64, name: &str, ty: &str, rel: i64, index: i64, key: Value| {
        vec![
            int(oid),
            text(name),
            int(PUBLIC_NS),
            text(ty),
            b(false),
            b(false),
            b(true),
            int(rel),
            int(0),
            int(index),
            int(0),
            int(0),
            text(" "),
            text(" "),
            text(" "),
            b(true),
            Value::Int(0),
            b(ty != "c"),
            key,
            N,
            N,
            N,
            N,
            N,
            N,
            N,
        ]
    };
    for t in &s.tables {
        for ix in t.constraints() {
            let ty = if ix.primary { "p" } else { "u" };
            rows.push(row(
                ix.constraint_oid(),
                &ix.name,
                ty,
                t.oid,
                ix.oid,
                attnums(&ix.columns, true),
            ));
        }
        for (oid, c) in t.checks() {
            let cols = deparse::check_columns(&t.def, c);
            let key = if cols.is_empty() { N } else { attnums(&cols, true) };
            let mut r = row(oid, &c.name, "c", t.oid, 0, key);
            // conbin: the condition's text, which pg_get_expr(conbin, conrelid) returns.
            let def = deparse::check_def(&t.def, c, false);
            r[25] = text(&def["CHECK (".len()..def.len() - 1]);
            rows.push(r);
        }
    }
    for fk in s.foreign_keys() {
        let t = fk.table;
        let mut r = row(
            fk.oid,
            &fk.def.name,
            "f",
            t.oid,
            fk.parent_index.map_or(0, |i| i.oid),
            attnums(&fk.def.columns, true),
        );
        r[11] = int(fk.parent.map_or(0, |p| p.oid));
        r[12] = text(deparse::action_code(fk.def.on_update));
        r[13] = text(deparse::action_code(fk.def.on_delete));
        r[14] = text("s");
        r[19] = attnums(&fk.parent_columns, true);
        if let Some(set) = &fk.def.on_delete_set {
            r[23] = attnums(set, true);
        }
        rows.push(r);
    }
    relation(cols, rows)
}

pub(super) fn attrdefs(s: &Snapshot) -> Result<Relation> {
    let mut rows = Vec::new();
    for t in &s.tables {
        for (i, c) in t.def.columns.iter().enumerate() {
            // A NULL default is none (PostgreSQL stores no pg_attrdef row for it).
            if let Some(d) = c
                .default
                .as_ref()
                .and_then(|d| deparse::default_def(&t.def, d, c.ty))
            {
                rows.push(vec![
                    int(t.attrdef_oid(i)),
                    int(t.oid),
                    Value::Int(i as i64 + 1),
                    text(d),
                ]);
            }
        }
    }
    // adbin is the expression's SQL text as PostgreSQL prints it: pg_get_expr(adbin, adrelid)
    // returns it.
    relation(
        &[("oid", OID), ("adrelid", OID), ("adnum", I2), ("adbin", T)],
        rows,
    )
}

pub(super) fn index_view(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("schemaname", T),
        ("tablename", T),
        ("indexname", T),
        ("tablespace", T),
        ("indexdef", T),
    ];
    let mut rows = Vec::new();
    for t in &s.tables {
        for ix in &t.indexes {
            rows.push(vec![
                text("public"),
                text(&t.def.name),
                text(&ix.name),
                N,
                text(index_def(&t.def, ix)),
            ]);
        }
    }
    relation(cols, rows)
}
