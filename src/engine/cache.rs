//! The row cache: decoded row versions by rowid, bounded by bytes. Row versions never change
//! once written, so a cached version is never stale; garbage collection evicts what it deletes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use crate::types::codec::Version;

#[derive(Clone)]
struct ByBytes;

impl Weighter<u64, Arc<Version>> for ByBytes {
    fn weight(&self, _k: &u64, v: &Arc<Version>) -> u64 {
        // Entry overhead (key, Arc, cache bookkeeping) plus the decoded row.
        (v.heap_bytes() + 48) as u64
    }
}

pub(crate) struct RowCache {
    cache: Option<Cache<u64, Arc<Version>, ByBytes>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl RowCache {
    pub fn new(bytes: usize) -> RowCache {
        let cache = (bytes > 0).then(|| {
            // Estimated item count only sizes the hash table; the weight bounds memory.
            let items = (bytes / 200).max(64);
            Cache::with_weighter(items, bytes as u64, ByBytes)
        });
        RowCache {
            cache,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn get(&self, rowid: u64) -> Option<Arc<Version>> {
        let r = self.cache.as_ref()?.get(&rowid);
        if r.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        } else {
            self.misses.fetch_add(1, Ordering::Relaxed);
        }
        r
    }

    pub fn insert(&self, rowid: u64, v: Arc<Version>) {
        if let Some(c) = &self.cache {
            c.insert(rowid, v);
        }
    }

    pub fn remove(&self, rowid: u64) {
        if let Some(c) = &self.cache {
            c.remove(&rowid);
        }
    }

    pub fn hits_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    pub fn weight(&self) -> u64 {
        self.cache.as_ref().map_or(0, |c| c.weight())
    }
}
