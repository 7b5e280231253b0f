//! Settings the client hears about: the startup packet's `TimeZone` (or `-c timezone=...` in
//! its `options`), and ParameterStatus when `TimeZone` changes (PostgreSQL reports it,
//! GUC_REPORT, before the next ReadyForQuery), and what a `DISCARD ALL` closes at the end of
//! the request.

use std::fmt::Debug;

use futures::sink::{Sink, SinkExt};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;

use super::conn::Conn;

/// The time zone a startup packet's parameters ask for: a `TimeZone` parameter (any letter
/// case) or, failing that, `-c timezone=...` in `options`.
pub(super) fn time_zone_parameter<'a>(
    params: impl Iterator<Item = (&'a String, &'a String)>,
) -> Option<String> {
    let mut from_options = None;
    for (k, v) in params {
        if k.eq_ignore_ascii_case("timezone") {
            return Some(v.clone());
        }
        if k == "options" {
            let mut words = v.split_whitespace();
            while let Some(w) = words.next() {
                let set = match w.strip_prefix("-c") {
                    Some("") => words.next(),
                    Some(rest) => Some(rest),
                    None => w.strip_prefix("--"),
                };
                if let Some((name, value)) = set.and_then(|s| s.split_once('=')) {
                    if name.eq_ignore_ascii_case("timezone") {
                        from_options = Some(value.to_string());
                    }
                }
            }
        }
    }
    from_options
}

/// [`time_zone_parameter`] of a connected client's startup parameters.
pub(super) fn startup_time_zone<C: ClientInfo + ?Sized>(client: &C) -> Option<String> {
    time_zone_parameter(client.metadata().iter())
}

/// What ends a client request (a simple query's, or the extended protocol's at Sync), under
/// one lock of the session: after a `DISCARD ALL` the connection's named statements and
/// portals are closed ([`Conn::close_all`]), and ParameterStatus `TimeZone` is sent if the
/// session's zone changed since the client last heard.
pub(super) async fn end_request<C>(client: &mut C, conn: &Conn) -> PgWireResult<()>
where
    C: ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send,
    C::PortalStore: PortalStore,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let (now, discarded) = {
        let mut s = conn.session.lock();
        let zone = s.setting("timezone").unwrap_or_default().to_string();
        (zone, s.take_discarded())
    };
    if discarded {
        conn.close_all(client.portal_store());
    }
    let changed = {
        let mut seen = conn.reported_zone.lock();
        (*seen != now).then(|| std::mem::replace(&mut *seen, now.clone()))
    };
    if changed.is_some() {
        client
            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                "TimeZone".to_string(),
                now,
            )))
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_zone_from_parameter_or_options() {
        let p = |kv: &[(&str, &str)]| {
            let v: Vec<(String, String)> = kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            time_zone_parameter(v.iter().map(|(k, v)| (k, v)))
        };
        assert_eq!(
            p(&[("TimeZone", "Europe/Berlin")]).as_deref(),
            Some("Europe/Berlin")
        );
        assert_eq!(
            p(&[("options", "-c TimeZone=Asia/Kolkata")]).as_deref(),
            Some("Asia/Kolkata")
        );
        assert_eq!(
            p(&[("options", "-ctimezone=UTC --foo=bar")]).as_deref(),
            Some("UTC")
        );
        assert_eq!(p(&[("user", "x")]), None);
    }
}
