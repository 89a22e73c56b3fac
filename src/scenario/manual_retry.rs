//! `manual_retry` of a policy: users who retry by hand.
//!
//! A person in front of a checkout page does what no SDK setting controls: after an error, or
//! after waiting longer than they tolerate, they press "Pay" again. That new press is a new call
//! to the SDK (its retries stack on the SDK's own, and no client-side budget sees it coming) and
//! the abandoned call goes on: the server still processes it, and its answer reaches nobody.
//! Whether the second press charges twice depends on when the idempotency key was made: once per
//! page load (reused by every press) or once per press (new).
//!
//! No primary data says how often people press again, so every figure here is a parameter with
//! no default: the published anchors are for patience only (mobile visits abandoned after 3 s,
//! a strong negative effect past 7 to 10 s: Google/SOASTA 2017, Akamai 2017, Arapakis et al.,
//! CHIIR 2021), and `docs/model.md` says so.

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::Problem;
use crate::base::distribution::Distribution;
use crate::base::time::Duration;
use crate::base::values::{Bounded, Probability};

/// `manual_retry = { ... }` of a `[[policy]]`: what the users of this policy's run do when an
/// operation fails or takes too long.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManualRetry {
    /// What makes a user start the operation again: `failure` (the client gave up on it) and
    /// `impatience` (it took longer than `patience`).
    pub on: Spanned<Vec<Trigger>>,
    /// With `impatience`: how long a user waits for an operation before giving up on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patience: Option<Spanned<Duration>>,
    /// The chance that a user who gave up on an operation starts it again.
    pub probability: Probability,
    /// The time between giving up and pressing again (the think time): a duration or a
    /// distribution.
    pub delay: Distribution,
    /// The most operations a user starts again by hand for one intent, 1 to 10 (default 1).
    #[serde(default = "one")]
    pub max: Bounded<1, 10>,
    /// `reused`: every press carries the key of the first (made when the page loaded); `new`:
    /// each press makes a key of its own.
    pub key: KeyReuse,
}

/// What makes a user start an operation again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// The operation failed: its client gave up (the decision stopped, a control refused).
    Failure,
    /// The operation took longer than the user's patience.
    Impatience,
}

/// Which idempotency key a press carries, for an endpoint that sends one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyReuse {
    /// The first press's key: the server sees one operation.
    Reused,
    /// A key of its own: the server sees a new operation, which writes again.
    New,
}

fn one() -> Bounded<1, 10> {
    Bounded(1)
}

impl ManualRetry {
    /// Whether `trigger` makes users press again.
    pub fn on(&self, trigger: Trigger) -> bool {
        self.on.get_ref().contains(&trigger)
    }

    /// The relations between fields: a trigger at least, `patience` exactly when impatience
    /// is one, and above zero. `at` is where the table is, for a field not written; `policy`
    /// names its policy.
    pub(super) fn validate(&self, at: std::ops::Range<usize>, policy: &str) -> Result<(), Problem> {
        let on = self.on.get_ref();
        if on.is_empty() {
            return Err((
                self.on.span(),
                format!(
                    "policy {policy:?}: manual_retry.on is empty; give what makes users press again: [\"failure\"], [\"impatience\"] or both"
                ),
            ));
        }
        match (&self.patience, self.on(Trigger::Impatience)) {
            (None, true) => Err((
                at,
                format!(
                    "policy {policy:?}: manual_retry.on has \"impatience\" but no patience; give how long users wait, e.g. patience = \"8s\" (mobile visits are abandoned past 3 s, and strongly past 7 to 10 s)"
                ),
            )),
            (Some(patience), false) => Err((
                patience.span(),
                format!(
                    "policy {policy:?}: manual_retry.patience is used only with on = [\"impatience\", ...]; add \"impatience\" to on, or remove patience"
                ),
            )),
            (Some(patience), true) if patience.get_ref().micros() == 0 => Err((
                patience.span(),
                format!("policy {policy:?}: manual_retry.patience must be above zero"),
            )),
            _ => Ok(()),
        }
    }

    /// The longest an intent can last beyond its first operation's own `longest` (an
    /// operation's lifetime): `max` more operations, each after a wait. A wait drawn from a
    /// distribution without an upper bound is taken as 50 of its means: an exponential exceeds
    /// that with a chance of e^-50.
    pub fn longest_extension(&self, longest: u64) -> u64 {
        let delay = match &self.delay {
            Distribution::Constant(value) => value.micros(),
            Distribution::Uniform { max, .. } => max.micros(),
            other => (other.mean_micros() * 50.0).min(1e15) as u64,
        };
        self.max.get().saturating_mul(longest.saturating_add(delay))
    }
}
