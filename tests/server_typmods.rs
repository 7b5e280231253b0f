//! The type modifiers RowDescription carries for result columns (what pgjdbc's
//! ResultSetMetaData.getPrecision / getScale and SQLAlchemy read), over the raw wire protocol
//! (tokio-postgres does not expose them): a column reference keeps its column's declared
//! `varchar(n)` / `character(n)` / `numeric(p, s)` modifier through subqueries, CTEs, views,
//! set operations and RETURNING, a cast with a length has that length, and other expressions
//! have none. Every expected (OID, typmod) pair is what PostgreSQL 15.18 sends for the same
//! statement (probed with a raw-protocol client reading RowDescription).

mod server_util;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use server_util::{msg, read_msg, startup_packet, Server};

fn connect(srv: &Server) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(&startup_packet("augur", "augur")).unwrap();
    until_ready(&mut s);
    s
}

/// Reads until ReadyForQuery; returns the (name, OID, typmod) of each RowDescription field
/// (of the last RowDescription); panics on an error.
fn until_ready(s: &mut TcpStream) -> Vec<(String, u32, i32)> {
    let mut fields = Vec::new();
    loop {
        let (t, body) = read_msg(s).unwrap();
        match t {
            b'E' => panic!("error: {}", String::from_utf8_lossy(&body)),
            b'T' => fields = row_description(&body),
            b'Z' => return fields,
            _ => {}
        }
    }
}

fn row_description(b: &[u8]) -> Vec<(String, u32, i32)> {
    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
    let mut p = 2;
    let mut out = Vec::new();
    for _ in 0..n {
        let end = p + b[p..].iter().position(|&c| c == 0).unwrap();
        let name = String::from_utf8_lossy(&b[p..end]).into_owned();
        p = end + 1;
        let oid = u32::from_be_bytes(b[p + 6..p + 10].try_into().unwrap());
        let typmod = i32::from_be_bytes(b[p + 12..p + 16].try_into().unwrap());
        p += 18;
        out.push((name, oid, typmod));
    }
    out
}

/// The fields of `sql`'s result through the simple protocol.
fn simple(s: &mut TcpStream, sql: &str) -> Vec<(String, u32, i32)> {
    let mut q = sql.as_bytes().to_vec();
    q.push(0);
    s.write_all(&msg(b'Q', &q)).unwrap();
    until_ready(s)
}

/// The fields of `sql`'s result as Describe of a prepared statement reports them.
fn described(s: &mut TcpStream, sql: &str) -> Vec<(String, u32, i32)> {
    let mut parse = vec![0u8];
    parse.extend_from_slice(sql.as_bytes());
    parse.extend_from_slice(&[0, 0, 0]);
    let mut out = msg(b'P', &parse);
    out.extend(msg(b'D', b"S\0"));
    out.extend(msg(b'S', b""));
    s.write_all(&out).unwrap();
    until_ready(s)
}

/// The fields of `sql`'s result as Describe of a bound portal reports them (what libpq's
/// PQexecParams, psycopg and pgjdbc read).
fn portal(s: &mut TcpStream, sql: &str) -> Vec<(String, u32, i32)> {
    let mut parse = vec![0u8];
    parse.extend_from_slice(sql.as_bytes());
    parse.extend_from_slice(&[0, 0, 0]);
    let mut out = msg(b'P', &parse);
    out.extend(msg(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]));
    out.extend(msg(b'D', b"P\0"));
    out.extend(msg(b'S', b""));
    s.write_all(&out).unwrap();
    until_ready(s)
}

/// (OID, typmod) of each field.
fn types(fields: &[(String, u32, i32)]) -> Vec<(u32, i32)> {
    fields.iter().map(|f| (f.1, f.2)).collect()
}

/// A field's (OID, typmod).
type Field = (u32, i32);

const VARCHAR10: (u32, i32) = (1043, 14);
const VARCHAR: (u32, i32) = (1043, -1);
const NUMERIC10_2: (u32, i32) = (1700, 655366);
const NUMERIC: (u32, i32) = (1700, -1);
const CHAR3: (u32, i32) = (1042, 7);
const TEXT: (u32, i32) = (25, -1);

#[test]
fn result_columns_carry_declared_type_modifiers() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let mut s = connect(&srv);
    simple(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), b numeric(10,2), c char(3), d varchar, \
         e text, k numeric(10,2)[]);
         INSERT INTO t VALUES (1, 'x', 1.5, 'ab', 'y', 'z', '{1.5}');
         CREATE VIEW v AS SELECT a, b FROM t",
    );
    let cases: &[(&str, &[(u32, i32)])] = &[
        (
            "SELECT a, b, c, d, e FROM t",
            &[VARCHAR10, NUMERIC10_2, CHAR3, VARCHAR, TEXT],
        ),
        ("SELECT * FROM v", &[VARCHAR10, NUMERIC10_2]),
        (
            "SELECT x.a, x.b FROM (SELECT a, b FROM t) x",
            &[VARCHAR10, NUMERIC10_2],
        ),
        (
            "WITH w AS (SELECT a, b FROM t) SELECT * FROM w",
            &[VARCHAR10, NUMERIC10_2],
        ),
        ("SELECT a FROM t GROUP BY a", &[VARCHAR10]),
        ("SELECT DISTINCT a, b FROM t", &[VARCHAR10, NUMERIC10_2]),
        // Casts: with a length, that length; without, none.
        (
            "SELECT a::varchar(5), b::numeric(5,1), c::char(2), a::varchar, b::numeric, \
             'x'::varchar(3), 1::numeric(4,2), 'x'::char(4) FROM t",
            &[
                (1043, 9),
                (1700, 327685),
                (1042, 6),
                VARCHAR,
                NUMERIC,
                (1043, 7),
                (1700, 262150),
                (1042, 8),
            ],
        ),
        // Other expressions have none; CASE / COALESCE keep one their results share.
        (
            "SELECT a || '', b + 0, upper(a), coalesce(a, 'q'), coalesce(a, a), coalesce(b, b), \
             max(b) OVER (), lag(a) OVER () FROM t",
            &[
                TEXT,
                NUMERIC,
                TEXT,
                VARCHAR,
                VARCHAR10,
                NUMERIC10_2,
                NUMERIC,
                VARCHAR,
            ],
        ),
        (
            "SELECT CASE WHEN id > 0 THEN a END, CASE WHEN id > 0 THEN a ELSE a END, \
             CASE WHEN id > 0 THEN a ELSE d END, CASE WHEN id > 0 THEN b ELSE b END FROM t",
            &[VARCHAR, VARCHAR10, VARCHAR, NUMERIC10_2],
        ),
        // Set operations keep one both branches have.
        ("SELECT a FROM t UNION SELECT a FROM t", &[VARCHAR10]),
        ("SELECT a FROM t UNION ALL SELECT d FROM t", &[VARCHAR]),
        // A scalar subquery, an array element, an array cast.
        (
            "SELECT (SELECT a FROM t LIMIT 1), k, k[1], k::numeric(5,1)[] FROM t",
            &[VARCHAR10, (1231, 655366), NUMERIC10_2, (1231, 327685)],
        ),
        ("SELECT a COLLATE \"C\" FROM t", &[VARCHAR10]),
    ];
    for (sql, want) in cases {
        assert_eq!(types(&simple(&mut s, sql)), *want, "simple: {sql}");
        assert_eq!(types(&described(&mut s, sql)), *want, "described: {sql}");
    }
    // RETURNING, through the simple protocol (a Describe does not run the statement).
    assert_eq!(
        types(&simple(
            &mut s,
            "INSERT INTO t (id, a, b) VALUES (2, 'q', 1) RETURNING a, b, c, a AS aa"
        )),
        [VARCHAR10, NUMERIC10_2, CHAR3, VARCHAR10]
    );
    assert_eq!(
        types(&simple(
            &mut s,
            "UPDATE t SET a = 'w' WHERE id = 2 RETURNING a, b"
        )),
        [VARCHAR10, NUMERIC10_2]
    );
}

/// varchar[] is `_varchar` (1015) with its element's modifier, as PostgreSQL describes it: a
/// column, a subscript (varchar, 1043), `ARRAY[...]` of varchar values, a cast, array_agg.
#[test]
fn varchar_arrays_are_described_as_varchar_arrays() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let mut s = connect(&srv);
    simple(
        &mut s,
        "CREATE TABLE w (id int PRIMARY KEY, a varchar(10), m varchar(3)[], u varchar[]);
         INSERT INTO w VALUES (1, 'x', '{ab}', '{cd}')",
    );
    let cases: &[(&str, &[(u32, i32)])] = &[
        (
            "SELECT m, u, m[1], u[1], ARRAY[a], '{x}'::varchar(2)[], coalesce(m, m), \
             (SELECT array_agg(a) FROM w) FROM w",
            &[
                (1015, 7),
                (1015, -1),
                (1043, 7),
                VARCHAR,
                (1015, 14),
                (1015, 6),
                (1015, 7),
                (1015, -1),
            ],
        ),
        ("SELECT array_agg(a) FROM w", &[(1015, -1)]),
        ("SELECT array_agg(a || '') FROM w", &[(1009, -1)]),
        // || of varchar arrays is a varchar array, without a modifier.
        (
            "SELECT u || u, u || m, m || m FROM w",
            &[(1015, -1), (1015, -1), (1015, -1)],
        ),
    ];
    for (sql, want) in cases {
        assert_eq!(types(&simple(&mut s, sql)), *want, "simple: {sql}");
        assert_eq!(types(&described(&mut s, sql)), *want, "described: {sql}");
    }
}

#[test]
fn result_columns_are_named_as_postgresql_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let mut s = connect(&srv);
    simple(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), k int[]);
         INSERT INTO t VALUES (1, 'x', '{1}')",
    );
    let fields = simple(
        &mut s,
        "SELECT CASE WHEN id > 0 THEN a ELSE a END, CASE WHEN id > 0 THEN a END, \
         (SELECT a FROM t LIMIT 1), k[1], a COLLATE \"C\", upper(a)::text, (id + 1)::text FROM t",
    );
    let names: Vec<&str> = fields.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(names, ["a", "case", "a", "k", "a", "upper", "text"]);
}

/// PostgreSQL's planner folds constant CASE and COALESCE arms before a portal describes its
/// rows (`CASE WHEN true THEN a END` is `a`, with a's modifier), while a prepared statement's
/// Describe and a view's columns have the modifiers of the unfolded expression (none). Every
/// expected pair is what PostgreSQL 15.18 sends (the simple protocol, a portal's Describe, a
/// statement's Describe).
#[test]
fn constant_case_and_coalesce_arms_fold_as_the_planner_folds_them() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let mut s = connect(&srv);
    simple(
        &mut s,
        "CREATE TABLE t (id int PRIMARY KEY, a varchar(10), b numeric(10,2), d varchar);
         CREATE VIEW v AS SELECT CASE WHEN true THEN a END AS c FROM t",
    );
    // (query, rows' (simple protocol and portal), statement Describe's)
    let cases: &[(&str, Field, Field)] = &[
        ("SELECT CASE WHEN true THEN a END FROM t", VARCHAR10, VARCHAR),
        (
            "SELECT CASE WHEN false THEN d ELSE a END FROM t",
            VARCHAR10,
            VARCHAR,
        ),
        (
            "SELECT CASE WHEN NULL THEN d ELSE a END FROM t",
            VARCHAR10,
            VARCHAR,
        ),
        (
            "SELECT CASE WHEN false THEN d WHEN true THEN a ELSE d END FROM t",
            VARCHAR10,
            VARCHAR,
        ),
        ("SELECT CASE WHEN 1 = 1 THEN a END FROM t", VARCHAR10, VARCHAR),
        ("SELECT CASE 1 WHEN 1 THEN a END FROM t", VARCHAR10, VARCHAR),
        ("SELECT CASE WHEN true THEN b END FROM t", NUMERIC10_2, NUMERIC),
        (
            "SELECT CASE WHEN true THEN 'x'::varchar(3) END",
            (1043, 7),
            VARCHAR,
        ),
        // A WHEN that is constant true after one that is not becomes the ELSE.
        (
            "SELECT CASE WHEN id > 0 THEN d WHEN true THEN a ELSE a END FROM t",
            VARCHAR,
            VARCHAR,
        ),
        (
            "SELECT CASE WHEN id > 0 THEN a WHEN true THEN a ELSE d END FROM t",
            VARCHAR10,
            VARCHAR,
        ),
        ("SELECT coalesce(NULL, a) FROM t", VARCHAR10, VARCHAR),
        ("SELECT coalesce('x', a) FROM t", VARCHAR, VARCHAR),
        ("SELECT coalesce(a) FROM t", VARCHAR10, VARCHAR10),
        // Through a subquery, a CTE, a view, a set operation, a scalar subquery.
        (
            "SELECT x.c FROM (SELECT CASE WHEN true THEN a END AS c FROM t) x",
            VARCHAR10,
            VARCHAR,
        ),
        (
            "WITH w AS (SELECT CASE WHEN true THEN a END AS c FROM t) SELECT * FROM w",
            VARCHAR10,
            VARCHAR,
        ),
        ("SELECT * FROM v", VARCHAR10, VARCHAR),
        (
            "SELECT CASE WHEN true THEN a END FROM t UNION SELECT a FROM t",
            VARCHAR10,
            VARCHAR,
        ),
        (
            "SELECT (SELECT CASE WHEN true THEN a END FROM t LIMIT 1)",
            VARCHAR10,
            VARCHAR,
        ),
        (
            "SELECT DISTINCT CASE WHEN true THEN a END FROM t",
            VARCHAR10,
            VARCHAR,
        ),
    ];
    for (sql, rows, stmt) in cases {
        assert_eq!(types(&simple(&mut s, sql)), [*rows], "simple: {sql}");
        assert_eq!(types(&portal(&mut s, sql)), [*rows], "portal: {sql}");
        assert_eq!(types(&described(&mut s, sql)), [*stmt], "described: {sql}");
    }
}
