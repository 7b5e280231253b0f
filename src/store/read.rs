//! Reading stored rows through RocksDB: one version by position, several at once, ranges of
//! positions, the metadata keys. (Rows a mapped file holds are read in place by `direct`.)

use super::*;

impl Store {
    /// One row version by position, copied out of RocksDB (the caller keeps it in the row
    /// cache; a borrowed slice could not outlive the borrow of the open database).
    pub fn get_row(&self, table: u32, rowid: u64) -> Result<Option<Vec<u8>>> {
        self.check_row_read()?;
        let db = self.db()?;
        let row = db
            .get_pinned_cf_opt(db.cf(CF_ROWS), row_key(table, rowid), &self.point_read)?
            .map(|s| s.to_vec());
        Ok(row)
    }

    /// Fetches several rows at once; `rowids` sorted ascending is fastest.
    pub fn multi_get_rows(&self, table: u32, rowids: &[u64]) -> Vec<Result<Option<Vec<u8>>>> {
        let db = match self.check_row_read().and_then(|_| self.db()) {
            Ok(db) => db,
            Err(e) => {
                return rowids
                    .iter()
                    .map(|_| Err(Error::new(e.sqlstate(), e.to_string())))
                    .collect()
            }
        };
        let cf = db.cf(CF_ROWS);
        let keys: Vec<[u8; 12]> = rowids.iter().map(|&r| row_key(table, r)).collect();
        db.batched_multi_get_cf(cf, keys.iter(), rowids.windows(2).all(|w| w[0] <= w[1]))
            .into_iter()
            .map(|r| r.map(|o| o.map(|s| s.to_vec())).map_err(Error::from))
            .collect()
    }

    /// Iterates the row versions of `table` with rowid in `[from, to)`, in rowid order, until
    /// `f` returns false; a bulk pass (recovery, verification) that bypasses the block cache.
    pub fn for_each_row(
        &self,
        table: u32,
        from: u64,
        to: u64,
        f: impl FnMut(u64, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        if crate::failpoint::hit("store-row-scan") {
            return Err(Error::Storage("IO error: injected read failure".into()));
        }
        let mut ro = ReadOptions::default();
        ro.fill_cache(false);
        ro.set_readahead_size(2 << 20);
        self.rows_in(ro, table, from, to, f)
    }

    /// Reads the row versions of `table` with rowid in `[from, to)` through the block cache (a
    /// range scan's rows), in rowid order, until `f` returns false.
    pub fn scan_rows(
        &self,
        table: u32,
        from: u64,
        to: u64,
        f: impl FnMut(u64, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        self.rows_in(ReadOptions::default(), table, from, to, f)
    }

    fn rows_in(
        &self,
        mut ro: ReadOptions,
        table: u32,
        from: u64,
        to: u64,
        mut f: impl FnMut(u64, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        self.check_row_read()?;
        // The upper bound keeps the iterator inside this table's rows.
        ro.set_iterate_upper_bound(row_key(table, to).to_vec());
        let db = self.db()?;
        let mut it = db.raw_iterator_cf_opt(db.cf(CF_ROWS), ro);
        it.seek(row_key(table, from));
        while it.valid() {
            let (Some(k), Some(v)) = (it.key(), it.value()) else {
                break;
            };
            let (_, rowid) = decode_row_key(k).ok_or_else(|| Error::Corrupt("bad row key".into()))?;
            if !f(rowid, v)? {
                break;
            }
            it.next();
        }
        it.status()?;
        Ok(())
    }

    /// Test hook: while `on`, every read of row versions through RocksDB (`get_row`,
    /// `multi_get_rows`, row scans) fails as a read from a failing device does (58030), without
    /// stopping the store: what the engine does with a read error (garbage collection, the crash
    /// sweep) is tested with it. Reads the row cache or a mapped file serves are not affected.
    #[doc(hidden)]
    pub fn fail_row_reads(&self, on: bool) {
        self.row_read_faults.store(on, Ordering::Release);
    }

    #[inline]
    fn check_row_read(&self) -> Result<()> {
        if self.row_read_faults.load(Ordering::Relaxed) {
            return Err(Error::Storage(
                "IO error: While pread offset 0 len 4096: Input/output error (injected by a test)".into(),
            ));
        }
        Ok(())
    }

    /// The highest rowid stored under any table (0 when empty).
    pub fn max_rowid(&self) -> Result<u64> {
        // Rowids are global, but keys sort by table first: look at each table's last key.
        let mut max = 0;
        let db = self.db()?;
        let mut it = db.raw_iterator_cf(db.cf(CF_ROWS));
        it.seek_to_last();
        while it.valid() {
            let k = it.key().unwrap_or_default();
            let (table, rowid) = decode_row_key(k).ok_or_else(|| Error::Corrupt("bad row key".into()))?;
            max = max.max(rowid);
            if table == 0 {
                break;
            }
            // Jump to the last key of the previous table.
            it.seek_for_prev(row_key(table, 0));
        }
        it.status()?;
        Ok(max)
    }

    pub fn get_meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let db = self.db()?;
        Ok(db.get_cf(db.cf(CF_META), key.as_bytes())?)
    }

    pub fn get_meta_u64(&self, key: &str) -> Result<Option<u64>> {
        Ok(match self.get_meta(key)? {
            None => None,
            Some(v) => Some(u64::from_be_bytes(
                v.as_slice()
                    .try_into()
                    .map_err(|_| Error::Corrupt(format!("meta {key}")))?,
            )),
        })
    }

    /// Every (key, value) in a column family whose key starts with `prefix`.
    pub fn scan_prefix(&self, cf: &str, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let db = self.db()?;
        let it = db.iterator_cf(db.cf(cf), IteratorMode::From(prefix, Direction::Forward));
        for item in it {
            let (k, v) = item?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push((k.to_vec(), v.to_vec()));
        }
        Ok(out)
    }
}
