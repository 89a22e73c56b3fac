//! The AWS SDKs' retry quota (standard retry mode; botocore `retries/quota.py` and
//! `retries/standard.py`, the AWS SDKs and Tools Reference Guide, "Retry behavior").
//!
//! One quota per SDK client, 500 tokens at the start and at most. A retry costs 5 tokens, a
//! retry after a timeout 10; when fewer are left the SDK returns the error at once instead of
//! retrying. A call that succeeds gives back what its last retry cost, or 1 token if it was
//! not retried, never above the maximum. The quota never delays a send and never refuses a
//! first attempt.

use super::{CallEnd, Control};
use crate::base::time::Micros;

/// Settings of the quota, defaults the SDKs' (classic standard mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsRetryQuotaConfig {
    /// Tokens at the start and at most (500).
    pub capacity: u32,
    /// Cost of a retry (5).
    pub retry_cost: u32,
    /// Cost of a retry after a timeout (10).
    pub timeout_cost: u32,
    /// Given back by a call that succeeded without a retry (1, `NO_RETRY_INCREMENT`).
    pub success_refund: u32,
}

impl Default for AwsRetryQuotaConfig {
    fn default() -> Self {
        AwsRetryQuotaConfig {
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            success_refund: 1,
        }
    }
}

/// The quota of one SDK client.
#[derive(Debug)]
pub struct AwsRetryQuota {
    config: AwsRetryQuotaConfig,
    available: u32,
}

impl AwsRetryQuota {
    /// A full quota.
    pub fn new(config: &AwsRetryQuotaConfig) -> Self {
        AwsRetryQuota {
            config: *config,
            available: config.capacity,
        }
    }

    /// Tokens left.
    pub fn available(&self) -> u32 {
        self.available
    }

    fn cost(&self, timed_out: bool) -> u32 {
        if timed_out {
            self.config.timeout_cost
        } else {
            self.config.retry_cost
        }
    }
}

impl Control for AwsRetryQuota {
    fn admit_retry(&mut self, _now: Micros, timed_out: bool) -> bool {
        let cost = self.cost(timed_out);
        if self.available < cost {
            return false;
        }
        self.available -= cost;
        true
    }

    fn retry_cancelled(&mut self, _now: Micros) {
        // Another control refused the retry this quota paid for: the call will fail, and the
        // SDK would not have acquired the tokens. Which cost was paid is not known here; the
        // smaller one is given back, which can only err towards fewer retries.
        self.available = (self.available + self.config.retry_cost).min(self.config.capacity);
    }

    fn call_ended(&mut self, _now: Micros, end: &CallEnd) {
        if !end.success {
            return;
        }
        let refund = match end.last_retry_after_timeout {
            None => self.config.success_refund,
            Some(timed_out) => self.cost(timed_out),
        };
        self.available = (self.available + refund).min(self.config.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SDKs' numbers: 500 tokens pay for 100 retries after errors or 50 after timeouts;
    /// the 101st is refused, and a success after a retry gives its cost back.
    #[test]
    fn the_quota_pays_for_a_hundred_retries() {
        let mut quota = AwsRetryQuota::new(&AwsRetryQuotaConfig::default());
        assert_eq!(
            (0..200).filter(|_| quota.admit_retry(0, false)).count(),
            100
        );
        assert_eq!(quota.available(), 0);
        let retried = CallEnd {
            success: true,
            last_retry_after_timeout: Some(true),
        };
        quota.call_ended(0, &retried);
        assert_eq!(quota.available(), 10);
        assert!(quota.admit_retry(0, true));
        assert!(!quota.admit_retry(0, false));
        let first_try = CallEnd {
            success: true,
            last_retry_after_timeout: None,
        };
        for _ in 0..1000 {
            quota.call_ended(0, &first_try);
        }
        assert_eq!(quota.available(), 500);
        assert_eq!((0..100).filter(|_| quota.admit_retry(0, true)).count(), 50);
        // Failed calls give nothing back.
        quota.call_ended(
            0,
            &CallEnd {
                success: false,
                last_retry_after_timeout: Some(false),
            },
        );
        assert_eq!(quota.available(), 0);
    }
}
