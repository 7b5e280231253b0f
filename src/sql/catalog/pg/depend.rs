//! pg_depend: the dependencies PostgreSQL records between the objects Augur has (each
//! relation on its schema, indexes and constraints on their columns, a default on its column
//! and on the sequence it calls, a serial or identity column's sequence on that column).

use super::{Ty, I4, OID, T};
use crate::error::Result;
use crate::sql::catalog::{
    int, relation, sequence_oid, text, view_oid, Relation, Snapshot, TableInfo, PUBLIC_NS,
};
use crate::types::Value;

const PG_CLASS: i64 = 1259;
const PG_ATTRDEF: i64 = 2604;
const PG_CONSTRAINT: i64 = 2606;
const PG_NAMESPACE: i64 = 2615;

/// One row: (classid, objid, objsubid) depends on (refclassid, refobjid, refobjsubid) as
/// `deptype` says ('n' normal, 'a' auto: dropped with what it depends on, 'i' internal: part
/// of it). Objects PostgreSQL pins (built-in types, functions, operators) get no rows.
fn dep(obj: (i64, i64, usize), on: (i64, i64, usize), deptype: &str) -> Vec<Value> {
    vec![
        int(obj.0),
        int(obj.1),
        Value::Int(obj.2 as i64),
        int(on.0),
        int(on.1),
        Value::Int(on.2 as i64),
        text(deptype),
    ]
}

/// The sequence a column default calls (`nextval('name')`, as Augur writes serial defaults).
fn nextval_sequence(default: &str) -> Option<String> {
    let rest = default.trim().strip_prefix("nextval('")?;
    let (name, _) = rest.split_once('\'')?;
    Some(crate::sql::expr::sequence_name(name))
}

pub(super) fn depend(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("classid", OID),
        ("objid", OID),
        ("objsubid", I4),
        ("refclassid", OID),
        ("refobjid", OID),
        ("refobjsubid", I4),
        ("deptype", T),
    ];
    let schema = (PG_NAMESPACE, PUBLIC_NS, 0);
    let mut rows = Vec::new();
    for t in &s.tables {
        let col = |c: usize| (PG_CLASS, t.oid, c + 1);
        rows.push(dep((PG_CLASS, t.oid, 0), schema, "n"));
        // A constraint's index is part of the constraint, which depends on its columns; any
        // other index depends on its columns itself.
        for ix in &t.indexes {
            let constraint = t.constraints().any(|c| c.oid == ix.oid);
            if constraint {
                let con = (PG_CONSTRAINT, ix.constraint_oid(), 0);
                rows.push(dep((PG_CLASS, ix.oid, 0), con, "i"));
                for &c in &ix.columns {
                    rows.push(dep(con, col(c), "a"));
                }
            } else {
                for &c in &ix.columns {
                    rows.push(dep((PG_CLASS, ix.oid, 0), col(c), "a"));
                }
            }
        }
        // A CHECK depends on the columns of its key (auto) and on those its expression reads
        // (normal); one that reads none, on its table.
        for (oid, c) in t.checks() {
            let con = (PG_CONSTRAINT, oid, 0);
            let used = crate::sql::catalog::deparse::check_columns(&t.def, c);
            if used.is_empty() {
                rows.push(dep(con, (PG_CLASS, t.oid, 0), "a"));
            }
            for &k in &used {
                rows.push(dep(con, col(k), "a"));
            }
            for &k in &used {
                rows.push(dep(con, col(k), "n"));
            }
        }
        for (i, c) in t.def.columns.iter().enumerate() {
            let Some(d) = &c.default else { continue };
            let def = (PG_ATTRDEF, t.attrdef_oid(i), 0);
            rows.push(dep(def, col(i), "a"));
            if let Some(q) = nextval_sequence(d).filter(|q| s.sequences.iter().any(|x| x.name == *q)) {
                rows.push(dep(def, (PG_CLASS, sequence_oid(&q), 0), "n"));
            }
        }
    }
    // A foreign key depends on its columns (auto), on the referenced columns and on the
    // unique index that matches them (normal).
    for fk in s.foreign_keys() {
        let con = (PG_CONSTRAINT, fk.oid, 0);
        for &c in &fk.def.columns {
            rows.push(dep(con, (PG_CLASS, fk.table.oid, c + 1), "a"));
        }
        if let Some(p) = fk.parent {
            for &c in &fk.parent_columns {
                rows.push(dep(con, (PG_CLASS, p.oid, c + 1), "n"));
            }
        }
        if let Some(ix) = fk.parent_index {
            rows.push(dep(con, (PG_CLASS, ix.oid, 0), "n"));
        }
    }
    // A sequence owned by a column goes with it: auto for serial, internal for identity.
    for q in &s.sequences {
        let oid = sequence_oid(&q.name);
        rows.push(dep((PG_CLASS, oid, 0), schema, "n"));
        let owner = q.owned_by.as_ref().and_then(|(table, column)| {
            let t: &TableInfo = s.tables.iter().find(|t| t.def.name == *table)?;
            let i = t.def.columns.iter().position(|c| c.name == *column)?;
            Some((t, i))
        });
        if let Some((t, i)) = owner {
            let kind = if t.def.columns[i].identity.is_some() {
                "i"
            } else {
                "a"
            };
            rows.push(dep((PG_CLASS, oid, 0), (PG_CLASS, t.oid, i + 1), kind));
        }
    }
    // A view's own row; PostgreSQL's dependencies of its rewrite rule on the tables it reads
    // have no place here, as Augur has no pg_rewrite rows.
    for v in &s.views {
        rows.push(dep((PG_CLASS, view_oid(&v.name), 0), schema, "n"));
    }
    relation(cols, rows)
}
