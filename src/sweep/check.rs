//! What `merge` checks in a shard beyond the shape of its files: that every row's metrics are
//! values a run can produce, and, when two shards' manifests differ, what differs.
//!
//! A shard's `results.csv` may have been edited, damaged, or written by another version of the
//! program; a value no run produces would otherwise flow silently into the means and the
//! recommendation. Each metric must be in its [`Domain`] (a [`Unit::Count`] also a whole
//! number), and the metrics of a row must satisfy `RELATIONS`: each follows from how the
//! summary is computed, and each held in every row of sweeps over the bundled scenarios and
//! over scenarios with circuit breakers, client throttling, hedging and no operations at all.
//! Relations that do not follow are not checked, even where they usually hold: a circuit
//! breaker fails operations without sending anything, so `attempts` may be below `operations`
//! and `amplification` below 1 (or 0, without operations); a percentile is read at its bin's
//! midpoint, so `p99_ms` may exceed `max_ms`, but by less than half a bin
//! ([`PERCENTILE_EXCESS`] of it), which is checked; a service that retries its own calls can commit
//! duplicates that no user attempt beyond the first sent. A topology's service columns are
//! checked the same way: each in its domain, and `SERVICE_RELATIONS` (a service's requests are
//! its first attempts, retries and status checks; its amplification, its requests over the
//! operations).

use std::fmt;

use serde_json::Value;

use crate::base::escape::{excerpt, quoted};
use crate::engine::counters::PERCENTILE_EXCESS;
use crate::vocabulary::metric::{
    Domain, METRICS, Metric, NamedMetric, SERVICE_METRICS, UNHEALTHY_BEFORE, Unit, parse_metric,
};

/// The position of metric `name` in [`METRICS`]; a name that is not there fails the build.
const fn column(name: &str) -> usize {
    position(&METRICS, name)
}

/// The position of metric `name` in [`SERVICE_METRICS`], and so in each service's block of a
/// row; a name that is not there fails the build.
const fn service_column(name: &str) -> usize {
    position(&SERVICE_METRICS, name)
}

/// The position of metric `name` in `metrics`.
const fn position<S>(metrics: &[Metric<S>], name: &str) -> usize {
    let mut index = 0;
    while index < metrics.len() {
        if same(metrics[index].name.as_bytes(), name.as_bytes()) {
            return index;
        }
        index += 1;
    }
    panic!("not a metric")
}

/// `a == b`, which a `const fn` cannot write yet.
const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut index = 0;
    while index < a.len() {
        if a[index] != b[index] {
            return false;
        }
        index += 1;
    }
    true
}

const OPERATIONS: usize = column("operations");
const SUCCEEDED: usize = column("succeeded");
const SUCCESS_RATE: usize = column("success_rate");
const ATTEMPTS: usize = column("attempts");
const STATUS_CHECKS: usize = column("status_checks");
const AMPLIFICATION: usize = column("amplification");
const UNKNOWN_RESULTS: usize = column("unknown_results");
const TIMEOUTS: usize = column("timeouts");
const MEAN_MS: usize = column("mean_ms");
const P50_MS: usize = column("p50_ms");
const P99_MS: usize = column("p99_ms");
const MAX_MS: usize = column("max_ms");
const PEAK_INCIDENT_RPS: usize = column("peak_incident_rps");
const INCIDENT_FAILED: usize = column("incident_failed");
const RECOVERY_S: usize = column("recovery_s");
const SERVICE_AMPLIFICATION: usize = service_column("amplification");
const SERVICE_REQUESTS: usize = service_column("requests");
const SERVICE_FIRST_ATTEMPTS: usize = service_column("first_attempts");
const SERVICE_RETRIES: usize = service_column("retries");
const SERVICE_STATUS_CHECKS: usize = service_column("status_checks");

/// A row's metrics as numbers, in the order of [`METRICS`]: NaN undefined, infinity `never`.
type Values = [f64; METRICS.len()];

/// Why a value is not one its metric takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    /// Empty, for a metric every run defines.
    Undefined,
    /// `never`, for a metric that is not a recovery.
    Never,
    /// Below zero.
    Negative,
    /// A count with a fraction.
    Fraction,
    /// A share above 1.
    AboveOne,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Problem::Undefined => "every run defines it",
            Problem::Never => "only a recovery can be never",
            Problem::Negative => "it is never negative",
            Problem::Fraction => "a count is a whole number",
            Problem::AboveOne => "a share is at most 1",
        })
    }
}

/// What is wrong with `value` as a value of `metric`, if anything.
fn problem(metric: &NamedMetric, value: f64) -> Option<Problem> {
    let domain = metric.domain;
    if value.is_nan() {
        let may_be_undefined = matches!(domain, Domain::NonNegativeOrUndefined | Domain::Recovery);
        (!may_be_undefined).then_some(Problem::Undefined)
    } else if value.is_infinite() {
        (domain != Domain::Recovery).then_some(Problem::Never)
    } else if value < 0.0 {
        Some(Problem::Negative)
    } else if metric.unit == Unit::Count && value.fract() != 0.0 {
        Some(Problem::Fraction)
    } else if domain == Domain::Share && value > 1.0 {
        Some(Problem::AboveOne)
    } else {
        None
    }
}

/// A relation between the metrics of one run that every run satisfies.
struct Relation {
    /// The relation, as messages state it.
    text: &'static str,
    /// The columns it reads, shown with their values when it does not hold.
    columns: &'static [usize],
    /// Whether it holds for a row's values (each already in its domain).
    holds: fn(&Values) -> bool,
}

/// `numerator / operations` as the summary computes it: 0 without operations.
fn per_operation(numerator: f64, values: &Values) -> f64 {
    if values[OPERATIONS] == 0.0 {
        0.0
    } else {
        numerator / values[OPERATIONS]
    }
}

/// Whether `written`, a value written with six decimals, is `exact` rounded.
fn written_as(written: f64, exact: f64) -> bool {
    (written - exact).abs() <= 1e-6 * exact.abs().max(1.0)
}

/// The relations every run satisfies.
const RELATIONS: [Relation; 9] = [
    // An operation ends once, and one whose outcome is unknown did not succeed.
    Relation {
        text: "succeeded + unknown_results <= operations",
        columns: &[SUCCEEDED, UNKNOWN_RESULTS, OPERATIONS],
        holds: |v| v[SUCCEEDED] + v[UNKNOWN_RESULTS] <= v[OPERATIONS],
    },
    // An operation ends once, and one that failed during the incident did not succeed.
    Relation {
        text: "succeeded + incident_failed <= operations",
        columns: &[SUCCEEDED, INCIDENT_FAILED, OPERATIONS],
        holds: |v| v[SUCCEEDED] + v[INCIDENT_FAILED] <= v[OPERATIONS],
    },
    // The summary computes these two so; they are written with six decimals.
    Relation {
        text: "success_rate = succeeded / operations (0 without operations)",
        columns: &[SUCCESS_RATE, SUCCEEDED, OPERATIONS],
        holds: |v| written_as(v[SUCCESS_RATE], per_operation(v[SUCCEEDED], v)),
    },
    Relation {
        text: "amplification = (attempts + status_checks) / operations (0 without operations)",
        columns: &[AMPLIFICATION, ATTEMPTS, STATUS_CHECKS, OPERATIONS],
        holds: |v| {
            written_as(
                v[AMPLIFICATION],
                per_operation(v[ATTEMPTS] + v[STATUS_CHECKS], v),
            )
        },
    },
    // A request the users sent, attempt or status check, times out at most once.
    Relation {
        text: "timeouts <= attempts + status_checks",
        columns: &[TIMEOUTS, ATTEMPTS, STATUS_CHECKS],
        holds: |v| v[TIMEOUTS] <= v[ATTEMPTS] + v[STATUS_CHECKS],
    },
    // Latencies are those of the operations that succeeded.
    Relation {
        text: "mean_ms, p50_ms, p99_ms and max_ms are defined exactly when succeeded > 0",
        columns: &[SUCCEEDED, MEAN_MS, P50_MS, P99_MS, MAX_MS],
        holds: |v| {
            [MEAN_MS, P50_MS, P99_MS, MAX_MS]
                .iter()
                .all(|&latency| v[latency].is_nan() == (v[SUCCEEDED] == 0.0))
        },
    },
    // Percentiles of one histogram grow with the rank; a mean is at most the largest value (give
    // or take the last of six decimals, where the mean's division may round up).
    Relation {
        text: "p50_ms <= p99_ms and mean_ms <= max_ms",
        columns: &[P50_MS, P99_MS, MEAN_MS, MAX_MS],
        holds: |v| {
            (v[P50_MS].is_nan() || v[P50_MS] <= v[P99_MS])
                && (v[MEAN_MS].is_nan() || v[MEAN_MS] <= v[MAX_MS] + 1e-6)
        },
    },
    // The slowest operation is one of those the percentiles rank, so a percentile is above it
    // by at most the half bin its midpoint adds (and the last of six decimals of each).
    Relation {
        text: "p99_ms <= max_ms (give or take the latency histogram's half bin, 0.05%)",
        columns: &[P99_MS, MAX_MS],
        holds: |v| v[P99_MS].is_nan() || v[P99_MS] <= v[MAX_MS] * (1.0 + PERCENTILE_EXCESS) + 2e-6,
    },
    // Both are undefined exactly when the scenario has no incident.
    Relation {
        text: "peak_incident_rps and recovery_s are both defined (an incident) or both empty (none)",
        columns: &[PEAK_INCIDENT_RPS, RECOVERY_S],
        holds: |v| v[PEAK_INCIDENT_RPS].is_nan() == v[RECOVERY_S].is_nan(),
    },
];

/// A relation between the metrics of one service (and the run's operations) that every run
/// satisfies.
struct ServiceRelation {
    /// The relation, as messages state it (after the service's name).
    text: &'static str,
    /// The columns it reads in the service's block, shown with their values when it does not
    /// hold (and `operations`, which every such relation may read, too).
    columns: &'static [usize],
    /// Whether it holds for a service's values (each already in its domain) and the run's
    /// operations.
    holds: fn(&[f64], f64) -> bool,
}

/// The relations every service of every run satisfies: the summary computes both so.
const SERVICE_RELATIONS: [ServiceRelation; 2] = [
    ServiceRelation {
        text: "requests = first_attempts + retries + status_checks",
        columns: &[
            SERVICE_REQUESTS,
            SERVICE_FIRST_ATTEMPTS,
            SERVICE_RETRIES,
            SERVICE_STATUS_CHECKS,
        ],
        holds: |v, _| {
            v[SERVICE_REQUESTS]
                == v[SERVICE_FIRST_ATTEMPTS] + v[SERVICE_RETRIES] + v[SERVICE_STATUS_CHECKS]
        },
    },
    ServiceRelation {
        text: "amplification = requests / operations (0 without operations)",
        columns: &[SERVICE_AMPLIFICATION, SERVICE_REQUESTS],
        holds: |v, operations| {
            let exact = if operations == 0.0 {
                0.0
            } else {
                v[SERVICE_REQUESTS] / operations
            };
            written_as(v[SERVICE_AMPLIFICATION], exact)
        },
    },
];

/// Checks one row's metrics, as `results.csv` writes them in the order of `columns` (the run's
/// [`METRICS`], then each service's [`SERVICE_METRICS`], service by service, then the fleets',
/// instances', intents' and operations' metrics the sweep asked for): each a value its metric takes, and every
/// relation between the run's and each service's. The message names the columns and their
/// values.
pub fn check_metrics(texts: &[String], columns: &[NamedMetric]) -> Result<(), String> {
    debug_assert_eq!(texts.len(), columns.len());
    let mut all = Vec::with_capacity(texts.len());
    for (text, metric) in texts.iter().zip(columns) {
        let value = parse_metric(text).map_err(|error| format!("{}: {error}", metric.name))?;
        if let Some(problem) = problem(metric, value) {
            return Err(format!("{} is {}: {problem}", metric.name, quoted(text)));
        }
        // A recovery measured against an incident, as `never` is, for the relations.
        all.push(if text == UNHEALTHY_BEFORE {
            f64::INFINITY
        } else {
            value
        });
    }
    // The services' blocks end where the metrics asked for (a fleet's, an operation's) begin.
    let blocks_end = columns
        .iter()
        .position(NamedMetric::only_when_asked)
        .unwrap_or(columns.len());
    let (run, services) = all[..blocks_end].split_at(METRICS.len());
    let values: Values = run.try_into().expect("the run's metrics come first");
    // `name=value` for each column of `shown`, by its position in the row.
    let shown = |shown: &mut dyn Iterator<Item = usize>| {
        shown
            .map(|column| {
                let text = texts[column].as_str();
                format!(
                    "{}={}",
                    columns[column].name,
                    if text.is_empty() {
                        "(empty)".to_string()
                    } else {
                        excerpt(text)
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(relation) = RELATIONS.iter().find(|relation| !(relation.holds)(&values)) {
        return Err(format!(
            "{} does not hold: {}",
            relation.text,
            shown(&mut relation.columns.iter().copied())
        ));
    }
    for (block, service) in services.chunks(SERVICE_METRICS.len()).enumerate() {
        let start = METRICS.len() + block * SERVICE_METRICS.len();
        let failed = SERVICE_RELATIONS
            .iter()
            .find(|relation| !(relation.holds)(service, values[OPERATIONS]));
        if let Some(relation) = failed {
            let service_name = columns[start].service().unwrap_or_default();
            let columns = relation.columns.iter().map(|column| start + column);
            return Err(format!(
                "at service {service_name}, {} does not hold: {}",
                relation.text,
                shown(&mut columns.chain([OPERATIONS]))
            ));
        }
    }
    Ok(())
}

/// `value` as compact JSON, cut as [`excerpt`] cuts it.
fn shorten(value: Option<&Value>) -> String {
    value.map_or_else(|| "absent".to_string(), |value| excerpt(&value.to_string()))
}

/// A list of `[key, value]` pairs (`fixed`) or of `{"key": .., "values": ..}` (`axes`), as
/// (key, value) pairs; `None` if it is neither.
fn keyed(list: Option<&Value>) -> Option<Vec<(&str, &Value)>> {
    list?
        .as_array()?
        .iter()
        .map(|item| match item {
            Value::Array(pair) if pair.len() == 2 => Some((pair[0].as_str()?, &pair[1])),
            Value::Object(axis) => Some((axis.get("key")?.as_str()?, axis.get("values")?)),
            _ => None,
        })
        .collect()
}

/// The 1-based line at which two different texts first differ.
fn first_different_line(a: &str, b: &str) -> usize {
    a.split('\n')
        .zip(b.split('\n'))
        .take_while(|(x, y)| x == y)
        .count()
        + 1
}

/// What differs between two shards' `sweep.json` files (`here` the shard refused, `there`
/// the first shard, called `there_name`): each top-level field whose values differ, for `axes`
/// and `fixed` each key, with both values shortened; the scenario's text, and each config it
/// imports (`configs`), by its first line that differs.
pub fn manifest_differences(here: &[u8], there: &[u8], there_name: &str) -> String {
    let (here, there) = match (
        serde_json::from_slice::<Value>(here),
        serde_json::from_slice::<Value>(there),
    ) {
        (Ok(Value::Object(here)), Ok(Value::Object(there))) => (here, there),
        (Err(error), _) => return format!("its sweep.json is not valid JSON: {error}"),
        _ => return "its sweep.json is not a JSON object".to_string(),
    };
    let both = |a: Option<&Value>, b: Option<&Value>| {
        format!("{} here, {} in {there_name}", shorten(a), shorten(b))
    };
    let mut names: Vec<&String> = here.keys().collect();
    names.extend(there.keys().filter(|name| !here.contains_key(*name)));
    let mut differences = Vec::new();
    for name in names {
        let (a, b) = (here.get(name), there.get(name));
        if a == b {
            continue;
        }
        let by_key = match (name.as_str(), keyed(a), keyed(b)) {
            ("scenario_text", _, _) => {
                let [a, b] = [a, b].map(|text| text.and_then(Value::as_str).unwrap_or(""));
                differences.push(format!(
                    "the scenario file's text differs (first difference at line {})",
                    first_different_line(a, b)
                ));
                continue;
            }
            ("configs", _, _) => {
                let (a, b) = (config_entries(a), config_entries(b));
                for (path, x, y) in key_differences(&a, &b) {
                    let path = quoted(path);
                    differences.push(match (x, y) {
                        (Some(x), Some(y)) => format!(
                            "the config {path} differs (first difference at line {})",
                            first_different_line(
                                x.as_str().unwrap_or(""),
                                y.as_str().unwrap_or("")
                            )
                        ),
                        (Some(_), None) => format!("the config {path} is imported here only"),
                        _ => format!("the config {path} is imported in {there_name} only"),
                    });
                }
                continue;
            }
            ("axes" | "fixed", Some(a), Some(b)) => key_differences(&a, &b),
            _ => Vec::new(),
        };
        if by_key.is_empty() {
            // Not a keyed list, or the same keys and values in another order.
            differences.push(format!("{name}: {}", both(a, b)));
        }
        for (key, x, y) in by_key {
            differences.push(format!("{name} {key}: {}", both(x, y)));
        }
    }
    if differences.is_empty() {
        "the same values, written differently".to_string()
    } else {
        differences.join("; ")
    }
}

/// The configs of a manifest (`configs`, an object of paths and texts), as (path, text) pairs.
fn config_entries(configs: Option<&Value>) -> Vec<(&str, &Value)> {
    configs
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(path, text)| (path.as_str(), text))
        .collect()
}

/// The keys whose values differ between two keyed lists (`None` where a list lacks the key),
/// in the order of `a`, then of `b`.
fn key_differences<'a>(
    a: &[(&'a str, &'a Value)],
    b: &[(&'a str, &'a Value)],
) -> Vec<(&'a str, Option<&'a Value>, Option<&'a Value>)> {
    let value_of = |list: &[(&'a str, &'a Value)], key: &str| {
        list.iter()
            .find(|(other, _)| *other == key)
            .map(|(_, value)| *value)
    };
    let mut keys: Vec<&str> = Vec::new();
    for (key, _) in a.iter().chain(b) {
        if !keys.contains(key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|key| (key, value_of(a, key), value_of(b, key)))
        .filter(|(_, x, y)| x != y)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(text: &str) -> Vec<String> {
        text.split(',').map(str::to_string).collect()
    }

    /// The columns of a scenario without a topology: the run's metrics.
    fn run_columns() -> Vec<NamedMetric> {
        NamedMetric::all(&["upstream"])
    }

    /// Rows real runs wrote at the edges of what the checks allow pass them: a circuit breaker
    /// that failed operations without sending them (amplification below 1), a p99 read at its
    /// bin's midpoint above the slowest operation, a run without operations (amplification 0, no
    /// latencies), a scenario without an incident, and a recovery that never came.
    #[test]
    fn rows_real_runs_wrote_at_the_edges_pass() {
        for text in [
            "2007,1698,0.846039,84.900000,1704,0,0.849028,0,0,0,3.000876,3.000500,3.000500,3.923000,111.000000,112.000000,48.166667,309,0.000000,0.000000",
            "100,3,0.030000,3.000000,199,0,1.990000,0,0,0,67.852333,76.447500,99.935500,99.932000,,1990.000000,,0,0.000000,",
            "0,0,0.000000,0.000000,0,0,0.000000,0,0,0,,,,,0.000000,0.000000,0.000000,0,0.000000,0.000000",
            "30124,27059,0.898254,901.966667,30124,0,1.000000,0,3065,3065,39.928867,36.527500,97.759500,192.422000,,1088.000000,,0,0.000000,",
            "72408,32125,0.443666,535.416667,321543,0,4.440711,0,0,683,115.522786,22.791500,2685.951500,2999.293000,8773.000000,8666.000000,475.700000,26485,3.750157,never",
        ] {
            assert_eq!(check_metrics(&row(text), &run_columns()), Ok(()), "{text}");
        }
    }

    /// A `--set` only one sweep has is named with its value and `absent`; a value longer than
    /// 80 characters is cut, with its length; a manifest that is not JSON says so.
    #[test]
    fn manifest_differences_name_keys_and_shorten_values() {
        let here =
            br#"{"fixed": [["duration", "16s"], ["clients.count", "500"]], "policy": "tuned"}"#;
        let long = "x".repeat(100);
        let there = format!(r#"{{"fixed": [["duration", "16s"]], "policy": "{long}"}}"#);
        let message = manifest_differences(here, there.as_bytes(), "first");
        assert_eq!(
            message,
            format!(
                "fixed clients.count: \"500\" here, absent in first; policy: \"tuned\" here, \"{}… (102 bytes) in first",
                "x".repeat(79)
            )
        );
        assert!(manifest_differences(b"{", there.as_bytes(), "first").contains("not valid JSON"));
    }
}
