//! Arbitrary bytes into the server's connection handling: an in-process `augur::server::Server`
//! on loopback TCP (the same accept loop and `pgwire::tokio::process_socket` as `augur serve`).
//! Per input: one connection receives the bytes, its write side is shut, and the server must
//! close it (EOF or reset) within [`CLOSE_TIMEOUT`]; then a fresh connection must complete
//! startup and `SELECT 1`.
//!
//! Panics are classified by a panic hook. pgwire 0.42.1's decoder panics on some malformed
//! messages (truncated Bind/Parse bodies); the server contains those to the connection
//! (`catch_unwind` in `Server::run`), so a panic on a server thread whose innermost pgwire frame
//! is in pgwire's message decoders (`src/messages/`) is counted as *contained* ([`contained_panics`]) and does not fail the
//! input. Every other panic goes to the previous hook (libFuzzer's aborts: a crash) and is
//! counted in [`uncontained_panics`].
//!
//! Input: byte 0 picks the mode (mod 3): 0 = the rest raw (the client's startup included);
//! 1 = a valid startup message, then the rest raw; 2 = a valid startup message, then the rest
//! as frames `[type][len: u8][len bytes]`, each sent as a message with a correct length.
//!
//! Shared with `tests/fuzz_regressions.rs` (included there by path): `augur`, `tokio` and `std`.

use std::collections::HashSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use augur::server::{Server, ServerConfig};
use augur::{Database, TableDef};

use super::scratch;

/// How long the server may take to close a connection whose client has shut its write side.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(20);
/// Thread-name prefix of the server's runtime (the panic hook's test for "server thread").
const WORKER: &str = "fuzz-wire-srv";

static CONTAINED: AtomicU64 = AtomicU64::new(0);
static UNCONTAINED: AtomicU64 = AtomicU64::new(0);
/// Location of the latest contained panic (read by the fuzz target to name saved inputs).
static LAST_CONTAINED: Mutex<String> = Mutex::new(String::new());

/// Contained pgwire decoder panics so far (this process).
pub fn contained_panics() -> u64 {
    CONTAINED.load(Ordering::SeqCst)
}

/// Panics that were not contained pgwire decoder panics (this process).
pub fn uncontained_panics() -> u64 {
    UNCONTAINED.load(Ordering::SeqCst)
}

/// `file:line:col: message` of the latest contained panic.
pub fn last_contained() -> String {
    LAST_CONTAINED.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

fn install_hook() {
    let prev = std::panic::take_hook();
    let seen: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    std::panic::set_hook(Box::new(move |info| {
        let server = std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with(WORKER));
        if server {
            let bt = std::backtrace::Backtrace::force_capture().to_string();
            // The innermost frame in pgwire's source (the panic itself is usually in `bytes`);
            // contained only if that frame is in its message decoders (`src/messages/`).
            let place = bt
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("at ") && l.contains("/pgwire-"))
                .and_then(|l| l.rsplit_once("/src/"))
                .map(|(_, f)| format!("pgwire src/{f}"));
            if let Some(at) = place.filter(|p| p.starts_with("pgwire src/messages/")) {
                CONTAINED.fetch_add(1, Ordering::SeqCst);
                let msg = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let what = format!("{at}: {msg}");
                if seen.lock().unwrap_or_else(|e| e.into_inner()).insert(at) {
                    eprintln!("wire: contained pgwire decoder panic (first at this place): {what}");
                }
                *LAST_CONTAINED.lock().unwrap_or_else(|e| e.into_inner()) = what;
                return;
            }
        }
        UNCONTAINED.fetch_add(1, Ordering::SeqCst);
        prev(info);
    }));
}

/// Ports to try, `AUGUR_FUZZ_PORTS=first-last` (default 58100-58199).
fn ports() -> std::ops::RangeInclusive<u16> {
    let spec = std::env::var("AUGUR_FUZZ_PORTS").unwrap_or_default();
    spec.split_once('-')
        .and_then(|(a, b)| Some(a.parse().ok()?..=b.parse().ok()?))
        .unwrap_or(58100..=58199)
}

struct Harness {
    port: u16,
    db: Database,
    fingerprint: (u64, Vec<TableDef>),
}

fn fingerprint(db: &Database) -> (u64, Vec<TableDef>) {
    let mut defs: Vec<TableDef> = db.tables().iter().map(|t| (*t.def()).clone()).collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    (db.stats().commits, defs)
}

fn start() -> Harness {
    install_hook();
    let db = scratch::open("wire");
    scratch::reset(&db);
    let (tx, rx) = mpsc::channel();
    let server_db = db.clone();
    std::thread::Builder::new()
        .name(format!("{WORKER}-main"))
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name(WORKER)
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async move {
                let mut last = None;
                for port in ports() {
                    let cfg = ServerConfig {
                        listen: format!("127.0.0.1:{port}"),
                        max_connections: 16,
                        shutdown_timeout: Duration::from_secs(1),
                        max_copy_bytes: 1 << 20,
                        ..ServerConfig::default()
                    };
                    match Server::bind(server_db.clone(), cfg).await {
                        Ok(s) => {
                            let _ = tx.send(Ok(port));
                            let _ = s.run(std::future::pending()).await;
                            return;
                        }
                        Err(e) => last = Some(e.to_string()),
                    }
                }
                let _ = tx.send(Err(last.unwrap_or_default()));
            });
        })
        .expect("server thread");
    let port = match rx.recv().expect("server start") {
        Ok(p) => p,
        Err(e) => panic!("no free port for the wire harness: {e}"),
    };
    Harness {
        port,
        fingerprint: fingerprint(&db),
        db,
    }
}

fn startup() -> Vec<u8> {
    let mut body = 196608u32.to_be_bytes().to_vec();
    for s in ["user", "augur", "database", "augur"] {
        body.extend_from_slice(s.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut v = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}

fn message(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// The bytes sent for an input (see the module doc).
pub fn bytes_for(data: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else {
        return Vec::new();
    };
    match mode % 3 {
        0 => rest.to_vec(),
        1 => [startup(), rest.to_vec()].concat(),
        _ => {
            let mut out = startup();
            let mut r = rest;
            while let [t, len, tail @ ..] = r {
                let n = (*len as usize).min(tail.len());
                out.extend_from_slice(&message(*t, &tail[..n]));
                r = &tail[n..];
            }
            out
        }
    }
}

/// Reads until the server closes the connection; false if it is still open after `timeout`.
fn wait_closed(s: &mut TcpStream, timeout: Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    let mut buf = [0u8; 16 << 10];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return false,
            // Reset, broken pipe: closed.
            Err(_) => return true,
        }
    }
}

fn read_msg(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut h = [0u8; 5];
    s.read_exact(&mut h)?;
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
    let mut body = vec![0u8; len.saturating_sub(4)];
    s.read_exact(&mut body)?;
    Ok((h[0], body))
}

fn until_ready(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut types = Vec::new();
    loop {
        let (t, _) = read_msg(s)?;
        types.push(t);
        if t == b'Z' {
            return Ok(types);
        }
    }
}

/// A fresh connection completes startup and `SELECT 1`, then terminates.
fn healthy(port: u16) -> Result<(), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(CLOSE_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.write_all(&startup()).map_err(|e| format!("startup: {e}"))?;
    let t = until_ready(&mut s).map_err(|e| format!("startup reply: {e}"))?;
    if t.contains(&b'E') {
        return Err(format!("startup refused: {t:?}"));
    }
    s.write_all(&message(b'Q', b"SELECT 1\0"))
        .map_err(|e| format!("query: {e}"))?;
    let t = until_ready(&mut s).map_err(|e| format!("query reply: {e}"))?;
    if t != [b'T', b'D', b'C', b'Z'] {
        return Err(format!("SELECT 1 answered {t:?}"));
    }
    let _ = s.write_all(&message(b'X', b""));
    Ok(())
}

static HARNESS: Mutex<Option<Harness>> = Mutex::new(None);

/// The harness server's port (started on first use), for tests that talk to it directly.
pub fn port() -> u16 {
    let mut g = HARNESS.lock().unwrap_or_else(|e| e.into_inner());
    g.get_or_insert_with(start).port
}

/// Connects to the harness server and completes startup.
pub fn connect() -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port())).expect("connecting to the wire harness");
    s.set_read_timeout(Some(CLOSE_TIMEOUT)).expect("read timeout");
    s.write_all(&startup()).expect("startup");
    until_ready(&mut s).expect("startup reply");
    s
}

/// Sends `msgs` and returns the types of the messages received up to ReadyForQuery.
pub fn exchange(s: &mut TcpStream, msgs: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let bytes: Vec<u8> = msgs.iter().flat_map(|(t, b)| message(*t, b)).collect();
    s.write_all(&bytes).expect("send");
    until_ready(s).expect("reply")
}

/// Runs one input; panics (a finding) if the server does not close the connection, stops
/// accepting connections, or anything outside pgwire's decoder panics.
pub fn run(data: &[u8]) {
    let mut g = HARNESS.lock().unwrap_or_else(|e| e.into_inner());
    let h = g.get_or_insert_with(start);
    let uncontained = uncontained_panics();
    let bytes = bytes_for(data);
    let mut s = TcpStream::connect(("127.0.0.1", h.port)).expect("connecting to the wire harness");
    let _ = s.set_nodelay(true);
    // Errors here mean the server already closed the connection, which is fine.
    let _ = s.write_all(&bytes);
    let _ = s.shutdown(Shutdown::Write);
    assert!(
        wait_closed(&mut s, CLOSE_TIMEOUT),
        "the server did not close the connection within {CLOSE_TIMEOUT:?} after the client's EOF"
    );
    drop(s);
    if let Err(e) = healthy(h.port) {
        panic!("the server no longer serves a fresh connection: {e}");
    }
    assert_eq!(
        uncontained_panics(),
        uncontained,
        "a panic escaped pgwire's decoder"
    );
    if fingerprint(&h.db) != h.fingerprint || data.windows(8).any(|w| w.eq_ignore_ascii_case(b"truncate")) {
        scratch::reset(&h.db);
        h.fingerprint = fingerprint(&h.db);
    }
}
