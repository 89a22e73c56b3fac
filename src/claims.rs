//! A scenario's lesson, stated as claims and checked on every run.
//!
//! A bundled scenario teaches something ("jitter spreads the retries"), and a lesson counts
//! only if the numbers agree with it. So a scenario states its lesson as `[[expect]]` claims
//! about its policies' metrics: that one policy beats another on a metric (by a margin), or that
//! a policy's metric is above or below a value, over the whole run or in a time window. `run`
//! prints whether each held and `report.html` shows them; the test suite runs every bundled
//! scenario and fails if a claim does not hold.
//!
//! Which way is "better" comes from the metric ([`crate::vocabulary::metric::Better`]): more success and
//! goodput, less load, latency, failure and recovery time. A recovery that never came counts as
//! infinitely long, so a policy that recovers beats one that does not.

use std::fmt;

use crate::base::time::Micros;
use crate::engine::counters::Measurements;
use crate::run::{PolicyRun, ScenarioRun};
use crate::scenario::{Expect, ExpectWindow};
use crate::vocabulary::metric::{
    Better, Recovery, UNHEALTHY_BEFORE, claim_direction, metric_value,
};

/// Whether a claim held, with the values it compared.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimResult {
    /// The claim in words: `full jitter beats no jitter on success_rate by 5%`.
    pub claim: String,
    /// The claimed policy's value.
    pub value: f64,
    /// What it was compared with: the other policy's value, or the bound.
    pub against: f64,
    /// `value` and `against` as printed ([`shown`]): a recovery undefined because the run was
    /// unhealthy before its incident reads `unhealthy before`, not `undefined`.
    pub shown: [String; 2],
    /// Whether it held.
    pub held: bool,
    /// Why the scenario claims it, if it says.
    pub why: Option<String>,
}

impl fmt::Display for ClaimResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({} against {})",
            if self.held { "held" } else { "did not hold" },
            self.claim,
            self.shown[0],
            self.shown[1]
        )
    }
}

/// A metric's value as the claims print it.
pub fn number(value: f64) -> String {
    if value.is_infinite() {
        "never".into()
    } else if value.is_nan() {
        "undefined".into()
    } else if value.abs() >= 100.0 || value == value.trunc() {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

/// A value of `metric` for `policy` as a claim prints it: [`number`], but `unhealthy before`
/// for the whole run's `recovery_s` of a run unhealthy before its incident (undefined, as a
/// recovery without an incident is, but for a reason the reader must see).
fn shown(policy: &PolicyRun, claim: &Expect, value: f64) -> String {
    let unhealthy = claim.window.is_none()
        && claim.metric == "recovery_s"
        && policy.summary.recovery_s == Recovery::UnhealthyBefore;
    if unhealthy {
        UNHEALTHY_BEFORE.to_string()
    } else {
        number(value)
    }
}

/// Checks the claims of the run's scenario that one run judges: those without a
/// `probability`, which only replications judge ([`evaluate_each`]).
pub fn evaluate(run: &ScenarioRun) -> Vec<ClaimResult> {
    run.scenario
        .expect
        .iter()
        .filter(|claim| claim.get_ref().probability.is_none())
        .map(|claim| check(run, claim.get_ref()))
        .collect()
}

/// Checks every claim of the run's scenario, in its order, whether it holds on this run: one
/// replication's verdicts, which replications count.
pub fn evaluate_each(run: &ScenarioRun) -> Vec<ClaimResult> {
    run.scenario
        .expect
        .iter()
        .map(|claim| check(run, claim.get_ref()))
        .collect()
}

fn policy<'a>(run: &'a ScenarioRun, name: &str) -> &'a PolicyRun {
    run.policies
        .iter()
        .find(|policy| policy.name == name)
        .expect("validated: claims name policies of the scenario")
}

/// The value a claim compares for `policy`.
fn value(policy: &PolicyRun, claim: &Expect) -> f64 {
    match &claim.window {
        None => metric_value(&claim.metric, &policy.summary, &policy.services)
            .expect("validated: claims name metrics of the run"),
        Some(window) => window_metric(
            &policy.measurements,
            &claim.metric,
            window.from.micros(),
            window.to.micros(),
        ),
    }
}

/// `metric` (one of [`crate::vocabulary::metric::WINDOW_METRICS`]) over the buckets that overlap `[from, to)`.
pub fn window_metric(measurements: &Measurements, metric: &str, from: Micros, to: Micros) -> f64 {
    let window = measurements.window(from, to);
    let ratio = |numerator: u64, denominator: u64| numerator as f64 / denominator as f64;
    match metric {
        "goodput_rps" => window.per_second(window.succeeded),
        "failed_rps" => window.per_second(window.failed),
        "success_rate" => ratio(window.succeeded, window.succeeded + window.failed),
        "attempts_rps" => window.per_second(window.attempts),
        "peak_attempts_rps" => window.peak_attempts_rps,
        "amplification" => ratio(window.attempts, window.first_attempts),
        _ => unreachable!("validated: windowed claims name window metrics"),
    }
}

fn check(run: &ScenarioRun, claim: &Expect) -> ClaimResult {
    let better = claim_direction(&claim.metric, claim.window.is_some())
        .expect("validated: claims name metrics");
    let claimed = policy(run, &claim.policy);
    let value = value(claimed, claim);
    let margin = claim.margin.map_or(0.0, |margin| margin.get());
    let (against, against_shown, held) = if let Some(other) = &claim.better_than {
        let other = policy(run, other);
        let against = self::value(other, claim);
        let held = match better {
            Better::Higher => value > against * (1.0 + margin),
            Better::Lower => value < against * (1.0 - margin),
            Better::Neither => false,
        };
        (against, shown(other, claim, against), held)
    } else if let Some(bound) = claim.at_least {
        (bound, number(bound), value >= bound)
    } else {
        let bound = claim
            .at_most
            .expect("validated: a claim compares with something");
        (bound, number(bound), value <= bound)
    };
    ClaimResult {
        claim: describe(claim),
        value,
        against,
        shown: [shown(claimed, claim, value), against_shown],
        held,
        why: claim.why.clone(),
    }
}

/// The claim in words: `full jitter beats no jitter on success_rate by more than 5%`.
pub fn describe(claim: &Expect) -> String {
    let window = claim
        .window
        .as_ref()
        .map_or_else(String::new, describe_window);
    if let Some(other) = &claim.better_than {
        let by = match claim.margin.map(|margin| margin.get()) {
            Some(margin) if margin > 0.0 => format!(" by more than {}%", number(margin * 100.0)),
            _ => String::new(),
        };
        format!(
            "{} beats {} on {}{window}{by}",
            claim.policy, other, claim.metric
        )
    } else if let Some(bound) = claim.at_least {
        format!(
            "{} has {}{window} at least {}",
            claim.policy,
            claim.metric,
            number(bound)
        )
    } else {
        let bound = claim
            .at_most
            .expect("validated: a claim compares with something");
        format!(
            "{} has {}{window} at most {}",
            claim.policy,
            claim.metric,
            number(bound)
        )
    }
}

fn describe_window(window: &ExpectWindow) -> String {
    format!(" from {} to {}", window.from, window.to)
}
