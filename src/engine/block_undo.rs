//! Undo records of ALTER TABLE inside a transaction block (`sql/session/block_alter.rs`):
//! before such an ALTER changes a definition, the definitions as they were are written durably
//! under `undo/<owner>/<seq>` in the meta column family, and deleted when the block ends
//! (committed, or rolled back and the definitions put back). A record left at open is a block
//! that a crash ended: [`Inner::apply_leftover_undo`] puts its definitions back, newest record
//! first, as the block's rollback would have (PostgreSQL's crash rolls the block back); a
//! table the block rebuilt gets its retired incarnation back (`retire.rs`). A block's commit
//! deletes its records in the same write as its rows ([`super::Transaction::forget_undo_on_commit`]),
//! so a crash after it rolls back nothing it committed.

use rocksdb::WriteBatch;

use super::catalog::TableDef;
use super::{Database, Inner};
use crate::error::{Error, Result};
use crate::store::CF_META;

fn prefix(owner: u64) -> String {
    format!("undo/{owner:016x}/")
}

/// The key range of `owner`'s undo records (for a commit's `delete_range`).
pub(crate) fn owner_range(owner: u64) -> (String, String) {
    (prefix(owner), format!("undo/{owner:016x}0"))
}

impl Database {
    /// Writes the undo record `seq` of lock owner `owner`: the definitions `defs` as they are
    /// before an ALTER in its block. Durable before it returns.
    pub fn record_undo(&self, owner: u64, seq: u64, defs: &[TableDef]) -> Result<()> {
        let inner = self.inner();
        inner.check_open()?;
        let json = serde_json::to_vec(defs).map_err(|e| Error::internal(format!("undo record: {e}")))?;
        let mut b = WriteBatch::default();
        b.put_cf(
            inner.store.db()?.cf(CF_META),
            format!("{}{seq:016x}", prefix(owner)),
            json,
        );
        inner.store.write_sync(b)
    }

    /// Deletes the undo records of `owner` numbered `from` and up (its block ended, or rolled
    /// back to a savepoint). Durable before it returns.
    pub fn forget_undo(&self, owner: u64, from: u64) -> Result<()> {
        let inner = self.inner();
        inner.check_open()?;
        let p = prefix(owner);
        let keys = inner.store.scan_prefix(CF_META, p.as_bytes())?;
        let mut b = WriteBatch::default();
        let mut any = false;
        for (k, _) in keys {
            let seq = std::str::from_utf8(&k[p.len()..])
                .ok()
                .and_then(|s| u64::from_str_radix(s, 16).ok());
            if seq.is_none_or(|s| s >= from) {
                b.delete_cf(inner.store.db()?.cf(CF_META), &k);
                any = true;
            }
        }
        if any {
            inner.store.write_sync(b)?;
        }
        Ok(())
    }
}

impl Inner {
    /// Puts back the definitions of the undo records a crash left (see the module docs), then
    /// deletes the records. A definition that cannot be put back (its table is gone, or its
    /// old name taken) is skipped: the table keeps the altered one.
    pub(super) fn apply_leftover_undo(&self) -> Result<()> {
        let records = self.store.scan_prefix(CF_META, b"undo/")?;
        if records.is_empty() {
            return Ok(());
        }
        // Newest first: keys sort by owner, then by record number.
        for (_, v) in records.iter().rev() {
            let Ok(defs) = serde_json::from_slice::<Vec<TableDef>>(v) else {
                continue;
            };
            for old in defs {
                let cur = {
                    let m = self.tables.read();
                    m.values().find(|t| t.def().id == old.id).cloned()
                };
                let Some(cur) = cur else { continue };
                if cur.is_retired() {
                    // Rebuilt by the block: the old incarnation goes back, the new one goes.
                    let _ = self.restore_retired(old);
                    continue;
                }
                let cur = cur.def();
                if *cur == old {
                    continue;
                }
                for ix in &cur.indexes {
                    if !old.indexes.iter().any(|o| o.name == ix.name) {
                        let _ = self.drop_index(&ix.name);
                    }
                }
                let _ = self.restore_def(old);
            }
        }
        let mut b = WriteBatch::default();
        for (k, _) in &records {
            b.delete_cf(self.store.db()?.cf(CF_META), k);
        }
        self.store.write_sync(b)
    }
}
