//! Every caller's effective retry policy, in words: what `check`, the terminal summary of `run`
//! and `report.html` show, so that nothing a run assumes is silent.
//!
//! A caller is the user clients under one `[[policy]]`, or a service calling the next (a tier).
//! A tier without a `retry` table never retries; one with a table takes the article's settings
//! for what it does not write; an imported config fills in what it fixes. Which of these a
//! tier got is easy to miss in a file, so each caller's policy is described from the model the
//! engine runs ([`CallerPolicy`]), never from the file: attempts, backoff and jitter, the
//! Retry-After handling, what is retried (failures without a response, statuses), the attempt
//! timeout and deadline, and the controls.

use std::fmt;

use super::{CallerPolicy, Deadline, FleetModel, Model, RejectionKind, ServiceId, ServiceModel};
use crate::base::time::{Duration, Micros};
use crate::retry::backoff::JitterStrategy;
use crate::scenario::fleet::Balancer;
use crate::scenario::{DeadlineCheck, ErrorsAt, IdempotencyStore, Scenario, TransportError};

/// A caller's policy in words, one field per aspect (the report's columns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyText {
    /// Retries (or hedging): `none`, `3 (up to 4 sends)`, `hedging: 3 attempts, 50ms apart`.
    pub retries: String,
    /// The backoff and its jitter (`-` without retries, or with hedging).
    pub backoff: String,
    /// How Retry-After is treated (`-` without retries or hedging).
    pub retry_after: String,
    /// What may be retried: failures without a response, then statuses (`-` without retries
    /// or hedging).
    pub retries_on: String,
    /// The attempt timeout: a duration, or `none`.
    pub attempt_timeout: String,
    /// The deadline: a duration, `propagated` or `none`.
    pub deadline: String,
    /// The controls, or `none`.
    pub controls: String,
}

impl fmt::Display for PolicyText {
    /// One line: `retries 3 (up to 4 sends); backoff ...; retries on ...; ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retries {}", self.retries)?;
        if self.backoff != "-" {
            write!(f, "; backoff {}", self.backoff)?;
        }
        if self.retries_on != "-" {
            write!(
                f,
                "; Retry-After {}; retries on {}",
                self.retry_after, self.retries_on
            )?;
        }
        write!(
            f,
            "; attempt timeout {}, deadline {}; controls {}",
            self.attempt_timeout, self.deadline, self.controls
        )
    }
}

impl CallerPolicy {
    /// The policy in words.
    pub fn text(&self) -> PolicyText {
        let mut retries = match (self.hedging, self.max_attempts) {
            (Some(hedging), _) => format!(
                "hedging: {} attempts, {} apart",
                hedging.max_attempts,
                Duration(hedging.delay)
            ),
            (None, 0) => "none".to_string(),
            (None, retries) if self.previous_hosts > 0 => format!(
                "{retries} (up to {} sends, a host already tried drawn again up to {} times)",
                retries + 1,
                self.previous_hosts
            ),
            (None, retries) => format!("{retries} (up to {} sends)", retries + 1),
        };
        if self.hedging.is_none() && self.max_attempts > 0 && self.retry_probability < 1.0 {
            retries += &format!(", each made with probability {}", self.retry_probability);
        }
        let repeats = self.hedging.is_some() || self.max_attempts > 0;
        let backoff = if self.hedging.is_none() && repeats {
            format!(
                "{} ms to {} ms, x{}, {} jitter",
                self.base_ms,
                self.cap_ms,
                self.multiplier,
                match self.jitter.name() {
                    "none" => "no",
                    name => name,
                }
            )
        } else {
            "-".to_string()
        };
        let mut retries_on: Vec<String> = self
            .retryable_transport
            .iter()
            .map(|error| {
                match error {
                    TransportError::Timeout => "timeouts",
                    TransportError::Reset => "resets",
                    TransportError::Refused => "refused connections",
                }
                .to_string()
            })
            .collect();
        if self.retryable.iter().next().is_some() {
            retries_on.push(self.retryable.to_string());
        }
        let deadline = match self.deadline {
            Deadline::Budget(budget) => Duration(budget).to_string(),
            Deadline::Propagate => "propagated".into(),
            Deadline::PropagateAtMost(budget) => {
                format!("propagated, at most {}", Duration(budget))
            }
            Deadline::Unbounded => "none".into(),
        };
        let controls: Vec<String> = self.controls.iter().map(|c| c.to_string()).collect();
        // A caller that never repeats a call retries on nothing, whatever its settings say.
        let (retry_after, retries_on) = match (repeats, retries_on.is_empty()) {
            (false, _) => ("-".to_string(), "-".to_string()),
            (true, true) => (self.retry_after.name().to_string(), "nothing".to_string()),
            (true, false) => (self.retry_after.name().to_string(), retries_on.join(", ")),
        };
        PolicyText {
            retries,
            backoff,
            retry_after,
            retries_on,
            attempt_timeout: attempt_timeout_text(self.attempt_timeout),
            deadline,
            controls: if controls.is_empty() {
                "none".to_string()
            } else {
                controls.join("; ")
            },
        }
    }
}

/// An attempt timeout as a scenario writes it: a duration, or `none`.
pub fn attempt_timeout_text(micros: Micros) -> String {
    if micros == Micros::MAX {
        "none".to_string()
    } else {
        Duration(micros).to_string()
    }
}

/// One caller of a model: who calls whom, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerText {
    /// `clients -> edge` or `edge -> api, cache`.
    pub calls: String,
    /// The caller is a service calling others (else the user clients).
    pub tier: bool,
    /// A tier: the status it answers when a call fails for good.
    pub failure_status: Option<u16>,
    /// Its policy.
    pub policy: PolicyText,
}

impl CallerText {
    /// `edge -> api: retries ...`, and for a tier what it answers when a call fails for good.
    pub fn line(&self) -> String {
        match self.failure_status {
            Some(status) => format!(
                "{}: {}; answers {status} when a call fails for good",
                self.calls, self.policy
            ),
            None => format!("{}: {}", self.calls, self.policy),
        }
    }
}

impl FleetModel {
    /// How its callers pick an instance, and what else sets its instances apart: `round
    /// robin, the capacity curve on the first 1, outlier detection`.
    pub fn about(&self) -> String {
        let balancer = match self.balancer {
            Balancer::RoundRobin => "round robin",
            Balancer::Random => "random",
            Balancer::LeastRequest => "least request",
            Balancer::RingHash => "ring hash",
        };
        let mut about = vec![balancer.to_string()];
        if self.capacity_instances < self.instances {
            about.push(format!(
                "the capacity curve on the first {}",
                self.capacity_instances
            ));
        }
        if self.outlier.is_some() {
            about.push("outlier detection".to_string());
        }
        about.join(", ")
    }
}

impl ServiceModel {
    /// What the service does beyond answering every request it works on, where that is not
    /// the default: errors answered after the work, deadlines checked, keys kept in memory.
    /// `None` if it does none of these.
    pub fn failures_text(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(errors) = self
            .errors
            .filter(|errors| errors.at == ErrorsAt::AfterService)
        {
            parts.push(format!(
                "{}% of requests answered {} after the work ({})",
                (errors.rate.get() * 1e6).round() / 1e4,
                errors.status,
                if errors.committed {
                    "the write committed"
                } else {
                    "nothing written"
                }
            ));
        }
        if let Some(check) = self.deadline_check {
            let cost = self.rejection_cost.of(RejectionKind::DeadlineExpired);
            parts.push(format!(
                "work past its deadline refused {} ({})",
                match check {
                    DeadlineCheck::Arrival => "as it arrives",
                    DeadlineCheck::Dequeue => "as it arrives and as a worker takes it",
                },
                if cost == 0 {
                    "free".to_string()
                } else {
                    format!("holding a worker {} each", Duration(cost))
                }
            ));
        }
        if self.idempotency_store == IdempotencyStore::InMemory {
            parts.push("idempotency keys in memory, lost when it crashes".to_string());
        }
        (!parts.is_empty()).then(|| format!("service {}: {}", self.name, parts.join("; ")))
    }
}

/// What each service of `scenario` does beyond answering every request it works on (see
/// [`ServiceModel::failures_text`]), as its file sets it, then where a policy's `overrides`
/// change it, under the policy's name, for `check`.
pub fn service_failures(scenario: &Scenario) -> Vec<String> {
    let texts = |model: &Model| -> Vec<(String, Option<String>)> {
        model
            .services
            .iter()
            .map(|service| (service.name.clone(), service.failures_text()))
            .collect()
    };
    let mut plain = scenario.policy[0].clone();
    plain.overrides = crate::scenario::Overrides::default();
    let base = texts(&Model::new(scenario, &plain));
    let mut lines: Vec<String> = base.iter().filter_map(|(_, text)| text.clone()).collect();
    for policy in &scenario.policy {
        let name = policy.name.get_ref();
        for ((service, text), (_, plain)) in texts(&Model::new(scenario, policy)).iter().zip(&base)
        {
            if text == plain {
                continue;
            }
            let text = text.clone().unwrap_or_else(|| {
                format!("service {service}: errors at arrival, no deadline checked, durable keys")
            });
            lines.push(format!("policy {name:?} overrides {text}"));
        }
    }
    lines
}

/// A service called, named with its fleet: `checkout (6 instances: round robin)`.
fn callee(service: &ServiceModel) -> String {
    match service.fleet.instances {
        1 => service.name.clone(),
        instances => format!(
            "{} ({instances} instances: {})",
            service.name,
            service.fleet.about()
        ),
    }
}

impl Model {
    /// Every caller of this model: the user clients, then each service that calls others,
    /// in the file's order. A fleet is named with its instances: each instance of a calling
    /// fleet keeps its own controls and balancer.
    pub fn callers(&self) -> Vec<CallerText> {
        let users = CallerText {
            calls: format!("clients -> {}", callee(self.entry_service())),
            tier: false,
            failure_status: None,
            policy: self.users.policy.text(),
        };
        let tiers = self.services.iter().flat_map(|service| {
            let caller = match service.fleet.instances {
                1 => service.name.clone(),
                instances => format!("{} (each of {instances} instances)", service.name),
            };
            // One line per policy: the tier's `retry`, then each call's own, each with the
            // services it calls with it on any route.
            let policies = service.caller_policies().enumerate();
            policies.filter_map(move |(index, policy)| {
                let mut called: Vec<ServiceId> = Vec::new();
                let calls = service.routes.iter().flat_map(|route| &route.calls);
                for call in calls.filter(|call| usize::from(call.policy) == index) {
                    if !called.contains(&call.target) {
                        called.push(call.target);
                    }
                }
                if called.is_empty() {
                    return None;
                }
                let callees: Vec<String> = called
                    .iter()
                    .map(|&called| callee(&self.services[usize::from(called)]))
                    .collect();
                Some(CallerText {
                    calls: format!("{caller} -> {}", callees.join(", ")),
                    tier: true,
                    failure_status: Some(service.failure_status),
                    policy: policy.text(),
                })
            })
        });
        [users].into_iter().chain(tiers).collect()
    }
}

/// Every caller's policy in a scenario, as lines to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectivePolicies {
    /// Each `[[policy]]`'s clients: `policy "NAME": clients -> edge: retries ...`.
    pub clients: Vec<String>,
    /// Each tier as the file sets it (`edge -> api: retries none; ...`), then each tier a
    /// policy's `overrides` change, under the policy's name.
    pub tiers: Vec<String>,
}

/// The policies of every caller of `scenario`, for `check` and the terminal summary of `run`.
pub fn effective_policies(scenario: &Scenario) -> EffectivePolicies {
    let models: Vec<(&str, Model)> = scenario
        .policy
        .iter()
        .map(|policy| (policy.name.get_ref().as_str(), Model::new(scenario, policy)))
        .collect();
    let clients = models
        .iter()
        .map(|(name, model)| {
            let line = format!("policy {name:?}: {}", model.callers()[0].line());
            match &model.users.manual_retry {
                Some(manual) => format!("{line}; users retry by hand: {manual}"),
                None => line,
            }
        })
        .collect();
    // The tiers as the file sets them: the model of a policy without overrides.
    let mut plain = scenario.policy[0].clone();
    plain.overrides = crate::scenario::Overrides::default();
    let base: Vec<CallerText> = Model::new(scenario, &plain)
        .callers()
        .into_iter()
        .filter(|caller| caller.tier)
        .collect();
    let mut tiers: Vec<String> = base.iter().map(CallerText::line).collect();
    for (name, model) in &models {
        for (tier, plain) in model.callers().iter().filter(|c| c.tier).zip(&base) {
            if tier != plain {
                tiers.push(format!("policy {name:?} overrides {}", tier.line()));
            }
        }
    }
    EffectivePolicies { clients, tiers }
}
