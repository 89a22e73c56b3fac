//! Checks of a topology: services that call each other.
//!
//! A scenario has either one `[upstream]` or named `[[service]]` tables whose `calls` list the
//! services each calls. The clients call the entry point (`[clients] calls`). What is refused,
//! each at the place to fix: an `[upstream]` with topology keys, a service without a name or
//! with a name used twice, a call to an unknown service (with the nearest name), a cycle
//! (named in full), a service that nothing reaches, and a chain whose worst case puts more
//! than [`MAX_ATTEMPTS_PER_OPERATION`] attempts on one service for one user operation.
//!
//! After the checks, [`resolve_defaults`] writes out what a calling service takes by default
//! (its failure status, and, without a `retry` table, calls that are never retried and wait as
//! long as their caller), so the resolved scenario shows everything.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use super::{ControlSpec, Problem, Scenario, Service, defaults, span_of};
use crate::base::suggest::did_you_mean;
use crate::base::values::Bounded;

/// At most this many services.
pub const MAX_SERVICES: usize = 100;
/// At most this many calls per request served.
pub const MAX_CALLS: usize = 16;
/// The most attempts one user operation may put on one service in the worst case (every
/// attempt failing, every caller retrying to its limit): beyond it a run could not finish.
pub const MAX_ATTEMPTS_PER_OPERATION: f64 = 1e6;

/// Checks the topology of `scenario`; `fallback` is a span for errors about the file as a
/// whole.
pub(super) fn validate_topology(
    scenario: &Scenario,
    fallback: Range<usize>,
) -> Result<(), Problem> {
    match (&scenario.upstream, scenario.service.is_empty()) {
        (None, true) => {
            return Err((
                fallback,
                "a scenario needs an [upstream] table (one service) or [[service]] tables (services that call each other)".into(),
            ));
        }
        (Some(_), false) => {
            return Err((
                scenario.service[0].span(),
                "[upstream] and [[service]] cannot be mixed: describe the upstream as one more [[service]] with a name".into(),
            ));
        }
        (Some(upstream), true) => return validate_upstream_alone(scenario, upstream),
        (None, false) => {}
    }
    if scenario.service.len() > MAX_SERVICES {
        return Err((
            scenario.service[MAX_SERVICES].span(),
            format!("at most {MAX_SERVICES} [[service]] tables"),
        ));
    }
    let names = service_names(scenario)?;
    let entry = entry_point(scenario, &names)?;
    let calls = resolve_calls(scenario, &names)?;
    check_acyclic(scenario, &calls)?;
    check_reachable(scenario, &calls, entry)?;
    check_amplification(scenario, &calls, entry)?;
    for service in &scenario.service {
        let service = service.get_ref();
        super::server_kind::validate_server_kind(service, service.name())?;
        if service.calls.is_empty() {
            if let Some(retry) = &service.retry {
                return Err((
                    retry.span(),
                    format!(
                        "service {:?} calls no other service, so it has no `retry` policy toward one; add `calls` or remove `retry`",
                        service.name()
                    ),
                ));
            }
            if let Some(status) = &service.failure_status {
                return Err((
                    status.span(),
                    format!(
                        "service {:?} calls no other service, so no downstream call can fail; add `calls` or remove `failure_status`",
                        service.name()
                    ),
                ));
            }
        }
        if let Some(spanned) = &service.retry {
            let retry = spanned.get_ref();
            let cap = *retry.cap.get_ref();
            if cap < retry.base {
                return Err((
                    span_of(&retry.cap, spanned.span()),
                    format!(
                        "cap {cap} is below base {}; cap must be at least base",
                        retry.base
                    ),
                ));
            }
            if retry.attempt_timeout == super::AttemptTimeout::After(crate::base::time::Duration(0))
            {
                return Err((spanned.span(), "attempt_timeout must be above zero".into()));
            }
            super::controls::validate_controls(&retry.controls)?;
        }
    }
    Ok(())
}

/// An `[upstream]` is one service: topology keys belong to `[[service]]` tables.
fn validate_upstream_alone(scenario: &Scenario, upstream: &Service) -> Result<(), Problem> {
    let topology_key = |key: &str| {
        format!(
            "`{key}` belongs to a [[service]] table of a topology; [upstream] is a single service called by the clients"
        )
    };
    if let Some(name) = &upstream.name {
        return Err((name.span(), topology_key("name")));
    }
    if let Some(call) = upstream.calls.first() {
        return Err((call.span(), topology_key("calls")));
    }
    if let Some(retry) = &upstream.retry {
        return Err((retry.span(), topology_key("retry")));
    }
    if let Some(status) = &upstream.failure_status {
        return Err((status.span(), topology_key("failure_status")));
    }
    if let Some(server) = &upstream.server {
        return Err((server.span(), topology_key("server")));
    }
    if let Some(calls) = &scenario.clients.calls {
        return Err((
            calls.span(),
            "`[clients] calls` names the entry point of a topology of [[service]] tables; with [upstream] the clients call it".into(),
        ));
    }
    Ok(())
}

/// Every service's name, checked unique, with its index.
fn service_names(scenario: &Scenario) -> Result<BTreeMap<&str, usize>, Problem> {
    let mut names = BTreeMap::new();
    for (index, service) in scenario.service.iter().enumerate() {
        let Some(name) = &service.get_ref().name else {
            return Err((
                service.span(),
                "a [[service]] needs a `name`, unique in the scenario, such as name = \"api\""
                    .into(),
            ));
        };
        if names.insert(name.get_ref().as_str(), index).is_some() {
            return Err((
                name.span(),
                format!(
                    "service name {:?} is used twice; names must be unique",
                    name.get_ref().as_str()
                ),
            ));
        }
    }
    Ok(names)
}

/// The index of `name`, or an error at `span` that lists the names (in the file's order) and
/// the nearest one.
fn lookup(names: &BTreeMap<&str, usize>, name: &str, span: Range<usize>) -> Result<usize, Problem> {
    names.get(name).copied().ok_or_else(|| {
        let mut known: Vec<(&str, usize)> =
            names.iter().map(|(name, &index)| (*name, index)).collect();
        known.sort_by_key(|&(_, index)| index);
        let known: Vec<&str> = known.into_iter().map(|(name, _)| name).collect();
        let hint = did_you_mean(name, known.iter().copied())
            .map(|near| format!(" (did you mean {near:?}?)"))
            .unwrap_or_default();
        (
            span,
            format!(
                "there is no service named {name:?}{hint}; the services are {}",
                known.join(", ")
            ),
        )
    })
}

fn entry_point(scenario: &Scenario, names: &BTreeMap<&str, usize>) -> Result<usize, Problem> {
    match &scenario.clients.calls {
        Some(name) => lookup(names, name.get_ref(), name.span()),
        None if scenario.service.len() == 1 => Ok(0),
        None => Err((
            scenario.clients.count.span(),
            format!(
                "with several [[service]] tables, `calls` in [clients] names the one the clients call, such as calls = {:?}",
                scenario.service[0].get_ref().name()
            ),
        )),
    }
}

/// Each service's calls as indices.
fn resolve_calls(
    scenario: &Scenario,
    names: &BTreeMap<&str, usize>,
) -> Result<Vec<Vec<usize>>, Problem> {
    scenario
        .service
        .iter()
        .map(|service| {
            let service = service.get_ref();
            if service.calls.len() > MAX_CALLS {
                return Err((
                    service.calls[MAX_CALLS].span(),
                    format!("at most {MAX_CALLS} calls per service"),
                ));
            }
            service
                .calls
                .iter()
                .map(|call| lookup(names, call.get_ref(), call.span()))
                .collect()
        })
        .collect()
}

/// Depth-first search for a cycle; the error points at the call that closes it.
fn check_acyclic(scenario: &Scenario, calls: &[Vec<usize>]) -> Result<(), Problem> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut marks = vec![Mark::New; calls.len()];
    for root in 0..calls.len() {
        if marks[root] != Mark::New {
            continue;
        }
        // (service, next call to follow); the path is the stack.
        let mut stack = vec![(root, 0usize)];
        marks[root] = Mark::OnPath;
        while let Some(&mut (service, ref mut next)) = stack.last_mut() {
            let Some(&callee) = calls[service].get(*next) else {
                marks[service] = Mark::Done;
                stack.pop();
                continue;
            };
            let call_index = *next;
            *next += 1;
            match marks[callee] {
                Mark::Done => {}
                Mark::New => {
                    marks[callee] = Mark::OnPath;
                    stack.push((callee, 0));
                }
                Mark::OnPath => {
                    let start = stack
                        .iter()
                        .position(|&(on_path, _)| on_path == callee)
                        .expect("a service on the path is on the stack");
                    let cycle: Vec<&str> = stack[start..]
                        .iter()
                        .map(|&(on_path, _)| scenario.service[on_path].get_ref().name())
                        .chain([scenario.service[callee].get_ref().name()])
                        .collect();
                    return Err((
                        scenario.service[service].get_ref().calls[call_index].span(),
                        format!(
                            "calls make a cycle: {}; a request would call itself forever",
                            cycle.join(" -> ")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn check_reachable(scenario: &Scenario, calls: &[Vec<usize>], entry: usize) -> Result<(), Problem> {
    let mut reached = vec![false; calls.len()];
    let mut todo = vec![entry];
    reached[entry] = true;
    while let Some(service) = todo.pop() {
        for &callee in &calls[service] {
            if !reached[callee] {
                reached[callee] = true;
                todo.push(callee);
            }
        }
    }
    match reached.iter().position(|reached| !reached) {
        None => Ok(()),
        Some(index) => {
            let service = &scenario.service[index];
            let span = service
                .get_ref()
                .name
                .as_ref()
                .map_or_else(|| service.span(), Spanned::span);
            Err((
                span,
                format!(
                    "service {:?} is never called: no chain of calls leads to it from the entry point {:?}; call it from another service or remove it",
                    service.get_ref().name(),
                    scenario.service[entry].get_ref().name()
                ),
            ))
        }
    }
}

/// The worst case: every attempt fails, so a caller that sends up to `k` times multiplies the
/// load below it by `k`. The user clients send up to the largest `max_attempts + 1` of the
/// policies.
fn check_amplification(
    scenario: &Scenario,
    calls: &[Vec<usize>],
    entry: usize,
) -> Result<(), Problem> {
    let users = scenario
        .policy
        .iter()
        .map(|policy| policy.max_attempts.get() + 1)
        .max()
        .unwrap_or(1) as f64;
    let sends = |service: usize| -> f64 {
        scenario.service[service]
            .get_ref()
            .retry
            .as_ref()
            .map_or(0, |retry| retry.get_ref().max_attempts.get()) as f64
            + 1.0
    };
    // Calls form a DAG; worst[s] is the most attempts on s per user operation.
    let order = topological_order(calls, entry);
    let mut worst = vec![0.0f64; calls.len()];
    worst[entry] = users;
    for &service in &order {
        for &callee in &calls[service] {
            worst[callee] += worst[service] * sends(service);
        }
    }
    match (0..calls.len()).find(|&service| worst[service] > MAX_ATTEMPTS_PER_OPERATION) {
        None => Ok(()),
        Some(service) => {
            let spanned = &scenario.service[service];
            Err((
                spanned
                    .get_ref()
                    .name
                    .as_ref()
                    .map_or_else(|| spanned.span(), Spanned::span),
                format!(
                    "in the worst case one user operation sends {:e} attempts to service {:?} (each caller's sends multiplied along the calls); at most {MAX_ATTEMPTS_PER_OPERATION:e}: lower max_attempts at some tier",
                    worst[service],
                    spanned.get_ref().name()
                ),
            ))
        }
    }
}

/// The services reachable from `entry`, callers before callees.
fn topological_order(calls: &[Vec<usize>], entry: usize) -> Vec<usize> {
    fn visit(service: usize, calls: &[Vec<usize>], seen: &mut [bool], order: &mut Vec<usize>) {
        if seen[service] {
            return;
        }
        seen[service] = true;
        for &callee in &calls[service] {
            visit(callee, calls, seen, order);
        }
        order.push(service);
    }
    let mut seen = vec![false; calls.len()];
    let mut order = Vec::new();
    visit(entry, calls, &mut seen, &mut order);
    order.reverse();
    order
}

/// Writes out the defaults of a topology: the entry point, and each calling service's retry
/// policy and failure status.
pub(super) fn resolve_defaults(scenario: &mut Scenario) {
    for policy in &mut scenario.policy {
        resolve_controls(&mut policy.controls);
    }
    if scenario.service.is_empty() {
        return;
    }
    if scenario.clients.calls.is_none() {
        let only = scenario.service[0].get_ref().name().to_string();
        scenario.clients.calls = Some(Spanned::new(0..0, only));
    }
    for service in &mut scenario.service {
        let service = service.get_mut();
        if service.calls.is_empty() {
            continue;
        }
        service
            .retry
            .get_or_insert_with(|| Spanned::new(0..0, defaults::no_call_retry()));
        service
            .failure_status
            .get_or_insert_with(|| Spanned::new(0..0, Bounded(503)));
        if let Some(retry) = &mut service.retry {
            resolve_controls(&mut retry.get_mut().controls);
        }
    }
}

/// Writes out every control's defaults, keeping where each was written.
fn resolve_controls(controls: &mut [Spanned<ControlSpec>]) {
    for control in controls {
        let span = control.span();
        *control = Spanned::new(span, control.get_ref().resolved());
    }
}
