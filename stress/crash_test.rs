//! crash_test: SIGKILL a process in the middle of durable commits, reopen, and check that every
//! acknowledged commit survived, no transaction is half-visible, and every index (the primary
//! and the secondary index on `kv.v`) equals the rows.
//!
//! The parent starts a child that runs a seeded random transactional workload from several
//! threads (each owns a disjoint slice of the keys, so the expected state is exact). Before each
//! commit the child prints the transaction's writes ("intent"); after `commit()` returns it
//! prints an acknowledgement. The parent kills the child at a random moment, reopens the
//! database and compares it with the acknowledged model: a key may differ from the model only
//! if the thread's last, unacknowledged transaction wrote it, and then all of that
//! transaction's writes must be present (or none).
//!
//! A further child thread calls `nextval` on a sequence and prints each value it got; across
//! all cycles no value may be printed twice (a value handed out before a kill must never be
//! handed out again after the reopen).
//!
//! Two more child threads write through SQL to a parent and a child table joined by a foreign
//! key with ON DELETE CASCADE (inserting and deleting parents, inserting, re-pointing and
//! deleting children, over few keys so that they meet); after each reopen no child row may
//! lack its parent (`orphans`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use augur::{
    ColumnDef, DataType, Database, IndexDef, Key, KeyRange, Options, SequenceDef, Session, TableDef, Value,
};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Parser, Debug)]
#[command(about = "Kill -9 during durable commits; verify nothing acknowledged is lost or torn")]
struct Args {
    /// Number of kill/reopen cycles.
    #[arg(long, default_value_t = 200)]
    cycles: u64,
    /// Database directory (default: a fresh temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Writer threads in the child.
    #[arg(long, default_value_t = 4)]
    threads: u64,
    /// Keys in the table.
    #[arg(long, default_value_t = 4000)]
    keys: i64,
    /// Longest time the child runs before it is killed, milliseconds.
    #[arg(long, default_value_t = 400)]
    max_run_ms: u64,
    /// Internal: run as the workload child.
    #[arg(long, hide = true)]
    child: bool,
    #[arg(long, hide = true, default_value_t = 0)]
    first_txid: u64,
}

const TABLE: &str = "kv";

fn options() -> Options {
    Options {
        sync_commits: true,
        // Small thresholds so that checkpoints, garbage collection and tombstone rules are
        // exercised within each short run.
        checkpoint_every: 3000,
        maintenance_interval: Duration::from_millis(5),
        row_cache_bytes: 4 << 20,
        ..Options::default()
    }
}

fn ensure_table(db: &Database) -> augur::Result<()> {
    db.create_table_if_not_exists(TableDef::new(
        TABLE,
        vec![
            ColumnDef::new("k", DataType::Int8),
            ColumnDef::new("v", DataType::Int8),
            ColumnDef::new("pad", DataType::Text(None)),
        ],
        &["k"],
    )?)?;
    // Every write changes `v`: the index's entries move with each commit, and open loads them
    // from the checkpoint's form and applies what came after (checked by verify_integrity).
    db.create_index(
        TABLE,
        IndexDef {
            name: "kv_v".into(),
            columns: vec![1],
            unique: false,
        },
        true,
    )?;
    db.create_sequence(SequenceDef::new(SEQUENCE), true)?;
    let mut s = Session::new(db.clone());
    s.execute(
        "CREATE TABLE IF NOT EXISTS fk_parent (id bigint PRIMARY KEY)",
        &[],
    )?;
    s.execute(
        "CREATE TABLE IF NOT EXISTS fk_child (id bigint PRIMARY KEY, p bigint NOT NULL REFERENCES fk_parent (id) ON DELETE CASCADE)",
        &[],
    )?;
    Ok(())
}

const SEQUENCE: &str = "crash_seq";

/// Parent keys the foreign-key writers choose from (few, so that their writes meet); child keys
/// are eight times as many.
const FK_PARENTS: i64 = 64;

/// One foreign-key writer of the child: random SQL statements on fk_parent and fk_child, each
/// acknowledged by an `F` line once it committed. A statement the foreign key refuses (23503),
/// or that loses a race (40001, 40P01), is expected.
fn fk_writer(
    db: Database,
    seed: u64,
    out: std::sync::Arc<std::sync::Mutex<std::io::Stdout>>,
) -> anyhow::Result<()> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut s = Session::new(db);
    loop {
        let p = rng.random_range(0..FK_PARENTS);
        let c = rng.random_range(0..FK_PARENTS * 8);
        let sql = match rng.random_range(0..5) {
            0 | 1 => format!("INSERT INTO fk_parent VALUES ({p}) ON CONFLICT DO NOTHING"),
            2 => format!("DELETE FROM fk_parent WHERE id = {p}"),
            3 => format!(
                "INSERT INTO fk_child VALUES ({c}, {p}) ON CONFLICT (id) DO UPDATE SET p = EXCLUDED.p"
            ),
            _ => format!("DELETE FROM fk_child WHERE id = {c}"),
        };
        match s.execute(&sql, &[]) {
            Ok(_) => {
                let mut o = out.lock().unwrap();
                writeln!(o, "F")?;
                o.flush()?;
            }
            Err(e) if matches!(e.sqlstate().code(), "23503" | "40001" | "40P01") => {}
            Err(e) => return Err(anyhow::anyhow!("{sql}: {e}")),
        }
    }
}

/// Child rows whose parent row is missing.
fn orphans(db: &Database) -> anyhow::Result<i64> {
    let mut s = Session::new(db.clone());
    let r = s.execute(
        "SELECT count(*) FROM fk_child c WHERE NOT EXISTS (SELECT 1 FROM fk_parent p WHERE p.id = c.p)",
        &[],
    )?;
    match r
        .last()
        .and_then(|r| r.rows().first())
        .and_then(|row| row.first())
    {
        Some(Value::Int(n)) => Ok(*n),
        other => anyhow::bail!("orphan count: {other:?}"),
    }
}

fn child(args: &Args, dir: &Path) -> anyhow::Result<()> {
    let db = Database::open(dir, options())?;
    ensure_table(&db)?;
    let out = std::sync::Arc::new(std::sync::Mutex::new(std::io::stdout()));
    {
        let mut o = out.lock().unwrap();
        writeln!(o, "READY")?;
        o.flush()?;
    }
    let mut handles = Vec::new();
    {
        let db = db.clone();
        let out = out.clone();
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            loop {
                let v = db.nextval(SEQUENCE)?;
                let mut o = out.lock().unwrap();
                writeln!(o, "S {v}")?;
                o.flush()?;
                drop(o);
                std::thread::sleep(Duration::from_micros(200));
            }
        }));
    }
    for w in 0..2u64 {
        let db = db.clone();
        let out = out.clone();
        let seed = args.seed ^ args.first_txid.wrapping_mul(97) ^ (1_000 + w);
        handles.push(std::thread::spawn(move || fk_writer(db, seed, out)));
    }
    for th in 0..args.threads {
        let db = db.clone();
        let out = out.clone();
        let threads = args.threads;
        let keys = args.keys;
        let seed = args.seed ^ (args.first_txid.wrapping_mul(31)) ^ th;
        let first = args.first_txid;
        handles.push(std::thread::spawn(move || -> anyhow::Result<()> {
            let mut rng = StdRng::seed_from_u64(seed);
            let per_thread = keys / threads as i64;
            for n in 0.. {
                let txid = first + n * threads + th;
                let size = if rng.random_ratio(1, 50) {
                    rng.random_range(100..400)
                } else {
                    rng.random_range(1..12)
                };
                let mut writes: Vec<(i64, Option<i64>)> = Vec::new();
                let mut seen = std::collections::HashSet::new();
                for i in 0..size {
                    let k = rng.random_range(0..per_thread) * threads as i64 + th as i64;
                    if !seen.insert(k) {
                        continue;
                    }
                    let v = if rng.random_ratio(1, 4) {
                        None
                    } else {
                        Some((txid * 1000 + i) as i64)
                    };
                    writes.push((k, v));
                }
                let mut tx = db.begin();
                for (k, v) in &writes {
                    match v {
                        Some(v) => {
                            tx.upsert(
                                TABLE,
                                vec![Value::Int(*k), Value::Int(*v), Value::Text("x".repeat(40))],
                            )?;
                        }
                        None => {
                            tx.delete(TABLE, &Key::Int(*k))?;
                        }
                    }
                }
                let intent: Vec<String> = writes
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={v}"),
                        None => format!("{k}=D"),
                    })
                    .collect();
                {
                    let mut o = out.lock().unwrap();
                    writeln!(o, "I {th} {txid} {}", intent.join(" "))?;
                    o.flush()?;
                }
                tx.commit()?;
                {
                    let mut o = out.lock().unwrap();
                    writeln!(o, "A {th} {txid}")?;
                    o.flush()?;
                }
            }
            Ok(())
        }));
    }
    for h in handles {
        h.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
    }
    Ok(())
}

#[derive(Default)]
struct Totals {
    lost: u64,
    torn: u64,
    index_mismatch: u64,
    acked: u64,
    inflight_applied: u64,
    inflight_absent: u64,
    swept: u64,
    /// Tables whose secondary indexes the reopens loaded from their checkpoint's form, and
    /// rebuilt from the rows (no checkpoint yet, or a form refused).
    secondary_loaded: u64,
    secondary_rebuilt: u64,
    seq_values: u64,
    seq_duplicates: u64,
    fk_statements: u64,
    orphans: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().join("db")
        }
    };
    if args.child {
        return child(&args, &dir);
    }
    if args.threads == 0 || args.keys < args.threads as i64 {
        anyhow::bail!("--threads must be at least 1 and --keys at least --threads");
    }

    let exe = std::env::current_exe()?;
    let mut rng = StdRng::seed_from_u64(args.seed);
    // The acknowledged state of every key.
    let mut model: HashMap<i64, i64> = HashMap::new();
    let mut t = Totals::default();
    let mut seq_seen: std::collections::HashSet<i64> = Default::default();
    let started = Instant::now();

    for cycle in 0..args.cycles {
        let mut ch = Command::new(&exe)
            .arg("--child")
            .arg("--dir")
            .arg(&dir)
            .arg("--seed")
            .arg(args.seed.to_string())
            .arg("--threads")
            .arg(args.threads.to_string())
            .arg("--keys")
            .arg(args.keys.to_string())
            .arg("--first-txid")
            .arg(((cycle + 1) * 10_000_000).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdout = ch.stdout.take().expect("piped");
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            // Only newline-terminated lines count: the kill can cut the last line short, and a
            // cut intent line belongs to a transaction whose commit had not started.
            let mut lines = Vec::new();
            let mut r = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if buf.last() != Some(&b'\n') => break,
                    Ok(_) => {}
                }
                let line = String::from_utf8_lossy(&buf[..buf.len() - 1]).into_owned();
                if line == "READY" {
                    let _ = ready_tx.send(());
                }
                lines.push(line);
            }
            lines
        });
        if ready_rx.recv_timeout(Duration::from_secs(60)).is_err() {
            let _ = ch.kill();
            anyhow::bail!("cycle {cycle}: child did not open the database");
        }
        std::thread::sleep(Duration::from_millis(rng.random_range(1..=args.max_run_ms)));
        ch.kill()?; // SIGKILL
        let status = ch.wait()?;
        let lines = reader.join().map_err(|_| anyhow::anyhow!("reader panicked"))?;
        if status.success() {
            anyhow::bail!("cycle {cycle}: child exited by itself: {lines:?}");
        }

        // Per thread: acknowledged transactions, and the last intent that was not acknowledged.
        let mut intents: HashMap<u64, Vec<(i64, Option<i64>)>> = HashMap::new();
        let mut order: Vec<(u64, u64)> = Vec::new(); // (thread, txid) in intent order
        let mut acked: std::collections::HashSet<u64> = Default::default();
        for l in &lines {
            let mut p = l.split(' ');
            match p.next() {
                Some("I") => {
                    let th: u64 = p.next().unwrap_or("0").parse()?;
                    let txid: u64 = p.next().unwrap_or("0").parse()?;
                    let mut w = Vec::new();
                    for kv in p {
                        let (k, v) = kv
                            .split_once('=')
                            .ok_or_else(|| anyhow::anyhow!("bad line {l}"))?;
                        w.push((k.parse()?, if v == "D" { None } else { Some(v.parse()?) }));
                    }
                    intents.insert(txid, w);
                    order.push((th, txid));
                }
                Some("S") => {
                    let v: i64 = p.next().unwrap_or("0").parse()?;
                    t.seq_values += 1;
                    if !seq_seen.insert(v) {
                        eprintln!("cycle {cycle}: sequence value {v} handed out twice");
                        t.seq_duplicates += 1;
                    }
                }
                Some("A") => {
                    let _th: u64 = p.next().unwrap_or("0").parse()?;
                    acked.insert(p.next().unwrap_or("0").parse()?);
                }
                Some("F") => t.fk_statements += 1,
                _ => {}
            }
        }
        let mut inflight: HashMap<u64, u64> = HashMap::new(); // thread -> txid
        for (th, txid) in &order {
            if acked.contains(txid) {
                for (k, v) in &intents[txid] {
                    match v {
                        Some(v) => model.insert(*k, *v),
                        None => model.remove(k),
                    };
                }
                t.acked += 1;
            } else {
                inflight.insert(*th, *txid);
            }
        }

        // Reopen and compare.
        let db = Database::open(&dir, options())?;
        ensure_table(&db)?;
        // Recovery is complete when the post-crash sweep has collected what the crash left.
        if !db.wait_for_sweep(Duration::from_secs(60)) {
            anyhow::bail!("cycle {cycle}: the post-crash sweep did not finish");
        }
        let st = db.stats();
        t.swept += st.swept_versions;
        t.secondary_loaded += st.secondary_loaded;
        t.secondary_rebuilt += st.secondary_rebuilt;
        let n = orphans(&db)?;
        if n > 0 {
            eprintln!("cycle {cycle}: {n} fk_child rows lack their fk_parent row");
            t.orphans += n as u64;
        }
        if let Err(e) = db.verify_integrity() {
            eprintln!("cycle {cycle}: index != rows: {e}");
            t.index_mismatch += 1;
            // Show the history of the first few keys whose index entry differs from the rows.
            let tx = db.begin();
            let mut shown = 0;
            for k in 0..args.keys {
                if shown >= 3 {
                    break;
                }
                let (versions, payload, ckpt) = db.debug_key(TABLE, &Key::Int(k))?;
                let newest_live = versions.last().filter(|v| !v.1).map(|v| v.0);
                let indexed = payload.filter(|p| p >> 63 == 0);
                if newest_live != indexed {
                    eprintln!(
                        "  key {k}: versions (rowid, tombstone, prev) {versions:?}; index payload {payload:?}; checkpoint {ckpt}; model {:?}; visible {:?}",
                        model.get(&k),
                        tx.get(TABLE, &Key::Int(k))?.map(|r| r[1].clone())
                    );
                    shown += 1;
                }
            }
        }
        let mut actual: HashMap<i64, i64> = HashMap::new();
        let tx = db.begin();
        for (k, row) in tx.scan(TABLE, KeyRange::all())? {
            let (Key::Int(k), Value::Int(v)) = (k, &row[1]) else {
                anyhow::bail!("unexpected row shape");
            };
            actual.insert(k, *v);
            // Every key the scan finds is found by a point lookup too.
            if tx.get(TABLE, &Key::Int(k))?.is_none() {
                t.index_mismatch += 1;
            }
        }
        drop(tx);
        let mut differing: Vec<i64> = model
            .keys()
            .chain(actual.keys())
            .filter(|k| model.get(k) != actual.get(k))
            .copied()
            .collect();
        differing.sort();
        differing.dedup();
        // Which in-flight transactions explain the differences?
        for &txid in inflight.values() {
            let w = &intents[&txid];
            let applied = w.iter().filter(|(k, v)| actual.get(k) == v.as_ref()).count();
            let differs = w.iter().any(|(k, v)| model.get(k) != v.as_ref());
            if !differs {
                continue; // a no-op either way
            }
            if applied == w.len() {
                t.inflight_applied += 1;
                for (k, v) in w {
                    match v {
                        Some(v) => model.insert(*k, *v),
                        None => model.remove(k),
                    };
                }
            } else if w
                .iter()
                .any(|(k, v)| actual.get(k) == v.as_ref() && model.get(k) != v.as_ref())
            {
                eprintln!("cycle {cycle}: transaction {txid} is partially visible");
                t.torn += 1;
            } else {
                t.inflight_absent += 1;
            }
        }
        for k in differing {
            if model.get(&k) != actual.get(&k) {
                eprintln!(
                    "cycle {cycle}: key {k}: acknowledged {:?}, found {:?}",
                    model.get(&k),
                    actual.get(&k)
                );
                t.lost += 1;
                // Continue from what is there, so one loss is counted once.
                match actual.get(&k) {
                    Some(v) => model.insert(k, *v),
                    None => model.remove(&k),
                };
            }
        }
        db.close()?;
        drop(db);
        if (cycle + 1) % 50 == 0 {
            eprintln!(
                "crash_test: {} cycles, {} acknowledged commits checked, {:.0}s",
                cycle + 1,
                t.acked,
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "acknowledged_commits={} inflight_applied={} inflight_absent={} swept_versions={} secondary_loaded={} secondary_rebuilt={} keys={} fk_statements={} seconds={:.1}",
        t.acked,
        t.inflight_applied,
        t.inflight_absent,
        t.swept,
        t.secondary_loaded,
        t.secondary_rebuilt,
        model.len(),
        t.fk_statements,
        started.elapsed().as_secs_f64()
    );
    println!(
        "cycles={} lost={} torn={} index_mismatch={} orphans={} sequence_values={} sequence_duplicates={}",
        args.cycles, t.lost, t.torn, t.index_mismatch, t.orphans, t.seq_values, t.seq_duplicates
    );
    // A run whose foreign-key writers never committed checked nothing about them.
    if t.lost + t.torn + t.index_mismatch + t.orphans + t.seq_duplicates > 0
        || t.seq_values == 0
        || t.fk_statements == 0
    {
        std::process::exit(1);
    }
    Ok(())
}
