//! retrystorm: a deterministic retry-storm simulator.
//!
//! When an upstream answers 503 or 429, or times out, thousands of clients retry. retrystorm
//! shows what their retry policy does to the upstream and to the data before production: the
//! second wave of load when clients retry in lock-step, and the duplicate writes of a POST that
//! was retried without protection.
//!
//! The heart of every simulated client is the retry decision of the source article
//! ([`decision::plan_retry`]), with pluggable backoff and jitter ([`backoff`]) and Retry-After
//! handling ([`retry_after`]). Everything is a pure function of its inputs, random units
//! included, so that a run can be reproduced bit for bit.
//!
//! ```
//! use retrystorm::decision::{Decision, RetryInput, plan_retry_article};
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

pub mod backoff;
pub mod bounded_file;
pub mod capacity;
pub mod charts;
pub mod claims;
pub mod control;
pub mod cost;
pub mod decide;
pub mod decision;
pub mod distribution;
pub mod echo;
pub mod engine;
pub mod event_queue;
pub mod histogram;
pub mod http_date;
pub mod idempotency;
pub mod import;
pub mod metrics;
pub mod model;
pub mod outcome;
pub mod output;
pub mod random;
pub mod rate_limiter;
pub mod report;
pub mod retry_after;
pub mod run;
pub mod scenario;
pub mod service;
mod slab;
mod suggest;
pub mod sweep;
pub mod time;
pub mod values;
