//! The direct read path: row versions read straight from RocksDB's own SST files of the rows
//! column family, mapped read-only and modelled, so that the position ALEX hands out reaches the
//! row's bytes without RocksDB's second search (its index block, block cache and version
//! machinery). RocksDB stays the storage of record: it writes, compacts and deletes the files;
//! this module only reads what it finds, and anything it does not cover falls back to a RocksDB
//! `Get` (the memtable, a file not yet mapped, a block or format it does not read).
//!
//! Why it is safe: a row version never changes under its rowid (rowids are never reused and a
//! version is written once), so every file that holds a value for a rowid holds the same bytes,
//! and a mapping of a file that compaction has since deleted still returns them. The engine only
//! asks for rowids its indexes or version chains point at, which garbage collection has not
//! deleted. A stale file set can therefore only cost fallbacks, never a wrong answer.
//!
//! - `format`: RocksDB's block-based table format, parsed in place.
//! - `model`: the learned model from rowid to data block (piecewise linear, error-bounded).
//! - `mapping`: a whole file mapped read-only on a huge-page boundary.
//! - `file`: one mapped and modelled file; point lookups inside it.
//! - this file: the set of mapped files, kept in step with RocksDB's live files.

mod file;
mod format;
mod mapping;
mod model;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use file::{Cursor, Found, SstFile};

/// A run of one table's rows in one file.
struct RunRef {
    file: Arc<SstFile>,
    run: usize,
    lo: u64,
    hi: u64,
}

/// One table's runs, sorted by their smallest rowid; `max_hi[i]` is the largest `hi` among runs
/// `..=i`, so a lookup can stop walking back once no earlier run can reach the rowid.
struct TableRuns {
    table: u32,
    runs: Vec<RunRef>,
    max_hi: Vec<u64>,
}

/// The mapped files at one moment, grouped by table. Immutable; replaced as a whole.
#[derive(Default)]
pub struct FileSet {
    files: Vec<Arc<SstFile>>,
    tables: Vec<TableRuns>,
}

/// What [`FileSet::get`] found for a rowid.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The version's bytes, in a mapped file.
    Hit(&'a [u8]),
    /// No mapped file covers this rowid (it is in the memtable, or in a file not mapped yet).
    Uncovered,
    /// A mapped file covers it but cannot serve it here: read it through RocksDB.
    Fallback,
}

impl FileSet {
    fn build(files: Vec<Arc<SstFile>>) -> FileSet {
        let mut by_table: HashMap<u32, Vec<RunRef>> = HashMap::new();
        for f in &files {
            for (i, r) in f.runs.iter().enumerate() {
                by_table.entry(r.table).or_default().push(RunRef {
                    file: f.clone(),
                    run: i,
                    lo: r.lo,
                    hi: r.hi,
                });
            }
        }
        let mut tables: Vec<TableRuns> = by_table
            .into_iter()
            .map(|(table, mut runs)| {
                runs.sort_by_key(|r| (r.lo, r.hi));
                let mut m = 0;
                let max_hi = runs
                    .iter()
                    .map(|r| {
                        m = m.max(r.hi);
                        m
                    })
                    .collect();
                TableRuns { table, runs, max_hi }
            })
            .collect();
        tables.sort_by_key(|t| t.table);
        FileSet { files, tables }
    }

    /// The bytes of row version `rowid` of `table`, if a mapped file holds them.
    #[inline]
    pub fn get(&self, table: u32, rowid: u64) -> Lookup<'_> {
        self.walk(table, rowid, |r| match r.file.get(&r.file.runs[r.run], rowid) {
            Found::Value(v) => Some(Lookup::Hit(v)),
            Found::Absent => None,
            Found::Fallback => Some(Lookup::Fallback),
        })
    }

    /// [`FileSet::get`] for each of `rowids` (ascending), as `f(i, lookup)` in order. A rowid in
    /// the block of the one before it, or the next block, is read through a cursor left
    /// there, without the search of the runs and the model.
    pub fn get_sorted<'s>(&'s self, table: u32, rowids: &[u64], mut f: impl FnMut(usize, Lookup<'s>)) {
        let mut reader = self.reader(table);
        for (i, &r) in rowids.iter().enumerate() {
            f(i, reader.get(r));
        }
    }

    /// A reader of `table`'s rows for rowids that mostly ascend (a forward scan's): each
    /// [`SortedReader::get`] answers as [`FileSet::get`], through a cursor left in the block
    /// of the rowid before when the next one is there or in the next block.
    pub fn reader(&self, table: u32) -> SortedReader<'_> {
        SortedReader {
            set: self,
            table,
            cursor: None,
        }
    }

    /// [`FileSet::get`], with a cursor in the file that answered.
    #[inline]
    fn locate(&self, table: u32, rowid: u64) -> (Lookup<'_>, Option<Cursor<'_>>) {
        let mut cursor = None;
        let got = self.walk(table, rowid, |r| match r.file.seek(&r.file.runs[r.run], rowid) {
            (Found::Value(v), c) => {
                cursor = c;
                Some(Lookup::Hit(v))
            }
            (Found::Absent, _) => None,
            (Found::Fallback, _) => Some(Lookup::Fallback),
        });
        (got, cursor)
    }

    /// Asks `probe` of each run of `table` whose rowid range holds `rowid`, newest range first,
    /// until one answers; then says whether any run covered it.
    #[inline]
    fn walk<'s>(
        &'s self,
        table: u32,
        rowid: u64,
        mut probe: impl FnMut(&'s RunRef) -> Option<Lookup<'s>>,
    ) -> Lookup<'s> {
        let Ok(t) = self.tables.binary_search_by_key(&table, |t| t.table) else {
            return Lookup::Uncovered;
        };
        let t = &self.tables[t];
        let mut i = t.runs.partition_point(|r| r.lo <= rowid);
        let mut covered = false;
        while i > 0 {
            i -= 1;
            if t.max_hi[i] < rowid {
                break;
            }
            let r = &t.runs[i];
            if r.hi < rowid {
                continue;
            }
            covered = true;
            if let Some(got) = probe(r) {
                return got;
            }
        }
        if covered {
            // In a file's range but in none of them: a version garbage collection deleted,
            // or one in a file this set does not have yet.
            Lookup::Fallback
        } else {
            Lookup::Uncovered
        }
    }

    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Whether one mapped file's run of `table` spans all of `lo..=hi` (by its first and last
    /// rowid; a version inside may still have been collected): for work that only needs to skip
    /// what the files will serve, without searching them.
    pub fn spans(&self, table: u32, lo: u64, hi: u64) -> bool {
        let Ok(t) = self.tables.binary_search_by_key(&table, |t| t.table) else {
            return false;
        };
        let t = &self.tables[t];
        let i = t.runs.partition_point(|r| r.lo <= lo);
        (0..i)
            .rev()
            .take_while(|&j| t.max_hi[j] >= hi)
            .any(|j| t.runs[j].hi >= hi)
    }
}

/// Counters of the direct read path, for `Stats` and the metrics.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct DirectStats {
    /// SST files of the rows column family mapped and modelled now, their bytes, their data
    /// blocks, and the heap bytes of their models and block tables.
    pub files: u64,
    pub mapped_bytes: u64,
    pub blocks: u64,
    pub model_bytes: u64,
    /// Linear segments of those models (one per file and table when rows are of similar size).
    pub model_segments: u64,
    /// Live files left to RocksDB because this reader does not read their format.
    pub unsupported_files: u64,
    /// Mapped bytes not yet brought into the page tables by the background populate.
    pub unpopulated_bytes: u64,
    /// Times the file set was rebuilt because RocksDB's live files changed.
    pub refreshes: u64,
}

struct Refresh {
    /// RocksDB's super-version number when the set was last built.
    version: Option<u64>,
    /// Files found unsupported, by number (not retried).
    unsupported: HashMap<u64, String>,
    /// Populate progress: (file number, bytes done) of files still being populated.
    populate: Vec<(Arc<SstFile>, usize)>,
    refreshes: u64,
}

/// The direct reader: the current file set and how to keep it current.
pub struct Direct {
    dir: PathBuf,
    set: ArcSwap<FileSet>,
    refresh: Mutex<Refresh>,
    unpopulated: AtomicU64,
}

/// See [`FileSet::reader`].
pub struct SortedReader<'s> {
    set: &'s FileSet,
    table: u32,
    cursor: Option<Cursor<'s>>,
}

impl<'s> SortedReader<'s> {
    /// The version at `rowid`, as [`FileSet::get`] finds it.
    #[inline]
    pub fn get(&mut self, rowid: u64) -> Lookup<'s> {
        match self.cursor.as_mut().and_then(|c| c.next(rowid)) {
            Some(Found::Value(v)) => Lookup::Hit(v),
            Some(Found::Fallback) => Lookup::Fallback,
            // Absent from this file: another may hold it.
            Some(Found::Absent) => self.set.get(self.table, rowid),
            None => {
                let (got, c) = self.set.locate(self.table, rowid);
                self.cursor = c;
                got
            }
        }
    }
}

/// A reader's hold on the file set (lock-free; keeps the mappings alive while held).
pub type Files = arc_swap::Guard<Arc<FileSet>>;

impl Direct {
    pub(crate) fn new(dir: &Path) -> Direct {
        Direct {
            dir: dir.to_path_buf(),
            set: ArcSwap::from_pointee(FileSet::default()),
            refresh: Mutex::new(Refresh {
                version: None,
                unsupported: HashMap::new(),
                populate: Vec::new(),
                refreshes: 0,
            }),
            unpopulated: AtomicU64::new(0),
        }
    }

    /// The current file set.
    #[inline]
    pub fn files(&self) -> Files {
        self.set.load()
    }

    /// Rebuilds the file set if RocksDB's live files of the rows column family changed since
    /// the last call (`version` is RocksDB's super-version number; `live` lists the files).
    /// Files already mapped are kept; new ones are mapped and modelled.
    pub(crate) fn refresh(
        &self,
        version: u64,
        live: impl FnOnce() -> Option<Vec<(String, Option<Vec<u8>>)>>,
    ) {
        let mut st = self.refresh.lock();
        if st.version == Some(version) {
            return;
        }
        let current = self.set.load_full();
        let have: HashMap<u64, Arc<SstFile>> = current.files.iter().map(|f| (f.number, f.clone())).collect();
        let Some(live) = live() else {
            return;
        };
        let mut files = Vec::new();
        let mut all_live = std::collections::HashSet::new();
        for (name, last_key) in live {
            let Some(number) = file_number(&name) else {
                continue;
            };
            all_live.insert(number);
            if let Some(f) = have.get(&number) {
                files.push(f.clone());
                continue;
            }
            if st.unsupported.contains_key(&number) {
                continue;
            }
            match SstFile::open(
                &self.dir.join(name.trim_start_matches('/')),
                number,
                last_key.as_deref(),
            ) {
                Ok(f) => {
                    sigbus::install();
                    let f = Arc::new(f);
                    st.populate.push((f.clone(), 0));
                    files.push(f);
                }
                Err(e) => {
                    tracing::debug!(file = %name, reason = %e.0, "SST file left to RocksDB's reads");
                    st.unsupported.insert(number, e.0);
                }
            }
        }
        st.unsupported.retain(|n, _| all_live.contains(n));
        st.populate.retain(|(f, _)| all_live.contains(&f.number));
        self.unpopulated.store(
            st.populate
                .iter()
                .map(|(f, done)| (f.mapped_bytes() - done) as u64)
                .sum(),
            Ordering::Relaxed,
        );
        st.version = Some(version);
        st.refreshes += 1;
        self.set.store(Arc::new(FileSet::build(files)));
    }

    /// Brings up to `max` more bytes of newly mapped files into the page tables (reading them
    /// from the disk if the page cache lacks them: RocksDB's SstFileWriter drops what it writes
    /// from the page cache, so a bulk-loaded file starts cold), and verifies the blocks there
    /// (`SstFile::verify_range`). True while more remains.
    pub(crate) fn populate_step(&self, max: usize) -> bool {
        let (f, from) = {
            let st = self.refresh.lock();
            match st.populate.first() {
                Some((f, done)) => (f.clone(), *done),
                None => return false,
            }
        };
        let to = (from + max).min(f.mapped_bytes());
        if let Err(e) = f.populate(from, to) {
            tracing::warn!(file = f.number, error = %e, "populating a mapped SST file failed");
        }
        f.verify_range(from, to);
        let mut st = self.refresh.lock();
        if let Some(p) = st.populate.iter_mut().find(|(g, _)| Arc::ptr_eq(g, &f)) {
            p.1 = to;
        }
        st.populate.retain(|(g, done)| *done < g.mapped_bytes());
        self.unpopulated.fetch_sub((to - from) as u64, Ordering::Relaxed);
        !st.populate.is_empty()
    }

    pub fn stats(&self) -> DirectStats {
        let set = self.set.load();
        let st = self.refresh.lock();
        DirectStats {
            files: set.files.len() as u64,
            mapped_bytes: set.files.iter().map(|f| f.mapped_bytes() as u64).sum(),
            blocks: set.files.iter().map(|f| f.blocks() as u64).sum(),
            model_bytes: set.files.iter().map(|f| f.heap_bytes() as u64).sum(),
            model_segments: set.files.iter().map(|f| f.segments() as u64).sum(),
            unsupported_files: st.unsupported.len() as u64,
            unpopulated_bytes: self.unpopulated.load(Ordering::Relaxed),
            refreshes: st.refreshes,
        }
    }
}

/// `/000123.sst` -> 123.
fn file_number(name: &str) -> Option<u64> {
    name.trim_start_matches('/').strip_suffix(".sst")?.parse().ok()
}

/// What happens when a mapped page cannot be read (the disk returns an I/O error for it, or the
/// file was truncated underneath): the kernel raises SIGBUS in the reading thread. Nothing can
/// safely unwind from there, so the process stops, loudly: the handler writes what happened to
/// standard error, then lets SIGBUS take its default action (terminate with a core dump).
/// Committed data is safe (durability never depends on the mapping); a restart runs recovery.
mod sigbus {
    use std::sync::{Once, OnceLock};

    static ONCE: Once = Once::new();
    /// The action installed before ours (in a Rust program, the standard library's stack
    /// overflow check, which it installs for SIGSEGV and SIGBUS before `main`).
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    extern "C" fn report(_sig: libc::c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
        const MSG: &[u8] = b"augur: fatal: SIGBUS while reading a memory-mapped data file (an I/O \
error from the disk, or a file truncated underneath). The process stops; committed data is safe \
and a restart runs recovery.\n";
        // SAFETY: write(2) and sigaction(2) are async-signal-safe; MSG is a static buffer and
        // PREVIOUS was set before this handler was installed.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(libc::SIGBUS, PREVIOUS.get().unwrap_or(&dfl), std::ptr::null_mut());
        }
        // Returning re-runs the faulting access, which raises SIGBUS again under the previous
        // action: the default one terminates the process; Rust's checks for a stack guard page,
        // finds none, restores the default and returns, so the process terminates too.
    }

    /// Installs the report handler once, in front of whatever handler was there (Rust's own
    /// is always there, so installing only over the default action never installed ours).
    pub(super) fn install() {
        ONCE.call_once(|| {
            // SAFETY: plain sigaction calls with zero-initialised structures.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                    return;
                }
                let _ = PREVIOUS.set(old);
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = report as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::file::{Found, SstFile};
    use crate::store::{Store, StoreOptions};
    use proptest::prelude::*;
    use std::sync::OnceLock;

    /// One SST file of 3,000 row versions of table 7 (rowids 1..=3000) written by RocksDB with
    /// Augur's options, and its rows (7 to 207 bytes: one- and two-byte value lengths).
    fn sample() -> &'static (Vec<u8>, Vec<Vec<u8>>) {
        static S: OnceLock<(Vec<u8>, Vec<Vec<u8>>)> = OnceLock::new();
        S.get_or_init(|| {
            ingested(
                (1..=3000u64).map(|r| format!("row {r} {}", "v".repeat((r % 200) as usize)).into_bytes()),
            )
        })
    }

    /// The same rowids with rows of one length (100 bytes), as a fixed-width table has.
    fn uniform_sample() -> &'static (Vec<u8>, Vec<Vec<u8>>) {
        static S: OnceLock<(Vec<u8>, Vec<Vec<u8>>)> = OnceLock::new();
        S.get_or_init(|| ingested((1..=3000u64).map(|r| format!("{r:>100}").into_bytes())))
    }

    /// The bytes of the SST file RocksDB writes for `rows` as rowids 1.. of table 7.
    fn ingested(rows: impl Iterator<Item = Vec<u8>>) -> (Vec<u8>, Vec<Vec<u8>>) {
        {
            let rows: Vec<Vec<u8>> = rows.collect();
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
            store
                .ingest_rows(|put| {
                    for (i, v) in rows.iter().enumerate() {
                        put(&crate::store::row_key(7, i as u64 + 1), v)?;
                    }
                    Ok(())
                })
                .unwrap();
            let sst = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .find(|e| e.file_name().to_string_lossy().ends_with(".sst"))
                .unwrap()
                .path();
            (std::fs::read(sst).unwrap(), rows)
        }
    }

    /// A point read (`SstFile::get`: prefetch at the guessed place, arithmetic inside blocks of
    /// one entry length) returns every row's bytes, on rows of one length and of many; on rows
    /// of one length every block takes the arithmetic path and the guess is exact, elsewhere no
    /// block does.
    #[test]
    fn point_reads_serve_every_row_and_guess_fixed_width_rows_exactly() {
        for (uniform, (bytes, rows)) in [(true, uniform_sample()), (false, sample())] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("000001.sst");
            std::fs::write(&p, bytes).unwrap();
            let f = SstFile::open(&p, 1, None).unwrap();
            let run = &f.runs[0];
            for (i, want) in rows.iter().enumerate() {
                assert_eq!(f.get(run, i as u64 + 1), Found::Value(want), "uniform={uniform}");
            }
            assert_eq!(f.get(run, 3001), Found::Absent);
            assert_eq!(f.get(run, 0), Found::Absent);
            let (strided, blocks) = f.strided_blocks();
            if uniform {
                assert_eq!(strided, blocks, "every block of fixed-width rows has a stride");
                for (i, want) in rows.iter().enumerate() {
                    let at = f.guessed_place(run, i as u64 + 1).expect("a guess");
                    assert_eq!(
                        &bytes[at + 3 + 20..at + 3 + 20 + want.len()],
                        &want[..],
                        "rowid {}",
                        i + 1
                    );
                }
            } else {
                assert_eq!(strided, 0, "blocks of rows of many lengths have no stride");
            }
        }
    }

    /// Once the populate pass has verified a file of rows of one length, point reads of
    /// nearly every row go straight to the entry (no block table), and they return the same
    /// bytes; a file of rows of many lengths has no such blocks.
    #[test]
    fn confirmed_blocks_serve_every_row_without_the_block_table() {
        for (uniform, (bytes, rows)) in [(true, uniform_sample()), (false, sample())] {
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("000001.sst");
            std::fs::write(&p, bytes).unwrap();
            let f = SstFile::open(&p, 1, None).unwrap();
            assert_eq!(
                (f.confirmed_blocks(), f.uniform_blocks()),
                (0, 0),
                "nothing is confirmed before verification"
            );
            f.verify_range(0, bytes.len());
            let run = &f.runs[0];
            let exact = (1..=rows.len() as u64).filter(|&r| f.is_exact(run, r)).count();
            if uniform {
                let (blocks, confirmed) = (f.blocks(), f.confirmed_blocks());
                assert!(
                    confirmed + 2 >= blocks,
                    "{confirmed} of {blocks} blocks confirmed"
                );
                assert!(
                    exact * 10 >= rows.len() * 9,
                    "{exact} of {} rows exact",
                    rows.len()
                );
                // One progression over the whole file: the first anchor places every
                // confirmed block.
                assert_eq!(f.uniform_blocks(), confirmed);
            } else {
                assert_eq!((f.confirmed_blocks(), exact, f.uniform_blocks()), (0, 0, 0));
            }
            for (i, want) in rows.iter().enumerate() {
                assert_eq!(f.get(run, i as u64 + 1), Found::Value(want), "uniform={uniform}");
            }
            assert_eq!(f.get(run, rows.len() as u64 + 1), Found::Absent);
            assert_eq!(f.get(run, 0), Found::Absent);
        }
    }

    #[test]
    fn an_intact_file_serves_every_row() {
        let (bytes, rows) = sample();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000001.sst");
        std::fs::write(&p, bytes).unwrap();
        let f = SstFile::open(&p, 1, None).unwrap();
        assert_eq!(f.runs.len(), 1);
        let run = &f.runs[0];
        assert_eq!((run.table, run.lo, run.hi), (7, 1, 3000));
        for (i, want) in rows.iter().enumerate() {
            assert_eq!(f.seek(run, i as u64 + 1).0, Found::Value(want));
        }
        assert_eq!(f.seek(run, 3001).0, Found::Absent);
        // Through a cursor: every row in order, every third row (gaps inside a block and
        // across blocks), each answer equal to the row's bytes.
        for step in [1, 3, 97] {
            let (first, c) = f.seek(run, 1);
            assert_eq!(first, Found::Value(&rows[0]));
            let mut c = c.expect("a cursor at the first block");
            let mut r = 1 + step;
            let mut moved = 0;
            while r <= 3000 {
                match c.next(r) {
                    Some(got) => assert_eq!(got, Found::Value(&rows[r as usize - 1]), "rowid {r}"),
                    None => {
                        // Past the next block: a fresh seek.
                        moved += 1;
                        let (got, nc) = f.seek(run, r);
                        assert_eq!(got, Found::Value(&rows[r as usize - 1]), "rowid {r}");
                        c = nc.expect("a cursor");
                    }
                }
                r += step;
            }
            assert_eq!(c.next(3001), None, "past the run");
            if step == 1 {
                assert_eq!(moved, 0, "adjacent rows never need a fresh seek");
            }
        }
    }

    /// The populate pass's verification (`SstFile::verify_range`, a step at a time) marks every
    /// block the steps cover, and reads afterwards serve the same rows.
    #[test]
    fn verifying_ahead_marks_the_blocks_and_serves_the_same_rows() {
        let (bytes, rows) = sample();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000001.sst");
        std::fs::write(&p, bytes).unwrap();
        let f = SstFile::open(&p, 1, None).unwrap();
        let blocks = f.unverified_blocks();
        assert!(blocks > 10, "{blocks} blocks");
        // Steps that end inside blocks: a block is verified by the step it starts in.
        let step = 5000;
        f.verify_range(0, step);
        let left = f.unverified_blocks();
        assert!(
            left < blocks && left > 0,
            "{left} of {blocks} left after the first step"
        );
        for from in (step..bytes.len()).step_by(step) {
            f.verify_range(from, from + step);
        }
        assert_eq!(f.unverified_blocks(), 0);
        let run = &f.runs[0];
        for (i, want) in rows.iter().enumerate() {
            assert_eq!(f.seek(run, i as u64 + 1).0, Found::Value(want));
        }
    }

    /// The file set's sorted lookups agree with its point lookups, for rowids in and out of the
    /// file, in runs and with gaps.
    #[test]
    fn sorted_lookups_equal_point_lookups() {
        let (bytes, _) = sample();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("000001.sst");
        std::fs::write(&p, bytes).unwrap();
        let set = super::FileSet::build(vec![std::sync::Arc::new(SstFile::open(&p, 1, None).unwrap())]);
        let mut rowids: Vec<u64> = (0..3100).filter(|r| r % 7 != 3).collect();
        rowids.extend([5000, 9000]);
        for table in [6, 7, 8] {
            let mut got = Vec::new();
            set.get_sorted(table, &rowids, |i, l| got.push((rowids[i], l)));
            assert_eq!(got.len(), rowids.len());
            for (r, l) in got {
                assert_eq!(l, set.get(table, r), "table {table} rowid {r}");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Damage anywhere (data blocks, index, metaindex, properties, footer): opening the file
        /// and reading every row (by seek, by point read, through a cursor; with or without the
        /// blocks verified and confirmed ahead) never panics and never returns bytes other than
        /// the row's.
        #[test]
        fn damaged_files_never_give_wrong_bytes(
            flips in proptest::collection::vec((0.0f64..1.0, 1u8..=255), 1..4),
            tail in proptest::bool::ANY,
            ahead in proptest::bool::ANY,
            uniform in proptest::bool::ANY,
        ) {
            // Rows of one length are the ones whose blocks verification confirms.
            let (bytes, rows) = if uniform { uniform_sample() } else { sample() };
            let mut b = bytes.clone();
            for (at, x) in flips {
                // Half the cases hit the last 10% of the file, where the metadata lives.
                let from = if tail { b.len() * 9 / 10 } else { 0 };
                let i = from + ((b.len() - from) as f64 * at) as usize;
                let i = i.min(b.len() - 1);
                b[i] ^= x;
            }
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("000001.sst");
            std::fs::write(&p, &b).unwrap();
            if let Ok(f) = SstFile::open(&p, 1, None) {
                // Half the cases verify every block ahead, as the populate pass does.
                if ahead {
                    f.verify_range(0, b.len());
                }
                for run in &f.runs {
                    let mut cursor = None;
                    for r in run.lo.saturating_sub(2)..=run.hi.saturating_add(2).min(4000) {
                        // Each rowid by a fresh seek and through the cursor of the one before.
                        let (found, c) = f.seek(run, r);
                        let point = f.get(run, r);
                        let near = cursor.as_mut().and_then(|c: &mut super::Cursor<'_>| c.next(r));
                        if c.is_some() {
                            cursor = c;
                        }
                        for got in [Some(found), Some(point), near].into_iter().flatten() {
                            if let Found::Value(v) = got {
                                prop_assert_eq!(run.table, 7);
                                prop_assert!(r >= 1 && (r as usize) <= rows.len(), "rowid {} served", r);
                                prop_assert_eq!(v, &rows[r as usize - 1][..]);
                            }
                        }
                    }
                }
            }
        }
    }
}
