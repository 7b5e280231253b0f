//! FOREIGN KEY enforcement, owned by the engine: the public writes of [`crate::Transaction`]
//! run it after each write, and the SQL layer's INSERT / UPDATE / DELETE / COPY once a
//! statement's writes are buffered (written against the seam's [`EngineTxn`], so every engine
//! gets the same rules). A row written to a referencing (child) table needs its parent row, whose row
//! lock it takes and holds until the transaction ends (PostgreSQL takes FOR KEY SHARE), so no
//! other transaction can delete the parent or change its key meanwhile. A deleted or re-keyed
//! parent row applies each referencing key's action to the child rows that referenced it, and
//! a child row an action changes is checked as any update of it is (NOT NULL, CHECK, its
//! references).
//! Both sides read the newest committed versions plus the transaction's own writes, whatever
//! its snapshot: a row committed by a transaction whose lock this one waited for counts.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::engine::catalog::{FkAction, ForeignKeyDef};
use crate::engine::{constraint, Interrupt, KeyRange, Locked, TableDef};
use crate::error::{Error, Result, SqlState};
use crate::seam::{AnyTable, AnyTxn, EngineTable, EngineTxn, StatementWrites};
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

/// The 23503 of a row of `child` whose foreign key `fk` names no parent row.
pub(crate) fn child_violation(child: &str, fk: &str) -> Error {
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
            let detail = format!(
                "{} is not present in table \"{}\".",
                child.key_detail(&fk.columns, row),
                fk.parent
            );
            return Err(child_violation(&child.name, &fk.name).with_detail(detail));
        }
    }
    Ok(())
}

/// What became of a referenced value: its parent row was deleted, or the referenced columns
/// of that row now hold other values (in the order of the key's parent columns; NULLs
/// possible).
enum Fate {
    Deleted,
    Updated(Vec<Value>),
}

/// After a statement deleted rows of `parent` (`(old, None)`) or updated them (`(old,
/// Some(new))`), applies each foreign key that references it to the child rows whose
/// referenced values went away, as PostgreSQL 15 does: the key's ON DELETE action for a
/// deleted row, its ON UPDATE action for a changed one. NO ACTION fails (23503) unless a
/// parent row has those values again by the end of the statement; RESTRICT fails even then;
/// CASCADE deletes the child rows (ON DELETE) or sets their columns to the new values (ON
/// UPDATE); SET NULL and SET DEFAULT set their columns to NULL or to the columns' defaults.
/// A child row an action changes is checked as an UPDATE of it is: NOT NULL (23502), CHECK
/// (23514), and its changed references must exist (23503); a SET DEFAULT that leaves it
/// referencing the value that went away fails as NO ACTION would. The actions' own deletes
/// and changes apply the keys that reference them in turn (a cycle ends when an action finds
/// nothing left to change). The referencing tables are the ones the database names for
/// `parent`; in each, the rows are found by an index on the key's columns when the child has
/// one (see [`fk_index`]), else by a scan. Takes the seam's [`AnyTxn`] (every engine) as the
/// CHECK evaluator does; `stop` interrupts the lock waits of the parent checks.
pub(crate) fn on_parent_change(
    tx: &mut AnyTxn,
    parent: &AnyTable,
    changes: &[(Arc<Row>, Option<Row>)],
    depth: usize,
    stop: &Interrupt,
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
    for child in tx.referencing(&pdef.name) {
        let cdef = child.def();
        for fk in cdef.foreign_keys.iter().filter(|f| f.parent == pdef.name) {
            let key = ForeignKey {
                parent,
                pdef: &pdef,
                child: &child,
                cdef: &cdef,
                fk,
            };
            key.apply(tx, changes, depth, stop)?;
        }
    }
    Ok(())
}

/// A child row referencing a value that went away: its key, the row, and the value (as the
/// parent's types).
type Referencing = (Key, Arc<Row>, Vec<Value>);

/// One foreign key between a parent and a child table, as [`on_parent_change`] applies it.
struct ForeignKey<'a> {
    parent: &'a AnyTable,
    pdef: &'a TableDef,
    child: &'a AnyTable,
    cdef: &'a Arc<TableDef>,
    fk: &'a ForeignKeyDef,
}

impl ForeignKey<'_> {
    fn apply(
        &self,
        tx: &mut AnyTxn,
        changes: &[(Arc<Row>, Option<Row>)],
        depth: usize,
        stop: &Interrupt,
    ) -> Result<()> {
        let (pdef, cdef, fk) = (self.pdef, self.cdef, self.fk);
        let pcols = parent_positions(pdef, fk)?;
        let mut gone: HashMap<Vec<Value>, Fate> = HashMap::new();
        for (old, new) in changes {
            let Some(v) = tuple(old, &pcols) else {
                continue;
            };
            let fate = match new {
                None => Fate::Deleted,
                Some(n) => {
                    let nv: Vec<Value> = pcols
                        .iter()
                        .map(|&i| n.get(i).cloned().unwrap_or(Value::Null))
                        .collect();
                    if nv == v {
                        continue;
                    }
                    Fate::Updated(nv)
                }
            };
            gone.insert(v, fate);
        }
        if gone.is_empty() {
            return Ok(());
        }
        let found = self.referencing_rows(tx, &pcols, &gone)?;
        // Whether a parent row has a value again (NO ACTION), asked once per value.
        let mut present: HashMap<Vec<Value>, bool> = HashMap::new();
        let mut changed: Vec<(Arc<Row>, Option<Row>)> = Vec::new();
        for (k, r, v) in found {
            let fate = &gone[&v];
            let action = match fate {
                Fate::Deleted => fk.on_delete,
                Fate::Updated(_) => fk.on_update,
            };
            // The columns the action sets: ON DELETE SET NULL / SET DEFAULT may name some.
            let cols: &[usize] = match (fate, &fk.on_delete_set) {
                (Fate::Deleted, Some(c)) => c,
                _ => &fk.columns,
            };
            let new_values: Vec<Value> = match (action, fate) {
                (FkAction::Restrict, _) => return Err(self.violation(&v)),
                (FkAction::NoAction, _) => {
                    if !self.has_parent(tx, &mut present, &v)? {
                        return Err(self.violation(&v));
                    }
                    continue;
                }
                (FkAction::Cascade, Fate::Deleted) => {
                    if tx.delete_latest(self.child, &k)? {
                        changed.push((r, None));
                    }
                    continue;
                }
                (FkAction::Cascade, Fate::Updated(nv)) => fk
                    .columns
                    .iter()
                    .zip(nv)
                    .map(|(&c, v)| cdef.columns[c].ty.coerce(v.clone()))
                    .collect::<Result<_>>()?,
                (FkAction::SetNull, _) => vec![Value::Null; cols.len()],
                (FkAction::SetDefault, _) => constraint::evaluator().defaults(tx, cdef, cols)?,
            };
            let mut n: Row = (*r).clone();
            for (&c, val) in cols.iter().zip(new_values) {
                n[c] = val;
            }
            // NOT NULL is checked by the write, CHECK and the references here: the order of
            // an UPDATE.
            if !tx.update_latest(self.child, &k, n.clone())? {
                continue;
            }
            if !cdef.checks.is_empty() {
                constraint::evaluator().check(tx, cdef, &n)?;
            }
            let now = match tuple(&n, &fk.columns) {
                Some(t) => Some(as_parent_types(pdef, &pcols, t)?),
                None => None,
            };
            if now.as_ref() == Some(&v) {
                // SET DEFAULT to the value that went away: still referencing it.
                if !self.has_parent(tx, &mut present, &v)? {
                    return Err(self.violation(&v));
                }
            }
            check_parents(&*tx, cdef, &n, Some(r.as_slice()), stop)?;
            changed.push((r, Some(n)));
        }
        on_parent_change(tx, self.child, &changed, depth + 1, stop)
    }

    /// 23503 for the parent values `v` a child row still references.
    fn violation(&self, v: &[Value]) -> Error {
        let detail = format!(
            "Key ({})=({}) is still referenced from table \"{}\".",
            self.fk.parent_columns.join(", "),
            super::catalog::value_list(v),
            self.cdef.name
        );
        parent_violation(&self.pdef.name, &self.fk.name, &self.cdef.name).with_detail(detail)
    }

    /// Whether a parent row has the referenced values `v` (newest versions and this
    /// transaction's writes), remembered in `present`.
    fn has_parent(&self, tx: &AnyTxn, present: &mut HashMap<Vec<Value>, bool>, v: &[Value]) -> Result<bool> {
        if let Some(&p) = present.get(v) {
            return Ok(p);
        }
        let p = parent_exists(tx, self.parent, self.fk, v.to_vec(), None)?;
        present.insert(v.to_vec(), p);
        Ok(p)
    }

    /// The child rows (newest versions and this transaction's writes) whose key references
    /// one of the `gone` values (as the parent's types), each with that value: by an index
    /// on the key's columns when the child has one, else by a scan of the child.
    fn referencing_rows(
        &self,
        tx: &AnyTxn,
        pcols: &[usize],
        gone: &HashMap<Vec<Value>, Fate>,
    ) -> Result<Vec<Referencing>> {
        let (cdef, fk) = (self.cdef, self.fk);
        let mut found = Vec::new();
        let mut keep = |k: &Key, r: &Arc<Row>| -> Result<()> {
            if let Some(v) = tuple(r, &fk.columns) {
                let v = as_parent_types(self.pdef, pcols, v)?;
                if gone.contains_key(&v) {
                    found.push((k.clone(), r.clone(), v));
                }
            }
            Ok(())
        };
        // The value as the child's columns hold it, in `order` (for each indexed column its
        // position in the key); one they cannot hold (out of a narrower integer's range) is
        // referenced by no row.
        let child_values = |v: &[Value], order: &[usize]| {
            order
                .iter()
                .map(|&j| cdef.columns[fk.columns[j]].ty.coerce(v[j].clone()))
                .collect::<Result<Vec<Value>>>()
                .ok()
        };
        if let Some(order) = pk_prefix(cdef, fk) {
            // The key's columns lead the child's primary key: a point read when they are all
            // of it, else the key range they prefix.
            for v in gone.keys() {
                let Some(cv) = child_values(v, &order) else {
                    continue;
                };
                if cv.len() == cdef.primary_key.len() {
                    let k = cdef.key_from_values(&cv)?;
                    if let Some(r) = tx.get_latest_in(self.child, &k)? {
                        keep(&k, &r)?;
                    }
                    continue;
                }
                let lo = codec::encode_key_values(&cv);
                let range = KeyRange {
                    hi: prefix_end(&lo).map_or(Bound::Unbounded, |h| Bound::Excluded(Key::Bytes(h))),
                    lo: Bound::Included(Key::Bytes(lo)),
                };
                tx.scan_latest_in(self.child, &range, |k, r| {
                    keep(k, r)?;
                    Ok(true)
                })?;
            }
            return Ok(found);
        }
        let Some((index, order)) = fk_index(cdef, fk) else {
            tx.scan_latest_in(self.child, &KeyRange::all(), |k, r| {
                keep(k, r)?;
                Ok(true)
            })?;
            return Ok(found);
        };
        for v in gone.keys() {
            let Some(cv) = child_values(v, &order) else {
                continue;
            };
            let lo = codec::encode_key_values(&cv);
            let hi = prefix_end(&lo);
            let hi = hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            for (k, r) in tx.index_latest_in(self.child, index, Bound::Included(lo.as_slice()), hi)? {
                keep(&k, &r)?;
            }
        }
        Ok(found)
    }
}

/// When the key's columns are the leading columns of `cdef`'s primary key (in any order):
/// for each of those primary key columns, its position in `fk.columns`.
fn pk_prefix(cdef: &TableDef, fk: &ForeignKeyDef) -> Option<Vec<usize>> {
    lead_positions(cdef.primary_key.get(..fk.columns.len())?, fk)
}

/// For each of `lead` (column numbers), its position in `fk.columns`, when `lead` holds each
/// of the key's columns exactly once.
fn lead_positions(lead: &[usize], fk: &ForeignKeyDef) -> Option<Vec<usize>> {
    let n = fk.columns.len();
    let order: Vec<usize> = lead
        .iter()
        .map(|c| fk.columns.iter().position(|f| f == c))
        .collect::<Option<_>>()?;
    let mut distinct = order.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (n > 0 && distinct.len() == n).then_some(order)
}

/// A secondary index of `cdef` that finds every row referencing a value of `fk`: its leading
/// columns are the key's columns (in any order), and its further columns are NOT NULL (a row
/// with a NULL in an indexed column has no entry). Its position, and for each leading column
/// its position in `fk.columns`.
fn fk_index(cdef: &TableDef, fk: &ForeignKeyDef) -> Option<(usize, Vec<usize>)> {
    let n = fk.columns.len();
    cdef.indexes.iter().enumerate().find_map(|(i, idx)| {
        if idx.columns.len() < n || idx.columns[n..].iter().any(|&c| cdef.columns[c].nullable) {
            return None;
        }
        lead_positions(&idx.columns[..n], fk).map(|order| (i, order))
    })
}

/// The smallest byte string above every string that starts with `p` (None: there is none).
fn prefix_end(p: &[u8]) -> Option<Vec<u8>> {
    let mut e = p.to_vec();
    while let Some(last) = e.pop() {
        if last < 0xFF {
            e.push(last + 1);
            return Some(e);
        }
    }
    None
}
