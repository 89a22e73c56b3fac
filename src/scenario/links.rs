//! Links: the network of one caller-to-service edge, where it differs from `[network]`.
//!
//! A phone's last mile and a hop inside a zone differ by two orders of magnitude (100 to 300 ms
//! against half a millisecond), and which of them a retry crosses decides how long it waits and
//! how much it costs. `[network]` gives every message one latency and one loss; a `[[link]]`
//! table overrides them on one edge of the topology, both ways: from the clients to the
//! service they call, or from a service to one it calls.
//!
//! ```toml
//! [[link]]
//! from = "clients"
//! to = "edge"
//! latency = { distribution = "lognormal", median = "120ms", p99 = "400ms" }
//! ```
//!
//! What is refused, at the place to fix: a `from` or `to` that names nothing (with the nearest
//! name), an edge the topology does not have (the clients call only the entry; a service only
//! its `calls`), and the same edge twice. After the checks, [`resolve_links`] writes each
//! link's defaults out from `[network]`, so the resolved scenario shows every link whole.

use std::ops::Range;

use toml::Spanned;

use super::{Link, Network, Problem, Scenario};
use crate::base::distribution::Distribution;
use crate::base::suggest::did_you_mean;
use crate::base::values::Probability;

/// The name a link's `from` gives the clients.
pub const CLIENTS: &str = "clients";

/// The network on one edge: its own settings where its `[[link]]` has them, `[network]`'s
/// elsewhere.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkNetwork {
    /// One-way latency of every message, both ways.
    pub latency: Distribution,
    /// Probability that a request is lost on its way.
    pub request_loss: Probability,
    /// Probability that a response is lost on its way back.
    pub response_loss: Probability,
}

impl Scenario {
    /// The network between `caller` (`None` for the clients) and the service named `callee`.
    pub fn link_network(&self, caller: Option<&str>, callee: &str) -> LinkNetwork {
        let caller = caller.unwrap_or(CLIENTS);
        let link = self
            .link
            .iter()
            .map(Spanned::get_ref)
            .find(|link| link.from.get_ref() == caller && link.to.get_ref() == callee);
        link_network(&self.network, link)
    }
}

/// `link`'s network, with `[network]`'s settings where it has none.
fn link_network(network: &Network, link: Option<&Link>) -> LinkNetwork {
    LinkNetwork {
        latency: link
            .and_then(|link| link.latency.clone())
            .unwrap_or_else(|| network.latency.clone()),
        request_loss: link
            .and_then(|link| link.request_loss)
            .unwrap_or(network.request_loss),
        response_loss: link
            .and_then(|link| link.response_loss)
            .unwrap_or(network.response_loss),
    }
}

/// Checks that every `[[link]]` names an edge the topology has, once.
pub(super) fn validate_links(scenario: &Scenario) -> Result<(), Problem> {
    let services = scenario.services();
    let names: Vec<&str> = services.iter().map(|service| service.name()).collect();
    let entry = names[scenario.entry()];
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for spanned in &scenario.link {
        let link = spanned.get_ref();
        let (from, to) = (link.from.get_ref().as_str(), link.to.get_ref().as_str());
        let to_index = known(&names, to, link.to.span(), "to", false)?;
        if from == CLIENTS {
            if names.contains(&CLIENTS) {
                return Err((
                    link.from.span(),
                    format!(
                        "from = {CLIENTS:?} names the clients, and a service is named {CLIENTS:?} too; rename that service"
                    ),
                ));
            }
            if to != entry {
                return Err((
                    link.to.span(),
                    format!(
                        "the clients call {entry:?}, not {to:?}: a link from the clients goes to {entry:?}"
                    ),
                ));
            }
        } else {
            let from_index = known(&names, from, link.from.span(), "from", true)?;
            let calls = super::routes::calls_anywhere(scenario, services[from_index]);
            if !calls.contains(&to) {
                let called = if calls.is_empty() {
                    "calls no service".to_string()
                } else {
                    format!("calls {}", quoted(&calls))
                };
                return Err((
                    link.to.span(),
                    format!(
                        "service {from:?} does not call {to:?} (it {called}): a link joins a caller to a service it calls"
                    ),
                ));
            }
        }
        debug_assert!(to_index < names.len());
        if seen.contains(&(from, to)) {
            return Err((
                spanned.span(),
                format!("the link from {from:?} to {to:?} is described twice; keep one"),
            ));
        }
        seen.push((from, to));
    }
    Ok(())
}

/// The index of the service `name`, or an error at `span` that lists what `key` may name.
fn known(
    names: &[&str],
    name: &str,
    span: Range<usize>,
    key: &str,
    clients_too: bool,
) -> Result<usize, Problem> {
    names
        .iter()
        .position(|&known| known == name)
        .ok_or_else(|| {
            let mut valid: Vec<&str> = Vec::new();
            if clients_too {
                valid.push(CLIENTS);
            }
            valid.extend(names);
            let hint = did_you_mean(name, valid.iter().copied())
                .map(|near| format!(" (did you mean {near:?}?)"))
                .unwrap_or_default();
            (
                span,
                format!(
                    "{key} = {name:?} names nothing{hint}; it may be {}",
                    quoted(&valid)
                ),
            )
        })
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("{name:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes out each link's settings that it takes from `[network]`.
pub(super) fn resolve_links(scenario: &mut Scenario) {
    let network = scenario.network.clone();
    for link in &mut scenario.link {
        let link = link.get_mut();
        let resolved = link_network(&network, Some(link));
        link.latency = Some(resolved.latency);
        link.request_loss = Some(resolved.request_loss);
        link.response_loss = Some(resolved.response_loss);
    }
}
