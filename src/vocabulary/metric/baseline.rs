//! The health before the incident, and the rule that calls a run recovered when it is back to
//! it (`[recovery] rule = "baseline"`, the default).
//!
//! The absolute rule ([`HealthRule::is_healthy`]) calls a window healthy when at most
//! `max_failed` of the operations that ended in it failed and retries added at most
//! `max_retries`. A system that fails 1% of its operations on a good day (injected errors, a
//! concurrency limiter's probes) straddles that line in every window and never "recovers",
//! although after the incident it is exactly as it was. So the baseline rule measures the
//! health before the incident and also counts a window healthy when its failures (and its
//! retries) are within the noise that health allows:
//!
//! - **Baseline**: the steps of the health series from the end of the first `window` of the
//!   run (the warm-up: queues, pools and limiters start empty) to the last step that ends by
//!   the incident's start. Its failure share `p_f` is failed / ended, its retry share `p_r`
//!   retries / attempts (first attempts and retries).
//! - **Within its noise**: a window with `k` failures of `n` operations ended is within the
//!   baseline's noise when a system failing each with probability `p_f` would fail at least
//!   `k` with probability above `alpha` (the binomial tail `P(X >= k) = I_p(k, n - k + 1)`),
//!   and likewise its retries of its attempts at `p_r`. `alpha` is 5% divided by twice the
//!   windows the recovery scan reads (Bonferroni over every sliding window and both counts), so
//!   that a run exactly as healthy as its baseline is called unrecovered by noise in at most 5%
//!   of runs, however the sliding windows overlap. Each count is judged on its own: within the
//!   absolute limit, or within the baseline's noise.
//! - A baseline with no failure (no retry) allows none: `P(X >= k) = 0` for `k >= 1` at
//!   `p = 0`, so a clean baseline gives exactly the absolute rule's recovery.
//! - The baseline's own estimate is taken as exact: a baseline of N operations estimates a
//!   share p to about `sqrt(p / N)`; with a short baseline the rule is somewhat stricter or
//!   looser than 5%. Failures or retries that come in bursts (a timeout that fails a dozen at
//!   once) vary more than a binomial count, which makes the rule stricter, never looser.
//! - **Unhealthy before**: the later half of the baseline (a queue filling under load above
//!   capacity shows there, a start-up transient does not) fails the absolute rule by a wide
//!   margin: the 95% Clopper-Pearson lower bound of its failure share is above twice
//!   `max_failed`, or that of its retry share above the share twice `max_retries` gives. The
//!   run then has no health to return to, and `recovery_s` reads `unhealthy before`.

use super::HealthRule;
use crate::base::stats::{clopper_pearson, incomplete_beta};
use crate::vocabulary::counts::HealthCounts;

/// The family-wise chance that noise alone calls a run at its baseline unrecovered.
const FAMILY_ALPHA: f64 = 0.05;

/// How far above the absolute rule's limits the later half of the baseline must be, at 95%
/// confidence, to count as unhealthy before the incident.
const UNHEALTHY_FACTOR: f64 = 2.0;

/// The health before the incident, over the baseline's steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Baseline {
    /// Its counts over the whole baseline.
    pub counts: HealthCounts,
    /// When it starts and ends, in seconds from the start of the run.
    pub span_s: (f64, f64),
    /// Whether its later half fails the absolute rule by a wide margin.
    pub unhealthy: bool,
}

/// `P(X >= k)` for X binomial(n, p).
fn binomial_tail(n: u64, p: f64, k: u64) -> f64 {
    if k == 0 {
        1.0
    } else if k > n {
        0.0
    } else {
        incomplete_beta(k as f64, (n - k + 1) as f64, p)
    }
}

/// `count / total`, 0 of nothing.
fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

impl Baseline {
    /// The baseline of a health series whose `steps` are `step` seconds long: `steps` are the
    /// baseline's (after the warm-up, before the incident).
    pub fn of(
        steps: &[HealthCounts],
        first_step: usize,
        step_s: f64,
        rule: &HealthRule,
    ) -> Baseline {
        let sum = |part: &[HealthCounts]| {
            let mut counts = HealthCounts::default();
            for step in part {
                counts.add(step);
            }
            counts
        };
        let counts = sum(steps);
        let later = sum(&steps[steps.len() / 2..]);
        let low = |count: u64, total: u64| {
            if total == 0 {
                0.0
            } else {
                clopper_pearson(count, total, 0.95).0
            }
        };
        let twice_retries = UNHEALTHY_FACTOR * rule.max_retries;
        let unhealthy = low(later.failed, later.succeeded + later.failed)
            > UNHEALTHY_FACTOR * rule.max_failed
            || low(later.retries, later.retries + later.first_attempts)
                > twice_retries / (1.0 + twice_retries);
        Baseline {
            counts,
            span_s: (
                first_step as f64 * step_s,
                (first_step + steps.len()) as f64 * step_s,
            ),
            unhealthy,
        }
    }

    /// Its share of failed operations among those that ended.
    pub fn failed_share(&self) -> f64 {
        share(
            self.counts.failed,
            self.counts.succeeded + self.counts.failed,
        )
    }

    /// Its share of retries among the attempts.
    pub fn retry_share(&self) -> f64 {
        share(
            self.counts.retries,
            self.counts.retries + self.counts.first_attempts,
        )
    }

    /// The chance each window may fail by noise when the recovery scan reads `windows`.
    pub fn alpha(windows: usize) -> f64 {
        FAMILY_ALPHA / (2.0 * windows.max(1) as f64)
    }

    /// Whether `window` is healthy: each of its counts within the absolute `rule`, or within
    /// this baseline's noise at `alpha`.
    pub fn is_healthy(&self, rule: &HealthRule, window: &HealthCounts, alpha: f64) -> bool {
        let within =
            |count: u64, total: u64, share: f64| binomial_tail(total, share, count) > alpha;
        (rule.failures_healthy(window)
            || within(
                window.failed,
                window.succeeded + window.failed,
                self.failed_share(),
            ))
            && (rule.retries_healthy(window)
                || within(
                    window.retries,
                    window.retries + window.first_attempts,
                    self.retry_share(),
                ))
    }
}
