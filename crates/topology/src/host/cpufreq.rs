//! The host's cpufreq policies, read from
//! `/sys/devices/system/cpu/cpufreq/policyN/` and written as
//! `[[perf_domain]]`s: the CPUs of each policy (`related_cpus`), its
//! frequency table (`scaling_available_frequencies`), governor
//! (`scaling_governor`) and `cpuinfo_transition_latency`.
//!
//! Only drivers with a frequency table give a domain (cpufreq-dt, the Arm
//! SCMI/CPPC table drivers, acpi-cpufreq). intel_pstate and amd-pstate in
//! active mode choose the frequency in the hardware (HWP/CPPC autonomous)
//! and list none: the file says so and has no `[[perf_domain]]`. No energy
//! model is read (its per-state power is in debugfs and the topology file
//! takes microvolts and a power coefficient, which sysfs does not give), so
//! a generated file simulates cpufreq and schedutil but not EAS.

use super::{Fs, HostError};

/// One `policyN` directory.
#[derive(Clone, Debug, PartialEq)]
pub struct HostPolicy {
    /// `policyN`, for the file's comment.
    pub name: String,
    /// `related_cpus`: kernel CPU numbers.
    pub cpus: Vec<usize>,
    /// `scaling_available_frequencies`, kHz ascending (empty: the driver has none).
    pub freqs_khz: Vec<u64>,
    /// `scaling_governor`.
    pub governor: String,
    /// `cpuinfo_transition_latency` in ns, unless the driver does not know
    /// it (CPUFREQ_ETERNAL, printed as 4294967295).
    pub transition_latency_ns: Option<u64>,
    /// `scaling_driver`.
    pub driver: String,
}

const DIR: &str = "sys/devices/system/cpu/cpufreq";

/// Every policy under the host root, by policy number; none when the
/// machine has no cpufreq.
pub(crate) fn read(fs: &Fs) -> Result<Vec<HostPolicy>, HostError> {
    let mut out = Vec::new();
    for (_, name) in fs.numbered(DIR, "policy")? {
        let dir = format!("{DIR}/{name}");
        let cpus_text = fs.read(&format!("{dir}/related_cpus"))?;
        let cpus =
            cpus_text.split_whitespace().map(|w| w.parse::<usize>()).collect::<Result<Vec<_>, _>>().map_err(|_| {
                fs.bad(&format!("{dir}/related_cpus"), format!("`{}` is not a list of CPU numbers", cpus_text.trim()))
            })?;
        let mut freqs_khz = match fs.read_opt(&format!("{dir}/scaling_available_frequencies"))? {
            Some(text) => text
                .split_whitespace()
                .map(|w| w.parse::<u64>().ok().filter(|&f| f > 0))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    fs.bad(
                        &format!("{dir}/scaling_available_frequencies"),
                        format!("`{}` is not a list of frequencies in kHz", text.trim()),
                    )
                })?,
            None => Vec::new(),
        };
        freqs_khz.sort_unstable();
        freqs_khz.dedup();
        let governor =
            fs.read_opt(&format!("{dir}/scaling_governor"))?.map(|s| s.trim().to_string()).unwrap_or_default();
        let driver = fs.read_opt(&format!("{dir}/scaling_driver"))?.map(|s| s.trim().to_string()).unwrap_or_default();
        let transition_latency_ns = fs
            .int_opt(&format!("{dir}/cpuinfo_transition_latency"))?
            .filter(|&ns| (0..u32::MAX as i64).contains(&ns))
            .map(|ns| ns as u64);
        out.push(HostPolicy { name, cpus, freqs_khz, governor, transition_latency_ns, driver });
    }
    Ok(out)
}

/// The `[[perf_domain]]`s of `host`'s policies, each with the sysfs files
/// it came from; a comment instead for a policy that cannot be one.
pub(crate) fn section(o: &mut String, host: &super::HostMachine) {
    use std::fmt::Write;
    for p in &host.policies {
        let src = format!("/{DIR}/{}", p.name);
        let ids: Vec<usize> = p.cpus.iter().filter_map(|&k| host.cpus.iter().position(|c| c.sysfs_id == k)).collect();
        if ids.is_empty() {
            continue;
        }
        if p.freqs_khz.is_empty() {
            let _ = writeln!(
                o,
                "\n# [sysfs {src}] driver {} lists no scaling_available_frequencies (the hardware chooses the \
                 frequency): no [[perf_domain]], CPUs run at their top frequency",
                if p.driver.is_empty() { "(unknown)" } else { &p.driver }
            );
            continue;
        }
        let caps: Vec<u32> = ids.iter().map(|&i| host.cpus[i].capacity.unwrap_or(1024)).collect();
        if caps.iter().any(|&c| c != caps[0]) {
            let _ = writeln!(o, "\n# [sysfs {src}] its CPUs have different cpu_capacity values: no [[perf_domain]]");
            continue;
        }
        let _ = writeln!(
            o,
            "\n# [sysfs {src}/{{related_cpus,scaling_available_frequencies,scaling_governor,cpuinfo_transition_latency}}, \
             driver {}]\n[[perf_domain]]",
            p.driver
        );
        let list = crate::CpuSet::from_iter(ids.iter().copied()).to_cpulist();
        let _ = writeln!(o, "cpus = \"{list}\"");
        match p.governor.as_str() {
            "schedutil" | "performance" | "powersave" => {
                let _ = writeln!(o, "governor = \"{}\"", p.governor);
            }
            other => {
                let _ = writeln!(o, "# [assumed: schedutil; the host runs `{other}`, which the model does not have]");
            }
        }
        if let Some(ns) = p.transition_latency_ns.filter(|&ns| ns <= 1_000_000_000) {
            let _ = writeln!(o, "transition_latency = {}", super::emit::dur(ns));
        }
        let opps: Vec<String> = p
            .freqs_khz
            .iter()
            .map(|&k| {
                if k % 1000 == 0 {
                    format!("{{ freq = \"{}MHz\" }}", k / 1000)
                } else {
                    format!("{{ freq = \"{k}kHz\" }}")
                }
            })
            .collect();
        let _ = writeln!(o, "opps = [ {} ]", opps.join(", "));
    }
}
