//! The bottom layer: values and time, and the tools every layer above uses, none of which
//! knows anything of retries, scenarios or the engine.
//!
//! Simulated time in integer microseconds ([`time`]); checked value types for scenario files
//! ([`values`]); seeded randomness, addressed by request or drawn from streams, and the
//! distributions drawn from it ([`random`], [`distribution`]); a piecewise-linear curve over time ([`capacity`]); latency histograms
//! ([`histogram`]); the statistics of replications and of uncertain inputs ([`stats`]), and
//! their ranges in words, never one of a single value ([`spread`]); a slab
//! of reusable slots (`slab`); HTTP dates ([`http_date`]); and the
//! reading, quoting and suggesting that error messages need ([`text_file`], [`escape`],
//! `suggest`).

pub mod capacity;
pub mod distribution;
pub mod escape;
pub mod histogram;
pub mod http_date;
pub mod random;
pub(crate) mod slab;
pub mod spread;
pub mod stats;
pub(crate) mod suggest;
pub mod text_file;
pub mod time;
pub mod values;
