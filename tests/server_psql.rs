//! psql (Debian's postgresql-client) against `augur serve`: DDL, DML, queries, `\dt`, `\d t`,
//! transactions, errors that leave the session usable, COPY FROM STDIN, COPY TO STDOUT and
//! `\copy ... to`, and durability of committed data across a SIGKILL of the server.

mod server_util;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use server_util::{require, text, Server};

/// COPY TO STDOUT in text and CSV (header, FORCE_QUOTE, DELIMITER, NULL, a query as the
/// source) and psql's `\copy ... to stdout`: the expected output is PostgreSQL 15.18's for the
/// same script, byte for byte.
#[test]
fn copy_to_stdout_as_postgresql_writes_it() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let o = srv.psql(
        &["-q", "-v", "ON_ERROR_STOP=1"],
        r#"
create table ct (id int primary key, name text, score float8, ok boolean, at timestamp, raw bytea);
insert into ct values (1, 'plain', 1.5, true, '2024-01-02 03:04:05', '\x0102'), (2, E'tab\there', -0.25, false, NULL, NULL), (3, E'line\nbreak, "quoted" \\ back', 1e20, NULL, '2024-05-06 07:08:09.5', ''), (4, '', NULL, true, NULL, '\xff'), (5, NULL, 0, NULL, NULL, NULL);
copy ct to stdout;
copy ct (name, id) to stdout with (format csv, header);
copy (select id, name from ct where id > 2 order by id desc) to stdout with csv;
copy ct (id, name) to stdout with (format csv, force_quote (name), delimiter ';', null 'NULL');
\copy ct (id, name) to stdout with (delimiter '|', null '-')
"#,
    );
    let (out, err) = text(&o);
    assert!(o.status.success() && err.is_empty(), "{out}\n{err}");
    let want = concat!(
        "1\tplain\t1.5\tt\t2024-01-02 03:04:05\t\\\\x0102\n",
        "2\ttab\\there\t-0.25\tf\t\\N\t\\N\n",
        "3\tline\\nbreak, \"quoted\" \\\\ back\t1e+20\t\\N\t2024-05-06 07:08:09.5\t\\\\x\n",
        "4\t\t\\N\tt\t\\N\t\\\\xff\n",
        "5\t\\N\t0\t\\N\t\\N\t\\N\n",
        "name,id\n",
        "plain,1\n",
        "tab\there,2\n",
        "\"line\nbreak, \"\"quoted\"\" \\ back\",3\n",
        "\"\",4\n",
        ",5\n",
        "5,\n",
        "4,\"\"\n",
        "3,\"line\nbreak, \"\"quoted\"\" \\ back\"\n",
        "1;\"plain\"\n",
        "2;\"tab\there\"\n",
        "3;\"line\nbreak, \"\"quoted\"\" \\ back\"\n",
        "4;\"\"\n",
        "5;NULL\n",
        "1|plain\n",
        "2|tab\\there\n",
        "3|line\\nbreak, \"quoted\" \\\\ back\n",
        "4|\n",
        "5|-\n",
    );
    assert_eq!(out, want);
    // The server's files are not the client's: COPY TO a file is refused (psql's \copy writes
    // the client's); a view is not copied (PostgreSQL: 42809).
    let o = srv.psql(
        &[],
        "copy ct to '/tmp/x';\ncreate view ctv as select id from ct;\ncopy ctv to stdout;\n",
    );
    let (_, err) = text(&o);
    assert!(
        err.contains("not supported") && err.contains("cannot copy from view"),
        "{err}"
    );
}

#[test]
fn psql_end_to_end() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut srv = Server::start(&dir, &[]);

    // DDL, DML, queries; an error in the middle leaves the session usable.
    let o = srv.psql(
        &[],
        r#"
create table t (id int primary key, name text not null default 'x', score float8, ok bool, at timestamp, raw bytea);
create index t_name_idx on t (name);
insert into t values (1, 'one', 1.5, true, '2024-01-02 03:04:05', '\x0102');
insert into t (id, name) values (2, 'two'), (3, 'three');
select id, name, score, ok, at, raw from t order by id;
select 1/0;
select 'still usable';
update t set score = score * 2 where id = 1;
delete from t where id = 3;
select count(*), sum(score) from t;
"#,
    );
    let (out, err) = text(&o);
    assert!(
        out.contains("1|one|1.5|t|2024-01-02 03:04:05|\\x0102"),
        "{out}\n{err}"
    );
    assert!(out.contains("2|two||||"), "{out}");
    assert!(err.contains("division by zero"), "{err}");
    assert!(out.contains("still usable"), "{out}");
    assert!(out.contains("2|3"), "{out}");

    // Command tags (psql prints them without -t/-q; check a few via -c with echo of status).
    let o = srv.psql(
        &[
            "-c",
            "insert into t (id, name) values (10, 'ten'), (11, 'eleven')",
        ],
        "",
    );
    assert!(text(&o).0.contains("INSERT 0 2"), "{:?}", text(&o));
    let o = srv.psql(&["-c", "update t set name = 'TEN' where id >= 10"], "");
    assert!(text(&o).0.contains("UPDATE 2"), "{:?}", text(&o));

    // \dt and \d t answered by the SQL layer's pg_catalog relations.
    let dt = srv.sql("\\dt");
    assert!(dt.contains("public|t|table|augur"), "{dt}");
    let o = srv.psql(&["-P", "tuples_only=off", "-c", "\\d t"], "");
    let (d, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert!(d.contains("id|integer||not null|"), "{d}");
    assert!(d.contains("name|text||not null|'x'"), "{d}");
    assert!(d.contains("score|double precision|||"), "{d}");
    assert!(d.contains("\"t_pkey\" PRIMARY KEY, alex (id)"), "{d}");
    assert!(d.contains("\"t_name_idx\" btree (name)"), "{d}");
    let o = srv.psql(&["-c", "\\d nosuch"], "");
    assert!(
        text(&o).1.contains("Did not find any relation named \"nosuch\""),
        "{:?}",
        text(&o)
    );
    assert!(srv.sql("\\l").contains("augur|augur|UTF8"));
    // \di, \ds, \dt+, \d+ and \d of a sequence, answered by the SQL layer's pg_catalog.
    let di = srv.sql("\\di");
    assert!(
        di.contains("public|t_name_idx|index|augur|t") && di.contains("public|t_pkey|index|augur|t"),
        "{di}"
    );
    srv.sql("create sequence s start with 5");
    let ds = srv.sql("\\ds");
    assert!(ds.contains("public|s|sequence|augur"), "{ds}");
    let o = srv.psql(&["-P", "tuples_only=off", "-c", "\\d s"], "");
    let (d, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert!(d.contains("bigint|5|1|9223372036854775807|1|no|1"), "{d}");
    let dtp = srv.sql("\\dt+ t");
    assert!(dtp.contains("public|t|table|augur|permanent|augur|"), "{dtp}");
    let o = srv.psql(&["-P", "tuples_only=off", "-c", "\\d+ t"], "");
    let (d, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert!(d.contains("id|integer||not null||plain|"), "{d}");
    // CHECK and FOREIGN KEY constraints in \d, from pg_constraint (texts as psql prints them
    // from PostgreSQL 15).
    srv.sql("create table kids (id int primary key, t_id int references t on delete cascade, n int check (n > 0), constraint n_small check (n < 100 and n <> 50))");
    let o = srv.psql(&["-P", "tuples_only=off", "-c", "\\d kids"], "");
    let (d, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert!(d.contains("Check constraints:"), "{d}");
    assert!(d.contains("\"kids_n_check\" CHECK (n > 0)"), "{d}");
    assert!(d.contains("\"n_small\" CHECK (n < 100 AND n <> 50)"), "{d}");
    assert!(d.contains("Foreign-key constraints:"), "{d}");
    assert!(
        d.contains("\"kids_t_id_fkey\" FOREIGN KEY (t_id) REFERENCES t(id) ON DELETE CASCADE"),
        "{d}"
    );
    let o = srv.psql(&["-P", "tuples_only=off", "-c", "\\d t"], "");
    let (d, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert!(d.contains("Referenced by:"), "{d}");
    assert!(
        d.contains("TABLE \"kids\" CONSTRAINT \"kids_t_id_fkey\" FOREIGN KEY (t_id) REFERENCES t(id) ON DELETE CASCADE"),
        "{d}"
    );
    srv.sql("drop table kids");
    assert!(srv.sql("select version()").contains("Augur"));
    assert_eq!(srv.sql("show standard_conforming_strings").trim(), "on");

    // Transactions: rollback discards, an error aborts the block until ROLLBACK.
    let o = srv.psql(
        &["-q"],
        r#"
begin;
insert into t (id, name) values (20, 'twenty');
select count(*) from t where id = 20;
rollback;
select count(*) from t where id = 20;
begin;
insert into t (id, name) values (21, 'twenty-one');
select nosuch from t;
select 1;
commit;
select count(*) from t where id = 21;
begin;
insert into t (id, name) values (22, 'twenty-two');
commit;
"#,
    );
    let (out, err) = text(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, ["1", "0", "0"], "{out}\n{err}");
    assert!(err.contains("column \"nosuch\" does not exist"), "{err}");
    assert!(err.contains("current transaction is aborted"), "{err}");

    // COPY FROM STDIN with inline data (text and CSV, \N nulls).
    let o = srv.psql(
        &["-q"],
        "copy t (id, name, score) from stdin;\n100\thundred\t\\N\n101\thundred one\t2.5\n\\.\n\
         copy t (id, name, score) from stdin with (format csv);\n102,\"csv, quoted\",\n103,plain,3\n\\.\n\
         select id, name, coalesce(score, -1) from t where id >= 100 order by id;\n",
    );
    let (out, err) = text(&o);
    assert!(err.is_empty(), "{err}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "100|hundred|-1",
            "101|hundred one|2.5",
            "102|csv, quoted|-1",
            "103|plain|3"
        ],
        "{out}"
    );
    // A COPY that fails (bad data) inserts nothing.
    let o = srv.psql(
        &[],
        "copy t (id, name) from stdin;\n200\tok\nnot-a-number\tbad\n\\.\n",
    );
    assert!(text(&o).1.contains("invalid input syntax"), "{:?}", text(&o));
    assert_eq!(srv.sql("select count(*) from t where id = 200").trim(), "0");

    // An open transaction at the time of a SIGKILL is lost; committed data survives.
    let before = srv.sql("select count(*), sum(id) from t");
    let mut open = Command::new("psql")
        .args(["-X", "-Atq", "-h", "127.0.0.1", "-U", "augur", "-d", "augur"])
        .args(["-p", &srv.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = open.stdin.take().unwrap();
    writeln!(
        stdin,
        "begin; insert into t (id, name) values (999, 'uncommitted'); select 'inserted';"
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut rd = BufReader::new(open.stdout.take().unwrap());
    let mut line = String::new();
    rd.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "inserted");
    srv.kill9();
    drop(stdin);
    let _ = open.wait();

    let srv2 = Server::start(&dir, &[]);
    assert_eq!(srv2.sql("select count(*), sum(id) from t"), before);
    assert_eq!(srv2.sql("select count(*) from t where id = 999").trim(), "0");
    assert_eq!(srv2.sql("select name from t where id = 22").trim(), "twenty-two");
    drop(srv2);
    std::thread::sleep(Duration::from_millis(10));
}

#[test]
fn graceful_shutdown_and_embedded_shell() {
    require("psql");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut srv = Server::start(&dir, &[]);
    srv.sql("create table kv (k int primary key, v text); insert into kv values (1, 'a'), (2, 'b')");
    assert_eq!(srv.terminate(), Some(0), "log:\n{}", srv.log_text());
    assert!(
        srv.log_text().contains("closing the database"),
        "{}",
        srv.log_text()
    );

    // The embedded shell reads the same directory once the server is gone.
    let exe = env!("CARGO_BIN_EXE_augur");
    let o = Command::new(exe)
        .args(["sql", "--data-dir"])
        .arg(&dir)
        .args(["-c", "select k, v from kv order by k"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains(" k | v\n---+---\n 1 | a\n 2 | b\n(2 rows)"), "{out}");
    let o = Command::new(exe)
        .args(["sql", "--data-dir"])
        .arg(&dir)
        .args(["-c", "select nosuch from kv"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("42703"));
    // Multi-line input from stdin, ending at ';'.
    let mut c = Command::new(exe)
        .args(["sql", "--data-dir"])
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(b"insert into kv\n values (3, 'c');\nselect count(*)\n from kv;\n")
        .unwrap();
    let o = c.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("INSERT 0 1") && out.contains("     3\n(1 row)"),
        "{out}"
    );
    let o = Command::new(exe).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("augur "));
}
