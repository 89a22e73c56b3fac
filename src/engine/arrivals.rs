//! Open-loop arrivals, drawn ahead in batches.
//!
//! An open loop's arrivals depend on nothing the simulation does: the arrival stream is drawn
//! by arrivals alone, in the same order (the gap to the next arrival, with the draws that thin
//! it to the load curve, then which client it is). So they can be drawn a batch at a time,
//! where the logarithms of the gaps overlap one another, instead of one per event with the
//! event waiting for it: the same draws, in the same order, giving the same arrivals.

use crate::base::capacity::CapacityCurve;
use crate::base::random::{Random, Stream};
use crate::base::time::Micros;

/// Arrivals drawn per batch.
const BATCH: usize = 64;

/// The arrivals of an open loop, in order.
#[derive(Debug)]
pub(super) struct OpenArrivals<'m> {
    stream: Stream,
    /// Mean time between arrivals at the load curve's peak, in microseconds.
    mean_gap_us: f64,
    load: Option<&'m CapacityCurve>,
    load_peak: f64,
    clients: u64,
    duration: f64,
    /// When the last arrival drawn arrives, exactly as the gaps add up.
    last_us: f64,
    /// Drawn and not yet taken: when, and which client; the next is at `next`.
    ahead: Vec<(Micros, u32)>,
    next: usize,
    /// No arrival is left before the end.
    done: bool,
}

impl<'m> OpenArrivals<'m> {
    /// Arrivals of `clients` clients, a mean `mean_gap_us` apart at a load factor of 1, shaped
    /// by `load` whose highest factor is `load_peak`, until `duration`.
    pub(super) fn new(
        stream: Stream,
        mean_gap_us: f64,
        load: Option<&'m CapacityCurve>,
        load_peak: f64,
        clients: u64,
        duration: Micros,
    ) -> OpenArrivals<'m> {
        OpenArrivals {
            stream,
            mean_gap_us: mean_gap_us / load_peak,
            load,
            load_peak,
            clients,
            duration: duration as f64,
            last_us: 0.0,
            ahead: Vec::with_capacity(BATCH),
            next: 0,
            done: false,
        }
    }

    /// The next arrival before the end, and its client. With a load curve, arrivals are drawn
    /// at the curve's peak rate and thinned (kept with probability `factor(t) / peak`), which
    /// gives a Poisson process of rate `rate * factor(t)` from the arrival stream alone.
    #[inline]
    pub(super) fn next(&mut self) -> Option<(Micros, u32)> {
        if self.next == self.ahead.len() {
            self.draw_batch();
        }
        let arrival = self.ahead.get(self.next).copied();
        self.next += 1;
        arrival
    }

    fn draw_batch(&mut self) {
        self.ahead.clear();
        self.next = 0;
        while !self.done && self.ahead.len() < BATCH {
            loop {
                self.last_us += self.stream.exponential(self.mean_gap_us);
                let Some(load) = self.load else { break };
                let keep = load.factor(self.last_us as Micros) / self.load_peak;
                if self.last_us >= self.duration || self.stream.unit() < keep {
                    break;
                }
            }
            if self.last_us >= self.duration {
                self.done = true;
            } else {
                let client = self.stream.index(self.clients) as u32;
                self.ahead.push((self.last_us as Micros, client));
            }
        }
    }
}
