//! What happened to an attempt and to an operation, and which client-side control refused one,
//! as closed enums with one name table each.
//!
//! The engine records these values, the metrics count them by index, and the writers print
//! their names; no reason or outcome is ever found by comparing strings. The names are the
//! output format's contract (`trace.csv`, the `failed_<reason>` columns of `timeseries.csv`,
//! the `failures` object of `summary.json`): extend, don't rename.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::retry::decision::StopReason;

/// The kinds of control, with the names scenario files use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlKind {
    /// A retry budget: Finagle and Linkerd (a ratio of requests over a window, plus a minimum
    /// rate), or Envoy (a ratio of active requests, plus a minimum concurrency).
    RetryBudget,
    /// gRPC's retry throttling token bucket (gRFC A6).
    GrpcThrottling,
    /// The AWS SDKs' standard-mode retry quota.
    AwsRetryQuota,
    /// Google SRE client-side adaptive throttling.
    SreThrottling,
    /// A circuit breaker with resilience4j's semantics.
    CircuitBreaker,
    /// The AWS SDKs' adaptive mode: a rate limiter that delays sends, never refuses them.
    AwsAdaptive,
    /// Envoy's limit on requests in flight to a cluster (`max_requests`).
    ConnectionPool,
    /// A circuit breaker that stops only retries (Brooker's retry circuit breaker).
    RetryBreaker,
    /// Brooker's capped retry token bucket.
    TokenBucket,
}

impl ControlKind {
    /// The kinds that can refuse a send, in the order of their failure columns.
    pub const VETOING: [ControlKind; 8] = [
        ControlKind::RetryBudget,
        ControlKind::GrpcThrottling,
        ControlKind::AwsRetryQuota,
        ControlKind::SreThrottling,
        ControlKind::CircuitBreaker,
        ControlKind::ConnectionPool,
        ControlKind::RetryBreaker,
        ControlKind::TokenBucket,
    ];

    /// The `kind` a scenario writes.
    pub fn name(self) -> &'static str {
        match self {
            ControlKind::RetryBudget => "retry-budget",
            ControlKind::GrpcThrottling => "grpc-throttling",
            ControlKind::AwsRetryQuota => "aws-retry-quota",
            ControlKind::SreThrottling => "sre-throttling",
            ControlKind::CircuitBreaker => "circuit-breaker",
            ControlKind::AwsAdaptive => "aws-adaptive",
            ControlKind::ConnectionPool => "connection-pool",
            ControlKind::RetryBreaker => "retry-breaker",
            ControlKind::TokenBucket => "token-bucket",
        }
    }

    /// The failure reason of a call this control stopped (a kind that never refuses has
    /// none).
    pub fn veto_name(self) -> &'static str {
        match self {
            ControlKind::RetryBudget => "retry-budget-exhausted",
            ControlKind::GrpcThrottling => "retry-throttled",
            ControlKind::AwsRetryQuota => "retry-quota-exhausted",
            ControlKind::SreThrottling => "throttled-locally",
            ControlKind::CircuitBreaker => "circuit-open",
            ControlKind::ConnectionPool => "pool-overflow",
            ControlKind::RetryBreaker => "retry-breaker-open",
            ControlKind::TokenBucket => "retry-tokens-exhausted",
            ControlKind::AwsAdaptive => unreachable!("the adaptive limiter delays, never refuses"),
        }
    }

    /// It can refuse a call's first send, which then ends at once without leaving the client:
    /// the circuit breaker while open, adaptive throttling, the AWS adaptive limiter when
    /// its delay would pass the call's deadline, and a full connection pool.
    pub fn refuses_locally(self) -> bool {
        matches!(
            self,
            ControlKind::CircuitBreaker
                | ControlKind::SreThrottling
                | ControlKind::AwsAdaptive
                | ControlKind::ConnectionPool
        )
    }

    /// It can refuse a retry (and never a first send), which then ends the call at once.
    pub fn refuses_retries(self) -> bool {
        matches!(
            self,
            ControlKind::RetryBudget
                | ControlKind::GrpcThrottling
                | ControlKind::AwsRetryQuota
                | ControlKind::RetryBreaker
                | ControlKind::TokenBucket
        )
    }

    /// Its position in [`ControlKind::VETOING`].
    pub fn veto_index(self) -> usize {
        ControlKind::VETOING
            .iter()
            .position(|kind| *kind == self)
            .expect("a kind that refuses")
    }
}

impl fmt::Display for ControlKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an operation ended without success: one of the decision's reasons, a status check
/// that could not say what happened, or a client-side control that refused to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureReason {
    /// The retry decision said stop.
    Decision(StopReason),
    /// The client asked the status endpoint and stopped before it could say whether the write
    /// happened: the outcome is unknown.
    StatusUnknown,
    /// A control refused the retry (or the send) the decision allowed.
    Control(ControlKind),
    /// The decision allowed a retry, and the client, which retries only with a probability
    /// (`retry_probability`), drew not to.
    RetryDeclined,
}

/// The number of reasons.
const REASONS: usize = StopReason::ALL.len() + 1 + ControlKind::VETOING.len() + 1;

impl FailureReason {
    /// Every reason, in the order of the columns that count them: the decision's, in the order
    /// of its checks, then `status-unknown`, then the controls' vetoes, then `retry-declined`.
    pub const ALL: [FailureReason; REASONS] = {
        let mut all = [FailureReason::StatusUnknown; REASONS];
        let mut index = 0;
        while index < StopReason::ALL.len() {
            all[index] = FailureReason::Decision(StopReason::ALL[index]);
            index += 1;
        }
        let mut control = 0;
        while control < ControlKind::VETOING.len() {
            all[StopReason::ALL.len() + 1 + control] =
                FailureReason::Control(ControlKind::VETOING[control]);
            control += 1;
        }
        all[REASONS - 1] = FailureReason::RetryDeclined;
        all
    };

    /// The reason's name: the article's for the decision's reasons.
    pub fn name(self) -> &'static str {
        match self {
            FailureReason::Decision(reason) => reason.name(),
            FailureReason::StatusUnknown => "status-unknown",
            FailureReason::Control(kind) => kind.veto_name(),
            FailureReason::RetryDeclined => "retry-declined",
        }
    }

    /// The position of this reason in [`FailureReason::ALL`].
    pub fn index(self) -> usize {
        match self {
            FailureReason::Decision(reason) => reason as usize,
            FailureReason::StatusUnknown => StopReason::ALL.len(),
            FailureReason::Control(kind) => StopReason::ALL.len() + 1 + kind.veto_index(),
            FailureReason::RetryDeclined => REASONS - 1,
        }
    }

    /// Whether an operation that ended for this reason has an unknown outcome.
    pub fn is_unknown_outcome(self) -> bool {
        matches!(
            self,
            FailureReason::Decision(StopReason::UnknownResult) | FailureReason::StatusUnknown
        )
    }
}

impl From<StopReason> for FailureReason {
    fn from(reason: StopReason) -> Self {
        FailureReason::Decision(reason)
    }
}

impl fmt::Display for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a client learned from one attempt (or status check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// A success.
    Ok,
    /// Refused: 429 from a rate limiter, or an overload status.
    Rejected,
    /// 409: a request with the same idempotency key is still in flight.
    Conflict,
    /// An error status: an injected error, or a downstream call that failed for good.
    Error,
    /// The connection was reset or refused.
    Reset,
    /// The client stopped waiting.
    Timeout,
    /// Status check: the write happened.
    Committed,
    /// Status check: the write never happened.
    NotFound,
    /// Status check: the request is still being processed.
    Pending,
    /// Never sent: a client-side control refused it.
    NotSent,
    /// A hedge still in flight when its call ended: the caller stopped waiting for it.
    Cancelled,
}

impl AttemptOutcome {
    /// The name `trace.csv` prints.
    pub fn name(self) -> &'static str {
        match self {
            AttemptOutcome::Ok => "ok",
            AttemptOutcome::Rejected => "rejected",
            AttemptOutcome::Conflict => "conflict",
            AttemptOutcome::Error => "error",
            AttemptOutcome::Reset => "reset",
            AttemptOutcome::Timeout => "timeout",
            AttemptOutcome::Committed => "committed",
            AttemptOutcome::NotFound => "not-found",
            AttemptOutcome::Pending => "pending",
            AttemptOutcome::NotSent => "not-sent",
            AttemptOutcome::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the client did after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// The operation succeeded.
    Success,
    /// It sends another attempt (or status check) after a delay.
    Retry,
    /// It asks the status endpoint what happened.
    StatusCheck,
    /// It stopped without success.
    Stop(FailureReason),
    /// A hedged call sends its next hedge (at once, or after a pushback).
    Hedge,
    /// A hedged call waits for the hedges still in flight.
    AwaitHedges,
    /// The call had already ended (another hedge won, or ended it).
    CallEnded,
}

impl NextStep {
    /// The name `trace.csv` prints: `success`, `retry`, `status-check`, `hedge`,
    /// `wait-for-hedges`, `call-ended`, or the failure reason.
    pub fn name(self) -> &'static str {
        match self {
            NextStep::Success => "success",
            NextStep::Retry => "retry",
            NextStep::StatusCheck => "status-check",
            NextStep::Stop(reason) => reason.name(),
            NextStep::Hedge => "hedge",
            NextStep::AwaitHedges => "wait-for-hedges",
            NextStep::CallEnded => "call-ended",
        }
    }
}

impl fmt::Display for NextStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reasons_are_the_decisions_then_status_unknown() {
        for (index, reason) in FailureReason::ALL.iter().enumerate() {
            assert_eq!(reason.index(), index);
        }
        let decision: Vec<FailureReason> = StopReason::ALL
            .iter()
            .map(|&reason| FailureReason::from(reason))
            .collect();
        assert_eq!(&FailureReason::ALL[..7], &decision[..]);
        for reason in StopReason::ALL {
            assert_eq!(FailureReason::from(reason).name(), reason.name());
        }
        assert_eq!(FailureReason::StatusUnknown.name(), "status-unknown");
        assert_eq!(FailureReason::ALL[8].name(), "retry-budget-exhausted");
        assert_eq!(FailureReason::ALL[12].name(), "circuit-open");
        assert_eq!(
            FailureReason::ALL[FailureReason::ALL.len() - 1].name(),
            "retry-declined"
        );
        let unknown: Vec<FailureReason> = FailureReason::ALL
            .into_iter()
            .filter(|reason| reason.is_unknown_outcome())
            .collect();
        assert_eq!(
            unknown,
            [
                FailureReason::Decision(StopReason::UnknownResult),
                FailureReason::StatusUnknown
            ]
        );
    }

    #[test]
    fn next_steps_name_themselves_or_their_reason() {
        assert_eq!(NextStep::Success.name(), "success");
        assert_eq!(NextStep::StatusCheck.name(), "status-check");
        assert_eq!(
            NextStep::Stop(StopReason::MaxAttempts.into()).name(),
            "max-attempts"
        );
        assert_eq!(AttemptOutcome::NotFound.to_string(), "not-found");
    }
}
