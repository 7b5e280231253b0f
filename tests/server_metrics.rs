//! `augur serve --metrics ADDR`: scrape the Prometheus endpoint of a running server before and
//! after some queries (tokio-postgres: prepared and simple statements, a transaction, errors)
//! and check that the counters moved by what was done.

mod server_util;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use server_util::{free_port, Server};
use tokio_postgres::NoTls;

/// GET `path` over HTTP/1.1; returns (status line, body).
fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to metrics");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("HTTP response head");
    assert!(head.to_ascii_lowercase().contains("content-length"), "{head}");
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// Every sample of the exposition text: `name{labels}` -> value. Checks the format on the way:
/// each sample's family has a `# TYPE` line before it.
fn parse(text: &str) -> HashMap<String, f64> {
    let mut typed = std::collections::HashSet::new();
    let mut m = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut p = rest.split_whitespace();
            typed.insert(p.next().unwrap().to_string());
            let t = p.next().unwrap();
            assert!(["counter", "gauge", "histogram"].contains(&t), "{line}");
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad line {line:?}"));
        let name = series.split('{').next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "sample before its # TYPE: {line}");
        m.insert(series.to_string(), value.parse::<f64>().unwrap());
    }
    m
}

fn get(m: &HashMap<String, f64>, k: &str) -> f64 {
    m.get(k).copied().unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_counts_what_happened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let srv = Server::start(&dir, &["--metrics", &maddr]);

    let (status, _) = http_get(mport, "/nope");
    assert!(status.contains("404"), "{status}");
    let (status, body) = http_get(mport, "/metrics");
    assert!(status.contains("200"), "{status}");
    let before = parse(&body);
    assert_eq!(get(&before, "augur_connections"), 0.0);

    let (client, conn) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=augur dbname=augur", srv.port),
        NoTls,
    )
    .await
    .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
        .batch_execute("CREATE TABLE acct (id BIGINT PRIMARY KEY, bal BIGINT NOT NULL)")
        .await
        .unwrap();
    let ins = client.prepare("INSERT INTO acct VALUES ($1, $2)").await.unwrap();
    for i in 0..200i64 {
        client.execute(&ins, &[&i, &100i64]).await.unwrap();
    }
    let sel = client
        .prepare("SELECT bal FROM acct WHERE id = $1")
        .await
        .unwrap();
    for i in 0..50i64 {
        let r = client.query_one(&sel, &[&i]).await.unwrap();
        assert_eq!(r.get::<_, i64>(0), 100);
    }
    client
        .batch_execute("BEGIN; UPDATE acct SET bal = bal - 1 WHERE id = 1; UPDATE acct SET bal = bal + 1 WHERE id = 2; COMMIT")
        .await
        .unwrap();
    // Two errors: an undefined table (class 42) and a duplicate key (class 23).
    assert!(client.simple_query("SELECT * FROM missing").await.is_err());
    assert!(client.execute(&ins, &[&5i64, &1i64]).await.is_err());

    let (_, body) = http_get(mport, "/metrics");
    let after = parse(&body);
    let d = |k: &str| get(&after, k) - get(&before, k);
    assert_eq!(get(&after, "augur_connections"), 1.0, "one open connection");
    assert!(d("augur_connections_total") >= 1.0);
    assert_eq!(
        d("augur_statements_total{kind=\"insert\"}"),
        201.0,
        "200 inserts + the duplicate"
    );
    assert!(d("augur_statements_total{kind=\"select\"}") >= 51.0);
    assert_eq!(d("augur_statements_total{kind=\"update\"}"), 2.0);
    assert_eq!(d("augur_statements_total{kind=\"begin\"}"), 1.0);
    assert_eq!(d("augur_statements_total{kind=\"commit\"}"), 1.0);
    assert_eq!(d("augur_statements_total{kind=\"ddl\"}"), 1.0);
    assert_eq!(d("augur_errors_total{class=\"42\"}"), 1.0);
    assert_eq!(d("augur_errors_total{class=\"23\"}"), 1.0);
    assert_eq!(
        d("augur_statement_duration_seconds_count{kind=\"insert\"}"),
        201.0,
        "histogram count = statements"
    );
    assert_eq!(
        d("augur_statement_duration_seconds_bucket{kind=\"insert\",le=\"+Inf\"}"),
        201.0
    );
    assert!(d("augur_statement_duration_seconds_sum{kind=\"select\"}") > 0.0);
    // 200 autocommit inserts + 1 COMMIT (the failed insert is no commit).
    assert_eq!(d("augur_commit_duration_seconds_count"), 201.0);
    // Every durable commit waited for an fsync, and group commit never syncs more often than
    // it commits; a DDL statement's catalog write is synced the same way (not a commit).
    assert!(d("augur_commits_total") >= 201.0);
    let syncs = d("augur_wal_fsyncs_total");
    let ddl = d("augur_statements_total{kind=\"ddl\"}");
    assert!(
        syncs >= 1.0 && syncs <= d("augur_commits_total") + ddl,
        "fsyncs {syncs}"
    );
    // Each of those fsyncs took some time, and not more than the commits that waited for them.
    let sync_secs = d("augur_wal_fsync_seconds_total");
    assert!(
        sync_secs > 0.0 && sync_secs <= d("augur_commit_duration_seconds_sum"),
        "fsync seconds {sync_secs}"
    );
    // The two UPDATEs superseded two versions: queued for GC or already collected.
    assert!(
        get(&after, "augur_gc_pending_versions") + d("augur_versions_collected_total") >= 2.0,
        "superseded versions are queued or collected"
    );
    for series in [
        "augur_gc_pending_versions",
        "augur_mapped_reads_total",
        "augur_rocksdb_reads_total",
        "augur_read_retries_total",
        "augur_mapped_files",
        "augur_mapped_bytes",
        "augur_mapped_unpopulated_bytes",
        "augur_unmapped_files",
        "augur_wal_fsync_seconds_total",
        "augur_rocksdb_property{name=\"rocksdb.is-write-stopped\"}",
        "augur_rocksdb_property{name=\"rocksdb.actual-delayed-write-rate\"}",
    ] {
        assert!(after.contains_key(series), "{series} is exported");
    }
    assert_eq!(
        get(
            &after,
            "augur_rocksdb_property{name=\"rocksdb.is-write-stopped\"}"
        ),
        0.0
    );
    assert!(d("augur_row_cache_hits_total") + d("augur_row_cache_misses_total") >= 50.0);
    assert_eq!(
        get(&after, "augur_index_keys{index=\"alex\",table=\"acct\"}"),
        200.0
    );
    assert!(get(&after, "augur_alex_max_depth{table=\"acct\"}") >= 1.0);
    assert!(get(&after, "augur_alex_bytes{table=\"acct\"}") > 0.0);
    assert!(
        get(
            &after,
            "augur_rocksdb_property{name=\"rocksdb.estimate-num-keys\"}"
        ) > 0.0
    );
    assert!(
        get(
            &after,
            "augur_rocksdb_property{name=\"rocksdb.block-cache-capacity\"}"
        ) > 0.0
    );

    // The server runs with one memory budget (--memory-mb, default 512 MiB): the parts add up.
    let part = |p: &str| get(&after, &format!("augur_memory_bytes{{part=\"{p}\"}}"));
    assert_eq!(part("budget"), (512u64 << 20) as f64);
    assert!(part("primary_index_heap") + part("primary_index_mapped") > 0.0);
    assert!(part("row_cache") > 0.0 && part("block_cache") > 0.0);
    assert!(part("charged") <= part("budget"));

    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        let in_use = get(&after, "augur_malloc_bytes{kind=\"in_use\"}");
        assert!(in_use > 1e6, "live allocations of a server with caches: {in_use}");
        assert!(get(&after, "augur_malloc_bytes{kind=\"arena\"}") > 0.0);
    }

    drop(client);
    // The connection's end is counted (the server notices the close asynchronously).
    let mut open = 1.0;
    for _ in 0..200 {
        open = get(&parse(&http_get(mport, "/metrics").1), "augur_connections");
        if open == 0.0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(open, 0.0);
    drop(srv);
}

/// Runs `augur serve` with `args` on a fresh data directory, expecting it to refuse to start:
/// returns its stderr after it exits (fails the test if it is still running after 30 s).
fn refused(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(server_util::augur_bin())
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("d"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start augur");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            assert!(!st.success(), "augur serve {args:?} started; stderr:\n{err}");
            return err;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("augur serve {args:?} kept running: it should have refused to start");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Nothing without authentication listens beyond loopback unless asked: the SQL port without a
/// password, and the metrics endpoint (which never has authentication).
#[test]
fn non_loopback_listeners_without_auth_need_insecure_no_auth() {
    let p = free_port();
    let err = refused(&["--listen", &format!("0.0.0.0:{p}")]);
    assert!(err.contains("refusing to listen on 0.0.0.0"), "{err}");

    let (p, m) = (free_port(), free_port());
    let err = refused(&[
        "--listen",
        &format!("127.0.0.1:{p}"),
        "--password",
        "pw",
        "--metrics",
        &format!("0.0.0.0:{m}"),
    ]);
    assert!(err.contains("refusing to serve metrics on 0.0.0.0"), "{err}");

    // With the flag, the same metrics address is served (reached here through loopback).
    let dir = tempfile::tempdir().unwrap();
    let m = free_port();
    let s = Server::start(
        &dir.path().join("d"),
        &["--metrics", &format!("0.0.0.0:{m}"), "--insecure-no-auth"],
    );
    let (status, body) = http_get(m, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("augur_"), "{body}");
    assert!(s.log_text().contains("has no authentication"), "{}", s.log_text());
}
