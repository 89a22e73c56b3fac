//! `controls = [...]` of a policy (or of a tier's `retry`), as a scenario file writes them,
//! and their resolution into [`ControlModel`]s with every default filled in.
//!
//! One flat table per control, `kind` first; each kind reads only its own settings, and a
//! setting of another kind is an error that lists the kind's own. Defaults are the published
//! ones (see each control's module in [`crate::control`]); gRPC throttling has none, so its two
//! settings are required, as they are in a gRPC service config.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::base::time::{Duration, MICROS_PER_SECOND};
use crate::base::values::{Bounded, BudgetPercent, Percent, Positive};
use crate::control::aws_retry_quota::AwsRetryQuotaConfig;
use crate::control::circuit_breaker::{BreakerWindow, CircuitBreakerConfig};
use crate::control::connection_pool::{
    ConnectionPoolConfig, DEFAULT_HTTP1_LIMIT, DEFAULT_MAX_REQUESTS,
};
use crate::control::grpc_throttling::GrpcThrottlingConfig;
use crate::control::retry_breaker::RetryBreakerConfig;
use crate::control::retry_budget::{ConcurrencyBudgetConfig, WindowedBudgetConfig};
use crate::control::sre_throttling::SreThrottlingConfig;
use crate::control::token_bucket::{self, TokenBucketConfig};
use crate::control::{ControlConfig, ControlKind, ControlModel, Scope};

use super::Problem;

/// `{ kind = "retry-budget", percent = 20, min_per_s = 10, ttl = "10s" }`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSpec {
    /// `retry-budget`, `grpc-throttling`, `aws-retry-quota`, `aws-adaptive`, `sre-throttling`,
    /// `circuit-breaker`, `connection-pool`, `retry-breaker` or `token-bucket`.
    pub kind: ControlKind,
    /// Whose history the state holds: `client`, `process` (default) or `global`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// `retry-budget`: retries per 100 calls (Finagle, Linkerd: 20), or per 100 active requests
    /// with `min_concurrency` (Envoy: 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<BudgetPercent>,
    /// `retry-budget`: retries per second always allowed (Finagle, Linkerd: 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_per_s: Option<Bounded<0, 1_000_000>>,
    /// `retry-budget`: the window, whole seconds from 1s to 60s (Finagle, Linkerd: 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Spanned<Duration>>,
    /// `retry-budget`, Envoy's: retries outstanding always allowed (3). Makes the budget
    /// Envoy's, over concurrent requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_concurrency: Option<Bounded<0, 1_000_000>>,
    /// `grpc-throttling`: the bucket's size, 1 to 1000 (required; gRFC A6's example: 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<Bounded<1, 1000>>,
    /// `grpc-throttling`: tokens a success gives back, three decimals (required; example 0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ratio: Option<Positive>,
    /// `aws-retry-quota`: tokens at the start and at most (500); `token-bucket`: the same
    /// (Brooker's 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Bounded<1, 1_000_000_000>>,
    /// `aws-retry-quota`: cost of a retry (5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_cost: Option<Bounded<0, 1_000_000_000>>,
    /// `aws-retry-quota`: cost of a retry after a timeout (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_cost: Option<Bounded<0, 1_000_000_000>>,
    /// `aws-retry-quota`: tokens a success without retry gives back (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_refund: Option<Bounded<0, 1_000_000_000>>,
    /// `token-bucket`: tokens a call that starts adds, three decimals (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credit: Option<Positive>,
    /// `token-bucket`: tokens a retry takes, three decimals (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Positive>,
    /// `token-bucket`: a retry needs more tokens than this, from 0 to below `capacity`, three
    /// decimals (1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// `retry-breaker`: failed attempts per call above which retries stop, three decimals
    /// (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures_per_call: Option<Positive>,
    /// `sre-throttling`: the multiplier on accepts (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<Positive>,
    /// `sre-throttling`: the counting window (2 minutes); `circuit-breaker`: a time-based
    /// window, whole seconds (instead of `window_calls`); `retry-breaker`: counts over this
    /// window instead of since the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Spanned<Duration>>,
    /// `circuit-breaker`: failure rate, percent, that opens it (50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<Percent>,
    /// `circuit-breaker`: slow-call rate, percent, that opens it (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_call_rate: Option<Percent>,
    /// `circuit-breaker`: a call longer than this is slow (60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_call_duration: Option<Duration>,
    /// `circuit-breaker`: a count-based window of this many calls (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_calls: Option<Bounded<1, 100_000>>,
    /// `circuit-breaker`: calls recorded before a rate counts (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_calls: Option<Bounded<1, 100_000>>,
    /// `circuit-breaker`: how long it stays open (60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_open: Option<Duration>,
    /// `circuit-breaker`: trial calls let through half-open (10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_open_calls: Option<Bounded<1, 100_000>>,
    /// `connection-pool`: attempts in flight at once (Envoy's `max_requests`: 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<Bounded<1, 1_000_000_000>>,
    /// `connection-pool`, HTTP/1.1: connections, one request each (1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<Bounded<1, 1_000_000_000>>,
    /// `connection-pool`, HTTP/1.1: requests that may wait for a connection (1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending_requests: Option<Bounded<0, 1_000_000_000>>,
}

/// The settings each kind reads, besides `kind` and `scope`.
fn settings_of(kind: ControlKind) -> &'static [&'static str] {
    match kind {
        ControlKind::RetryBudget => &["percent", "min_per_s", "ttl", "min_concurrency"],
        ControlKind::GrpcThrottling => &["max_tokens", "token_ratio"],
        ControlKind::AwsRetryQuota => &["capacity", "retry_cost", "timeout_cost", "success_refund"],
        ControlKind::SreThrottling => &["k", "window"],
        ControlKind::CircuitBreaker => &[
            "failure_rate",
            "slow_call_rate",
            "slow_call_duration",
            "window_calls",
            "window",
            "minimum_calls",
            "wait_open",
            "half_open_calls",
        ],
        ControlKind::AwsAdaptive => &[],
        ControlKind::ConnectionPool => &["max_requests", "max_connections", "max_pending_requests"],
        ControlKind::RetryBreaker => &["max_failures_per_call", "window"],
        ControlKind::TokenBucket => &["capacity", "credit", "cost", "threshold"],
    }
}

impl ControlSpec {
    /// The settings written, by name.
    fn written(&self) -> Vec<&'static str> {
        let present = [
            ("percent", self.percent.is_some()),
            ("min_per_s", self.min_per_s.is_some()),
            ("ttl", self.ttl.is_some()),
            ("min_concurrency", self.min_concurrency.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("token_ratio", self.token_ratio.is_some()),
            ("capacity", self.capacity.is_some()),
            ("retry_cost", self.retry_cost.is_some()),
            ("timeout_cost", self.timeout_cost.is_some()),
            ("success_refund", self.success_refund.is_some()),
            ("k", self.k.is_some()),
            ("window", self.window.is_some()),
            ("failure_rate", self.failure_rate.is_some()),
            ("slow_call_rate", self.slow_call_rate.is_some()),
            ("slow_call_duration", self.slow_call_duration.is_some()),
            ("window_calls", self.window_calls.is_some()),
            ("minimum_calls", self.minimum_calls.is_some()),
            ("wait_open", self.wait_open.is_some()),
            ("half_open_calls", self.half_open_calls.is_some()),
            ("max_requests", self.max_requests.is_some()),
            ("max_connections", self.max_connections.is_some()),
            ("max_pending_requests", self.max_pending_requests.is_some()),
            ("credit", self.credit.is_some()),
            ("cost", self.cost.is_some()),
            ("threshold", self.threshold.is_some()),
            (
                "max_failures_per_call",
                self.max_failures_per_call.is_some(),
            ),
        ];
        present
            .into_iter()
            .filter_map(|(name, written)| written.then_some(name))
            .collect()
    }

    /// Checks the relations a single value cannot: settings that belong to the kind, required
    /// settings, whole seconds. The error says what would be valid.
    pub fn check(&self) -> Result<(), String> {
        let kind = self.kind;
        let own = settings_of(kind);
        if let Some(foreign) = self.written().into_iter().find(|name| !own.contains(name)) {
            return Err(format!(
                "`{foreign}` is not a setting of a {kind} control; its settings are {} (and scope)",
                own.join(", ")
            ));
        }
        match kind {
            ControlKind::RetryBudget => {
                if self.min_concurrency.is_some()
                    && (self.min_per_s.is_some() || self.ttl.is_some())
                {
                    return Err("a retry budget is either over a window of calls (Finagle, Linkerd: percent, min_per_s, ttl) or over concurrent requests (Envoy: percent, min_concurrency), not both".into());
                }
                if let Some(ttl) = &self.ttl {
                    let micros = ttl.get_ref().micros();
                    if micros % MICROS_PER_SECOND != 0
                        || !(1..=60).contains(&(micros / MICROS_PER_SECOND))
                    {
                        return Err(format!(
                            "ttl {} must be whole seconds from 1s to 60s, as Finagle's RetryBudget requires",
                            ttl.get_ref()
                        ));
                    }
                }
            }
            ControlKind::GrpcThrottling => {
                if self.max_tokens.is_none() || self.token_ratio.is_none() {
                    return Err("gRPC throttling has no defaults: write both max_tokens (1 to 1000) and token_ratio (above 0), for example gRFC A6's max_tokens = 10, token_ratio = 0.1".into());
                }
                if self.token_ratio.is_some_and(|ratio| ratio.get() < 0.001) {
                    return Err(
                        "token_ratio is kept to three decimals; it must be at least 0.001".into(),
                    );
                }
            }
            ControlKind::SreThrottling => {
                if self
                    .window
                    .as_ref()
                    .is_some_and(|window| window.get_ref().micros() < 24)
                {
                    return Err("window must be at least 24us (it is kept in 24 slices)".into());
                }
            }
            ControlKind::CircuitBreaker => {
                if self.window.is_some() && self.window_calls.is_some() {
                    return Err("a breaker's window is either window_calls (count-based) or window (time-based, whole seconds), not both".into());
                }
                if let Some(window) = &self.window {
                    let micros = window.get_ref().micros();
                    if micros % MICROS_PER_SECOND != 0
                        || !(1..=3600).contains(&(micros / MICROS_PER_SECOND))
                    {
                        return Err(format!(
                            "window {} must be whole seconds from 1s to 3600s (resilience4j keeps one bucket per second)",
                            window.get_ref()
                        ));
                    }
                }
                if self.failure_rate.is_some_and(|rate| rate.get() == 0.0)
                    || self.slow_call_rate.is_some_and(|rate| rate.get() == 0.0)
                {
                    return Err(
                        "failure_rate and slow_call_rate must be above 0 and at most 100".into(),
                    );
                }
                if self.wait_open.is_some_and(|wait| wait.micros() == 0) {
                    return Err("wait_open must be above zero".into());
                }
            }
            ControlKind::RetryBreaker => {
                if self
                    .max_failures_per_call
                    .is_some_and(|ratio| ratio.get() < 0.001)
                {
                    return Err("max_failures_per_call is kept to three decimals; it must be at least 0.001".into());
                }
                if self
                    .window
                    .as_ref()
                    .is_some_and(|window| window.get_ref().micros() < 10)
                {
                    return Err("window must be at least 10us (it is kept in 10 slices); leave it out to count since the start, as Brooker's simulator does".into());
                }
            }
            ControlKind::TokenBucket => {
                if [("credit", self.credit), ("cost", self.cost)]
                    .into_iter()
                    .any(|(_, value)| value.is_some_and(|value| value.get() < 0.001))
                {
                    return Err(
                        "credit and cost are kept to three decimals; each must be at least 0.001"
                            .into(),
                    );
                }
                let capacity = self
                    .capacity
                    .map_or(TokenBucketConfig::default().capacity_milli, |c| {
                        c.get() as i64 * token_bucket::MILLI
                    });
                if let Some(threshold) = self.threshold
                    && !(threshold >= 0.0 && milli(threshold) < capacity)
                {
                    return Err(format!(
                        "threshold {threshold} must be at least 0 and below capacity ({}): a retry needs more tokens than the threshold",
                        capacity / token_bucket::MILLI
                    ));
                }
            }
            ControlKind::AwsRetryQuota | ControlKind::AwsAdaptive | ControlKind::ConnectionPool => {
            }
        }
        Ok(())
    }

    /// The control, every default filled in (the spec is checked).
    pub fn model(&self) -> ControlModel {
        let config = match self.kind {
            ControlKind::AwsAdaptive => ControlConfig::AwsAdaptive,
            ControlKind::ConnectionPool => {
                // Either HTTP/1.1 limit makes the pool an HTTP/1.1 one, the other at Envoy's
                // default.
                let http1 = self.max_connections.is_some() || self.max_pending_requests.is_some();
                ControlConfig::ConnectionPool(ConnectionPoolConfig {
                    max_requests: self
                        .max_requests
                        .map_or(DEFAULT_MAX_REQUESTS, |max| max.get()),
                    max_connections: http1.then(|| {
                        self.max_connections
                            .map_or(DEFAULT_HTTP1_LIMIT, |max| max.get())
                    }),
                    max_pending: http1.then(|| {
                        self.max_pending_requests
                            .map_or(DEFAULT_HTTP1_LIMIT, |max| max.get())
                    }),
                })
            }
            ControlKind::RetryBudget => {
                if let Some(min_concurrency) = self.min_concurrency {
                    let defaults = ConcurrencyBudgetConfig::default();
                    ControlConfig::ConcurrencyBudget(ConcurrencyBudgetConfig {
                        percent: self.percent.map_or(defaults.percent, |p| p.get()),
                        min_concurrency: min_concurrency.get(),
                    })
                } else {
                    let defaults = WindowedBudgetConfig::default();
                    ControlConfig::WindowedBudget(WindowedBudgetConfig {
                        percent: self.percent.map_or(defaults.percent, |p| p.get()),
                        min_per_s: self.min_per_s.map_or(defaults.min_per_s, |m| m.get()),
                        ttl: self
                            .ttl
                            .as_ref()
                            .map_or(defaults.ttl, |t| t.get_ref().micros()),
                    })
                }
            }
            ControlKind::RetryBreaker => ControlConfig::RetryBreaker(RetryBreakerConfig {
                max_failures_per_call_milli: self.max_failures_per_call.map_or(
                    RetryBreakerConfig::default().max_failures_per_call_milli,
                    |ratio| milli(ratio.get()) as u64,
                ),
                window: self.window.as_ref().map(|w| w.get_ref().micros()),
            }),
            ControlKind::TokenBucket => {
                let defaults = TokenBucketConfig::default();
                let or = |value: Option<Positive>, default: i64| {
                    value.map_or(default, |v| milli(v.get()))
                };
                ControlConfig::TokenBucket(TokenBucketConfig {
                    capacity_milli: self.capacity.map_or(defaults.capacity_milli, |c| {
                        c.get() as i64 * token_bucket::MILLI
                    }),
                    credit_milli: or(self.credit, defaults.credit_milli),
                    cost_milli: or(self.cost, defaults.cost_milli),
                    threshold_milli: self.threshold.map_or(defaults.threshold_milli, milli),
                })
            }
            ControlKind::GrpcThrottling => ControlConfig::GrpcThrottling(GrpcThrottlingConfig {
                max_tokens: self.max_tokens.expect("checked").get() as u32,
                token_ratio_milli: (self.token_ratio.expect("checked").get() * 1000.0) as u32,
            }),
            ControlKind::AwsRetryQuota => {
                let defaults = AwsRetryQuotaConfig::default();
                let or = |value: Option<Bounded<0, 1_000_000_000>>, default: u32| {
                    value.map_or(default, |v| v.get() as u32)
                };
                ControlConfig::AwsRetryQuota(AwsRetryQuotaConfig {
                    capacity: self.capacity.map_or(defaults.capacity, |c| c.get() as u32),
                    retry_cost: or(self.retry_cost, defaults.retry_cost),
                    timeout_cost: or(self.timeout_cost, defaults.timeout_cost),
                    success_refund: or(self.success_refund, defaults.success_refund),
                })
            }
            ControlKind::SreThrottling => {
                let defaults = SreThrottlingConfig::default();
                ControlConfig::SreThrottling(SreThrottlingConfig {
                    k: self.k.map_or(defaults.k, |k| k.get()),
                    window: self
                        .window
                        .as_ref()
                        .map_or(defaults.window, |w| w.get_ref().micros()),
                })
            }
            ControlKind::CircuitBreaker => {
                let defaults = CircuitBreakerConfig::default();
                let window = match (&self.window, self.window_calls) {
                    (Some(window), _) => BreakerWindow::Seconds(
                        (window.get_ref().micros() / MICROS_PER_SECOND) as u32,
                    ),
                    (None, Some(calls)) => BreakerWindow::Calls(calls.get() as u32),
                    (None, None) => defaults.window,
                };
                let count = |value: Option<Bounded<1, 100_000>>, default: u32| {
                    value.map_or(default, |v| v.get() as u32)
                };
                ControlConfig::CircuitBreaker(CircuitBreakerConfig {
                    failure_rate: self
                        .failure_rate
                        .map_or(defaults.failure_rate, |r| r.get() as f32),
                    slow_call_rate: self
                        .slow_call_rate
                        .map_or(defaults.slow_call_rate, |r| r.get() as f32),
                    slow_call_duration: self
                        .slow_call_duration
                        .map_or(defaults.slow_call_duration, Duration::micros),
                    window,
                    minimum_calls: count(self.minimum_calls, defaults.minimum_calls),
                    wait_open: self.wait_open.map_or(defaults.wait_open, Duration::micros),
                    half_open_calls: count(self.half_open_calls, defaults.half_open_calls),
                })
            }
        };
        ControlModel {
            config,
            scope: self.scope.unwrap_or_default(),
        }
    }
}

impl ControlSpec {
    /// The same control with every default written out, for the resolved scenario a run
    /// saves (the spec is checked).
    pub fn resolved(&self) -> ControlSpec {
        let model = self.model();
        let mut spec = ControlSpec {
            kind: self.kind,
            scope: Some(model.scope),
            ..ControlSpec::empty(self.kind)
        };
        let seconds = |micros: u64| Some(Spanned::new(0..0, Duration(micros)));
        match model.config {
            ControlConfig::AwsAdaptive => {}
            ControlConfig::RetryBreaker(config) => {
                spec.max_failures_per_call = Some(Positive(
                    config.max_failures_per_call_milli as f64 / token_bucket::MILLI as f64,
                ));
                spec.window = config.window.and_then(seconds);
            }
            ControlConfig::TokenBucket(config) => {
                let tokens = |thousandths: i64| thousandths as f64 / token_bucket::MILLI as f64;
                spec.capacity = Some(Bounded(
                    (config.capacity_milli / token_bucket::MILLI) as u64,
                ));
                spec.credit = Some(Positive(tokens(config.credit_milli)));
                spec.cost = Some(Positive(tokens(config.cost_milli)));
                spec.threshold = Some(tokens(config.threshold_milli));
            }
            ControlConfig::ConnectionPool(config) => {
                spec.max_requests = Some(Bounded(config.max_requests));
                spec.max_connections = config.max_connections.map(Bounded);
                spec.max_pending_requests = config.max_pending.map(Bounded);
            }
            ControlConfig::WindowedBudget(config) => {
                spec.percent = Some(BudgetPercent(config.percent));
                spec.min_per_s = Some(Bounded(config.min_per_s));
                spec.ttl = seconds(config.ttl);
            }
            ControlConfig::ConcurrencyBudget(config) => {
                spec.percent = Some(BudgetPercent(config.percent));
                spec.min_concurrency = Some(Bounded(config.min_concurrency));
            }
            ControlConfig::GrpcThrottling(_) => {
                spec.max_tokens = self.max_tokens;
                spec.token_ratio = self.token_ratio;
            }
            ControlConfig::AwsRetryQuota(config) => {
                spec.capacity = Some(Bounded(u64::from(config.capacity)));
                spec.retry_cost = Some(Bounded(u64::from(config.retry_cost)));
                spec.timeout_cost = Some(Bounded(u64::from(config.timeout_cost)));
                spec.success_refund = Some(Bounded(u64::from(config.success_refund)));
            }
            ControlConfig::SreThrottling(config) => {
                spec.k = Some(Positive(config.k));
                spec.window = seconds(config.window);
            }
            ControlConfig::CircuitBreaker(config) => {
                spec.failure_rate = Some(Percent(f64::from(config.failure_rate)));
                spec.slow_call_rate = Some(Percent(f64::from(config.slow_call_rate)));
                spec.slow_call_duration = Some(Duration(config.slow_call_duration));
                match config.window {
                    BreakerWindow::Calls(calls) => {
                        spec.window_calls = Some(Bounded(u64::from(calls)))
                    }
                    BreakerWindow::Seconds(s) => {
                        spec.window = seconds(u64::from(s) * MICROS_PER_SECOND)
                    }
                }
                spec.minimum_calls = Some(Bounded(u64::from(config.minimum_calls)));
                spec.wait_open = Some(Duration(config.wait_open));
                spec.half_open_calls = Some(Bounded(u64::from(config.half_open_calls)));
            }
        }
        spec
    }

    /// A control of `kind` with nothing written but its kind.
    pub fn empty(kind: ControlKind) -> ControlSpec {
        ControlSpec {
            kind,
            scope: None,
            percent: None,
            min_per_s: None,
            ttl: None,
            min_concurrency: None,
            max_tokens: None,
            token_ratio: None,
            capacity: None,
            retry_cost: None,
            timeout_cost: None,
            success_refund: None,
            k: None,
            window: None,
            failure_rate: None,
            slow_call_rate: None,
            slow_call_duration: None,
            window_calls: None,
            minimum_calls: None,
            wait_open: None,
            half_open_calls: None,
            max_requests: None,
            max_connections: None,
            max_pending_requests: None,
            credit: None,
            cost: None,
            threshold: None,
            max_failures_per_call: None,
        }
    }
}
/// A number of tokens (or a ratio) in thousandths, to the nearest (so that 1.001 is 1001, not
/// the 1000 its binary value would truncate to).
fn milli(value: f64) -> i64 {
    (value * token_bucket::MILLI as f64).round() as i64
}

/// Each control's settings belong to its kind, and the required ones are there.
pub(super) fn validate_controls(controls: &[Spanned<ControlSpec>]) -> Result<(), Problem> {
    for control in controls {
        control
            .get_ref()
            .check()
            .map_err(|message| (control.span(), message))?;
    }
    Ok(())
}
