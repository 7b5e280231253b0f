//! Real drivers against `augur serve`: tokio-postgres (prepared statements, binary parameters
//! and results for every engine type, transactions, SQLSTATEs, a connection dropped in the
//! middle of a transaction, COPY), and psycopg 3 / psycopg2 (tests/server_psycopg.py).

mod server_util;

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::SinkExt;
use server_util::{simple_row, Server};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls};

async fn connect(port: u16) -> Client {
    server_util::pg_connect(port, "").await
}

/// A server on a fresh data directory (removed when the returned directory is dropped).
fn fresh_server() -> (tempfile::TempDir, Server) {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    (tmp, srv)
}

/// [`fresh_server`] and a client connected to it.
async fn fresh() -> (tempfile::TempDir, Server, Client) {
    let (tmp, srv) = fresh_server();
    let c = connect(srv.port).await;
    (tmp, srv, c)
}

/// Runs `sql` through the simple protocol, which must fail with `state`; the connection stays
/// usable.
async fn batch_fails(c: &Client, sql: &str, state: SqlState) {
    let e = c.batch_execute(sql).await.unwrap_err();
    assert_eq!(e.code(), Some(&state), "{sql}: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_types_transactions_errors() {
    let (_tmp, srv, c) = fresh().await;

    c.batch_execute(
        "create table ty (id bigint primary key, i2 smallint, i4 int, f float8, b bool, t text, \
         v varchar(20), by bytea, ts timestamp)",
    )
    .await
    .unwrap();
    let ins = c
        .prepare("insert into ty values ($1, $2, $3, $4, $5, $6, $7, $8, $9)")
        .await
        .unwrap();
    let p = ins.params();
    assert_eq!(
        &p[..7],
        &[
            Type::INT8,
            Type::INT2,
            Type::INT4,
            Type::FLOAT8,
            Type::BOOL,
            Type::TEXT,
            Type::VARCHAR
        ]
    );
    assert_eq!(&p[7..], &[Type::BYTEA, Type::TIMESTAMP]);
    let ts = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
    let n = c
        .execute(
            &ins,
            &[
                &1i64,
                &-2i16,
                &3i32,
                &1.5f64,
                &true,
                &"text é",
                &"varchar",
                &vec![0u8, 1, 255],
                &ts,
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
    let none: [&(dyn tokio_postgres::types::ToSql + Sync); 9] = [
        &2i64,
        &None::<i16>,
        &None::<i32>,
        &None::<f64>,
        &None::<bool>,
        &None::<&str>,
        &None::<&str>,
        &None::<Vec<u8>>,
        &None::<SystemTime>,
    ];
    c.execute(&ins, &none).await.unwrap();

    // Binary results, every type; result types from Describe.
    let rows = c
        .query("select id, i2, i4, f, b, t, v, by, ts from ty order by id", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    let types: Vec<Type> = rows[0].columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(
        types,
        [
            Type::INT8,
            Type::INT2,
            Type::INT4,
            Type::FLOAT8,
            Type::BOOL,
            Type::TEXT,
            Type::VARCHAR,
            Type::BYTEA,
            Type::TIMESTAMP
        ]
    );
    let r = &rows[0];
    assert_eq!(r.get::<_, i64>(0), 1);
    assert_eq!(r.get::<_, i16>(1), -2);
    assert_eq!(r.get::<_, i32>(2), 3);
    assert_eq!(r.get::<_, f64>(3), 1.5);
    assert!(r.get::<_, bool>(4));
    assert_eq!(r.get::<_, &str>(5), "text é");
    assert_eq!(r.get::<_, &str>(6), "varchar");
    assert_eq!(r.get::<_, Vec<u8>>(7), vec![0u8, 1, 255]);
    assert_eq!(r.get::<_, SystemTime>(8), ts);
    let r = &rows[1];
    assert_eq!(r.get::<_, Option<i16>>(1), None);
    assert_eq!(r.get::<_, Option<&str>>(5), None);
    assert_eq!(r.get::<_, Option<SystemTime>>(8), None);

    // Parameters of every type in a WHERE clause.
    let rows = c
        .query(
            "select id from ty where i2 = $1 and i4 = $2 and f = $3 and b = $4 and t = $5 and by = $6 and ts = $7",
            &[&-2i16, &3i32, &1.5f64, &true, &"text é", &vec![0u8, 1, 255], &ts],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    // A float4 parameter (declared by the client) is accepted and widened.
    let st = c
        .prepare_typed(
            "insert into ty (id, f) values ($1, $2)",
            &[Type::INT8, Type::FLOAT4],
        )
        .await
        .unwrap();
    c.execute(&st, &[&3i64, &2.5f32]).await.unwrap();
    let f: f64 = c
        .query_one("select f from ty where id = 3", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(f, 2.5);
    // Text results through the simple protocol.
    assert_eq!(
        simple_row(&c, "select id, f, b from ty where id = 1").await,
        [Some("1"), Some("1.5"), Some("t")].map(|v| v.map(str::to_string))
    );
    // A named statement reused many times.
    let get = c.prepare("select t from ty where id = $1").await.unwrap();
    for _ in 0..50 {
        let t: Option<String> = c.query_one(&get, &[&1i64]).await.unwrap().get(0);
        assert_eq!(t.as_deref(), Some("text é"));
    }

    // Transactions.
    let mut c = c;
    let tx = c.transaction().await.unwrap();
    tx.execute("insert into ty (id) values (10)", &[]).await.unwrap();
    assert_eq!(
        tx.query("select id from ty where id = 10", &[])
            .await
            .unwrap()
            .len(),
        1
    );
    tx.rollback().await.unwrap();
    assert!(c
        .query("select id from ty where id = 10", &[])
        .await
        .unwrap()
        .is_empty());
    let tx = c.transaction().await.unwrap();
    tx.execute("insert into ty (id) values (11)", &[]).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        c.query("select id from ty where id = 11", &[])
            .await
            .unwrap()
            .len(),
        1
    );

    // Errors with their SQLSTATEs; the connection stays usable.
    let e = c.execute(&ins, &none).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNIQUE_VIOLATION), "{e:?}");
    batch_fails(&c, "selec 1", SqlState::SYNTAX_ERROR).await;
    let e = c.query("select * from nosuch", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE), "{e:?}");
    let e = c.query("select nosuch from ty", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_COLUMN), "{e:?}");
    let e = c.query("select 1 / (id - id) from ty", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::DIVISION_BY_ZERO), "{e:?}");
    let e = c
        .query("select cast(t as int) from ty where id = 1", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION), "{e:?}");
    let tx = c.transaction().await.unwrap();
    assert!(tx.query("select nosuch from ty", &[]).await.is_err());
    let e = tx.query("select 1", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION), "{e:?}");
    tx.rollback().await.unwrap();
    assert_eq!(
        c.query_one("select count(*) from ty", &[])
            .await
            .unwrap()
            .get::<_, i64>(0),
        4
    );

    // COPY FROM STDIN through the extended protocol.
    let sink = c.copy_in("copy ty (id, t) from stdin").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"100\tcopied\n10"))
        .await
        .unwrap();
    sink.send(bytes::Bytes::from_static(b"1\t\\N\n")).await.unwrap();
    assert_eq!(sink.finish().await.unwrap(), 2);
    let rows = c
        .query("select id, t from ty where id >= 100 order by id", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].get::<_, Option<&str>>(1), Some("copied"));
    assert_eq!(rows[1].get::<_, Option<&str>>(1), None);

    // COPY TO STDOUT through the extended protocol: the data as PostgreSQL writes it.
    for (sql, want) in [
        (
            "copy (select id, t from ty where id >= 100 order by id) to stdout with (format csv, header)",
            "id,t\n100,copied\n101,\n",
        ),
        (
            "copy (select id, t from ty where id >= 100 order by id) to stdout",
            "100\tcopied\n101\t\\N\n",
        ),
    ] {
        let out = c.copy_out(sql).await.unwrap();
        futures::pin_mut!(out);
        let mut data = Vec::new();
        while let Some(chunk) = futures::StreamExt::next(&mut out).await {
            data.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(String::from_utf8(data).unwrap(), want, "{sql}");
    }

    // A connection that breaks in the middle of a transaction rolls it back.
    let (c2, conn2) = tokio_postgres::connect(
        &format!("host=127.0.0.1 port={} user=augur dbname=augur", srv.port),
        NoTls,
    )
    .await
    .unwrap();
    let h = tokio::spawn(async move {
        let _ = conn2.await;
    });
    c2.batch_execute("begin; insert into ty (id, t) values (500, 'doomed')")
        .await
        .unwrap();
    h.abort(); // drops the socket without Terminate
    drop(c2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(c
        .query("select id from ty where id = 500", &[])
        .await
        .unwrap()
        .is_empty());
    // The key is free: nothing of the broken transaction is left to conflict with.
    c.batch_execute("begin; insert into ty (id, t) values (500, 'kept'); commit")
        .await
        .unwrap();
    let t: String = c
        .query_one("select t from ty where id = 500", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(t, "kept");
}

/// psycopg 3 and psycopg2 (Debian's python3-psycopg and python3-psycopg2, which scripts/setup
/// installs; the test fails without them).
#[test]
fn psycopg_and_psycopg2() {
    // Debian's interpreter, the one its python3-psycopg packages are for (a `python3` earlier
    // on PATH, such as pyenv's, does not see them).
    let py = "/usr/bin/python3";
    for m in ["psycopg", "psycopg2"] {
        let o = Command::new(py).args(["-c", &format!("import {m}")]).output();
        assert!(
            matches!(&o, Ok(o) if o.status.success()),
            "python3 cannot import {m}: run scripts/setup (it installs python3-psycopg and \
             python3-psycopg2): {:?}",
            o.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        );
    }
    let (_tmp, srv) = fresh_server();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/server_psycopg.py");
    let o = Command::new(py)
        .arg(script)
        .arg(srv.port.to_string())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "psycopg script failed:\n{out}\n{err}\nserver log:\n{}",
        srv.log_text()
    );
    assert!(
        out.contains("psycopg 3: ok") && out.contains("psycopg2: ok"),
        "{out}"
    );
}

/// SQLAlchemy 2.1's ORM over psycopg 3 (create_all, add / query / rollback, begin_nested) and
/// its inspector's table list, columns, primary keys, unique constraints, indexes, foreign keys
/// and CHECK constraints, which read Augur's pg_catalog relations (and array_agg's arrays).
/// SQLAlchemy
/// comes from PyPI for Debian's interpreter (scripts/setup installs it; the test fails without
/// it).
#[test]
fn sqlalchemy_orm_and_inspector() {
    let py = "/usr/bin/python3";
    let o = Command::new(py)
        .args([
            "-c",
            "import sqlalchemy, psycopg; assert sqlalchemy.__version__.startswith('2.1.')",
        ])
        .output();
    assert!(
        matches!(&o, Ok(o) if o.status.success()),
        "python3 cannot import SQLAlchemy 2.1 and psycopg 3: run scripts/setup: {:?}",
        o.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
    );
    let (_tmp, srv) = fresh_server();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/server_sqlalchemy.py");
    let o = Command::new(py)
        .arg(script)
        .arg(srv.port.to_string())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.contains("sqlalchemy: ok"),
        "SQLAlchemy script failed:\n{out}\n{err}\nserver log:\n{}",
        srv.log_text()
    );
}

/// pgjdbc's DatabaseMetaData (getTables, getColumns, getPrimaryKeys, getImportedKeys,
/// getExportedKeys), which read Augur's pg_catalog relations.
/// The Maven project tests/jdbc is built offline (`mvn -q -o`) from the local repository
/// scripts/setup filled; the test fails without Maven, a JDK or those dependencies.
#[test]
fn pgjdbc_database_metadata() {
    let root = env!("CARGO_MANIFEST_DIR");
    let pom = format!("{root}/tests/jdbc/pom.xml");
    let o = Command::new("mvn")
        .args(["-q", "-o", "-f", &pom, "compile"])
        .output();
    assert!(
        matches!(&o, Ok(o) if o.status.success()),
        "mvn -o could not build tests/jdbc: run scripts/setup: {:?}",
        o.map(|o| String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
    );
    let (_tmp, srv) = fresh_server();
    let classpath = format!("{root}/target/jdbc/classes:{root}/target/jdbc/dependency/*");
    let o = Command::new("java")
        .args(["-cp", &classpath, "Metadata", &srv.port.to_string()])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && out.contains("pgjdbc: ok"),
        "pgjdbc check failed:\n{out}\n{err}\nserver log:\n{}",
        srv.log_text()
    );
}

/// Parameter types a client declares in Parse are the parameters' types, as in PostgreSQL:
/// ParameterDescription reports them, the statement is typed by them, and values are sent in
/// them. (They used to be ignored: `SELECT $1` declared int8 was described as text, and
/// tokio-postgres then refused to send an i64.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_parameter_types_are_honoured() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table d (id int primary key, name text, f float8)")
        .await
        .unwrap();

    let s = c.prepare_typed("select $1", &[Type::INT8]).await.unwrap();
    assert_eq!(s.params(), &[Type::INT8]);
    assert_eq!(s.columns()[0].type_(), &Type::INT8);
    let v: i64 = c.query_one(&s, &[&5_000_000_000i64]).await.unwrap().get(0);
    assert_eq!(v, 5_000_000_000);

    // int8 + int4 is int8, as PostgreSQL types it.
    let s = c.prepare_typed("select $1 + 1", &[Type::INT8]).await.unwrap();
    assert_eq!(s.columns()[0].type_(), &Type::INT8);

    // A declared int8 against an int4 key still finds the row (point lookup by a wider type).
    c.batch_execute("insert into d values (7, 'seven', 0.5)")
        .await
        .unwrap();
    let s = c
        .prepare_typed("select name from d where id = $1", &[Type::INT8])
        .await
        .unwrap();
    assert_eq!(s.params(), &[Type::INT8]);
    let n: String = c.query_one(&s, &[&7i64]).await.unwrap().get(0);
    assert_eq!(n, "seven");

    // A declared int2 key in an UPDATE's point lookup.
    let s = c
        .prepare_typed("update d set f = $1 where id = $2", &[Type::FLOAT8, Type::INT2])
        .await
        .unwrap();
    assert_eq!(s.params(), &[Type::FLOAT8, Type::INT2]);
    assert_eq!(c.execute(&s, &[&1.5f64, &7i16]).await.unwrap(), 1);

    // Parameters past the declared ones are inferred from the statement.
    let s = c
        .prepare_typed("select name from d where id = $1 and f > $2", &[Type::INT8])
        .await
        .unwrap();
    assert_eq!(s.params(), &[Type::INT8, Type::FLOAT8]);

    // A declared type the statement cannot use is PostgreSQL's error: text = integer is 42883.
    let e = c
        .prepare_typed("select name from d where id = $1", &[Type::TEXT])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_FUNCTION), "{e}");
}

/// uuid and numeric in both wire formats: tokio-postgres sends and reads them in binary (its
/// uuid and rust_decimal's numeric codecs, written apart from Augur's), psql-style text through
/// the simple protocol; the described types are OIDs 2950 and 1700 with numeric(p, s)'s
/// modifier; bad values keep their SQLSTATEs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uuid_and_numeric_in_both_formats() {
    use augur::{Decimal, Uuid};
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute(
        "create table acct (id uuid primary key, balance numeric(12,2), rate numeric, \
         made uuid default gen_random_uuid())",
    )
    .await
    .unwrap();
    let ins = c
        .prepare("insert into acct (id, balance, rate) values ($1, $2, $3)")
        .await
        .unwrap();
    assert_eq!(ins.params(), &[Type::UUID, Type::NUMERIC, Type::NUMERIC]);
    let a: Uuid = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".parse().unwrap();
    let b: Uuid = "00000000-0000-0000-0000-0000000000ff".parse().unwrap();
    let dec = |s: &str| s.parse::<Decimal>().unwrap();
    // 12.345 rounds to the column's scale; the rate keeps every digit it was sent with.
    c.execute(&ins, &[&a, &dec("12.345"), &dec("-0.000001230")])
        .await
        .unwrap();
    c.execute(&ins, &[&b, &dec("-9999999999.99"), &dec("123456789012345678.9")])
        .await
        .unwrap();

    // Binary results.
    let rows = c
        .query("select id, balance, rate, made from acct order by id", &[])
        .await
        .unwrap();
    let types: Vec<Type> = rows[0].columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, [Type::UUID, Type::NUMERIC, Type::NUMERIC, Type::UUID]);
    assert_eq!(rows[0].get::<_, Uuid>(0), b);
    assert_eq!(rows[0].get::<_, Decimal>(1).to_string(), "-9999999999.99");
    assert_eq!(rows[0].get::<_, Decimal>(2).to_string(), "123456789012345678.9");
    assert_eq!(rows[1].get::<_, Uuid>(0), a);
    assert_eq!(rows[1].get::<_, Decimal>(1).to_string(), "12.35");
    assert_eq!(rows[1].get::<_, Decimal>(2).to_string(), "-0.000001230");
    let made: Vec<Uuid> = rows.iter().map(|r| r.get(3)).collect();
    assert_ne!(made[0], made[1]);
    assert!(made.iter().all(|u| u.get_version_num() == 4), "{made:?}");

    // Binary parameters in a point lookup and a range; numeric arithmetic in binary.
    let r = c
        .query_one("select balance + 0.005, rate * 2 from acct where id = $1", &[&a])
        .await
        .unwrap();
    assert_eq!(r.get::<_, Decimal>(0).to_string(), "12.355");
    assert_eq!(r.get::<_, Decimal>(1).to_string(), "-0.000002460");
    let n = c
        .query("select id from acct where balance > $1", &[&dec("0")])
        .await
        .unwrap();
    assert_eq!(n.len(), 1);
    let r = c
        .query_one("select avg(balance), sum(balance), 1 / 3.0 from acct", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, Decimal>(0).to_string(), "-4999999993.82000000");
    assert_eq!(r.get::<_, Decimal>(1).to_string(), "-9999999987.64");
    assert_eq!(r.get::<_, Decimal>(2).to_string(), "0.33333333333333333333");

    // Text results through the simple protocol.
    let id_text = a.to_string();
    let row = simple_row(
        &c,
        &format!("select id, balance, rate, 1.50, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid from acct where id = '{{{id_text}}}'"),
    )
    .await;
    assert_eq!(
        row,
        [
            Some(id_text.clone()),
            Some("12.35".into()),
            Some("-0.000001230".into()),
            Some("1.50".into()),
            Some(id_text.clone()),
        ]
    );

    // Text parameters (as psycopg and pgjdbc's string setters send them).
    let st = c
        .prepare_typed("select balance from acct where id = $1", &[Type::TEXT])
        .await;
    // uuid = text is 42883 in PostgreSQL too; an untyped parameter takes the column's type.
    assert_eq!(st.unwrap_err().code(), Some(&SqlState::UNDEFINED_FUNCTION));
    let st = c
        .prepare_typed("select balance from acct where id = $1::uuid", &[Type::TEXT])
        .await
        .unwrap();
    let r = c.query_one(&st, &[&id_text.to_uppercase()]).await.unwrap();
    assert_eq!(r.get::<_, Decimal>(0).to_string(), "12.35");

    // RowDescription carries numeric(12,2)'s type modifier, as psql's \d and drivers read it.
    let st = c.prepare("select balance from acct").await.unwrap();
    assert_eq!(st.columns()[0].type_(), &Type::NUMERIC);
    let r = c
        .query_one(
            "select format_type(atttypid, atttypmod) from pg_attribute \
             where attrelid = 'acct'::regclass and attname = 'balance'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(r.get::<_, &str>(0), "numeric(12,2)");
    let r = c
        .query_one("select typname, typlen from pg_type where oid = 2950", &[])
        .await
        .unwrap();
    assert_eq!((r.get::<_, &str>(0), r.get::<_, i16>(1)), ("uuid", 16));

    // Errors: 22003 past the column's precision, 22P02 for a bad uuid, 23505 for a key
    // spelled differently; the connection stays usable.
    let e = c
        .execute(&ins, &[&Uuid::nil(), &dec("12345678901.5"), &dec("1")])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::NUMERIC_VALUE_OUT_OF_RANGE), "{e}");
    batch_fails(
        &c,
        "insert into acct (id) values ('not-a-uuid')",
        SqlState::INVALID_TEXT_REPRESENTATION,
    )
    .await;
    batch_fails(
        &c,
        "insert into acct (id) values ('{A0EEBC999C0B4EF8BB6D6BB9BD380A11}')",
        SqlState::UNIQUE_VIOLATION,
    )
    .await;
    let n: i64 = c
        .query_one("select count(*) from acct", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
}

/// A result field's bytes as they came (for types tokio-postgres has no Rust type for).
struct Raw(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// An interval parameter in PostgreSQL's binary format: microseconds, days, months.
#[derive(Debug)]
struct BinInterval(i64, i32, i32);

impl tokio_postgres::types::ToSql for BinInterval {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use bytes::BufMut;
        out.put_i64(self.0);
        out.put_i32(self.1);
        out.put_i32(self.2);
        Ok(tokio_postgres::types::IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    tokio_postgres::types::to_sql_checked!();
}

/// interval in both wire formats (OID 1186; binary: microseconds, days, months) and in the
/// timestamp arithmetic a driver's query uses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interval_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute(
        "create table ev (id int primary key, at timestamp, span interval); \
         insert into ev values (1, '2024-01-31 10:00:00', '1 mon 2 days 03:00:00')",
    )
    .await
    .unwrap();
    let st = c
        .prepare("select span, at + span from ev where id = 1")
        .await
        .unwrap();
    assert_eq!(st.columns()[0].type_(), &Type::INTERVAL);
    let r = c.query_one(&st, &[]).await.unwrap();
    let Raw(b) = r.get(0);
    let mut want = (3 * 3_600_000_000i64).to_be_bytes().to_vec();
    want.extend_from_slice(&2i32.to_be_bytes());
    want.extend_from_slice(&1i32.to_be_bytes());
    assert_eq!(b, want);
    let at: SystemTime = r.get(1);
    // 2024-01-31 10:00 + 1 month is 2024-02-29 10:00 (the day clamped), + 2 days 03:00:00.
    assert_eq!(at, UNIX_EPOCH + Duration::from_secs(1_709_384_400)); // 2024-03-02 13:00:00 UTC
                                                                     // A binary interval parameter, compared and added.
    let ins = c.prepare("insert into ev values ($1, $2, $3)").await.unwrap();
    assert_eq!(ins.params()[2], Type::INTERVAL);
    c.execute(
        &ins,
        &[&2i32, &None::<SystemTime>, &BinInterval(-90 * 60_000_000, 0, 0)],
    )
    .await
    .unwrap();
    let row = simple_row(&c, "select span, span * 2, -span from ev where id = 2").await;
    assert_eq!(
        row,
        [
            Some("-01:30:00".to_string()),
            Some("-03:00:00".to_string()),
            Some("01:30:00".to_string())
        ]
    );
    let n: i64 = c
        .query_one(
            "select count(*) from ev where span < $1",
            &[&BinInterval(0, 1, 0)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let row = simple_row(&c, "select span from ev where id = 1").await;
    assert_eq!(row, [Some("1 mon 2 days 03:00:00".to_string())]);
    batch_fails(
        &c,
        "insert into ev values (3, NULL, '2 fortnights')",
        SqlState::INVALID_DATETIME_FORMAT,
    )
    .await;
}

/// Array columns in both wire formats (`_int4` 1007, `_text` 1009, `_timestamp` 1115): binary
/// array parameters (with NULL elements and empty arrays) and results, as tokio-postgres sends
/// and reads `Vec`s, an array parameter to `= ANY`, and PostgreSQL's array text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table arr (id int primary key, nums int[], tags text[], at timestamp[])")
        .await
        .unwrap();
    // Binary parameters of array types (tokio-postgres sends arrays in binary), NULL elements
    // and empty arrays included.
    let ins = c
        .prepare("insert into arr values ($1, $2, $3, $4)")
        .await
        .unwrap();
    assert_eq!(ins.params()[1], Type::INT4_ARRAY);
    assert_eq!(ins.params()[2], Type::TEXT_ARRAY);
    assert_eq!(ins.params()[3], Type::TIMESTAMP_ARRAY);
    let at = chrono_free_timestamp();
    c.execute(
        &ins,
        &[
            &1i32,
            &vec![3i32, 1, 2],
            &vec![Some("a b".to_string()), None],
            &vec![at],
        ],
    )
    .await
    .unwrap();
    c.execute(
        &ins,
        &[
            &2i32,
            &Vec::<i32>::new(),
            &Vec::<String>::new(),
            &None::<Vec<std::time::SystemTime>>,
        ],
    )
    .await
    .unwrap();
    // Binary results.
    let r = c
        .query_one("select nums, tags, at from arr where id = 1", &[])
        .await
        .unwrap();
    assert_eq!(r.get::<_, Vec<i32>>(0), vec![3, 1, 2]);
    assert_eq!(
        r.get::<_, Vec<Option<String>>>(1),
        vec![Some("a b".to_string()), None]
    );
    assert_eq!(r.get::<_, Vec<std::time::SystemTime>>(2), vec![at]);
    let r = c
        .query_one("select nums, tags from arr where id = 2", &[])
        .await
        .unwrap();
    assert!(r.get::<_, Vec<i32>>(0).is_empty());
    // An array parameter to = ANY, as applications filter by a list of keys.
    let ids: Vec<i64> = c
        .query(
            "select id::int8 from arr where id = any($1) order by id",
            &[&vec![2i32, 5]],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, [2]);
    // Text results: PostgreSQL's array text.
    let row = simple_row(
        &c,
        "select nums, tags, at, '{1,2}'::bigint[] from arr where id = 1",
    )
    .await;
    assert_eq!(
        row,
        [
            Some("{3,1,2}".to_string()),
            Some("{\"a b\",NULL}".to_string()),
            Some("{\"2024-01-02 03:04:05\"}".to_string()),
            Some("{1,2}".to_string()),
        ]
    );
    batch_fails(
        &c,
        "insert into arr values (3, '{1,x}', null, null)",
        SqlState::INVALID_TEXT_REPRESENTATION,
    )
    .await;
}

/// 2024-01-02 03:04:05 UTC as a SystemTime (tokio-postgres's timestamp without chrono).
fn chrono_free_timestamp() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_164_645)
}

/// jsonb in both wire formats (OID 3802; binary: a version byte 1 and the text), read and sent
/// by tokio-postgres as serde_json values, with `->>` and `@>` over a parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonb_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table docs (id int primary key, doc jsonb)")
        .await
        .unwrap();
    let ins = c.prepare("insert into docs values ($1, $2)").await.unwrap();
    assert_eq!(ins.params()[1], Type::JSONB);
    let doc = serde_json::json!({"name": "ada", "tags": ["x", "y"], "n": 1.5});
    c.execute(&ins, &[&1i32, &doc]).await.unwrap();
    c.execute(&ins, &[&2i32, &serde_json::json!([1, 2])])
        .await
        .unwrap();
    let st = c.prepare("select doc from docs where id = 1").await.unwrap();
    assert_eq!(st.columns()[0].type_(), &Type::JSONB);
    let back: serde_json::Value = c.query_one(&st, &[]).await.unwrap().get(0);
    assert_eq!(back, doc);
    let name: String = c
        .query_one(
            "select doc ->> 'name' from docs where doc @> $1",
            &[&serde_json::json!({"tags": ["y"]})],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(name, "ada");
    // Text results: PostgreSQL's jsonb text (keys shorter first, ", " and ": ").
    let row = simple_row(&c, "select doc from docs where id = 1").await;
    assert_eq!(
        row,
        [Some(
            r#"{"n": 1.5, "name": "ada", "tags": ["x", "y"]}"#.to_string()
        )]
    );
    batch_fails(
        &c,
        "insert into docs values (3, '{\"a\": }')",
        SqlState::INVALID_TEXT_REPRESENTATION,
    )
    .await;
}

/// Arrays of numeric, uuid, interval and jsonb (`_numeric` 1231, `_uuid` 2951, `_interval`
/// 1187, `_jsonb` 3807) in both wire formats: binary parameters and results carrying each
/// element type's OID (NULL elements included), a binary numeric array to `= ANY`, array_agg's
/// result type, and PostgreSQL's array text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_of_numeric_uuid_interval_jsonb_in_both_formats() {
    use rust_decimal::Decimal;
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute(
        "create table ta (id int primary key, amounts numeric[], ids uuid[], spans interval[], \
         docs jsonb[])",
    )
    .await
    .unwrap();
    let ins = c
        .prepare("insert into ta values ($1, $2, $3, $4, $5)")
        .await
        .unwrap();
    assert_eq!(
        ins.params()[1..],
        [
            Type::NUMERIC_ARRAY,
            Type::UUID_ARRAY,
            Type::INTERVAL_ARRAY,
            Type::JSONB_ARRAY
        ]
    );
    let amounts: Vec<Option<Decimal>> = vec![Some("1.50".parse().unwrap()), None, Some(Decimal::new(-25, 3))];
    let u = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
    let docs = vec![serde_json::json!({"a": 1}), serde_json::json!([1, "x"])];
    c.execute(
        &ins,
        &[
            &1i32,
            &amounts,
            &vec![Some(u), None],
            &vec![BinInterval(3_600_000_000, 2, 1)],
            &docs,
        ],
    )
    .await
    .unwrap();
    // Binary results, element by element.
    let st = c
        .prepare("select amounts, ids, spans, docs from ta where id = 1")
        .await
        .unwrap();
    let types: Vec<Type> = st.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(
        types,
        [
            Type::NUMERIC_ARRAY,
            Type::UUID_ARRAY,
            Type::INTERVAL_ARRAY,
            Type::JSONB_ARRAY
        ]
    );
    let r = c.query_one(&st, &[]).await.unwrap();
    let back: Vec<Option<Decimal>> = r.get(0);
    assert_eq!(back, amounts);
    assert_eq!(back[0].unwrap().to_string(), "1.50", "the scale comes back");
    assert_eq!(r.get::<_, Vec<Option<uuid::Uuid>>>(1), vec![Some(u), None]);
    // No Rust type reads an interval: array_send's bytes (one dimension, no NULLs, element
    // OID 1186, length 1, lower bound 1, then the element: length 16, micros, days, months).
    let Raw(b) = r.get(2);
    let mut want = Vec::new();
    for w in [1i32, 0, 1186, 1, 1, 16] {
        want.extend_from_slice(&w.to_be_bytes());
    }
    want.extend_from_slice(&3_600_000_000i64.to_be_bytes());
    want.extend_from_slice(&2i32.to_be_bytes());
    want.extend_from_slice(&1i32.to_be_bytes());
    assert_eq!(b, want);
    assert_eq!(r.get::<_, Vec<serde_json::Value>>(3), docs);
    // A binary numeric array to = ANY (1.5000 equals the stored 1.50).
    let n: i64 = c
        .query_one(
            "select count(*) from ta where amounts[1] = any($1)",
            &[&vec![Decimal::new(15000, 4)]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let agg = c
        .prepare("select array_agg(amounts[3]), array_agg(ids[1]) from ta")
        .await
        .unwrap();
    assert_eq!(agg.columns()[0].type_(), &Type::NUMERIC_ARRAY);
    assert_eq!(agg.columns()[1].type_(), &Type::UUID_ARRAY);
    let r = c.query_one(&agg, &[]).await.unwrap();
    assert_eq!(
        r.get::<_, Vec<Option<Decimal>>>(0),
        vec![Some(Decimal::new(-25, 3))]
    );
    // Text results: PostgreSQL's array text.
    let row = simple_row(&c, "select amounts, ids, spans, docs from ta where id = 1").await;
    assert_eq!(
        row,
        [
            Some("{1.50,NULL,-0.025}".to_string()),
            Some("{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}".to_string()),
            Some(r#"{"1 mon 2 days 01:00:00"}"#.to_string()),
            Some(r#"{"{\"a\": 1}","[1, \"x\"]"}"#.to_string()),
        ]
    );
    batch_fails(
        &c,
        "insert into ta (id, ids) values (2, '{a0eebc99}')",
        SqlState::INVALID_TEXT_REPRESENTATION,
    )
    .await;
}

/// Statements sqlparser does not parse, which the session reads itself (ALTER SEQUENCE, the
/// maintenance no-ops), also run through the extended protocol (Parse / Bind / Execute), as
/// tokio-postgres, pgjdbc and psycopg 3 send every statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_sequence_and_vacuum_through_the_extended_protocol() {
    let (_tmp, _srv, c) = fresh().await;
    c.execute("create sequence w", &[]).await.unwrap();
    assert_eq!(
        c.execute("alter sequence w restart with 9 increment by 3", &[])
            .await
            .unwrap(),
        0
    );
    let v: i64 = c.query_one("select nextval('w')", &[]).await.unwrap().get(0);
    assert_eq!(v, 9);
    let v: i64 = c.query_one("select nextval('w')", &[]).await.unwrap().get(0);
    assert_eq!(v, 12);
    // Prepared once, run twice.
    let st = c.prepare("alter sequence w restart").await.unwrap();
    assert!(st.params().is_empty() && st.columns().is_empty());
    c.execute(&st, &[]).await.unwrap();
    let v: i64 = c.query_one("select nextval('w')", &[]).await.unwrap().get(0);
    assert_eq!(v, 1);
    assert_eq!(c.execute("vacuum", &[]).await.unwrap(), 0);
    let e = c
        .execute("alter sequence w restart with 1 bogus", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::SYNTAX_ERROR), "{e}");
    let e = c.execute("alter sequence nope restart", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_TABLE), "{e}");
}
