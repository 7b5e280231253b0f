//! The store's RocksDB options with a reused MANIFEST grown past 1 MiB (see `db_options`).

use rocksdb::DB;

use super::db_options;

/// A long key: each flushed file's smallest and largest keys go into its version edit, so a few
/// hundred flushes grow the MANIFEST past 1 MiB.
fn key(k: u64) -> Vec<u8> {
    let mut v = vec![b'k'; 4000];
    v.extend_from_slice(&k.to_be_bytes());
    v
}

fn manifest_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("MANIFEST-"))
        .map(|e| e.metadata().unwrap().len())
        .max()
        .unwrap_or(0)
}

/// With the store's options, a MANIFEST past 1 MiB, reused by the next opens, takes the
/// version edits of later flushes. (With `bytes_per_sync` at 1 MiB, as the store once set it,
/// the first flush after such an open failed: `sync_file_range` EINVAL.)
#[test]
fn a_reused_manifest_past_one_mib_takes_writes() {
    // In memory where there is a tmpfs: hundreds of flushes, each syncing a file and the
    // MANIFEST; the range sync's arguments fail the same on any filesystem.
    let shm = std::path::Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let opts = db_options(dir.path()).unwrap();
    let mut k = 0u64;
    {
        let db = DB::open(&opts, dir.path()).unwrap();
        // Each flush adds a version edit to the MANIFEST (and each compaction its own).
        while manifest_bytes(dir.path()) < (1 << 20) + (64 << 10) {
            db.put(key(k), [0u8; 8]).unwrap();
            k += 1;
            db.flush().unwrap();
        }
    }
    for _ in 0..2 {
        let db = DB::open(&opts, dir.path()).unwrap();
        for _ in 0..3 {
            db.put(key(k), [1u8; 8]).unwrap();
            k += 1;
            db.flush().unwrap();
        }
    }
    let db = DB::open(&opts, dir.path()).unwrap();
    assert_eq!(db.iterator(rocksdb::IteratorMode::Start).count() as u64, k);
}
