//! `[hwp_highest_perf]` and `[core_type]`: what an Intel part reports per
//! CPU, from which the kernel derives ITMT priorities and, on hybrid parts
//! where the kernel version does so, CPU capacities.
//!
//! The file gives the firmware's values; the kernel's use of them depends on
//! the kernel version and lives in the kernel model (`schedlab_kernel`'s
//! `topology::itmt` and `topology::intel_pstate`). Here they are checked and
//! the CPU's `asym_prio` is set to the highest performance, which is what
//! `sched_set_itmt_core_prio()` stores since 6.5 (the rule of every profile
//! the model has); `capacity` stays 1024, as x86 reports it while it does
//! not scale capacities.

use std::collections::BTreeMap;

use toml::Spanned;

use super::{Ctx, Slot, Span};
use crate::{CoreType, InputError};

type Table<V> = Spanned<BTreeMap<Spanned<String>, Spanned<V>>>;

/// HWP performance levels are 8-bit fields (`HWP_HIGHEST_PERF()` masks bits 7:0).
const MAX_HWP_PERF: i64 = 255;

/// Apply both tables, or refuse what conflicts with them.
pub(super) fn apply(
    ctx: &Ctx,
    slots: &mut [Slot],
    perf: Option<&Table<i64>>,
    types: Option<&Table<String>>,
) -> Result<(), InputError> {
    let Some(perf) = perf else {
        if let Some(t) = types {
            return Err(ctx.err(
                &t.span(),
                "[core_type] needs [hwp_highest_perf] (expected each CPU's HWP highest performance, \
                 from which the kernel computes ITMT priorities and hybrid capacities)",
            ));
        }
        return Ok(());
    };
    if let Some(src) = slots.iter().filter_map(|s| s.prio_src.clone()).min_by_key(|s| s.start) {
        return Err(ctx.err(
            &src,
            "asym_prio is given while [hwp_highest_perf] is present (expected one of the two: with \
             [hwp_highest_perf] the kernel profile computes each CPU's ITMT priority from it)",
        ));
    }
    let values = cover(ctx, slots.len(), perf, "[hwp_highest_perf]", |ctx, v| {
        let n = *v.get_ref();
        if !(1..=MAX_HWP_PERF).contains(&n) {
            return Err(ctx.err(
                &v.span(),
                format!("hwp_highest_perf {n} is out of range (expected 1..={MAX_HWP_PERF}, an 8-bit HWP level)"),
            ));
        }
        Ok(n as u32)
    })?;
    for (slot, (v, key)) in slots.iter_mut().zip(values) {
        slot.info.hwp_highest_perf = Some(v);
        slot.info.asym_prio = v as i32;
        slot.prio_src = Some(key);
    }
    let Some(types) = types else { return Ok(()) };
    let values = cover(ctx, slots.len(), types, "[core_type]", |ctx, v| match v.get_ref().as_str() {
        "core" => Ok(CoreType::Core),
        "atom" => Ok(CoreType::Atom),
        other => Err(ctx.err(
            &v.span(),
            format!("core type `{other}` is not one (expected \"core\" for a P-core or \"atom\" for an E-core)"),
        )),
    })?;
    for kind in [CoreType::Core, CoreType::Atom] {
        if !values.iter().any(|(t, _)| *t == kind) {
            return Err(ctx.err(
                &types.span(),
                format!(
                    "[core_type] has no `{}` CPU (expected a hybrid part: both P-cores (\"core\") and E-cores (\"atom\"))",
                    kind.as_str()
                ),
            ));
        }
    }
    if let Some(src) = slots.iter().filter_map(|s| s.cap_src.clone()).min_by_key(|s| s.start) {
        return Err(ctx.err(
            &src,
            "capacity is given on a hybrid part ([core_type]) (expected none: the kernel profile decides it, \
             1024 everywhere or intel_pstate's capacities from [hwp_highest_perf])",
        ));
    }
    for (slot, (t, _)) in slots.iter_mut().zip(values) {
        slot.info.core_type = Some(t);
    }
    Ok(())
}

/// Read a cpulist table that must give every CPU exactly one value.
fn cover<V, T>(
    ctx: &Ctx,
    n: usize,
    table: &Table<V>,
    name: &str,
    value: impl Fn(&Ctx, &Spanned<V>) -> Result<T, InputError>,
) -> Result<Vec<(T, Span)>, InputError>
where
    T: Copy,
{
    let mut out: Vec<Option<(T, Span, String)>> = vec![None; n];
    let mut entries: Vec<_> = table.get_ref().iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    for (key, v) in entries {
        let set = super::table_key_cpus(ctx, key, n, name)?;
        let t = value(ctx, v)?;
        for cpu in set.iter() {
            if let Some((_, _, prev)) = &out[cpu] {
                return Err(ctx.err(
                    &key.span(),
                    format!(
                        "CPU {cpu} is given a value by both `{prev}` and `{}` in {name} (expected each CPU once)",
                        key.get_ref()
                    ),
                ));
            }
            out[cpu] = Some((t, key.span(), key.get_ref().clone()));
        }
    }
    let mut done = Vec::with_capacity(n);
    for (cpu, o) in out.into_iter().enumerate() {
        match o {
            Some((t, span, _)) => done.push((t, span)),
            None => {
                return Err(ctx.err(
                    &table.span(),
                    format!("{name} gives no value for CPU {cpu} (expected every CPU of the machine once)"),
                ))
            }
        }
    }
    Ok(done)
}

/// SMT siblings are one core: one core type, one highest performance.
pub(super) fn check_siblings(ctx: &Ctx, slots: &[Slot]) -> Result<(), InputError> {
    let mut first_of_core: BTreeMap<usize, usize> = BTreeMap::new();
    for (i, s) in slots.iter().enumerate() {
        let f = *first_of_core.entry(s.info.core).or_insert(i);
        let o = &slots[f].info;
        if o.core_type != s.info.core_type {
            return Err(ctx.err(
                s.prio_src.as_ref().unwrap_or(&(0..0)),
                format!(
                    "SMT siblings CPU {} and CPU {} have different core types in [core_type] (expected one per core)",
                    o.id, s.info.id
                ),
            ));
        }
        if o.hwp_highest_perf != s.info.hwp_highest_perf {
            return Err(ctx.err(
                s.prio_src.as_ref().unwrap_or(&(0..0)),
                format!(
                    "SMT siblings CPU {} and CPU {} have different hwp_highest_perf ({} and {}) (expected one per core: \
                     HWP capabilities are per core)",
                    o.id,
                    s.info.id,
                    o.hwp_highest_perf.unwrap_or(0),
                    s.info.hwp_highest_perf.unwrap_or(0)
                ),
            ));
        }
    }
    Ok(())
}
