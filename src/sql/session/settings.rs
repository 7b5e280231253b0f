//! Session settings (SET / RESET / SHOW, `current_setting`): PostgreSQL's defaults, the ones
//! that take effect (timeouts, isolation, synchronous_commit), and per-session resource limits.

use std::collections::BTreeMap;
use std::time::Duration;

use sqlparser::ast as A;

use super::Session;
use crate::engine::Isolation;
use crate::error::{Error, Result, SqlState};
use crate::seam::prelude::*;
use crate::sql::bind::{ident, object_name};
use crate::sql::result::StatementResult;
use crate::types::{DataType, Value};

pub(super) fn default_settings() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for (k, v) in [
        ("application_name", ""),
        ("client_encoding", "UTF8"),
        ("datestyle", "ISO, MDY"),
        ("default_transaction_isolation", "read committed"),
        ("extra_float_digits", "1"),
        ("integer_datetimes", "on"),
        ("intervalstyle", "postgres"),
        ("is_superuser", "on"),
        ("lock_timeout", "0"),
        ("lc_collate", "C"),
        ("lc_ctype", "C"),
        ("max_identifier_length", "63"),
        ("max_index_keys", "32"),
        ("search_path", "\"$user\", public"),
        ("server_encoding", "UTF8"),
        ("server_version", "15.0"),
        ("server_version_num", "150000"),
        ("session_authorization", "augur"),
        ("standard_conforming_strings", "on"),
        ("statement_timeout", "0"),
        ("synchronous_commit", "on"),
        ("timezone", "UTC"),
        ("transaction_isolation", "read committed"),
        ("transaction_read_only", "off"),
    ] {
        m.insert(k.to_string(), v.to_string());
    }
    m
}

/// PostgreSQL's isolation level names. READ UNCOMMITTED behaves as READ COMMITTED (as in
/// PostgreSQL); SERIALIZABLE runs as snapshot isolation (PostgreSQL's REPEATABLE READ), which
/// allows write skew: docs/SQL.md says so.
fn isolation_named(v: &str) -> Result<Isolation> {
    match v.trim().trim_matches('\'').to_ascii_lowercase().as_str() {
        "read committed" | "read uncommitted" => Ok(Isolation::ReadCommitted),
        "repeatable read" | "serializable" => Ok(Isolation::Snapshot),
        other => Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"transaction_isolation\": \"{other}\""),
        )),
    }
}

pub(super) fn isolation_name(i: Isolation) -> &'static str {
    match i {
        Isolation::ReadCommitted => "read committed",
        Isolation::Snapshot => "repeatable read",
    }
}

pub(super) fn isolation_of_modes(modes: &[A::TransactionMode]) -> Option<Isolation> {
    modes.iter().rev().find_map(|m| match m {
        A::TransactionMode::IsolationLevel(l) => Some(match l {
            A::TransactionIsolationLevel::ReadUncommitted | A::TransactionIsolationLevel::ReadCommitted => {
                Isolation::ReadCommitted
            }
            _ => Isolation::Snapshot,
        }),
        _ => None,
    })
}

/// Per-session resource limits (the server sets them from its flags; embedded sessions start
/// without any). Exceeding one fails the statement (54000, or 57014 for the timeout); the session
/// stays usable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Largest SQL text `execute`/`prepare` accept (54000 program_limit_exceeded).
    pub max_statement_bytes: Option<usize>,
    /// Most rows one statement may return (54000).
    pub max_result_rows: Option<u64>,
    /// Most bytes of values one statement may return, counted as their text/binary payload
    /// plus 8 per value (54000).
    pub max_result_bytes: Option<u64>,
    /// The default of `statement_timeout` (what `SET statement_timeout = DEFAULT` and
    /// `RESET statement_timeout` restore); None: no timeout.
    pub statement_timeout: Option<Duration>,
}

/// Parses a `statement_timeout` value as PostgreSQL does: an integer or decimal number of
/// milliseconds, or a number with a unit (`us`, `ms`, `s`, `min`, `h`, `d`); 0 disables it.
/// Anything else, or a value outside 0..=2147483647 ms, is 22023.
pub fn parse_timeout(v: &str) -> Result<Option<Duration>> {
    parse_time_setting("statement_timeout", v)
}

/// [`parse_timeout`] for the time setting `name` (`statement_timeout`, `lock_timeout`).
fn parse_time_setting(name: &str, v: &str) -> Result<Option<Duration>> {
    let v = v.trim().trim_matches('\'');
    let bad = || {
        Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{v}\""),
        )
    };
    let t = v.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let ms_per = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => {
            return Err(Error::new(
                SqlState::INVALID_PARAMETER_VALUE,
                format!(
                    "invalid value for parameter \"{name}\": \"{v}\"\nHINT: Valid units for \
                     this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"."
                ),
            ))
        }
    };
    let ms = (n * ms_per).round();
    if !ms.is_finite() || !(0.0..=2147483647.0).contains(&ms) {
        return Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("{ms} ms is outside the valid range for parameter \"{name}\" (0 .. 2147483647)"),
        ));
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// How `SHOW statement_timeout` prints a timeout: PostgreSQL's largest exact unit.
pub(super) fn show_timeout(t: Option<Duration>) -> String {
    let Some(t) = t else { return "0".into() };
    let ms = t.as_millis();
    for (unit, per) in [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)] {
        if ms % per == 0 {
            return format!("{}{unit}", ms / per);
        }
    }
    format!("{ms}ms")
}

impl Session {
    /// A setting's current value (`SHOW name`).
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings.get(&name.to_lowercase()).map(String::as_str)
    }

    /// Settings PostgreSQL reports to clients in ParameterStatus messages.
    pub fn reported_settings(&self) -> Vec<(String, String)> {
        [
            "application_name",
            "client_encoding",
            "datestyle",
            "integer_datetimes",
            "intervalstyle",
            "is_superuser",
            "server_encoding",
            "server_version",
            "session_authorization",
            "standard_conforming_strings",
            "timezone",
        ]
        .iter()
        .map(|k| {
            let name = match *k {
                "datestyle" => "DateStyle",
                "timezone" => "TimeZone",
                "intervalstyle" => "IntervalStyle",
                k => k,
            };
            (
                name.to_string(),
                self.settings.get(*k).cloned().unwrap_or_default(),
            )
        })
        .collect()
    }

    /// Sets one setting. `statement_timeout`, `lock_timeout` and the isolation settings are
    /// validated (22023) and take effect: on the open transaction, and for later ones.
    pub(super) fn set_one(&mut self, name: String, v: String) -> Result<()> {
        let before = self.settings_undo.len();
        self.log_setting(&name);
        let r = self.apply_setting(name, v);
        if r.is_err() {
            self.settings_undo.truncate(before);
        }
        r
    }

    /// [`Session::set_one`] without recording the old value for a rollback.
    pub(super) fn apply_setting(&mut self, name: String, mut v: String) -> Result<()> {
        match name.as_str() {
            "statement_timeout" => {
                self.timeout = if v.eq_ignore_ascii_case("default") || v.is_empty() {
                    self.limits.statement_timeout
                } else {
                    parse_timeout(&v)?
                };
                v = show_timeout(self.timeout);
            }
            "lock_timeout" => {
                self.lock_timeout = parse_time_setting("lock_timeout", &v)?;
                if let Some(tx) = &mut self.tx {
                    tx.set_lock_timeout(self.lock_timeout);
                }
            }
            "default_transaction_isolation" => {
                v = v.to_lowercase();
                self.default_isolation = isolation_named(&v)?;
            }
            "timezone" => {
                let (zone, shown) = super::time_zone::parse_time_zone(&v)?;
                self.zone = zone;
                crate::types::session_zone::set_current(zone);
                v = shown;
            }
            "transaction_isolation" => {
                v = v.to_lowercase();
                let iso = isolation_named(&v)?;
                if let Some(tx) = &mut self.tx {
                    tx.set_isolation(iso);
                }
            }
            _ => {}
        }
        self.settings.insert(name, v);
        Ok(())
    }

    /// Sets `name` to `v` and makes `v` the value `RESET` returns it to (PostgreSQL's
    /// `reset_val`): what a connection's startup packet does to a setting.
    pub fn set_reset_value(&mut self, name: &str, v: &str) -> Result<()> {
        self.set_one(name.to_string(), v.to_string())?;
        self.reset_values.insert(name.to_string(), v.to_string());
        Ok(())
    }

    /// `RESET name` / `RESET ALL`.
    pub(super) fn reset(&mut self, r: &A::Reset) -> Result<StatementResult> {
        let names: Vec<String> = match r {
            A::Reset::ALL => default_settings().into_keys().collect(),
            A::Reset::SessionAuthorization => vec![],
            A::Reset::ConfigurationParameter(n) => vec![object_name(n)?],
        };
        for n in names {
            let v = if let Some(v) = self.reset_values.get(&n) {
                v.clone()
            } else if n == "statement_timeout" {
                "default".to_string()
            } else {
                match default_settings().get(&n) {
                    Some(v) => v.clone(),
                    None => {
                        return Err(Error::new(
                            SqlState::UNDEFINED_OBJECT,
                            format!("unrecognized configuration parameter \"{n}\""),
                        ))
                    }
                }
            };
            self.set_one(n, v)?;
        }
        self.apply_synchronous_commit();
        Ok(StatementResult::Command { tag: "RESET".into() })
    }

    pub(super) fn set(&mut self, s: &A::Set) -> Result<StatementResult> {
        let render = |e: &A::Expr| -> String {
            match e {
                A::Expr::Value(v) => match &v.value {
                    A::Value::SingleQuotedString(s) => s.clone(),
                    A::Value::Number(n, _) => n.clone(),
                    A::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
                    v => v.to_string(),
                },
                A::Expr::Identifier(i) => i.value.clone(),
                e => e.to_string(),
            }
        };
        // SET LOCAL lasts until the block ends (`settings_undo.rs`); outside a block, where
        // each statement is its own transaction, it changes nothing (PostgreSQL warns).
        let local = matches!(
            s,
            A::Set::SingleAssignment {
                scope: Some(A::ContextModifier::Local),
                ..
            } | A::Set::SetTimeZone { local: true, .. }
        );
        if local {
            if self.tx.is_none() {
                return Ok(StatementResult::Command { tag: "SET".into() });
            }
            let before = self.settings_undo.len();
            let r = self.set_session(s, render);
            for u in &mut self.settings_undo[before..] {
                u.3 = true;
            }
            return r;
        }
        self.set_session(s, render)
    }

    fn set_session(&mut self, s: &A::Set, render: impl Fn(&A::Expr) -> String) -> Result<StatementResult> {
        match s {
            A::Set::SingleAssignment { variable, values, .. } => {
                let name = object_name(variable).unwrap_or_else(|_| variable.to_string().to_lowercase());
                let v: Vec<String> = values.iter().map(render).collect();
                let mut v = v.join(", ");
                if v.eq_ignore_ascii_case("default") && name != "statement_timeout" {
                    v = default_settings().get(&name).cloned().unwrap_or_default();
                }
                let name = if name == "time_zone" {
                    "timezone".to_string()
                } else {
                    name
                };
                self.set_one(name, v)?;
            }
            A::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    let name = object_name(&a.name).unwrap_or_default();
                    self.set_one(name, render(&a.value))?;
                }
            }
            A::Set::SetTimeZone { value, .. } => {
                let v = match value {
                    A::Expr::Identifier(i)
                        if i.quote_style.is_none()
                            && (i.value.eq_ignore_ascii_case("local")
                                || i.value.eq_ignore_ascii_case("default")) =>
                    {
                        default_settings().get("timezone").cloned().unwrap_or_default()
                    }
                    v => render(v),
                };
                self.set_one("timezone".into(), v)?;
            }
            A::Set::SetNames { charset_name, .. } => {
                self.settings
                    .insert("client_encoding".into(), charset_name.value.clone());
            }
            A::Set::SetTransaction { modes, session, .. } => {
                if let Some(iso) = isolation_of_modes(modes) {
                    if *session {
                        self.set_one("default_transaction_isolation".into(), isolation_name(iso).into())?;
                    } else if let Some(tx) = &mut self.tx {
                        tx.set_isolation(iso);
                    }
                }
            }
            A::Set::SetNamesDefault {} => {}
            A::Set::SetSessionParam(_) | A::Set::SetRole { .. } | A::Set::SetSessionAuthorization(_) => {}
            A::Set::ParenthesizedAssignments { .. } => {
                return Err(Error::unsupported("SET (a, b) = ... is not supported"))
            }
        }
        self.apply_synchronous_commit();
        Ok(StatementResult::Command { tag: "SET".into() })
    }

    /// `synchronous_commit = off` makes this session's commits return before the fsync.
    pub(super) fn apply_synchronous_commit(&mut self) {
        self.async_commit = self
            .settings
            .get("synchronous_commit")
            .is_some_and(|v| v == "off" || v == "false");
        if let Some(tx) = &mut self.tx {
            tx.set_sync(!self.async_commit);
        }
    }

    /// `SHOW name` / `SHOW ALL`.
    pub(super) fn show(&self, variable: &[A::Ident]) -> Result<StatementResult> {
        let name: Vec<String> = variable.iter().map(ident).collect();
        let name = name.join(" ");
        let key = match name.as_str() {
            "transaction isolation level" => "transaction_isolation".to_string(),
            "time zone" => "timezone".to_string(),
            n => n.replace(' ', "_"),
        };
        if key == "all" {
            let rows = self
                .settings
                .iter()
                .map(|(k, v)| vec![Value::Text(k.clone()), Value::Text(v.clone())])
                .collect();
            return Ok(StatementResult::Query {
                tag: "SHOW".into(),
                columns: vec![
                    ("name".into(), DataType::Text(None)),
                    ("setting".into(), DataType::Text(None)),
                ],
                rows,
            });
        }
        let current_isolation = self
            .tx
            .as_ref()
            .map(|t| isolation_name(t.isolation()).to_string());
        let v = match (key.as_str(), current_isolation) {
            ("transaction_isolation", Some(v)) => Some(v),
            ("transaction_isolation", None) => self.settings.get("default_transaction_isolation").cloned(),
            _ => self.settings.get(&key).cloned(),
        };
        let v = v.ok_or_else(|| {
            Error::new(
                SqlState::UNDEFINED_OBJECT,
                format!("unrecognized configuration parameter \"{name}\""),
            )
        })?;
        Ok(StatementResult::Query {
            tag: "SHOW".into(),
            columns: vec![(key, DataType::Text(None))],
            rows: vec![vec![Value::Text(v)]],
        })
    }
}
