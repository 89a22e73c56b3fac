//! Philox4x64-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel
//! Random Numbers: As Easy as 1, 2, 3" (SC'11), as the Random123 library defines it.
//!
//! A counter-based generator is a keyed bijection of its counter: the 256 bits it gives for a
//! counter depend on that counter and the key alone, never on what was drawn before. So a draw
//! can be addressed (by a request and what the draw is for) instead of taken from a stream in
//! the order events happen. Philox4x64-10 passes TestU01's BigCrush for every counter and key
//! pattern its authors tried (its ten rounds leave a safety margin over the fewest that do); a
//! block is ten rounds of two 64x64-bit multiplications, four words at once, and nothing in it
//! waits on memory.

/// The multipliers of the two multiplications of a round.
const MULTIPLIERS: [u64; 2] = [0xD2E7_470E_E14C_6C93, 0xCA5A_8263_9512_1157];
/// What the key's two words gain between rounds (the golden ratio and `sqrt(3) - 1`).
const KEY_STEPS: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0xBB67_AE85_84CA_A73B];
/// Rounds: Random123's default, the number whose output the published test vectors give.
const ROUNDS: usize = 10;

/// The keys of the rounds of a block under one key: the key, then the key plus a step for
/// each round after the first, computed once rather than in every block.
#[derive(Debug, Clone, Copy)]
pub struct RoundKeys([[u64; 2]; ROUNDS]);

impl RoundKeys {
    /// The round keys of `key`.
    pub fn new(key: [u64; 2]) -> RoundKeys {
        let mut keys = [key; ROUNDS];
        for round in 1..ROUNDS {
            keys[round] = [
                keys[round - 1][0].wrapping_add(KEY_STEPS[0]),
                keys[round - 1][1].wrapping_add(KEY_STEPS[1]),
            ];
        }
        RoundKeys(keys)
    }
}

/// The 256 bits of `counter` under the key whose round keys are `keys`.
#[inline(always)]
pub fn philox4x64(counter: [u64; 4], keys: &RoundKeys) -> [u64; 4] {
    let mut counter = counter;
    for key in &keys.0 {
        let product0 = u128::from(MULTIPLIERS[0]) * u128::from(counter[0]);
        let product1 = u128::from(MULTIPLIERS[1]) * u128::from(counter[2]);
        counter = [
            (product1 >> 64) as u64 ^ counter[1] ^ key[0],
            product1 as u64,
            (product0 >> 64) as u64 ^ counter[3] ^ key[1],
            product0 as u64,
        ];
    }
    counter
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known-answer vectors of Random123 (`examples/kat_vectors`, the three lines
    /// `philox4x64 10`): counter, key, output.
    #[test]
    fn matches_the_published_known_answers() {
        let cases = [
            (
                [0; 4],
                [0; 2],
                [
                    0x16554d9eca36314c,
                    0xdb20fe9d672d0fdc,
                    0xd7e772cee186176b,
                    0x7e68b68aec7ba23b,
                ],
            ),
            (
                [u64::MAX; 4],
                [u64::MAX; 2],
                [
                    0x87b092c3013fe90b,
                    0x438c3c67be8d0224,
                    0x9cc7d7c69cd777b6,
                    0xa09caebf594f0ba0,
                ],
            ),
            (
                [
                    0x243f6a8885a308d3,
                    0x13198a2e03707344,
                    0xa4093822299f31d0,
                    0x082efa98ec4e6c89,
                ],
                [0x452821e638d01377, 0xbe5466cf34e90c6c],
                [
                    0xa528f45403e61d95,
                    0x38c72dbd566e9788,
                    0xa5a1610e72fd18b5,
                    0x57bd43b5e52b7fe6,
                ],
            ),
        ];
        for (counter, key, output) in cases {
            assert_eq!(
                philox4x64(counter, &RoundKeys::new(key)),
                output,
                "counter {counter:x?}"
            );
        }
    }
}
