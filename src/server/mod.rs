//! The PostgreSQL wire-protocol server (`augur serve`), on pgwire and tokio.
//!
//! - [`handler`]: the pgwire handler set, dispatching to `simple.rs` (simple query protocol),
//!   `extended.rs` (Bind/Describe/Execute/Sync; Parse in `statement.rs`), `copy.rs` (COPY FROM
//!   STDIN) and `startup.rs` (startup packet, authentication, BackendKeyData); `reply.rs` holds
//!   outcomes, errors and notices as the client sees them.
//! - [`conn`]: one connection's state, one [`crate::Session`] per connection, and what all
//!   connections share.
//! - [`values`]: text and binary encodings of values and parameters.
//! - [`cancel`]: process ids, secret keys and cancel requests (BackendKeyData, CancelRequest).
//! - [`metrics`]: the `--metrics` endpoint (Prometheus text format).
//! - [`shell`]: the embedded `augur sql` shell's output formatting.
//!
//! See `docs/SERVER.md`.

mod buffered;
pub mod cancel;
pub mod conn;
mod copy;
mod extended;
pub mod handler;
pub mod metrics;
mod reply;
mod report;
pub mod shell;
mod simple;
mod startup;
mod statement;
pub mod values;

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::panic::AssertUnwindSafe;

use anyhow::{bail, Context};
use async_trait::async_trait;
use futures::FutureExt;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::tokio::process_socket;
use pgwire::tokio::tokio_rustls::rustls;
use pgwire::tokio::TlsAcceptor;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use crate::seam::AnyEngine;
pub use conn::{server_version, Shared};
pub use handler::Handlers;

/// How `augur serve` runs.
#[derive(Clone)]
pub struct ServerConfig {
    pub listen: String,
    /// user name -> password. Empty: no authentication (trust), allowed only on loopback
    /// unless `insecure_no_auth`.
    pub users: HashMap<String, String>,
    pub insecure_no_auth: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub max_connections: usize,
    /// How long the shutdown waits for running statements before closing connections.
    pub shutdown_timeout: Duration,
    /// Largest COPY FROM STDIN payload buffered per statement.
    pub max_copy_bytes: usize,
    /// Serve Prometheus metrics on this address (`GET /metrics`); None: no metrics recorded.
    pub metrics: Option<String>,
    /// Per-connection limits: statement size, result size, default statement_timeout.
    pub limits: crate::sql::Limits,
}

/// `--max-statement-bytes` default: 16 MiB.
pub const DEFAULT_MAX_STATEMENT_BYTES: usize = 16 << 20;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:5433".into(),
            users: HashMap::new(),
            insecure_no_auth: false,
            tls_cert: None,
            tls_key: None,
            max_connections: 100,
            shutdown_timeout: Duration::from_secs(10),
            max_copy_bytes: 1 << 30,
            metrics: None,
            limits: crate::sql::Limits {
                max_statement_bytes: Some(DEFAULT_MAX_STATEMENT_BYTES),
                ..Default::default()
            },
        }
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("insecure_no_auth", &self.insecure_no_auth)
            .field("tls_cert", &self.tls_cert)
            .field("max_connections", &self.max_connections)
            .field("metrics", &self.metrics)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Parses a users file: one `name:password` per line; blank lines and `#` comments ignored.
pub fn parse_users_file(text: &str) -> anyhow::Result<HashMap<String, String>> {
    let mut m = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((u, p)) = line.split_once(':') else {
            bail!("users file line {}: expected name:password", i + 1);
        };
        if u.is_empty() || p.is_empty() {
            bail!("users file line {}: empty name or password", i + 1);
        }
        m.insert(u.to_string(), p.to_string());
    }
    Ok(m)
}

const SCRAM_ITERATIONS: usize = 4096;

/// Salted passwords, computed once at start.
#[derive(Debug)]
struct Users {
    map: HashMap<String, (Vec<u8>, Vec<u8>)>,
}

#[async_trait]
impl AuthSource for Users {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        match self.map.get(user) {
            Some((salt, salted)) => Ok(Password::new(Some(salt.clone()), salted.clone())),
            None => Err(PgWireError::InvalidPassword(user.to_owned())),
        }
    }
}

fn load_tls(cert: &PathBuf, key: &PathBuf) -> anyhow::Result<TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading TLS certificate {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert.display()))?;
    if certs.is_empty() {
        bail!("no certificate in {}", cert.display());
    }
    let key =
        PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading TLS key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("TLS certificate and key do not match")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A bound, configured server; [`Server::run`] serves until the shutdown future resolves.
pub struct Server {
    listener: TcpListener,
    handlers: Handlers,
    shared: Arc<Shared>,
    tls: Option<TlsAcceptor>,
    cfg: ServerConfig,
    metrics_listener: Option<TcpListener>,
}

impl Server {
    /// Binds the listen address and prepares authentication and TLS.
    pub async fn bind(db: impl Into<AnyEngine>, cfg: ServerConfig) -> anyhow::Result<Server> {
        let db: AnyEngine = db.into();
        let addr: SocketAddr = tokio::net::lookup_host(&cfg.listen)
            .await
            .with_context(|| format!("resolving {}", cfg.listen))?
            .next()
            .with_context(|| format!("no address for {}", cfg.listen))?;
        if cfg.users.is_empty() && !addr.ip().is_loopback() && !cfg.insecure_no_auth {
            bail!(
                "refusing to listen on {addr} without authentication: set --password or --users-file \
                 (or --insecure-no-auth to accept anyone who can reach this address)"
            );
        }
        let tls = match (&cfg.tls_cert, &cfg.tls_key) {
            (Some(c), Some(k)) => Some(load_tls(c, k)?),
            (None, None) => None,
            _ => bail!("--tls-cert and --tls-key go together"),
        };
        let scram = if cfg.users.is_empty() {
            None
        } else {
            let map = cfg
                .users
                .iter()
                .map(|(u, p)| {
                    let salt: [u8; 16] = rand::random();
                    let salted = gen_salted_password(p, &salt, SCRAM_ITERATIONS);
                    (u.clone(), (salt.to_vec(), salted))
                })
                .collect();
            let mut s = ScramAuth::new(Arc::new(Users { map }));
            s.set_iterations(SCRAM_ITERATIONS);
            // No channel binding (SCRAM-SHA-256-PLUS): pgwire would offer it on plain TCP
            // connections too, which libpq rightly refuses.
            Some(s)
        };
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let (metrics_listener, m) = match &cfg.metrics {
            Some(a) => (
                Some(metrics::bind(a, cfg.insecure_no_auth).await?),
                Some(Arc::new(metrics::Metrics::new(db.clone()))),
            ),
            None => (None, None),
        };
        let shared = Arc::new(Shared::new(db, cfg.max_copy_bytes, m, cfg.limits.clone()));
        let handlers = Handlers::new(shared.clone(), scram);
        Ok(Server {
            listener,
            handlers,
            shared,
            tls,
            cfg,
            metrics_listener,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The metrics endpoint's address, when `--metrics` is on.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Serves connections until `shutdown` resolves, then: stops accepting, refuses new
    /// statements, waits (at most `shutdown_timeout`) for running statements, and drops every
    /// connection (rolling back open transactions). The caller closes the database.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
        let Server {
            listener,
            handlers,
            shared,
            tls,
            cfg,
            metrics_listener,
        } = self;
        let metrics_task = match (metrics_listener, &shared.metrics) {
            (Some(l), Some(m)) => Some(tokio::spawn(metrics::serve(l, m.clone()))),
            _ => None,
        };
        let m = shared.metrics.clone();
        let permits = Arc::new(Semaphore::new(cfg.max_connections));
        let rejecters = Arc::new(Semaphore::new(64));
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                accepted = listener.accept() => {
                    let (sock, peer) = match accepted {
                        Ok(x) => x,
                        Err(e) => {
                            // EMFILE and friends: back off instead of spinning.
                            warn!("accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    match permits.clone().try_acquire_owned() {
                        Ok(permit) => {
                            debug!("connection from {peer}");
                            let h = handlers.clone();
                            let tls = tls.clone();
                            let m = m.clone();
                            if let Some(m) = &m {
                                m.connections_total.inc();
                                m.connections_current.inc();
                            }
                            conns.spawn(async move {
                                // pgwire 0.42.1's decoder panics on some malformed messages
                                // (truncated Bind bodies, ...): contain that to the connection,
                                // which is closed (its session and transaction dropped).
                                let served = AssertUnwindSafe(process_socket(sock, tls, h)).catch_unwind().await;
                                match served {
                                    Ok(Ok(())) => {}
                                    Ok(Err(e)) => debug!("connection {peer} ended: {e}"),
                                    Err(_) => warn!("connection {peer} closed: malformed message (decoder panic contained)"),
                                }
                                drop(permit);
                                if let Some(m) = &m {
                                    m.connections_current.dec();
                                }
                                debug!("connection {peer} closed");
                            });
                        }
                        Err(_) => {
                            if let Some(m) = &m {
                                m.connections_refused.inc();
                            }
                            warn!("rejecting {peer}: {} connections already", cfg.max_connections);
                            if let Ok(p) = rejecters.clone().try_acquire_owned() {
                                let cancels = shared.cancels.clone();
                                tokio::spawn(async move {
                                    let _ = reject_too_many(sock, &cancels).await;
                                    drop(p);
                                });
                            }
                        }
                    }
                }
            }
        }
        drop(listener);
        info!("shutting down: no new connections; waiting for running statements");
        shared.shutting_down.store(true, Ordering::Release);
        let deadline = Instant::now() + cfg.shutdown_timeout;
        while shared.busy.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let running = shared.busy.load(Ordering::Acquire);
        if running > 0 {
            warn!(
                "{running} statements still running after {:?}; closing anyway",
                cfg.shutdown_timeout
            );
        }
        conns.abort_all();
        while conns.join_next().await.is_some() {}
        if let Some(t) = metrics_task {
            t.abort();
        }
        info!("all connections closed");
        Ok(())
    }
}

/// The code of a CancelRequest packet (in place of a protocol version).
const CANCEL_REQUEST_CODE: u32 = 80877102;

/// Answers a connection past `--max-connections` like PostgreSQL: reads its startup packet
/// (refusing SSL/GSS), sends FATAL 53300, closes. A CancelRequest is still served (as in
/// PostgreSQL, where the limit does not apply to cancels): no reply, closed.
async fn reject_too_many(mut sock: TcpStream, cancels: &cancel::Registry) -> std::io::Result<()> {
    let fut = async {
        for _ in 0..3 {
            let len = sock.read_u32().await? as usize;
            if !(8..=10_000).contains(&len) {
                break;
            }
            let mut body = vec![0u8; len - 4];
            sock.read_exact(&mut body).await?;
            let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
            if code == 80877103 || code == 80877104 {
                // SSLRequest / GSSENCRequest: refuse, the startup packet follows.
                sock.write_all(b"N").await?;
                continue;
            }
            if code == CANCEL_REQUEST_CODE && body.len() >= 12 {
                let pid = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                let outcome = cancels.cancel(pid, &body[8..]);
                debug!(pid, ?outcome, "cancel request past --max-connections");
                return sock.shutdown().await;
            }
            break;
        }
        let mut msg = Vec::new();
        for (k, v) in [
            (b'S', "FATAL"),
            (b'V', "FATAL"),
            (b'C', "53300"),
            (b'M', "sorry, too many clients already"),
        ] {
            msg.push(k);
            msg.extend_from_slice(v.as_bytes());
            msg.push(0);
        }
        msg.push(0);
        let mut out = vec![b'E'];
        out.extend_from_slice(&((msg.len() + 4) as u32).to_be_bytes());
        out.extend_from_slice(&msg);
        sock.write_all(&out).await?;
        sock.shutdown().await
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .unwrap_or(Ok(()))
}
