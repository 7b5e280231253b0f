//! The session time zone over the wire: the startup packet's `TimeZone` (and `options=-c
//! timezone=...`) is honoured and reported in ParameterStatus, an unknown one is FATAL 22023;
//! `SET TIME ZONE` sends ParameterStatus `TimeZone` before the next ReadyForQuery (simple and
//! extended protocol), a failed or unchanged one does not; text results and COPY TO print
//! timestamptz in the zone and COPY FROM reads it there, binary results stay UTC microseconds.

mod server_util;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use server_util::{cstr, msg, read_msg, startup_with, Server};

/// What a client saw up to ReadyForQuery (or the connection's end).
#[derive(Default, Debug)]
struct Seen {
    /// ParameterStatus (name, value) pairs, in order.
    params: Vec<(String, String)>,
    /// DataRow and CopyData payloads: each row's first column, or the copied line.
    values: Vec<Vec<u8>>,
    /// SQLSTATEs and severities of errors.
    errors: Vec<(String, String)>,
    ready: bool,
}

fn fields(body: &[u8]) -> Vec<String> {
    body.split(|&b| b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

fn until_ready(s: &mut TcpStream) -> Seen {
    let mut seen = Seen::default();
    while let Ok((t, body)) = read_msg(s) {
        match t {
            b'S' => {
                let f = fields(&body);
                seen.params.push((f[0].clone(), f[1].clone()));
            }
            b'D' => {
                let len = i32::from_be_bytes(body[2..6].try_into().unwrap());
                seen.values.push(if len < 0 {
                    vec![]
                } else {
                    body[6..6 + len as usize].to_vec()
                });
            }
            b'd' => seen.values.push(body),
            b'E' => {
                let f = fields(&body);
                let get = |c: char| {
                    f.iter()
                        .find_map(|x| x.strip_prefix(c))
                        .unwrap_or_default()
                        .to_string()
                };
                seen.errors.push((get('C'), get('S')));
            }
            b'Z' => {
                seen.ready = true;
                return seen;
            }
            _ => {}
        }
    }
    seen
}

fn connect(port: u16, params: &[(&str, &str)]) -> (TcpStream, Seen) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut all = vec![("user", "augur"), ("database", "augur")];
    all.extend_from_slice(params);
    s.write_all(&startup_with(&all)).unwrap();
    let seen = until_ready(&mut s);
    (s, seen)
}

fn query(s: &mut TcpStream, sql: &str) -> Seen {
    s.write_all(&msg(b'Q', &cstr(sql))).unwrap();
    until_ready(s)
}

/// Parse, Bind (results in `format`: 0 text, 1 binary), Execute, Sync of `sql`.
fn extended(s: &mut TcpStream, sql: &str, format: i16) -> Seen {
    let mut parse = cstr("");
    parse.extend(cstr(sql));
    parse.extend(0i16.to_be_bytes());
    let mut bind = cstr("");
    bind.extend(cstr(""));
    bind.extend(0i16.to_be_bytes());
    bind.extend(0i16.to_be_bytes());
    bind.extend(1i16.to_be_bytes());
    bind.extend(format.to_be_bytes());
    let mut execute = cstr("");
    execute.extend(0i32.to_be_bytes());
    let mut batch = msg(b'P', &parse);
    batch.extend(msg(b'B', &bind));
    batch.extend(msg(b'E', &execute));
    batch.extend(msg(b'S', &[]));
    s.write_all(&batch).unwrap();
    until_ready(s)
}

fn zone_reports(seen: &Seen) -> Vec<&str> {
    seen.params
        .iter()
        .filter(|(k, _)| k == "TimeZone")
        .map(|(_, v)| v.as_str())
        .collect()
}

const T: &str = "SELECT '2026-01-15 12:00:00+00'::timestamptz";

#[test]
fn session_time_zone_over_the_wire() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);

    // The default, then the startup parameter (pgjdbc sends the JVM's zone this way).
    let (mut s, seen) = connect(srv.port, &[]);
    assert_eq!(zone_reports(&seen), ["UTC"]);
    assert_eq!(query(&mut s, T).values, [b"2026-01-15 12:00:00+00".to_vec()]);

    let (mut s, seen) = connect(srv.port, &[("TimeZone", "europe/berlin")]);
    assert!(seen.ready && seen.errors.is_empty(), "{seen:?}");
    assert_eq!(zone_reports(&seen), ["Europe/Berlin"]);
    let r = query(&mut s, T);
    assert_eq!(r.values, [b"2026-01-15 13:00:00+01".to_vec()]);
    assert!(zone_reports(&r).is_empty(), "no change, no report: {r:?}");

    // SET reports the new value before ReadyForQuery; a failed SET changes nothing.
    let r = query(&mut s, "SET TIME ZONE 'Asia/Kolkata'");
    assert_eq!(zone_reports(&r), ["Asia/Kolkata"]);
    let r = query(&mut s, "SET TIME ZONE 'Foo/Bar'");
    assert_eq!(r.errors, [("22023".to_string(), "ERROR".to_string())]);
    assert!(zone_reports(&r).is_empty());
    assert_eq!(query(&mut s, T).values, [b"2026-01-15 17:30:00+05:30".to_vec()]);

    // COPY TO writes the zone's text too; COPY FROM reads a time without offset in it.
    let r = query(&mut s, &format!("COPY ({T}) TO STDOUT"));
    assert_eq!(r.values, [b"2026-01-15 17:30:00+05:30\n".to_vec()]);
    assert!(
        query(&mut s, "CREATE TABLE c (id int PRIMARY KEY, t timestamptz)")
            .errors
            .is_empty()
    );
    s.write_all(&msg(b'Q', &cstr("COPY c FROM STDIN"))).unwrap();
    assert_eq!(read_msg(&mut s).unwrap().0, b'G');
    s.write_all(&msg(b'd', b"1\t2026-01-15 17:30:00\n2\t2026-01-15 12:00:00+00\n"))
        .unwrap();
    s.write_all(&msg(b'c', &[])).unwrap();
    assert!(until_ready(&mut s).errors.is_empty());
    let r = query(
        &mut s,
        "SELECT count(*) FROM c WHERE t = '2026-01-15 12:00:00+00'",
    );
    assert_eq!(r.values, [b"2".to_vec()]);

    // The extended protocol: the report comes before the Sync's ReadyForQuery; text results
    // in the zone, binary ones UTC microseconds since 2000-01-01.
    let r = extended(&mut s, "SET timezone = -5", 0);
    assert_eq!(zone_reports(&r), ["<-05>+05"]);
    assert_eq!(
        extended(&mut s, T, 0).values,
        [b"2026-01-15 07:00:00-05".to_vec()]
    );
    let bin = extended(&mut s, T, 1).values;
    let micros = i64::from_be_bytes(bin[0].as_slice().try_into().unwrap());
    assert_eq!(micros, (1_768_478_400 - 946_684_800) * 1_000_000);
    // RESET goes back to the startup packet's zone (PostgreSQL's reset value), not UTC.
    let r = query(&mut s, "RESET timezone");
    assert_eq!(zone_reports(&r), ["Europe/Berlin"]);

    // libpq's PGTZ-style options, and an unknown zone (FATAL 22023, as PostgreSQL).
    let (mut s, seen) = connect(srv.port, &[("options", "-c timezone=America/New_York")]);
    assert_eq!(zone_reports(&seen), ["America/New_York"]);
    assert_eq!(query(&mut s, T).values, [b"2026-01-15 07:00:00-05".to_vec()]);
    let (_, seen) = connect(srv.port, &[("TimeZone", "Foo/Bar")]);
    assert_eq!(seen.errors, [("22023".to_string(), "FATAL".to_string())]);
    assert!(!seen.ready);
}
