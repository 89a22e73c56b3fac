//! Invariants of the retry decision and the jitter strategies, over random inputs.

use proptest::prelude::*;
use retrystorm::retry::backoff::{Jitter, JitterInput, JitterStrategy, exponential_backoff_ms};
use retrystorm::retry::decision::{Decision, RetryInput, plan_retry};
use retrystorm::retry::retry_after::RetryAfterMode;

fn jitter() -> impl Strategy<Value = Jitter> {
    prop::sample::select(Jitter::ALL.to_vec())
}

fn retry_after_mode() -> impl Strategy<Value = RetryAfterMode> {
    prop::sample::select(RetryAfterMode::ALL.to_vec())
}

/// Valid, retryable inputs: a 503 on a GET, with the numbers drawn over wide ranges.
fn retryable_input() -> impl Strategy<Value = RetryInput> {
    (
        0u32..40,
        1u32..50,
        -1e6..1e6f64,
        0.0..1e5f64,
        (0.0..5e3f64, 0.0..1e5f64),
        -0.5..1.5f64,
        prop::option::of(0.0..2e4f64),
        prop::option::of(0.0..1e4f64),
        0.0..1.0f64,
    )
        .prop_map(
            |(
                attempt,
                extra,
                now_ms,
                time_left,
                (base_ms, cap_extra),
                random,
                retry_after_ms,
                previous_delay_ms,
                retry_after_random,
            )| {
                RetryInput {
                    status: Some(503.0),
                    base_ms,
                    cap_ms: base_ms + cap_extra,
                    max_attempts: f64::from(attempt + extra),
                    random,
                    retry_after_ms,
                    previous_delay_ms,
                    retry_after_random,
                    ..RetryInput::new("GET", f64::from(attempt), now_ms, now_ms + time_left)
                }
            },
        )
}

proptest! {
    #[test]
    fn full_jitter_stays_within_the_backoff_without_retry_after(input in retryable_input()) {
        let input = RetryInput { retry_after_ms: None, ..input };
        if let Decision::Retry { delay_ms, backoff_ms } = plan_retry(&input, &Jitter::Full, RetryAfterMode::Honor) {
            prop_assert!((0.0..=backoff_ms).contains(&delay_ms), "{delay_ms} outside [0, {backoff_ms}]");
            prop_assert_eq!(delay_ms, delay_ms.floor());
        }
    }

    #[test]
    fn an_honoured_retry_after_is_a_minimum(
        input in retryable_input(),
        jitter in jitter(),
        mode in prop::sample::select(vec![RetryAfterMode::Honor, RetryAfterMode::HonorJittered]),
        retry_after_ms in 0.0..2e4f64,
    ) {
        let input = RetryInput { retry_after_ms: Some(retry_after_ms), ..input };
        if let Decision::Retry { delay_ms, .. } = plan_retry(&input, &jitter, mode) {
            prop_assert!(delay_ms >= retry_after_ms, "{delay_ms} < Retry-After {retry_after_ms}");
            if mode == RetryAfterMode::HonorJittered {
                let jitter_high = jitter.range_ms(&jitter_input(&input)).1;
                prop_assert!(delay_ms <= jitter_high.max(1.5 * retry_after_ms));
            }
        }
    }

    #[test]
    fn no_retry_starts_at_or_after_the_deadline(
        input in retryable_input(),
        jitter in jitter(),
        mode in retry_after_mode(),
    ) {
        match plan_retry(&input, &jitter, mode) {
            Decision::Retry { delay_ms, .. } => prop_assert!(input.now_ms + delay_ms < input.deadline_ms),
            Decision::Stop(reason) => prop_assert_eq!(reason.name(), "deadline-exhausted"),
        }
    }

    #[test]
    fn backoff_never_decreases_with_the_attempt_and_never_passes_cap(
        base_ms in 0.0..1e4f64,
        cap_extra in 0.0..1e6f64,
        first in 0u32..2000,
        step in 0u32..2000,
    ) {
        let cap_ms = base_ms + cap_extra;
        let earlier = exponential_backoff_ms(f64::from(first), base_ms, cap_ms, 2.0);
        let later = exponential_backoff_ms(f64::from(first + step), base_ms, cap_ms, 2.0);
        prop_assert!(earlier <= later, "backoff fell from {earlier} to {later}");
        prop_assert!(later <= cap_ms);
        prop_assert!(earlier >= base_ms.min(cap_ms));
    }

    #[test]
    fn every_strategy_stays_within_its_documented_range(input in retryable_input(), jitter in jitter()) {
        let jitter_input = jitter_input(&input);
        let (low, high) = jitter.range_ms(&jitter_input);
        let delay = jitter.delay_ms(&jitter_input);
        prop_assert!(low <= delay && delay <= high, "{jitter}: {delay} outside [{low}, {high}]");
        // The documented ranges themselves.
        let backoff = jitter_input.backoff_ms;
        let expected = match jitter {
            Jitter::None => (backoff, backoff),
            Jitter::Full => (0.0, backoff.floor()),
            Jitter::Equal => ((backoff / 2.0).floor(), backoff.floor()),
            Jitter::Decorrelated => (input.base_ms.floor(), input.cap_ms.floor()),
            Jitter::Grpc => ((0.8 * backoff).floor(), (1.2 * backoff).floor()),
            Jitter::Linkerd => (
                input.cap_ms.min(backoff).floor(),
                input.cap_ms.min(2.0 * backoff).floor(),
            ),
            Jitter::Resilience4j => ((0.5 * backoff).floor(), (1.5 * backoff).floor()),
        };
        prop_assert!(expected.0 <= low && high <= expected.1, "{jitter}: [{low}, {high}] outside {expected:?}");
    }

    #[test]
    fn the_decision_is_a_pure_function(input in retryable_input(), jitter in jitter(), mode in retry_after_mode()) {
        prop_assert_eq!(plan_retry(&input, &jitter, mode), plan_retry(&input, &jitter, mode));
    }
}

fn jitter_input(input: &RetryInput) -> JitterInput {
    JitterInput {
        retry_index: input.attempt,
        base_ms: input.base_ms,
        cap_ms: input.cap_ms,
        backoff_ms: exponential_backoff_ms(
            input.attempt,
            input.base_ms,
            input.cap_ms,
            input.multiplier,
        ),
        previous_delay_ms: input.previous_delay_ms,
        unit: input.random.clamp(0.0, 1.0),
    }
}
