//! fault_test: concurrent durable writers while the disk fails under them (libfiu-injected
//! errors on fdatasync, write, pwrite, pread, open, rename, and a full tmpfs), the engine
//! recovering by itself; then a clean reopen, checking that every acknowledged commit is
//! present, no commit answered with a definite error is, no transaction is torn, and the index
//! equals the rows. The model follows `crash_test`.
//!
//! The parent mounts a small tmpfs for the database and runs each cycle's child under
//! `fiu-run -x` (Debian's fiu-utils; scripts/setup installs it). The child's writer threads own
//! disjoint keys; each logs the transaction's writes before `commit()` and its answer after:
//! acknowledged, definite error, or unknown outcome (08007). The log is a shared memory map, so
//! logging makes no system call for libfiu to fail. An injector thread turns one kind of fault
//! on and off at random moments (or fills the file system and frees it again). At the end of
//! the run the child turns faults off, waits until the engine has recovered, proves that a
//! write goes through without a restart, and closes. The parent then reopens the database and
//! compares it with the log: a key may hold its last acknowledged value or that of a later
//! unknown-outcome transaction, never a definite error's value; an unknown transaction's
//! writes are all there or none.

use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use augur::{ColumnDef, DataType, Database, Key, KeyRange, Options, TableDef, Value};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Parser, Debug)]
#[command(
    about = "Disk faults under durable commits; verify nothing acknowledged is lost, nothing refused appears"
)]
struct Args {
    /// Number of fault/recover/reopen cycles.
    #[arg(long, default_value_t = 100)]
    cycles: u64,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Writer threads in the child.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Keys in the table.
    #[arg(long, default_value_t = 2000)]
    keys: i64,
    /// Longest time the child writes under faults, milliseconds.
    #[arg(long, default_value_t = 400)]
    max_run_ms: u64,
    /// Size of the tmpfs the database lives on, MiB.
    #[arg(long, default_value_t = 64)]
    fs_mib: u64,
    /// Only this fault kind (default: one drawn at random per cycle).
    #[arg(long)]
    only: Option<String>,
    /// Never draw these fault kinds (comma-separated).
    #[arg(long, value_delimiter = ',')]
    skip: Vec<String>,
    /// Internal: run as the workload child.
    #[arg(long, hide = true)]
    child: bool,
    #[arg(long, hide = true)]
    dir: Option<PathBuf>,
    #[arg(long, hide = true)]
    log: Option<PathBuf>,
    #[arg(long, hide = true, default_value = "none")]
    fault: String,
    #[arg(long, hide = true, default_value_t = 0)]
    first_txid: u64,
}

const TABLE: &str = "kv";
const LOG_BYTES: usize = 64 << 20;
/// The fault kinds a cycle draws from: a libfiu failure point, a full file system, or none.
const FAULTS: [&str; 8] = [
    "posix/io/sync/fdatasync",
    "posix/io/rw/write",
    "posix/io/rw/pwrite",
    "posix/io/rw/pread",
    "posix/io/oc/open",
    "posix/io/dir/rename",
    "enospc",
    "none",
];

fn options() -> Options {
    Options {
        sync_commits: true,
        checkpoint_every: 3000,
        maintenance_interval: Duration::from_millis(5),
        row_cache_bytes: 4 << 20,
        resume_free_bytes: 4 << 20,
        // A write RocksDB stops for good (a flush failed on the full tmpfs) ends within a
        // cycle's time.
        stalled_write_limit: Duration::from_secs(1),
        store: augur::store::StoreOptions {
            // Small memtables: flushes (and their failures) happen within a short run.
            write_buffer_bytes: 1 << 20,
            block_cache_bytes: 4 << 20,
            ..Default::default()
        },
        ..Options::default()
    }
}

fn ensure_tables(db: &Database) -> augur::Result<()> {
    db.create_table_if_not_exists(TableDef::new(
        TABLE,
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Int8),
            ColumnDef::new("pad", DataType::Text(None)),
        ],
        &["k"],
    )?)?;
    db.create_table_if_not_exists(TableDef::new(
        "probe",
        vec![ColumnDef::new("k", DataType::Int8)],
        &["k"],
    )?)?;
    Ok(())
}

/// libfiu's control functions, present in a process started by `fiu-run -x`.
mod fiu {
    use super::*;
    type Enable = unsafe extern "C" fn(*const c_char, c_int, *mut c_void, c_uint) -> c_int;
    type Disable = unsafe extern "C" fn(*const c_char) -> c_int;

    fn sym(name: &CStr) -> anyhow::Result<*mut c_void> {
        // SAFETY: dlsym with RTLD_DEFAULT and a valid C string.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        anyhow::ensure!(
            !p.is_null(),
            "libfiu is not loaded (the child must run under fiu-run -x)"
        );
        Ok(p)
    }

    pub fn enable(name: &str, errno: i32) -> anyhow::Result<()> {
        // SAFETY: fiu_enable's C signature; libfiu copies the name.
        let f = unsafe { std::mem::transmute::<*mut c_void, Enable>(sym(c"fiu_enable")?) };
        let n = CString::new(name)?;
        anyhow::ensure!(
            unsafe { f(n.as_ptr(), 1, errno as usize as *mut c_void, 0) } == 0,
            "fiu_enable {name}"
        );
        Ok(())
    }

    pub fn disable(name: &str) -> anyhow::Result<()> {
        // SAFETY: fiu_disable's C signature.
        let f = unsafe { std::mem::transmute::<*mut c_void, Disable>(sym(c"fiu_disable")?) };
        let n = CString::new(name)?;
        unsafe { f(n.as_ptr()) };
        Ok(())
    }
}

/// Lines appended to a shared memory map: no system call, so no failure point fails them, and
/// the parent reads them from the file after the child exits.
struct Log {
    map: memmap2::MmapMut,
    at: AtomicUsize,
}

impl Log {
    fn line(&self, s: &str) {
        let b = s.as_bytes();
        let at = self.at.fetch_add(b.len() + 1, Ordering::Relaxed);
        assert!(at + b.len() < self.map.len(), "fault_test log full");
        // SAFETY: each writer copies into the range it reserved; ranges never overlap.
        unsafe {
            let p = self.map.as_ptr() as *mut u8;
            std::ptr::copy_nonoverlapping(b.as_ptr(), p.add(at), b.len());
            *p.add(at + b.len()) = b'\n';
        }
    }
}

fn child(args: &Args) -> anyhow::Result<()> {
    let dir = args.dir.clone().expect("--dir");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(args.log.as_ref().expect("--log"))?;
    // SAFETY: the parent created the file for this child alone and reads it after the exit.
    let map = unsafe { memmap2::MmapMut::map_mut(&file)? };
    let log = Arc::new(Log {
        map,
        at: AtomicUsize::new(0),
    });
    let db = Database::open(&dir, options())?;
    ensure_tables(&db)?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for th in 0..args.threads {
        let (db, log, stop) = (db.clone(), log.clone(), stop.clone());
        let (threads, keys) = (args.threads, args.keys);
        let seed = args.seed ^ args.first_txid.wrapping_mul(31) ^ th;
        let first = args.first_txid;
        handles.push(std::thread::spawn(move || {
            let mut rng = StdRng::seed_from_u64(seed);
            let per_thread = keys / threads as i64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let txid = first + n * threads + th;
                n += 1;
                let size = if rng.random_ratio(1, 50) {
                    rng.random_range(50..200)
                } else {
                    rng.random_range(1..10)
                };
                let mut writes: Vec<(i64, Option<i64>)> = Vec::new();
                let mut seen = HashSet::new();
                for i in 0..size {
                    let k = rng.random_range(0..per_thread) * threads as i64 + th as i64;
                    if seen.insert(k) {
                        let v = (!rng.random_ratio(1, 4)).then_some((txid * 1000 + i) as i64);
                        writes.push((k, v));
                    }
                }
                let mut tx = db.begin();
                let mut ok = true;
                for (k, v) in &writes {
                    let r = match v {
                        Some(v) => tx
                            .upsert(
                                TABLE,
                                vec![Value::Int(*k), Value::Int(*v), Value::Text("x".repeat(40))],
                            )
                            .map(|_| ()),
                        None => tx.delete(TABLE, &Key::Int(*k)).map(|_| ()),
                    };
                    if r.is_err() {
                        ok = false; // a read failed, or the engine was replaced: nothing committed
                        break;
                    }
                }
                if !ok {
                    drop(tx);
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
                let intent: Vec<String> = writes
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={v}"),
                        None => format!("{k}=D"),
                    })
                    .collect();
                log.line(&format!("I {th} {txid} {}", intent.join(" ")));
                match tx.commit() {
                    Ok(()) => log.line(&format!("A {th} {txid}")),
                    Err(e) if e.is_outcome_unknown() => log.line(&format!("U {th} {txid}")),
                    Err(e) => {
                        log.line(&format!("D {th} {txid} {}", e.sqlstate()));
                        std::thread::sleep(Duration::from_millis(2));
                    }
                }
            }
        }));
    }

    // The injector: the cycle's fault on and off at random moments.
    let mut rng = StdRng::seed_from_u64(args.seed ^ args.first_txid);
    let t0 = Instant::now();
    let run = Duration::from_millis(rng.random_range(args.max_run_ms / 2..=args.max_run_ms));
    while t0.elapsed() < run {
        std::thread::sleep(Duration::from_millis(rng.random_range(5..60)));
        let hold = Duration::from_millis(rng.random_range(1..40));
        match args.fault.as_str() {
            "none" => {}
            "enospc" => {
                let ballast = dir.parent().expect("db dir has a parent").join("ballast");
                fill(&ballast);
                std::thread::sleep(hold);
                let _ = std::fs::remove_file(&ballast);
            }
            point => {
                fiu::enable(point, libc::EIO)?;
                std::thread::sleep(hold);
                fiu::disable(point)?;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| anyhow::anyhow!("writer panicked"))?;
    }
    // Faults are off: the engine must come back by itself and take writes.
    let t1 = Instant::now();
    let mut probe = 0;
    loop {
        let s = db.stats();
        if !s.storage_degraded {
            match db.insert("probe", vec![Value::Int(args.first_txid as i64 + probe)]) {
                Ok(_) => break,
                Err(e) if t1.elapsed() < Duration::from_secs(60) => {
                    probe += 1;
                    let _ = e;
                }
                Err(e) => anyhow::bail!("writes did not resume after the faults stopped: {e}"),
            }
        }
        anyhow::ensure!(
            t1.elapsed() < Duration::from_secs(60),
            "the engine did not recover: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    log.line(&format!("S recoveries={}", db.stats().storage_recoveries));
    // A fault can still surface after the probe (a compaction that read during a fault fails
    // when it ends): then the close fails as any write would, and the parent's open recovers as
    // after a crash, checked like every other cycle.
    if let Err(e) = db.close() {
        anyhow::ensure!(db.stats().storage_degraded, "close failed: {e}");
        log.line("S close_failed");
    }
    Ok(())
}

/// Writes zeros to `path` until the file system is full.
fn fill(path: &Path) {
    use std::io::Write;
    let Ok(mut f) = std::fs::File::create(path) else {
        return;
    };
    let chunk = vec![0u8; 256 << 10];
    while f.write_all(&chunk).is_ok() {}
}

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[derive(Default)]
struct Totals {
    lost: u64,
    phantom: u64,
    torn: u64,
    index_mismatch: u64,
    acked: u64,
    definite: u64,
    unknown: u64,
    unknown_applied: u64,
    recoveries: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.child {
        return child(&args);
    }
    if args.threads == 0 || args.keys < args.threads as i64 {
        anyhow::bail!("--threads must be at least 1 and --keys at least --threads");
    }
    // Prerequisites fail the run; they never skip it.
    let fiu_ok = Command::new("fiu-run")
        .arg("-x")
        .arg("true")
        .status()
        .map(|s| s.success());
    anyhow::ensure!(
        matches!(fiu_ok, Ok(true)),
        "fiu-run is missing or broken (Debian's fiu-utils and libfiu-dev; run scripts/setup)"
    );
    let fs = Tmpfs(tempfile::tempdir()?);
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={}m", args.fs_mib), "tmpfs"])
        .arg(fs.0.path())
        .status()?;
    anyhow::ensure!(st.success(), "mounting a tmpfs failed (fault_test needs root)");
    let dir = fs.0.path().join("db");
    let logs = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    let mut model: HashMap<i64, i64> = HashMap::new();
    let mut t = Totals::default();
    let mut by_fault: HashMap<&str, u64> = HashMap::new();
    // Every answer so far, for diagnostics.
    let mut answers: HashMap<u64, char> = HashMap::new();
    let started = Instant::now();

    for s in &args.skip {
        anyhow::ensure!(FAULTS.contains(&s.as_str()), "unknown fault {s}");
    }
    let drawable: Vec<&str> = FAULTS
        .iter()
        .copied()
        .filter(|f| !args.skip.iter().any(|s| s == f))
        .collect();
    anyhow::ensure!(!drawable.is_empty(), "--skip leaves no fault to draw");
    for cycle in 0..args.cycles {
        let drawn = drawable[rng.random_range(0..drawable.len())];
        let fault = match &args.only {
            Some(f) => FAULTS
                .iter()
                .copied()
                .find(|x| x == f)
                .ok_or_else(|| anyhow::anyhow!("unknown fault {f}"))?,
            None => drawn,
        };
        *by_fault.entry(fault).or_default() += 1;
        let log_path = logs.path().join("log");
        {
            let f = std::fs::File::create(&log_path)?;
            f.set_len(LOG_BYTES as u64)?;
        }
        let mut ch = Command::new("fiu-run")
            .args(["-x", "-f", ""])
            .arg(&exe)
            .args(["--child", "--fault", fault])
            .arg("--dir")
            .arg(&dir)
            .arg("--log")
            .arg(&log_path)
            .args(["--seed", &args.seed.to_string()])
            .args(["--threads", &args.threads.to_string()])
            .args(["--keys", &args.keys.to_string()])
            .args(["--max-run-ms", &args.max_run_ms.to_string()])
            .args(["--first-txid", &((cycle + 1) * 10_000_000).to_string()])
            .env("RUST_LOG", "off")
            .spawn()?;
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = ch.try_wait()? {
                break s;
            }
            if t0.elapsed() > Duration::from_secs(180) {
                let _ = ch.kill();
                anyhow::bail!("cycle {cycle} ({fault}): the child hung");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        anyhow::ensure!(
            status.success(),
            "cycle {cycle} ({fault}): the child failed: {status}"
        );
        let _ = std::fs::remove_file(dir.parent().expect("parent").join("ballast"));

        // The log: per thread, transactions in order with their intents and answers.
        let bytes = std::fs::read(&log_path)?;
        let mut intents: HashMap<u64, Vec<(i64, Option<i64>)>> = HashMap::new();
        let mut order: Vec<(u64, u64)> = Vec::new();
        let mut answer: HashMap<u64, char> = HashMap::new();
        for line in bytes.split(|&b| b == b'\n') {
            if line.is_empty() || line.contains(&0) {
                continue;
            }
            let line = String::from_utf8_lossy(line);
            let mut p = line.split(' ');
            let tag = p.next().unwrap_or("");
            match tag {
                "I" => {
                    let th: u64 = p.next().unwrap_or("0").parse()?;
                    let txid: u64 = p.next().unwrap_or("0").parse()?;
                    let mut w = Vec::new();
                    for kv in p {
                        let (k, v) = kv
                            .split_once('=')
                            .ok_or_else(|| anyhow::anyhow!("bad line {line}"))?;
                        w.push((k.parse()?, if v == "D" { None } else { Some(v.parse()?) }));
                    }
                    intents.insert(txid, w);
                    order.push((th, txid));
                }
                "A" | "U" | "D" => {
                    let _th = p.next();
                    let txid: u64 = p.next().unwrap_or("0").parse()?;
                    answer.insert(txid, tag.chars().next().expect("tag"));
                }
                "S" => {
                    if let Some(n) = p.next().and_then(|x| x.strip_prefix("recoveries=")) {
                        t.recoveries += n.parse::<u64>()?;
                    }
                }
                _ => {}
            }
        }
        answers.extend(answer.iter().map(|(k, v)| (*k, *v)));
        for (_, txid) in &order {
            answers.entry(*txid).or_insert('U');
        }
        // What each key may hold: its acknowledged value, or a later unknown transaction's.
        let mut allowed: HashMap<i64, Vec<Option<i64>>> = HashMap::new();
        let mut refused: HashSet<i64> = HashSet::new(); // values of definite errors
        let mut last_writer: HashMap<i64, u64> = HashMap::new();
        for (_, txid) in &order {
            let a = answer.get(txid).copied().unwrap_or('U');
            for (k, v) in &intents[txid] {
                match a {
                    'A' => {
                        allowed.insert(*k, vec![*v]);
                        last_writer.insert(*k, *txid);
                    }
                    'U' => {
                        allowed
                            .entry(*k)
                            .or_insert_with(|| vec![model.get(k).copied()])
                            .push(*v);
                        last_writer.insert(*k, *txid);
                    }
                    _ => {
                        if let Some(v) = v {
                            refused.insert(*v);
                        }
                    }
                }
            }
            match a {
                'A' => t.acked += 1,
                'U' => t.unknown += 1,
                _ => t.definite += 1,
            }
        }

        // Reopen cleanly (no fault injection in this process) and compare.
        let db = Database::open(&dir, options())?;
        if !db.wait_for_sweep(Duration::from_secs(60)) {
            anyhow::bail!("cycle {cycle}: the post-crash sweep did not finish");
        }
        if let Err(e) = db.verify_integrity() {
            eprintln!("cycle {cycle} ({fault}): index != rows: {e}");
            t.index_mismatch += 1;
            // Which transaction wrote the newest version of keys the index lacks?
            let tid = db.table(TABLE)?.id;
            let mut shown = 0;
            for k in 0..args.keys {
                let (versions, payload, ckpt) = db.debug_key(TABLE, &Key::Int(k))?;
                let newest_live = versions.last().filter(|v| !v.1).map(|v| v.0);
                if newest_live.is_some() && payload.is_none() && shown < 3 {
                    let r = newest_live.unwrap_or(0);
                    let bytes = db.store().get_row(tid, r)?.unwrap_or_default();
                    let v = augur::types::codec::decode_version(&bytes)?;
                    let val = v.row.as_ref().map(|r| r[1].clone());
                    let txid = match val {
                        Some(Value::Int(x)) => (x / 1000) as u64,
                        _ => 0,
                    };
                    eprintln!(
                        "  key {k}: versions {versions:?} ckpt {ckpt}; newest value {val:?} by txid {txid} (cycle {}): answer {:?}",
                        txid / 10_000_000 - 1,
                        answers.get(&txid)
                    );
                    shown += 1;
                }
            }
        }
        let mut actual: HashMap<i64, i64> = HashMap::new();
        {
            let tx = db.begin();
            for (k, row) in tx.scan(TABLE, KeyRange::all())? {
                let (Key::Int(k), Value::Int(v)) = (k, &row[1]) else {
                    anyhow::bail!("unexpected row shape");
                };
                actual.insert(k, *v);
                if tx.get(TABLE, &Key::Int(k))?.is_none() {
                    t.index_mismatch += 1;
                }
            }
        }
        let keys: HashSet<i64> = model
            .keys()
            .chain(actual.keys())
            .chain(allowed.keys())
            .copied()
            .collect();
        for k in keys {
            let a = actual.get(&k).copied();
            let ok = match allowed.get(&k) {
                Some(vs) => vs.contains(&a),
                None => model.get(&k).copied() == a,
            };
            if !ok {
                if a.is_some_and(|v| refused.contains(&v)) {
                    eprintln!("cycle {cycle} ({fault}): key {k} holds {a:?}, written by a commit answered with a definite error");
                    t.phantom += 1;
                } else {
                    eprintln!(
                        "cycle {cycle} ({fault}): key {k}: allowed {:?}, found {a:?}",
                        allowed
                            .get(&k)
                            .cloned()
                            .unwrap_or_else(|| vec![model.get(&k).copied()])
                    );
                    // What is stored for the key, and what this cycle's transactions did to it.
                    let (versions, payload, ckpt) = db.debug_key(TABLE, &Key::Int(k))?;
                    let writes: Vec<String> = order
                        .iter()
                        .filter_map(|(_, txid)| {
                            let w = intents[txid].iter().find(|(kk, _)| *kk == k)?;
                            Some(format!(
                                "{txid}:{}={:?}",
                                answer.get(txid).copied().unwrap_or('U'),
                                w.1
                            ))
                        })
                        .collect();
                    eprintln!(
                        "  versions {versions:?} index {payload:?} ckpt {ckpt} recovered_unclean {}; writes {}",
                        db.stats().recovered_unclean,
                        writes.join(" ")
                    );
                    t.lost += 1;
                }
            }
        }
        // An unknown transaction is all there or not at all (its puts no later commit overwrote).
        for (_, txid) in &order {
            if answer.get(txid).copied().unwrap_or('U') != 'U' {
                continue;
            }
            let own: Vec<(i64, i64)> = intents[txid]
                .iter()
                .filter(|(k, _)| last_writer.get(k) == Some(txid))
                .filter_map(|(k, v)| v.map(|v| (*k, v)))
                .collect();
            let applied = own.iter().filter(|(k, v)| actual.get(k) == Some(v)).count();
            if applied > 0 {
                t.unknown_applied += 1;
            }
            if applied > 0 && applied < own.len() {
                eprintln!(
                    "cycle {cycle} ({fault}): transaction {txid} is partially visible ({applied} of {})",
                    own.len()
                );
                t.torn += 1;
            }
        }
        model = actual;
        db.close()?;
        drop(db);
        if (cycle + 1) % 50 == 0 {
            eprintln!(
                "fault_test: {} cycles, {} acknowledged, {} definite errors, {} unknown, {} recoveries, {:.0}s",
                cycle + 1,
                t.acked,
                t.definite,
                t.unknown,
                t.recoveries,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let mut faults: Vec<_> = by_fault.into_iter().collect();
    faults.sort();
    println!(
        "acknowledged_commits={} definite_errors={} unknown_outcomes={} unknown_applied={} recoveries={} keys={} seconds={:.1} faults={:?}",
        t.acked,
        t.definite,
        t.unknown,
        t.unknown_applied,
        t.recoveries,
        model.len(),
        started.elapsed().as_secs_f64(),
        faults
    );
    println!(
        "cycles={} lost={} phantom={} torn={} index_mismatch={}",
        args.cycles, t.lost, t.phantom, t.torn, t.index_mismatch
    );
    if t.lost + t.phantom + t.torn + t.index_mismatch > 0 {
        std::process::exit(1);
    }
    Ok(())
}
