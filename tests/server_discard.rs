//! `DISCARD ALL` over the wire, as a connection pooler sends it (PgBouncer's
//! `server_reset_query`) before the next client gets the connection: the settings go back to
//! their reset values (the startup packet's `TimeZone` included), `currval` forgets, and the
//! connection's named prepared statements are closed; inside a transaction block it is 25001.

mod server_util;

use server_util::{simple_row, Server};
use tokio_postgres::error::SqlState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discard_all_leaves_nothing_of_the_last_client() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = Server::start(&tmp.path().join("data"), &[]);
    let c = server_util::pg_connect(srv.port, "options='-c TimeZone=Asia/Kolkata'").await;
    c.batch_execute("CREATE SEQUENCE s; CREATE TABLE t (id int PRIMARY KEY)")
        .await
        .unwrap();
    c.batch_execute("SET TIME ZONE 'America/New_York'; SET extra_float_digits = 3")
        .await
        .unwrap();
    simple_row(&c, "SELECT nextval('s')").await;
    // A named prepared statement (tokio-postgres names every statement it prepares).
    let st = c.prepare("SELECT count(*) FROM t").await.unwrap();
    c.query(&st, &[]).await.unwrap();

    // Inside a block it is refused and fails the block.
    let e = c.batch_execute("BEGIN; DISCARD ALL").await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::ACTIVE_SQL_TRANSACTION), "{e}");
    c.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        simple_row(&c, "SHOW TimeZone").await,
        [Some("America/New_York".to_string())]
    );

    c.batch_execute("DISCARD ALL").await.unwrap();
    // The startup packet's zone, not the default: it is the setting's reset value.
    assert_eq!(
        simple_row(&c, "SHOW TimeZone").await,
        [Some("Asia/Kolkata".to_string())]
    );
    assert_eq!(
        simple_row(&c, "SHOW extra_float_digits").await,
        [Some("1".to_string())]
    );
    let e = c.query("SELECT currval('s')", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE), "{e}");
    let e = c.query(&st, &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::INVALID_SQL_STATEMENT_NAME), "{e}");
    // The connection goes on: new statements prepare and run.
    let st = c.prepare("SELECT count(*) FROM t").await.unwrap();
    let n: i64 = c.query_one(&st, &[]).await.unwrap().get(0);
    assert_eq!(n, 0);
    // DISCARD SEQUENCES forgets currval only, and runs in a block; PLANS and TEMP change
    // nothing.
    c.batch_execute("SET TIME ZONE 'UTC'").await.unwrap();
    simple_row(&c, "SELECT nextval('s')").await;
    c.batch_execute("BEGIN; DISCARD SEQUENCES; DISCARD PLANS; DISCARD TEMP; COMMIT")
        .await
        .unwrap();
    let e = c.query("SELECT currval('s')", &[]).await.unwrap_err();
    assert_eq!(e.code(), Some(&SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE), "{e}");
    assert_eq!(simple_row(&c, "SHOW TimeZone").await, [Some("UTC".to_string())]);
    c.query(&st, &[]).await.unwrap();
}
