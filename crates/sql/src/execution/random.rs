//! `random()` and `setseed(x)`: each session's own generator, PostgreSQL's (src/common/pg_prng.c:
//! xoroshiro128** 1.0, its state filled by splitmix64 from a 64-bit seed), so that after the same
//! `setseed` a session draws the same numbers PostgreSQL 15 draws.
//!
//! Invariants: the state is never all zeros (xoroshiro's fixed point; a seed that gives it takes
//! Knuth's LCG constants instead, as PostgreSQL does); a session that never called `setseed` is
//! seeded once from the operating system's randomness.

use crate::error::{Result, SqlError};

/// One session's generator; unseeded until its first use or `setseed`.
#[derive(Debug, Default)]
pub struct SessionRandom {
    state: Option<(u64, u64)>,
}

impl SessionRandom {
    /// `setseed(seed)`: 22023 outside [-1, 1], as PostgreSQL says it.
    pub fn set_seed(&mut self, seed: f64) -> Result<()> {
        if !(-1.0..=1.0).contains(&seed) {
            return Err(SqlError::new(
                "22023",
                format!("setseed parameter {seed} is out of allowed range [-1,1]"),
            ));
        }
        // pg_prng_fseed: the seed scaled to 52 bits, the sign included.
        let scaled = (((1u64 << 52) - 1) as f64 * seed) as i64;
        self.state = Some(seeded(scaled as u64));
        Ok(())
    }

    /// A number uniformly drawn from [0, 1), with 52 random bits (pg_prng_double).
    pub fn next_unit(&mut self) -> f64 {
        let state = self.state.get_or_insert_with(|| seeded(rand::random()));
        let drawn = xoroshiro128ss(state);
        (drawn >> 12) as f64 / (1u64 << 52) as f64
    }
}

/// The state splitmix64 fills from `seed` (never all zeros).
fn seeded(mut seed: u64) -> (u64, u64) {
    let state = (splitmix64(&mut seed), splitmix64(&mut seed));
    match state {
        (0, 0) => (0x5851_F42D_4C95_7F2D, 0x1405_7B7E_F767_814F),
        state => state,
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut value = *state;
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

fn xoroshiro128ss(state: &mut (u64, u64)) -> u64 {
    let (s0, s1) = *state;
    let sx = s1 ^ s0;
    let value = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
    *state = (s0.rotate_left(24) ^ sx ^ (sx << 16), sx.rotate_left(37));
    value
}
