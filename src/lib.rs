//! retrystorm: a deterministic retry-storm simulator.
//!
//! When an upstream answers 503 or 429, or times out, thousands of clients retry. retrystorm
//! shows what their retry policy does to the upstream and to the data before production: the
//! second wave of load when clients retry in lock-step, and the duplicate writes of a POST that
//! was retried without protection.
//!
//! The heart of every simulated client is the retry decision of the source article
//! ([`retry::decision::plan_retry`]), with pluggable backoff and jitter ([`retry::backoff`])
//! and Retry-After handling ([`retry::retry_after`]). Everything is a pure function of its inputs, random units
//! included, so that a run can be reproduced bit for bit.
//!
//! ```
//! use retrystorm::retry::decision::{Decision, RetryInput, plan_retry_article};
//!
//! // The article's worked example: a POST with an idempotency key got a 503 on attempt 2.
//! let input = RetryInput {
//!     status: Some(503.0),
//!     idempotency_key: true,
//!     ..RetryInput::new("POST", 2.0, 1000.0, 3000.0)
//! };
//! assert_eq!(
//!     plan_retry_article(&input),
//!     Decision::Retry { delay_ms: 200.0, backoff_ms: 400.0 }
//! );
//! ```

// The layers, bottom first: a module may use the ones declared before it, never one after it
// (tests/integration/architecture.rs reads this order and fails on any use against it, and on
// any cycle between modules). The blank lines keep rustfmt from sorting them.

// Values and time, randomness, and the tools of error messages.
pub mod base;

// The article's retry decision, backoff, jitter and Retry-After.
pub mod retry;

// Failure reasons, counts, metric names and directions, shared by every layer above.
pub mod vocabulary;

// The client-side controls teams deploy (budgets, throttling, breakers).
pub mod control;

// Scenario files: their types, loading and validation.
pub mod scenario;

// The importers of gRPC and Envoy configs, and loading a scenario with them.
pub mod import;

// The scenario as one policy's simulation sees it.
pub mod model;

// The discrete-event engine: clients, services and their counters.
pub mod engine;

// What a run adds up to: summaries from the engine's counts.
pub mod metrics;

// One run of every policy, and its cost estimated beforehand.
pub mod run;

// A scenario's lesson, checked on every run.
pub mod claims;

// The files a run writes: tables, charts and the report.
pub mod output;

// Sweeps of a grid of settings over seeds, and their recommendation.
pub mod sweep;

// Replicated studies: probabilities over seeds and uncertain inputs, and maps of where a
// system tips.
pub mod risk;
