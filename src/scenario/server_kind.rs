//! What kind of server a calling service is: whether a worker waits on its downstream calls,
//! and whether it keeps idempotency keys.
//!
//! A thread-per-request server (Tomcat, Puma, gunicorn's sync workers, the classic Java, Ruby
//! and Python application servers) holds a thread for the whole request, its downstream calls
//! included: a slow dependency fills its workers and its queue. An event-driven server (Envoy,
//! nginx, HAProxy, Node.js; Go's net/http, a goroutine per request with no limit of its own)
//! holds no thread while it waits on an upstream: what bounds its waiting requests is its
//! connection pools and circuit breakers (a tier's `retry.controls`), not its workers. A proxy
//! is an event-driven server that forwards: it keeps no idempotency store, since deduplication
//! happens at the service that owns the data, and forwards the key it received.

use super::fleet::KeyStore;
use std::ops::Range;

use super::{IdempotencyStore, Problem, Scenario, Service};
use serde::{Deserialize, Serialize};

/// `server` of a `[[service]]` that calls others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// A worker is held for the whole request, its downstream calls included.
    #[default]
    ThreadPerRequest,
    /// A worker does the service's own work (`service_time`) and lets go; the request waits
    /// on its calls holding no worker. It keeps its idempotency keys, as an application does.
    EventDriven,
    /// Event-driven, and keeps no idempotency keys: it forwards them to the services it calls.
    Proxy,
}

impl ServerKind {
    /// A worker is held while the request's downstream calls are out.
    pub fn holds_worker_on_calls(self) -> bool {
        self == ServerKind::ThreadPerRequest
    }

    /// The service keeps idempotency keys (a proxy forwards them).
    pub fn keeps_keys(self) -> bool {
        self != ServerKind::Proxy
    }
}

/// Checks a service's `server`: only a service that calls others (`calls_anything`, on some
/// operation's path) waits on calls, and a proxy
/// has no key store to configure.
pub(super) fn validate_server_kind(
    scenario: &Scenario,
    service: &Service,
    name: &str,
    calls_anything: bool,
) -> Result<(), Problem> {
    let Some(server) = &service.server else {
        return Ok(());
    };
    let kind = *server.get_ref();
    if !calls_anything {
        return Err((
            server.span(),
            format!(
                "service {name:?} calls no other service, so it never waits on a call and `server` changes nothing; add `calls` or remove `server`"
            ),
        ));
    }
    if kind == ServerKind::Proxy
        && let Some((operation, span)) = leaf_path(scenario, name)
    {
        return Err((
            span,
            format!(
                "service {name:?} is a proxy, which forwards every request, so operation {operation:?} cannot make it the service that holds its data (a path of no calls); name the services it forwards to for {operation:?}, or make the service `server = \"event-driven\"`"
            ),
        ));
    }
    if kind == ServerKind::Proxy
        && let Some(field) = key_store_setting(service)
    {
        return Err((
            server.span(),
            format!(
                "service {name:?} is a proxy, which keeps no idempotency keys (it forwards them to the services it calls), so its `{field}` has nothing to configure; remove it, or make the service `server = \"event-driven\"` to keep keys"
            ),
        ));
    }
    Ok(())
}

/// The first operation whose `path` gives service `name` no calls, with the span of that
/// entry.
fn leaf_path<'a>(scenario: &'a Scenario, name: &str) -> Option<(&'a str, Range<usize>)> {
    scenario.clients.operations.iter().find_map(|operation| {
        let (_, path) = operation
            .path
            .iter()
            .find(|(service, _)| service.get_ref() == name)?;
        path.get_ref()
            .calls
            .is_empty()
            .then(|| (operation.name.get_ref().as_str(), path.span()))
    })
}

/// The key-store setting a service writes away from its default, if any.
fn key_store_setting(service: &Service) -> Option<&'static str> {
    if service.idempotency_store != IdempotencyStore::default() {
        return Some("idempotency_store");
    }
    let fleet = service.fleet.as_ref()?;
    (fleet.get_ref().key_store != KeyStore::default()).then_some("fleet.key_store")
}
