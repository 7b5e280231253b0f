//! Sequences (`CREATE SEQUENCE`, `serial`, identity columns): counters outside transactions,
//! as in PostgreSQL, that never hand out a value twice, even after a crash.
//!
//! Each sequence is stored in the `meta` column family under `seq/<name>` (JSON), with a
//! *reserved* bound: the last value that may have been handed out. `nextval` hands out values
//! from memory while they stay within the bound; the next one past it first moves the bound
//! [`SEQ_BATCH`] values ahead with a synced write (PostgreSQL's `SEQ_LOG_VALS` does the same
//! with 32 values in its WAL). After a crash the sequence resumes after the bound, so values
//! handed out before it are never handed out again (the unused rest of a batch is a gap, as
//! in PostgreSQL). A clean close moves each bound back to the last value handed out
//! (`Inner::release_sequences`), so a clean close and reopen loses no value.

use std::collections::HashMap;

use parking_lot::Mutex;
use rocksdb::WriteBatch;
use serde::{Deserialize, Serialize};

use super::{Database, Inner};
use crate::error::{Error, Result, SqlState};
use crate::store::CF_META;
use crate::types::DataType;

/// Values reserved by one synced write.
pub const SEQ_BATCH: i64 = 32;

/// A sequence's definition and durable state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequenceDef {
    pub name: String,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cycle: bool,
    /// The table and column that own it (`serial`, identity): dropped with the table.
    #[serde(default)]
    pub owned_by: Option<(String, String)>,
    /// The last value that may have been handed out (None: none yet, or since `setval(.., false)`
    /// the next value is `next_unreserved`).
    #[serde(default)]
    pub reserved: Option<i64>,
    /// The value the next `nextval` returns when nothing is reserved in memory.
    pub next_unreserved: i64,
    /// The sequence's type (`AS smallint | integer | bigint`). None in a definition stored
    /// before Augur kept it: [`SequenceDef::data_type`] then reads it from the bounds.
    #[serde(default)]
    pub ty: Option<DataType>,
}

impl SequenceDef {
    /// A sequence as `CREATE SEQUENCE name` makes it (bigint, increment 1, no cycle), then
    /// adjusted by the caller before [`Database::create_sequence`].
    pub fn new(name: impl Into<String>) -> SequenceDef {
        SequenceDef {
            name: name.into(),
            start: 1,
            increment: 1,
            min: 1,
            max: i64::MAX,
            cycle: false,
            owned_by: None,
            reserved: None,
            next_unreserved: 1,
            ty: Some(DataType::Int8),
        }
    }

    /// The sequence's type: Int2, Int4 or Int8.
    pub fn data_type(&self) -> DataType {
        self.ty.unwrap_or(if self.max == i64::from(i16::MAX) {
            DataType::Int2
        } else if self.max == i64::from(i32::MAX) {
            DataType::Int4
        } else {
            DataType::Int8
        })
    }

    /// Checks the options as PostgreSQL does (22023) and sets the first value.
    pub fn validate(&mut self) -> Result<()> {
        let bad = |m: String| Error::new(SqlState::INVALID_PARAMETER_VALUE, m);
        if self.increment == 0 {
            return Err(bad("INCREMENT must not be zero".into()));
        }
        if self.min >= self.max {
            return Err(bad(format!(
                "MINVALUE ({}) must be less than MAXVALUE ({})",
                self.min, self.max
            )));
        }
        if self.start < self.min {
            return Err(bad(format!(
                "START value ({}) cannot be less than MINVALUE ({})",
                self.start, self.min
            )));
        }
        if self.start > self.max {
            return Err(bad(format!(
                "START value ({}) cannot be greater than MAXVALUE ({})",
                self.start, self.max
            )));
        }
        self.next_unreserved = self.start;
        self.reserved = None;
        Ok(())
    }
}

/// The sequences of an engine instance, loaded from the store on first use.
#[derive(Default)]
pub(crate) struct Sequences {
    state: Mutex<Option<HashMap<String, SeqState>>>,
}

struct SeqState {
    def: SequenceDef,
    /// The next value to hand out from the reserved range (None: reserve first).
    next: Option<i64>,
}

impl SeqState {
    /// The last value handed out, if any (a reserved value counts, as after a crash).
    fn last_handed_out(&self) -> Option<i64> {
        match (self.next, self.def.reserved) {
            (Some(n), Some(r))
                if (self.def.increment > 0 && n <= r) || (self.def.increment < 0 && n >= r) =>
            {
                n.checked_sub(self.def.increment)
            }
            (_, r) => r,
        }
    }
}

fn meta_key(name: &str) -> String {
    format!("seq/{name}")
}

fn undefined(name: &str) -> Error {
    Error::new(
        SqlState::UNDEFINED_TABLE,
        format!("relation \"{name}\" does not exist"),
    )
}

impl Inner {
    fn with_sequences<R>(
        &self,
        f: impl FnOnce(&Inner, &mut HashMap<String, SeqState>) -> Result<R>,
    ) -> Result<R> {
        self.check_open()?;
        let mut g = self.sequences.state.lock();
        if g.is_none() {
            let mut m = HashMap::new();
            for (_, v) in self.store.scan_prefix(CF_META, b"seq/")? {
                let def: SequenceDef = serde_json::from_slice(&v)
                    .map_err(|e| Error::Corrupt(format!("sequence definition: {e}")))?;
                m.insert(def.name.clone(), SeqState { def, next: None });
            }
            *g = Some(m);
        }
        f(self, g.as_mut().expect("loaded above"))
    }

    /// At a clean close (after `closed` is set, so no new `nextval` starts): stores each
    /// sequence's bound as the last value it handed out, so the next open resumes right after
    /// it. A `nextval` that was already waiting for the lock then reserves a new batch from
    /// that bound (a synced write, or an error if the store is gone): it never repeats a value.
    pub(super) fn release_sequences(&self) -> Result<()> {
        let mut g = self.sequences.state.lock();
        let Some(m) = g.as_mut() else { return Ok(()) };
        let mut b = WriteBatch::default();
        let mut released = Vec::new();
        for s in m.values() {
            let (Some(n), Some(r)) = (s.next, s.def.reserved) else {
                continue;
            };
            let unused = if s.def.increment > 0 { n <= r } else { n >= r };
            // `n` follows the last value handed out by one increment, which cannot overflow.
            let Some(last) = n.checked_sub(s.def.increment).filter(|_| unused) else {
                continue;
            };
            let mut def = s.def.clone();
            def.reserved = Some(last);
            let json = serde_json::to_vec(&def).expect("a SequenceDef always serializes");
            b.put_cf(self.store.db()?.cf(CF_META), meta_key(&def.name), json);
            released.push(def);
        }
        if released.is_empty() {
            return Ok(());
        }
        self.store.write_sync(b)?;
        for def in released {
            let s = m.get_mut(&def.name).expect("taken from this map");
            s.def = def;
            s.next = None;
        }
        Ok(())
    }

    fn put_sequence(&self, def: &SequenceDef) -> Result<()> {
        let mut b = WriteBatch::default();
        let json = serde_json::to_vec(def).expect("a SequenceDef always serializes");
        b.put_cf(self.store.db()?.cf(CF_META), meta_key(&def.name), json);
        self.store.write_sync(b)
    }
}

fn step(def: &SequenceDef, v: i64) -> Result<i64> {
    let next = v
        .checked_add(def.increment)
        .filter(|n| (def.min..=def.max).contains(n));
    match next {
        Some(n) => Ok(n),
        None if def.cycle => Ok(if def.increment > 0 { def.min } else { def.max }),
        None => Err(Error::new(
            SqlState("2200H"),
            format!(
                "nextval: reached {} value of sequence \"{}\" ({})",
                if def.increment > 0 { "maximum" } else { "minimum" },
                def.name,
                if def.increment > 0 { def.max } else { def.min }
            ),
        )),
    }
}

impl Database {
    /// Creates a sequence (42P07 if one of that name exists; the SQL layer also checks
    /// tables).
    pub fn create_sequence(&self, mut def: SequenceDef, if_not_exists: bool) -> Result<bool> {
        def.validate()?;
        self.inner().with_sequences(|inner, m| {
            if m.contains_key(&def.name) {
                if if_not_exists {
                    return Ok(false);
                }
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{}\" already exists", def.name),
                ));
            }
            inner.put_sequence(&def)?;
            m.insert(def.name.clone(), SeqState { def, next: None });
            Ok(true)
        })
    }

    /// Drops a sequence; false if it did not exist and `if_exists`.
    pub fn drop_sequence(&self, name: &str, if_exists: bool) -> Result<bool> {
        self.inner().with_sequences(|inner, m| {
            if !m.contains_key(name) {
                if if_exists {
                    return Ok(false);
                }
                return Err(undefined(name));
            }
            let mut b = WriteBatch::default();
            b.delete_cf(inner.store.db()?.cf(CF_META), meta_key(name));
            inner.store.write_sync(b)?;
            m.remove(name);
            Ok(true)
        })
    }

    /// Drops the sequences owned by a column of `table` (as DROP TABLE does in PostgreSQL).
    pub fn drop_owned_sequences(&self, table: &str) -> Result<()> {
        for d in self.sequences()? {
            if d.owned_by.as_ref().is_some_and(|(t, _)| t == table) {
                self.drop_sequence(&d.name, true)?;
            }
        }
        Ok(())
    }

    /// Sets the table and column that own a sequence (`ALTER TABLE ... RENAME` keeps a
    /// serial column's sequence with its table). Durable before it returns.
    pub fn set_sequence_owner(&self, name: &str, owned_by: Option<(String, String)>) -> Result<()> {
        self.inner().with_sequences(|inner, m| {
            let s = m.get_mut(name).ok_or_else(|| undefined(name))?;
            let mut def = s.def.clone();
            def.owned_by = owned_by;
            inner.put_sequence(&def)?;
            s.def = def;
            Ok(())
        })
    }

    /// Changes a sequence's definition (`ALTER SEQUENCE`) to `new`'s start, increment, bounds,
    /// cycle, type and owner, restarting it at `restart` if given. Without a
    /// restart the sequence goes on from the last value it handed out, by the new increment,
    /// as PostgreSQL's does. Checks the result as CREATE SEQUENCE does (22023, also for a
    /// restart value, or without one the current value, outside the bounds); durable before it
    /// returns. Returns the definition it had, at the last value it handed out (what
    /// [`Database::restore_sequence`] takes to undo the change).
    pub fn alter_sequence(&self, name: &str, new: &SequenceDef, restart: Option<i64>) -> Result<SequenceDef> {
        self.inner().with_sequences(|inner, m| {
            let s = m.get_mut(name).ok_or_else(|| undefined(name))?;
            let last = s.last_handed_out();
            // What it was, at its exact position (a reserved value not handed out not counted).
            let mut was = s.def.clone();
            if let Some(l) = last {
                was.reserved = Some(l);
                was.next_unreserved = l;
            }
            let mut def = SequenceDef {
                name: s.def.name.clone(),
                reserved: s.def.reserved,
                next_unreserved: s.def.next_unreserved,
                ..new.clone()
            };
            let (next, reserved) = (def.next_unreserved, def.reserved);
            def.validate()?;
            // The restart value, else the current one (the last handed out, or the next when
            // none was since the last restart), must lie within the new bounds.
            let current = restart.unwrap_or(last.unwrap_or(next));
            let bad = |m: String| Error::new(SqlState::INVALID_PARAMETER_VALUE, m);
            if current < def.min {
                return Err(bad(format!(
                    "RESTART value ({current}) cannot be less than MINVALUE ({})",
                    def.min
                )));
            }
            if current > def.max {
                return Err(bad(format!(
                    "RESTART value ({current}) cannot be greater than MAXVALUE ({})",
                    def.max
                )));
            }
            match restart {
                Some(v) => {
                    def.next_unreserved = v;
                    def.reserved = None;
                }
                None => match last {
                    Some(l) => {
                        def.reserved = Some(l);
                        def.next_unreserved = l;
                    }
                    None => {
                        def.next_unreserved = next;
                        def.reserved = reserved;
                    }
                },
            }
            inner.put_sequence(&def)?;
            s.def = def;
            s.next = None;
            Ok(was)
        })
    }

    /// Puts back the parameters of `old`, an earlier definition of sequence `old.name` (the
    /// undo of an ALTER SEQUENCE in a transaction block that rolled back), its owner included.
    /// The position stays where it is, or moves to after the last value `old` may have handed
    /// out if that lies further (a RESTART in the block moved it back): a value `nextval`
    /// returned is never returned again, where PostgreSQL's rollback puts back the old position
    /// whatever was handed out since. Durable before it returns.
    pub fn restore_sequence(&self, old: &SequenceDef) -> Result<()> {
        self.inner().with_sequences(|inner, m| {
            let s = m.get_mut(&old.name).ok_or_else(|| undefined(&old.name))?;
            let further = |a: i64, b: i64| if old.increment > 0 { a.max(b) } else { a.min(b) };
            let before = old
                .reserved
                .or_else(|| old.next_unreserved.checked_sub(old.increment));
            let mut def = old.clone();
            match (s.last_handed_out(), before) {
                (Some(now), Some(before)) => {
                    let l = further(now, before);
                    def.reserved = Some(l);
                    def.next_unreserved = l;
                }
                (Some(now), None) => {
                    def.reserved = Some(now);
                    def.next_unreserved = now;
                }
                // Nothing handed out since a RESTART in the block: the old position.
                (None, _) => {}
            }
            inner.put_sequence(&def)?;
            s.def = def;
            s.next = None;
            Ok(())
        })
    }

    /// Renames a sequence (`ALTER SEQUENCE ... RENAME TO`; 42P07 if a sequence of the new name
    /// exists, the SQL layer also checks the other relations). Its position goes on where it
    /// was. Durable before it returns.
    pub fn rename_sequence(&self, from: &str, to: &str) -> Result<()> {
        self.inner().with_sequences(|inner, m| {
            if !m.contains_key(from) {
                return Err(undefined(from));
            }
            if m.contains_key(to) {
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{to}\" already exists"),
                ));
            }
            let mut s = m.remove(from).expect("checked above");
            s.def.name = to.to_string();
            let json = serde_json::to_vec(&s.def).expect("a SequenceDef always serializes");
            let mut b = WriteBatch::default();
            b.delete_cf(inner.store.db()?.cf(CF_META), meta_key(from));
            b.put_cf(inner.store.db()?.cf(CF_META), meta_key(to), json);
            if let Err(e) = inner.store.write_sync(b) {
                s.def.name = from.to_string();
                m.insert(from.to_string(), s);
                return Err(e);
            }
            m.insert(to.to_string(), s);
            Ok(())
        })
    }

    /// Every sequence's definition, by name.
    pub fn sequences(&self) -> Result<Vec<SequenceDef>> {
        self.inner().with_sequences(|_, m| {
            let mut v: Vec<SequenceDef> = m.values().map(|s| s.def.clone()).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(v)
        })
    }

    /// Whether a sequence of that name exists.
    pub fn has_sequence(&self, name: &str) -> Result<bool> {
        self.inner().with_sequences(|_, m| Ok(m.contains_key(name)))
    }

    /// The next value of a sequence. Never returns a value twice, across crashes: a value is
    /// handed out only once a synced write has reserved it.
    pub fn nextval(&self, name: &str) -> Result<i64> {
        self.inner().nextval(name)
    }

    /// Sets a sequence's current value (`setval`): the next `nextval` returns `v` + increment
    /// when `is_called`, else `v`. Durable before it returns.
    pub fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64> {
        self.inner().setval(name, v, is_called)
    }
}

impl Inner {
    pub(crate) fn setval(&self, name: &str, v: i64, is_called: bool) -> Result<i64> {
        self.with_sequences(|inner, m| {
            let s = m.get_mut(name).ok_or_else(|| undefined(name))?;
            if !(s.def.min..=s.def.max).contains(&v) {
                return Err(Error::new(
                    SqlState("22003"),
                    format!(
                        "setval: value {v} is out of bounds for sequence \"{name}\" ({}..{})",
                        s.def.min, s.def.max
                    ),
                ));
            }
            let mut def = s.def.clone();
            if is_called {
                def.reserved = Some(v);
                def.next_unreserved = step(&def, v).unwrap_or(v);
            } else {
                def.reserved = None;
                def.next_unreserved = v;
            }
            inner.put_sequence(&def)?;
            s.def = def;
            s.next = None;
            Ok(v)
        })
    }

    pub(crate) fn nextval(&self, name: &str) -> Result<i64> {
        self.with_sequences(|inner, m| {
            let s = m.get_mut(name).ok_or_else(|| undefined(name))?;
            if let (Some(n), Some(r)) = (s.next, s.def.reserved) {
                let within = if s.def.increment > 0 { n <= r } else { n >= r };
                if within {
                    // At the sequence's bound (None), the next call fails or cycles through
                    // the reservation path below (the reservation stops at the bound).
                    s.next = step(&s.def, n).ok();
                    return Ok(n);
                }
            }
            // Reserve the next batch durably, then hand out its first value.
            let first = match s.next {
                Some(n) => n,
                None => match s.def.reserved {
                    None => s.def.next_unreserved,
                    Some(r) => step(&s.def, r)?,
                },
            };
            let mut last = first;
            for _ in 1..SEQ_BATCH {
                match last
                    .checked_add(s.def.increment)
                    .filter(|n| (s.def.min..=s.def.max).contains(n))
                {
                    Some(n) => last = n,
                    None => break,
                }
            }
            let mut def = s.def.clone();
            def.reserved = Some(last);
            inner.put_sequence(&def)?;
            s.def = def;
            s.next = if first == last {
                None
            } else {
                step(&s.def, first).ok()
            };
            Ok(first)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn values_are_unique_across_reopen_and_bounds_hold() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        {
            let db = Database::open(dir.path(), Options::default()).unwrap();
            db.create_sequence(SequenceDef::new("s"), false).unwrap();
            for _ in 0..40 {
                seen.push(db.nextval("s").unwrap());
            }
            // Abandoned (as a crash): what is in memory is lost, the reserved bound is not.
            db.abandon();
        }
        let db = Database::open(dir.path(), Options::default()).unwrap();
        let after = db.nextval("s").unwrap();
        assert_eq!(seen, (1..=40).collect::<Vec<_>>());
        // The second batch reserved 33..=64: the crash skips the rest of it.
        assert_eq!(after, 65, "{after} handed out again");
        drop(db);
        // A clean close (here by drop) keeps the last value handed out: nothing is skipped.
        let db = Database::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.nextval("s").unwrap(), 66);
        assert_eq!(db.nextval("s").unwrap(), 67);
        db.close().unwrap();
        drop(db);
        let db = Database::open(dir.path(), Options::default()).unwrap();
        assert_eq!(db.nextval("s").unwrap(), 68);
        db.setval("s", 100, true).unwrap();
        assert_eq!(db.nextval("s").unwrap(), 101);
        db.setval("s", 7, false).unwrap();
        assert_eq!(db.nextval("s").unwrap(), 7);
        assert_eq!(db.nextval("s").unwrap(), 8);
        let mut d = SequenceDef::new("small");
        d.max = 3;
        db.create_sequence(d, false).unwrap();
        assert_eq!(
            (1..=3).map(|_| db.nextval("small").unwrap()).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(db.nextval("small").unwrap_err().sqlstate(), SqlState("2200H"));
        let mut d = SequenceDef::new("down");
        d.increment = -2;
        d.min = -10;
        d.max = 0;
        d.start = 0;
        db.create_sequence(d, false).unwrap();
        assert_eq!(db.nextval("down").unwrap(), 0);
        assert_eq!(db.nextval("down").unwrap(), -2);
        assert!(db.drop_sequence("down", false).unwrap());
        assert_eq!(
            db.nextval("down").unwrap_err().sqlstate(),
            SqlState::UNDEFINED_TABLE
        );
    }
}
