//! What PostgreSQL 15 clients read off the wire besides values, against `augur serve` with
//! tokio-postgres: a constraint violation's DETAIL as its own error field (not folded into the
//! message), through both protocols; `character(n)` described as bpchar (OIDs 1042 / 1014,
//! with its length as the modifier) and sent blank-padded in both formats; `varchar` columns
//! and casts described as varchar (OID 1043); `pg_typeof` as a
//! regtype (OID 2206: the name in text, the OID in binary).

mod server_util;

use server_util::{simple_row, Server};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

async fn fresh() -> (tempfile::TempDir, Server, Client) {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let c = server_util::pg_connect(srv.port, "").await;
    (tmp, srv, c)
}

/// The texts PostgreSQL 15 sends (checked with psql's `\set VERBOSITY verbose`).
const VIOLATIONS: &[(&str, SqlState, &str, &str)] = &[
    (
        "INSERT INTO parent VALUES (1, 'b')",
        SqlState::UNIQUE_VIOLATION,
        "duplicate key value violates unique constraint \"parent_pkey\"",
        "Key (p)=(1) already exists.",
    ),
    (
        "INSERT INTO parent VALUES (2, 'a')",
        SqlState::UNIQUE_VIOLATION,
        "duplicate key value violates unique constraint \"parent_u_key\"",
        "Key (u)=(a) already exists.",
    ),
    (
        "INSERT INTO child VALUES (11, 5, 'x', 1, NULL)",
        SqlState::FOREIGN_KEY_VIOLATION,
        "insert or update on table \"child\" violates foreign key constraint \"child_p_fkey\"",
        "Key (p)=(5) is not present in table \"parent\".",
    ),
    (
        "DELETE FROM parent WHERE p = 1",
        SqlState::FOREIGN_KEY_VIOLATION,
        "update or delete on table \"parent\" violates foreign key constraint \"child_p_fkey\" on table \"child\"",
        "Key (p)=(1) is still referenced from table \"child\".",
    ),
    (
        "UPDATE parent SET p = 3 WHERE p = 1",
        SqlState::FOREIGN_KEY_VIOLATION,
        "update or delete on table \"parent\" violates foreign key constraint \"child_p_fkey\" on table \"child\"",
        "Key (p)=(1) is still referenced from table \"child\".",
    ),
    (
        "INSERT INTO child VALUES (12, 1, NULL, 1, 'ab')",
        SqlState::NOT_NULL_VIOLATION,
        "null value in column \"n\" of relation \"child\" violates not-null constraint",
        "Failing row contains (12, 1, null, 1, ab ).",
    ),
    (
        "INSERT INTO child VALUES (13, 1, 'y', -1, 'ab')",
        SqlState::CHECK_VIOLATION,
        "new row for relation \"child\" violates check constraint \"child_q_check\"",
        "Failing row contains (13, 1, y, -1, ab ).",
    ),
    (
        "INSERT INTO comp VALUES (1, 'x'), (1, 'x')",
        SqlState::UNIQUE_VIOLATION,
        "duplicate key value violates unique constraint \"comp_pkey\"",
        "Key (a, b)=(1, x) already exists.",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constraint_violations_carry_detail_apart() {
    let (_tmp, srv, c) = fresh().await;
    c.batch_execute(
        "CREATE TABLE parent (p int PRIMARY KEY, u text UNIQUE);
         CREATE TABLE child (c int PRIMARY KEY, p int REFERENCES parent(p), n text NOT NULL,
                             q int CHECK (q > 0), b char(3));
         CREATE TABLE comp (a int, b text, PRIMARY KEY (a, b));
         INSERT INTO parent VALUES (1, 'a');
         INSERT INTO child VALUES (10, 1, 'x', 1, 'z');",
    )
    .await
    .unwrap();
    for &(sql, ref state, message, detail) in VIOLATIONS {
        // The simple protocol (batch_execute), then the extended one (execute).
        let simple = c.batch_execute(sql).await.unwrap_err();
        let extended = c.execute(sql, &[]).await.unwrap_err();
        for e in [simple, extended] {
            let db = e
                .as_db_error()
                .unwrap_or_else(|| panic!("{sql}: not a server error: {e}"));
            assert_eq!(db.code(), state, "{sql}");
            assert_eq!(db.message(), message, "{sql}");
            assert_eq!(db.detail(), Some(detail), "{sql}");
        }
    }
    // A unique index conflict found only at COMMIT (two open transactions took the same
    // value) names the value too.
    let c2 = server_util::pg_connect(srv.port, "").await;
    c.batch_execute("BEGIN; INSERT INTO parent VALUES (7, 'dup')")
        .await
        .unwrap();
    c2.batch_execute("BEGIN; INSERT INTO parent VALUES (8, 'dup')")
        .await
        .unwrap();
    c.batch_execute("COMMIT").await.unwrap();
    let e = c2.batch_execute("COMMIT").await.unwrap_err();
    let db = e.as_db_error().expect("a server error");
    assert_eq!(db.code(), &SqlState::UNIQUE_VIOLATION);
    assert_eq!(
        db.message(),
        "duplicate key value violates unique constraint \"parent_u_key\""
    );
    assert_eq!(db.detail(), Some("Key (u)=(dup) already exists."));
    // Nothing of it was written, and an error without a DETAIL sends none.
    let e = c.batch_execute("SELECT 1/0").await.unwrap_err();
    assert_eq!(e.as_db_error().and_then(|d| d.detail()), None);
    let n: i64 = c
        .query_one("SELECT count(*) FROM child", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bpchar_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("CREATE TABLE bp (id int PRIMARY KEY, c char(3), a char(2)[])")
        .await
        .unwrap();
    let ins = c.prepare("INSERT INTO bp VALUES ($1, $2, $3)").await.unwrap();
    assert_eq!(ins.params()[1], Type::BPCHAR);
    assert_eq!(ins.params()[2], Type::BPCHAR_ARRAY);
    c.execute(&ins, &[&1i32, &"a", &vec![Some("x"), None]])
        .await
        .unwrap();
    let e = c
        .execute(&ins, &[&2i32, &"abcd", &None::<Vec<&str>>])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::STRING_DATA_RIGHT_TRUNCATION));

    // Binary results (tokio-postgres's prepared queries): padded, typed bpchar.
    let sel = c.prepare("SELECT c, a FROM bp WHERE c = $1").await.unwrap();
    assert_eq!(sel.params()[0], Type::BPCHAR);
    assert_eq!(sel.columns()[0].type_(), &Type::BPCHAR);
    assert_eq!(sel.columns()[1].type_(), &Type::BPCHAR_ARRAY);
    let row = c.query_one(&sel, &[&"a  "]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "a  ");
    assert_eq!(
        row.get::<_, Vec<Option<String>>>(1),
        vec![Some("x ".to_string()), None]
    );

    // Text results (the simple protocol).
    assert_eq!(
        simple_row(&c, "SELECT c, a, c::text FROM bp").await,
        [Some("a  "), Some("{\"x \",NULL}"), Some("a")].map(|v| v.map(str::to_string))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn varchar_is_described_as_varchar() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("CREATE TABLE vc (id int PRIMARY KEY, v varchar(3), u varchar, t text)")
        .await
        .unwrap();
    // An INSERT's parameters take their columns' types, as in PostgreSQL.
    let ins = c.prepare("INSERT INTO vc VALUES ($1, $2, $3, $4)").await.unwrap();
    assert_eq!(ins.params()[1..], [Type::VARCHAR, Type::VARCHAR, Type::TEXT]);
    c.execute(&ins, &[&1i32, &"abc", &"free", &"t"]).await.unwrap();
    let e = c.execute(&ins, &[&2i32, &"abcd", &"x", &"x"]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::STRING_DATA_RIGHT_TRUNCATION));

    // Result columns: a varchar column or cast is varchar (OID 1043), an expression over
    // one text, in both formats.
    let sel = c
        .prepare("SELECT v, u, t, v || '!', 'abcdef'::varchar(2), COALESCE(v, u) FROM vc")
        .await
        .unwrap();
    let types: Vec<Type> = sel.columns().iter().map(|col| col.type_().clone()).collect();
    assert_eq!(
        types,
        [
            Type::VARCHAR,
            Type::VARCHAR,
            Type::TEXT,
            Type::TEXT,
            Type::VARCHAR,
            Type::VARCHAR
        ]
    );
    let row = c.query_one(&sel, &[]).await.unwrap();
    let got: Vec<String> = (0..6).map(|i| row.get(i)).collect();
    assert_eq!(got, ["abc", "free", "t", "abc!", "ab", "abc"]);
    assert_eq!(
        simple_row(&c, "SELECT v, pg_typeof(v), pg_typeof(u) FROM vc").await,
        [Some("abc"), Some("character varying"), Some("character varying")].map(|v| v.map(str::to_string))
    );
}

/// A regtype read in binary: PostgreSQL's regtypesend, the type's OID as a uint32.
struct RegType(u32);

impl<'a> tokio_postgres::types::FromSql<'a> for RegType {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RegType(u32::from_be_bytes(raw.try_into()?)))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::REGTYPE
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_typeof_is_a_regtype_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    let sql = "SELECT pg_typeof(1), pg_typeof('a'::char(2)), pg_typeof(ARRAY[now()]), pg_typeof(NULL)";
    // Binary results: described as regtype (OID 2206), sent as the type's OID.
    let st = c.prepare(sql).await.unwrap();
    assert!(st.columns().iter().all(|col| *col.type_() == Type::REGTYPE));
    let row = c.query_one(&st, &[]).await.unwrap();
    let oids: Vec<u32> = (0..4).map(|i| row.get::<_, RegType>(i).0).collect();
    assert_eq!(oids, vec![23, 1042, 1185, 705]);
    // Text results: the type's name.
    assert_eq!(
        simple_row(&c, sql).await,
        [
            Some("integer"),
            Some("character"),
            Some("timestamp with time zone[]"),
            Some("unknown")
        ]
        .map(|v| v.map(str::to_string))
    );
}

/// A regtype parameter sent in binary: regtypesend's OID.
#[derive(Debug)]
struct RegTypeParam(u32);

impl tokio_postgres::types::ToSql for RegTypeParam {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0.to_be_bytes());
        Ok(tokio_postgres::types::IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::REGTYPE
    }
    tokio_postgres::types::to_sql_checked!();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_cast_to_regtype_is_a_regtype() {
    let (_tmp, _srv, c) = fresh().await;
    // Parse/Describe: `$1::regtype` types the parameter regtype (OID 2206), as PostgreSQL.
    let st = c.prepare("SELECT format_type($1::regtype, NULL)").await.unwrap();
    assert_eq!(st.params(), &[Type::REGTYPE]);
    for (oid, name) in [
        (23, "integer"),
        (1043, "character varying"),
        (1185, "timestamp with time zone[]"),
    ] {
        let row = c.query_one(&st, &[&RegTypeParam(oid)]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), name);
    }
    // So is a parameter unified with a regtype (COALESCE, CASE).
    let co = c
        .prepare("SELECT COALESCE($1, pg_typeof(1))::text")
        .await
        .unwrap();
    assert_eq!(co.params(), &[Type::REGTYPE]);
    let row = c.query_one(&co, &[&RegTypeParam(1043)]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "character varying");
    // An OID of no type is 42704 when the parameter is read.
    let e = c.query_one(&st, &[&RegTypeParam(999_999)]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::UNDEFINED_OBJECT));
}
