//! FOREIGN KEY enforcement, owned by the engine: the named writes of [`crate::Transaction`]
//! run it after each write, and the SQL layer's INSERT / UPDATE / DELETE / COPY once a
//! statement's writes are buffered (written against the seam's [`EngineTxn`], so every engine
//! gets the same rules). A row written to a referencing (child) table needs its parent row, whose row
//! lock it takes and holds until the transaction ends (PostgreSQL takes FOR KEY SHARE), so no
//! other transaction can delete the parent or change its key meanwhile. A deleted or re-keyed
//! parent row applies each referencing key's action to the child rows that referenced it, and
//! a child row an action changes is checked as any update of it is (NOT NULL, CHECK).
//! Both sides read the newest committed versions plus the transaction's own writes, whatever
//! its snapshot: a row committed by a transaction whose lock this one waited for counts.

use std::collections::HashSet;
use std::ops::Bound;
use std::sync::Arc;

use crate::engine::catalog::{FkAction, ForeignKeyDef};
use crate::engine::{constraint, Interrupt, Locked, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::seam::{AnyTable, AnyTxn, EngineTable, EngineTxn};
use crate::types::{codec, Key, Row, Value};

/// Referential actions nested deeper than this (CASCADE through as many tables or levels of a
/// self-referencing table) fail.
const MAX_DEPTH: usize = 256;

/// Whether writes to `def` need foreign key work: it references a table, or a table
/// references it.
pub(crate) fn involved<T: EngineTable>(tables: &[T], def: &TableDef) -> bool {
    !def.foreign_keys.is_empty() || referenced(tables, def)
}

/// Whether a foreign key references `def` (deleting or re-keying its rows has actions).
pub(crate) fn referenced<T: EngineTable>(tables: &[T], def: &TableDef) -> bool {
    tables
        .iter()
        .any(|t| t.def().foreign_keys.iter().any(|f| f.parent == def.name))
}

fn child_violation(child: &str, fk: &str) -> Error {
    Error::new(
        SqlState("23503"),
        format!("insert or update on table \"{child}\" violates foreign key constraint \"{fk}\""),
    )
}

fn parent_violation(parent: &str, fk: &str, child: &str) -> Error {
    Error::new(
        SqlState("23503"),
        format!(
            "update or delete on table \"{parent}\" violates foreign key constraint \"{fk}\" on table \"{child}\""
        ),
    )
}

/// The values of `cols` in `row`; None when one is NULL (MATCH SIMPLE: such a row references
/// nothing).
pub(crate) fn tuple(row: &[Value], cols: &[usize]) -> Option<Vec<Value>> {
    let v: Vec<Value> = cols
        .iter()
        .map(|&i| row.get(i).cloned().unwrap_or(Value::Null))
        .collect();
    if v.iter().any(Value::is_null) {
        None
    } else {
        Some(v)
    }
}

fn same_set(a: &[usize], b: &[usize]) -> bool {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// The parent's positions of `fk.parent_columns`.
fn parent_positions(pdef: &TableDef, fk: &ForeignKeyDef) -> Result<Vec<usize>> {
    fk.parent_columns.iter().map(|n| pdef.column_index(n)).collect()
}

/// `vals` (in the order of `pcols`) as the parent's column types.
fn as_parent_types(pdef: &TableDef, pcols: &[usize], vals: Vec<Value>) -> Result<Vec<Value>> {
    vals.into_iter()
        .zip(pcols)
        .map(|(v, &i)| pdef.columns[i].ty.coerce(v))
        .collect()
}

/// How the parent finds a row by the referenced values: its primary key, or a unique index.
pub(crate) enum ParentKey {
    Primary(Key),
    Unique { index: usize, value: Vec<u8> },
}

/// The lookup of the parent row with referenced values `vals` (in the order of
/// `fk.parent_columns`); 42830 if the columns are neither the primary key nor a unique index.
pub(crate) fn parent_key(pdef: &TableDef, fk: &ForeignKeyDef, vals: Vec<Value>) -> Result<ParentKey> {
    let pcols = parent_positions(pdef, fk)?;
    let vals = as_parent_types(pdef, &pcols, vals)?;
    let in_order = |cols: &[usize]| -> Option<Vec<Value>> {
        cols.iter()
            .map(|p| pcols.iter().position(|c| c == p).map(|i| vals[i].clone()))
            .collect()
    };
    if !pdef.primary_key.is_empty() && same_set(&pdef.primary_key, &pcols) {
        if let Some(kv) = in_order(&pdef.primary_key) {
            return Ok(ParentKey::Primary(pdef.key_from_values(&kv)?));
        }
    }
    for (index, idx) in pdef.indexes.iter().enumerate() {
        if idx.unique && same_set(&idx.columns, &pcols) {
            if let Some(iv) = in_order(&idx.columns) {
                return Ok(ParentKey::Unique {
                    index,
                    value: codec::encode_key_values(&iv),
                });
            }
        }
    }
    Err(Error::new(
        SqlState("42830"),
        format!(
            "there is no unique constraint matching given keys for referenced table \"{}\"",
            pdef.name
        ),
    ))
}

/// Whether the parent row exists, as the newest committed versions and this transaction's own
/// writes have it. With `lock`, its row lock is taken first (and held until the transaction
/// ends); without, nothing waits (a DDL check, which runs under the engine's commit lock).
pub(crate) fn parent_exists<T: EngineTxn>(
    tx: &T,
    parent: &T::Table,
    fk: &ForeignKeyDef,
    vals: Vec<Value>,
    lock: Option<&Interrupt>,
) -> Result<bool> {
    let pdef = parent.def();
    let fetch = |k: &Key| -> Result<Option<Arc<Row>>> {
        match lock {
            Some(stop) => Ok(match tx.lock_row_by(parent, k, stop)? {
                Locked::Unchanged => tx.get_in(parent, k)?,
                Locked::Changed(r) => r,
            }),
            None => tx.get_latest_in(parent, k),
        }
    };
    match parent_key(&pdef, fk, vals)? {
        ParentKey::Primary(k) => Ok(fetch(&k)?.is_some()),
        ParentKey::Unique { index, value } => {
            let idx = &pdef.indexes[index];
            let mut keys: Vec<Key> = parent.index_candidates(
                index,
                Bound::Included(value.as_slice()),
                Bound::Included(value.as_slice()),
            );
            for (k, _) in tx.index_scan_in(
                parent,
                index,
                Bound::Included(value.as_slice()),
                Bound::Included(value.as_slice()),
            )? {
                keys.push(k);
            }
            keys.sort();
            keys.dedup();
            for k in keys {
                if let Some(r) = fetch(&k)? {
                    if pdef.index_value(idx, &r).as_deref() == Some(value.as_slice()) {
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        }
    }
}

/// Checks a row written to `child` (`old`: the row it replaces, for an UPDATE): for each of
/// its foreign keys whose columns are all non-NULL and changed, the parent row must exist
/// (23503); its lock is taken.
pub(crate) fn check_parents<T: EngineTxn>(
    tx: &T,
    child: &TableDef,
    row: &[Value],
    old: Option<&[Value]>,
    stop: &Interrupt,
) -> Result<()> {
    for fk in &child.foreign_keys {
        let Some(vals) = tuple(row, &fk.columns) else {
            continue;
        };
        if old.is_some_and(|o| tuple(o, &fk.columns).as_ref() == Some(&vals)) {
            continue;
        }
        let parent = tx.table(&fk.parent)?;
        if !parent_exists(tx, &parent, fk, vals, Some(stop))? {
            return Err(child_violation(&child.name, &fk.name));
        }
    }
    Ok(())
}

/// After a statement deleted rows of `parent` (`(old, None)`) or updated them (`(old,
/// Some(new))`), applies each foreign key that references it to the child rows whose
/// referenced values went away: NO ACTION fails (23503) unless a parent row has those values
/// again by the end of the statement; RESTRICT fails; CASCADE deletes the child rows (and
/// applies the keys that reference them in turn); SET NULL sets their columns to NULL, and the
/// changed rows must pass the child's NOT NULL (23502) and CHECK (23514) constraints, as
/// PostgreSQL runs the action as an UPDATE of the child. Takes the seam's [`AnyTxn`] (every
/// engine) as the CHECK evaluator does.
pub(crate) fn on_parent_change(
    tx: &mut AnyTxn,
    parent: &AnyTable,
    changes: &[(Arc<Row>, Option<Row>)],
    depth: usize,
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    if depth > MAX_DEPTH {
        return Err(Error::new(
            SqlState("54001"),
            "foreign key actions nested too deeply",
        ));
    }
    let pdef = parent.def();
    let refs: Vec<(AnyTable, ForeignKeyDef)> = tx
        .tables()
        .into_iter()
        .flat_map(|t| {
            let d = t.def();
            d.foreign_keys
                .iter()
                .filter(|f| f.parent == pdef.name)
                .map(|f| (t.clone(), f.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    for (child, fk) in refs {
        let pcols = parent_positions(&pdef, &fk)?;
        let mut gone: HashSet<Vec<Value>> = HashSet::new();
        let mut deleted = false;
        for (old, new) in changes {
            let Some(v) = tuple(old, &pcols) else {
                continue;
            };
            match new {
                Some(n) if tuple(n, &pcols).as_ref() == Some(&v) => continue,
                Some(_) => {}
                None => deleted = true,
            }
            gone.insert(v);
        }
        if gone.is_empty() {
            continue;
        }
        let cdef = child.def();
        let mut found: Vec<(Key, Arc<Row>, Vec<Value>)> = Vec::new();
        tx.scan_latest_in(&child, |k, r| {
            if let Some(v) = tuple(r, &fk.columns) {
                let v = as_parent_types(&pdef, &pcols, v)?;
                if gone.contains(&v) {
                    found.push((k.clone(), r.clone(), v));
                }
            }
            Ok(true)
        })?;
        if found.is_empty() {
            continue;
        }
        let action = if deleted { fk.on_delete } else { fk.on_update };
        match action {
            FkAction::Restrict => return Err(parent_violation(&pdef.name, &fk.name, &cdef.name)),
            FkAction::NoAction => {
                // Values a parent row has again (re-inserted, or moved to another row by the
                // same statement) are still referenced legitimately.
                let mut present: HashSet<Vec<Value>> = HashSet::new();
                tx.scan_latest_in(parent, |_, r| {
                    if let Some(v) = tuple(r, &pcols) {
                        if gone.contains(&v) {
                            present.insert(v);
                        }
                    }
                    Ok(true)
                })?;
                if found.iter().any(|(_, _, v)| !present.contains(v)) {
                    return Err(parent_violation(&pdef.name, &fk.name, &cdef.name));
                }
            }
            FkAction::Cascade => {
                let mut removed: Vec<(Arc<Row>, Option<Row>)> = Vec::new();
                for (k, r, _) in found {
                    if tx.delete_latest_in(&child, &k)? {
                        removed.push((r, None));
                    }
                }
                on_parent_change(tx, &child, &removed, depth + 1)?;
            }
            FkAction::SetNull => {
                let mut updated: Vec<(Arc<Row>, Option<Row>)> = Vec::new();
                for (k, r, _) in found {
                    let mut n: Row = (*r).clone();
                    for &i in &fk.columns {
                        n[i] = Value::Null;
                    }
                    // NOT NULL is checked by the write, CHECK here: the order of an UPDATE.
                    if tx.update_latest_in(&child, &k, n.clone())? {
                        if !cdef.checks.is_empty() {
                            constraint::evaluator().check(tx, &cdef, &n)?;
                        }
                        updated.push((r, Some(n)));
                    }
                }
                on_parent_change(tx, &child, &updated, depth + 1)?;
            }
        }
    }
    Ok(())
}
