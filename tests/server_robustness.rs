//! Bad input and limits: malformed, oversized and unknown messages, clients that vanish in the
//! middle of a message or a COPY, connections past `--max-connections`; plus SCRAM-SHA-256
//! authentication, TLS, and the refusal to serve a non-loopback address without a password.
//! Throughout: the server stays up, nothing panics, committed data is intact.

mod server_util;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use server_util::{cstr, msg, read_msg, require, startup_packet, text, Server};

/// Reads messages until ReadyForQuery; returns their types and the SQLSTATEs of errors.
fn until_ready(s: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<String>)> {
    let mut types = Vec::new();
    let mut codes = Vec::new();
    loop {
        let (t, body) = read_msg(s)?;
        types.push(t);
        if t == b'E' {
            for f in body.split(|&b| b == 0) {
                if let Some(c) = f.strip_prefix(b"C") {
                    codes.push(String::from_utf8_lossy(c).into_owned());
                }
            }
        }
        if t == b'Z' {
            return Ok((types, codes));
        }
    }
}

fn connect(port: u16) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&startup_packet("augur", "augur")).unwrap();
    until_ready(&mut s).unwrap();
    s
}

/// The server closes the connection (EOF or reset) within the read timeout.
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
}

fn query(s: &mut TcpStream, sql: &str) -> (Vec<u8>, Vec<String>) {
    let mut b = sql.as_bytes().to_vec();
    b.push(0);
    s.write_all(&msg(b'Q', &b)).unwrap();
    until_ready(s).unwrap()
}

#[test]
fn bad_input_and_connection_limits() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start(&tmp.path().join("data"), &["--max-connections", "4"]);
    srv.sql("create table k (id int primary key, v text); insert into k values (1, 'one'), (2, 'two')");
    let port = srv.port;

    // Not PostgreSQL at all.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(closed(&mut s));
    // A startup packet claiming 2 GB.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 3, 0, 0]).unwrap();
    assert!(closed(&mut s));
    // A startup packet with a bad protocol version.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[0, 0, 0, 8, 0, 9, 0, 0]).unwrap();
    assert!(closed(&mut s));
    // No user name.
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[0, 0, 0, 9, 0, 3, 0, 0, 0]).unwrap();
    assert!(closed(&mut s));

    // After a good startup: an unknown message type, malformed lengths, oversized messages.
    for bad in [
        msg(b'?', b"whatever"),
        vec![b'Q', 0, 0, 0, 0],
        vec![b'Q', 0, 0, 0, 2, b'x'],
        vec![b'Q', 0x7f, 0xff, 0xff, 0xff, b's'],
        msg(b'B', &[0, 0, 0, 0, 0xff, 0xff]),
        msg(b'P', b"no terminators"),
        msg(b'D', b"Xnope\0"),
    ] {
        let mut s = connect(port);
        s.write_all(&bad).unwrap();
        // Either an answer and ReadyForQuery (and the connection stays usable) or a close.
        if until_ready(&mut s).is_ok() {
            let mut q = b"select 1".to_vec();
            q.push(0);
            if s.write_all(&msg(b'Q', &q)).is_ok() {
                if let Ok((_, codes)) = until_ready(&mut s) {
                    assert!(codes.is_empty(), "{bad:?}: {codes:?}");
                }
            }
        }
    }

    // A client that disconnects in the middle of a message.
    let mut s = connect(port);
    let mut q = msg(b'Q', b"insert into k values (3, 'three')\0");
    q.truncate(10);
    s.write_all(&q).unwrap();
    drop(s);

    // A client that disconnects in the middle of a COPY: nothing of it is inserted.
    let mut s = connect(port);
    s.write_all(&msg(b'Q', b"copy k from stdin\0")).unwrap();
    let (t, _) = read_msg(&mut s).unwrap();
    assert_eq!(t, b'G', "CopyInResponse expected");
    s.write_all(&msg(b'd', b"10\tten\n11\telev")).unwrap();
    drop(s);
    // CopyFail aborts cleanly and the connection goes on.
    let mut s = connect(port);
    s.write_all(&msg(b'Q', b"copy k from stdin\0")).unwrap();
    assert_eq!(read_msg(&mut s).unwrap().0, b'G');
    s.write_all(&msg(b'd', b"20\ttwenty\n")).unwrap();
    s.write_all(&msg(b'f', b"client gave up\0")).unwrap();
    let (_, codes) = until_ready(&mut s).unwrap();
    assert_eq!(codes, ["57014"]);
    let (_, codes) = query(&mut s, "select 1");
    assert!(codes.is_empty());
    // A non-COPY message during COPY is a protocol violation.
    s.write_all(&msg(b'Q', b"copy k from stdin\0")).unwrap();
    assert_eq!(read_msg(&mut s).unwrap().0, b'G');
    s.write_all(&msg(b'Q', b"select 1\0")).unwrap();
    let (_, codes) = until_ready(&mut s).unwrap();
    assert_eq!(codes, ["08P01"]);
    drop(s);

    // Connections past --max-connections (4) get 53300 and are closed; the others are fine.
    std::thread::sleep(Duration::from_millis(300));
    let mut held: Vec<TcpStream> = (0..4).map(|_| connect(port)).collect();
    let o = srv.psql(&["-c", "select 1"], "");
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.contains("too many clients"), "{err}");
    let mut flood = Vec::new();
    for _ in 0..20 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&startup_packet("augur", "augur")).unwrap();
        flood.push(s);
    }
    for s in &mut flood {
        let (t, body) = read_msg(s).unwrap();
        assert_eq!(t, b'E');
        assert!(String::from_utf8_lossy(&body).contains("53300"));
        assert!(closed(s));
    }
    let (_, codes) = query(&mut held[0], "select count(*) from k");
    assert!(codes.is_empty());
    drop(held);
    std::thread::sleep(Duration::from_millis(300));

    // Still up, data intact, nothing panicked.
    assert!(srv.alive());
    assert_eq!(srv.sql("select id, v from k order by id"), "1|one\n2|two\n");
    // pgwire 0.42.1's decoder panics on some malformed frontend messages; the server contains
    // that to the connection (closed) and logs it. Anything else panicking is a failure.
    let log = srv.log_text();
    let panics = log.lines().filter(|l| l.contains("panic in")).count();
    let contained = log
        .lines()
        .filter(|l| l.contains("decoder panic contained"))
        .count();
    assert_eq!(panics, contained, "{log}");
    assert!(contained <= 7, "{log}");
    assert_eq!(srv.terminate(), Some(0));
}

#[test]
fn scram_authentication_and_tls() {
    require("psql");
    require("openssl");
    let tmp = tempfile::tempdir().unwrap();
    let crt = tmp.path().join("server.crt");
    let key = tmp.path().join("server.key");
    let st = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    let users = tmp.path().join("users");
    std::fs::write(&users, "# name:password\nalice:wonderland\n").unwrap();
    let srv = Server::start(
        &tmp.path().join("data"),
        &[
            "--password",
            "s3cret",
            "--users-file",
            users.to_str().unwrap(),
            "--tls-cert",
            crt.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let psql = |user: &str, pw: &str, ssl: &str| {
        Command::new("psql")
            .args(["-X", "-At", "-c", "select 42"])
            .arg(format!(
                "host=127.0.0.1 port={} user={user} dbname=augur sslmode={ssl} connect_timeout=10",
                srv.port
            ))
            .env("PGPASSWORD", pw)
            .output()
            .unwrap()
    };
    let o = psql("augur", "s3cret", "disable");
    assert_eq!(text(&o).0.trim(), "42", "{:?}", text(&o));
    let o = psql("alice", "wonderland", "require");
    assert_eq!(text(&o).0.trim(), "42", "{:?}", text(&o));
    let o = psql("augur", "wrong", "disable");
    assert!(!o.status.success());
    assert!(
        text(&o)
            .1
            .to_lowercase()
            .contains("password authentication failed"),
        "{:?}",
        text(&o)
    );
    let o = psql("nobody", "s3cret", "prefer");
    assert!(!o.status.success());
    // sslmode=require really negotiates TLS.
    let o = Command::new("psql")
        .args(["-X", "-At", "-c", "\\conninfo"])
        .arg(format!(
            "host=127.0.0.1 port={} user=augur dbname=augur sslmode=require",
            srv.port
        ))
        .env("PGPASSWORD", "s3cret")
        .output()
        .unwrap();
    assert!(text(&o).0.contains("SSL connection"), "{:?}", text(&o));

    // Without a password, a non-loopback address is refused (nothing is bound).
    let o = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["serve", "--data-dir"])
        .arg(tmp.path().join("other"))
        .args(["--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("without authentication"));
}

/// Extended-protocol replies wait for Sync or Flush (PostgreSQL's behaviour: one write per
/// round trip), Flush sends what is pending without ReadyForQuery, and a COPY's CopyInResponse
/// goes out at once (the client sends its data only after seeing it, before any Sync).
#[test]
fn extended_replies_are_sent_at_sync_or_flush() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[]);
    let mut s = connect(srv.port);
    let (_, codes) = query(
        &mut s,
        "CREATE TABLE t (k int8 PRIMARY KEY, v text); INSERT INTO t VALUES (7, 'seven')",
    );
    assert!(codes.is_empty(), "{codes:?}");

    let mut parse = cstr("s1");
    parse.extend(cstr("SELECT v FROM t WHERE k = $1"));
    parse.extend(0i16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr("s1"));
    bind.extend(0i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend(1i32.to_be_bytes());
    bind.extend(b"7");
    bind.extend(0i16.to_be_bytes());
    let mut describe = vec![b'P'];
    describe.extend(cstr(""));
    let mut execute = cstr("");
    execute.extend(0i32.to_be_bytes());
    let mut batch = msg(b'P', &parse);
    batch.extend(msg(b'B', &bind));
    batch.extend(msg(b'D', &describe));
    batch.extend(msg(b'E', &execute));
    s.write_all(&batch).unwrap();

    // Nothing before Sync or Flush.
    s.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut one = [0u8; 1];
    match s.read(&mut one) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) => {}
        other => panic!("a reply arrived before Sync/Flush: {other:?}"),
    }
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();

    // Flush: everything so far, no ReadyForQuery.
    s.write_all(&msg(b'H', &[])).unwrap();
    let mut types = Vec::new();
    let mut row = Vec::new();
    while types.last() != Some(&b'C') {
        let (t, body) = read_msg(&mut s).unwrap();
        if t == b'D' {
            row = body;
        }
        types.push(t);
    }
    assert_eq!(types, b"12TDC".to_vec());
    assert!(row.ends_with(b"seven"), "{row:?}");
    s.write_all(&msg(b'S', &[])).unwrap();
    assert_eq!(read_msg(&mut s).unwrap().0, b'Z');

    // COPY FROM STDIN through the extended protocol: CopyInResponse arrives without a Sync.
    let mut parse = cstr("");
    parse.extend(cstr("COPY t FROM STDIN"));
    parse.extend(0i16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr(""));
    bind.extend([0u8; 6]);
    let mut batch = msg(b'P', &parse);
    batch.extend(msg(b'B', &bind));
    batch.extend(msg(b'E', &execute));
    s.write_all(&batch).unwrap();
    let mut types = Vec::new();
    while types.last() != Some(&b'G') {
        types.push(read_msg(&mut s).unwrap().0);
    }
    assert_eq!(types, b"12G".to_vec());
    s.write_all(&msg(b'd', b"8\teight\n")).unwrap();
    s.write_all(&msg(b'c', &[])).unwrap();
    s.write_all(&msg(b'S', &[])).unwrap();
    let (types, codes) = until_ready(&mut s).unwrap();
    assert!(codes.is_empty() && types.contains(&b'C'), "{types:?} {codes:?}");
    let (_, codes) = query(&mut s, "SELECT 1");
    assert!(codes.is_empty());
    assert!(srv.sql("SELECT v FROM t WHERE k = 8").contains("eight"));
}

/// A portal's Describe and Execute (answered from the statement's columns and the session's
/// result, without pgwire's portal machinery) reply as PostgreSQL does: RowDescription in the
/// formats Bind asked for, NoData for a statement without rows, the rows, and the statement's
/// own command tag (`SHOW` has no row count).
#[test]
fn portal_describe_and_execute_reply_as_postgresql() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path(), &[]);
    let mut s = connect(srv.port);
    let (_, codes) = query(
        &mut s,
        "CREATE TABLE t (k int8 PRIMARY KEY, v text); INSERT INTO t VALUES (7, 'seven'), (8, 'eight')",
    );
    assert!(codes.is_empty(), "{codes:?}");

    // Parse, Bind (text parameters; every result column binary if asked), Describe portal,
    // Execute, Sync: the reply's messages up to ReadyForQuery.
    let run = |s: &mut TcpStream, sql: &str, params: &[&str], binary: bool, max_rows: i32| {
        let mut parse = cstr("");
        parse.extend(cstr(sql));
        parse.extend(0i16.to_be_bytes());
        let mut bind = cstr("");
        bind.extend(cstr(""));
        bind.extend(0i16.to_be_bytes());
        bind.extend((params.len() as i16).to_be_bytes());
        for p in params {
            bind.extend((p.len() as i32).to_be_bytes());
            bind.extend(p.as_bytes());
        }
        bind.extend(if binary {
            [0u8, 1, 0, 1].as_slice()
        } else {
            [0u8, 0].as_slice()
        });
        let mut describe = vec![b'P'];
        describe.extend(cstr(""));
        let mut execute = cstr("");
        execute.extend(max_rows.to_be_bytes());
        let mut batch = msg(b'P', &parse);
        batch.extend(msg(b'B', &bind));
        batch.extend(msg(b'D', &describe));
        batch.extend(msg(b'E', &execute));
        batch.extend(msg(b'S', &[]));
        s.write_all(&batch).unwrap();
        let mut out: Vec<(u8, Vec<u8>)> = Vec::new();
        while out.last().is_none_or(|m| m.0 != b'Z') {
            out.push(read_msg(s).unwrap());
        }
        out
    };
    let types = |r: &[(u8, Vec<u8>)]| r.iter().map(|m| m.0).collect::<Vec<u8>>();
    let tag = |r: &[(u8, Vec<u8>)]| {
        let body = &r.iter().find(|m| m.0 == b'C').expect("CommandComplete").1;
        String::from_utf8_lossy(body.strip_suffix(b"\0").unwrap()).into_owned()
    };
    // RowDescription: each field's (name, type oid, format code).
    let fields = |body: &[u8]| {
        let mut out = Vec::new();
        let mut rest = &body[2..];
        for _ in 0..i16::from_be_bytes([body[0], body[1]]) {
            let end = rest.iter().position(|&b| b == 0).unwrap();
            let name = String::from_utf8_lossy(&rest[..end]).into_owned();
            let f = &rest[end + 1..end + 19];
            let oid = u32::from_be_bytes([f[6], f[7], f[8], f[9]]);
            let format = i16::from_be_bytes([f[16], f[17]]);
            out.push((name, oid, format));
            rest = &rest[end + 19..];
        }
        out
    };

    let r = run(&mut s, "SELECT k, v FROM t WHERE k = $1", &["7"], true, 0);
    assert_eq!(types(&r), b"12TDCZ".to_vec());
    assert_eq!(
        fields(&r[2].1),
        [("k".to_string(), 20, 1), ("v".to_string(), 25, 1)]
    );
    let mut row = 2i16.to_be_bytes().to_vec();
    row.extend(8i32.to_be_bytes());
    row.extend(7i64.to_be_bytes());
    row.extend(5i32.to_be_bytes());
    row.extend(b"seven");
    assert_eq!(r[3].1, row);
    assert_eq!(tag(&r), "SELECT 1");

    let r = run(&mut s, "SELECT v FROM t ORDER BY k", &[], false, 0);
    assert_eq!(types(&r), b"12TDDCZ".to_vec());
    assert_eq!(fields(&r[2].1), [("v".to_string(), 25, 0)]);
    assert_eq!(tag(&r), "SELECT 2");
    // A row limit the rows reach suspends the portal, as in PostgreSQL (it cannot tell there
    // are no more); one above them completes it.
    let r = run(&mut s, "SELECT v FROM t ORDER BY k", &[], false, 2);
    assert_eq!(types(&r), b"12TDDsZ".to_vec());
    let r = run(&mut s, "SELECT v FROM t ORDER BY k", &[], false, 3);
    assert_eq!(types(&r), b"12TDDCZ".to_vec());
    assert_eq!(tag(&r), "SELECT 2");

    let r = run(&mut s, "UPDATE t SET v = $1 WHERE k = 8", &["huit"], false, 0);
    assert_eq!(types(&r), b"12nCZ".to_vec());
    assert_eq!(tag(&r), "UPDATE 1");

    let r = run(&mut s, "SHOW datestyle", &[], false, 0);
    assert_eq!(types(&r), b"12TDCZ".to_vec());
    assert_eq!(tag(&r), "SHOW");
    assert!(srv.sql("SELECT v FROM t WHERE k = 8").contains("huit"));
}
