//! The `augur` command: `augur serve` (PostgreSQL wire-protocol server), `augur sql` (embedded
//! shell), `augur --version`, `augur help`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use augur::server::{self, Server, ServerConfig};
use augur::{Database, Options};
use clap::{Args, Parser, Subcommand};
use tracing::{error, info, warn};

#[derive(Parser)]
#[command(
    name = "augur",
    version,
    about = "Augur: a relational database whose primary-key index is an ALEX learned index over RocksDB"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start: the size difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the PostgreSQL wire protocol (psql, pgbench, drivers).
    Serve(ServeArgs),
    /// Embedded SQL shell on a data directory, without a server.
    Sql(SqlArgs),
}

#[derive(Args)]
struct StorageArgs {
    /// Data directory (created if missing).
    #[arg(long, default_value = "./augur-data")]
    data_dir: PathBuf,
    /// Do not fsync commits: a crash may lose recently acknowledged transactions (never tears one).
    #[arg(long)]
    no_sync: bool,
    /// Memory budget for the data, MiB: the indexes are charged first, the row cache and
    /// RocksDB's block cache get what they leave (each part is a gauge at --metrics).
    #[arg(long, default_value_t = 512)]
    memory_mb: usize,
}

impl StorageArgs {
    fn options(&self) -> Options {
        Options {
            sync_commits: !self.no_sync,
            ..Options::default()
        }
        .with_memory_budget(self.memory_mb << 20)
    }
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    storage: StorageArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:5433")]
    listen: String,
    /// Require this password (SCRAM-SHA-256) for user --user. Also read from AUGUR_PASSWORD.
    #[arg(long)]
    password: Option<String>,
    /// The user --password belongs to.
    #[arg(long, default_value = "augur")]
    user: String,
    /// File of `name:password` lines (SCRAM-SHA-256).
    #[arg(long)]
    users_file: Option<PathBuf>,
    /// Allow a non-loopback --listen address without a password, and a non-loopback
    /// --metrics address (the metrics endpoint has no authentication).
    #[arg(long)]
    insecure_no_auth: bool,
    /// TLS certificate chain (PEM); clients may then use sslmode=require.
    #[arg(long)]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    #[arg(long)]
    tls_key: Option<PathBuf>,
    /// Connections beyond this get SQLSTATE 53300 and are closed.
    #[arg(long, default_value_t = 100)]
    max_connections: usize,
    /// Largest statement (simple Query string or Parse text) a connection may send, in bytes;
    /// larger ones fail with SQLSTATE 54000. 0: no limit (pgwire's 1 GiB message limit).
    #[arg(long, default_value_t = server::DEFAULT_MAX_STATEMENT_BYTES)]
    max_statement_bytes: usize,
    /// Most rows one statement may return (54000 beyond). 0: no limit.
    #[arg(long, default_value_t = 0)]
    max_result_rows: u64,
    /// Most bytes of values one statement may return (54000 beyond). 0: no limit.
    #[arg(long, default_value_t = 0)]
    max_result_bytes: u64,
    /// Default statement_timeout of every session (PostgreSQL syntax: 500, 500ms, 30s, 5min);
    /// a statement running longer fails with 57014. Sessions may SET their own. 0: none.
    #[arg(long, default_value = "0")]
    statement_timeout: String,
    /// Seconds the shutdown waits for running statements.
    #[arg(long, default_value_t = 10)]
    shutdown_timeout: u64,
    /// Log level (error, warn, info, debug, trace) or a tracing filter.
    #[arg(long, default_value = "info")]
    log_level: String,
    /// Serve Prometheus metrics (text format) on this address, `GET /metrics` (e.g.
    /// 127.0.0.1:9187). Off by default; nothing is recorded without it.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Args)]
struct SqlArgs {
    #[command(flatten)]
    storage: StorageArgs,
    /// Run this SQL and exit (non-zero on error).
    #[arg(short = 'c', long)]
    command: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(a) => match serve(a) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                error!("{e:#}");
                eprintln!("augur serve: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Sql(a) => {
            let db = match Database::open(&a.storage.data_dir, a.storage.options()) {
                Ok(db) => db,
                Err(e) => {
                    eprintln!("augur sql: cannot open {}: {e}", a.storage.data_dir.display());
                    return ExitCode::FAILURE;
                }
            };
            let code = server::shell::run(db.clone(), a.command.as_deref());
            if let Err(e) = db.close() {
                eprintln!("augur sql: close failed: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::from(code as u8)
        }
    }
}

fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(&a.log_level)
        .with_context(|| format!("bad --log-level {:?}", a.log_level))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    // Panics go to the log (with their location); a connection's panic is contained to it.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info.location().map(|l| l.to_string()).unwrap_or_default();
        error!(
            "panic in {}: {msg} ({at})",
            std::thread::current().name().unwrap_or("?")
        );
    }));

    let mut users = match &a.users_file {
        Some(p) => server::parse_users_file(
            &std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        )?,
        None => Default::default(),
    };
    if let Some(pw) = a
        .password
        .clone()
        .or_else(|| std::env::var("AUGUR_PASSWORD").ok())
    {
        users.insert(a.user.clone(), pw);
    }
    let cfg = ServerConfig {
        listen: a.listen.clone(),
        users,
        insecure_no_auth: a.insecure_no_auth,
        tls_cert: a.tls_cert.clone(),
        tls_key: a.tls_key.clone(),
        max_connections: a.max_connections.max(1),
        shutdown_timeout: Duration::from_secs(a.shutdown_timeout),
        metrics: a.metrics.clone(),
        limits: augur::sql::Limits {
            max_statement_bytes: (a.max_statement_bytes > 0).then_some(a.max_statement_bytes),
            max_result_rows: (a.max_result_rows > 0).then_some(a.max_result_rows),
            max_result_bytes: (a.max_result_bytes > 0).then_some(a.max_result_bytes),
            statement_timeout: augur::sql::parse_timeout(&a.statement_timeout)
                .map_err(|e| anyhow::anyhow!("--statement-timeout: {e}"))?,
        },
        ..ServerConfig::default()
    };
    if a.storage.no_sync {
        warn!(
            "--no-sync: commits are NOT fsynced; a crash or power loss may lose recently acknowledged \
             transactions"
        );
    }
    let opts = a.storage.options();
    info!("opening {}", a.storage.data_dir.display());
    let db = Database::open(&a.storage.data_dir, opts)
        .with_context(|| format!("cannot open {}", a.storage.data_dir.display()))?;
    let stats = db.stats();
    info!(
        "database open: {} tables, recovery {} ms{}",
        db.tables().len(),
        stats.recovery_ms,
        if stats.recovered_unclean {
            " (after an unclean shutdown)"
        } else {
            ""
        }
    );

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    rt.enable_all();
    if let Some(n) = a.threads {
        rt.worker_threads(n.max(1));
    }
    let rt = rt.build()?;
    // Short statements run on the network threads; a row-lock or WAL-fsync wait inside one hands
    // its thread's other connections to another thread (src/store/wait.rs).
    augur::store::wait::set_wait_hook(|wait| tokio::task::block_in_place(wait));
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    rt.spawn(release_free_memory());
    let result = rt.block_on(async {
        let server = Server::bind(db.clone(), cfg.clone()).await?;
        let addr = server.local_addr()?;
        let auth = if cfg.users.is_empty() {
            "trust (no password)"
        } else {
            "SCRAM-SHA-256"
        };
        let tls = if cfg.tls_cert.is_some() {
            ", TLS available"
        } else {
            ""
        };
        info!(
            "augur {} listening on {addr} ({auth}{tls})",
            env!("CARGO_PKG_VERSION")
        );
        println!(
            "augur {} listening on {addr}; connect with: psql -h {} -p {} -U {} augur",
            env!("CARGO_PKG_VERSION"),
            addr.ip(),
            addr.port(),
            a.user
        );
        if let Some(m) = server.metrics_addr() {
            info!("metrics on http://{m}/metrics");
        }
        server.run(shutdown_signal()).await
    });
    // Connections are gone (their transactions rolled back); the final checkpoint follows.
    rt.shutdown_timeout(Duration::from_secs(5));
    info!("closing the database (final checkpoint)");
    db.close().context("closing the database")?;
    info!("bye");
    result
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => {
                warn!("cannot listen for SIGTERM: {e}");
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => info!("interrupt received"),
            _ = term.recv() => info!("SIGTERM received"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Every 10 s, hands memory that glibc's malloc holds but no longer uses back to the OS.
///
/// glibc keeps what a thread frees in that thread's arena (up to 8 per core) and returns only
/// the top of each heap; with a thread per blocking statement (tokio's `block_in_place`) the
/// server's RSS stayed well above its live memory: in a 64-connection `load_test` with 64 MiB
/// caches, one `malloc_trim(0)` after 3 minutes took RSS from 241 to 193 MiB. `malloc_trim`
/// releases the free pages of every arena (docs/SERVER.md "Memory").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn release_free_memory() {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let t0 = std::time::Instant::now();
        // SAFETY: malloc_trim takes each arena's lock while it walks it, as malloc and free do;
        // it only returns free pages to the kernel and never touches memory in use.
        let _ = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
        tracing::debug!(target: "augur::malloc_trim", "malloc_trim took {:?}", t0.elapsed());
    }
}
