//! Shared helpers for the server tests: start the built `augur` binary on a loopback port it
//! binds itself and a data directory, drive psql, kill it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
    /// Set when the Server is dropped; see [`watchdog`].
    done: Arc<AtomicBool>,
}

/// Seconds a test may keep one server before the watchdog ends the test binary
/// (`AUGUR_TEST_SERVER_SECS`, default 600; the longest server test takes about a minute).
fn server_limit() -> Duration {
    Duration::from_secs(
        std::env::var("AUGUR_TEST_SERVER_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(600),
    )
}

/// A hung test (a client waiting for a reply the server never sends) would otherwise hold CI
/// until its 90-minute limit: past the limit this prints which server hung and its log, kills
/// the server and exits the test binary with a failure.
fn watchdog(pid: u32, port: u16, log: PathBuf, done: Arc<AtomicBool>) {
    let limit = server_limit();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(200));
            if done.load(Ordering::Acquire) {
                return;
            }
        }
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        // Written to the stderr handle, not with eprintln!: the test harness captures the
        // macro's output and would lose it at exit.
        let _ = writeln!(
            std::io::stderr(),
            "WATCHDOG: a test kept the server on port {port} (pid {pid}) for more than {} s: \
             it is hung. Killing the server and failing the test binary. Last server log lines:\n{tail}",
            limit.as_secs()
        );
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        std::process::exit(101);
    });
}

/// A free loopback port: from `AUGUR_TEST_PORTS=LO-HI` when set (machines shared by several
/// test runs give each its own range), else any the OS picks.
pub fn free_port() -> u16 {
    if let Some((lo, hi)) = std::env::var("AUGUR_TEST_PORTS")
        .ok()
        .and_then(|r| {
            r.split_once('-')
                .map(|(a, b)| (a.parse::<u16>(), b.parse::<u16>()))
        })
        .and_then(|(a, b)| Some((a.ok()?, b.ok()?)))
    {
        // Successive calls (test threads) get successive ports; the bind proves it is free now.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let start = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % (hi - lo + 1) as usize;
        for p in (lo..=hi).skip(start).chain(lo..=hi) {
            if TcpListener::bind(("127.0.0.1", p)).is_ok() {
                return p;
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Fails the test unless `cmd` is installed (`scripts/setup` installs every client the tests
/// use): a test never passes without running.
pub fn require(cmd: &str) {
    assert!(
        have(cmd),
        "{cmd} is not installed: run scripts/setup, which installs every client the tests use"
    );
}

pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The `augur` binary: `AUGUR_BIN` when set (the shared target directory's `release/augur`
/// may be replaced by another worktree's build while tests run), else the one cargo built.
pub fn augur_bin() -> String {
    std::env::var("AUGUR_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_augur").to_string())
}

impl Server {
    /// Starts `augur serve` on `dir` with extra arguments, on a loopback port the server itself
    /// binds (`--listen 127.0.0.1:0`) and reports on its first line of output, so no other
    /// process can take the port between choosing it and binding it; returns once it listens.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let log = dir.with_extension(format!("{}-{n}.log", std::process::id()));
        let logf = std::fs::File::create(&log).unwrap();
        let mut child = Command::new(augur_bin())
            .args(["serve", "--data-dir"])
            .arg(dir)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(logf)
            .spawn()
            .expect("start augur");
        // "augur X listening on 127.0.0.1:PORT; connect with: ..." (src/bin/augur.rs).
        let out = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(out);
            let mut line = String::new();
            let _ = r.read_line(&mut line);
            let _ = tx.send(line);
            // Keep reading so the server never writes into a closed pipe.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let port = line
            .split_once(" listening on ")
            .and_then(|(_, rest)| rest.split(';').next())
            .and_then(|addr| addr.rsplit_once(':'))
            .and_then(|(_, p)| p.trim().parse::<u16>().ok());
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "server did not start (first output line {line:?}); log:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        let done = Arc::new(AtomicBool::new(false));
        watchdog(child.id(), port, log.clone(), done.clone());
        Server {
            child,
            port,
            dir: dir.to_path_buf(),
            log,
            done,
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: no shutdown steps at all.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait; returns the exit code.
    pub fn terminate(&mut self) -> Option<i32> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.code();
            }
            if Instant::now() > deadline {
                self.kill9();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Runs psql (no psqlrc, unaligned tuples only) with `args`, feeding `stdin`.
    pub fn psql(&self, args: &[&str], stdin: &str) -> Output {
        let mut c = Command::new("psql")
            .args([
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=0",
                "-h",
                "127.0.0.1",
                "-U",
                "augur",
                "-d",
                "augur",
            ])
            .args(["-p", &self.port.to_string()])
            .args(args)
            .env("PGCONNECT_TIMEOUT", "10")
            .env_remove("PGPASSWORD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("psql");
        c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        c.wait_with_output().unwrap()
    }

    /// psql -c, returning stdout; panics with stderr on failure.
    pub fn sql(&self, sql: &str) -> String {
        let o = self.psql(&["-v", "ON_ERROR_STOP=1", "-c", sql], "");
        assert!(
            o.status.success(),
            "psql -c {sql:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if self.alive() {
            self.kill9();
        }
    }
}

pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A protocol-3.0 StartupMessage for `user` and `db`.
pub fn startup_packet(user: &str, db: &str) -> Vec<u8> {
    startup_with(&[("user", user), ("database", db)])
}

/// A protocol-3.0 StartupMessage with these (name, value) parameters.
pub fn startup_with(params: &[(&str, &str)]) -> Vec<u8> {
    let mut body = 196608u32.to_be_bytes().to_vec();
    for (k, v) in params {
        body.extend(cstr(k));
        body.extend(cstr(v));
    }
    body.push(0);
    let mut v = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}

/// A frontend message: type byte, length, body.
pub fn msg(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// `s` as a protocol string (NUL-terminated).
pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// One backend message: (type byte, body).
pub fn read_msg(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut h = [0u8; 5];
    s.read_exact(&mut h)?;
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
    let mut body = vec![0u8; len.saturating_sub(4)];
    s.read_exact(&mut body)?;
    Ok((h[0], body))
}

/// A tokio-postgres client for user `augur` on the server at `port` (`extra`: more conninfo,
/// e.g. `password=...`); its connection task is spawned on the current runtime.
pub async fn pg_connect(port: u16, extra: &str) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={port} user=augur dbname=augur {extra}"),
        tokio_postgres::NoTls,
    )
    .await
    .expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// The first row of a simple-protocol query's results, its values as text, column by column.
pub async fn simple_row(c: &tokio_postgres::Client, sql: &str) -> Vec<Option<String>> {
    let msgs = c.simple_query(sql).await.unwrap();
    let row = msgs
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{sql}: no row"));
    (0..row.len()).map(|i| row.get(i).map(str::to_string)).collect()
}
