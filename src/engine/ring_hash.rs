//! Envoy's ring hash load balancer: each host is hashed onto a ring many times, and a request
//! goes to the first host at or after its own hash, so the same key always reaches the same
//! host and a host that leaves moves only its own keys.
//!
//! As Envoy builds it (`RingHashLoadBalancer::Ring`, equal weights): `minimum_ring_size`
//! (1024) entries at least, `ceil(1024 / hosts)` per host; a request's hash is looked up by
//! binary search, wrapping past the end. A retry whose pick a `previous_hosts` predicate
//! rejects takes the entry `attempt` places further, which may be the same host again (Envoy
//! says so in `chooseHost`). The key hashed is the user client's (a header or cookie naming the
//! user, forwarded by every tier), so every tier sends one user's requests to one instance of
//! each fleet. The hash is SplitMix64's finaliser, not Envoy's xxHash of host addresses: the
//! ring's shape, not which simulated host lands where, is what Envoy fixes.

/// Envoy's default `minimum_ring_size`.
pub const MINIMUM_RING_SIZE: usize = 1024;

/// The ring: `(hash, host)` entries by increasing hash.
#[derive(Debug, Clone)]
pub struct Ring {
    entries: Vec<(u64, u16)>,
}

impl Ring {
    /// The ring of `hosts` hosts of equal weight.
    pub fn new(hosts: u16) -> Ring {
        let per_host = MINIMUM_RING_SIZE.div_ceil(usize::from(hosts.max(1)));
        let mut entries: Vec<(u64, u16)> = (0..hosts)
            .flat_map(|host| {
                (0..per_host).map(move |replica| {
                    (mix(u64::from(host) << 32 | replica as u64 | 1 << 63), host)
                })
            })
            .collect();
        entries.sort_unstable();
        Ring { entries }
    }

    /// The host for a request of `key`, `attempt` entries past its place.
    pub fn host(&self, key: u32, attempt: u32) -> u16 {
        let hash = mix(u64::from(key));
        let at = self.entries.partition_point(|&(entry, _)| entry < hash);
        self.entries[(at + attempt as usize) % self.entries.len()].1
    }

    /// The hosts at and after the place of `key`, in ring order, from `attempt` entries past
    /// it: where a request goes when some hosts are out (ejected), as the ring Envoy rebuilds
    /// without them would send it.
    pub fn hosts_from(&self, key: u32, attempt: u32) -> impl Iterator<Item = u16> + '_ {
        let hash = mix(u64::from(key));
        let at = self.entries.partition_point(|&(entry, _)| entry < hash) + attempt as usize;
        (0..self.entries.len()).map(move |step| self.entries[(at + step) % self.entries.len()].1)
    }
}

/// SplitMix64's finaliser: a bijection of 64-bit words that spreads every input bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy's sizes: 1024 entries for 1 or 2 hosts, `ceil(1024 / 10) = 103` a host for 10.
    #[test]
    fn each_host_gets_its_share_of_entries() {
        assert_eq!(Ring::new(1).entries.len(), 1024);
        assert_eq!(Ring::new(10).entries.len(), 1030);
        let ring = Ring::new(10);
        for host in 0..10 {
            assert_eq!(ring.entries.iter().filter(|e| e.1 == host).count(), 103);
        }
    }

    /// Consistent hashing: with a host out, only its keys move, each to the next host on the
    /// ring; every other key stays where it was.
    #[test]
    fn a_host_out_moves_only_its_own_keys() {
        let ring = Ring::new(8);
        for key in 0..10_000 {
            let home = ring.host(key, 0);
            let without_3 = ring.hosts_from(key, 0).find(|&host| host != 3).unwrap();
            if home == 3 {
                assert_ne!(without_3, 3);
            } else {
                assert_eq!(without_3, home);
            }
        }
    }

    /// With 128 entries a host, the keys' shares stay near 1/8: a host's share of the ring is
    /// the sum of 128 gaps between 1024 random points, each about exponential of mean 1/1024,
    /// so its standard deviation is sqrt(128) / 1024 = 1.1 points (8.8% of 1/8); the bound of
    /// 30% is 3.4 of them.
    #[test]
    fn keys_spread_over_the_hosts() {
        let ring = Ring::new(8);
        let mut counts = [0u32; 8];
        for key in 0..80_000 {
            counts[usize::from(ring.host(key, 0))] += 1;
        }
        for count in counts {
            assert!((7_000..13_000).contains(&count), "{counts:?}");
        }
    }
}
