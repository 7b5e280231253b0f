//! pg_sequence: each sequence's type and bounds.

use super::{b, Ty, B, I8, OID};
use crate::error::Result;
use crate::sql::catalog::{int, relation, sequence_oid, Relation, Snapshot};
use crate::types::Value;

pub(super) fn sequences(s: &Snapshot) -> Result<Relation> {
    let cols: &[(&str, Ty)] = &[
        ("seqrelid", OID),
        ("seqtypid", OID),
        ("seqstart", I8),
        ("seqincrement", I8),
        ("seqmax", I8),
        ("seqmin", I8),
        ("seqcache", I8),
        ("seqcycle", B),
    ];
    let rows = s
        .sequences
        .iter()
        .map(|q| {
            vec![
                int(sequence_oid(&q.name)),
                int(i64::from(q.data_type().pg_oid())),
                Value::Int(q.start),
                Value::Int(q.increment),
                Value::Int(q.max),
                Value::Int(q.min),
                Value::Int(1),
                b(q.cycle),
            ]
        })
        .collect();
    relation(cols, rows)
}
