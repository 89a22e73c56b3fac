//! Metric names as sweeps, requirements, claims, heatmaps and the Pareto front write them: one
//! of the run's ([`METRICS`]: `success_rate`), one of a service's ([`SERVICE_METRICS`]) at a
//! named service, `METRIC@SERVICE` (`amplification@db`), one of a fleet's ([`FLEET_METRICS`])
//! at a service run as several instances (`busiest_share@api`), or one of an instance's
//! ([`INSTANCE_METRICS`]) at instance K of a fleet, from 0, `METRIC@SERVICE#K`
//! (`refused@api#0`); or, in a scenario of two operations or more, one of an operation's
//! ([`OPERATION_METRICS`]) for the operation of that name, `METRIC:OPERATION`
//! (`success_rate:pay`).
//!
//! The key question of a topology is what one tier sees: how much the retries above it multiply
//! the load on the database, how long its queue gets, how much of its work is wasted. Those
//! numbers are in `summary.json`'s `services` blocks; naming them `METRIC@SERVICE` makes them
//! metrics like the run's, with a unit, a domain, a direction and a meaning, so that a sweep can
//! require, minimise, draw and compare them. The run's metrics keep their names, so nothing a
//! scenario without a topology writes or reads changes.
//!
//! A service's metrics exist in a run of two services or more, the runs whose `summary.json`
//! has a `services` list: with one service, its numbers are the run's own (`amplification`,
//! `wasted_work_s`), and a sweep's files keep their columns. A fleet's and its instances' exist
//! wherever the service is a fleet, a scenario of one service included: which instance a bad
//! host is, and how much of the load it drew, is no number of the run's.
//!
//! An operation's metrics are the run's of the users' side, counted for one operation: mixed
//! traffic takes different paths (a payment through the card network, a balance read that
//! never reaches it), and an outage on one path shows as a share of the run's failures that
//! says nothing of which users saw them. With one operation its numbers are the run's own, so
//! only a scenario of two operations or more has them; like a fleet's, a sweep records those it
//! is asked for, so that its columns stay the same.

use super::{
    Better, Domain, FLEET_METRICS, INSTANCE_METRICS, INTENT_METRICS, METRICS, Metric,
    OPERATION_METRICS, OperationMetric, SERVICE_METRICS, ServiceSummary, Summary, Unit,
    format_value, intent_metric, metric, operation_metric,
};
use crate::base::suggest::did_you_mean;
use crate::vocabulary::counts::InstanceTotals;

/// Between a service's metric and the service's name: `amplification@db`.
pub const AT: char = '@';

/// Between a fleet's name and one of its instances: `refused@api#0`.
pub const INSTANCE: char = '#';

/// Between an operation's metric and the operation's name: `success_rate:pay`.
pub const OPERATION: char = ':';

/// Characters a user might put between a service's metric and the service instead of [`AT`]
/// (`amplification_db`, `amplification.db`): a name written so gets `METRIC@SERVICE` suggested.
/// Not [`OPERATION`]: `amplification:db` is read as an operation's metric, and the scenario's
/// service `db` suggested where it has no such operation.
const LOOKALIKES: [char; 4] = ['_', '.', '/', '-'];

/// A service as a metric's name may name it: its name and its instances (1 outside a fleet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceShape<'a> {
    /// The service's name.
    pub name: &'a str,
    /// Its instances: `fleet`'s `instances`, 1 without a fleet.
    pub instances: u64,
}

impl<'a> ServiceShape<'a> {
    /// The shape of the service `summary` sums up.
    pub fn of_summary(summary: &'a ServiceSummary) -> ServiceShape<'a> {
        ServiceShape {
            name: &summary.name,
            instances: (summary.instances.len() as u64).max(1),
        }
    }
}

/// Which table a named metric comes from.
#[derive(Debug, Clone)]
enum Source {
    /// The run's.
    Run(&'static Metric),
    /// A service's or a fleet's, at the service of this name.
    Service(&'static Metric<ServiceSummary>, String),
    /// An instance's, at the instance of this index of the fleet of this name.
    Instance(&'static Metric<InstanceTotals>, String, usize),
    /// An operation's, for the operation of this name.
    Operation(&'static OperationMetric, String),
}

/// A metric a sweep, a requirement or a claim names, checked against the scenario: its name as
/// written, how it is written, its values and which way it is better.
#[derive(Debug, Clone)]
pub struct NamedMetric {
    /// As written: `success_rate`, `amplification@db`, `refused@api#0`.
    pub name: String,
    /// How it is written.
    pub unit: Unit,
    /// The values it takes in a run.
    pub domain: Domain,
    /// Which way is better.
    pub better: Better,
    source: Source,
}

/// A metric's name read without the scenario: which table, and at which service and instance.
#[derive(Debug, Clone, Copy)]
enum Parsed<'a> {
    Run(&'static Metric),
    Service(&'static Metric<ServiceSummary>, &'a str),
    Fleet(&'static Metric<ServiceSummary>, &'a str),
    Instance(&'static Metric<InstanceTotals>, &'a str, usize),
    Operation(&'static OperationMetric, &'a str),
}

impl Parsed<'_> {
    fn properties(self) -> (Domain, Better) {
        match self {
            Parsed::Run(metric) => (metric.domain, metric.better),
            Parsed::Operation(metric, _) => (metric.of_run().domain, metric.of_run().better),
            Parsed::Service(metric, _) | Parsed::Fleet(metric, _) => (metric.domain, metric.better),
            Parsed::Instance(metric, _, _) => (metric.domain, metric.better),
        }
    }
}

impl NamedMetric {
    /// One of the run's metrics.
    pub fn of_run(metric: &'static Metric) -> NamedMetric {
        NamedMetric {
            name: metric.name.to_string(),
            unit: metric.unit,
            domain: metric.domain,
            better: metric.better,
            source: Source::Run(metric),
        }
    }

    /// A service's (or a fleet's) metric at `service`.
    fn of_service(metric: &'static Metric<ServiceSummary>, service: &str) -> NamedMetric {
        NamedMetric {
            name: format!("{}{AT}{service}", metric.name),
            unit: metric.unit,
            domain: metric.domain,
            better: metric.better,
            source: Source::Service(metric, service.to_string()),
        }
    }

    /// An instance's metric at instance `index` of `service`.
    fn of_instance(
        metric: &'static Metric<InstanceTotals>,
        service: &str,
        index: usize,
    ) -> NamedMetric {
        NamedMetric {
            name: format!("{}{AT}{service}{INSTANCE}{index}", metric.name),
            unit: metric.unit,
            domain: metric.domain,
            better: metric.better,
            source: Source::Instance(metric, service.to_string(), index),
        }
    }

    /// An operation's metric for `operation`: the run's metric's unit, domain and direction.
    fn of_operation(metric: &'static OperationMetric, operation: &str) -> NamedMetric {
        let run = metric.of_run();
        NamedMetric {
            name: format!("{}{OPERATION}{operation}", metric.name),
            unit: run.unit,
            domain: run.domain,
            better: run.better,
            source: Source::Operation(metric, operation.to_string()),
        }
    }

    /// Every metric of a run whose services are `services` (in the scenario's order), in the
    /// order of a sweep's `results.csv`: the run's, then, with two services or more, each
    /// service's, service by service. A fleet's and an instance's metrics are not among them
    /// (a fleet of a thousand instances would add thousands): a sweep records those it is
    /// asked for, and so does it an operation's.
    pub fn all(services: &[&str]) -> Vec<NamedMetric> {
        let mut all: Vec<NamedMetric> = METRICS.iter().map(NamedMetric::of_run).collect();
        if services.len() > 1 {
            for service in services {
                all.extend(
                    SERVICE_METRICS
                        .iter()
                        .map(|metric| NamedMetric::of_service(metric, service)),
                );
            }
        }
        all
    }

    /// The metric called `name` in a run whose services are `services` and operations
    /// `operations` (their names, in the scenario's order); the error says what would be valid,
    /// with the nearest spelling of the metric, of the service and of the operation.
    pub fn resolve(
        name: &str,
        services: &[ServiceShape],
        operations: &[&str],
    ) -> Result<NamedMetric, String> {
        let names: Vec<&str> = services.iter().map(|service| service.name).collect();
        let fleets: Vec<String> = services
            .iter()
            .filter(|service| service.instances > 1)
            .map(|service| format!("{} ({} instances)", service.name, service.instances))
            .collect();
        let fleets = if fleets.is_empty() {
            "the scenario has no fleet (a service with fleet = { instances = N })".to_string()
        } else {
            format!("the scenario's fleets: {}", fleets.join(", "))
        };
        let unknown = |service: &str, shown: &dyn Fn(&str) -> String| {
            let hint = did_you_mean(service, names.iter().copied())
                .map(|near| format!(" (did you mean `{}`?)", shown(near)))
                .unwrap_or_default();
            format!(
                "`{name}`: the scenario has no service `{service}`{hint}; its services: {}",
                names.join(", ")
            )
        };
        let find = |service: &str| services.iter().find(|shape| shape.name == service);
        match parse(name)? {
            Parsed::Run(metric) => Ok(NamedMetric::of_run(metric)),
            Parsed::Service(metric, service) => {
                let Some(shape) = find(service) else {
                    // `queued@api#0`: a metric of the whole service at an instance.
                    if let Some((fleet, _)) = service.rsplit_once(INSTANCE)
                        && find(fleet).is_some()
                    {
                        return Err(format!(
                            "`{name}`: `{}` is a metric of the whole service ({}{AT}{fleet}), not of an instance; an instance's metrics: {}",
                            metric.name,
                            metric.name,
                            instance_names().collect::<Vec<_>>().join(", ")
                        ));
                    }
                    return Err(unknown(service, &|near| {
                        format!("{}{AT}{near}", metric.name)
                    }));
                };
                if services.len() < 2 {
                    let instance = if shape.instances > 1 && instance_metric(metric.name).is_some()
                    {
                        format!(
                            "; for one instance of its fleet, write {}{AT}{service}{INSTANCE}K, K from 0 to {}",
                            metric.name,
                            shape.instances - 1
                        )
                    } else {
                        String::new()
                    };
                    return Err(format!(
                        "`{name}`: a service's metrics (METRIC{AT}SERVICE) are those of a topology of two services or more; this scenario has one, whose numbers are the run's own metrics (`{}` and the others in summary.csv){instance}",
                        metric.name
                    ));
                }
                Ok(NamedMetric::of_service(metric, service))
            }
            Parsed::Fleet(metric, service) => {
                let Some(shape) = find(service) else {
                    return Err(unknown(service, &|near| {
                        format!("{}{AT}{near}", metric.name)
                    }));
                };
                if shape.instances < 2 {
                    return Err(format!(
                        "`{name}`: {service} is not a fleet (it runs as one instance, which is sent every request), and `{}` is a fleet's metric; {fleets}",
                        metric.name
                    ));
                }
                Ok(NamedMetric::of_service(metric, service))
            }
            Parsed::Instance(metric, service, index) => {
                let Some(shape) = find(service) else {
                    return Err(unknown(service, &|near| {
                        format!("{}{AT}{near}{INSTANCE}{index}", metric.name)
                    }));
                };
                if shape.instances < 2 {
                    return Err(format!(
                        "`{name}`: {service} is not a fleet (it runs as one instance), so it has no instances to name; {fleets}"
                    ));
                }
                if index as u64 >= shape.instances {
                    return Err(format!(
                        "`{name}`: {service} has {} instances, {INSTANCE}0 to {INSTANCE}{}; write {}{AT}{service}{INSTANCE}K with K from 0 to {}",
                        shape.instances,
                        shape.instances - 1,
                        metric.name,
                        shape.instances - 1
                    ));
                }
                Ok(NamedMetric::of_instance(metric, service, index))
            }
            Parsed::Operation(metric, operation) => {
                if operations.len() < 2 {
                    return Err(format!(
                        "`{name}`: an operation's metrics (METRIC{OPERATION}OPERATION) are those of a scenario of two [[clients.operations]] or more; this scenario has one ({}), whose numbers are the run's own metrics (`{}` and the others in summary.csv)",
                        operations.join(", "),
                        metric.name
                    ));
                }
                if !operations.contains(&operation) {
                    // `amplification:db`: a service's metric, `:` for `@`.
                    let near = did_you_mean(operation, operations.iter().copied())
                        .map(|near| format!("{}{OPERATION}{near}", metric.name))
                        .or_else(|| {
                            (names.contains(&operation) && service_metric(metric.name).is_some())
                                .then(|| format!("{}{AT}{operation}", metric.name))
                        });
                    let hint = near
                        .map(|near| format!(" (did you mean `{near}`?)"))
                        .unwrap_or_default();
                    return Err(format!(
                        "`{name}`: the scenario has no operation `{operation}`{hint}; its operations: {}",
                        operations.join(", ")
                    ));
                }
                Ok(NamedMetric::of_operation(metric, operation))
            }
        }
    }

    /// Its value in a run: NaN where undefined, infinity for a recovery that never came. A
    /// service or an instance the run does not have (which [`NamedMetric::resolve`] refuses) is
    /// undefined.
    pub fn value(&self, summary: &Summary, services: &[ServiceSummary]) -> f64 {
        let find = |name: &str| services.iter().find(|service| service.name == name);
        match &self.source {
            Source::Run(metric) => (metric.value)(summary),
            Source::Service(metric, name) => find(name).map_or(f64::NAN, metric.value),
            Source::Instance(metric, name, index) => find(name)
                .and_then(|service| service.instances.get(*index))
                .map_or(f64::NAN, metric.value),
            Source::Operation(metric, name) => summary
                .by_operation
                .iter()
                .find(|operation| operation.name == *name)
                .map_or(f64::NAN, metric.value),
        }
    }

    /// The service, for a service's, a fleet's or an instance's metric.
    pub fn service(&self) -> Option<&str> {
        match &self.source {
            Source::Run(_) | Source::Operation(..) => None,
            Source::Service(_, service) | Source::Instance(_, service, _) => Some(service),
        }
    }

    /// Whether it is a fleet's, an instance's, an intent's or an operation's metric, which a
    /// sweep records only when its requirements or its objective name it (they are not among
    /// [`NamedMetric::all`]).
    pub fn only_when_asked(&self) -> bool {
        match &self.source {
            Source::Run(metric) => intent_metric(metric.name).is_some(),
            Source::Service(metric, _) => fleet_metric(metric.name).is_some(),
            Source::Instance(..) | Source::Operation(..) => true,
        }
    }

    /// Its value in a run as `results.csv` writes it: [`NamedMetric::format`] of its value,
    /// with `unhealthy before` for the `recovery_s` of a run unhealthy before its incident.
    pub fn text(&self, summary: &Summary, services: &[ServiceSummary]) -> String {
        match &self.source {
            Source::Run(metric) => super::format_summary_metric(metric, summary),
            _ => self.format(self.value(summary, services)),
        }
    }

    /// `value` as `results.csv` writes it ([`format_value`]).
    pub fn format(&self, value: f64) -> String {
        format_value(self.unit, value)
    }

    /// Its name as a part of a file name (a sweep's `heatmap-<this>.png`): safe on every file
    /// system and in a relative URL, and one name for one metric. `:`, `@` and `#` are none of
    /// that (`heatmap-success_rate:pay.png` is not a valid Windows file name, and a browser
    /// reads `heatmap-success_rate:pay.png` as a URL of the scheme `heatmap-success_rate`), and
    /// an operation's name is any text (`GET /users`), so the name is written in lower-case
    /// letters, digits, `_`, `-`, `.` and `~` alone:
    ///
    /// - a run's metric as it is (`success_rate`: a metric's own name is lower-case letters,
    ///   digits and `_`);
    /// - a service's, a fleet's or an instance's with `.at-SERVICE` after it, then
    ///   `.instance-K` (`amplification.at-db`, `refused.at-api.instance-0`);
    /// - an operation's with `.op-OPERATION` after it (`success_rate.op-pay`);
    ///
    /// the service's and the operation's names with an upper-case letter written `~` and the
    /// letter in lower case (`PlaceOrder` is `~place~order`), and every other byte but `a`-`z`,
    /// `0`-`9`, `_` and `-` written `~~` and its two hex digits (`GET /users` is
    /// `~g~e~t~~20~~2fusers`). Only an escape writes `~` and only a separator `.`, so two
    /// metrics never share a file, not even where the file system ignores case. A name longer
    /// than [`MAX_FILE_PART`] bytes so written keeps its first escapes whole and ends in
    /// `.hash-` and 16 hex digits of the FNV-1a hash of the metric's name (most file systems
    /// take names of 255 bytes at most).
    pub fn in_file_name(&self) -> String {
        let (metric, place) = match &self.source {
            Source::Run(metric) => (metric.name, String::new()),
            Source::Service(metric, service) => {
                (metric.name, format!(".at-{}", file_escaped(service)))
            }
            Source::Instance(metric, service, index) => (
                metric.name,
                format!(".at-{}.instance-{index}", file_escaped(service)),
            ),
            Source::Operation(metric, operation) => {
                (metric.name, format!(".op-{}", file_escaped(operation)))
            }
        };
        let whole = format!("{metric}{place}");
        if whole.len() <= MAX_FILE_PART {
            return whole;
        }
        let suffix = format!(".hash-{:016x}", fnv1a(&self.name));
        // Whole escapes only: `~x` is two bytes, `~~xx` four.
        let bytes = whole.as_bytes();
        let budget = MAX_FILE_PART - suffix.len();
        let mut cut = 0;
        loop {
            let len = match (bytes[cut], bytes.get(cut + 1)) {
                (b'~', Some(b'~')) => 4,
                (b'~', _) => 2,
                _ => 1,
            };
            if cut + len > budget {
                break;
            }
            cut += len;
        }
        format!("{}{suffix}", &whole[..cut])
    }

    /// What it means: the table's meaning, for a service's metric at which service.
    pub fn meaning(&self) -> String {
        match &self.source {
            Source::Run(metric) => metric.meaning.to_string(),
            Source::Service(metric, service) => {
                format!("at service {service}: {}", metric.meaning)
            }
            Source::Instance(metric, service, index) => {
                format!(
                    "at instance {index} of service {service}: {}",
                    metric.meaning
                )
            }
            Source::Operation(metric, operation) => {
                format!("of operation {operation}: {}", metric.of_run().meaning)
            }
        }
    }
}

/// The longest [`NamedMetric::in_file_name`]: with `heatmap-` and `.png` a file name of 172
/// bytes, below the 255 most file systems take.
pub const MAX_FILE_PART: usize = 160;

/// The 64-bit FNV-1a hash of `text` (Fowler, Noll and Vo): the same text, the same hash, on
/// every machine.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `name` as [`NamedMetric::in_file_name`] writes it: `a`-`z`, `0`-`9`, `_` and `-` as they
/// are, an upper-case letter `~` and the letter in lower case, any other byte `~~` and its two
/// lower-case hex digits.
fn file_escaped(name: &str) -> String {
    let mut escaped = String::with_capacity(name.len());
    for byte in name.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-' {
            escaped.push(char::from(byte));
        } else if byte.is_ascii_uppercase() {
            escaped.push('~');
            escaped.push(char::from(byte.to_ascii_lowercase()));
        } else {
            escaped.push_str(&format!("~~{byte:02x}"));
        }
    }
    escaped
}

/// The service metric called `name`, if there is one.
fn service_metric(name: &str) -> Option<&'static Metric<ServiceSummary>> {
    SERVICE_METRICS.iter().find(|metric| metric.name == name)
}

/// The fleet metric called `name`, if there is one.
fn fleet_metric(name: &str) -> Option<&'static Metric<ServiceSummary>> {
    FLEET_METRICS.iter().find(|metric| metric.name == name)
}

/// The instance metric called `name`, if there is one.
fn instance_metric(name: &str) -> Option<&'static Metric<InstanceTotals>> {
    INSTANCE_METRICS.iter().find(|metric| metric.name == name)
}

/// The names of an operation's metrics, in order.
fn operation_names() -> impl Iterator<Item = &'static str> {
    OPERATION_METRICS.iter().map(|metric| metric.name)
}

/// The names of an instance's metrics, in order.
fn instance_names() -> impl Iterator<Item = &'static str> {
    INSTANCE_METRICS.iter().map(|metric| metric.name)
}

/// What can be checked of a metric's name without the scenario: a run's metric, a service's
/// or a fleet's metric followed by `@` and a service's name, or an instance's followed by `@`,
/// a service's name, `#` and an index, or an operation's followed by `:` and an operation's
/// name (the service, the index and the operation [`NamedMetric::resolve`] checks). The error
/// suggests the nearest spelling: `amplification@db` for
/// `amplification_db`.
pub fn check_name(name: &str) -> Result<(), String> {
    parse(name).map(|_| ())
}

/// Reads `name` as far as [`check_name`] checks it.
fn parse(name: &str) -> Result<Parsed<'_>, String> {
    let service_names = || SERVICE_METRICS.iter().map(|metric| metric.name);
    let fleet_names = || FLEET_METRICS.iter().map(|metric| metric.name);
    let of_any_service = || {
        let mut names: Vec<&str> = service_names().chain(fleet_names()).collect();
        names.extend(instance_names().filter(|name| service_metric(name).is_none()));
        names
    };
    let per_instance = format!(
        "for instance K (from 0) of a fleet METRIC{AT}SERVICE{INSTANCE}K, METRIC one of {}",
        instance_names().collect::<Vec<_>>().join(", ")
    );
    let per_operation = format!(
        "for one operation of a scenario of two or more METRIC{OPERATION}OPERATION, METRIC one of {}",
        operation_names().collect::<Vec<_>>().join(", ")
    );
    // Before `@`: an operation's name may hold one.
    if let Some((metric_name, operation)) = name
        .split_once(OPERATION)
        .filter(|(metric_name, _)| !metric_name.contains(AT))
    {
        if operation.is_empty() {
            return Err(format!(
                "`{name}` names no operation; write {metric_name}{OPERATION}OPERATION, with the operation's name"
            ));
        }
        if let Some(metric) = operation_metric(metric_name) {
            return Ok(Parsed::Operation(metric, operation));
        }
        if metric(metric_name)
            .or_else(|| intent_metric(metric_name))
            .is_some()
        {
            return Err(format!(
                "`{name}`: `{metric_name}` is a metric of the whole run, not of one operation; {per_operation}"
            ));
        }
        // `rejected_overload:db`: a service's metric, `:` for `@`.
        let near = if service_metric(metric_name).is_some() || fleet_metric(metric_name).is_some() {
            Some(format!("{metric_name}{AT}{operation}"))
        } else {
            did_you_mean(metric_name, operation_names())
                .map(|near| format!("{near}{OPERATION}{operation}"))
        };
        let hint = near
            .map(|near| format!(" (did you mean `{near}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "unknown operation metric `{metric_name}` in `{name}`{hint}; {per_operation}"
        ));
    }
    if let Some((metric_name, service)) = name.split_once(AT) {
        if service.is_empty() {
            return Err(format!(
                "`{name}` names no service; write {metric_name}{AT}SERVICE, with the service's name"
            ));
        }
        if let Some(metric) = fleet_metric(metric_name) {
            return Ok(Parsed::Fleet(metric, service));
        }
        if let Some(metric) = instance_metric(metric_name) {
            if let Some((fleet, index)) = service.rsplit_once(INSTANCE) {
                let parsed = index
                    .parse::<usize>()
                    .ok()
                    .filter(|parsed| parsed.to_string() == index);
                let Some(index) = parsed.filter(|_| !fleet.is_empty()) else {
                    return Err(format!(
                        "`{name}`: an instance is named {metric_name}{AT}SERVICE{INSTANCE}K, with the fleet's name and the instance's index K from 0 ({metric_name}{AT}api{INSTANCE}0)"
                    ));
                };
                return Ok(Parsed::Instance(metric, fleet, index));
            }
            if service_metric(metric_name).is_none() {
                return Err(format!(
                    "`{name}` is a metric of each instance of a fleet: write {metric_name}{AT}{service}{INSTANCE}K, K the instance from 0"
                ));
            }
        }
        if let Some(metric) = service_metric(metric_name) {
            return Ok(Parsed::Service(metric, service));
        }
        let hint = did_you_mean(metric_name, of_any_service())
            .map(|near| format!(" (did you mean `{near}{AT}{service}`?)"))
            .unwrap_or_default();
        return Err(format!(
            "unknown service metric `{metric_name}` in `{name}`{hint}; a service's metrics: {}; a fleet's: {}; {per_instance}",
            service_names().collect::<Vec<_>>().join(", "),
            fleet_names().collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(metric) = metric(name).or_else(|| intent_metric(name)) {
        return Ok(Parsed::Run(metric));
    }
    let valid = format!(
        "valid: {}; of the users' intents {}; and for one service of a topology METRIC{AT}SERVICE, METRIC one of {}; for a fleet METRIC{AT}SERVICE, METRIC one of {}; {per_instance}; {per_operation}",
        METRICS
            .iter()
            .map(|metric| metric.name)
            .collect::<Vec<_>>()
            .join(", "),
        INTENT_METRICS
            .iter()
            .map(|metric| metric.name)
            .collect::<Vec<_>>()
            .join(", "),
        service_names().collect::<Vec<_>>().join(", "),
        fleet_names().collect::<Vec<_>>().join(", ")
    );
    if service_metric(name).is_some() {
        return Err(format!(
            "`{name}` is a metric of each service: write {name}{AT}SERVICE, with the service's name; {valid}"
        ));
    }
    if fleet_metric(name).is_some() {
        return Err(format!(
            "`{name}` is a metric of each fleet: write {name}{AT}SERVICE, with the fleet's name; {valid}"
        ));
    }
    if instance_metric(name).is_some() {
        return Err(format!(
            "`{name}` is a metric of each instance of a fleet: write {name}{AT}SERVICE{INSTANCE}K, with the fleet's name and K the instance from 0; {valid}"
        ));
    }
    // `amplification_db`: a service's metric, a lookalike of `@` and more.
    let lookalike = service_names()
        .chain(fleet_names())
        .find_map(|metric_name| {
            let rest = name.strip_prefix(metric_name)?;
            let service = rest.strip_prefix(LOOKALIKES)?;
            (!service.is_empty()).then(|| format!("{metric_name}{AT}{service}"))
        });
    let hint = lookalike
        .or_else(|| {
            let names = METRICS
                .iter()
                .chain(&INTENT_METRICS)
                .map(|metric| metric.name);
            did_you_mean(name, names).map(String::from)
        })
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    Err(format!("unknown metric `{name}`{hint}; {valid}"))
}

/// Which way the metric called `name` is better, checked as far as [`check_name`] checks it;
/// `None` for a name that is no metric.
pub fn direction(name: &str) -> Option<Better> {
    parse(name).ok().map(|parsed| parsed.properties().1)
}

/// The values the metric called `name` takes in a run (a service's whatever the service), or
/// `None` if it names no metric.
pub fn domain(name: &str) -> Option<Domain> {
    parse(name).ok().map(|parsed| parsed.properties().0)
}

/// The value of the metric called `name` in a run, or `None` if it names no metric of it.
pub fn metric_value(name: &str, summary: &Summary, services: &[ServiceSummary]) -> Option<f64> {
    let shapes: Vec<ServiceShape> = services.iter().map(ServiceShape::of_summary).collect();
    let operations: Vec<&str> = summary
        .by_operation
        .iter()
        .map(|operation| operation.name.as_str())
        .collect();
    NamedMetric::resolve(name, &shapes, &operations)
        .ok()
        .map(|metric| metric.value(summary, services))
}

/// The metrics a claim may restrict to a time window, computed from the buckets in it.
pub const WINDOW_METRICS: [(&str, Better); 6] = [
    ("goodput_rps", Better::Higher),
    ("failed_rps", Better::Lower),
    ("success_rate", Better::Higher),
    ("attempts_rps", Better::Lower),
    ("peak_attempts_rps", Better::Lower),
    ("amplification", Better::Lower),
];

/// The direction of `name`, if it is a metric a claim can use (with a window or without; a
/// service's, `amplification@db`, over the whole run only).
pub fn claim_direction(name: &str, windowed: bool) -> Option<Better> {
    if windowed {
        WINDOW_METRICS
            .iter()
            .find(|(metric, _)| *metric == name)
            .map(|&(_, better)| better)
    } else {
        direction(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: [&str; 3] = ["edge", "api", "db"];

    /// `names` as services of one instance, but `fleet`, of `instances`.
    fn shapes<'a>(names: &[&'a str], fleet: (&str, u64)) -> Vec<ServiceShape<'a>> {
        names
            .iter()
            .map(|&name| ServiceShape {
                name,
                instances: if name == fleet.0 { fleet.1 } else { 1 },
            })
            .collect()
    }

    fn resolve(name: &str, services: &[&str]) -> Result<NamedMetric, String> {
        NamedMetric::resolve(name, &shapes(services, ("", 1)), &["read"])
    }

    fn refused(name: &str, services: &[&str]) -> String {
        resolve(name, services).expect_err(name)
    }

    /// Every service's metrics follow the run's in a topology, service by service in the
    /// scenario's order, with the direction and unit of the table; a run of one service has the
    /// run's metrics alone, so a sweep of a scenario without a topology keeps its columns.
    #[test]
    fn a_topology_adds_each_services_metrics_after_the_runs() {
        let all = NamedMetric::all(&CHAIN);
        assert_eq!(all.len(), METRICS.len() + 3 * SERVICE_METRICS.len());
        let start = METRICS.len();
        assert_eq!(all[start].name, "amplification@edge");
        assert_eq!(all[start + SERVICE_METRICS.len()].name, "amplification@api");
        assert_eq!(all.last().unwrap().name, "rejection_work_s@db");
        let queue = resolve("peak_queue_len@db", &CHAIN).unwrap();
        assert_eq!(
            (queue.unit, queue.better, queue.service()),
            (Unit::Count, Better::Lower, Some("db"))
        );
        assert!(queue.meaning().starts_with("at service db: The longest"));
        assert_eq!(NamedMetric::all(&["upstream"]).len(), METRICS.len());
    }

    /// A misspelt service or metric gets the nearest valid name, with the rest of the name
    /// kept, and a wrong service lists the scenario's; `amplification_db` is read as the
    /// service's metric it looks like; a service's metric without a service says to name one;
    /// and a scenario of one service has no service metrics.
    #[test]
    fn names_are_checked_with_did_you_mean_for_the_metric_and_the_service() {
        assert_eq!(
            refused("amplification@dbb", &CHAIN),
            "`amplification@dbb`: the scenario has no service `dbb` (did you mean `amplification@db`?); its services: edge, api, db"
        );
        assert!(
            refused("amplificaton@db", &CHAIN).starts_with(
                "unknown service metric `amplificaton` in `amplificaton@db` (did you mean `amplification@db`?); a service's metrics: amplification, requests, "
            )
        );
        assert!(
            refused("amplification_db", &CHAIN)
                .starts_with("unknown metric `amplification_db` (did you mean `amplification@db`?); valid: operations, ")
        );
        assert!(refused("sucess_rate", &CHAIN).contains("(did you mean `success_rate`?)"));
        assert!(
            refused("shed", &CHAIN)
                .starts_with("`shed` is a metric of each service: write shed@SERVICE")
        );
        assert!(refused("shed@", &CHAIN).starts_with("`shed@` names no service"));
        assert!(
            refused("shed@upstream", &["upstream"])
                .contains("are those of a topology of two services or more")
        );
        assert_eq!(direction("served@db"), Some(Better::Neither));
        assert_eq!(direction("success_rate"), Some(Better::Higher));
        assert_eq!(direction("nonsense@db"), None);
    }

    /// An instance is named `METRIC@SERVICE#K` and a fleet's balance `busiest_share@SERVICE`,
    /// in a scenario of one service too; each has its table's direction (`requests` of an
    /// instance has none, though a service's is better lower: an instance's share is its
    /// balancer's doing). An index past the last instance, an instance of a service that is not
    /// a fleet, a fleet's metric at such a service, a whole service's metric at an instance,
    /// an instance's metric without an index and an index that is no number are refused with
    /// what would be valid.
    #[test]
    fn instances_and_fleets_are_named_and_checked_against_the_fleet() {
        let upstream = shapes(&["upstream"], ("upstream", 10));
        let refused_upstream =
            |name: &str| NamedMetric::resolve(name, &upstream, &[]).expect_err(name);
        let dead = NamedMetric::resolve("refused@upstream#0", &upstream, &[]).unwrap();
        assert_eq!(
            (dead.unit, dead.better, dead.service()),
            (Unit::Count, Better::Lower, Some("upstream"))
        );
        assert!(
            dead.meaning()
                .starts_with("at instance 0 of service upstream: ")
        );
        let share = NamedMetric::resolve("busiest_share@upstream", &upstream, &[]).unwrap();
        assert_eq!((share.domain, share.better), (Domain::Share, Better::Lower));
        assert!(share.only_when_asked() && dead.only_when_asked());
        assert!(!resolve("requests@db", &CHAIN).unwrap().only_when_asked());
        assert_eq!(direction("requests@api#3"), Some(Better::Neither));
        assert_eq!(direction("requests@api"), Some(Better::Lower));
        assert_eq!(domain("ejected_s@api#0"), Some(Domain::NonNegative));
        assert_eq!(
            refused_upstream("refused@upstream#10"),
            "`refused@upstream#10`: upstream has 10 instances, #0 to #9; write refused@upstream#K with K from 0 to 9"
        );
        assert_eq!(
            refused("refused@db#0", &CHAIN),
            "`refused@db#0`: db is not a fleet (it runs as one instance), so it has no instances to name; the scenario has no fleet (a service with fleet = { instances = N })"
        );
        let chain = shapes(&CHAIN, ("api", 4));
        assert_eq!(
            NamedMetric::resolve("busiest_share@db", &chain, &[]).unwrap_err(),
            "`busiest_share@db`: db is not a fleet (it runs as one instance, which is sent every request), and `busiest_share` is a fleet's metric; the scenario's fleets: api (4 instances)"
        );
        assert_eq!(
            NamedMetric::resolve("refused@apx#1", &chain, &[]).unwrap_err(),
            "`refused@apx#1`: the scenario has no service `apx` (did you mean `refused@api#1`?); its services: edge, api, db"
        );
        assert!(
            NamedMetric::resolve("queued@api#1", &chain, &[])
                .unwrap_err()
                .starts_with("`queued@api#1`: `queued` is a metric of the whole service (queued@api), not of an instance; an instance's metrics: requests, served, refused, crashes, down_s, ejected_s")
        );
        assert!(refused_upstream("requests@upstream").ends_with(
            "; for one instance of its fleet, write requests@upstream#K, K from 0 to 9"
        ));
        assert!(refused_upstream("refused@upstream").starts_with(
            "`refused@upstream` is a metric of each instance of a fleet: write refused@upstream#K"
        ));
        for bad in ["refused@upstream#x", "refused@upstream#01", "refused@#0"] {
            assert!(
                refused_upstream(bad).contains("an instance is named refused@SERVICE#K"),
                "{bad}"
            );
        }
        assert!(
            refused_upstream("busiest_share").starts_with(
                "`busiest_share` is a metric of each fleet: write busiest_share@SERVICE"
            )
        );
        assert!(
            refused_upstream("busiest_shar@upstream")
                .contains("(did you mean `busiest_share@upstream`?)")
        );
        assert!(
            refused_upstream("refsued@upstream#0").contains("(did you mean `refused@upstream#0`?)")
        );
    }

    /// An operation's metric is named `METRIC:OPERATION`, has the unit, values, direction and
    /// meaning of the run's metric of that name, and is recorded by a sweep only when asked;
    /// one of the whole run, or a service's written with `:`, is refused with what to write.
    #[test]
    fn operations_are_named_with_a_colon_and_take_the_runs_properties() {
        let operations = ["pay", "balance"];
        let services = shapes(&CHAIN, ("", 1));
        for metric in &OPERATION_METRICS {
            let named =
                NamedMetric::resolve(&format!("{}:pay", metric.name), &services, &operations)
                    .unwrap();
            let run = metric.of_run();
            assert_eq!(
                (named.unit, named.domain, named.better),
                (run.unit, run.domain, run.better)
            );
            assert!(named.only_when_asked() && named.service().is_none());
        }
        let rate = NamedMetric::resolve("success_rate:balance", &services, &operations).unwrap();
        assert!(
            rate.meaning()
                .starts_with("of operation balance: Operations that succeeded")
        );
        assert_eq!(direction("p99_ms:pay"), Some(Better::Lower));
        assert_eq!(domain("success_rate:pay"), Some(Domain::Share));
        assert!(
            check_name("success_rate:")
                .unwrap_err()
                .starts_with("`success_rate:` names no operation")
        );
        assert!(
            check_name("recovery_s:pay")
                .unwrap_err()
                .starts_with("`recovery_s:pay`: `recovery_s` is a metric of the whole run, not of one operation; for one operation of a scenario of two or more METRIC:OPERATION, METRIC one of operations, succeeded, ")
        );
        assert!(
            check_name("rejected_overload:db")
                .unwrap_err()
                .contains("(did you mean `rejected_overload@db`?)")
        );
    }

    /// The share of the busiest instance: 1/N balanced, 1 all on one, 1/N for a fleet sent
    /// nothing, 1 outside a fleet (its one instance is sent everything).
    #[test]
    fn the_busiest_share_is_the_largest_instances_share_of_the_requests() {
        let instance = |first_attempts: u64| InstanceTotals {
            counts: crate::vocabulary::counts::ServiceBucket {
                first_attempts,
                ..Default::default()
            },
            ..Default::default()
        };
        let service = |requests: &[u64]| ServiceSummary {
            name: "api".into(),
            amplification: 1.0,
            peak_requests_rps: 0.0,
            peak_queue_len: 0,
            wasted_work_s: 0.0,
            totals: Default::default(),
            instances: requests.iter().map(|&count| instance(count)).collect(),
        };
        let share = |requests: &[u64]| (FLEET_METRICS[0].value)(&service(requests));
        assert_eq!(share(&[25, 25, 25, 25]), 0.25);
        assert_eq!(share(&[10, 30, 60]), 0.6);
        assert_eq!(share(&[0, 0, 0, 0]), 0.25);
        assert_eq!(share(&[]), 1.0);
    }

    /// A metric's name in a file name: a run's as it is; `@`, `#` and `:` written as
    /// separators (`.at-`, `.instance-`, `.op-`); an operation's name of any text in lower-case
    /// letters, digits, `_` and `-` with `~` escapes (`P` is `~p`, `/` is `~~2f`, byte 0x2f),
    /// UTF-8 byte by byte (`é` is 0xc3 0xa9). Never a character a file system or a URL reads
    /// otherwise, and never one name for two metrics, in any case: `Pay` and `pay`, `a b` and
    /// `a_b`, an operation and a service of one name, all differ.
    #[test]
    fn a_metric_in_a_file_name_is_safe_and_its_own() {
        let operations = [
            "pay",
            "Pay",
            "GET /users",
            "a b",
            "a_b",
            "payé",
            "db",
            "x.op-y",
        ];
        let services = [
            ServiceShape {
                name: "db",
                instances: 1,
            },
            ServiceShape {
                name: "api",
                instances: 3,
            },
            ServiceShape {
                name: "API",
                instances: 1,
            },
        ];
        let file = |name: &str| {
            NamedMetric::resolve(name, &services, &operations)
                .unwrap_or_else(|error| panic!("{error}"))
                .in_file_name()
        };
        assert_eq!(file("p99_ms"), "p99_ms");
        assert_eq!(file("success_rate:pay"), "success_rate.op-pay");
        assert_eq!(file("success_rate:Pay"), "success_rate.op-~pay");
        assert_eq!(
            file("success_rate:GET /users"),
            "success_rate.op-~g~e~t~~20~~2fusers"
        );
        assert_eq!(file("p99_ms:payé"), "p99_ms.op-pay~~c3~~a9");
        assert_eq!(file("amplification@db"), "amplification.at-db");
        assert_eq!(file("amplification@API"), "amplification.at-~a~p~i");
        assert_eq!(file("refused@api#2"), "refused.at-api.instance-2");
        let names = [
            "p99_ms",
            "success_rate",
            "success_rate:pay",
            "success_rate:Pay",
            "success_rate:GET /users",
            "success_rate:a b",
            "success_rate:a_b",
            "success_rate:x.op-y",
            "amplification:db",
            "amplification@db",
            "amplification@api",
            "amplification@API",
            "busiest_share@api",
            "served@api#0",
            "served@api#1",
            "served@api",
        ];
        let mut seen = std::collections::BTreeSet::new();
        for name in names {
            let written = file(name);
            assert!(
                written.bytes().all(|byte| byte.is_ascii_lowercase()
                    || byte.is_ascii_digit()
                    || b"_-.~".contains(&byte)),
                "{name}: {written}"
            );
            // Lower case already, so a file system that ignores case sees them apart too.
            assert!(seen.insert(written.clone()), "{name}: {written} twice");
        }
    }

    /// A name longer than [`MAX_FILE_PART`] written is cut, whole escapes only, and ends in
    /// `.hash-` and the FNV-1a hash of the metric's name: two names that share their first 210
    /// characters are still apart. `Ab/` is written `~ab~~2f`, 7 bytes; after `success_rate.op-`
    /// (16 bytes) and before the 22 of `.hash-` and the hash, 122 bytes are left: 17 of them
    /// (119) and `~a` and `b`, the whole 160. After `mean_ms.op-` (11) 127 are: 18 (126), and
    /// `~a` would split, so the name ends there, 159 bytes. FNV-1a's published values:
    /// 0xaf63dc4c8601ec8c for `a`, 0x85944171f73967e8 for `foobar`.
    #[test]
    fn a_long_name_in_a_file_name_is_cut_and_hashed() {
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
        let long = |end: &str| format!("{}{end}", "Ab/".repeat(70));
        let (first, second) = (long("x"), long("y"));
        let operations = [first.as_str(), second.as_str()];
        let file = |metric: &str, operation: &str| {
            NamedMetric::resolve(&format!("{metric}:{operation}"), &[], &operations)
                .unwrap()
                .in_file_name()
        };
        let escaped = "~ab~~2f";
        for operation in [&first, &second] {
            assert_eq!(
                file("success_rate", operation),
                format!(
                    "success_rate.op-{}~ab.hash-{:016x}",
                    escaped.repeat(17),
                    fnv1a(&format!("success_rate:{operation}"))
                )
            );
            let cut = file("mean_ms", operation);
            assert_eq!(
                cut,
                format!(
                    "mean_ms.op-{}.hash-{:016x}",
                    escaped.repeat(18),
                    fnv1a(&format!("mean_ms:{operation}"))
                )
            );
            assert_eq!(cut.len(), 159);
        }
        assert_ne!(file("success_rate", &first), file("success_rate", &second));
    }
}
