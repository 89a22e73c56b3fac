//! The retry decision: the source article's `planRetry`, check for check.
//!
//! A client that saw an attempt fail asks two questions, in this order: *may* it repeat the
//! operation at all (is it repeatable, is the signal transient, is there budget left), and only
//! then *when*. [`plan_retry`] answers both with the article's reference procedure
//! (`planRetry`): the same inputs, the same order of checks, the same reason names.
//! The first check that fires decides:
//!
//! | order | condition | outcome |
//! |---|---|---|
//! | 1 | not repeatable: no idempotent method, no idempotency key, no status endpoint | `unknown-result` |
//! | 2 | not transient: no transport error, status not 429 or 503 (or the policy's `retryable_statuses`) | `not-transient` |
//! | 3 | attempt not a non-negative integer, or max attempts not an integer >= 1 | `invalid-attempt` |
//! | 4 | attempt >= max attempts | `max-attempts` |
//! | 5 | now, deadline, base, cap or random not finite; base < 0; cap < base; multiplier not finite or <= 0 | `invalid-delay` |
//! | 6 | Retry-After present and not finite or negative | `invalid-retry-after` |
//! | 7 | now >= deadline | `deadline-exhausted` |
//! | 8 | backoff, jitter and Retry-After give the delay | |
//! | 9 | now + delay >= deadline | `deadline-exhausted` |
//! | 10 | otherwise | retry after the delay |
//!
//! With [`Jitter::Full`] and [`RetryAfterMode::Honor`] ([`plan_retry_article`]), the default
//! multiplier 2 and the default retryable statuses 429 and 503, every step is the article's.
//! A policy may change the multiplier (`min(cap, base * multiplier^attempt)` in step 8) and the
//! retryable statuses (check 2); nothing else. Other strategies change step 8 only; [`RetryAfterMode::Ignore`] also skips step 6,
//! since a client that never reads Retry-After cannot be stopped by a bad one.
//!
//! Numbers are `f64` because the article's procedure was written for JavaScript numbers: times
//! and the random unit may be fractional, and non-finite or non-integer input is rejected with
//! the reason the procedure gives, never a panic. The function is pure: the random units are
//! inputs, never drawn here.
//!
//! `attempt` is the 0-based index of the attempt that just failed, so with `max_attempts = 3`
//! retries are allowed after attempts 0, 1 and 2: up to four sends in all. That is the article's
//! arithmetic, kept literally.

use std::fmt;

use crate::retry::backoff::{Jitter, JitterInput, JitterStrategy, exponential_backoff_ms};
use crate::retry::retry_after::RetryAfterMode;

/// Methods that RFC 9110 §9.2.2 defines as idempotent. Compared case-sensitively, as method
/// names are (RFC 9110 §9.1) and as the article's `includes` does.
pub const IDEMPOTENT_METHODS: [&str; 6] = ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"];

/// Default base delay, the article's.
pub const DEFAULT_BASE_MS: f64 = 100.0;
/// Default cap of the exponential backoff, the article's.
pub const DEFAULT_CAP_MS: f64 = 2000.0;
/// Default retry budget, the article's.
pub const DEFAULT_MAX_ATTEMPTS: f64 = 3.0;
/// Default random unit, the article's (the middle of the jitter range).
pub const DEFAULT_RANDOM: f64 = 0.5;
/// Default growth of the backoff per retry, the article's `2^attempt`.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;

/// The methods `decide` accepts: RFC 9110 §9.3's eight and PATCH (RFC 5789). The decision
/// itself reads only whether a method is idempotent, so any other spelling would silently count
/// as a non-idempotent one (`post` would be answered `unknown-result`).
pub const HTTP_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// `method` if it is one of [`HTTP_METHODS`], spelled exactly; otherwise why not, with the
/// valid list and, for a method in the wrong case, its upper-case spelling (method names are
/// case-sensitive, RFC 9110 §9.1: `post` is not `POST`).
pub fn known_method(method: &str) -> Result<&str, String> {
    if HTTP_METHODS.contains(&method) {
        return Ok(method);
    }
    let hint = match HTTP_METHODS
        .iter()
        .find(|known| known.eq_ignore_ascii_case(method))
    {
        Some(upper) => {
            format!("methods are case-sensitive (RFC 9110 §9.1): did you mean `{upper}`? ")
        }
        None => crate::base::suggest::did_you_mean(method, HTTP_METHODS)
            .map(|near| format!("did you mean `{near}`? "))
            .unwrap_or_default(),
    };
    Err(format!(
        "unknown HTTP method {method:?}; {hint}valid methods: {}",
        HTTP_METHODS.join(", ")
    ))
}

/// Whether RFC 9110 defines `method` as idempotent (the article's `idempotentMethod`).
pub fn is_idempotent_method(method: &str) -> bool {
    IDEMPOTENT_METHODS.contains(&method)
}

/// What the client knows when an attempt has failed. Field names follow the article's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryInput {
    /// The operation's HTTP method is idempotent, see [`is_idempotent_method`].
    pub idempotent_method: bool,
    /// HTTP status of the failed attempt, if a response arrived.
    pub status: Option<f64>,
    /// The attempt failed without a response: timeout, reset, refused connection.
    pub transport_error: bool,
    /// 0-based index of the attempt that failed.
    pub attempt: f64,
    /// Current time in milliseconds.
    pub now_ms: f64,
    /// The operation's deadline in milliseconds, on the same clock as `now_ms`.
    pub deadline_ms: f64,
    /// Base delay in milliseconds (article default 100).
    pub base_ms: f64,
    /// Cap of the exponential backoff in milliseconds (article default 2000).
    pub cap_ms: f64,
    /// How many retries are allowed (article default 3), compared with `attempt`.
    pub max_attempts: f64,
    /// Random unit for the jitter; clamped to `[0, 1]` (article default 0.5).
    pub random: f64,
    /// Retry-After of the failed attempt in milliseconds, if it carried one.
    pub retry_after_ms: Option<f64>,
    /// The operation carries an idempotency key that the server honours.
    pub idempotency_key: bool,
    /// The client can ask a status endpoint what happened to the operation.
    pub status_endpoint: bool,
    /// The delay chosen before the previous retry, for strategies that grow from it
    /// (decorrelated jitter); `None` before the first retry.
    pub previous_delay_ms: Option<f64>,
    /// A second random unit, for [`RetryAfterMode::HonorJittered`]'s spread above Retry-After.
    pub retry_after_random: f64,
    /// The backoff's growth per retry (the article's 2).
    pub multiplier: f64,
    /// The attempt the backoff counts from (0): the backoff grows with `attempt - backoff_from`.
    /// A gRPC pushback ([`RetryAfterMode::Pushback`]) starts the count again after it.
    pub backoff_from: f64,
    /// The statuses check 2 treats as transient (the article's 429 and 503).
    pub retryable: StatusSet,
}

/// A set of error statuses, 400 to 599, as bits: small enough to copy with every decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusSet([u64; 4]);

impl StatusSet {
    /// The article's transient statuses: 429 and 503.
    pub const ARTICLE: StatusSet = StatusSet::EMPTY.with(429).with(503);
    /// No status.
    pub const EMPTY: StatusSet = StatusSet([0; 4]);
    /// The lowest status a set can hold.
    const FIRST: u16 = 400;
    /// The highest status a set can hold.
    pub const LAST: u16 = 599;

    /// The set with `status` added; statuses outside 400 to 599 are not errors a retry could
    /// outlive, and are ignored.
    pub const fn with(mut self, status: u16) -> StatusSet {
        if status >= Self::FIRST && status <= Self::LAST {
            let bit = (status - Self::FIRST) as usize;
            self.0[bit / 64] |= 1 << (bit % 64);
        }
        self
    }

    /// Whether `status` is in the set.
    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        (Self::FIRST..=Self::LAST).contains(&status) && {
            let bit = usize::from(status - Self::FIRST);
            self.0[bit / 64] & 1 << (bit % 64) != 0
        }
    }

    /// The statuses in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (Self::FIRST..=Self::LAST).filter(|status| self.contains(*status))
    }
}

impl fmt::Display for StatusSet {
    /// The statuses as short ranges: `429, 502-504`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let statuses: Vec<u16> = self.iter().collect();
        let mut runs = Vec::new();
        let mut index = 0;
        while index < statuses.len() {
            let start = statuses[index];
            while index + 1 < statuses.len() && statuses[index + 1] == statuses[index] + 1 {
                index += 1;
            }
            runs.push(match statuses[index] {
                end if end == start => start.to_string(),
                end => format!("{start}-{end}"),
            });
            index += 1;
        }
        f.write_str(&runs.join(", "))
    }
}

impl FromIterator<u16> for StatusSet {
    fn from_iter<I: IntoIterator<Item = u16>>(statuses: I) -> Self {
        statuses.into_iter().fold(StatusSet::EMPTY, StatusSet::with)
    }
}

impl RetryInput {
    /// The article's defaults for everything but the four inputs it has no default for: base
    /// 100 ms, cap 2000 ms, max attempts 3, random 0.5, no status, no transport error, no
    /// Retry-After, no idempotency key, no status endpoint. `retry_after_random` defaults to 0.5
    /// like `random`.
    pub fn new(method: &str, attempt: f64, now_ms: f64, deadline_ms: f64) -> Self {
        RetryInput {
            idempotent_method: is_idempotent_method(method),
            status: None,
            transport_error: false,
            attempt,
            now_ms,
            deadline_ms,
            base_ms: DEFAULT_BASE_MS,
            cap_ms: DEFAULT_CAP_MS,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            random: DEFAULT_RANDOM,
            retry_after_ms: None,
            idempotency_key: false,
            status_endpoint: false,
            previous_delay_ms: None,
            retry_after_random: DEFAULT_RANDOM,
            multiplier: DEFAULT_MULTIPLIER,
            backoff_from: 0.0,
            retryable: StatusSet::ARTICLE,
        }
    }

    /// Check 1: the operation may be repeated at all.
    pub fn is_repeatable(&self) -> bool {
        self.idempotent_method || self.idempotency_key || self.status_endpoint
    }

    /// Check 2: the failure is of a kind that a repeat can outlive: a transport error, or a
    /// status in `retryable` (429 and 503 by default).
    pub fn is_transient(&self) -> bool {
        self.transport_error
            || matches!(self.status, Some(status)
                if is_integer(status)
                    && (0.0..=f64::from(StatusSet::LAST)).contains(&status)
                    && self.retryable.contains(status as u16))
    }
}

/// Why the procedure said not to retry. The names are the article's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StopReason {
    /// The operation is not repeatable; after a failure its outcome is unknown.
    UnknownResult,
    /// The signal says repeating the same input cannot help (400, 401, 403, ...).
    NotTransient,
    /// `attempt` or `max_attempts` is not a valid count.
    InvalidAttempt,
    /// The retry budget is spent.
    MaxAttempts,
    /// A time, the base, the cap or the random unit is not usable.
    InvalidDelay,
    /// Retry-After is not finite or negative.
    InvalidRetryAfter,
    /// No time is left, or the next attempt would start at or after the deadline.
    DeadlineExhausted,
}

impl StopReason {
    /// Every reason, in the order of the checks.
    pub const ALL: [StopReason; 7] = [
        StopReason::UnknownResult,
        StopReason::NotTransient,
        StopReason::InvalidAttempt,
        StopReason::MaxAttempts,
        StopReason::InvalidDelay,
        StopReason::InvalidRetryAfter,
        StopReason::DeadlineExhausted,
    ];

    /// The article's name for the reason.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::UnknownResult => "unknown-result",
            StopReason::NotTransient => "not-transient",
            StopReason::InvalidAttempt => "invalid-attempt",
            StopReason::MaxAttempts => "max-attempts",
            StopReason::InvalidDelay => "invalid-delay",
            StopReason::InvalidRetryAfter => "invalid-retry-after",
            StopReason::DeadlineExhausted => "deadline-exhausted",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of [`plan_retry`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Send the next attempt after `delay_ms`; `backoff_ms` is the exponential backoff the delay
    /// was drawn under, `min(cap, base * 2^attempt)`, reported for every strategy.
    Retry { delay_ms: f64, backoff_ms: f64 },
    /// Do not send another attempt.
    Stop(StopReason),
}

/// The article's procedure exactly: full jitter, Retry-After honoured as a minimum.
pub fn plan_retry_article(input: &RetryInput) -> Decision {
    plan_retry(input, &Jitter::Full, RetryAfterMode::Honor)
}

/// The article's procedure with a chosen jitter strategy and Retry-After mode (see the module
/// documentation for the order of checks).
pub fn plan_retry(
    input: &RetryInput,
    jitter: &dyn JitterStrategy,
    retry_after_mode: RetryAfterMode,
) -> Decision {
    use StopReason::*;

    if !input.is_repeatable() {
        return Decision::Stop(UnknownResult);
    }
    if !input.is_transient() {
        return Decision::Stop(NotTransient);
    }
    if !is_integer(input.attempt)
        || input.attempt < 0.0
        || !is_integer(input.backoff_from)
        || !(0.0..=input.attempt).contains(&input.backoff_from)
        || !is_integer(input.max_attempts)
        || input.max_attempts < 1.0
    {
        return Decision::Stop(InvalidAttempt);
    }
    if input.attempt >= input.max_attempts {
        return Decision::Stop(MaxAttempts);
    }
    let times = [
        input.now_ms,
        input.deadline_ms,
        input.base_ms,
        input.cap_ms,
        input.random,
        input.multiplier,
    ];
    if !times.iter().all(|value| value.is_finite())
        || input.base_ms < 0.0
        || input.cap_ms < input.base_ms
        || input.multiplier <= 0.0
    {
        return Decision::Stop(InvalidDelay);
    }
    let retry_after_ms = input
        .retry_after_ms
        .filter(|_| retry_after_mode.reads_header());
    if retry_after_ms.is_some_and(|value| !value.is_finite() || value < 0.0) {
        return Decision::Stop(InvalidRetryAfter);
    }
    if input.now_ms >= input.deadline_ms {
        return Decision::Stop(DeadlineExhausted);
    }

    let backoff_index = input.attempt - input.backoff_from;
    let backoff_ms =
        exponential_backoff_ms(backoff_index, input.base_ms, input.cap_ms, input.multiplier);
    let jittered_ms = jitter.delay_ms(&JitterInput {
        retry_index: backoff_index,
        base_ms: input.base_ms,
        cap_ms: input.cap_ms,
        backoff_ms,
        previous_delay_ms: input.previous_delay_ms,
        unit: clamp_unit(input.random),
    });
    let delay_ms = retry_after_mode.apply(
        jittered_ms,
        retry_after_ms,
        clamp_unit(input.retry_after_random),
    );

    if input.now_ms + delay_ms >= input.deadline_ms {
        return Decision::Stop(DeadlineExhausted);
    }
    Decision::Retry {
        delay_ms,
        backoff_ms,
    }
}

/// JavaScript's `Number.isInteger`: finite and without a fractional part. Below 2^52 a
/// value is an integer exactly when truncating it through an `i64` keeps it; from 2^52 on every
/// finite value is one. (This is `fract() == 0.0` without its call to `trunc`, which cost a
/// tenth of every retry decision.)
fn is_integer(value: f64) -> bool {
    const EVERY_VALUE_AN_INTEGER: f64 = 4_503_599_627_370_496.0; // 2^52
    if value.abs() < EVERY_VALUE_AN_INTEGER {
        value == (value as i64) as f64
    } else {
        value.is_finite()
    }
}

/// `Math.min(1, Math.max(0, u))`. A non-finite unit never reaches here for `random` (check 5);
/// for `retry_after_random` NaN is treated as 0 so that a bad second draw cannot poison a delay.
fn clamp_unit(unit: f64) -> f64 {
    if unit.is_nan() {
        0.0
    } else {
        unit.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same answer as `is_finite() && fract() == 0.0`, JavaScript's definition, on the
    /// edges: zeros, halves, the powers of two where fractions run out, the extremes of `f64`,
    /// infinities and NaN, and the neighbours of each.
    /// Methods are matched exactly (RFC 9110 §9.1); a wrong case gets its upper-case spelling,
    /// a typo the nearest method, anything else the list alone.
    #[test]
    fn known_methods_are_spelled_exactly() {
        for method in HTTP_METHODS {
            assert_eq!(known_method(method), Ok(method));
        }
        let list = "valid methods: GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH";
        assert_eq!(
            known_method("post"),
            Err(format!(
                "unknown HTTP method \"post\"; methods are case-sensitive (RFC 9110 §9.1): did you mean `POST`? {list}"
            ))
        );
        assert_eq!(
            known_method("PSOT"),
            Err(format!(
                "unknown HTTP method \"PSOT\"; did you mean `POST`? {list}"
            ))
        );
        assert_eq!(
            known_method("PROPFIND"),
            Err(format!("unknown HTTP method \"PROPFIND\"; {list}"))
        );
    }

    #[test]
    fn is_integer_is_javascripts() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            1.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::EPSILON,
        ];
        for exponent in -60..=70 {
            let power = 2f64.powi(exponent);
            for value in [power, power + 0.5, power * 1.5, 3.0 * power] {
                let neighbours = [
                    value,
                    f64::from_bits(value.to_bits() + 1),
                    f64::from_bits(value.to_bits() - 1),
                ];
                values.extend(neighbours);
                values.extend(neighbours.map(|value| -value));
            }
        }
        for value in values {
            assert_eq!(
                is_integer(value),
                value.is_finite() && value.fract() == 0.0,
                "{value:e}"
            );
        }
    }

    /// The article's worked example: POST, 503, attempt 2, now 1000, deadline 3000, random 0.5,
    /// idempotency key.
    fn worked_example() -> RetryInput {
        RetryInput {
            status: Some(503.0),
            idempotency_key: true,
            ..RetryInput::new("POST", 2.0, 1000.0, 3000.0)
        }
    }

    fn stop(reason: StopReason) -> Decision {
        Decision::Stop(reason)
    }

    #[test]
    fn the_articles_worked_example() {
        assert_eq!(
            plan_retry_article(&worked_example()),
            Decision::Retry {
                delay_ms: 200.0,
                backoff_ms: 400.0
            }
        );
    }

    #[test]
    fn unknown_result_for_an_unprotected_post() {
        let input = RetryInput {
            idempotency_key: false,
            ..worked_example()
        };
        assert_eq!(plan_retry_article(&input), stop(StopReason::UnknownResult));
        // A timed-out POST is no different: its write may have committed.
        let timed_out = RetryInput {
            status: None,
            transport_error: true,
            ..input
        };
        assert_eq!(
            plan_retry_article(&timed_out),
            stop(StopReason::UnknownResult)
        );
    }

    #[test]
    fn a_status_endpoint_or_an_idempotent_method_makes_it_repeatable() {
        let with_endpoint = RetryInput {
            idempotency_key: false,
            status_endpoint: true,
            ..worked_example()
        };
        assert!(matches!(
            plan_retry_article(&with_endpoint),
            Decision::Retry { .. }
        ));
        for method in IDEMPOTENT_METHODS {
            let input = RetryInput {
                status: Some(503.0),
                ..RetryInput::new(method, 2.0, 1000.0, 3000.0)
            };
            assert!(matches!(plan_retry_article(&input), Decision::Retry { .. }));
        }
        // Method names are case-sensitive, as in the article.
        let lowercase = RetryInput {
            status: Some(503.0),
            ..RetryInput::new("get", 2.0, 1000.0, 3000.0)
        };
        assert_eq!(
            plan_retry_article(&lowercase),
            stop(StopReason::UnknownResult)
        );
    }

    #[test]
    fn not_transient_for_client_errors_and_missing_signals() {
        for status in [Some(400.0), Some(401.0), Some(403.0), Some(500.0), None] {
            let input = RetryInput {
                status,
                ..worked_example()
            };
            assert_eq!(
                plan_retry_article(&input),
                stop(StopReason::NotTransient),
                "{status:?}"
            );
        }
        for (status, transport_error) in [(Some(429.0), false), (None, true), (Some(400.0), true)] {
            let input = RetryInput {
                status,
                transport_error,
                ..worked_example()
            };
            assert!(matches!(plan_retry_article(&input), Decision::Retry { .. }));
        }
    }

    #[test]
    fn invalid_attempt_for_non_integers_and_bad_budgets() {
        let cases = [
            (-1.0, 3.0),
            (1.5, 3.0),
            (f64::NAN, 3.0),
            (f64::INFINITY, 3.0),
            (0.0, 0.0),
            (0.0, 2.5),
            (0.0, f64::NAN),
            (0.0, -1.0),
        ];
        for (attempt, max_attempts) in cases {
            let input = RetryInput {
                attempt,
                max_attempts,
                ..worked_example()
            };
            assert_eq!(
                plan_retry_article(&input),
                stop(StopReason::InvalidAttempt),
                "attempt {attempt}, max {max_attempts}"
            );
        }
    }

    #[test]
    fn max_attempts_when_the_index_reaches_the_budget() {
        for attempt in [3.0, 4.0, 1e9] {
            let input = RetryInput {
                attempt,
                ..worked_example()
            };
            assert_eq!(plan_retry_article(&input), stop(StopReason::MaxAttempts));
        }
    }

    #[test]
    fn invalid_delay_for_unusable_numbers() {
        let base = worked_example();
        let cases = [
            RetryInput {
                now_ms: f64::NAN,
                ..base
            },
            RetryInput {
                deadline_ms: f64::INFINITY,
                ..base
            },
            RetryInput {
                base_ms: -1.0,
                ..base
            },
            RetryInput {
                cap_ms: 50.0,
                ..base
            },
            RetryInput {
                cap_ms: f64::NEG_INFINITY,
                ..base
            },
            RetryInput {
                random: f64::NAN,
                ..base
            },
        ];
        for input in cases {
            assert_eq!(
                plan_retry_article(&input),
                stop(StopReason::InvalidDelay),
                "{input:?}"
            );
        }
    }

    #[test]
    fn invalid_retry_after_unless_ignored() {
        for retry_after in [-1.0, f64::NAN, f64::INFINITY] {
            let input = RetryInput {
                retry_after_ms: Some(retry_after),
                ..worked_example()
            };
            assert_eq!(
                plan_retry_article(&input),
                stop(StopReason::InvalidRetryAfter)
            );
            assert_eq!(
                plan_retry(&input, &Jitter::Full, RetryAfterMode::Ignore),
                Decision::Retry {
                    delay_ms: 200.0,
                    backoff_ms: 400.0
                }
            );
        }
    }

    #[test]
    fn deadline_exhausted_before_and_after_the_delay() {
        let spent = RetryInput {
            now_ms: 3000.0,
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&spent),
            stop(StopReason::DeadlineExhausted)
        );
        // now + delay == deadline is too late: the attempt would start at the deadline.
        let exactly = RetryInput {
            now_ms: 2800.0,
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&exactly),
            stop(StopReason::DeadlineExhausted)
        );
        let just_in_time = RetryInput {
            now_ms: 2799.0,
            ..worked_example()
        };
        assert!(matches!(
            plan_retry_article(&just_in_time),
            Decision::Retry { delay_ms, .. } if delay_ms == 200.0
        ));
        // A Retry-After longer than the time left ends the loop too.
        let long_wait = RetryInput {
            retry_after_ms: Some(2000.0),
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&long_wait),
            stop(StopReason::DeadlineExhausted)
        );
    }

    #[test]
    fn checks_fire_in_the_articles_order() {
        // Every check fails at once; each removal of the first failing cause exposes the next.
        let mut input = RetryInput {
            status: Some(400.0),
            attempt: -1.0,
            cap_ms: 1.0,
            retry_after_ms: Some(-1.0),
            now_ms: 5000.0,
            ..RetryInput::new("POST", 0.0, 0.0, 3000.0)
        };
        let mut seen = vec![];
        loop {
            match plan_retry_article(&input) {
                Decision::Stop(reason) => seen.push(reason),
                Decision::Retry { .. } => panic!("no check left to fire"),
            }
            match seen.last().unwrap() {
                StopReason::UnknownResult => input.idempotency_key = true,
                StopReason::NotTransient => input.status = Some(503.0),
                StopReason::InvalidAttempt => input.attempt = 5.0,
                StopReason::MaxAttempts => input.attempt = 0.0,
                StopReason::InvalidDelay => input.cap_ms = 2000.0,
                StopReason::InvalidRetryAfter => input.retry_after_ms = Some(5000.0),
                StopReason::DeadlineExhausted if input.now_ms >= input.deadline_ms => {
                    input.now_ms = 0.0
                }
                StopReason::DeadlineExhausted => break,
            }
        }
        use StopReason::*;
        assert_eq!(
            seen,
            [
                UnknownResult,
                NotTransient,
                InvalidAttempt,
                MaxAttempts,
                InvalidDelay,
                InvalidRetryAfter,
                DeadlineExhausted,
                DeadlineExhausted
            ]
        );
    }

    #[test]
    fn javascript_number_semantics() {
        // Fractional times and units are fine; the jitter is floored, Retry-After is not.
        let input = RetryInput {
            now_ms: 1000.25,
            random: 0.123,
            retry_after_ms: Some(10.5),
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&input),
            Decision::Retry {
                delay_ms: 49.0,
                backoff_ms: 400.0
            }
        );
        let fractional_floor = RetryInput {
            random: 0.0,
            retry_after_ms: Some(10.5),
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&fractional_floor),
            Decision::Retry {
                delay_ms: 10.5,
                backoff_ms: 400.0
            }
        );
        // The random unit is clamped to [0, 1].
        for (random, delay_ms) in [(-3.0, 0.0), (7.0, 400.0)] {
            let input = RetryInput {
                random,
                ..worked_example()
            };
            assert_eq!(
                plan_retry_article(&input),
                Decision::Retry {
                    delay_ms,
                    backoff_ms: 400.0
                }
            );
        }
        // -0 is a non-negative integer in JavaScript.
        let negative_zero = RetryInput {
            attempt: -0.0,
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&negative_zero),
            Decision::Retry {
                delay_ms: 50.0,
                backoff_ms: 100.0
            }
        );
    }

    #[test]
    fn huge_budgets_neither_overflow_nor_produce_nan() {
        let input = RetryInput {
            attempt: 5000.0,
            max_attempts: 1e300,
            ..worked_example()
        };
        assert_eq!(
            plan_retry_article(&input),
            Decision::Retry {
                delay_ms: 1000.0,
                backoff_ms: 2000.0
            }
        );
        // JavaScript would compute 0 * Infinity = NaN here and "retry" after NaN ms.
        let zero_base = RetryInput {
            base_ms: 0.0,
            ..input
        };
        assert_eq!(
            plan_retry_article(&zero_base),
            Decision::Retry {
                delay_ms: 0.0,
                backoff_ms: 0.0
            }
        );
    }

    #[test]
    fn reason_names_are_the_articles() {
        let names: Vec<_> = StopReason::ALL.iter().map(|reason| reason.name()).collect();
        assert_eq!(
            names,
            [
                "unknown-result",
                "not-transient",
                "invalid-attempt",
                "max-attempts",
                "invalid-delay",
                "invalid-retry-after",
                "deadline-exhausted"
            ]
        );
    }

    /// A policy's multiplier replaces the article's 2 in `min(cap, base * multiplier^attempt)`:
    /// gRPC's connection backoff grows by 1.6, so the third retry (attempt 2) of base 100 ms
    /// waits 100 * 1.6^2 = 256 ms without jitter; a multiplier that is not above zero is as
    /// unusable as a negative base.
    #[test]
    fn the_multiplier_replaces_the_articles_two() {
        let input = RetryInput {
            status: Some(503.0),
            multiplier: 1.6,
            ..RetryInput::new("GET", 2.0, 0.0, 100_000.0)
        };
        let Decision::Retry {
            delay_ms,
            backoff_ms,
        } = plan_retry(&input, &Jitter::None, RetryAfterMode::Honor)
        else {
            panic!("a retry");
        };
        assert!((backoff_ms - 256.0).abs() < 1e-9 && delay_ms == backoff_ms);
        for multiplier in [0.0, -2.0, f64::NAN, f64::INFINITY] {
            let input = RetryInput {
                multiplier,
                ..input
            };
            assert_eq!(plan_retry_article(&input), stop(StopReason::InvalidDelay));
        }
        // The default is the article's 2: the worked example is unchanged.
        assert_eq!(worked_example().multiplier, 2.0);
    }

    /// Check 2 reads the policy's retryable statuses: 500 is not transient for the article's
    /// client, and is for one that lists it; 503 stops being transient for one that does not.
    #[test]
    fn retryable_statuses_decide_check_two() {
        let with = |status: f64, retryable: StatusSet| RetryInput {
            status: Some(status),
            retryable,
            ..RetryInput::new("GET", 0.0, 0.0, 100_000.0)
        };
        let gateway: StatusSet = [500, 502, 503, 504].into_iter().collect();
        assert_eq!(
            plan_retry_article(&with(500.0, StatusSet::ARTICLE)),
            stop(StopReason::NotTransient)
        );
        assert!(matches!(
            plan_retry_article(&with(500.0, gateway)),
            Decision::Retry { .. }
        ));
        assert_eq!(
            plan_retry_article(&with(429.0, gateway)),
            stop(StopReason::NotTransient)
        );
        assert_eq!(
            plan_retry_article(&with(500.5, gateway)),
            stop(StopReason::NotTransient)
        );
        assert_eq!(gateway.iter().collect::<Vec<_>>(), [500, 502, 503, 504]);
        assert_eq!(StatusSet::ARTICLE.iter().collect::<Vec<_>>(), [429, 503]);
        let mut gateway_and_throttling = gateway.with(429);
        assert_eq!(gateway_and_throttling.to_string(), "429, 500, 502-504");
        gateway_and_throttling = (500..=599).collect();
        assert_eq!(gateway_and_throttling.to_string(), "500-599");
    }

    /// gRPC server pushback (gRFC A6): a pushback of n ms means retry after exactly n ms, even
    /// when the backoff is longer, and the retries after it back off from the base again: with
    /// base 100 ms, no jitter, a retry at attempt 3 whose backoff counts from attempt 2 (the
    /// pushback was on attempt 1) waits `100 * 2^(3-2) = 200` ms, not `100 * 2^3 = 800` ms.
    #[test]
    fn pushback_is_exact_and_restarts_the_backoff() {
        let input = RetryInput {
            status: Some(503.0),
            retry_after_ms: Some(30.0),
            max_attempts: 5.0,
            ..RetryInput::new("GET", 3.0, 0.0, 100_000.0)
        };
        let pushback = plan_retry(&input, &Jitter::None, RetryAfterMode::Pushback);
        assert_eq!(
            pushback,
            Decision::Retry {
                delay_ms: 30.0,
                backoff_ms: 800.0
            }
        );
        let honor = plan_retry(&input, &Jitter::None, RetryAfterMode::Honor);
        assert_eq!(
            honor,
            Decision::Retry {
                delay_ms: 800.0,
                backoff_ms: 800.0
            }
        );
        let after = RetryInput {
            retry_after_ms: None,
            backoff_from: 2.0,
            ..input
        };
        assert_eq!(
            plan_retry(&after, &Jitter::None, RetryAfterMode::Pushback),
            Decision::Retry {
                delay_ms: 200.0,
                backoff_ms: 200.0
            }
        );
        // A start that is not one of the attempts made is invalid.
        for backoff_from in [-1.0, 4.0, 0.5] {
            let bad = RetryInput {
                backoff_from,
                ..after
            };
            assert_eq!(plan_retry_article(&bad), stop(StopReason::InvalidAttempt));
        }
    }
}
