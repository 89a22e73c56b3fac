//! Retry budgets: retries may add at most a fixed share to the load, plus a small allowance.
//!
//! Two shapes are in use:
//!
//! - **Over a window of requests** (Finagle's `RetryBudget`, Linkerd's `retryBudget`, tower's
//!   `TpsBudget`, which is a port of Finagle's). Every call deposits; every retry withdraws
//!   `1/percent` deposits; a reserve of `min_per_s * ttl` retries is always there. Deposits and
//!   withdrawals both leave the window after `ttl`, so over any `ttl` the retries are at most
//!   `min_per_s * ttl + percent * calls`. Finagle's integer arithmetic is kept
//!   (`RetryBudget.scala`): a deposit is 1000, a withdrawal `floor(1000 / ratio)`, the reserve
//!   `min_per_s * ttl_s * withdrawal`, and the window is ten slices of `ttl / 10`. Defaults:
//!   ttl 10 s, 10 retries per second, 20% (Finagle's `RetryBudget()` and Linkerd's
//!   ServiceProfile defaults).
//! - **Over concurrent requests** (Envoy's `retry_budget` circuit-breaker threshold): retries
//!   outstanding (from the moment one is scheduled until its attempt ends) may be at most
//!   `max(percent * (active + pending requests), min_retry_concurrency)`, truncated to an
//!   integer as Envoy's `RetryBudgetImpl::max` does. Defaults: 20%, minimum 3
//!   (`circuit_breaker.proto`).

use super::{AttemptEnd, Control, SlidingWindow};
use crate::base::time::{MICROS_PER_SECOND, Micros};

/// Finagle's scale: one deposit.
const DEPOSIT: i64 = 1000;
/// Finagle's `WindowedAdder` splits the ttl into this many slices.
pub(super) const SLICES: usize = 10;

/// Settings of a budget over a window of requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowedBudgetConfig {
    /// Retries allowed per 100 calls (Finagle's `percentCanRetry * 100`), default 20.
    pub percent: f64,
    /// Retries per second always allowed (Finagle's `minRetriesPerSec`), default 10.
    pub min_per_s: u64,
    /// The window (Finagle's `ttl`, whole seconds from 1 to 60), default 10 s.
    pub ttl: Micros,
}

impl Default for WindowedBudgetConfig {
    fn default() -> Self {
        WindowedBudgetConfig {
            percent: 20.0,
            min_per_s: 10,
            ttl: 10 * MICROS_PER_SECOND,
        }
    }
}

/// Finagle's budget: a leaky token bucket over `ttl`.
#[derive(Debug)]
pub struct WindowedBudget {
    window: SlidingWindow<1>,
    deposit: i64,
    withdrawal: i64,
    reserve: i64,
}

impl WindowedBudget {
    /// A full budget.
    pub fn new(config: &WindowedBudgetConfig) -> Self {
        let ratio = config.percent / 100.0;
        let (deposit, withdrawal) = if ratio == 0.0 {
            (0, 1)
        } else {
            (DEPOSIT, (DEPOSIT as f64 / ratio).floor() as i64)
        };
        let ttl_s = (config.ttl / MICROS_PER_SECOND) as i64;
        WindowedBudget {
            window: SlidingWindow::new(SLICES, config.ttl / SLICES as u64),
            deposit,
            withdrawal,
            reserve: config.min_per_s as i64 * ttl_s * withdrawal,
        }
    }

    /// Retries that may be made now (Finagle's `balance`).
    pub fn balance(&mut self, now: Micros) -> i64 {
        (self.window.sums(now)[0] + self.reserve) / self.withdrawal
    }
}

impl Control for WindowedBudget {
    fn call_started(&mut self, now: Micros) {
        if self.deposit != 0 {
            self.window.add(now, [self.deposit]);
        }
    }

    fn admit_retry(&mut self, now: Micros, _timed_out: bool) -> bool {
        if self.window.sums(now)[0] + self.reserve >= self.withdrawal {
            self.window.add(now, [-self.withdrawal]);
            true
        } else {
            false
        }
    }

    fn retry_cancelled(&mut self, now: Micros) {
        // A later control refused the retry: Finagle's filters would not have withdrawn.
        self.window.add(now, [self.withdrawal]);
    }
}

/// Settings of a budget over concurrent requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConcurrencyBudgetConfig {
    /// Retries outstanding per 100 active requests (`budget_percent`), default 20.
    pub percent: f64,
    /// Retries outstanding always allowed (`min_retry_concurrency`), default 3.
    pub min_concurrency: u64,
}

impl Default for ConcurrencyBudgetConfig {
    fn default() -> Self {
        ConcurrencyBudgetConfig {
            percent: 20.0,
            min_concurrency: 3,
        }
    }
}

/// Envoy's budget: retries outstanding against requests in flight.
#[derive(Debug)]
pub struct ConcurrencyBudget {
    config: ConcurrencyBudgetConfig,
    /// Attempts sent and not yet ended.
    active: u64,
    /// Retries admitted whose attempt has not ended.
    retries: u64,
}

impl ConcurrencyBudget {
    /// A budget with nothing in flight.
    pub fn new(config: &ConcurrencyBudgetConfig) -> Self {
        ConcurrencyBudget {
            config: *config,
            active: 0,
            retries: 0,
        }
    }

    /// The most retries that may be outstanding now (Envoy's `RetryBudgetImpl::max`).
    pub fn max(&self) -> u64 {
        ((self.config.percent / 100.0 * self.active as f64) as u64).max(self.config.min_concurrency)
    }
}

impl Control for ConcurrencyBudget {
    fn sent(&mut self, _now: Micros) {
        self.active += 1;
    }

    fn attempt_ended(&mut self, _now: Micros, end: &AttemptEnd) {
        self.active -= 1;
        if end.retry {
            self.retries -= 1;
        }
    }

    fn admit_retry(&mut self, _now: Micros, _timed_out: bool) -> bool {
        if self.retries < self.max() {
            self.retries += 1;
            true
        } else {
            false
        }
    }

    fn retry_cancelled(&mut self, _now: Micros) {
        self.retries -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::outcome::AttemptOutcome;

    /// Finagle's `RetryBudget()` (`RetryBudget.scala`): 20%, 10 retries/s, ttl 10 s. The
    /// reserve is `10 * 10 * 5000`, a balance of 100 retries, and every 5 deposits of 1000 buy
    /// one more withdrawal of 5000.
    #[test]
    fn finagle_defaults_allow_the_reserve_plus_a_fifth_of_the_calls() {
        let mut budget = WindowedBudget::new(&WindowedBudgetConfig::default());
        assert_eq!(budget.balance(0), 100);
        for _ in 0..50 {
            budget.call_started(0);
        }
        assert_eq!(budget.balance(0), 110);
        let allowed = (0..200).filter(|_| budget.admit_retry(0, false)).count();
        assert_eq!(allowed, 110);
        // The withdrawals leave the window with the deposits after the ttl.
        assert_eq!(budget.balance(9_999_999), 0);
        assert_eq!(budget.balance(10_000_000), 100);
    }

    /// `percent = 0` and `min_per_s = 0` is Finagle's empty budget: no retry ever.
    #[test]
    fn an_empty_budget_refuses_every_retry() {
        let mut budget = WindowedBudget::new(&WindowedBudgetConfig {
            percent: 0.0,
            min_per_s: 0,
            ttl: 10 * MICROS_PER_SECOND,
        });
        for _ in 0..1000 {
            budget.call_started(0);
        }
        assert!(!budget.admit_retry(0, false));
    }

    /// Envoy: `max(20% of (active + pending), 3)`, truncated: 3 below 20 active, 4 at 20.
    #[test]
    fn envoy_budget_follows_the_requests_in_flight() {
        let mut budget = ConcurrencyBudget::new(&ConcurrencyBudgetConfig::default());
        for _ in 0..19 {
            budget.sent(0);
        }
        assert_eq!(budget.max(), 3);
        budget.sent(0);
        assert_eq!(budget.max(), 4);
        assert_eq!((0..10).filter(|_| budget.admit_retry(0, true)).count(), 4);
        let retry_ended = AttemptEnd {
            status: None,
            retry: true,
            outcome: AttemptOutcome::Timeout,
            transient: true,
            latency: 1,
        };
        budget.sent(0);
        budget.attempt_ended(0, &retry_ended);
        assert!(budget.admit_retry(0, true));
        budget.retry_cancelled(0);
        assert_eq!(budget.retries, 3);
    }
}
