//! Which instance of a fleet an attempt goes to: the caller's load balancer.
//!
//! A load balancer runs in the caller, and each caller keeps its own state (Envoy's least
//! request reads the picking proxy's own `rq_active`): a client process its round-robin
//! position and its counts of requests outstanding per host, a calling instance its own. So state is kept per *scope*: each user client process
//! (`clients.processes`), and each instance of a calling service. The policies, as Envoy's
//! `lb_policy` and gRPC's `round_robin` pick (Envoy's "Supported load balancers"
//! documentation; gRPC's `round_robin` picker):
//!
//! - **round robin**: each scope cycles over the instances, from a start drawn at random the
//!   first time it picks (gRPC's picker starts at a random index; a thousand clients that all
//!   started at instance 0 would move in lock-step). A dead host keeps its share, 1/N.
//! - **random**: a uniform draw per pick.
//! - **least request**: `choice_count` uniform draws with replacement, the host with the
//!   fewest requests this scope has outstanding kept, the earlier draw on a tie. A host that
//!   fails fast has few outstanding and attracts load.
//! - **ring hash**: the user client's hash on a ring ([`super::ring_hash`]): one user's
//!   requests always reach the same host, retries included unless `previous_hosts` moves
//!   them along the ring, so a dead host fails the same users every time.
//!
//! A retry may avoid the hosts its call already tried (Envoy's `previous_hosts` predicate): a
//! pick of one is drawn again (the next host, for round robin), up to `previous_hosts` times,
//! after which the last pick stands, as Envoy's `host_selection_retry_max_attempts` says. The
//! hosts remembered are the last [`TRIED`] of the call.
//!
//! Every draw is the request's own (`Draw::Host`), so picking moves no other draw.

use super::outlier::OutlierDetector;
use super::ring_hash::Ring;
use crate::base::random::Random;
use crate::base::time::Micros;
use crate::model::FleetModel;
use crate::scenario::fleet::Balancer;

/// How many of a call's hosts are remembered, for `previous_hosts`.
pub(super) const TRIED: usize = 6;

/// The hosts a call has tried, the latest last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Tried {
    hosts: [u16; TRIED],
    len: u8,
}

impl Tried {
    /// None yet.
    pub(super) const EMPTY: Tried = Tried {
        hosts: [0; TRIED],
        len: 0,
    };

    /// Whether `host` is among them.
    fn contains(&self, host: u16) -> bool {
        self.hosts[..usize::from(self.len)].contains(&host)
    }

    /// `host` was tried: remembered, the oldest forgotten if need be.
    pub(super) fn push(&mut self, host: u16) {
        if usize::from(self.len) == TRIED {
            self.hosts.copy_within(1.., 0);
            self.hosts[TRIED - 1] = host;
        } else {
            self.hosts[usize::from(self.len)] = host;
            self.len += 1;
        }
    }
}

/// One fleet's balancing state, in every scope that calls it.
#[derive(Debug, Clone)]
pub(super) struct Fleet {
    /// Its first instance's index among the engine's services; the others follow.
    pub first: u16,
    /// How many instances.
    pub instances: u16,
    balancer: Balancer,
    choices: u16,
    /// Per scope, the next host of round robin (`u32::MAX` before its first pick).
    next: Vec<u32>,
    /// Per scope and host, the requests outstanding (least request only).
    outstanding: Vec<u32>,
    /// Per scope, its outlier detection, if the fleet has one.
    detectors: Vec<OutlierDetector>,
    /// The hosts a pick may choose from, reused (with outlier detection).
    usable: Vec<u16>,
    /// The ring (ring hash only), the same for every scope: every caller builds it from the
    /// same hosts.
    ring: Option<Ring>,
}

impl Fleet {
    /// A fleet of `instances` from engine service `first`, picked by `balancer` in `scopes`
    /// scopes.
    pub(super) fn new(first: u16, model: &FleetModel, scopes: usize) -> Fleet {
        let (instances, balancer) = (model.instances, model.balancer);
        let many = instances > 1;
        Fleet {
            first,
            instances,
            balancer,
            choices: model.choice_count,
            detectors: match &model.outlier {
                Some(outlier) if many => {
                    vec![OutlierDetector::new(outlier, usize::from(instances)); scopes]
                }
                _ => Vec::new(),
            },
            usable: Vec::new(),
            ring: (many && balancer == Balancer::RingHash).then(|| Ring::new(instances)),
            next: if many && balancer == Balancer::RoundRobin {
                vec![u32::MAX; scopes]
            } else {
                Vec::new()
            },
            outstanding: if many && balancer == Balancer::LeastRequest {
                vec![0; scopes * usize::from(instances)]
            } else {
                Vec::new()
            },
        }
    }

    /// Whether it counts the requests outstanding per host.
    pub(super) fn counts_outstanding(&self) -> bool {
        !self.outstanding.is_empty()
    }

    /// The host scope `scope` picks at `now` for a request of user client `user` whose draws
    /// are `draws`, avoiding `tried` up to `reselections` times, and the hosts its outlier
    /// detection has ejected unless it is in panic.
    pub(super) fn pick(
        &mut self,
        scope: usize,
        now: Micros,
        (user, draws): (u32, &mut impl Random),
        tried: &Tried,
        reselections: u32,
    ) -> u16 {
        if self.instances == 1 {
            return 0;
        }
        // The hosts its outlier detection lets it pick; none listed means every host (no
        // detection, or none ejected, or every one, which Envoy would answer 503 for).
        self.usable.clear();
        if let Some(detector) = self.detectors.get_mut(scope) {
            for host in 0..self.instances {
                if detector.usable(usize::from(host), now) {
                    self.usable.push(host);
                }
            }
            if self.usable.len() == usize::from(self.instances) {
                self.usable.clear();
            }
        }
        let mut host = self.pick_once(scope, draws, (user, 0));
        let mut again = 0;
        while again < reselections && tried.contains(host) {
            again += 1;
            host = self.pick_once(scope, draws, (user, again));
        }
        host
    }

    /// One pick among the usable hosts; ring hash picks for `user`, `attempt` entries past its
    /// place.
    fn pick_once(
        &mut self,
        scope: usize,
        draws: &mut impl Random,
        (user, attempt): (u32, u32),
    ) -> u16 {
        let all = u32::from(self.instances);
        let usable = &self.usable;
        let mut draw = || {
            if usable.is_empty() {
                draws.index(u64::from(all)) as u16
            } else {
                usable[draws.index(usable.len() as u64) as usize]
            }
        };
        match self.balancer {
            Balancer::RoundRobin => {
                let next = &mut self.next[scope];
                if *next == u32::MAX {
                    *next = draws.index(u64::from(all)) as u32;
                }
                // The next host in the ring that is usable.
                loop {
                    let host = *next as u16;
                    *next = (*next + 1) % all;
                    if usable.is_empty() || usable.contains(&host) {
                        return host;
                    }
                }
            }
            Balancer::Random => draw(),
            Balancer::RingHash => {
                let ring = self.ring.as_ref().expect("a ring-hash fleet has its ring");
                if usable.is_empty() {
                    ring.host(user, attempt)
                } else {
                    ring.hosts_from(user, attempt)
                        .find(|host| usable.contains(host))
                        .expect("some host is usable")
                }
            }
            Balancer::LeastRequest => {
                let row = scope * usize::from(self.instances);
                let mut best = draw();
                for _ in 1..self.choices {
                    let other = draw();
                    if self.outstanding[row + usize::from(other)]
                        < self.outstanding[row + usize::from(best)]
                    {
                        best = other;
                    }
                }
                best
            }
        }
    }

    /// Whether it keeps state about the attempts' results: requests outstanding, or outlier
    /// detection.
    pub(super) fn hears_results(&self) -> bool {
        !self.outstanding.is_empty() || !self.detectors.is_empty()
    }

    /// Scope `scope` learned at `now` how an attempt to `host` ended: `failed` (a 5xx, or a
    /// failure without a response), or not; `None` if it stopped waiting without an answer
    /// that says (a hedge cancelled).
    pub(super) fn result(&mut self, scope: usize, host: u16, failed: Option<bool>, now: Micros) {
        self.ended(scope, host);
        if let (Some(detector), Some(failed)) = (self.detectors.get_mut(scope), failed) {
            detector.record(usize::from(host), failed, now);
        }
    }

    /// The time each host was ejected by 'now', averaged over the scopes that detect outliers
    /// (zero without outlier detection).
    pub(super) fn ejected_us(&mut self, now: Micros) -> Vec<Micros> {
        let scopes = self.detectors.len() as u128;
        (0..self.instances)
            .map(|host| {
                if scopes == 0 {
                    return 0;
                }
                let total: u128 = self
                    .detectors
                    .iter_mut()
                    .map(|detector| u128::from(detector.ejected_time(usize::from(host), now)))
                    .sum();
                (total / scopes) as Micros
            })
            .collect()
    }

    /// Scope `scope` sent a request to `host` and waits for it.
    pub(super) fn sent(&mut self, scope: usize, host: u16) {
        if self.counts_outstanding() {
            self.outstanding[scope * usize::from(self.instances) + usize::from(host)] += 1;
        }
    }

    /// Scope `scope` stopped waiting for a request to `host` (answered, or given up on).
    fn ended(&mut self, scope: usize, host: u16) {
        if self.counts_outstanding() {
            let count =
                &mut self.outstanding[scope * usize::from(self.instances) + usize::from(host)];
            *count = count.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::random::{Draw, Identity, Keyed};

    fn fleet(instances: u16, balancer: Balancer) -> FleetModel {
        FleetModel {
            instances,
            balancer,
            capacity_instances: instances,
            ..FleetModel::SINGLE
        }
    }

    fn draws(call: u64) -> crate::base::random::Draws {
        Keyed::new(7).draws(Draw::Host, Identity { call, part: 0 })
    }

    /// Round robin gives each of N hosts exactly every N-th pick of a scope.
    #[test]
    fn round_robin_cycles_from_a_random_start() {
        let mut fleet = Fleet::new(0, &fleet(5, Balancer::RoundRobin), 2);
        let picks: Vec<u16> = (0..10)
            .map(|call| fleet.pick(0, 0, (0, &mut draws(call)), &Tried::default(), 0))
            .collect();
        for (i, pick) in picks.iter().enumerate().skip(1) {
            assert_eq!(*pick, (picks[0] + i as u16) % 5, "{picks:?}");
        }
    }

    /// `previous_hosts` never repeats a host while others remain, under round robin with as
    /// many reselections as hosts.
    #[test]
    fn previous_hosts_avoid_what_was_tried() {
        let mut fleet = Fleet::new(0, &fleet(4, Balancer::RoundRobin), 1);
        let mut tried = Tried::default();
        let mut seen = Vec::new();
        for call in 0..4 {
            // Other calls of the scope move its position between this call's attempts.
            fleet.pick(0, 0, (0, &mut draws(100 + call)), &Tried::default(), 0);
            let host = fleet.pick(0, 0, (0, &mut draws(call)), &tried, 4);
            assert!(!seen.contains(&host), "{seen:?} then {host}");
            seen.push(host);
            tried.push(host);
        }
    }

    /// Least request keeps the host with fewer outstanding: with one host loaded, two draws
    /// avoid it unless both fall on it (probability 1/N^2 per pick).
    #[test]
    fn least_request_avoids_the_loaded_host() {
        let mut fleet = Fleet::new(0, &fleet(4, Balancer::LeastRequest), 1);
        for _ in 0..100 {
            fleet.sent(0, 2);
        }
        let picks = 40_000;
        let on_loaded = (0..picks)
            .filter(|&call| fleet.pick(0, 0, (0, &mut draws(call)), &Tried::default(), 0) == 2)
            .count() as f64;
        // Binomial(40,000, 1/16): mean 2,500, sd 48.4; 5 sd either side.
        assert!((on_loaded - 2500.0).abs() < 5.0 * 48.4, "{on_loaded}");
    }

    /// The last hosts tried are kept, the oldest forgotten.
    #[test]
    fn tried_keeps_the_latest() {
        let mut tried = Tried::default();
        for host in 0..8 {
            tried.push(host);
        }
        assert!(!tried.contains(0) && !tried.contains(1));
        assert!((2..8).all(|host| tried.contains(host)));
    }
}
