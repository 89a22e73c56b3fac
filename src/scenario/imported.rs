//! What an `import` yields: the retry settings a config fixes, applied to a `[[policy]]` or a
//! tier's `retry` table where the table does not write them itself.
//!
//! The importers (`crate::import`, a layer above) build these from gRPC and Envoy configs; the
//! loader applies them through [`super::ConfigSource`], so this layer knows neither where configs
//! are read from nor their formats.

use crate::base::time::Duration;
use crate::base::values::{Bounded, Positive};
use crate::retry::backoff::Jitter;
use crate::retry::retry_after::RetryAfterMode;

use super::fleet::{Balancer, Fleet, OutlierDetection};
use super::{
    AttemptTimeout, CallDeadline, CallRetry, ControlSpec, Hedging, Policy, TransportError,
};

/// The part of a config an `import` reads when the config holds several (gRPC methods, mesh
/// routes, resilience4j instances, AWS profiles): the field that named it and the name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPart {
    /// `import_method`, `import_route`, `import_instance` or `import_profile`.
    pub field: &'static str,
    /// The name written.
    pub name: String,
}

impl ImportPart {
    /// The part named by at most one of `fields` (a field's name and its value); an error if
    /// several are written, as they choose within different formats.
    pub fn from_fields(
        fields: [(&'static str, Option<String>); 4],
    ) -> Result<Option<ImportPart>, String> {
        let mut written = fields
            .into_iter()
            .filter_map(|(field, name)| name.map(|name| ImportPart { field, name }));
        let part = written.next();
        if let (Some(first), Some(second)) = (&part, written.next()) {
            return Err(format!(
                "{} and {} choose within different kinds of config; write the one the imported config has",
                first.field, second.field
            ));
        }
        Ok(part)
    }
}

/// What an import yields: the settings the config fixes, and notes on how they were mapped.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    /// Which kind of config this was, and which part of it was read.
    pub source: String,
    /// Base delay.
    pub base: Option<Duration>,
    /// Cap of the backoff.
    pub cap: Option<Duration>,
    /// Retries after the first attempt.
    pub max_attempts: Option<u64>,
    /// Growth of the backoff per retry.
    pub multiplier: Option<f64>,
    /// Statuses that may be retried.
    pub retryable_statuses: Option<Vec<u16>>,
    /// Failures without a response that may be retried.
    pub retryable_transport_errors: Option<Vec<TransportError>>,
    /// How the backoff is spread.
    pub jitter: Option<Jitter>,
    /// How Retry-After is treated.
    pub retry_after: Option<RetryAfterMode>,
    /// Timeout of one attempt (`AttemptTimeout::None` for a client that has none).
    pub attempt_timeout: Option<AttemptTimeout>,
    /// Budget of a whole call.
    pub deadline: Option<Duration>,
    /// Client-side controls.
    pub controls: Vec<ControlSpec>,
    /// A retry avoids the hosts its call tried, drawing again up to this many times.
    pub previous_hosts: Option<u64>,
    /// Hedging instead of retries.
    pub hedging: Option<Hedging>,
    /// Whether the system repeats a request the article's rule would not (a POST without key
    /// or status endpoint): `Some(true)` for every importer, as proxies, SDKs and decorators
    /// retry whatever call fails with a retryable error, whatever its method.
    pub unsafe_retries: Option<bool>,
    /// How the config was mapped, for the reader.
    pub notes: Vec<String>,
}

impl Imported {
    /// Applies the imported settings to `policy`, except those it writes itself (`written`
    /// names them, as keys of its table).
    pub fn apply(&self, policy: &mut Policy, written: &[String]) {
        let free = |key: &str| !written.iter().any(|w| w == key);
        if let (Some(timeout), true) = (self.attempt_timeout, free("attempt_timeout")) {
            policy.attempt_timeout = Some(timeout);
        }
        if let (Some(deadline), true) = (self.deadline, free("deadline")) {
            policy.deadline = Some(deadline);
        }
        self.apply_shared(
            Shared {
                base: &mut policy.base,
                cap: &mut policy.cap,
                max_attempts: &mut policy.max_attempts,
                multiplier: &mut policy.multiplier,
                retryable_statuses: &mut policy.retryable_statuses,
                retryable_transport_errors: &mut policy.retryable_transport_errors,
                jitter: &mut policy.jitter,
                retry_after: &mut policy.retry_after,
                hedging: &mut policy.hedging,
                controls: &mut policy.controls,
                previous_hosts: &mut policy.previous_hosts,
                unsafe_retries: &mut policy.unsafe_retries,
            },
            &free,
        );
    }

    /// Applies the imported settings to a tier's `retry` table, except those it writes itself.
    /// A call timeout (gRPC's `timeout`) bounds the deadline the call inherits from its caller,
    /// as a gRPC server propagating deadlines applies the earlier of the two.
    pub fn apply_to_call(&self, retry: &mut CallRetry, written: &[String]) {
        let free = |key: &str| !written.iter().any(|w| w == key);
        if let (Some(timeout), true) = (self.attempt_timeout, free("attempt_timeout")) {
            retry.attempt_timeout = timeout;
        }
        if let (Some(deadline), true) = (self.deadline, free("deadline")) {
            retry.deadline = CallDeadline::PropagateAtMost(deadline);
        }
        self.apply_shared(
            Shared {
                base: &mut retry.base,
                cap: &mut retry.cap,
                max_attempts: &mut retry.max_attempts,
                multiplier: &mut retry.multiplier,
                retryable_statuses: &mut retry.retryable_statuses,
                retryable_transport_errors: &mut retry.retryable_transport_errors,
                jitter: &mut retry.jitter,
                retry_after: &mut retry.retry_after,
                hedging: &mut retry.hedging,
                controls: &mut retry.controls,
                previous_hosts: &mut retry.previous_hosts,
                unsafe_retries: &mut retry.unsafe_retries,
            },
            &free,
        );
    }

    /// The settings a policy and a tier's `retry` table have alike.
    fn apply_shared(&self, target: Shared<'_>, free: &dyn Fn(&str) -> bool) {
        if let (Some(base), true) = (self.base, free("base")) {
            *target.base = base;
        }
        if let (Some(cap), true) = (self.cap, free("cap")) {
            *target.cap = toml::Spanned::new(0..0, cap);
        }
        if let (Some(max), true) = (self.max_attempts, free("max_attempts")) {
            *target.max_attempts = Bounded(max);
        }
        if let (Some(multiplier), true) = (self.multiplier, free("multiplier")) {
            *target.multiplier = Positive(multiplier);
        }
        if let (Some(statuses), true) = (&self.retryable_statuses, free("retryable_statuses")) {
            *target.retryable_statuses = statuses.iter().map(|&s| Bounded(u64::from(s))).collect();
        }
        if let (Some(errors), true) = (
            &self.retryable_transport_errors,
            free("retryable_transport_errors"),
        ) {
            target.retryable_transport_errors.clone_from(errors);
        }
        if let (Some(jitter), true) = (self.jitter, free("jitter")) {
            *target.jitter = jitter;
        }
        if let (Some(mode), true) = (self.retry_after, free("retry_after")) {
            *target.retry_after = mode;
        }
        if let (Some(hedging), true) = (&self.hedging, free("hedging")) {
            *target.hedging = Some(toml::Spanned::new(0..0, hedging.clone()));
        }
        if let (Some(attempts), true) = (self.previous_hosts, free("previous_hosts")) {
            *target.previous_hosts = Bounded(attempts);
        }
        if let (Some(unsafe_retries), true) = (self.unsafe_retries, free("unsafe_retries")) {
            *target.unsafe_retries = unsafe_retries;
        }
        if free("controls") {
            *target.controls = self
                .controls
                .iter()
                .map(|control| toml::Spanned::new(0..0, control.clone()))
                .collect();
        }
    }
}

/// What a fleet's `import` yields: the load balancer and outlier detection an Istio
/// DestinationRule fixes for the service's instances.
#[derive(Debug, Clone)]
pub struct ImportedFleet {
    /// Which config this was, and which part of it was read.
    pub source: String,
    /// `trafficPolicy.loadBalancer`, or Istio's default when it has none.
    pub load_balancer: Balancer,
    /// `trafficPolicy.outlierDetection`, Istio's defaults for what it leaves out; `None`
    /// without it (Istio ejects nothing then).
    pub outlier_detection: Option<OutlierDetection>,
    /// How the config was mapped, for the reader.
    pub notes: Vec<String>,
}

impl ImportedFleet {
    /// Applies the imported settings to `fleet`, except those it writes itself (`written`
    /// names them, as keys of its table).
    pub fn apply(&self, fleet: &mut Fleet, written: &[String]) {
        let free = |key: &str| !written.iter().any(|w| w == key);
        if free("load_balancer") {
            fleet.load_balancer = self.load_balancer;
        }
        if free("outlier_detection") {
            fleet.outlier_detection = self
                .outlier_detection
                .clone()
                .map(|rules| toml::Spanned::new(0..0, rules));
        }
    }
}

/// The retry settings a `[[policy]]` and a tier's `retry` table share, to be written.
struct Shared<'a> {
    base: &'a mut Duration,
    cap: &'a mut toml::Spanned<Duration>,
    max_attempts: &'a mut Bounded<0, 100>,
    multiplier: &'a mut Positive,
    retryable_statuses: &'a mut Vec<Bounded<400, 599>>,
    retryable_transport_errors: &'a mut Vec<TransportError>,
    jitter: &'a mut Jitter,
    retry_after: &'a mut RetryAfterMode,
    hedging: &'a mut Option<toml::Spanned<Hedging>>,
    controls: &'a mut Vec<toml::Spanned<ControlSpec>>,
    previous_hosts: &'a mut Bounded<0, 100>,
    unsafe_retries: &'a mut bool,
}
