//! Checks of a topology: services that call each other.
//!
//! A scenario has either one `[upstream]` or named `[[service]]` tables whose `calls` list the
//! services each calls. The clients call the entry point (`[clients] calls`). What is refused,
//! each at the place to fix: an `[upstream]` with topology keys, a service without a name or
//! with a name used twice, a call to an unknown service (with the nearest name), a cycle
//! (named in full), a service that nothing reaches, and a chain whose worst case puts more
//! than [`MAX_ATTEMPTS_PER_OPERATION`] attempts on one service for one user operation. With
//! operations' own paths ([`super::routes`]), the cycles, the reach and the worst case are
//! checked on each operation's path, and a service must be reached by some operation.
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
    check_acyclic(scenario, &calls, None)?;
    let operations = &scenario.clients.operations;
    let mut reached_anywhere = vec![false; calls.len()];
    for (index, operation) in operations.iter().enumerate() {
        let graph = operation_graph(scenario, &names, &calls, index)?;
        check_acyclic(scenario, &graph, Some(operation.name.get_ref()))?;
        let reached = reached_from(&graph, entry);
        check_path_reached(scenario, index, &reached)?;
        for (anywhere, reached) in reached_anywhere.iter_mut().zip(&reached) {
            *anywhere |= reached;
        }
        check_amplification(scenario, &graph, entry)?;
    }
    check_reachable(scenario, &reached_anywhere, entry)?;
    super::routes::check_call_policies(scenario)?;
    for service in &scenario.service {
        let service = service.get_ref();
        let calls_anything = !super::routes::calls_anywhere(scenario, service).is_empty();
        super::server_kind::validate_server_kind(
            scenario,
            service,
            service.name(),
            calls_anything,
        )?;
        if !calls_anything {
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
        let policies = service
            .retry
            .iter()
            .map(|retry| (retry.get_ref(), retry.span()))
            .chain(
                service
                    .call_retry
                    .values()
                    .map(|policy| (&policy.get_ref().0, policy.span())),
            );
        for (retry, span) in policies {
            check_call_retry(retry, span)?;
        }
    }
    Ok(())
}

/// The checks of one tier's (or one call's) retry table, written at `span`.
fn check_call_retry(retry: &super::CallRetry, span: Range<usize>) -> Result<(), Problem> {
    let cap = *retry.cap.get_ref();
    if cap < retry.base {
        return Err((
            span_of(&retry.cap, span),
            format!(
                "cap {cap} is below base {}; cap must be at least base",
                retry.base
            ),
        ));
    }
    if retry.attempt_timeout == super::AttemptTimeout::After(crate::base::time::Duration(0)) {
        return Err((span, "attempt_timeout must be above zero".into()));
    }
    super::controls::validate_controls(&retry.controls)
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
    super::routes::check_upstream_alone(scenario, upstream)
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

/// Who calls whom: per service, each service it calls (its index) with the span of the call.
type Graph = Vec<Vec<(usize, Range<usize>)>>;

/// Each service's own `calls` as indices.
fn resolve_calls(scenario: &Scenario, names: &BTreeMap<&str, usize>) -> Result<Graph, Problem> {
    scenario
        .service
        .iter()
        .map(|service| resolve_list(names, &service.get_ref().calls))
        .collect()
}

/// A list of calls as indices, at most [`MAX_CALLS`].
fn resolve_list(
    names: &BTreeMap<&str, usize>,
    calls: &[Spanned<String>],
) -> Result<Vec<(usize, Range<usize>)>, Problem> {
    if calls.len() > MAX_CALLS {
        return Err((
            calls[MAX_CALLS].span(),
            format!("at most {MAX_CALLS} calls per service"),
        ));
    }
    calls
        .iter()
        .map(|call| Ok((lookup(names, call.get_ref(), call.span())?, call.span())))
        .collect()
}

/// The calls each service makes for operation `operation`: the services its `path` names make
/// the calls it gives them, the others their own (`calls`).
fn operation_graph(
    scenario: &Scenario,
    names: &BTreeMap<&str, usize>,
    calls: &Graph,
    operation: usize,
) -> Result<Graph, Problem> {
    let mut graph = calls.clone();
    for (service, path) in &scenario.clients.operations[operation].path {
        let index = lookup(names, service.get_ref(), service.span())?;
        graph[index] = resolve_list(names, &path.get_ref().calls)?;
    }
    Ok(graph)
}

/// Depth-first search for a cycle; the error points at the call that closes it, and names the
/// operation whose path makes it, if `operation` is given.
fn check_acyclic(
    scenario: &Scenario,
    calls: &Graph,
    operation: Option<&str>,
) -> Result<(), Problem> {
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
            let Some((callee, span)) = calls[service].get(*next) else {
                marks[service] = Mark::Done;
                stack.pop();
                continue;
            };
            let callee = *callee;
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
                    let whose = operation.map_or_else(
                        || "calls make a cycle".to_string(),
                        |name| format!("the path of operation {name:?} makes a cycle"),
                    );
                    return Err((
                        span.clone(),
                        format!(
                            "{whose}: {}; a request would call itself forever",
                            cycle.join(" -> ")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Which services a request from the entry point reaches, by the calls of `graph`.
fn reached_from(graph: &Graph, entry: usize) -> Vec<bool> {
    let mut reached = vec![false; graph.len()];
    let mut todo = vec![entry];
    reached[entry] = true;
    while let Some(service) = todo.pop() {
        for &(callee, _) in &graph[service] {
            if !reached[callee] {
                reached[callee] = true;
                todo.push(callee);
            }
        }
    }
    reached
}

/// Every service an operation's `path` names is one the operation reaches.
fn check_path_reached(
    scenario: &Scenario,
    operation: usize,
    reached: &[bool],
) -> Result<(), Problem> {
    let operation = &scenario.clients.operations[operation];
    for service in operation.path.keys() {
        let index = scenario
            .service
            .iter()
            .position(|known| known.get_ref().name_is(service.get_ref()))
            .expect("checked by operation_graph");
        if !reached[index] {
            let reaches: Vec<String> = scenario
                .service
                .iter()
                .zip(reached)
                .filter(|(_, reached)| **reached)
                .map(|(service, _)| format!("{:?}", service.get_ref().name()))
                .collect();
            return Err((
                service.span(),
                format!(
                    "operation {:?} never reaches service {:?}, so its path there would never be taken; the operation reaches {}",
                    operation.name.get_ref(),
                    service.get_ref(),
                    reaches.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every service is reached by some operation.
fn check_reachable(scenario: &Scenario, reached: &[bool], entry: usize) -> Result<(), Problem> {
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

/// The most attempts a service sends on one call to `callee` (its `call_retry` for it, else
/// its `retry`, else one).
pub(super) fn sends_to(service: &Service, callee: &str) -> f64 {
    let retry = service
        .call_retry
        .get(callee)
        .map(|policy| &policy.get_ref().0)
        .or(service.retry.as_ref().map(Spanned::get_ref));
    retry.map_or(0, |retry| retry.max_attempts.get()) as f64 + 1.0
}

/// The worst case of one operation, whose calls are `calls`: every attempt fails, so a caller
/// that sends up to `k` times multiplies the load below it by `k`. The user clients send up to
/// the largest `max_attempts + 1` of the policies.
fn check_amplification(scenario: &Scenario, calls: &Graph, entry: usize) -> Result<(), Problem> {
    let users = scenario
        .policy
        .iter()
        .map(|policy| policy.max_attempts.get() + 1)
        .max()
        .unwrap_or(1) as f64;
    // Calls form a DAG; worst[s] is the most attempts on s per user operation.
    let order = topological_order(calls, entry);
    let mut worst = vec![0.0f64; calls.len()];
    worst[entry] = users;
    for &service in &order {
        let caller = scenario.service[service].get_ref();
        for &(callee, _) in &calls[service] {
            let sends = sends_to(caller, scenario.service[callee].get_ref().name());
            worst[callee] += worst[service] * sends;
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
fn topological_order(calls: &Graph, entry: usize) -> Vec<usize> {
    fn visit(service: usize, calls: &Graph, seen: &mut [bool], order: &mut Vec<usize>) {
        if seen[service] {
            return;
        }
        seen[service] = true;
        for &(callee, _) in &calls[service] {
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
    for index in 0..scenario.service.len() {
        if super::routes::calls_anywhere(scenario, scenario.service[index].get_ref()).is_empty() {
            continue;
        }
        let service = scenario.service[index].get_mut();
        service
            .retry
            .get_or_insert_with(|| Spanned::new(0..0, defaults::no_call_retry()));
        service
            .failure_status
            .get_or_insert_with(|| Spanned::new(0..0, Bounded(503)));
        if let Some(retry) = &mut service.retry {
            resolve_controls(&mut retry.get_mut().controls);
        }
        for policy in service.call_retry.values_mut() {
            resolve_controls(&mut policy.get_mut().0.controls);
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
