//! `time` and `json` over the wire: parameters a client binds in binary and in text format
//! (time's binary form is int8 microseconds since midnight; json's is its text, without
//! jsonb's version byte), results in both formats with their OIDs (1083, 114), and COPY
//! FROM / TO of both types in text and CSV; `infinity` / `-infinity` of timestamp,
//! timestamptz and date in both formats (binary: the extreme integers themselves).

mod server_util;

use futures::SinkExt;
use server_util::{simple_row, Server};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{Format, IsNull, ToSql, Type};
use tokio_postgres::Client;

type BoxError = Box<dyn std::error::Error + Sync + Send>;

async fn fresh() -> (tempfile::TempDir, Server, Client) {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let c = server_util::pg_connect(srv.port, "").await;
    (tmp, srv, c)
}

/// A time parameter in binary: microseconds since midnight.
#[derive(Debug)]
struct BinTime(i64);

impl ToSql for BinTime {
    fn to_sql(&self, _: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        use bytes::BufMut;
        out.put_i64(self.0);
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIME
    }
    tokio_postgres::types::to_sql_checked!();
}

/// A parameter of any type sent in text format.
#[derive(Debug)]
struct TextParam(&'static str);

impl ToSql for TextParam {
    fn to_sql(&self, _: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        out.extend_from_slice(self.0.as_bytes());
        Ok(IsNull::No)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }
    tokio_postgres::types::to_sql_checked!();
}

/// A result field's bytes as they came.
struct Raw(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw, BoxError> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

const US_PER_HOUR: i64 = 3_600_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_json_parameters_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table tj (id int primary key, t time, j json)")
        .await
        .unwrap();
    let ins = c.prepare("insert into tj values ($1, $2, $3)").await.unwrap();
    assert_eq!(ins.params(), &[Type::INT4, Type::TIME, Type::JSON]);
    // Binary: microseconds for time, the bare text for json (serde_json writes it compactly).
    let doc: serde_json::Value = serde_json::json!({"b": [1, 2], "a": null});
    c.execute(&ins, &[&1i32, &BinTime(13 * US_PER_HOUR + 500_000), &doc])
        .await
        .unwrap();
    // Text: as the client wrote it, json's whitespace and duplicate keys kept.
    c.execute(
        &ins,
        &[&2i32, &TextParam("04:05 PM"), &TextParam(r#"{"k" : 1,  "k": 2}"#)],
    )
    .await
    .unwrap();
    let rows: Vec<Vec<Option<String>>> = vec![
        simple_row(&c, "select t, j from tj where id = 1").await,
        simple_row(&c, "select t, j from tj where id = 2").await,
    ];
    assert_eq!(
        rows,
        [
            [Some("13:00:00.5".into()), Some(r#"{"a":null,"b":[1,2]}"#.into())],
            [Some("16:05:00".into()), Some(r#"{"k" : 1,  "k": 2}"#.into())],
        ]
    );

    // Results in binary: OIDs 1083 and 114, int8 microseconds and the text itself.
    let st = c
        .prepare("select t, j, j -> 'k' from tj where id = $1")
        .await
        .unwrap();
    let types: Vec<&Type> = st.columns().iter().map(|c| c.type_()).collect();
    assert_eq!(types, [&Type::TIME, &Type::JSON, &Type::JSON]);
    let r = c.query_one(&st, &[&2i32]).await.unwrap();
    let Raw(t) = r.get(0);
    assert_eq!(t, (16 * US_PER_HOUR + 5 * 60_000_000).to_be_bytes());
    let Raw(j) = r.get(1);
    assert_eq!(j, br#"{"k" : 1,  "k": 2}"#);
    let got: serde_json::Value = r.get(2);
    assert_eq!(got, serde_json::json!(2));

    // A time parameter compared and added, in both formats.
    let n: i64 = c
        .query_one(
            "select count(*) from tj where t > $1",
            &[&BinTime(14 * US_PER_HOUR)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    let n: i64 = c
        .query_one(
            "select count(*) from tj where t < $1::time",
            &[&TextParam("14:00")],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);

    // Bad input in either format is an error, and the rows stay as they were.
    let e = c
        .execute(&ins, &[&3i32, &BinTime(25 * US_PER_HOUR), &doc])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::DATETIME_FIELD_OVERFLOW), "{e}");
    let e = c
        .execute(&ins, &[&3i32, &TextParam("noon-ish"), &doc])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INVALID_DATETIME_FORMAT), "{e}");
    let e = c
        .execute(&ins, &[&3i32, &BinTime(0), &TextParam("{\"a\": }")])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INVALID_TEXT_REPRESENTATION), "{e}");
    let n: i64 = c.query_one("select count(*) from tj", &[]).await.unwrap().get(0);
    assert_eq!(n, 2);
}

/// A parameter sent in binary as the given bytes, whatever its type.
#[derive(Debug)]
struct BinBytes(Vec<u8>);

impl ToSql for BinBytes {
    fn to_sql(&self, _: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        out.extend_from_slice(&self.0);
        Ok(IsNull::No)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
    tokio_postgres::types::to_sql_checked!();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinities_in_both_formats() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table ti (id int primary key, ts timestamp, tz timestamptz, d date)")
        .await
        .unwrap();
    let ins = c.prepare("insert into ti values ($1, $2, $3, $4)").await.unwrap();
    // Binary: PostgreSQL's DT_NOEND / DT_NOBEGIN and DATEVAL_NOEND / NOBEGIN, unshifted.
    c.execute(
        &ins,
        &[
            &1i32,
            &BinBytes(i64::MAX.to_be_bytes().to_vec()),
            &BinBytes(i64::MIN.to_be_bytes().to_vec()),
            &BinBytes(i32::MAX.to_be_bytes().to_vec()),
        ],
    )
    .await
    .unwrap();
    // Text, in any letter case.
    c.execute(
        &ins,
        &[
            &2i32,
            &TextParam("-Infinity"),
            &TextParam("infinity"),
            &TextParam(" -INFINITY"),
        ],
    )
    .await
    .unwrap();
    c.execute(
        &ins,
        &[
            &3i32,
            &TextParam("2000-01-01"),
            &TextParam("2000-01-01 00:00+00"),
            &TextParam("2000-01-01"),
        ],
    )
    .await
    .unwrap();
    let rows: Vec<Vec<Option<String>>> = vec![
        simple_row(&c, "select ts, tz, d from ti where id = 1").await,
        simple_row(&c, "select ts, tz, d from ti where id = 2").await,
    ];
    assert_eq!(
        rows,
        [
            [
                Some("infinity".into()),
                Some("-infinity".into()),
                Some("infinity".into())
            ],
            [
                Some("-infinity".into()),
                Some("infinity".into()),
                Some("-infinity".into())
            ],
        ]
    );
    let order = simple_row(
        &c,
        "select string_agg(id::text, ',' order by ts), string_agg(id::text, ',' order by d) from ti",
    )
    .await;
    assert_eq!(order, [Some("2,3,1".to_string()), Some("2,3,1".to_string())]);
    // Results in binary: the same integers back; a finite value shifted to 2000-01-01.
    let st = c.prepare("select ts, tz, d from ti where id = $1").await.unwrap();
    for (id, ts, tz, d) in [
        (1i32, i64::MAX, i64::MIN, i32::MAX),
        (2, i64::MIN, i64::MAX, i32::MIN),
        (3, 0, 0, 0),
    ] {
        let r = c.query_one(&st, &[&id]).await.unwrap();
        let (Raw(a), Raw(b), Raw(e)) = (r.get(0), r.get(1), r.get(2));
        assert_eq!(
            (a, b, e),
            (
                ts.to_be_bytes().to_vec(),
                tz.to_be_bytes().to_vec(),
                d.to_be_bytes().to_vec()
            ),
            "row {id}"
        );
    }
    // A binary infinity parameter compares as the infinity.
    let n: i64 = c
        .query_one(
            "select count(*) from ti where ts < $1",
            &[&BinBytes(i64::MAX.to_be_bytes().to_vec())],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    let e = c
        .query_one("select ts - timestamp '2000-01-01' from ti where id = 1", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::DATETIME_FIELD_OVERFLOW), "{e}");
}

async fn copy_out(c: &Client, sql: &str) -> String {
    let out = c.copy_out(sql).await.unwrap();
    futures::pin_mut!(out);
    let mut data = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut out).await {
        data.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(data).unwrap()
}

async fn copy_in(c: &Client, sql: &str, data: &'static str) -> u64 {
    let sink = c.copy_in(sql).await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(data.as_bytes()))
        .await
        .unwrap();
    sink.finish().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_and_json_copy_round_trips() {
    let (_tmp, _srv, c) = fresh().await;
    c.batch_execute("create table cj (id int primary key, t time(2), j json)")
        .await
        .unwrap();
    let text = "1\t04:05:06.789\t{\"a\" : [1, 2]}\n2\t\\N\t\\N\n3\tallballs\t\"x\\\\ty\"\n";
    assert_eq!(copy_in(&c, "copy cj from stdin", text).await, 3);
    let csv = "4,23:59:59.999,\"{\"\"k\"\": \"\"v\"\"}\"\n5,24:00:00,[]\n";
    assert_eq!(copy_in(&c, "copy cj from stdin with (format csv)", csv).await, 2);
    // time(2) rounds; json comes back as written.
    let out = copy_out(&c, "copy (select * from cj order by id) to stdout").await;
    assert_eq!(
        out,
        "1\t04:05:06.79\t{\"a\" : [1, 2]}\n2\t\\N\t\\N\n3\t00:00:00\t\"x\\\\ty\"\n\
         4\t24:00:00\t{\"k\": \"v\"}\n5\t24:00:00\t[]\n"
    );
    let out = copy_out(&c, "copy cj to stdout with (format csv, header)").await;
    let mut lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.remove(0), "id,t,j");
    lines.sort();
    assert_eq!(
        lines,
        [
            "1,04:05:06.79,\"{\"\"a\"\" : [1, 2]}\"",
            "2,,",
            "3,00:00:00,\"\"\"x\\ty\"\"\"",
            "4,24:00:00,\"{\"\"k\"\": \"\"v\"\"}\"",
            "5,24:00:00,[]",
        ]
    );
    // What COPY TO wrote loads back unchanged.
    c.batch_execute("create table cj2 (id int primary key, t time(2), j json)")
        .await
        .unwrap();
    let all = copy_out(&c, "copy cj to stdout").await;
    let all: &'static str = Box::leak(all.into_boxed_str());
    assert_eq!(copy_in(&c, "copy cj2 from stdin", all).await, 5);
    let again = copy_out(&c, "copy (select * from cj2 order by id) to stdout").await;
    let first = copy_out(&c, "copy (select * from cj order by id) to stdout").await;
    assert_eq!(again, first);
    // Bad input fails the COPY and leaves the table as it was.
    let sink = c.copy_in("copy cj from stdin").await.unwrap();
    futures::pin_mut!(sink);
    sink.send(bytes::Bytes::from_static(b"9\t25:00\t{}\n"))
        .await
        .unwrap();
    let e = sink.finish().await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::DATETIME_FIELD_OVERFLOW), "{e}");
    let n: i64 = c.query_one("select count(*) from cj", &[]).await.unwrap().get(0);
    assert_eq!(n, 5);
}
