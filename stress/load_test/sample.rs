//! What the run samples: per-interval latency histograms and windows, the load average, the
//! server process's CPU and RSS, and its metrics endpoint.

use super::*;

/// Latencies of the current sampling interval, per operation; the sampler takes them at each
/// sample (a short lock per operation: the workers share two threads).
pub(crate) struct Interval {
    pub(crate) hist: [Mutex<Histogram<u64>>; 5],
}

impl Interval {
    pub(crate) fn new() -> Interval {
        Interval {
            hist: std::array::from_fn(|_| Mutex::new(new_hist())),
        }
    }

    pub(crate) fn record(&self, op: usize, us: u64) {
        self.hist[op].lock().saturating_record(us);
    }

    /// The interval's histograms, leaving empty ones.
    pub(crate) fn take(&self) -> [Histogram<u64>; 5] {
        std::array::from_fn(|i| {
            let mut h = self.hist[i].lock();
            let out = h.clone();
            h.reset();
            out
        })
    }
}

/// The first window after the warm-up and the last window of the run (5 minutes, or a third
/// of what follows the warm-up): the operations' latencies in each, to compare the end of a soak
/// with its start.
pub(crate) struct Windows {
    pub(crate) secs: f64,
    /// Where the first window starts (the end of the warm-up).
    pub(crate) start: f64,
    pub(crate) run_secs: f64,
    /// (histograms, seconds covered) of the first and of the last window.
    pub(crate) first: ([Histogram<u64>; 5], f64),
    pub(crate) last: ([Histogram<u64>; 5], f64),
}

impl Windows {
    pub(crate) fn new(run_secs: f64, warmup_secs: f64) -> Windows {
        let start = warmup_secs.min(run_secs);
        Windows {
            secs: ((run_secs - start) / 3.0).min(300.0),
            start,
            run_secs,
            first: (std::array::from_fn(|_| new_hist()), 0.0),
            last: (std::array::from_fn(|_| new_hist()), 0.0),
        }
    }

    /// Adds the interval [from, to): to the first window if it lies in it, to the last window
    /// if it starts in it (a sample's timing jitter of a few ms is tolerated).
    pub(crate) fn add(&mut self, from: f64, to: f64, h: &[Histogram<u64>; 5]) {
        let put = |w: &mut ([Histogram<u64>; 5], f64)| {
            for (a, b) in w.0.iter_mut().zip(h) {
                a.add(b).expect("same bounds");
            }
            w.1 += to - from;
        };
        if from >= self.start - 0.5 && to <= self.start + self.secs + 0.5 {
            put(&mut self.first);
        }
        if from >= self.run_secs - self.secs - 0.5 {
            put(&mut self.last);
        }
    }
}

/// The 1-minute load average from /proc/loadavg.
pub(crate) fn load1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// CPU seconds (user + system) the process has used, from /proc/PID/stat.
pub(crate) fn cpu_secs(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // utime and stime are in USER_HZ ticks, which Linux fixes at 100 per second for /proc.
    Some(ticks as f64 / 100.0)
}

pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// One operation over one sampling interval.
#[derive(Serialize, Clone)]
pub(crate) struct OpSample {
    pub(crate) ok: u64,
    pub(crate) per_sec: f64,
    pub(crate) p50_us: u64,
    pub(crate) p99_us: u64,
    pub(crate) max_us: u64,
}

#[derive(Serialize, Clone)]
pub(crate) struct Sample {
    pub(crate) t_secs: f64,
    pub(crate) rss_mib: Option<f64>,
    /// From the server's metrics endpoint (when load_test started the server): bytes held by
    /// the bounded caches and buffers (row cache, RocksDB block cache, memtables, table readers)
    /// and by the ALEX primary indexes (which grow with the data).
    pub(crate) caches_mib: Option<f64>,
    pub(crate) alex_mib: Option<f64>,
    pub(crate) ops: u64,
    pub(crate) ops_per_sec: f64,
    /// Per operation (in `OPS` order), over the interval that ends at this sample.
    pub(crate) per_op: Vec<OpSample>,
    /// The machine's 1-minute load average at the sample.
    pub(crate) load1: Option<f64>,
    /// The server's CPU time over the interval (user + system, /proc/PID/stat): percent of one
    /// core, and microseconds per operation completed (independent of how busy the machine is).
    pub(crate) server_cpu_pct: Option<f64>,
    pub(crate) server_cpu_us_per_op: Option<f64>,
    /// Server counters over the interval (rates) and gauges at the sample.
    pub(crate) server: Option<ServerSample>,
}

/// What the server's metrics say about one sampling interval.
#[derive(Serialize, Clone, Default)]
pub(crate) struct ServerSample {
    pub(crate) commits_per_sec: f64,
    pub(crate) wal_fsyncs_per_sec: f64,
    /// Mean time of one WAL fsync over the interval, µs (absent on older servers).
    pub(crate) wal_fsync_us: Option<f64>,
    /// Old row versions garbage-collected per second.
    pub(crate) gc_per_sec: f64,
    /// Versions waiting for garbage collection at the sample (absent on older servers).
    pub(crate) gc_pending: Option<f64>,
    pub(crate) row_cache_hits_per_sec: f64,
    pub(crate) row_cache_misses_per_sec: f64,
    pub(crate) lock_waits_per_sec: f64,
    /// Mean server time of the interval's statements, by kind (µs).
    pub(crate) select_us: f64,
    pub(crate) insert_us: f64,
    pub(crate) update_us: f64,
    pub(crate) commit_us: f64,
    pub(crate) row_cache_mib: f64,
    pub(crate) block_cache_mib: f64,
    pub(crate) memtables_mib: f64,
    pub(crate) table_readers_mib: f64,
    /// Row versions in the rows column family (RocksDB's estimate) and the SST files' size.
    pub(crate) rocksdb_keys: f64,
    pub(crate) sst_mib: f64,
    pub(crate) pending_compaction_mib: f64,
    pub(crate) immutable_memtables: f64,
    /// RocksDB write throttling: the delayed write rate (0 when not delayed) and a full stop.
    pub(crate) delayed_write_rate: Option<f64>,
    pub(crate) write_stopped: Option<f64>,
}

/// A scrape of the server's `/metrics`: series (name with labels) -> value.
pub(crate) type Scrape = std::collections::HashMap<String, f64>;

/// Scrapes the server's `/metrics` (blocking; loopback).
pub(crate) fn scrape(port: u16) -> Option<Scrape> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (_, body) = text.split_once("\r\n\r\n")?;
    Some(
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, v) = l.rsplit_once(' ')?;
                Some((series.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

pub(crate) fn rocks(m: &Scrape, name: &str) -> Option<f64> {
    m.get(&format!("augur_rocksdb_property{{name=\"rocksdb.{name}\"}}"))
        .copied()
}

/// What the caches and the ALEX indexes hold, MiB: (caches, ALEX).
pub(crate) fn memory_of(m: &Scrape) -> (f64, f64) {
    let mut caches = m.get("augur_row_cache_bytes").copied().unwrap_or(0.0);
    for p in [
        "block-cache-usage",
        "cur-size-all-mem-tables",
        "estimate-table-readers-mem",
    ] {
        caches += rocks(m, p).unwrap_or(0.0);
    }
    let alex: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("augur_alex_bytes{"))
        .map(|(_, v)| v)
        .sum();
    (caches / 1048576.0, alex / 1048576.0)
}

/// The server's side of the interval between two scrapes `secs` apart.
pub(crate) fn server_sample(before: &Scrape, now: &Scrape, secs: f64) -> ServerSample {
    let g = |k: &str| now.get(k).copied().unwrap_or(0.0);
    let rate = |k: &str| (g(k) - before.get(k).copied().unwrap_or(0.0)).max(0.0) / secs.max(1e-9);
    let mean_us = |sum: &str, count: &str| {
        let n = g(count) - before.get(count).copied().unwrap_or(0.0);
        let t = g(sum) - before.get(sum).copied().unwrap_or(0.0);
        if n > 0.0 {
            t / n * 1e6
        } else {
            0.0
        }
    };
    let stmt = |kind: &str| {
        mean_us(
            &format!("augur_statement_duration_seconds_sum{{kind=\"{kind}\"}}"),
            &format!("augur_statement_duration_seconds_count{{kind=\"{kind}\"}}"),
        )
    };
    let mib = |v: Option<f64>| v.unwrap_or(0.0) / 1048576.0;
    ServerSample {
        commits_per_sec: rate("augur_commits_total"),
        wal_fsyncs_per_sec: rate("augur_wal_fsyncs_total"),
        wal_fsync_us: now
            .contains_key("augur_wal_fsync_seconds_total")
            .then(|| mean_us("augur_wal_fsync_seconds_total", "augur_wal_fsyncs_total")),
        gc_per_sec: rate("augur_versions_collected_total"),
        gc_pending: now.get("augur_gc_pending_versions").copied(),
        row_cache_hits_per_sec: rate("augur_row_cache_hits_total"),
        row_cache_misses_per_sec: rate("augur_row_cache_misses_total"),
        lock_waits_per_sec: rate("augur_row_lock_waits_total"),
        select_us: stmt("select"),
        insert_us: stmt("insert"),
        update_us: stmt("update"),
        commit_us: mean_us(
            "augur_commit_duration_seconds_sum",
            "augur_commit_duration_seconds_count",
        ),
        row_cache_mib: g("augur_row_cache_bytes") / 1048576.0,
        block_cache_mib: mib(rocks(now, "block-cache-usage")),
        memtables_mib: mib(rocks(now, "cur-size-all-mem-tables")),
        table_readers_mib: mib(rocks(now, "estimate-table-readers-mem")),
        rocksdb_keys: rocks(now, "estimate-num-keys").unwrap_or(0.0),
        sst_mib: mib(rocks(now, "total-sst-files-size")),
        pending_compaction_mib: mib(rocks(now, "estimate-pending-compaction-bytes")),
        immutable_memtables: rocks(now, "num-immutable-mem-table").unwrap_or(0.0),
        delayed_write_rate: rocks(now, "actual-delayed-write-rate"),
        write_stopped: rocks(now, "is-write-stopped"),
    }
}
