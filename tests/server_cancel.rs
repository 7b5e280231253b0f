//! Query cancellation (PostgreSQL CancelRequest) with real clients: tokio-postgres'
//! `cancel_query` stops a long query (simple and extended protocol) and an UPDATE or INSERT
//! waiting for another session's row lock, with 57014 "canceling statement due to user
//! request"; the session stays usable, an explicit block becomes aborted (25P02 until
//! ROLLBACK), nothing the statement did is left; a CancelRequest with a wrong secret or pid
//! does nothing and gets no reply; a cancel while nothing runs does not touch the next
//! statement; cancels work past `--max-connections` and with SCRAM; psql's Ctrl-C (SIGINT).
//!
//! A query that is not canceled runs for many seconds here (400³ = 64M joined triples); each
//! test first proves that with a statement_timeout, then shows the canceled run ending with
//! the user-request error well before that timeout.

mod server_util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use server_util::{pg_connect, read_msg, require, startup_packet, Server};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// 64M triples, none matching: seconds to minutes of work, small memory (the pairs of the
/// first join, 160K rows, are materialized; the third table is joined with the filter).
const LONG: &str = "SELECT count(*) FROM big a, big b, big c WHERE a.n + b.n + c.n = 4";
/// A statement_timeout LONG always exceeds; the cancel in each test comes well before it.
const PROOF_MS: u64 = 2000;
/// When the tests send their cancel, after the statement started.
const CANCEL_AFTER: Duration = Duration::from_millis(250);
const USER_CANCEL: &str = "canceling statement due to user request";

async fn connect(port: u16) -> Client {
    pg_connect(port, "").await
}

/// `big`: 400 rows with n = 1.
async fn setup(c: &Client) {
    let values: Vec<String> = (1..=400).map(|i| format!("({i}, 1)")).collect();
    c.batch_execute(&format!(
        "CREATE TABLE big (id int PRIMARY KEY, n int); INSERT INTO big VALUES {}",
        values.join(", ")
    ))
    .await
    .unwrap();
}

async fn big_sums(c: &Client) -> (i64, i64) {
    let r = c
        .query_one("SELECT count(*), sum(n) FROM big", &[])
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

fn db_message(e: &tokio_postgres::Error) -> String {
    e.as_db_error()
        .map(|d| d.message().to_string())
        .unwrap_or_else(|| e.to_string())
}

/// Checks that `LONG` does not finish within PROOF_MS (so that a canceled run ending sooner
/// was stopped by the cancel), then leaves a safety-net timeout for the tests' own runs: if a
/// cancel were ignored they would fail with the statement-timeout message instead of hanging.
async fn prove_long(c: &Client) {
    c.batch_execute(&format!("SET statement_timeout = {PROOF_MS}"))
        .await
        .unwrap();
    let t0 = Instant::now();
    let e = c
        .simple_query(LONG)
        .await
        .expect_err("LONG must outlast the timeout");
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{e}");
    assert_eq!(db_message(&e), "canceling statement due to statement timeout");
    assert!(t0.elapsed() >= Duration::from_millis(PROOF_MS));
    safety_net(c).await;
}

/// A statement_timeout three times PROOF_MS: a statement a cancel failed to stop ends with the
/// statement-timeout message (and the test fails on it) instead of running on.
async fn safety_net(c: &Client) {
    c.batch_execute(&format!("SET statement_timeout = {}", 3 * PROOF_MS))
        .await
        .unwrap();
}

/// Sends a cancel for `running` after `first_after`, then every 200 ms until it ends. A cancel
/// that reaches the server before the statement has started is dropped (as in PostgreSQL), and
/// on a loaded machine a statement may take longer than CANCEL_AFTER to start; repeating the
/// cancel, as a user presses Ctrl-C again, keeps the test about cancellation, not scheduling.
/// Returns once every cancel sent has been handled by the server (it closes each cancel
/// connection after acting on it), so none can reach a later statement.
async fn cancel_until_done<T>(
    token: &tokio_postgres::CancelToken,
    running: &tokio::task::JoinHandle<T>,
    first_after: Duration,
) {
    tokio::time::sleep(first_after).await;
    while !running.is_finished() {
        token.cancel_query(NoTls).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Asserts `r` is the user-cancel error and the statement ended well before PROOF_MS.
fn assert_canceled<T: std::fmt::Debug>(r: Result<T, tokio_postgres::Error>, t0: Instant, what: &str) {
    let elapsed = t0.elapsed();
    let e = r.expect_err(&format!("{what}: must not finish normally"));
    assert_eq!(e.code(), Some(&SqlState::QUERY_CANCELED), "{what}: {e}");
    assert_eq!(db_message(&e), USER_CANCEL, "{what}");
    assert!(
        elapsed < Duration::from_millis(PROOF_MS),
        "{what}: ended after {elapsed:?}, not promptly after the cancel"
    );
    eprintln!("{what}: canceled after {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_long_queries_simple_and_extended() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let c = Arc::new(connect(srv.port).await);
    setup(&c).await;
    prove_long(&c).await;

    // A cancel while nothing runs does nothing, now or later: the next statements (one of
    // them long enough to pass the executor's checks many times) run normally.
    c.cancel_token().cancel_query(NoTls).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = c
        .query_one("SELECT count(*) FROM big a, big b WHERE a.n = b.n", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 160_000);

    // (a) simple protocol.
    let token = c.cancel_token();
    let c2 = c.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { c2.simple_query(LONG).await });
    cancel_until_done(&token, &running, CANCEL_AFTER).await;
    assert_canceled(running.await.unwrap(), t0, "simple-protocol SELECT");
    assert_eq!(big_sums(&c).await, (400, 400), "session usable, data intact");

    // Extended protocol: an UPDATE whose subquery is the long join writes nothing.
    let upd = "UPDATE big SET n = n + 1 WHERE id IN \
               (SELECT a.id FROM big a, big b, big c WHERE a.n + b.n + c.n = 4) OR n = 1";
    let c2 = c.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { c2.execute(upd, &[]).await });
    cancel_until_done(&token, &running, CANCEL_AFTER).await;
    assert_canceled(running.await.unwrap(), t0, "extended-protocol UPDATE");
    assert_eq!(
        big_sums(&c).await,
        (400, 400),
        "the canceled UPDATE wrote nothing"
    );

    // In an explicit block: the block fails (25P02) until ROLLBACK, then the session is fine.
    c.batch_execute("BEGIN; UPDATE big SET n = 5 WHERE id = 1")
        .await
        .unwrap();
    let c2 = c.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { c2.query(LONG, &[]).await });
    cancel_until_done(&token, &running, CANCEL_AFTER).await;
    assert_canceled(running.await.unwrap(), t0, "SELECT in a transaction block");
    let e = c.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(big_sums(&c).await, (400, 400), "the failed block rolled back");

    // The statement after a canceled one is not canceled (the cancel was for that request).
    let r = c
        .query_one("SELECT count(*) FROM big a, big b WHERE a.n = b.n", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 160_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_a_row_lock_wait() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let holder = connect(srv.port).await;
    setup(&holder).await;
    let waiter = Arc::new(connect(srv.port).await);
    safety_net(&waiter).await;
    let token = waiter.cancel_token();

    holder
        .batch_execute("BEGIN; UPDATE big SET n = 2 WHERE id = 1; INSERT INTO big VALUES (1000, 7)")
        .await
        .unwrap();

    // (b) An UPDATE (extended protocol) waiting for the holder's row lock; the holder keeps
    // it throughout, so the UPDATE cannot finish normally.
    let w = waiter.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { w.execute("UPDATE big SET n = 3 WHERE id = 1", &[]).await });
    tokio::time::sleep(CANCEL_AFTER).await;
    assert!(
        !running.is_finished(),
        "the UPDATE must be waiting for the row lock"
    );
    cancel_until_done(&token, &running, Duration::ZERO).await;
    assert_canceled(running.await.unwrap(), t0, "UPDATE waiting for a row lock");
    assert_eq!(
        waiter.query_one("SELECT 1", &[]).await.unwrap().get::<_, i32>(0),
        1
    );

    // An INSERT of a key the holder inserted waits in the engine's insert path; in an
    // explicit block (simple protocol) the cancel fails the block.
    waiter.batch_execute("BEGIN").await.unwrap();
    let w = waiter.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { w.simple_query("INSERT INTO big VALUES (1000, 8)").await });
    tokio::time::sleep(CANCEL_AFTER).await;
    assert!(
        !running.is_finished(),
        "the INSERT must be waiting for the row lock"
    );
    cancel_until_done(&token, &running, Duration::ZERO).await;
    assert_canceled(running.await.unwrap(), t0, "INSERT waiting for a row lock");
    let e = waiter.simple_query("SELECT 1").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
    waiter.batch_execute("ROLLBACK").await.unwrap();

    // The holder was not disturbed: it commits, and its writes are what is stored.
    holder.batch_execute("COMMIT").await.unwrap();
    let rows = waiter
        .query("SELECT id, n FROM big WHERE id IN (1, 1000) ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(i32, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, vec![(1, 2), (1000, 7)]);
    // The waiter holds no lock any more: it can update the row now.
    assert_eq!(
        waiter
            .execute("UPDATE big SET n = 1 WHERE id = 1", &[])
            .await
            .unwrap(),
        1
    );
    assert_eq!(big_sums(&waiter).await, (401, 407));
}

/// Logs in over raw TCP; returns the socket and its BackendKeyData (pid, secret).
fn raw_connect(port: u16) -> (TcpStream, i32, [u8; 4]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(&startup_packet("augur", "augur")).unwrap();
    let mut key = None;
    loop {
        let (t, body) = read_msg(&mut s).unwrap();
        if t == b'K' {
            assert_eq!(body.len(), 8, "protocol 3.0: pid and a 4-byte secret");
            let pid = i32::from_be_bytes(body[..4].try_into().unwrap());
            key = Some((pid, body[4..8].try_into().unwrap()));
        }
        if t == b'Z' {
            break;
        }
    }
    let (pid, secret) = key.expect("BackendKeyData before ReadyForQuery");
    (s, pid, secret)
}

fn send_query(s: &mut TcpStream, sql: &str) {
    let mut v = vec![b'Q'];
    v.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
    v.extend_from_slice(sql.as_bytes());
    v.push(0);
    s.write_all(&v).unwrap();
}

/// Reads until ReadyForQuery: (SQLSTATEs and messages of errors, row count of the last DataRow
/// seen as text).
fn until_ready(s: &mut TcpStream) -> (Vec<(String, String)>, Option<String>) {
    let mut errors = Vec::new();
    let mut last = None;
    loop {
        let (t, body) = read_msg(s).unwrap();
        match t {
            b'E' => {
                let (mut code, mut msg) = (String::new(), String::new());
                for f in body.split(|&b| b == 0) {
                    if let Some(c) = f.strip_prefix(b"C") {
                        code = String::from_utf8_lossy(c).into_owned();
                    } else if let Some(m) = f.strip_prefix(b"M") {
                        msg = String::from_utf8_lossy(m).into_owned();
                    }
                }
                errors.push((code, msg));
            }
            b'D' => {
                let len = i32::from_be_bytes(body[2..6].try_into().unwrap());
                last = (len >= 0).then(|| String::from_utf8_lossy(&body[6..6 + len as usize]).into_owned());
            }
            b'Z' => return (errors, last),
            _ => {}
        }
    }
}

/// Sends a CancelRequest on a new connection; returns whether the server closed it without a
/// byte of reply.
fn send_cancel(port: u16, pid: i32, secret: &[u8]) -> bool {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut p = ((12 + secret.len()) as u32).to_be_bytes().to_vec();
    p.extend_from_slice(&80877102u32.to_be_bytes());
    p.extend_from_slice(&pid.to_be_bytes());
    p.extend_from_slice(secret);
    s.write_all(&p).unwrap();
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0))
}

/// (c) Raw CancelRequests: a wrong secret, a wrong pid, another connection's secret and a
/// short secret do nothing (the statement keeps running), the right one cancels; every cancel
/// connection is closed without a reply. Also: BackendKeyData gives distinct pids and secrets,
/// and `pg_backend_pid()` returns the connection's BackendKeyData pid.
#[test]
fn wrong_secret_does_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let (mut s, pid, secret) = raw_connect(srv.port);
    let (mut other, other_pid, other_secret) = raw_connect(srv.port);
    assert_ne!(pid, other_pid);
    // pg_backend_pid() names the pid a CancelRequest must carry (as in PostgreSQL).
    send_query(&mut s, "SELECT pg_backend_pid()");
    assert_eq!(until_ready(&mut s), (vec![], Some(pid.to_string())));
    send_query(&mut other, "SELECT pg_backend_pid()");
    assert_eq!(until_ready(&mut other), (vec![], Some(other_pid.to_string())));
    assert_ne!(
        secret, other_secret,
        "secrets are random (a 2^-32 chance of a false failure)"
    );
    let values: Vec<String> = (1..=400).map(|i| format!("({i}, 1)")).collect();
    send_query(
        &mut s,
        &format!(
            "CREATE TABLE big (id int PRIMARY KEY, n int); INSERT INTO big VALUES {}; \
             SET statement_timeout = {}",
            values.join(", "),
            3 * PROOF_MS
        ),
    );
    assert!(until_ready(&mut s).0.is_empty());

    let t0 = Instant::now();
    send_query(&mut s, LONG);
    std::thread::sleep(CANCEL_AFTER);
    let mut wrong = secret;
    wrong[3] ^= 1;
    assert!(send_cancel(srv.port, pid, &wrong), "no reply to a wrong secret");
    assert!(
        send_cancel(srv.port, pid + 1000, &secret),
        "no reply to an unknown pid"
    );
    assert!(
        send_cancel(srv.port, pid, &other_secret),
        "no reply to another's secret"
    );
    assert!(
        send_cancel(srv.port, pid, &secret[..3]),
        "no reply to a short secret"
    );
    assert!(
        send_cancel(srv.port, other_pid, &other_secret),
        "the idle one: no reply"
    );
    // Still running: nothing has arrived on the query's connection.
    std::thread::sleep(Duration::from_millis(300));
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let pending = s.peek(&mut b);
    assert!(
        matches!(&pending, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the query must still be running after wrong cancels, got {pending:?}"
    );
    s.set_nonblocking(false).unwrap();
    // The right key cancels it.
    assert!(
        send_cancel(srv.port, pid, &secret),
        "no reply to the right key either"
    );
    let (errors, _) = until_ready(&mut s);
    let elapsed = t0.elapsed();
    assert_eq!(errors, vec![("57014".to_string(), USER_CANCEL.to_string())]);
    assert!(elapsed < Duration::from_millis(3 * PROOF_MS), "{elapsed:?}");
    // Both connections go on; the other one's earlier (idle) cancel did not touch it.
    send_query(&mut s, "SELECT count(*) FROM big");
    assert_eq!(until_ready(&mut s), (vec![], Some("400".into())));
    send_query(&mut other, "SELECT count(*) FROM big a, big b WHERE a.n = b.n");
    assert_eq!(until_ready(&mut other), (vec![], Some("160000".into())));
    // A closed connection's pid no longer cancels anything (and is not an error).
    drop(other);
    std::thread::sleep(Duration::from_millis(100));
    assert!(send_cancel(srv.port, other_pid, &other_secret));
}

/// Cancels are served past `--max-connections` (PostgreSQL exempts them from the limit) and
/// on a SCRAM-authenticated connection (the pid and secret come from the SASL path).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_with_scram_past_max_connections() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(
        &tmp.path().join("data"),
        &["--password", "s3cret", "--max-connections", "1"],
    );
    // Server::start's readiness probe (a bare TCP connection) holds the only slot until the
    // server sees it close; wait for that instead of racing it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let c = loop {
        let conninfo = format!(
            "host=127.0.0.1 port={} user=augur dbname=augur password=s3cret",
            srv.port
        );
        match tokio_postgres::connect(&conninfo, NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                break Arc::new(client);
            }
            Err(e) if e.code() == Some(&SqlState::TOO_MANY_CONNECTIONS) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("connect: {e}"),
        }
    };
    setup(&c).await;
    safety_net(&c).await;
    let token = c.cancel_token();
    let c2 = c.clone();
    let t0 = Instant::now();
    let running = tokio::spawn(async move { c2.simple_query(LONG).await });
    cancel_until_done(&token, &running, CANCEL_AFTER).await;
    assert_canceled(
        running.await.unwrap(),
        t0,
        "SELECT (SCRAM, at the connection limit)",
    );
    assert_eq!(big_sums(&c).await, (400, 400));
    // The limit itself still holds for ordinary connections.
    let e = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=augur dbname=augur password=s3cret",
            srv.port
        ),
        NoTls,
    )
    .await
    .err()
    .expect("a second connection is refused");
    assert_eq!(e.code(), Some(&SqlState::TOO_MANY_CONNECTIONS), "{e}");
}

/// (d) psql: SIGINT (Ctrl-C) during a long query sends a cancel; psql prints PostgreSQL's
/// message.
#[test]
fn psql_sigint_cancels() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let values: Vec<String> = (1..=400).map(|i| format!("({i}, 1)")).collect();
    srv.sql(&format!(
        "CREATE TABLE big (id int PRIMARY KEY, n int); INSERT INTO big VALUES {}",
        values.join(", ")
    ));
    let child = Command::new("psql")
        .args(["-X", "-At", "-h", "127.0.0.1", "-U", "augur", "-d", "augur"])
        .args(["-p", &srv.port.to_string()])
        .args([
            "-c",
            &format!("SET statement_timeout = {}", 3 * PROOF_MS),
            "-c",
            LONG,
        ])
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql");
    let t0 = Instant::now();
    // Long enough for psql to connect and send the query.
    std::thread::sleep(Duration::from_millis(700));
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let elapsed = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("ERROR:  {USER_CANCEL}")),
        "psql stderr: {stderr}"
    );
    assert!(!out.status.success());
    assert!(elapsed < Duration::from_millis(3 * PROOF_MS), "{elapsed:?}");
    assert_eq!(srv.sql("SELECT count(*) FROM big").trim(), "400");
}
