//! The bad-input corpus (`tests/bad_input/`, format in its README): every SQL case runs through
//! the embedded `Session` and through `augur serve` with tokio-postgres (simple and extended
//! protocol); every wire case sends its raw bytes to the server. Each asserts the exact SQLSTATE
//! (PostgreSQL 15's unless the case says where Augur deliberately differs), that the same
//! session then answers `SELECT 1`, and that earlier data is intact.
//!
//! `BAD_INPUT_PG_PORT=PORT` runs the SQL and wire cases against a PostgreSQL 15 server on
//! 127.0.0.1:PORT (user `postgres`, database `bi`, trust authentication) instead, asserting
//! PostgreSQL's codes: that is how the expected codes were checked. `BAD_INPUT_FILTER=text`
//! runs only the cases whose file or name contains `text`.

mod common;

mod server_util;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use augur::sql::Limits;
use augur::{Database, Options, Session};
use server_util::{read_msg, startup_packet, Server};

// ------------------------------------------------------------------------------------------
// Case files
// ------------------------------------------------------------------------------------------

#[derive(Debug, Default, Clone)]
struct Case {
    file: String,
    name: String,
    line: usize,
    /// key -> values, in order (a key may repeat: `pre`, `send`).
    fields: Vec<(String, String)>,
}

impl Case {
    fn get(&self, k: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }
    fn all(&self, k: &str) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    fn id(&self) -> String {
        format!("{}:{} ({})", self.file, self.line, self.name)
    }
}

/// A file: its header fields (`setup`, `check`) and its cases.
struct CaseFile {
    header: Case,
    cases: Vec<Case>,
}

fn parse_file(path: &Path) -> CaseFile {
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let mut header = Case {
        file: file.clone(),
        name: "(file header)".into(),
        ..Case::default()
    };
    let mut cases: Vec<Case> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cur = cases.last_mut().unwrap_or(&mut header);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ") {
            // Continuation of the previous field.
            let last = cur
                .fields
                .last_mut()
                .unwrap_or_else(|| panic!("{file}:{}: continuation without a field", i + 1));
            last.1.push('\n');
            last.1.push_str(rest.trim_start());
            continue;
        }
        if let Some(name) = line.strip_prefix("case ") {
            let name = name.trim().to_string();
            assert!(
                !cases.iter().any(|c| c.name == name),
                "{file}:{}: duplicate case {name}",
                i + 1
            );
            cases.push(Case {
                file: file.clone(),
                name,
                line: i + 1,
                fields: vec![],
            });
            continue;
        }
        let (k, v) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{file}:{}: expected `key: value`, got {line:?}", i + 1));
        let k = k.trim();
        assert!(
            [
                "setup", "check", "pre", "sql", "expect", "augur", "post", "protocol", "note", "send",
                "connect", "eof", "pg", "pgwire", "reuse"
            ]
            .contains(&k),
            "{file}:{}: unknown key {k:?}",
            i + 1
        );
        cur.fields.push((k.to_string(), v.trim().to_string()));
    }
    CaseFile { header, cases }
}

fn corpus(kind: &str) -> Vec<(PathBuf, CaseFile)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bad_input")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cases"))
        .collect();
    files.sort();
    files.into_iter().map(|p| (p.clone(), parse_file(&p))).collect()
}

fn selected(c: &Case) -> bool {
    match std::env::var("BAD_INPUT_FILTER") {
        Ok(f) if !f.is_empty() => c.file.contains(&f) || c.name.contains(&f),
        _ => true,
    }
}

/// Expands `{{repeat N text}}` (text repeated N times) and `{{rows N}}` (`(1),(2),...,(N)`).
fn expand(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let j = rest[i..].find("}}").expect("unclosed {{") + i;
        let inner = &rest[i + 2..j];
        let mut parts = inner.splitn(3, ' ');
        let op = parts.next().unwrap();
        let n: usize = parts.next().unwrap().parse().unwrap();
        match op {
            "repeat" => out.push_str(&parts.next().unwrap_or("").repeat(n)),
            "rows" => {
                let v: Vec<String> = (1..=n).map(|k| format!("({k})")).collect();
                out.push_str(&v.join(","));
            }
            _ => panic!("unknown expansion {op}"),
        }
        rest = &rest[j + 2..];
    }
    out.push_str(rest);
    out
}

/// `SQL => answer`: the check query and its expected rows (`|` between columns, `; ` between
/// rows, NULL as `NULL`).
fn split_check(c: &str) -> (String, String) {
    let (q, a) = c.rsplit_once("=>").expect("check needs `=> answer`");
    (expand(q.trim()), a.trim().to_string())
}

fn render(rows: Rows) -> String {
    rows.into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Which code a case expects from the target: `augur:` overrides `expect:` for Augur.
fn expected(c: &Case, pg: bool, key: &str) -> Option<String> {
    let code = |v: &str| v.split_whitespace().next().unwrap_or("").to_string();
    if !pg {
        if let Some(a) = c.get("augur") {
            return Some(code(a));
        }
    }
    c.get(key).map(code)
}

fn pg_port() -> Option<u16> {
    std::env::var("BAD_INPUT_PG_PORT")
        .ok()
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("BAD_INPUT_PG_PORT"))
}

/// The limits the test server runs with (its flags) and the embedded sessions get.
fn test_limits() -> Limits {
    Limits {
        max_statement_bytes: Some(augur::server::DEFAULT_MAX_STATEMENT_BYTES),
        max_result_rows: Some(100_000),
        max_result_bytes: Some(64 << 20),
        statement_timeout: None,
    }
}
const SERVER_LIMIT_FLAGS: &[&str] = &["--max-result-rows", "100000", "--max-result-bytes", "67108864"];

// ------------------------------------------------------------------------------------------
// SQL cases
// ------------------------------------------------------------------------------------------

/// Rows as text (None: NULL).
type Rows = Vec<Vec<Option<String>>>;

/// One way of running SQL: the embedded session or a tokio-postgres connection.
trait Target {
    /// Runs SQL; Ok(rows as text) or Err(SQLSTATE or a description of a non-SQL failure).
    fn run(&mut self, sql: &str, extended: bool) -> Result<Rows, String>;
    fn label(&self) -> &'static str;
}

struct Embedded(Session);

impl Target for Embedded {
    fn run(&mut self, sql: &str, _extended: bool) -> Result<Rows, String> {
        match self.0.execute(sql, &[]) {
            Ok(rs) => Ok(rs
                .last()
                .map(|r| {
                    r.rows()
                        .iter()
                        .map(|row| row.iter().map(|v| v.to_text()).collect())
                        .collect()
                })
                .unwrap_or_default()),
            Err(e) => Err(e.sqlstate().code().to_string()),
        }
    }
    fn label(&self) -> &'static str {
        "embedded"
    }
}

struct Wire {
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Wire {
    fn connect(conn: &str) -> Wire {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(conn, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("connect {conn}: {e}"));
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client
        });
        Wire { rt, client }
    }
}

fn pg_err(e: tokio_postgres::Error) -> String {
    match e.code() {
        Some(c) => c.code().to_string(),
        None => format!("non-SQL error: {e}"),
    }
}

impl Target for Wire {
    fn run(&mut self, sql: &str, extended: bool) -> Result<Rows, String> {
        let client = &self.client;
        self.rt.block_on(async {
            let fut = async {
                if extended {
                    let rows = client.query(sql, &[]).await.map_err(pg_err)?;
                    // Extended results are typed; checks only use the simple protocol, so
                    // rows here are only counted.
                    Ok(rows.iter().map(|_| vec![]).collect())
                } else {
                    let msgs = client.simple_query(sql).await.map_err(pg_err)?;
                    let mut out = Vec::new();
                    for m in msgs {
                        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                            out.push((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect());
                        }
                    }
                    Ok(out)
                }
            };
            match tokio::time::timeout(Duration::from_secs(60), fut).await {
                Ok(r) => r,
                Err(_) => Err("hung: no answer within 60 s".to_string()),
            }
        })
    }
    fn label(&self) -> &'static str {
        "server"
    }
}

/// Runs one SQL file's cases on `t`; returns failures.
fn run_sql_file(t: &mut dyn Target, f: &CaseFile, pg: bool, extended: bool) -> Vec<String> {
    let mut fails = Vec::new();
    let proto = if extended { "extended" } else { "simple" };
    for s in f.header.all("setup") {
        if let Err(e) = t.run(&expand(s), false) {
            return vec![format!(
                "{} {}: setup {s:?} failed: {e}",
                t.label(),
                f.header.file
            )];
        }
    }
    let file_check = f.header.get("check");
    for c in f.cases.iter().filter(|c| selected(c)) {
        if pg && c.get("pg") == Some("skip") {
            continue;
        }
        if extended && c.get("protocol") == Some("simple") {
            continue;
        }
        let label = t.label();
        let mut fail = |m: String| fails.push(format!("{label} {proto} {}: {m}", c.id()));
        for p in c.all("pre") {
            if let Err(e) = t.run(&expand(p), false) {
                fail(format!("pre {p:?} failed: {e}"));
            }
        }
        let sql = expand(c.get("sql").expect("case without sql"));
        let want = expected(c, pg, "expect").expect("case without expect");
        let got = match t.run(&sql, extended) {
            Ok(_) => "ok".to_string(),
            Err(e) => e,
        };
        if got != want {
            fail(format!("expected {want}, got {got}"));
        }
        match t.run("SELECT 1", false) {
            Ok(r) if r == vec![vec![Some("1".to_string())]] => {}
            other => fail(format!("session unusable afterwards: SELECT 1 gave {other:?}")),
        }
        for p in c.all("post") {
            if let Err(e) = t.run(&expand(p), false) {
                fail(format!("post {p:?} failed: {e}"));
            }
        }
        if let Some(chk) = c.get("check").or(file_check) {
            let (q, want) = split_check(chk);
            match t.run(&q, false) {
                Ok(rows) if render(rows.clone()) == want => {}
                other => fail(format!("data check {q:?}: expected {want:?}, got {other:?}")),
            }
        }
    }
    fails
}

fn sql_cases_total() -> (usize, usize) {
    let files = corpus("sql");
    let n = files.iter().map(|(_, f)| f.cases.len()).sum();
    (files.len(), n)
}

#[test]
fn sql_cases() {
    let files = corpus("sql");
    let (nfiles, ncases) = sql_cases_total();
    let t0 = Instant::now();
    let mut fails = Vec::new();
    if let Some(port) = pg_port() {
        for (_, f) in &files {
            for extended in [false, true] {
                let mut w = Wire::connect(&format!(
                    "host=127.0.0.1 port={port} user=postgres dbname=bi connect_timeout=10"
                ));
                w.run("DROP SCHEMA public CASCADE; CREATE SCHEMA public", false)
                    .unwrap();
                fails.extend(run_sql_file(&mut w, f, true, extended));
            }
        }
        assert!(
            fails.is_empty(),
            "{} failures against PostgreSQL:\n{}",
            fails.len(),
            fails.join("\n")
        );
        eprintln!("PostgreSQL agrees with {ncases} SQL cases in {nfiles} files");
        return;
    }
    // (a) embedded: a fresh database per file.
    for (_, f) in &files {
        let (_dir, db) = common::open_nosync();
        let mut s = Session::new(db.clone());
        s.set_limits(test_limits());
        fails.extend(run_sql_file(&mut Embedded(s), f, false, false));
        db.close().unwrap();
    }
    let embedded = t0.elapsed();
    // (b) the server: one per protocol, a fresh connection per file.
    let tmp = tempfile::tempdir().unwrap();
    for extended in [false, true] {
        let dir = tmp.path().join(if extended { "ext" } else { "simple" });
        let mut srv = Server::start(&dir, SERVER_LIMIT_FLAGS);
        for (_, f) in &files {
            let mut w = Wire::connect(&format!(
                "host=127.0.0.1 port={} user=augur dbname=augur connect_timeout=10",
                srv.port
            ));
            fails.extend(run_sql_file(&mut w, f, false, extended));
        }
        assert!(srv.alive(), "server died; log:\n{}", srv.log_text());
        let log = srv.log_text();
        assert!(
            !log.contains("panic in"),
            "a statement panicked the server:\n{log}"
        );
        assert_eq!(srv.terminate(), Some(0));
    }
    assert!(
        fails.is_empty(),
        "{} failures:\n{}",
        fails.len(),
        fails.join("\n")
    );
    eprintln!(
        "{ncases} SQL cases in {nfiles} files: embedded {:.1}s, server (simple + extended) {:.1}s",
        embedded.as_secs_f64(),
        (t0.elapsed() - embedded).as_secs_f64()
    );
}

// ------------------------------------------------------------------------------------------
// Wire cases
// ------------------------------------------------------------------------------------------

/// Tokens of a `send:` line, in order: a message type letter (the message is framed with its
/// length) or `raw` (bytes as given); then fields: `s"text"` (NUL-terminated), `b"text"`
/// (bytes), `i8:N`, `i16:N`, `i32:N` (big-endian), `x:HEX` (bytes), `startup:USER` (a whole
/// startup packet).
fn encode_send(line: &str, user: &str, db: &str) -> Vec<u8> {
    let toks = tokenize(line);
    let (head, fields) = toks.split_first().expect("empty send");
    let mut body = Vec::new();
    for f in fields {
        if let Some(s) = f.strip_prefix("s\"") {
            body.extend_from_slice(&unescape(s.strip_suffix('"').unwrap()));
            body.push(0);
        } else if let Some(s) = f.strip_prefix("b\"") {
            body.extend_from_slice(&unescape(s.strip_suffix('"').unwrap()));
        } else if let Some(n) = f.strip_prefix("i8:") {
            body.push(n.parse::<i8>().unwrap() as u8);
        } else if let Some(n) = f.strip_prefix("i16:") {
            body.extend_from_slice(&n.parse::<i16>().unwrap().to_be_bytes());
        } else if let Some(n) = f.strip_prefix("i32:") {
            body.extend_from_slice(&n.parse::<i32>().unwrap().to_be_bytes());
        } else if let Some(h) = f.strip_prefix("x:") {
            let h: String = h.chars().filter(|c| !c.is_whitespace() && *c != '_').collect();
            for i in (0..h.len()).step_by(2) {
                body.push(u8::from_str_radix(&h[i..i + 2], 16).unwrap());
            }
        } else if let Some(n) = f.strip_prefix("zeros:") {
            body.extend(std::iter::repeat_n(0u8, n.parse::<usize>().unwrap()));
        } else if f == "startup" {
            body.extend_from_slice(&startup_packet(user, db));
        } else {
            panic!("bad field {f:?} in send {line:?}");
        }
    }
    match head.as_str() {
        "raw" => body,
        t if t.len() == 1 => {
            let mut v = vec![t.as_bytes()[0]];
            v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
            v.extend_from_slice(&body);
            v
        }
        t => panic!("bad message type {t:?}"),
    }
}

fn tokenize(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_q = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_q => {
                cur.push(c);
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '"' => {
                in_q = !in_q;
                cur.push(c);
            }
            c if c.is_whitespace() && !in_q => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn unescape(s: &str) -> Vec<u8> {
    let s = expand(s);
    let mut out = Vec::new();
    let mut it = s.bytes();
    while let Some(b) = it.next() {
        if b == b'\\' {
            match it.next() {
                Some(b'0') => out.push(0),
                Some(b'n') => out.push(b'\n'),
                Some(b't') => out.push(b'\t'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// What a connection did after the case's bytes: the SQLSTATEs of its errors, and whether it
/// ended with ReadyForQuery (`ready`), a close (`close`) or silence (`hung`).
fn observe(s: &mut TcpStream) -> (Vec<String>, &'static str) {
    let mut codes = Vec::new();
    loop {
        match read_msg(s) {
            Ok((b'E', body)) => {
                for f in body.split(|&b| b == 0) {
                    if let Some(c) = f.strip_prefix(b"C") {
                        codes.push(String::from_utf8_lossy(c).into_owned());
                    }
                }
            }
            Ok((b'Z', _)) => return (codes, "ready"),
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (codes, "hung")
            }
            Err(_) => return (codes, "close"),
        }
    }
}

fn wire_connect(port: u16, user: &str, db: &str, startup: bool) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    if startup {
        s.write_all(&startup_packet(user, db)).unwrap();
        let (codes, end) = observe(&mut s);
        assert!(
            codes.is_empty() && end == "ready",
            "startup failed: {codes:?} {end}"
        );
    }
    s
}

fn simple(s: &mut TcpStream, sql: &str) -> Result<Vec<String>, String> {
    let mut b = sql.as_bytes().to_vec();
    b.push(0);
    let mut m = vec![b'Q'];
    m.extend_from_slice(&((b.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(&b);
    s.write_all(&m).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let mut codes = Vec::new();
    loop {
        let (t, body) = read_msg(s).map_err(|e| e.to_string())?;
        match t {
            b'D' => {
                // One text column per row is all the checks need: render every column.
                let n = u16::from_be_bytes([body[0], body[1]]) as usize;
                let mut p = 2;
                let mut cols = Vec::new();
                for _ in 0..n {
                    let len = i32::from_be_bytes([body[p], body[p + 1], body[p + 2], body[p + 3]]);
                    p += 4;
                    if len < 0 {
                        cols.push("NULL".to_string());
                    } else {
                        cols.push(String::from_utf8_lossy(&body[p..p + len as usize]).into_owned());
                        p += len as usize;
                    }
                }
                rows.push(cols.join("|"));
            }
            b'E' => codes.push(String::from_utf8_lossy(&body).into_owned()),
            b'Z' => break,
            _ => {}
        }
    }
    if codes.is_empty() {
        Ok(rows)
    } else {
        Err(codes.join(","))
    }
}

/// Log lines of contained pgwire decoder panics so far.
fn decoder_panics(srv: &Server) -> usize {
    srv.log_text()
        .lines()
        .filter(|l| l.contains("decoder panic contained"))
        .count()
}

#[test]
fn wire_cases() {
    let files = corpus("wire");
    let ncases: usize = files.iter().map(|(_, f)| f.cases.len()).sum();
    let t0 = Instant::now();
    let pg = pg_port();
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = match pg {
        Some(_) => None,
        None => Some(Server::start(&tmp.path().join("data"), SERVER_LIMIT_FLAGS)),
    };
    let (port, user, db) = match (pg, &srv) {
        (Some(p), _) => (p, "postgres", "bi"),
        (None, Some(s)) => (s.port, "augur", "augur"),
        _ => unreachable!(),
    };
    let mut fails = Vec::new();
    let mut panicked = Vec::new();
    for (_, f) in &files {
        // Setup on a fresh connection; the check runs on a new connection after every case.
        let mut s = wire_connect(port, user, db, true);
        if pg.is_some() {
            simple(&mut s, "DROP SCHEMA public CASCADE; CREATE SCHEMA public").unwrap();
        }
        for q in f.header.all("setup") {
            if let Err(e) = simple(&mut s, &expand(q)) {
                panic!("{}: setup {q:?}: {e}", f.header.file);
            }
        }
        drop(s);
        let (check_q, check_want) = split_check(f.header.get("check").expect("wire file needs a check"));
        for c in f.cases.iter().filter(|c| selected(c)) {
            if pg.is_some() && c.get("pg") == Some("skip") {
                continue;
            }
            let mut fail = |m: String| fails.push(format!("{}: {m}", c.id()));
            let before = srv.as_ref().map(decoder_panics).unwrap_or(0);
            let startup = c.get("connect") != Some("raw");
            let mut s = wire_connect(port, user, db, startup);
            for p in c.all("pre") {
                if let Err(e) = simple(&mut s, &expand(p)) {
                    fail(format!("pre {p:?}: {e}"));
                }
            }
            let mut bytes = Vec::new();
            for l in c.all("send") {
                bytes.extend(encode_send(l, user, db));
            }
            let _ = s.write_all(&bytes);
            if c.get("eof") == Some("yes") {
                let _ = s.shutdown(Shutdown::Write);
            }
            let (codes, end) = observe(&mut s);
            let got = if codes.is_empty() {
                end.to_string()
            } else {
                format!("{} {end}", codes.join(" "))
            };
            let want = {
                let w = if pg.is_none() {
                    c.get("augur").or(c.get("expect"))
                } else {
                    c.get("expect")
                };
                w.expect("case without expect").to_string()
            };
            // An `augur:` line may carry a reason after `--`.
            let want = want.split("--").next().unwrap().trim().to_string();
            if got != want {
                fail(format!("expected `{want}`, got `{got}`"));
            }
            let reuse = !(pg.is_none() && c.get("reuse") == Some("no"));
            if end == "ready" && c.get("eof") != Some("yes") && reuse {
                match simple(&mut s, "SELECT 1") {
                    Ok(r) if r == ["1"] => {}
                    other => fail(format!("connection unusable afterwards: {other:?}")),
                }
            }
            drop(s);
            if let Some(srv) = srv.as_mut() {
                if !srv.alive() {
                    panic!("{}: the server died; log:\n{}", c.id(), srv.log_text());
                }
                // Give the server a moment to log a contained panic.
                std::thread::sleep(Duration::from_millis(20));
                let panics = decoder_panics(srv) > before;
                let marked = c.get("pgwire") == Some("panics");
                if panics {
                    panicked.push(c.name.clone());
                }
                if panics != marked {
                    fail(format!(
                        "pgwire decoder panic: {panics}, but the case says {}",
                        if marked { "it panics" } else { "it does not" }
                    ));
                }
            }
            let mut n = wire_connect(port, user, db, true);
            match simple(&mut n, &check_q) {
                Ok(rows) if rows.join("; ") == check_want => {}
                other => fail(format!(
                    "data check {check_q:?}: expected {check_want:?}, got {other:?}"
                )),
            }
        }
    }
    if let Some(srv) = srv.as_mut() {
        assert!(srv.alive());
        let log = srv.log_text();
        let panics = log.lines().filter(|l| l.contains("panic in")).count();
        assert_eq!(
            panics,
            decoder_panics(srv),
            "a panic other than pgwire's decoder:\n{log}"
        );
        assert_eq!(srv.terminate(), Some(0));
    }
    assert!(
        fails.is_empty(),
        "{} failures:\n{}",
        fails.len(),
        fails.join("\n")
    );
    eprintln!(
        "{ncases} wire cases against {} in {:.1}s; contained pgwire decoder panics: {panicked:?}",
        if pg.is_some() { "PostgreSQL" } else { "augur serve" },
        t0.elapsed().as_secs_f64()
    );
}

/// Parameters are bound as values, never spliced into SQL text: an injection attempt is stored
/// verbatim, through the embedded session and both server protocols, and the table survives.
#[test]
fn parameters_are_never_spliced() {
    let evil = "x'); DROP TABLE inj; --";
    let evil2 = "1; DELETE FROM inj";
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("e"), Options::default()).unwrap();
    db.execute("CREATE TABLE inj (id int PRIMARY KEY, v text)", &[])
        .unwrap();
    db.execute("INSERT INTO inj VALUES ($1, $2)", &[1.into(), evil.into()])
        .unwrap();
    let mut s = Session::new(db.clone());
    let p = s.prepare("INSERT INTO inj VALUES ($1, $2)").unwrap();
    s.execute_prepared(&p, &[2.into(), evil2.into()]).unwrap();
    // A text parameter where an integer is expected is a value error, not SQL.
    let e = s
        .execute("SELECT v FROM inj WHERE id = $1", &[evil2.into()])
        .unwrap_err();
    assert_eq!(e.sqlstate().code(), "22P02");
    let rows = db.query("SELECT id, v FROM inj ORDER BY id", &[]).unwrap();
    assert_eq!(
        rows,
        vec![vec![1.into(), evil.into()], vec![2.into(), evil2.into()]]
    );
    db.close().unwrap();

    let mut srv = Server::start(&dir.path().join("s"), &[]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(
            &format!("host=127.0.0.1 port={} user=augur dbname=augur", srv.port),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        c.batch_execute("CREATE TABLE inj (id int PRIMARY KEY, v text)")
            .await
            .unwrap();
        c.execute("INSERT INTO inj VALUES ($1, $2)", &[&1i32, &evil])
            .await
            .unwrap();
        c.execute("INSERT INTO inj VALUES ($1, $2)", &[&2i32, &evil2])
            .await
            .unwrap();
        // The same value as a filter matches exactly the stored row.
        let r = c
            .query("SELECT id FROM inj WHERE v = $1", &[&evil])
            .await
            .unwrap();
        assert_eq!(r.len(), 1);
        let e = c.query(
            "SELECT v FROM inj WHERE id::text = $1 OR v = $2",
            &[&"1 OR 1=1", &"' OR ''='"],
        );
        assert_eq!(e.await.unwrap().len(), 0);
        let rows = c.simple_query("SELECT id, v FROM inj ORDER BY id").await.unwrap();
        let got: Vec<String> = rows
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => {
                    Some(format!("{}|{}", r.get(0).unwrap(), r.get(1).unwrap()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(got, vec![format!("1|{evil}"), format!("2|{evil2}")]);
    });
    assert!(srv.alive());
    assert_eq!(srv.terminate(), Some(0));
}

/// The corpus is big enough (issue 8: at least 200 cases, at least 40 of them wire cases).
#[test]
fn corpus_size() {
    let (_, sql) = sql_cases_total();
    let wire: usize = corpus("wire").iter().map(|(_, f)| f.cases.len()).sum();
    assert!(wire >= 40, "{wire} wire cases");
    assert!(sql + wire >= 200, "{sql} SQL + {wire} wire cases");
}

/// `statement_timeout` values as PostgreSQL reads them, and the nesting estimate's bound.
#[test]
fn timeout_values_and_nesting_estimate() {
    use augur::sql::{nesting_estimate, parse_timeout};
    let ms = |v: &str| parse_timeout(v).map(|d| d.map(|d| d.as_millis()));
    assert_eq!(ms("0").unwrap(), None);
    assert_eq!(ms("250").unwrap(), Some(250));
    assert_eq!(ms("250ms").unwrap(), Some(250));
    assert_eq!(ms("1.5s").unwrap(), Some(1500));
    assert_eq!(ms("2 min").unwrap(), Some(120_000));
    assert_eq!(ms("1h").unwrap(), Some(3_600_000));
    for bad in ["soon", "-5", "10 parsecs", "30d", "", "1e99"] {
        assert_eq!(ms(bad).unwrap_err().sqlstate().code(), "22023", "{bad:?}");
    }
    assert_eq!(nesting_estimate("SELECT 1"), 1);
    assert!(nesting_estimate(&format!("SELECT 1{}", "+1".repeat(5000))) >= 5000);
    assert!(nesting_estimate(&format!("SELECT {}1{}", "(".repeat(3000), ")".repeat(3000))) >= 3000);
    // Lists, strings, comments and statements do not add up.
    let list: Vec<String> = (0..5000).map(|i| format!("-{i}")).collect();
    assert!(nesting_estimate(&format!("SELECT * FROM t WHERE id IN ({})", list.join(","))) < 10);
    assert!(
        nesting_estimate(&format!(
            "SELECT '{}' -- {}\n",
            "+".repeat(5000),
            "+".repeat(5000)
        )) < 5
    );
    assert!(nesting_estimate(&"SELECT 1 + 1;".repeat(3000)) < 5);
    assert!(
        nesting_estimate(&format!(
            "SELECT $${}$$, E'\\'{}'",
            "(".repeat(3000),
            "+".repeat(3000)
        )) < 5
    );
}
