//! Raw RocksDB as a system under test: keyed by the 8-byte big-endian primary key in the rows
//! column family, opened through Augur's own `Store` so that its options are Augur's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use augur::store::{Db, Store, StoreOptions, CF_ROWS};
use augur_bench::budget::Part;
use rocksdb::{WriteBatch, WriteOptions};

use super::{Load, System};

pub struct Rocks {
    path: PathBuf,
    opts: StoreOptions,
    store: Option<Store>,
}

impl Rocks {
    pub fn create(path: &Path, opts: StoreOptions) -> Result<Self> {
        let store = Store::open(path, &opts)?;
        Ok(Rocks {
            path: path.to_path_buf(),
            opts,
            store: Some(store),
        })
    }
    fn store(&self) -> &Store {
        self.store.as_ref().expect("open")
    }
    /// The RocksDB handle (a read guard: the store may swap it when it recovers by reopening).
    fn s(&self) -> Result<Db<'_>> {
        Ok(self.store().db()?)
    }
    fn wo(sync: bool) -> WriteOptions {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        wo
    }
    fn exists(&self, k: u64) -> Result<bool> {
        let s = self.s()?;
        let found = s.db().get_pinned_cf(s.cf(CF_ROWS), k.to_be_bytes())?.is_some();
        Ok(found)
    }
    fn property(&self, p: &str) -> u64 {
        self.store().rows_property(p).unwrap_or(0)
    }
}

impl System for Rocks {
    fn load(&mut self, how: Load, keys: &[u64], value: &mut dyn FnMut(u64, &mut Vec<u8>)) -> Result<()> {
        let mut buf = Vec::new();
        match how {
            Load::Inserts => {
                let s = self.s()?;
                let cf = s.cf(CF_ROWS);
                let mut b = WriteBatch::default();
                for &k in keys {
                    buf.clear();
                    value(k, &mut buf);
                    b.put_cf(cf, k.to_be_bytes(), &buf);
                }
                s.db().write_opt(b, &Self::wo(true))?;
            }
            Load::Loader => {
                // Sorted (counted), one SstFileWriter file with the rows column family's
                // options, ingested; RocksDB syncs the file and the MANIFEST before returning.
                let mut sorted = keys.to_vec();
                sorted.sort_unstable();
                self.store().ingest_rows(|put| {
                    for &k in &sorted {
                        buf.clear();
                        value(k, &mut buf);
                        put(&k.to_be_bytes(), &buf)?;
                    }
                    Ok(())
                })?;
            }
            other => bail!("rocksdb: no load {other:?}"),
        }
        Ok(())
    }
    fn close(&mut self) -> Result<()> {
        if let Some(s) = self.store.take() {
            s.db()?.flush_wal(true)?;
            drop(s);
        }
        Ok(())
    }
    fn reopen(&mut self, probe: u64) -> Result<()> {
        self.store = Some(Store::open(&self.path, &self.opts)?);
        if !self.exists(probe)? {
            bail!("rocksdb: probe key missing after reopen");
        }
        Ok(())
    }
    fn get(&mut self, k: u64, out: &mut Vec<u8>) -> Result<bool> {
        let s = self.s()?;
        let found = match s.db().get_pinned_cf(s.cf(CF_ROWS), k.to_be_bytes())? {
            Some(v) => {
                out.extend_from_slice(&v);
                true
            }
            None => false,
        };
        Ok(found)
    }
    fn warm(&mut self) -> Result<u64> {
        // Through the block cache (fill_cache is on by default).
        let s = self.s()?;
        let mut it = s.db().raw_iterator_cf(s.cf(CF_ROWS));
        it.seek_to_first();
        let mut n = 0u64;
        while it.valid() {
            n += 1;
            it.next();
        }
        it.status()?;
        Ok(n)
    }
    fn range(&mut self, k: u64, n: usize, keys: &mut Vec<u64>, vals: &mut Vec<u8>) -> Result<()> {
        let s = self.s()?;
        let mut it = s.db().raw_iterator_cf(s.cf(CF_ROWS));
        it.seek(k.to_be_bytes());
        while it.valid() && keys.len() < n {
            let key = it.key().expect("valid");
            keys.push(u64::from_be_bytes(key.try_into()?));
            vals.extend_from_slice(it.value().expect("valid"));
            it.next();
        }
        it.status()?;
        Ok(())
    }
    fn update(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        if !self.exists(k)? {
            return Ok(false);
        }
        let s = self.s()?;
        s.db()
            .put_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), v, &Self::wo(sync))?;
        Ok(true)
    }
    fn delete(&mut self, k: u64, sync: bool) -> Result<bool> {
        if !self.exists(k)? {
            return Ok(false);
        }
        let s = self.s()?;
        s.db()
            .delete_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), &Self::wo(sync))?;
        Ok(true)
    }
    fn insert(&mut self, k: u64, v: &[u8], sync: bool) -> Result<bool> {
        if self.exists(k)? {
            return Ok(false);
        }
        let s = self.s()?;
        s.db()
            .put_cf_opt(s.cf(CF_ROWS), k.to_be_bytes(), v, &Self::wo(sync))?;
        Ok(true)
    }
    fn budget_bytes(&self) -> u64 {
        self.opts.block_cache_bytes as u64
    }
    fn memory_parts(&self) -> Vec<Part> {
        vec![
            Part::charged(
                "block cache (rocksdb.block-cache-usage)",
                self.property("rocksdb.block-cache-usage"),
            ),
            Part::listed(
                "memtables (rocksdb.cur-size-all-mem-tables)",
                self.property("rocksdb.cur-size-all-mem-tables"),
            ),
            // Charged as Augur's engine charges its own (index blocks held beside the cache).
            Part::charged(
                "table readers (rocksdb.estimate-table-readers-mem)",
                self.property("rocksdb.estimate-table-readers-mem"),
            ),
        ]
    }
}
