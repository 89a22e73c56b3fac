//! Writers: each output file is one small function from a finished run to bytes.
//!
//! Writers read the measurements and summaries; they never reach into the engine. A run's files
//! are written into a staging folder and put in place together ([`staging`]), so a crash leaves
//! either the earlier result or the new one, never a mix. Numbers are printed with fixed
//! decimals so that the same run gives the same bytes.
//!
//! | file | rows |
//! |---|---|
//! | `timeseries.csv` | one per policy and bucket |
//! | `services.csv` (topologies) | one per policy, service and bucket |
//! | `summary.csv`, `summary.json` | one per policy |
//! | `scenario.toml` | the scenario as run, every default written out |
//! | `trace.csv` (`--trace`) | one per attempt, see [`TraceWriter`] |

pub mod charts;
pub mod report;
pub mod staging;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::base::time::{MICROS_PER_MS, MICROS_PER_SECOND, Micros};
use crate::engine::{AttemptRecord, Observer};
use crate::run::ScenarioRun;
use crate::vocabulary::counts::{SERVICE_COUNTS, SERVICE_STATE};
use crate::vocabulary::metric::baseline::Baseline;
use crate::vocabulary::metric::{
    Domain, INSTANCE_METRICS, INTENT_METRICS, METRICS, OPERATION_METRICS, OperationSummary,
    SERVICE_METRICS, ServiceSummary, TOPOLOGY_SERVICE_METRICS, Unit, format_summary_metric,
    metric_names, operation_metric,
};
use crate::vocabulary::outcome::FailureReason;

/// A file a run writes: its name, whether this run writes it, and how to render it.
pub struct Artifact {
    /// File name inside the run's folder.
    pub name: &'static str,
    /// Whether the run writes it.
    pub written: fn(&ScenarioRun) -> bool,
    /// The file's bytes.
    pub render: fn(&ScenarioRun) -> Vec<u8>,
}

fn always(_: &ScenarioRun) -> bool {
    true
}

/// The files a run writes.
pub const ARTIFACTS: [Artifact; 5] = [
    Artifact {
        name: "timeseries.csv",
        written: always,
        render: timeseries_csv,
    },
    Artifact {
        name: "services.csv",
        written: ScenarioRun::has_topology,
        render: services_csv,
    },
    Artifact {
        name: "summary.csv",
        written: always,
        render: summary_csv,
    },
    Artifact {
        name: "summary.json",
        written: always,
        render: summary_json,
    },
    Artifact {
        name: "scenario.toml",
        written: always,
        render: resolved_scenario,
    },
];

fn ms(micros: f64) -> String {
    format!("{:.3}", micros / MICROS_PER_MS as f64)
}

/// A CSV file of `header` and `rows`, in memory, each row made as it is written (a
/// million-point sweep would otherwise hold every field as a string of its own at once).
pub(crate) fn csv_bytes<H: AsRef<[u8]>>(
    header: &[H],
    rows: impl IntoIterator<Item = Vec<String>>,
) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).expect("writing to memory");
    for row in rows {
        writer.write_record(&row).expect("writing to memory");
    }
    writer.into_inner().expect("writing to memory")
}

/// Columns of `timeseries.csv`.
pub const TIMESERIES_COLUMNS: [&str; 25] = [
    "policy",
    "t_s",
    "attempts",
    "attempts_rps",
    "first_attempts",
    "retries",
    "status_checks",
    "ok",
    "rejected_429",
    "rejected_503",
    "conflicts_409",
    "errors",
    "resets",
    "timeouts",
    "succeeded",
    "failed",
    "unknown_results",
    "duplicate_writes",
    "queue_len",
    "workers_available",
    "capacity_rps",
    "wasted_work_s",
    "latency_count",
    "p50_ms",
    "p99_ms",
];

/// The failure reasons `timeseries.csv` has a column for: the decision's and `status-unknown`
/// always, a control's veto only when some policy of the run has that control, and
/// `retry-declined` only when some caller retries with a probability below 1 (so a scenario
/// without them keeps the columns it always had).
pub fn failure_columns(run: &ScenarioRun) -> Vec<FailureReason> {
    FailureReason::ALL
        .into_iter()
        .filter(|reason| match reason {
            FailureReason::Control(kind) => run
                .policies
                .iter()
                .any(|policy| policy.model.has_control(*kind)),
            FailureReason::RetryDeclined => run.policies.iter().any(|policy| {
                policy
                    .model
                    .any_caller(|caller| caller.retry_probability < 1.0)
            }),
            _ => true,
        })
        .collect()
}

/// The header of `timeseries.csv`: [`TIMESERIES_COLUMNS`] with, after `unknown_results`, one
/// `failed_<reason>` column per failure reason of [`failure_columns`] (`failed_max_attempts`,
/// ...).
pub fn timeseries_header(reasons: &[FailureReason]) -> Vec<String> {
    let mut header: Vec<String> = TIMESERIES_COLUMNS
        .iter()
        .map(|name| name.to_string())
        .collect();
    let after = header
        .iter()
        .position(|name| name == "unknown_results")
        .expect("a known column")
        + 1;
    let reasons = reasons
        .iter()
        .map(|reason| format!("failed_{}", reason.name().replace('-', "_")));
    header.splice(after..after, reasons);
    header
}

/// One row per policy and bucket: counts in the bucket, state at its end, latency of the
/// operations that succeeded in it. `t_s` is the bucket's start in seconds.
pub fn timeseries_csv(run: &ScenarioRun) -> Vec<u8> {
    let reasons = failure_columns(run);
    let columns = &reasons;
    let rows = run.policies.iter().flat_map(|policy| {
        let measurements = &policy.measurements;
        let bucket_s = measurements.bucket as f64 / MICROS_PER_SECOND as f64;
        let entry = &measurements.services[measurements.entry];
        measurements
            .buckets
            .iter()
            .zip(&measurements.latency)
            .enumerate()
            .map(move |(index, (counts, latency))| {
                let state = &entry.buckets[index];
                let capacity_rps = entry.capacity_rps[index];
                let wasted_work_us: u64 = measurements
                    .services
                    .iter()
                    .map(|service| service.buckets[index].wasted_work_us)
                    .sum();
                vec![
                    policy.name.clone(),
                    format!("{:.3}", index as f64 * bucket_s),
                    counts.attempts.to_string(),
                    format!("{:.3}", counts.attempts as f64 / bucket_s),
                    counts.first_attempts.to_string(),
                    counts.retries.to_string(),
                    counts.status_checks.to_string(),
                    counts.ok.to_string(),
                    counts.rejected_429.to_string(),
                    counts.rejected_503.to_string(),
                    counts.conflicts_409.to_string(),
                    counts.errors.to_string(),
                    counts.resets.to_string(),
                    counts.timeouts.to_string(),
                    counts.succeeded.to_string(),
                    counts.failed.to_string(),
                    counts.unknown_results.to_string(),
                ]
                .into_iter()
                .chain(
                    columns
                        .iter()
                        .map(|reason| counts.failures[reason.index()].to_string()),
                )
                .chain([
                    counts.duplicate_writes.to_string(),
                    state.queue_len.to_string(),
                    state.workers_available.to_string(),
                    capacity_rps.map_or_else(String::new, |rps| format!("{rps:.3}")),
                    format!("{:.6}", wasted_work_us as f64 / MICROS_PER_SECOND as f64),
                    latency.len().to_string(),
                    latency.quantile(0.5).map_or_else(String::new, ms),
                    latency.quantile(0.99).map_or_else(String::new, ms),
                ])
                .collect()
            })
    });
    csv_bytes(&timeseries_header(&reasons), rows)
}

/// The header of `services.csv`.
pub fn services_header() -> Vec<String> {
    let mut header: Vec<String> = ["policy", "service", "t_s", "requests", "requests_rps"]
        .iter()
        .map(|name| name.to_string())
        .collect();
    header.extend(SERVICE_COUNTS.iter().map(|(name, _)| name.to_string()));
    header.extend(SERVICE_STATE.iter().map(|(name, _)| name.to_string()));
    header.extend(
        [
            "capacity_rps",
            "wasted_work_s",
            "rejection_work_s",
            "held_s",
        ]
        .map(str::to_string),
    );
    header
}

/// One row per policy, service and bucket: what the service's callers sent it (`requests`:
/// first attempts, retries and status checks), what it did with them, its state at the
/// bucket's end, its capacity ([`crate::vocabulary::counts::ServiceBucket::capacity_rps`], empty when a
/// calling service let go of nothing in the bucket), its wasted work and its workers' time.
pub fn services_csv(run: &ScenarioRun) -> Vec<u8> {
    let rows = run.policies.iter().flat_map(|policy| {
        let measurements = &policy.measurements;
        let bucket_s = measurements.bucket as f64 / MICROS_PER_SECOND as f64;
        measurements.services.iter().flat_map(move |service| {
            service
                .buckets
                .iter()
                .enumerate()
                .map(move |(index, counts)| {
                    let capacity_rps = service.capacity_rps[index];
                    let mut row = vec![
                        policy.name.clone(),
                        service.name.clone(),
                        format!("{:.3}", index as f64 * bucket_s),
                        counts.requests().to_string(),
                        format!("{:.3}", counts.requests() as f64 / bucket_s),
                    ];
                    row.extend(
                        SERVICE_COUNTS
                            .iter()
                            .chain(&SERVICE_STATE)
                            .map(|(_, count)| count(counts).to_string()),
                    );
                    row.push(capacity_rps.map_or_else(String::new, |rps| format!("{rps:.3}")));
                    for micros in [
                        counts.wasted_work_us,
                        counts.rejection_work_us,
                        counts.held_us,
                    ] {
                        row.push(format!("{:.6}", micros as f64 / MICROS_PER_SECOND as f64));
                    }
                    row
                })
        })
    });
    csv_bytes(&services_header(), rows)
}

/// One row per policy: the policy, every summary metric (see [`METRICS`], formatted by
/// [`format_summary_metric`]: `never` for a recovery that never came, `unhealthy before` for a
/// run unhealthy before its incident) and the events processed.
pub fn summary_csv(run: &ScenarioRun) -> Vec<u8> {
    let mut header: Vec<String> = ["policy"]
        .into_iter()
        .chain(metric_names())
        .chain(["events"])
        .map(str::to_string)
        .collect();
    if run.has_topology() {
        header.extend(
            run.model
                .services
                .iter()
                .map(|service| format!("amplification_{}", service.name)),
        );
    }
    let rows = run.policies.iter().map(|policy| {
        let mut row = vec![policy.name.clone()];
        row.extend(
            METRICS
                .iter()
                .map(|metric| format_summary_metric(metric, &policy.summary)),
        );
        row.push(policy.measurements.events.to_string());
        if run.has_topology() {
            row.extend(
                policy
                    .services
                    .iter()
                    .map(|service| format!("{:.6}", service.amplification)),
            );
        }
        row
    });
    csv_bytes(&header, rows)
}

/// A JSON array with one object per policy: every summary metric (`null` where it is undefined,
/// and for a recovery that never came), the events processed, failures by reason, when users
/// retry by hand the intents' metrics ([`INTENT_METRICS`]) as `intents`, with two operations or
/// more each operation's block as `per_operation` ([`operation_block`]), and the upstream's
/// block, or for a topology each service's ([`service_block`]).
pub fn summary_json(run: &ScenarioRun) -> Vec<u8> {
    let policies: Vec<Value> = run
        .policies
        .iter()
        .map(|policy| {
            let mut object = Map::new();
            object.insert("policy".into(), json!(policy.name));
            for metric in &METRICS {
                let value = (metric.value)(&policy.summary);
                object.insert(metric.name.into(), json_value(metric.unit, value));
            }
            if let Some(baseline) = policy.summary.baseline.filter(|b| b.unhealthy) {
                object.insert("baseline".into(), baseline_block(&baseline));
            }
            let measurements = &policy.measurements;
            object.insert("events".into(), json!(measurements.events));
            let failures: Map<String, Value> = measurements
                .failures()
                .into_iter()
                .map(|(reason, count)| (reason.name().to_string(), json!(count)))
                .collect();
            object.insert("failures".into(), Value::Object(failures));
            if run.has_manual_retries() {
                let intents: Map<String, Value> = INTENT_METRICS
                    .iter()
                    .map(|metric| {
                        let value = (metric.value)(&policy.summary);
                        (metric.name.to_string(), json_value(metric.unit, value))
                    })
                    .collect();
                object.insert("intents".into(), Value::Object(intents));
            }
            if !policy.summary.by_operation.is_empty() {
                let blocks = policy.summary.by_operation.iter().map(operation_block);
                object.insert("per_operation".into(), Value::Array(blocks.collect()));
            }
            let topology = run.has_topology();
            let blocks = policy
                .services
                .iter()
                .map(|service| service_block(service, topology));
            if topology {
                object.insert("services".into(), Value::Array(blocks.collect()));
            } else {
                let block = blocks.into_iter().next().expect("a run has a service");
                object.insert("upstream".into(), block);
            }
            Value::Object(object)
        })
        .collect();
    let mut bytes = serde_json::to_vec_pretty(&policies).expect("JSON values serialize");
    bytes.push(b'\n');
    bytes
}

/// The health before the incident in `summary.json`, for a run unhealthy before it (see
/// [`crate::vocabulary::metric::baseline`]): its span, counts, shares, and `unhealthy`.
fn baseline_block(baseline: &Baseline) -> Value {
    let counts = baseline.counts;
    json!({
        "from_s": json_value(Unit::Number, baseline.span_s.0),
        "to_s": json_value(Unit::Number, baseline.span_s.1),
        "succeeded": counts.succeeded,
        "failed": counts.failed,
        "first_attempts": counts.first_attempts,
        "retries": counts.retries,
        "failed_share": json_value(Unit::Number, baseline.failed_share()),
        "retry_share": json_value(Unit::Number, baseline.retry_share()),
        "unhealthy": baseline.unhealthy,
    })
}

/// An operation's block in `summary.json`'s `per_operation` list: its name and every metric of
/// [`OPERATION_METRICS`], written as the run's of the same name.
fn operation_block(operation: &OperationSummary) -> Value {
    let mut block = Map::new();
    block.insert("operation".into(), json!(operation.name));
    for metric in &OPERATION_METRICS {
        let value = (metric.value)(operation);
        block.insert(metric.name.into(), json_value(metric.of_run().unit, value));
    }
    Value::Object(block)
}

/// A column of the tables per operation that people read: the terminal's `per operation:`
/// section of a run and `report.html`'s Operations table. Each shows one metric of
/// [`OPERATION_METRICS`], written as the run's of the same name are in the summary tables.
pub struct OperationColumn {
    /// The metric it shows, one of [`OPERATION_METRICS`].
    pub metric: &'static str,
    /// Its header in the terminal's table; `None` where the terminal leaves it out, to keep to
    /// a terminal's width.
    pub terminal: Option<&'static str>,
    /// Its header in `report.html`.
    pub report: &'static str,
    /// Its decimals: of the percentage for a share, none for a count.
    pub decimals: usize,
}

/// The columns of the tables per operation, in order (after the policy's and operation's
/// names): what its users started and got, the load it put on the system and the writes it
/// duplicated or left unknown, and the latency of its successes.
pub const OPERATION_COLUMNS: [OperationColumn; 10] = [
    OperationColumn {
        metric: "operations",
        terminal: Some("operations"),
        report: "operations",
        decimals: 0,
    },
    OperationColumn {
        metric: "success_rate",
        terminal: Some("success"),
        report: "success",
        decimals: 2,
    },
    OperationColumn {
        metric: "goodput_rps",
        terminal: None,
        report: "goodput/s",
        decimals: 1,
    },
    OperationColumn {
        metric: "amplification",
        terminal: Some("amplif."),
        report: "amplification",
        decimals: 3,
    },
    OperationColumn {
        metric: "status_checks",
        terminal: None,
        report: "status checks",
        decimals: 0,
    },
    OperationColumn {
        metric: "duplicate_writes",
        terminal: Some("dup.writes"),
        report: "duplicate writes",
        decimals: 0,
    },
    OperationColumn {
        metric: "unknown_results",
        terminal: Some("unknown"),
        report: "unknown results",
        decimals: 0,
    },
    OperationColumn {
        metric: "mean_ms",
        terminal: None,
        report: "mean ms",
        decimals: 1,
    },
    OperationColumn {
        metric: "p50_ms",
        terminal: Some("p50 ms"),
        report: "p50 ms",
        decimals: 1,
    },
    OperationColumn {
        metric: "p99_ms",
        terminal: Some("p99 ms"),
        report: "p99 ms",
        decimals: 1,
    },
];

impl OperationColumn {
    /// The column's cell for `operation`: a count as a whole number, a share as a percentage,
    /// anything else with the column's decimals, and `undefined` where the metric is (a latency
    /// when none of its operations succeeded).
    pub fn cell(&self, operation: &OperationSummary, undefined: &str) -> String {
        let metric = operation_metric(self.metric).expect("a column shows an operation's metric");
        let value = (metric.value)(operation);
        let of_run = metric.of_run();
        let digits = self.decimals;
        if !value.is_finite() {
            undefined.to_string()
        } else if of_run.unit == Unit::Count {
            format!("{value:.0}")
        } else if of_run.domain == Domain::Share {
            format!("{:.digits$}%", value * 100.0)
        } else {
            format!("{value:.digits$}")
        }
    }
}

/// A service's block in `summary.json`: its name and every metric of [`SERVICE_METRICS`] (its
/// amplification relative to user operations, its counts over the run, its peaks, its wasted and
/// rejection work), counts as integers and the others rounded to six decimals; for a fleet,
/// each instance's index and every metric of [`INSTANCE_METRICS`] as `instances`. The
/// `upstream` block of a scenario of one service (not a `topology`) leaves out
/// [`TOPOLOGY_SERVICE_METRICS`], which are the run's own there.
fn service_block(service: &ServiceSummary, topology: bool) -> Value {
    let mut block = Map::new();
    block.insert("service".into(), json!(service.name));
    let metrics = SERVICE_METRICS
        .iter()
        .filter(|metric| topology || !TOPOLOGY_SERVICE_METRICS.contains(&metric.name));
    for metric in metrics {
        let value = (metric.value)(service);
        block.insert(metric.name.into(), json_value(metric.unit, value));
    }
    if !service.instances.is_empty() {
        let instances = service
            .instances
            .iter()
            .enumerate()
            .map(|(index, instance)| {
                let mut entry = Map::new();
                entry.insert("instance".into(), json!(index));
                for metric in &INSTANCE_METRICS {
                    let value = (metric.value)(instance);
                    entry.insert(metric.name.into(), json_value(metric.unit, value));
                }
                Value::Object(entry)
            })
            .collect();
        block.insert("instances".into(), Value::Array(instances));
    }
    Value::Object(block)
}

/// A metric's value in `summary.json`: `null` where it is undefined or never came, a count as
/// an integer, anything else rounded to six decimals.
fn json_value(unit: Unit, value: f64) -> Value {
    if !value.is_finite() {
        Value::Null
    } else if unit == Unit::Count {
        json!(value as u64)
    } else {
        json!((value * 1e6).round() / 1e6)
    }
}

/// The scenario as simulated, with every default written out.
pub fn resolved_scenario(run: &ScenarioRun) -> Vec<u8> {
    let header = crate::scenario::RESOLVED_HEADER;
    format!("{header}{}", run.scenario.to_resolved_toml()).into_bytes()
}

/// Columns of `trace.csv`.
pub const TRACE_COLUMNS: [&str; 11] = [
    "policy",
    "client",
    "operation",
    "attempt",
    "send_ms",
    "end_ms",
    "outcome",
    "status",
    "retry_after_ms",
    "next_delay_ms",
    "reason",
];

/// Streams one policy's attempts to a temporary CSV file (no header), as they resolve. The
/// parts are joined into `trace.csv` in policy order by [`finish_trace`].
pub struct TraceWriter {
    policy: String,
    path: PathBuf,
    writer: csv::Writer<BufWriter<File>>,
    error: Option<io::Error>,
}

impl TraceWriter {
    /// A writer for `policy`'s attempts, into a new part file in `folder` (a staging folder).
    pub fn create(folder: &Path, policy: &str, index: usize) -> io::Result<TraceWriter> {
        let path = folder.join(format!(".trace.{index}.part"));
        let writer = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(staging::create_new(&path)?));
        Ok(TraceWriter {
            policy: policy.to_string(),
            path,
            writer,
            error: None,
        })
    }
}

impl Observer for TraceWriter {
    fn attempt(&mut self, record: &AttemptRecord) {
        if self.error.is_some() {
            return;
        }
        let micros_to_ms = |micros: Micros| ms(micros as f64);
        let row = [
            self.policy.clone(),
            record.client.to_string(),
            record.operation.to_string(),
            record.attempt.to_string(),
            micros_to_ms(record.send),
            micros_to_ms(record.end),
            record.outcome.name().to_string(),
            record
                .status
                .map_or_else(String::new, |status| status.to_string()),
            record.retry_after.map_or_else(String::new, micros_to_ms),
            record.next_delay.map_or_else(String::new, micros_to_ms),
            record.next.name().to_string(),
        ];
        if let Err(error) = self.writer.write_record(&row) {
            self.error = Some(error.into());
        }
    }
}

/// Joins the policies' trace parts, in order, under one header into a new file `path`, and
/// removes the parts (also when joining fails).
pub fn finish_trace(path: &Path, parts: Vec<TraceWriter>) -> io::Result<()> {
    let part_paths: Vec<PathBuf> = parts.iter().map(|part| part.path.clone()).collect();
    let result = (|| {
        let mut out = BufWriter::new(staging::create_new(path)?);
        out.write_all(&csv_bytes(&TRACE_COLUMNS, std::iter::empty()))?;
        for part in parts {
            if let Some(error) = part.error {
                return Err(error);
            }
            let file = part
                .writer
                .into_inner()
                .map_err(|error| error.into_error())?
                .into_inner()
                .map_err(|error| error.into_error())?;
            drop(file);
            io::copy(&mut File::open(&part.path)?, &mut out)?;
        }
        out.into_inner()
            .map_err(|error| error.into_error())?
            .sync_all()
    })();
    for part_path in part_paths {
        let _ = fs::remove_file(part_path);
    }
    result
}
