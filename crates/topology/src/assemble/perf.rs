//! Assembly of `[[perf_domain]]`: cpufreq policies / energy-model
//! performance domains, and the capacities `capacity_dmips_mhz` derives.

use toml::Spanned;

use super::{cost, Ctx, Slot};
use crate::file::{GovernorName, PerfDomainFile};
use crate::perf::{CpufreqGovernor, Opp, PerfDomain};
use crate::{parse_cpulist, InputError, MAX_CPUS};

/// OPP voltages accepted: CPU rails are around 1 V; below 0.1 V or above
/// 5 V is a unit mistake (millivolts where microvolts were meant).
const MIN_MICROVOLT: i64 = 100_000;
const MAX_MICROVOLT: i64 = 5_000_000;

fn governor(g: GovernorName) -> CpufreqGovernor {
    match g {
        GovernorName::Schedutil => CpufreqGovernor::Schedutil,
        GovernorName::Performance => CpufreqGovernor::Performance,
        GovernorName::Powersave => CpufreqGovernor::Powersave,
    }
}

/// A positive `u32` property (coefficient, DMIPS/MHz).
fn positive_u32(ctx: &Ctx, s: &Spanned<i64>, key: &str, hint: &str) -> Result<u32, InputError> {
    let v = *s.get_ref();
    match u32::try_from(v) {
        Ok(x) if x > 0 => Ok(x),
        _ => Err(ctx.err(&s.span(), format!("{key} = {v} is out of range (expected 1..={}{hint})", u32::MAX))),
    }
}

/// Build the domains and, where `capacity_dmips_mhz` is given, the CPUs'
/// capacities by `topology_normalize_cpu_scale()`'s rule. Runs after the
/// `[capacity]` / `[[cpus]]` capacities are applied (a CPU's capacity may be
/// set in one place only) and before the check that some CPU has 1024.
pub(super) fn perf_domains(
    ctx: &Ctx,
    slots: &mut [Slot],
    default_governor: Option<Spanned<GovernorName>>,
    files: Vec<Spanned<PerfDomainFile>>,
) -> Result<Vec<PerfDomain>, InputError> {
    let n = slots.len();
    let default_governor = default_governor.map(|g| governor(*g.get_ref())).unwrap_or(CpufreqGovernor::Schedutil);
    let mut owner: Vec<Option<usize>> = vec![None; n];
    let mut out = Vec::with_capacity(files.len());
    let mut spans = Vec::with_capacity(files.len());
    for f in files {
        let entry = f.span();
        let f = f.into_inner();
        let key = &f.cpus;
        let cpus = parse_cpulist(key.get_ref())
            .map_err(|m| ctx.err(&key.span(), format!("bad cpulist `{}` in [[perf_domain]]: {m}", key.get_ref())))?;
        if cpus.is_empty() {
            return Err(ctx.err(&key.span(), "a [[perf_domain]] with no CPUs (expected a cpulist such as \"0-3\")"));
        }
        if let Some(last) = cpus.last().filter(|&l| l >= n) {
            return Err(ctx.err(
                &key.span(),
                format!("cpus = \"{}\" names CPU {last}, but this machine has CPUs 0-{}", key.get_ref(), n - 1),
            ));
        }
        for cpu in cpus.iter() {
            if let Some(prev) = owner[cpu] {
                let prev_span: &std::ops::Range<usize> = &spans[prev];
                return Err(ctx.err(
                    &key.span(),
                    format!(
                        "CPU {cpu} is already in the [[perf_domain]] at line {} (expected each CPU in at most one domain: one cpufreq policy per CPU)",
                        ctx.line(prev_span)
                    ),
                ));
            }
            owner[cpu] = Some(out.len());
        }

        let list = f.opps.get_ref();
        if list.is_empty() {
            return Err(
                ctx.err(&f.opps.span(), "opps = [] (expected at least one { freq = \"...\", microvolt = ... })")
            );
        }
        let with_volt = list.iter().filter(|o| o.get_ref().microvolt.is_some()).count();
        let mut opps: Vec<(Opp, std::ops::Range<usize>)> = Vec::with_capacity(list.len());
        for o in list {
            let span = o.span();
            let o = o.get_ref();
            let freq_khz = o.freq.get_ref().0;
            if freq_khz == 0 {
                return Err(ctx.err(&o.freq.span(), "an OPP at 0 Hz (expected a positive frequency)"));
            }
            let microvolt = match &o.microvolt {
                None if with_volt > 0 => {
                    return Err(ctx.err(
                        &span,
                        "this OPP has no `microvolt` but others in the domain have (expected all or none)",
                    ))
                }
                None => None,
                Some(v) => {
                    let x = *v.get_ref();
                    if !(MIN_MICROVOLT..=MAX_MICROVOLT).contains(&x) {
                        return Err(ctx.err(
                            &v.span(),
                            format!("microvolt = {x} is out of range (expected {MIN_MICROVOLT}..={MAX_MICROVOLT} µV, e.g. 825000 for 0.825 V)"),
                        ));
                    }
                    Some(x as u32)
                }
            };
            opps.push((Opp { freq_khz, microvolt }, o.freq.span()));
        }
        opps.sort_by_key(|(o, _)| o.freq_khz);
        if let Some(w) = opps.windows(2).find(|w| w[0].0.freq_khz == w[1].0.freq_khz) {
            return Err(ctx.err(
                &w[1].1,
                format!("two OPPs at {} kHz in one domain (expected distinct frequencies)", w[0].0.freq_khz),
            ));
        }
        let opps: Vec<Opp> = opps.into_iter().map(|(o, _)| o).collect();

        let dynamic_power_coefficient = f
            .dynamic_power_coefficient
            .as_ref()
            .map(|s| {
                positive_u32(
                    ctx,
                    s,
                    "dynamic_power_coefficient",
                    "; leave the key out for a domain without energy model",
                )
            })
            .transpose()?;
        if let (Some(_), 0) = (dynamic_power_coefficient, with_volt) {
            let s = f.dynamic_power_coefficient.as_ref().map(|s| s.span()).unwrap_or(entry.clone());
            return Err(ctx.err(
                &s,
                "dynamic_power_coefficient needs a `microvolt` on every OPP (the energy model's power is C·V²·f, drivers/opp/of.c)",
            ));
        }
        let capacity_dmips_mhz =
            f.capacity_dmips_mhz.as_ref().map(|s| positive_u32(ctx, s, "capacity_dmips_mhz", "")).transpose()?;
        let transition_latency_ns = match f.transition_latency {
            None => None,
            Some(s) => Some(cost(ctx, Some(s), "transition_latency", 0)?),
        };
        out.push(PerfDomain {
            cpus,
            governor: f.governor.map(|g| governor(*g.get_ref())).unwrap_or(default_governor),
            opps,
            dynamic_power_coefficient,
            capacity_dmips_mhz,
            transition_latency_ns,
        });
        spans.push(entry);
    }

    derive_capacities(ctx, slots, &out, &spans, &owner)?;

    for (d, span) in out.iter().zip(&spans) {
        let first = d.cpus.first().expect("not empty");
        if let Some(other) = d.cpus.iter().find(|&c| slots[c].info.capacity != slots[first].info.capacity) {
            return Err(ctx.err(
                span,
                format!(
                    "CPU {first} (capacity {}) and CPU {other} (capacity {}) are in one [[perf_domain]] (expected one capacity per domain: its CPUs share a clock and a core type)",
                    slots[first].info.capacity, slots[other].info.capacity
                ),
            ));
        }
    }
    debug_assert!(n <= MAX_CPUS);
    Ok(out)
}

/// `topology_normalize_cpu_scale()` (drivers/base/arch_topology.c, 6.12):
/// each CPU's `capacity-dmips-mhz` times its policy's maximum frequency in
/// kHz (`capacity_freq_ref` = `cpuinfo.max_freq`), scaled so the largest
/// product is 1024 (integer division, as `div64_u64`). The kernel needs the
/// property on every CPU or uses none of them (a missing one makes it drop
/// all and leave every CPU at 1024); a file that gives it for some domains
/// only is refused instead, as it is surely a mistake.
fn derive_capacities(
    ctx: &Ctx,
    slots: &mut [Slot],
    domains: &[PerfDomain],
    spans: &[std::ops::Range<usize>],
    owner: &[Option<usize>],
) -> Result<(), InputError> {
    let Some(first) = domains.iter().position(|d| d.capacity_dmips_mhz.is_some()) else {
        return Ok(());
    };
    let mut raw = vec![0u64; slots.len()];
    for (cpu, o) in owner.iter().enumerate() {
        let dmips = o.and_then(|d| domains[d].capacity_dmips_mhz.map(|v| (v, d)));
        let Some((dmips, d)) = dmips else {
            let span = o.map(|d| spans[d].clone()).unwrap_or_else(|| spans[first].clone());
            return Err(ctx.err(
                &span,
                format!(
                    "CPU {cpu} has no capacity_dmips_mhz, but the [[perf_domain]] at line {} gives one (expected it on every CPU's domain: the kernel normalizes all capacities together or none)",
                    ctx.line(&spans[first])
                ),
            ));
        };
        if let Some(src) = &slots[cpu].cap_src {
            return Err(ctx.err(
                src,
                format!(
                    "CPU {cpu} has its capacity set here and derived from capacity_dmips_mhz in the [[perf_domain]] at line {} (expected it in one place only)",
                    ctx.line(&spans[d])
                ),
            ));
        }
        raw[cpu] = dmips as u64 * domains[d].max_freq_khz();
    }
    let scale = raw.iter().copied().max().unwrap_or(1).max(1);
    for (cpu, r) in raw.iter().enumerate() {
        let cap = ((*r as u128) << 10) / scale as u128;
        if cap == 0 {
            let d = owner[cpu].expect("checked above");
            return Err(ctx.err(
                &spans[d],
                format!("CPU {cpu}'s capacity normalizes to 0 (capacity_dmips_mhz × max frequency is under 1/1024 of the largest)"),
            ));
        }
        slots[cpu].info.capacity = cap as u32;
    }
    Ok(())
}
