//! The words every layer above shares: why an operation failed and which control refused it
//! ([`outcome`]), what the engine counts per time bucket ([`counts`]), and the metrics of a run,
//! with their names, units, domains and directions, and the health rule recovery is measured by
//! ([`metric`]). Low enough that the scenario validator can check a claim's metric without
//! knowing the engine that measures it.

pub mod counts;
pub mod metric;
pub mod outcome;
