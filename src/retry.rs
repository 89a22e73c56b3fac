//! The retry procedure of the source article, as pure functions: the decision whether and when
//! to retry one failed attempt ([`decision`]), the backoff and jitter it draws its wait from
//! ([`backoff`]), how it reads a Retry-After header ([`retry_after`]), and the `decide` command
//! that runs the decision once per line of JSON ([`decide`]). Every simulated client calls
//! [`decision::plan_retry`]; nothing here knows of scenarios or the engine.

pub mod backoff;
pub mod decide;
pub mod decision;
pub mod retry_after;
