//! The compact form of a run's handoff samples in shard files.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Ascending samples as the first value and then the gaps between
/// neighbours: small numbers, so a 30 s run's ~60000 handoffs stay a few
/// hundred kB of JSON.
pub(crate) fn delta_encode(sorted: &[u64]) -> Vec<u64> {
    let mut prev = 0;
    sorted
        .iter()
        .map(|&v| {
            let d = v - prev;
            prev = v;
            d
        })
        .collect()
}

/// The inverse of [`delta_encode`]; `None` if the sum overflows.
pub(crate) fn delta_decode(deltas: &[u64]) -> Option<Vec<u64>> {
    let mut acc: u64 = 0;
    deltas
        .iter()
        .map(|&d| {
            acc = acc.checked_add(d)?;
            Some(acc)
        })
        .collect()
}

/// `#[serde(with = "crate::wire::delta")]`: ascending samples written
/// delta-encoded.
pub(crate) mod delta {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(sorted: &[u64], s: S) -> Result<S::Ok, S::Error> {
        delta_encode(sorted).serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        let deltas = Vec::<u64>::deserialize(d)?;
        delta_decode(&deltas).ok_or_else(|| serde::de::Error::custom("damaged samples: the deltas overflow"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_round_trip() {
        let s = vec![0, 3, 3, 10, 1_000_000];
        assert_eq!(delta_encode(&s), [0, 3, 0, 7, 999_990]);
        assert_eq!(delta_decode(&delta_encode(&s)).unwrap(), s);
        assert_eq!(delta_decode(&[u64::MAX, 1]), None);
    }
}
