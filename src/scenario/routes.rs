//! Each operation's own path through a topology, and each call's own retry policy.
//!
//! Without them every request a service serves makes every call in its `calls`, one after
//! another, under its one `retry` policy. A real system is not like that: a payment goes
//! gateway -> payments -> ledger and card network, a balance check gateway -> payments ->
//! ledger only; and payments' ledger client and its card-network client have their own
//! timeouts, retries and pools. So an operation may name, for each service it changes, the
//! calls that service makes for it (`path`), a service may make its calls at once (`fan_out =
//! "parallel"`), and a service may give a call its own policy (`call_retry`).
//!
//! What is refused, each at the place to fix: a path that names no service (with the nearest
//! name), a service the operation never reaches (with those it reaches), a cycle on an
//! operation's path (named in full), and a `call_retry` for a service that is never called.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::{CallRetry, Problem, Scenario, Service, defaults};

/// How a service makes its calls for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FanOut {
    /// One after another, each once the previous one succeeded; the first that fails for good
    /// makes the service answer its `failure_status`.
    #[default]
    Sequential,
    /// All at once: the service answers when all have succeeded, or its `failure_status` as
    /// soon as one fails for good.
    Parallel,
}

/// What one service does for one operation (a value of an operation's `path`): `["ledger"]`,
/// or `{ calls = ["ledger", "card-network"], fan_out = "parallel" }`. A resolved scenario
/// writes the table.
#[derive(Debug, Clone, Serialize)]
pub struct ServicePath {
    /// The services called, in order; empty: the service holds the data for the operation.
    pub calls: Vec<Spanned<String>>,
    /// How it makes them (default: sequential, whatever the service's own `fan_out`).
    pub fan_out: FanOut,
}

/// The table form of [`ServicePath`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathTable {
    calls: Vec<Spanned<String>>,
    #[serde(default)]
    fan_out: FanOut,
}

impl<'de> Deserialize<'de> for ServicePath {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PathVisitor)
    }
}

/// Reads a service's path from its list of calls or from its table.
struct PathVisitor;

impl<'de> serde::de::Visitor<'de> for PathVisitor {
    type Value = ServicePath;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str(
            "the services it calls, such as [\"ledger\"], or a table such as { calls = [\"ledger\", \"card-network\"], fan_out = \"parallel\" }",
        )
    }

    fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<ServicePath, S::Error> {
        let mut calls = Vec::new();
        while let Some(call) = seq.next_element::<Spanned<String>>()? {
            calls.push(call);
        }
        Ok(ServicePath {
            calls,
            fan_out: FanOut::Sequential,
        })
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<ServicePath, M::Error> {
        let table = PathTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(ServicePath {
            calls: table.calls,
            fan_out: table.fan_out,
        })
    }
}

/// An operation's `path`: per service it names, what that service does for it.
pub type OperationPath = BTreeMap<Spanned<String>, Spanned<ServicePath>>;

/// A value of a service's `call_retry`: a policy table, or `"none"` (never retried, each call
/// waiting as long as its caller does, as a tier without `retry`). Read as the table it means.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct CallPolicy(pub CallRetry);

impl<'de> Deserialize<'de> for CallPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CallPolicyVisitor)
    }
}

/// Reads a call's policy from `"none"` or from its table.
struct CallPolicyVisitor;

impl<'de> serde::de::Visitor<'de> for CallPolicyVisitor {
    type Value = CallPolicy;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str(
            "a retry table such as { max_attempts = 0, attempt_timeout = \"3s\" }, or \"none\"",
        )
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<CallPolicy, E> {
        match text {
            "none" => Ok(CallPolicy(defaults::no_call_retry())),
            _ => Err(E::invalid_value(serde::de::Unexpected::Str(text), &self)),
        }
    }

    fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<CallPolicy, M::Error> {
        CallRetry::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(CallPolicy)
    }
}

/// A service's `call_retry`: per service it calls, that call's own policy.
pub type CallPolicies = BTreeMap<Spanned<String>, Spanned<CallPolicy>>;

/// The calls `service` (at `index` among the scenario's services) makes for operation
/// `operation`, and how: its path's, or its own `calls` and `fan_out`.
pub fn calls_for<'a>(
    scenario: &'a Scenario,
    operation: usize,
    service: &'a Service,
) -> (&'a [Spanned<String>], FanOut) {
    let path = scenario
        .clients
        .operations
        .get(operation)
        .and_then(|operation| operation.path.get(service.name()));
    match path {
        Some(path) => (&path.get_ref().calls[..], path.get_ref().fan_out),
        None => (&service.calls[..], service.fan_out),
    }
}

/// Every service `service` calls for some operation (its own `calls` first, then those the
/// paths add, each once, in the order they first appear).
pub fn calls_anywhere<'a>(scenario: &'a Scenario, service: &'a Service) -> Vec<&'a str> {
    let mut all: Vec<&str> = Vec::new();
    let paths = scenario
        .clients
        .operations
        .iter()
        .filter_map(|operation| operation.path.get(service.name()));
    for call in service
        .calls
        .iter()
        .chain(paths.flat_map(|path| path.get_ref().calls.iter()))
    {
        if !all.contains(&call.get_ref().as_str()) {
            all.push(call.get_ref());
        }
    }
    all
}

/// Whether some operation names a path, or some service fans out or sets a call's policy.
pub fn routes_anywhere(scenario: &Scenario) -> bool {
    scenario
        .clients
        .operations
        .iter()
        .any(|operation| !operation.path.is_empty())
        || scenario.service.iter().any(|service| {
            let service = service.get_ref();
            service.fan_out != FanOut::Sequential || !service.call_retry.is_empty()
        })
}

/// `path` and `fan_out` belong to a topology: an `[upstream]` scenario refuses them.
pub(super) fn check_upstream_alone(scenario: &Scenario, upstream: &Service) -> Result<(), Problem> {
    if let Some((name, _)) = scenario
        .clients
        .operations
        .iter()
        .find_map(|operation| operation.path.iter().next())
    {
        return Err((
            name.span(),
            "`path` names the calls a [[service]] of a topology makes for an operation; with [upstream] the clients call one service, which calls nothing".into(),
        ));
    }
    if let Some((name, _)) = upstream.call_retry.iter().next() {
        return Err((
            name.span(),
            "`call_retry` belongs to a [[service]] table of a topology; [upstream] is a single service called by the clients".into(),
        ));
    }
    Ok(())
}

/// Each `call_retry` key names a service its service calls for some operation, and no path
/// makes an optimistic row call anything.
pub(super) fn check_call_policies(scenario: &Scenario) -> Result<(), Problem> {
    for service in &scenario.service {
        let service = service.get_ref();
        let called = calls_anywhere(scenario, service);
        if let Some(row) = &service.optimistic_row
            && !called.is_empty()
        {
            return Err((
                row.span(),
                format!(
                    "an optimistic row holds data: it cannot call other services, and an operation's path makes {:?} call {}",
                    service.name(),
                    called.join(", ")
                ),
            ));
        }
        for (name, policy) in &service.call_retry {
            if let Some(import) = &policy.get_ref().0.import {
                return Err((
                    import.span(),
                    "`import` is read in a tier's `retry`, not in a call's own policy: write the call's settings in its `call_retry` table".into(),
                ));
            }
            if !called.contains(&name.get_ref().as_str()) {
                let hint =
                    crate::base::suggest::did_you_mean(name.get_ref(), called.iter().copied())
                        .map(|near| format!(" (did you mean {near:?}?)"))
                        .unwrap_or_default();
                let calls = if called.is_empty() {
                    "calls no service".to_string()
                } else {
                    format!(
                        "calls {}",
                        called
                            .iter()
                            .map(|name| format!("{name:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                return Err((
                    name.span(),
                    format!(
                        "`call_retry` sets a policy for calls to {:?}{hint}, but service {:?} never calls it (it {calls} on every operation's path); a key of `call_retry` is a service it calls",
                        name.get_ref(),
                        service.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}
