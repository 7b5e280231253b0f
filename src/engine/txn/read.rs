//! Reads inside a transaction: point reads, range scans, counts and secondary-index scans,
//! each merging the transaction's own writes over its snapshot.

use std::collections::btree_map;

use super::*;
use crate::engine::fetch::{missing_version, Resolved};
use crate::store::direct::{Files, Lookup};

/// The stored row with primary key `key` as `snapshot` sees it, lent to `f` in place; `None`
/// when there is none. The part of a point read after the transaction's own writes
/// ([`Transaction::get_with`]), and the fallback of one outside a transaction
/// ([`crate::Database::get_with`]).
#[inline]
pub(crate) fn read_stored<R>(
    db: &Inner,
    t: &Table,
    key: &Key,
    snapshot: u64,
    f: impl FnOnce(RowRef<'_>) -> R,
) -> Result<Option<R>> {
    let files = db.files();
    match read_version(db, &files, t, key, snapshot)? {
        Resolved::Found(bytes) => lend_stored(t, &bytes, f),
        Resolved::Absent => Ok(None),
        Resolved::Missing(rowid) => Err(missing_version(t.id, rowid)),
    }
}

/// The stored version of the row with primary key `key` that `snapshot` sees, with the files
/// it may be lent from.
#[inline]
pub(crate) fn read_version<'f>(
    db: &Inner,
    files: &'f Files,
    t: &Table,
    key: &Key,
    snapshot: u64,
) -> Result<Resolved<'f>> {
    // The index's lock is released before the version is fetched.
    let payload = t.pk.read().get(key)?;
    let Some(p) = payload else {
        return Ok(Resolved::Absent);
    };
    crate::failpoint::hit("point-read-fetch");
    db.resolve_in(files, t.id, p, snapshot)
}

/// Lends a stored version to `f` as a row; `None` for a tombstone.
#[inline]
pub(crate) fn lend_stored<R>(t: &Table, bytes: &[u8], f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
    Ok(match crate::types::codec::row_view(bytes)? {
        None => None,
        Some(v) if t.is_short(v.len()) => {
            let missing = t.missing_values();
            Some(f(RowRef::stored_padded(v, &missing)))
        }
        Some(v) => Some(f(RowRef::stored(v))),
    })
}

impl Transaction {
    /// Reads the row with primary key `key` (for tables without a primary key: its row identity).
    pub fn get(&self, table: &str, key: &Key) -> Result<Option<Row>> {
        let t = self.db.table(table)?;
        Ok(self.get_in(&t, key)?.map(|r| (*r).clone()))
    }

    /// [`Transaction::get`] on a resolved table, without cloning the row.
    pub fn get_in(&self, t: &Table, key: &Key) -> Result<Option<Arc<Row>>> {
        self.get_at(self.snapshot, t, key)
    }

    /// Reads the row with primary key `key` and lends it to `f` in place (no decoding into an
    /// owned row, no allocation for a stored row); `None` when there is no such row.
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key, ValueRef};
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// let t = db.create_table(TableDef::new("kv", vec![
    ///     ColumnDef::new("k", DataType::Int8),
    ///     ColumnDef::new("v", DataType::Bytea),
    /// ], &["k"])?)?;
    /// db.insert("kv", vec![Value::Int(7), Value::Bytes(vec![1, 2, 3])])?;
    /// let tx = db.begin();
    /// let mut out = Vec::new();
    /// let found = tx.get_with(&t, &Key::Int(7), |row| -> augur::Result<()> {
    ///     if let Some(ValueRef::Bytes(b)) = row.get(1)? {
    ///         out.extend_from_slice(b);
    ///     }
    ///     Ok(())
    /// })?;
    /// assert!(found.transpose()?.is_some());
    /// assert_eq!(out, [1, 2, 3]);
    /// assert!(tx.get_with(&t, &Key::Int(8), |_| ())?.is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_with<R>(&self, t: &Table, key: &Key, f: impl FnOnce(RowRef<'_>) -> R) -> Result<Option<R>> {
        self.check_active()?;
        self.check_table(t)?;
        if let Some(p) = self.pending(t, key) {
            return Ok(match p {
                Pending::Put(r) if t.is_short(r.len()) => Some(f(RowRef::values(&t.complete(r.clone())))),
                Pending::Put(r) => Some(f(RowRef::values(r))),
                Pending::Delete => None,
            });
        }
        read_stored(&self.db, t, key, self.snapshot, f)
    }

    /// Visits rows with primary key in `range`, in key order (descending when `reverse`),
    /// until `f` returns false. Each row is decoded into an owned [`Row`];
    /// [`Transaction::scan_with`] lends it in place instead.
    pub fn scan_in(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        mut f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_core(t, range, reverse, usize::MAX, |k, found| match found {
            Found::Own(r) if t.is_short(r.len()) => f(k, &t.complete(r.clone())),
            Found::Own(r) => f(k, r),
            Found::Stored(b) => match crate::types::codec::decode_version(b)?.row {
                Some(row) => f(k, &t.complete(Arc::new(row))),
                None => Ok(true),
            },
        })
    }

    /// [`Transaction::scan_in`] without decoding: each row is lent to `f` as a [`RowRef`] read
    /// in place from the stored version (the row cache's copy or RocksDB's buffer), so a scan
    /// that copies out or inspects a column allocates nothing per row.
    ///
    /// ```
    /// # use augur::{Database, Options, TableDef, ColumnDef, DataType, Value, Key, KeyRange, ValueRef};
    /// # use std::ops::Bound;
    /// # let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path(), Options::default())?;
    /// let t = db.create_table(TableDef::new("kv", vec![
    ///     ColumnDef::new("k", DataType::Int8),
    ///     ColumnDef::new("v", DataType::Text(None)),
    /// ], &["k"])?)?;
    /// db.insert("kv", vec![Value::Int(1), Value::Text("one".into())])?;
    /// db.insert("kv", vec![Value::Int(2), Value::Text("two".into())])?;
    /// let tx = db.begin();
    /// let mut total = 0;
    /// tx.scan_with(&t, &KeyRange { lo: Bound::Included(Key::Int(1)), hi: Bound::Unbounded }, false, |_, row| {
    ///     if let Some(ValueRef::Text(s)) = row.get(1)? {
    ///         total += s.len();
    ///     }
    ///     Ok(true)
    /// })?;
    /// assert_eq!(total, 6);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scan_with(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_lent(t, range, reverse, usize::MAX, f)
    }

    /// [`Transaction::scan_with`] for at most `limit` rows (the first ones in the scan's
    /// order): the scan reads ahead, index entries and rows, only as far as `limit` rows need,
    /// where `scan_with` reads ahead in batches a short scan may leave unused.
    pub fn scan_first(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        limit: usize,
        mut f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        if limit == 0 {
            return Ok(());
        }
        let mut n = 0;
        self.scan_lent(t, range, reverse, limit, |k, r| {
            n += 1;
            Ok(f(k, r)? && n < limit)
        })
    }

    /// The scan behind `scan_with` and `scan_first`, reading ahead for `expect` rows.
    fn scan_lent(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        expect: usize,
        mut f: impl FnMut(&Key, RowRef<'_>) -> Result<bool>,
    ) -> Result<()> {
        let missing = t.missing_values();
        self.scan_core(t, range, reverse, expect, |k, found| match found {
            Found::Own(r) if t.is_short(r.len()) => f(k, RowRef::values(&t.complete(r.clone()))),
            Found::Own(r) => f(k, RowRef::values(r)),
            Found::Stored(b) => match crate::types::codec::row_view(b)? {
                Some(v) => f(k, RowRef::stored_padded(v, &missing)),
                None => Ok(true),
            },
        })
    }

    /// Visits every row of `t` in `range` as the newest committed versions and this
    /// transaction's own writes make it, whatever the snapshot: what a referential action must
    /// see (the SQL layer's foreign keys), since a row committed by a transaction whose lock
    /// this one waited for may be newer than the snapshot.
    pub fn scan_latest_in(
        &self,
        t: &Table,
        range: &KeyRange,
        mut f: impl FnMut(&Key, &Arc<Row>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_core_at(u64::MAX, t, range, false, usize::MAX, |k, found| match found {
            Found::Own(r) => f(k, &t.complete(r.clone())),
            Found::Stored(b) => match crate::types::codec::decode_version(b)?.row {
                Some(row) => f(k, &t.complete(Arc::new(row))),
                None => Ok(true),
            },
        })
    }

    /// The row with primary key `key` as the newest committed version and this transaction's
    /// own writes make it, whatever the snapshot (see [`Transaction::scan_latest_in`]).
    pub fn get_latest_in(&self, t: &Table, key: &Key) -> Result<Option<Arc<Row>>> {
        self.get_at(u64::MAX, t, key)
    }

    /// Whether the row with primary key `key` exists for this transaction (its own write, else
    /// the version its snapshot sees), as `get_in(..).is_some()` but without reading the row
    /// when the index answers: a newest version at or below the snapshot is the one the
    /// snapshot sees, live unless it is a tombstone. Only a newer version (a commit after the
    /// snapshot) sends it down the version chain. An UPDATE or DELETE asks this before it
    /// locks the row; reading the old version there was the one piece of work a durable
    /// single-row update or delete did that an insert does not.
    pub(super) fn exists_in(&self, t: &Table, key: &Key) -> Result<bool> {
        self.check_active()?;
        self.check_table(t)?;
        if let Some(p) = self.pending(t, key) {
            return Ok(matches!(p, Pending::Put(_)));
        }
        let payload = t.pk.read().get(key)?;
        match payload {
            None => Ok(false),
            Some(p) if p & !TOMBSTONE <= self.snapshot => Ok(p & TOMBSTONE == 0),
            Some(p) => Ok(self.db.resolve(t.id, p, self.snapshot)?.is_some()),
        }
    }

    /// The row with primary key `key`: this transaction's own write, else the version
    /// `snapshot` sees (`u64::MAX`: the newest committed one).
    fn get_at(&self, snapshot: u64, t: &Table, key: &Key) -> Result<Option<Arc<Row>>> {
        self.check_active()?;
        self.check_table(t)?;
        if let Some(p) = self.pending(t, key) {
            return Ok(match p {
                Pending::Put(r) => Some(t.complete(r.clone())),
                Pending::Delete => None,
            });
        }
        let payload = t.pk.read().get(key)?;
        match payload {
            None => Ok(None),
            Some(p) => Ok(self.db.resolve(t.id, p, snapshot)?.map(|r| t.complete(r))),
        }
    }

    /// The scan behind [`Transaction::scan_in`] and [`Transaction::scan_with`]: hands `f` each
    /// key with this transaction's own row or the bytes of the version its snapshot sees
    /// (which may be a tombstone: the caller skips those). It reads ahead for `expect` rows
    /// (`usize::MAX`: as many as batches bring), and goes on past them while `f` asks.
    pub(super) fn scan_core(
        &self,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        expect: usize,
        f: impl FnMut(&Key, Found<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.scan_core_at(self.snapshot, t, range, reverse, expect, f)
    }

    /// [`Transaction::scan_core`] at `snapshot` (`u64::MAX`: the newest versions).
    fn scan_core_at(
        &self,
        snapshot: u64,
        t: &Table,
        range: &KeyRange,
        reverse: bool,
        expect: usize,
        mut f: impl FnMut(&Key, Found<'_>) -> Result<bool>,
    ) -> Result<()> {
        self.check_active()?;
        self.check_table(t)?;
        // This transaction's own writes in the range (a range lookup in its pending writes),
        // merged by key order.
        let own = own_in(self.writes.get(&t.id), range);
        let has_own = own.is_some();
        let mut mine = match (own, reverse) {
            (None, _) => Own::None,
            (Some(r), false) => Own::Forward(r),
            (Some(r), true) => Own::Reverse(r.rev()),
        }
        .peekable();
        let before = |a: &Key, b: &Key| if reverse { a > b } else { a < b };

        let mut lo = range.lo.clone();
        let mut hi = range.hi.clone();
        // The first batch is half size: many scans stop early (LIMIT, a merge join's probe);
        // no larger than the rows expected.
        let mut limit = (SCAN_BATCH / 2).min(expect.max(1));
        // Index entries handed out by the batches before this one.
        let mut handed = 0usize;
        let mut batch: Vec<(Key, u64)> = Vec::with_capacity(limit);
        let mut chunk = 16;
        let files = self.db.files();
        let mut pre = Vec::with_capacity(expect.min(SCAN_BATCH));
        let mut want: Vec<u64> = Vec::with_capacity(expect.min(SCAN_BATCH));
        let mut direct = files.reader(t.id);
        // Rows read straight from mapped files, added to the engine's count however the scan
        // ends (the chunks' reads count their own).
        let mut mapped = AddOnDrop(&self.db.direct_reads, 0);
        loop {
            batch.clear();
            let mut next_fetch = 0;
            // Where the next row's version likely is in `pre` (sorted by rowid): the next entry
            // when the rows' rowids ascend with their keys, as they do when rows are stored in
            // key order.
            let mut next_in_pre = 0;
            let more =
                t.pk.read()
                    .range_batch(bound_ref(&lo), bound_ref(&hi), reverse, limit, &mut batch)?;
            limit = SCAN_BATCH;
            for (i, (k, p)) in batch.iter().enumerate() {
                // Own writes that sort before this key come first.
                if has_own {
                    while let Some((mk, mp)) = mine.next_if(|&(mk, _)| before(mk, k)) {
                        if let Pending::Put(r) = mp {
                            if !f(mk, Found::Own(r))? {
                                return Ok(());
                            }
                        }
                    }
                    if let Some((mk, mp)) = mine.next_if(|&(mk, _)| mk == k) {
                        if let Pending::Put(r) = mp {
                            if !f(mk, Found::Own(r))? {
                                return Ok(());
                            }
                        }
                        continue;
                    }
                }
                let rowid = p & !TOMBSTONE;
                let visible = p & TOMBSTONE == 0 && rowid <= snapshot;
                // A forward scan outside a chunk already read: the newest version straight
                // from the mapped file that holds it. In a table stored in key order the rowids
                // ascend with the keys, so the reader's cursor walks the file's blocks in order.
                if visible && !reverse && i >= next_fetch {
                    if let Lookup::Hit(b) = direct.get(rowid) {
                        mapped.1 += 1;
                        if !f(k, Found::Stored(b))? {
                            return Ok(());
                        }
                        continue;
                    }
                }
                if i >= next_fetch {
                    // Read the next rows together (one iterator pass or one multi-get) rather
                    // than one point read each; chunks grow so that a short scan reads little.
                    let left = expect.saturating_sub(handed + i);
                    let n = if left == 0 { chunk } else { chunk.min(left) };
                    let end = (i + n).min(batch.len());
                    want.clear();
                    want.extend(
                        batch[i..end]
                            .iter()
                            .filter(|(_, p)| p & TOMBSTONE == 0 && *p <= snapshot)
                            .map(|(_, p)| *p),
                    );
                    want.sort_unstable();
                    self.db.fetch_many(&files, t.id, &want, &mut pre)?;
                    next_in_pre = 0;
                    next_fetch = end;
                    chunk = (chunk * 2).min(SCAN_BATCH);
                }
                // The newest version visible and read with its chunk, without touching its
                // reference count; else the version chain (an older version, or one the chunk's
                // read did not return).
                let at = if visible {
                    match pre.get(next_in_pre) {
                        Some(e) if e.0 == rowid => Some(next_in_pre),
                        _ => pre.binary_search_by_key(&rowid, |e| e.0).ok(),
                    }
                } else {
                    None
                };
                if let Some(i) = at {
                    next_in_pre = i + 1;
                }
                let go = match at {
                    Some(i) => f(k, Found::Stored(&pre[i].1))?,
                    None => match self.db.resolve_bytes(&files, t.id, *p, snapshot)? {
                        Some(b) => f(k, Found::Stored(&b))?,
                        None => true,
                    },
                };
                if !go {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
            handed += batch.len();
            let last = batch.last().expect("a full batch").0.clone();
            if reverse {
                hi = Bound::Excluded(last);
            } else {
                lo = Bound::Excluded(last);
            }
        }
        for (mk, mp) in mine {
            if let Pending::Put(r) = mp {
                if !f(mk, Found::Own(r))? {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// The number of rows with primary key in `range` this transaction sees: what
    /// [`Transaction::scan_in`] would visit, counted from the primary index without reading
    /// rows. A payload at or below the snapshot is the visible version itself (live unless it
    /// carries the tombstone bit); only a key written after the snapshot needs its version
    /// chain read. `check` runs once per index batch (statement timeout, cancel).
    pub fn count_in(
        &self,
        t: &Table,
        range: &KeyRange,
        mut check: impl FnMut() -> Result<()>,
    ) -> Result<u64> {
        self.check_active()?;
        let mine = self.writes.get(&t.id).map(|w| &w.ops).filter(|o| !o.is_empty());
        let mut n: u64 = own_in(self.writes.get(&t.id), range).map_or(0, |r| {
            r.filter(|(_, p)| matches!(p, Pending::Put(_))).count() as u64
        });
        let mut lo = range.lo.clone();
        let mut batch: Vec<(Key, u64)> = Vec::with_capacity(SCAN_BATCH);
        loop {
            check()?;
            batch.clear();
            let more = t.pk.read().range_batch(
                bound_ref(&lo),
                bound_ref(&range.hi),
                false,
                SCAN_BATCH,
                &mut batch,
            )?;
            for (k, p) in &batch {
                // Keys this transaction wrote were counted from its own writes.
                if mine.is_some_and(|ops| ops.contains_key(k)) {
                    continue;
                }
                let visible = if p & !TOMBSTONE <= self.snapshot {
                    p & TOMBSTONE == 0
                } else {
                    self.db.resolve(t.id, *p, self.snapshot)?.is_some()
                };
                n += visible as u64;
            }
            if !more {
                break;
            }
            lo = Bound::Excluded(batch.last().expect("a full batch").0.clone());
        }
        Ok(n)
    }

    /// Collects the rows with primary key in `range`, in key order.
    pub fn scan(&self, table: &str, range: KeyRange) -> Result<Vec<(Key, Row)>> {
        let t = self.db.table(table)?;
        let mut out = Vec::new();
        self.scan_in(&t, &range, false, |k, r| {
            out.push((k.clone(), (**r).clone()));
            Ok(true)
        })?;
        Ok(out)
    }

    /// Rows whose secondary index `index` (position in the table's index list) has encoded
    /// values within the bounds, ordered by (value, key).
    pub fn index_scan_in(
        &self,
        t: &Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        self.index_scan_at(self.snapshot, t, index, lo, hi)
    }

    /// [`Transaction::index_scan_in`] over the newest committed versions and this
    /// transaction's own writes, whatever the snapshot (see [`Transaction::scan_latest_in`]):
    /// the rows referencing a parent row, found by an index on their foreign key.
    pub fn index_latest_in(
        &self,
        t: &Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        self.index_scan_at(u64::MAX, t, index, lo, hi)
    }

    /// The rows in the index range as snapshot `snapshot` and this transaction's own writes
    /// have them (the index's entries cover every stored version, so any snapshot's rows).
    fn index_scan_at(
        &self,
        snapshot: u64,
        t: &Table,
        index: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Result<Vec<(Key, Arc<Row>)>> {
        self.check_active()?;
        let def = t.def();
        let idx = def
            .indexes
            .get(index)
            .ok_or_else(|| Error::internal(format!("no index {index} on {}", def.name)))?
            .clone();
        let mut keys = t
            .secondary
            .read()
            .get(index)
            .map(|s| s.candidates(lo, hi))
            .unwrap_or_default();
        // This transaction's own rows in range (its pending deletes are none): a range lookup in
        // its pending writes by index value. Every key is then read as this transaction sees it
        // and checked again, which drops committed entries its own writes changed or deleted.
        if let Some(w) = self.writes.get(&t.id) {
            keys.extend(w.own_keys_in(&def, index, lo, hi));
        }
        keys.sort();
        keys.dedup();
        let in_range = |v: &[u8]| {
            (match lo {
                Bound::Unbounded => true,
                Bound::Included(l) => v >= l,
                Bound::Excluded(l) => v > l,
            }) && (match hi {
                Bound::Unbounded => true,
                Bound::Included(h) => v <= h,
                Bound::Excluded(h) => v < h,
            })
        };
        let mut out = Vec::new();
        for k in keys {
            if let Some(row) = self.get_at(snapshot, t, &k)? {
                if let Some(v) = def.index_value(&idx, &row) {
                    if in_range(&v) {
                        out.push((v, k, row));
                    }
                }
            }
        }
        out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        Ok(out.into_iter().map(|(_, k, r)| (k, r)).collect())
    }
}

/// The pending writes of a table whose keys lie in `range`, by a range lookup; None when
/// there are none, or when the range is empty (a lower bound above the upper one, or one key
/// excluded at both ends), which `BTreeMap::range` would refuse with a panic.
fn own_in<'a>(w: Option<&'a TableWrites>, range: &KeyRange) -> Option<btree_map::Range<'a, Key, Pending>> {
    let w = w.filter(|w| !w.ops.is_empty())?;
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
        (&range.lo, &range.hi)
    {
        let both_in = matches!((&range.lo, &range.hi), (Bound::Included(_), Bound::Included(_)));
        if a > b || (a == b && !both_in) {
            return None;
        }
    }
    Some(w.ops.range((bound_ref(&range.lo), bound_ref(&range.hi))))
}

/// A scan's own writes in scan order.
enum Own<'a> {
    None,
    Forward(btree_map::Range<'a, Key, Pending>),
    Reverse(std::iter::Rev<btree_map::Range<'a, Key, Pending>>),
}

impl<'a> Iterator for Own<'a> {
    type Item = (&'a Key, &'a Pending);

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Own::None => None,
            Own::Forward(r) => r.next(),
            Own::Reverse(r) => r.next(),
        }
    }
}

fn bound_ref(b: &Bound<Key>) -> Bound<&Key> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

/// Adds `.1` to the counter `.0` when dropped.
struct AddOnDrop<'a>(&'a crate::engine::tally::Tally, u64);

impl Drop for AddOnDrop<'_> {
    fn drop(&mut self) {
        if self.1 != 0 {
            self.0.add(self.1);
        }
    }
}
