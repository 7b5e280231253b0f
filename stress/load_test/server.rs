//! The server under test, started on a temporary directory and stopped cleanly; the schema
//! set-up queries.

use super::*;

pub(crate) struct Spawned {
    pub(crate) child: Child,
    pub(crate) _dir: tempfile::TempDir,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        // SIGTERM for a clean shutdown, then wait (kill after 30 s).
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `augur serve` with `--metrics` on a second free port; returns (address, metrics port).
pub(crate) fn start_server(args: &Args) -> anyhow::Result<(String, u16, Spawned)> {
    let bin = match &args.augur {
        Some(p) => p.clone(),
        None => std::env::current_exe()?
            .parent()
            .context("binary directory")?
            .join("augur"),
    };
    let dir = tempfile::Builder::new().prefix("augur-load-").tempdir()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr = format!("127.0.0.1:{port}");
    let mport = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = std::fs::File::create(dir.path().join("server.log"))?;
    let child = Command::new(&bin)
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("db"))
        .args(["--listen", &addr, "--log-level", "warn"])
        .args(["--metrics", &format!("127.0.0.1:{mport}")])
        .args(args.server_args.split_whitespace())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("starting {}", bin.display()))?;
    let s = Spawned { child, _dir: dir };
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&addr).is_err() {
        if t0.elapsed() > Duration::from_secs(30) {
            bail!("server did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((addr, mport, s))
}

pub(crate) async fn setup(c: &Client, n: i64, balance: i64) -> anyhow::Result<()> {
    c.batch_execute(
        "DROP TABLE IF EXISTS accounts; DROP TABLE IF EXISTS history; DROP TABLE IF EXISTS events;
         CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL);
         CREATE TABLE history (id BIGINT PRIMARY KEY, src BIGINT NOT NULL, dst BIGINT NOT NULL,
                               amount BIGINT NOT NULL);
         CREATE TABLE events (id BIGINT PRIMARY KEY, account BIGINT NOT NULL, kind TEXT NOT NULL);",
    )
    .await?;
    let mut k = 0;
    while k < n {
        let hi = (k + 1000).min(n);
        let values: Vec<String> = (k..hi).map(|i| format!("({i},{balance})")).collect();
        c.batch_execute(&format!("INSERT INTO accounts VALUES {}", values.join(",")))
            .await?;
        k = hi;
    }
    Ok(())
}

pub(crate) async fn scalar(c: &Client, sql: &str) -> anyhow::Result<i64> {
    let row = c.query_one(sql, &[]).await.with_context(|| sql.to_string())?;
    // sum() of BIGINT is NUMERIC, as in PostgreSQL: the callers cast it to int8.
    row.try_get::<_, i64>(0)
        .with_context(|| format!("{sql}: not an int8"))
}
