//! Checks of relations between values, after a scenario has been read.
//!
//! Single values check their own range while they are read (`values`); what is left here is
//! what needs two or more values: cap below base, unsorted capacity points, a workload without
//! its rate, weights that sum to zero, names used twice, sizes that could not run. Each error
//! carries the span of the value to fix.

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;

use super::controls::validate_controls;
use super::incident::validate_incident;
use super::topology::validate_topology;
use super::{
    CapacityPoint, DeadlineCheck, DisciplineKind, ErrorsAt, Expect, LimitKind, Outage, Policy,
    Problem, RejectionCost, Scenario, Service, Workload, span_of,
};
use crate::base::capacity::CapacityCurve;
use crate::base::stats::{clopper_pearson, fewest_trials_above};
use crate::base::time::Duration;
use crate::vocabulary::metric::{NamedMetric, ServiceShape, check_name};

/// At most this many time-series buckets: each holds a latency histogram.
pub const MAX_BUCKETS: u64 = 100_000;
/// At most this many endpoints.
pub const MAX_OPERATIONS: usize = 1000;
/// At most this many operations per second offered by an open workload.
pub const MAX_OPEN_RATE: f64 = 1e8;

/// The longest policy name, in characters: it heads table columns, chart legends and CSV rows.
pub const MAX_POLICY_NAME: usize = 100;

/// Whether `name` can name a policy (a table column, a chart legend, a CSV field): 1 to
/// [`MAX_POLICY_NAME`] characters, none a control character. The error says so.
pub fn check_policy_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.chars().count() > MAX_POLICY_NAME
        || name.chars().any(char::is_control)
    {
        let mut shown: String = name.chars().take(40).collect();
        if shown.len() < name.len() {
            shown.push_str("...");
        }
        return Err(format!(
            "policy name {shown:?} is not a name a table, a chart legend and a CSV can show: use 1 to {MAX_POLICY_NAME} characters, without control characters"
        ));
    }
    Ok(())
}

pub(super) fn validate(scenario: &Scenario) -> Result<(), Problem> {
    let duration = *scenario.duration.get_ref();
    let duration_span = scenario.duration.span();
    if duration.micros() == 0 {
        return Err((duration_span, "duration must be above zero".into()));
    }
    let bucket = *scenario.bucket.get_ref();
    let bucket_span = span_of(&scenario.bucket, duration_span.clone());
    if bucket.micros() == 0 || bucket > duration {
        return Err((
            bucket_span,
            format!("bucket must be above zero and at most the duration ({duration})"),
        ));
    }
    let buckets = duration.micros().div_ceil(bucket.micros());
    if buckets > MAX_BUCKETS {
        // A bucket as long as the duration is one bucket, so some wider bucket always works.
        let wider = narrowest_bucket(duration.micros(), duration).unwrap_or(duration);
        return Err((
            bucket_span,
            format!(
                "{buckets} buckets of {bucket} in {duration} are too many; at most {MAX_BUCKETS}: use a bucket of at least {wider}"
            ),
        ));
    }
    if let Some(rule) = &scenario.recovery {
        let window = *rule.window.get_ref();
        if window.micros() == 0 || window > duration {
            return Err((
                span_of(&rule.window, duration_span),
                format!(
                    "[recovery] window must be above zero and at most the duration ({duration})"
                ),
            ));
        }
    }
    validate_clients(scenario)?;
    validate_topology(scenario, duration_span.clone())?;
    super::links::validate_links(scenario)?;
    validate_services(scenario)?;
    validate_policies(scenario)?;
    validate_time_advances(scenario)?;
    validate_drain(scenario, bucket_span)?;
    validate_incident(scenario)?;
    validate_claims(scenario)?;
    validate_risk(scenario)
}

/// `[uncertain]` inputs have valid parameters, a claim with a `probability` has enough
/// replications to be shown, and `[map]` has two axes that read and claims about its policies.
fn validate_risk(scenario: &Scenario) -> Result<(), Problem> {
    for (key, input) in &scenario.uncertain {
        input
            .get_ref()
            .check()
            .map_err(|message| (input.span(), format!("[uncertain] {key:?}: {message}")))?;
    }
    for spanned in &scenario.expect {
        let Some(probability) = spanned.get_ref().probability else {
            continue;
        };
        if scenario.risk.is_none() {
            return Err((
                spanned.span(),
                "a claim with a probability is judged over replications, and the scenario has none: add [risk] replications = 100 (or run it with --replications 100)".into(),
            ));
        }
        if !(probability.get() > 0.0 && probability.get() < 1.0) {
            return Err((
                spanned.span(),
                "probability must be above 0 and below 1: no number of runs shows that a claim holds every time".into(),
            ));
        }
        let replications = scenario
            .risk
            .as_ref()
            .map_or(0, |risk| risk.get_ref().replications.get());
        let needed = fewest_trials_above(probability.get(), 0.95);
        if replications < needed {
            return Err((
                spanned.span(),
                format!(
                    "probability {} cannot be shown with {replications} replications: even {replications} of {replications} holding gives a 95% lower bound of {:.1}%, not above it; use at least {needed} ([risk] replications or --replications){}",
                    probability.get(),
                    100.0 * clopper_pearson(replications, replications, 0.95).0,
                    if needed > super::risk::MAX_REPLICATIONS {
                        format!(
                            ", more than the {} a study may run: ask for a lower probability",
                            super::risk::MAX_REPLICATIONS
                        )
                    } else {
                        String::new()
                    }
                ),
            ));
        }
    }
    let Some(map) = &scenario.map else {
        return Ok(());
    };
    let (map, map_span) = (map.get_ref(), map.span());
    for axis in [&map.x, &map.y] {
        axis.get_ref()
            .parse::<super::risk::MapAxis>()
            .map_err(|message| (axis.span(), format!("[map]: {message}")))?;
    }
    if let Some(least) = map.min_replications
        && least > map.replications
    {
        return Err((
            map_span,
            format!(
                "[map] min_replications ({}) must be at most replications ({})",
                least.get(),
                map.replications.get()
            ),
        ));
    }
    let names: Vec<&str> = scenario
        .policy
        .iter()
        .map(|policy| policy.name.get_ref().as_str())
        .collect();
    for spanned in &map.expect {
        let (claim, span) = (spanned.get_ref(), spanned.span());
        for name in std::iter::once(&claim.policy).chain(&claim.better_than) {
            if !names.contains(&name.as_str()) {
                return Err((
                    span,
                    format!(
                        "a map claim names policy {name:?}, which the scenario does not have; its policies are {}",
                        names.join(", ")
                    ),
                ));
            }
        }
        if !super::risk::MAP_METRICS
            .iter()
            .any(|(metric, _)| *metric == claim.metric)
        {
            let valid: Vec<&str> = super::risk::MAP_METRICS
                .iter()
                .map(|(name, _)| *name)
                .collect();
            return Err((
                span,
                format!(
                    "`{}` is not a metric of a map; valid: {}",
                    claim.metric,
                    valid.join(", ")
                ),
            ));
        }
        if !exactly_one([
            claim.better_than.is_some(),
            claim.at_least.is_some(),
            claim.at_most.is_some(),
        ]) {
            return Err((
                span,
                "a map claim needs exactly one of better_than = \"<policy>\", at_least = <share> and at_most = <share>".into(),
            ));
        }
        if claim.margin.is_some() && claim.better_than.is_none() {
            return Err((span, "margin goes with better_than".into()));
        }
        if claim.better_than.as_ref() == Some(&claim.policy) {
            return Err((span, "a policy cannot beat itself".into()));
        }
    }
    if !has_incident(scenario) {
        return Err((
            map_span,
            "a map measures whether the system recovers from the incident, and the scenario has none; declare one in [incident] (a load spike: from = \"clients.load\")".into(),
        ));
    }
    Ok(())
}

/// The longest a `policy`'s operation can live, in microseconds. A deadline bounds an
/// operation; a policy that ignores it is bounded by its attempts, their timeouts and the
/// longest wait between them (its cap, or the longest Retry-After a service can send).
pub fn longest_operation(scenario: &Scenario, policy: &Policy) -> u64 {
    let longest = longest_call(scenario, policy);
    // Users who retry by hand stretch an intent over several operations.
    policy.manual_retry.as_ref().map_or(longest, |manual| {
        longest.saturating_add(manual.get_ref().longest_extension(longest))
    })
}

/// The longest one call of a `policy`'s users can live, in microseconds.
fn longest_call(scenario: &Scenario, policy: &Policy) -> u64 {
    let clients = &scenario.clients;
    if !policy.ignore_deadline {
        return policy.deadline.unwrap_or(clients.deadline).micros();
    }
    let longest_retry_after = scenario
        .services()
        .iter()
        .map(|service| {
            let fixed = service.retry_after.map_or(0, Duration::micros);
            let limiter = service.rate_limit.as_ref().map_or(0, |limit| {
                // Time until one token, rounded up to the granularity (and a granule more).
                let granularity = limit.retry_after_granularity.get_ref().micros().max(1);
                let token = (1e6 / limit.rate.get()).ceil().min(1e15) as u64;
                token
                    .div_ceil(granularity)
                    .saturating_add(1)
                    .saturating_mul(granularity)
            });
            fixed.max(limiter)
        })
        .max()
        .unwrap_or(0);
    let timeout = policy
        .attempt_timeout
        .map_or(clients.attempt_timeout.micros(), |timeout| {
            timeout.limit_micros()
        });
    let retries = policy.max_attempts.get();
    let sends = (retries + 1).max(
        policy
            .hedging
            .as_ref()
            .map_or(0, |h| h.get_ref().max_attempts.get()),
    );
    // Honor-jittered waits up to one and a half Retry-Afters.
    let wait = policy
        .cap
        .get_ref()
        .micros()
        .max(longest_retry_after.saturating_mul(3) / 2);
    sends
        .saturating_mul(timeout)
        .saturating_add(retries.saturating_mul(wait))
}

/// The run goes on after `duration` until the last operation ends, one time bucket (and one
/// tick of every service) at a time: the longest an operation can live
/// ([`longest_operation`]) bounds that drain, and the whole series must stay within
/// [`MAX_BUCKETS`].
fn validate_drain(scenario: &Scenario, bucket_span: Range<usize>) -> Result<(), Problem> {
    let (longest, policy) = scenario
        .policy
        .iter()
        .map(|policy| (longest_operation(scenario, policy), policy))
        .max_by_key(|(lifetime, _)| *lifetime)
        .expect("validated: one policy at least");
    let bucket = scenario.bucket.get_ref().micros();
    let horizon = scenario.duration.get_ref().micros().saturating_add(longest);
    let buckets = horizon.div_ceil(bucket);
    if buckets > MAX_BUCKETS {
        let duration = *scenario.duration.get_ref();
        let shorter = if policy.ignore_deadline {
            "fewer attempts, shorter attempt timeouts or a lower cap"
        } else {
            "a shorter deadline"
        };
        let remedy = match narrowest_bucket(horizon, duration) {
            Some(wider) => format!("use a bucket of at least {wider}, or {shorter}"),
            // Even a bucket of the whole duration is too narrow: only the operation can change.
            None => format!(
                "no bucket is wide enough (a bucket is at most the duration, {duration}, and {} of those are still more than {MAX_BUCKETS}): give policy {:?} {shorter} (at most {} for an operation at this duration), or a longer duration",
                horizon.div_ceil(duration.micros()),
                policy.name.get_ref(),
                Duration(
                    duration
                        .micros()
                        .saturating_mul(MAX_BUCKETS)
                        .saturating_sub(duration.micros())
                )
            ),
        };
        return Err((
            bucket_span,
            format!(
                "operations may run until {} (duration {} plus {} for policy {:?}'s last operation to end): {buckets} buckets of {}, at most {MAX_BUCKETS}; {remedy}",
                Duration(horizon),
                duration,
                Duration(longest),
                policy.name.get_ref(),
                scenario.bucket.get_ref()
            ),
        ));
    }
    Ok(())
}

/// The narrowest bucket that cuts `horizon` microseconds into at most [`MAX_BUCKETS`], rounded
/// up to a whole number of its largest unit (`37s`, not `36000001us`) where that is still at
/// most `duration`; `None` if even a bucket of the whole `duration` (the widest allowed) cuts
/// it into more.
fn narrowest_bucket(horizon: u64, duration: Duration) -> Option<Duration> {
    let exact = horizon.div_ceil(MAX_BUCKETS).max(1);
    if exact > duration.micros() {
        return None;
    }
    let unit = [3_600_000_000, 60_000_000, 1_000_000, 1_000, 1]
        .into_iter()
        .find(|unit| *unit <= exact)
        .unwrap_or(1);
    let rounded = exact.div_ceil(unit).saturating_mul(unit);
    Some(Duration(if rounded <= duration.micros() {
        rounded
    } else {
        exact
    }))
}

fn validate_clients(scenario: &Scenario) -> Result<(), Problem> {
    let clients = &scenario.clients;
    let count_span = clients.count.span();
    let processes = clients.processes.get_ref().get();
    if processes > clients.count.get_ref().get() {
        return Err((
            span_of(&clients.processes, count_span.clone()),
            format!(
                "{processes} processes for {} clients would leave some empty; processes must be at most count",
                clients.count.get_ref().get()
            ),
        ));
    }
    let workload_span = span_of(&clients.workload, count_span.clone());
    match clients.workload.get_ref() {
        Workload::Open if clients.arrivals.get_ref().recorded().is_some() => {
            if clients.rate.is_some() || !clients.load.is_empty() || clients.think_time.is_some() {
                return Err((
                    span_of(&clients.arrivals, workload_span),
                    "recorded arrivals are at their own times: remove `rate`, `load` and `think_time`".into(),
                ));
            }
            super::arrivals::check_process(clients.arrivals.get_ref())
                .map_err(|message| (span_of(&clients.arrivals, workload_span.clone()), message))?;
        }
        Workload::Open => {
            let Some(rate) = clients.rate else {
                return Err((
                    workload_span,
                    "an open workload needs `rate`, the operations per second of each client"
                        .into(),
                ));
            };
            if clients.think_time.is_some() {
                return Err((
                    workload_span,
                    "`think_time` is for closed workloads; an open workload has `rate`".into(),
                ));
            }
            super::arrivals::check_process(clients.arrivals.get_ref())
                .map_err(|message| (span_of(&clients.arrivals, workload_span.clone()), message))?;
            validate_curve("load", &clients.load)?;
            let peak = CapacityCurve::new(1, &clients.load).peak_factor();
            if peak <= 0.0 {
                return Err((
                    workload_span,
                    "`load` is zero everywhere: no operation would ever start".into(),
                ));
            }
            let total = rate.get() * clients.count.get_ref().get() as f64 * peak;
            if total > MAX_OPEN_RATE {
                return Err((
                    count_span,
                    format!(
                        "count * rate offers {total:e} operations per second; at most {MAX_OPEN_RATE:e}"
                    ),
                ));
            }
        }
        Workload::Closed => {
            if clients.think_time.is_none() {
                return Err((
                    workload_span,
                    "a closed workload needs `think_time`, the mean pause between a client's operations".into(),
                ));
            }
            if clients.rate.is_some() || !clients.load.is_empty() {
                return Err((
                    workload_span,
                    "`rate` and `load` are for open workloads; a closed workload has `think_time`"
                        .into(),
                ));
            }
            if !clients.arrivals.get_ref().is_poisson() {
                return Err((
                    span_of(&clients.arrivals, workload_span),
                    "`arrivals` is for open workloads; a closed client starts its next operation after its think time".into(),
                ));
            }
        }
    }
    if clients.deadline.micros() == 0 || clients.attempt_timeout.micros() == 0 {
        return Err((
            count_span,
            "deadline and attempt_timeout must be above zero".into(),
        ));
    }
    if clients.operations.is_empty() || clients.operations.len() > MAX_OPERATIONS {
        return Err((
            count_span,
            format!("from 1 to {MAX_OPERATIONS} [[clients.operations]] are needed"),
        ));
    }
    let mut names = BTreeSet::new();
    let mut total_weight = 0.0;
    for operation in &clients.operations {
        let name = operation.name.get_ref();
        if name.is_empty() || !names.insert(name.as_str()) {
            return Err((
                operation.name.span(),
                format!("operation name {name:?} is empty or used twice; names must be unique"),
            ));
        }
        // A misspelt or lower-case method would be simulated as a write that is never
        // repeatable (`get` is not `GET`), so only the methods the decision knows are valid.
        if let Err(error) = crate::retry::decision::known_method(operation.method.get_ref()) {
            return Err((
                span_of(&operation.method, operation.name.span()),
                format!("operation {name:?}: {error}"),
            ));
        }
        let weight = *operation.weight.get_ref();
        if !(weight.is_finite() && weight >= 0.0) {
            return Err((
                span_of(&operation.weight, operation.name.span()),
                format!("weight {weight} is out of range; expected a finite number >= 0"),
            ));
        }
        total_weight += weight;
    }
    if total_weight <= 0.0 {
        let last = clients.operations.last().expect("not empty");
        return Err((
            span_of(&last.weight, last.name.span()),
            "the operations' weights sum to zero; at least one must be above zero".into(),
        ));
    }
    Ok(())
}

/// A closed loop whose think time is zero must not have operations that can end at the
/// instant they start: its clients would start operations at one instant forever
/// ([`super::zero_time`]).
fn validate_time_advances(scenario: &Scenario) -> Result<(), Problem> {
    let clients = &scenario.clients;
    let Some(think) = clients
        .think_time
        .as_ref()
        .filter(|think| think.get_ref().micros() == 0)
    else {
        return Ok(());
    };
    for policy in &scenario.policy {
        let ends = super::instant_ends(scenario, policy);
        if ends.is_empty() {
            continue;
        }
        let local = ends.iter().any(|end| end.contains("control refuses"));
        return Err((
            span_of(think, span_of(&clients.workload, clients.count.span())),
            format!(
                "think_time = {} with operations of policy {:?} that can end at the instant they start makes a closed loop that never lets simulated time advance (each client would start operations at one instant forever): {}; give think_time a mean above zero (as \"1ms\"){}",
                think.get_ref(),
                policy.name.get_ref(),
                ends.join("; "),
                if local {
                    ", or no control that refuses calls locally"
                } else {
                    ", or the latency from the clients to the service they call (network.latency, or their [[link]]) a value above zero"
                }
            ),
        ));
    }
    Ok(())
}

/// Points of a piecewise-linear curve (`capacity`, `load`) must be sorted by time, and a time
/// may appear at most twice (twice makes a step).
fn validate_curve(name: &str, points: &[CapacityPoint]) -> Result<(), Problem> {
    let mut previous: Option<(u64, usize)> = None; // (time, points at that time)
    for point in points {
        let at = point.at.get_ref().micros();
        let repeats = match previous {
            Some((time, _)) if at < time => {
                return Err((
                    point.at.span(),
                    format!(
                        "{name} points must be sorted by `at`; {} comes after a later point",
                        point.at.get_ref()
                    ),
                ));
            }
            Some((time, count)) if at == time => count + 1,
            _ => 1,
        };
        if repeats > 2 {
            return Err((
                point.at.span(),
                format!("a time may appear at most twice in `{name}` (twice makes a step)"),
            ));
        }
        previous = Some((at, repeats));
    }
    Ok(())
}

fn validate_services(scenario: &Scenario) -> Result<(), Problem> {
    let services = scenario.services();
    let entry = services[scenario.entry()];
    let all_instances: u64 = services
        .iter()
        .map(|service| {
            service
                .fleet
                .as_ref()
                .map_or(1, |fleet| fleet.get_ref().instances.get())
        })
        .sum();
    for service in scenario.services() {
        validate_curve("capacity", &service.capacity)?;
        if let Some(limit) = &service.rate_limit
            && limit.retry_after_granularity.get_ref().micros() == 0
        {
            return Err((
                limit.retry_after_granularity.span(),
                "retry_after_granularity must be above zero; \"1ms\" is the finest useful".into(),
            ));
        }
        validate_overload(service)?;
        let callers = if std::ptr::eq(service, entry) {
            scenario.clients.processes.get_ref().get()
        } else {
            all_instances
        };
        super::fleet::validate_fleet(service, callers)?;
    }
    Ok(())
}

fn validate_policies(scenario: &Scenario) -> Result<(), Problem> {
    if scenario.policy.is_empty() {
        return Err((
            scenario.duration.span(),
            "at least one [[policy]] is needed".into(),
        ));
    }
    let mut names = BTreeSet::new();
    for policy in &scenario.policy {
        let name = policy.name.get_ref();
        if name.is_empty() || !names.insert(name.as_str()) {
            return Err((
                policy.name.span(),
                format!("policy name {name:?} is empty or used twice; names must be unique"),
            ));
        }
        check_policy_name(name).map_err(|message| (policy.name.span(), message))?;
        let cap = *policy.cap.get_ref();
        if cap < policy.base {
            return Err((
                span_of(&policy.cap, policy.name.span()),
                format!(
                    "cap {cap} is below base {}; cap must be at least base",
                    policy.base
                ),
            ));
        }
        if policy.deadline.is_some_and(|d| d.micros() == 0)
            || policy.attempt_timeout
                == Some(super::AttemptTimeout::After(crate::base::time::Duration(0)))
        {
            return Err((
                policy.name.span(),
                format!("policy {name:?}: deadline and attempt_timeout must be above zero"),
            ));
        }
        if policy.ignore_deadline && policy.attempt_timeout == Some(super::AttemptTimeout::None) {
            return Err((
                policy.name.span(),
                format!(
                    "policy {name:?}: ignore_deadline with attempt_timeout = \"none\" leaves an attempt that gets no answer waiting forever; give attempt_timeout a duration"
                ),
            ));
        }
        validate_controls(&policy.controls)?;
        if let Some(manual) = &policy.manual_retry {
            manual.get_ref().validate(manual.span(), name)?;
        }
    }
    Ok(())
}

/// A rejection cost is a share of the mean service time, so it needs one above zero, and it
/// has no `outage` kind (a refusal during an outage has no worker to cost: `RejectionCost`).
fn validate_rejection_cost(
    service: &Service,
    spanned: &Spanned<RejectionCost>,
) -> Result<(), Problem> {
    let cost = spanned.get_ref();
    if let Some(outage) = cost
        .outage
        .as_ref()
        .filter(|outage| outage.get_ref().get() != 0.0)
    {
        return Err((
            span_of(outage, spanned.span()),
            "rejection_cost.outage is no longer read, and never cost anything: a service refuses during an outage only while no worker is up (capacity zero with outage = \"reject\", or down after a crash), so there is no worker for the refusal to hold. Remove it (0 is still read). Refusals cost work while workers are up: queue_full, rate_limit, concurrency_limit and shed; for an outage that still costs, keep some capacity in the `capacity` curve and let the full queue refuse at queue_full's cost".into(),
        ));
    }
    let written = [
        cost.queue_full,
        cost.rate_limit,
        cost.concurrency_limit,
        cost.shed,
    ];
    if service.service_time.mean_micros() == 0.0 && written.iter().any(|factor| factor.get() > 0.0)
    {
        return Err((
            spanned.span(),
            "a rejection cost is a share of the mean service time, which is zero here, so it would cost nothing: give service_time a mean above zero or remove rejection_cost".into(),
        ));
    }
    Ok(())
}

/// Errors after the work and a deadline's check: `committed` belongs to an error answered
/// after the work, a deadline's reject cost needs a service time to be a share of, and a
/// deadline checked at dequeue would never see what `drop_expired` drops first.
fn validate_server_failures(service: &Service) -> Result<(), Problem> {
    if let Some(errors) = &service.errors
        && errors.at == ErrorsAt::Arrival
        && let Some(committed) = errors.committed.as_ref().filter(|c| *c.get_ref())
    {
        return Err((
            committed.span(),
            "errors.committed = true says the write was committed before the error, which needs the work done first: add at = \"after-service\" (an error at arrival writes nothing)".into(),
        ));
    }
    let Some(spanned) = &service.deadline else {
        return Ok(());
    };
    let deadline = spanned.get_ref();
    if deadline.reject_cost.get() > 0.0 && service.service_time.mean_micros() == 0.0 {
        return Err((
            spanned.span(),
            "deadline.reject_cost is a share of the mean service time, which is zero here, so it would cost nothing: give service_time a mean above zero or remove reject_cost".into(),
        ));
    }
    if deadline.check == DeadlineCheck::Dequeue && service.drop_expired {
        return Err((
            spanned.span(),
            "drop_expired and deadline.check = \"dequeue\" both drop queued work whose time is up: drop_expired as its caller gives up, the deadline as the time the request carries runs out (later by the network transit), so the deadline would never see a request to drop; keep one".into(),
        ));
    }
    Ok(())
}

/// The overload behaviours' relations: one threshold for a crash, one decay for a cold start,
/// parameters that belong to the chosen algorithm or discipline, sane bounds.
fn validate_overload(service: &Service) -> Result<(), Problem> {
    if let Some(spanned) = &service.rejection_cost {
        validate_rejection_cost(service, spanned)?;
    }
    validate_server_failures(service)?;
    if let Some(spanned) = &service.crash {
        let crash = spanned.get_ref();
        if crash.queue_above.is_some() == crash.in_flight_above.is_some() {
            return Err((
                spanned.span(),
                "a crash needs exactly one threshold: queue_above (requests waiting) or in_flight_above (requests queued or served)".into(),
            ));
        }
        if crash.restart_after.get_ref().micros() == 0 {
            return Err((
                span_of(&crash.restart_after, spanned.span()),
                "restart_after must be above zero".into(),
            ));
        }
        if crash.in_flight_above.is_some_and(|above| above.get() == 0) && crash.hold.micros() == 0 {
            // Not an overload: every request it admits crashes it at once, before any work.
            return Err((
                spanned.span(),
                "in_flight_above = 0 with hold = \"0s\" crashes the service the instant it admits any request, so it never serves one and crashes once per request: for a service that is down use a `capacity` curve with outage = \"crash\" or \"reject\"; for a crash under overload raise in_flight_above or give hold a duration".into(),
            ));
        }
    }
    if let Some(spanned) = &service.cold_start {
        let cold = spanned.get_ref();
        if cold.requests.is_some() == cold.time.is_some_and(|time| time.micros() > 0) {
            return Err((
                spanned.span(),
                "a cold start decays either with requests served (requests = 1000) or with time (time = \"30s\"), exactly one of them".into(),
            ));
        }
        if cold.factor.get() < 1.0 {
            return Err((
                spanned.span(),
                format!(
                    "cold_start.factor {} makes a restarted service faster; it must be at least 1",
                    cold.factor.get()
                ),
            ));
        }
        if service.crash.is_none() && service.outage != Outage::Crash {
            return Err((
                spanned.span(),
                "a cold start follows a restart: add `crash` (crash under overload) or use outage = \"crash\"".into(),
            ));
        }
    }
    if let Some(row) = &service.optimistic_row
        && !service.calls.is_empty()
    {
        return Err((
            row.span(),
            "an optimistic row holds data: it cannot call other services".into(),
        ));
    }
    if let Some(spanned) = &service.queue_discipline {
        let discipline = spanned.get_ref();
        let timed = matches!(
            discipline.kind,
            DisciplineKind::Codel | DisciplineKind::AdaptiveLifo
        );
        let given = [discipline.target, discipline.interval];
        if !timed && given.iter().any(Option::is_some) {
            return Err((
                spanned.span(),
                "target and interval belong to the codel and adaptive-lifo disciplines".into(),
            ));
        }
        if given
            .iter()
            .flatten()
            .any(|duration| duration.micros() == 0)
        {
            return Err((
                spanned.span(),
                "target and interval must be above zero".into(),
            ));
        }
    }
    if let Some(spanned) = &service.concurrency_limit {
        let limit = spanned.get_ref();
        if (limit.algorithm == LimitKind::Fixed) != limit.limit.is_some() {
            return Err((
                spanned.span(),
                "`limit` is the fixed algorithm's, and the fixed algorithm needs it (limit = 100)"
                    .into(),
            ));
        }
        let unused = match limit.algorithm {
            LimitKind::Fixed => [
                ("initial", limit.initial),
                ("min", limit.min),
                ("max", limit.max),
            ]
            .into_iter()
            .find(|(_, given)| given.is_some()),
            LimitKind::Vegas => limit.min.map(|min| ("min", Some(min))),
            LimitKind::EnvoyGradient => limit.initial.map(|initial| ("initial", Some(initial))),
            LimitKind::Gradient2 => None,
        };
        if let Some((name, _)) = unused {
            return Err((
                spanned.span(),
                format!(
                    "`{name}` has no meaning for the {:?} algorithm (Vegas has no floor but 1; Envoy starts at its floor, min; fixed has only limit)",
                    limit.algorithm
                ),
            ));
        }
        let (min, initial, max) = (
            limit.min.map(|b| b.get()),
            limit.initial.map(|b| b.get()),
            limit.max.map(|b| b.get()),
        );
        let ordered = |low: Option<u64>, high: Option<u64>| match (low, high) {
            (Some(low), Some(high)) => low <= high,
            _ => true,
        };
        if !(ordered(min, initial) && ordered(initial, max) && ordered(min, max)) {
            return Err((
                spanned.span(),
                "the concurrency limit's bounds must be in order: min <= initial <= max".into(),
            ));
        }
    }
    Ok(())
}

/// The claims on `policy` (or against it) name metrics of the services as `policy` runs them,
/// `services`, its overrides applied: an instance past the fleet's last, or a fleet the
/// overrides made one instance, is refused at the claim (saying so where the overrides changed
/// the scenario's fleets, `scenario`); its `operations` are the names a claim may give.
pub(super) fn validate_claims_of_policy(
    claims: &[Spanned<Expect>],
    policy: &str,
    (services, operations): (&[ServiceShape], &[&str]),
    scenario: &[ServiceShape],
) -> Result<(), Problem> {
    for spanned in claims {
        let claim = spanned.get_ref();
        let names_it = claim.policy == policy || claim.better_than.as_deref() == Some(policy);
        if names_it && claim.window.is_none() {
            NamedMetric::resolve(&claim.metric, services, operations).map_err(|message| {
                let message = if services == scenario {
                    message
                } else {
                    format!(
                        "policy {policy:?} runs other fleets (its overrides), and there {message}"
                    )
                };
                (spanned.span(), message)
            })?;
        }
    }
    Ok(())
}

/// Each claim names policies of the scenario and a metric it can compare, one comparison, and
/// a window inside the run.
fn validate_claims(scenario: &Scenario) -> Result<(), Problem> {
    let names: Vec<&str> = scenario
        .policy
        .iter()
        .map(|policy| policy.name.get_ref().as_str())
        .collect();
    let known = |name: &str, span: Range<usize>| -> Result<(), Problem> {
        if names.contains(&name) {
            return Ok(());
        }
        let hint = crate::base::suggest::did_you_mean(name, names.iter().copied())
            .map(|near| format!(" (did you mean {near:?}?)"))
            .unwrap_or_default();
        Err((
            span,
            format!(
                "a claim names policy {name:?}, which the scenario does not have{hint}; its policies are {}",
                names.join(", ")
            ),
        ))
    };
    let services = scenario.service_shapes();
    let operations = scenario.operation_names();
    for spanned in &scenario.expect {
        let (claim, span) = (spanned.get_ref(), spanned.span());
        known(&claim.policy, span.clone())?;
        if !exactly_one([
            claim.better_than.is_some(),
            claim.at_least.is_some(),
            claim.at_most.is_some(),
        ]) {
            return Err((
                span,
                "a claim needs exactly one of better_than = \"<policy>\", at_least = <value> and at_most = <value>".into(),
            ));
        }
        if let Some(other) = &claim.better_than {
            known(other, span.clone())?;
            if *other == claim.policy {
                return Err((span, "a policy cannot beat itself".into()));
            }
        } else if claim.margin.is_some() {
            return Err((span, "margin goes with better_than".into()));
        }
        let windowed = claim.window.is_some();
        // A policy with overrides may run other fleets: its claims are resolved against them
        // once they are applied ([`validate_claims_of_policy`]), here only spelt right.
        let overridden = |name: &str| {
            scenario
                .policy
                .iter()
                .any(|policy| policy.name.get_ref() == name && !policy.overrides.is_empty())
        };
        let plain = [Some(claim.policy.as_str()), claim.better_than.as_deref()]
            .into_iter()
            .flatten()
            .any(|name| !overridden(name));
        if !windowed {
            check_name(&claim.metric).map_err(|message| (span.clone(), message))?;
            if plain {
                NamedMetric::resolve(&claim.metric, &services, &operations)
                    .map_err(|message| (span.clone(), message))?;
            }
        }
        match crate::vocabulary::metric::claim_direction(&claim.metric, windowed) {
            Some(crate::vocabulary::metric::Better::Neither) => {
                return Err((
                    span,
                    format!(
                        "`{}` has no better direction (it describes the scenario, or what a service did), so no policy does better on it",
                        claim.metric
                    ),
                ));
            }
            Some(_) => {}
            None if windowed => {
                let valid: Vec<&str> = crate::vocabulary::metric::WINDOW_METRICS
                    .iter()
                    .map(|(name, _)| *name)
                    .collect();
                use crate::vocabulary::metric::{AT, INSTANCE, OPERATION};
                let whole_run = if claim.metric.contains([AT, INSTANCE, OPERATION]) {
                    " (counts per service, instance and operation are kept over the whole run: drop `window`, or claim the run's metric)"
                } else {
                    ""
                };
                return Err((
                    span,
                    format!(
                        "`{}` cannot be taken over a window{whole_run}; valid: {}",
                        claim.metric,
                        valid.join(", ")
                    ),
                ));
            }
            None => unreachable!("resolved above"),
        }
        if let Some(window) = &claim.window
            && window.from >= window.to
        {
            return Err((
                span,
                format!(
                    "the window from {} to {} is empty; `from` must come before `to`",
                    window.from, window.to
                ),
            ));
        }
        if claim
            .at_least
            .into_iter()
            .chain(claim.at_most)
            .any(|bound| !bound.is_finite())
        {
            return Err((span, "at_least and at_most must be finite numbers".into()));
        }
        if INCIDENT_METRICS.contains(&claim.metric.as_str()) && !has_incident(scenario) {
            return Err((
                span,
                format!(
                    "`{}` needs an incident to measure, and no service's capacity curve leaves its starting level; declare one in [incident] (a load spike: from = \"clients.load\")",
                    claim.metric
                ),
            ));
        }
    }
    Ok(())
}

/// The summary metrics measured in or from the incident: undefined without one.
const INCIDENT_METRICS: [&str; 4] = [
    "recovery_s",
    "peak_incident_rps",
    "incident_goodput_rps",
    "incident_failed",
];

/// Whether the scenario has an incident (validated before the claims).
fn has_incident(scenario: &Scenario) -> bool {
    matches!(validate_incident(scenario), Ok(Some(_)))
}

/// Whether exactly one of a claim's comparisons (`better_than`, `at_least`, `at_most`) is
/// given.
fn exactly_one(comparisons: [bool; 3]) -> bool {
    comparisons.iter().filter(|given| **given).count() == 1
}
