//! Reading back what the sweep writes: a serde mirror of
//! [`StallBreakdown`] (which the analysis crate only serialises) and the
//! compact form of a run's handoff samples in shard files.

use std::collections::BTreeMap;

use schedlab_analysis::StallBreakdown;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// [`StallBreakdown`] without its per-stall `details`, which sweeps drop.
/// Every field is listed, so a field added to the analysis crate fails to
/// compile here instead of being lost on the way through a shard file.
#[derive(Serialize, Deserialize)]
struct Breakdown {
    threshold_ns: u64,
    top_cpu: Option<u32>,
    wakeups: u64,
    delayed_wakeups_no_select: u64,
    handoffs: u64,
    stalls: u64,
    stalls_behind_other: u64,
    stalls_on_top_cpu_behind_other: u64,
    stalls_after_delayed_wakeup: u64,
    stalls_other_moved_by_active_balance: u64,
    stalls_other_moved_by_active_balance_while_asleep: u64,
    other_arrivals: BTreeMap<String, u64>,
    stalls_all_other_allowed_idle: u64,
}

fn to_wire(b: &StallBreakdown) -> Breakdown {
    let StallBreakdown {
        threshold_ns,
        top_cpu,
        wakeups,
        delayed_wakeups_no_select,
        handoffs,
        stalls,
        stalls_behind_other,
        stalls_on_top_cpu_behind_other,
        stalls_after_delayed_wakeup,
        stalls_other_moved_by_active_balance,
        stalls_other_moved_by_active_balance_while_asleep,
        other_arrivals,
        stalls_all_other_allowed_idle,
        details: _,
    } = b.clone();
    Breakdown {
        threshold_ns,
        top_cpu,
        wakeups,
        delayed_wakeups_no_select,
        handoffs,
        stalls,
        stalls_behind_other,
        stalls_on_top_cpu_behind_other,
        stalls_after_delayed_wakeup,
        stalls_other_moved_by_active_balance,
        stalls_other_moved_by_active_balance_while_asleep,
        other_arrivals,
        stalls_all_other_allowed_idle,
    }
}

fn from_wire(b: Breakdown) -> StallBreakdown {
    StallBreakdown {
        threshold_ns: b.threshold_ns,
        top_cpu: b.top_cpu,
        wakeups: b.wakeups,
        delayed_wakeups_no_select: b.delayed_wakeups_no_select,
        handoffs: b.handoffs,
        stalls: b.stalls,
        stalls_behind_other: b.stalls_behind_other,
        stalls_on_top_cpu_behind_other: b.stalls_on_top_cpu_behind_other,
        stalls_after_delayed_wakeup: b.stalls_after_delayed_wakeup,
        stalls_other_moved_by_active_balance: b.stalls_other_moved_by_active_balance,
        stalls_other_moved_by_active_balance_while_asleep: b.stalls_other_moved_by_active_balance_while_asleep,
        other_arrivals: b.other_arrivals,
        stalls_all_other_allowed_idle: b.stalls_all_other_allowed_idle,
        details: Vec::new(),
    }
}

/// `#[serde(with)]` for `Option<StallBreakdown>`: written as the analysis
/// crate writes it, read back through the mirror.
pub(crate) mod opt_breakdown {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<StallBreakdown>, s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StallBreakdown>, D::Error> {
        Ok(Option::<Breakdown>::deserialize(d)?.map(from_wire))
    }
}

/// `#[serde(with)]` for a breakdown in a shard file (the mirror both ways,
/// so no empty `details` list is written).
pub(crate) mod opt_breakdown_compact {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<StallBreakdown>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(to_wire).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<StallBreakdown>, D::Error> {
        super::opt_breakdown::deserialize(d)
    }
}

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
