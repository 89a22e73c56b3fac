//! Metric names as sweeps, requirements, claims, heatmaps and the Pareto front write them: one
//! of the run's ([`METRICS`]: `success_rate`) or one of a service's ([`SERVICE_METRICS`]) at a
//! named service, `METRIC@SERVICE` (`amplification@db`).
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
//! `wasted_work_s`), and a sweep's files keep their columns.

use super::{
    Better, Domain, METRICS, Metric, SERVICE_METRICS, ServiceSummary, Summary, Unit, format_value,
    metric,
};
use crate::base::suggest::did_you_mean;

/// Between a service's metric and the service's name: `amplification@db`.
pub const AT: char = '@';

/// Characters a user might put between a service's metric and the service instead of [`AT`]
/// (`amplification_db`, `amplification.db`): a name written so gets `METRIC@SERVICE` suggested.
const LOOKALIKES: [char; 5] = ['_', '.', ':', '/', '-'];

/// Which table a named metric comes from.
#[derive(Debug, Clone)]
enum Source {
    /// The run's.
    Run(&'static Metric),
    /// A service's, at the service of this name.
    Service(&'static Metric<ServiceSummary>, String),
}

/// A metric a sweep, a requirement or a claim names, checked against the scenario: its name as
/// written, how it is written, its values and which way it is better.
#[derive(Debug, Clone)]
pub struct NamedMetric {
    /// As written: `success_rate`, `amplification@db`.
    pub name: String,
    /// How it is written.
    pub unit: Unit,
    /// The values it takes in a run.
    pub domain: Domain,
    /// Which way is better.
    pub better: Better,
    source: Source,
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

    /// A service's metric at `service`.
    fn of_service(metric: &'static Metric<ServiceSummary>, service: &str) -> NamedMetric {
        NamedMetric {
            name: format!("{}{AT}{service}", metric.name),
            unit: metric.unit,
            domain: metric.domain,
            better: metric.better,
            source: Source::Service(metric, service.to_string()),
        }
    }

    /// Every metric of a run whose services are `services` (in the scenario's order), in the
    /// order of a sweep's `results.csv`: the run's, then, with two services or more, each
    /// service's, service by service.
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

    /// The metric called `name` in a run whose services are `services`; the error says what
    /// would be valid, with the nearest spelling of the metric and of the service.
    pub fn resolve(name: &str, services: &[&str]) -> Result<NamedMetric, String> {
        check_name(name)?;
        let Some((metric_name, service)) = name.split_once(AT) else {
            return Ok(NamedMetric::of_run(metric(name).expect("checked")));
        };
        let metric = service_metric(metric_name).expect("checked");
        if services.len() < 2 {
            return Err(format!(
                "`{name}`: a service's metrics (METRIC{AT}SERVICE) are those of a topology of two services or more; this scenario has one, whose numbers are the run's own metrics (`{metric_name}` and the others in summary.csv)"
            ));
        }
        if !services.contains(&service) {
            let hint = did_you_mean(service, services.iter().copied())
                .map(|near| format!(" (did you mean `{metric_name}{AT}{near}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "`{name}`: the scenario has no service `{service}`{hint}; its services: {}",
                services.join(", ")
            ));
        }
        Ok(NamedMetric::of_service(metric, service))
    }

    /// Its value in a run: NaN where undefined, infinity for a recovery that never came. A
    /// service the run does not have (which [`NamedMetric::resolve`] refuses) is undefined.
    pub fn value(&self, summary: &Summary, services: &[ServiceSummary]) -> f64 {
        match &self.source {
            Source::Run(metric) => (metric.value)(summary),
            Source::Service(metric, name) => services
                .iter()
                .find(|service| service.name == *name)
                .map_or(f64::NAN, metric.value),
        }
    }

    /// The service, for a service's metric.
    pub fn service(&self) -> Option<&str> {
        match &self.source {
            Source::Run(_) => None,
            Source::Service(_, service) => Some(service),
        }
    }

    /// `value` as `results.csv` writes it ([`format_value`]).
    pub fn format(&self, value: f64) -> String {
        format_value(self.unit, value)
    }

    /// What it means: the table's meaning, for a service's metric at which service.
    pub fn meaning(&self) -> String {
        match &self.source {
            Source::Run(metric) => metric.meaning.to_string(),
            Source::Service(metric, service) => {
                format!("at service {service}: {}", metric.meaning)
            }
        }
    }
}

/// The service metric called `name`, if there is one.
fn service_metric(name: &str) -> Option<&'static Metric<ServiceSummary>> {
    SERVICE_METRICS.iter().find(|metric| metric.name == name)
}

/// What can be checked of a metric's name without the scenario: a run's metric, or a service's
/// metric followed by `@` and a service's name (which [`NamedMetric::resolve`] checks). The
/// error suggests the nearest spelling: `amplification@db` for `amplification_db`.
pub fn check_name(name: &str) -> Result<(), String> {
    let service_names = || SERVICE_METRICS.iter().map(|metric| metric.name);
    if let Some((metric_name, service)) = name.split_once(AT) {
        if service_metric(metric_name).is_none() {
            let hint = did_you_mean(metric_name, service_names())
                .map(|near| format!(" (did you mean `{near}{AT}{service}`?)"))
                .unwrap_or_default();
            return Err(format!(
                "unknown service metric `{metric_name}` in `{name}`{hint}; a service's metrics: {}",
                service_names().collect::<Vec<_>>().join(", ")
            ));
        }
        if service.is_empty() {
            return Err(format!(
                "`{name}` names no service; write {metric_name}{AT}SERVICE, with the service's name"
            ));
        }
        return Ok(());
    }
    if metric(name).is_some() {
        return Ok(());
    }
    let valid = format!(
        "valid: {}; and for one service of a topology METRIC{AT}SERVICE, METRIC one of {}",
        METRICS
            .iter()
            .map(|metric| metric.name)
            .collect::<Vec<_>>()
            .join(", "),
        service_names().collect::<Vec<_>>().join(", ")
    );
    if service_metric(name).is_some() {
        return Err(format!(
            "`{name}` is a metric of each service: write {name}{AT}SERVICE, with the service's name; {valid}"
        ));
    }
    // `amplification_db`: a service's metric, a lookalike of `@` and more.
    let lookalike = service_names().find_map(|metric_name| {
        let rest = name.strip_prefix(metric_name)?;
        let service = rest.strip_prefix(LOOKALIKES)?;
        (!service.is_empty()).then(|| format!("{metric_name}{AT}{service}"))
    });
    let hint = lookalike
        .or_else(|| did_you_mean(name, METRICS.iter().map(|metric| metric.name)).map(String::from))
        .map(|near| format!(" (did you mean `{near}`?)"))
        .unwrap_or_default();
    Err(format!("unknown metric `{name}`{hint}; {valid}"))
}

/// Which way the metric called `name` is better, checked as far as [`check_name`] checks it;
/// `None` for a name that is no metric.
pub fn direction(name: &str) -> Option<Better> {
    properties(name).map(|(_, better)| better)
}

/// The values the metric called `name` takes in a run (a service's whatever the service), or
/// `None` if it names no metric.
pub fn domain(name: &str) -> Option<Domain> {
    properties(name).map(|(domain, _)| domain)
}

/// The domain and direction of the metric called `name`, run's or service's.
fn properties(name: &str) -> Option<(Domain, Better)> {
    match name.split_once(AT) {
        Some((metric_name, _)) => {
            service_metric(metric_name).map(|metric| (metric.domain, metric.better))
        }
        None => metric(name).map(|metric| (metric.domain, metric.better)),
    }
}

/// The value of the metric called `name` in a run, or `None` if it names no metric of it.
pub fn metric_value(name: &str, summary: &Summary, services: &[ServiceSummary]) -> Option<f64> {
    let names: Vec<&str> = services
        .iter()
        .map(|service| service.name.as_str())
        .collect();
    NamedMetric::resolve(name, &names)
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

    fn refused(name: &str, services: &[&str]) -> String {
        NamedMetric::resolve(name, services).expect_err(name)
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
        let queue = NamedMetric::resolve("peak_queue_len@db", &CHAIN).unwrap();
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
}
