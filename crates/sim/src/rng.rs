//! The run's only source of randomness: xoshiro256++ seeded through
//! SplitMix64, with our own sampling code, so a seed reproduces a run bit for
//! bit whatever crate versions are in use.

/// SplitMix64, used to expand a seed into generator state and derive streams.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256++ (Blackman & Vigna).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `[0, n]` (inclusive), by rejection so there is no bias.
    pub fn below_incl(&mut self, n: u64) -> u64 {
        if n == u64::MAX {
            return self.next_u64();
        }
        let range = n + 1;
        let zone = u64::MAX - (u64::MAX % range) - 1;
        loop {
            let x = self.next_u64();
            if x <= zone {
                return x % range;
            }
        }
    }

    /// Uniform float in `[0, 1)` from the top 53 bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut r = Rng::new(8);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn stream_is_pinned() {
        // Pins the generator: a change here silently changes every seeded run.
        let mut r = Rng::new(0);
        assert_eq!(r.next_u64(), 0x53175d61490b23df);
    }

    #[test]
    fn below_incl_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let x = r.below_incl(4);
            assert!(x <= 4);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
