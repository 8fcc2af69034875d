//! The kernel side of the host: CONFIG_HZ and the preemption model, ITMT,
//! and cpuidle (driver, governor, states, haltpoll parameters).
//!
//! Sources, in the order tried:
//! * HZ: `/boot/config-$(uname -r)`, else `/proc/config.gz` (IKCONFIG_PROC,
//!   unpacked by `gzip -dc`: the workspace has no inflate crate).
//! * preemption model: `/sys/kernel/debug/sched/preempt` (PREEMPT_DYNAMIC:
//!   the current one in parentheses; read only if debugfs is mounted, never
//!   mounted here), else `preempt=` on `/proc/cmdline`, else the config's
//!   CONFIG_PREEMPT_* choice (with PREEMPT_DYNAMIC that is the boot default).
//! * ITMT: `/proc/sys/kernel/sched_itmt_enabled`, which exists only once a
//!   driver registered ITMT support (sched_set_itmt_support()).
//! * cpuidle: `/sys/devices/system/cpu/cpuidle/current_driver`,
//!   `current_governor` (older kernels without cpuidle_sysfs_switch:
//!   `current_governor_ro`), `cpuN/cpuidle/stateK/{name,desc,latency,residency,disable}`,
//!   `/sys/module/haltpoll/parameters/*`.

use std::collections::BTreeMap;

use super::{Fs, HostError, Sourced};
use crate::PreemptModel;

/// A kernel config as `KEY -> value` (`CONFIG_HZ -> 250`), with where it came from.
pub(crate) struct KernelConfig {
    pub map: BTreeMap<String, String>,
    pub source: Option<String>,
}

impl KernelConfig {
    pub fn read(fs: &Fs, release: &str, notes: &mut Vec<String>) -> Result<KernelConfig, HostError> {
        let boot = format!("boot/config-{release}");
        if !release.is_empty() {
            if let Some(text) = fs.read_or_skip(&boot, notes)? {
                return Ok(KernelConfig { map: parse_config(&text), source: Some(fs.cite(&boot)) });
            }
        }
        let gz = "proc/config.gz";
        if fs.exists(gz) {
            match gunzip(&fs.path(gz)) {
                Ok(text) => return Ok(KernelConfig { map: parse_config(&text), source: Some(fs.cite(gz)) }),
                Err(why) => notes.push(format!("{}: cannot unpack ({why})", fs.cite(gz))),
            }
        }
        notes.push(format!("no kernel config ({} or /proc/config.gz)", fs.cite(&boot)));
        Ok(KernelConfig { map: BTreeMap::new(), source: None })
    }

    fn is_y(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| v == "y")
    }
}

fn parse_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

/// Why `/proc/config.gz` could not be unpacked (a note, not an error: the
/// config is one source among others).
#[derive(Debug, thiserror::Error)]
enum GunzipError {
    #[error("gzip -dc: {0}")]
    Helper(#[from] schedlab_helper::HelperError),
    #[error("gzip -dc: {0}")]
    Failed(String),
    #[error("not UTF-8 text")]
    NotText,
}

/// How long `gzip -dc` may take on a kernel config (about 200 KB unpacked).
const GUNZIP_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

fn gunzip(path: &std::path::Path) -> Result<String, GunzipError> {
    let out = schedlab_helper::output(std::process::Command::new("gzip").arg("-dc").arg(path), GUNZIP_LIMIT)?;
    if !out.status.success() {
        return Err(GunzipError::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    String::from_utf8(out.stdout).map_err(|_| GunzipError::NotText)
}

pub(crate) fn hz(config: &KernelConfig, notes: &mut Vec<String>) -> Sourced<u32> {
    if let (Some(v), Some(src)) = (config.map.get("CONFIG_HZ"), &config.source) {
        if let Ok(hz) = v.parse::<u32>() {
            if crate::HZ_CHOICES.contains(&hz) {
                return Sourced::new(hz, format!("[{src}: CONFIG_HZ={hz}]"));
            }
            notes.push(format!("{src}: CONFIG_HZ={hz} is not one of 100, 250, 300, 1000"));
        }
    }
    Sourced::new(250, "[assumed: no readable CONFIG_HZ; 250 is the x86 defconfig and most distributions' choice]")
}

pub(crate) fn preempt(
    fs: &Fs,
    config: &KernelConfig,
    cmdline: &str,
    notes: &mut Vec<String>,
) -> Result<Sourced<PreemptModel>, HostError> {
    let dbg = "sys/kernel/debug/sched/preempt";
    let mounted = fs.exists("sys/kernel/debug/sched");
    if let Some(text) = fs.read_or_skip(dbg, notes)? {
        // "none (voluntary) full lazy": the current model is in parentheses.
        let current = text.split_whitespace().find_map(|w| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')));
        match current.map(str::parse::<PreemptModel>) {
            Some(Ok(m)) => return Ok(Sourced::new(m, format!("[{}: `{}`]", fs.cite(dbg), text.trim()))),
            _ => return Err(fs.bad(dbg, format!("expected the current model in parentheses, found `{}`", text.trim()))),
        }
    }
    if !mounted {
        notes.push(format!(
            "{} not read (debugfs not mounted; schedlab does not mount it): preemption model from the command line \
             or config",
            fs.cite(dbg)
        ));
    }
    if let Some(arg) = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")) {
        if let Ok(m) = arg.parse::<PreemptModel>() {
            return Ok(Sourced::new(m, format!("[/proc/cmdline: preempt={arg}]")));
        }
    }
    if let Some(src) = &config.source {
        let dynamic = if config.is_y("CONFIG_PREEMPT_DYNAMIC") {
            ", PREEMPT_DYNAMIC's boot default, no preempt= on /proc/cmdline"
        } else {
            ""
        };
        for (key, model) in [
            ("CONFIG_PREEMPT_RT", PreemptModel::Full),
            ("CONFIG_PREEMPT_LAZY", PreemptModel::Lazy),
            ("CONFIG_PREEMPT", PreemptModel::Full),
            ("CONFIG_PREEMPT_VOLUNTARY", PreemptModel::Voluntary),
            ("CONFIG_PREEMPT_NONE", PreemptModel::None),
        ] {
            if config.is_y(key) {
                let rt = if key == "CONFIG_PREEMPT_RT" { " (PREEMPT_RT, modelled as full)" } else { "" };
                return Ok(Sourced::new(model, format!("[{src}: {key}=y{dynamic}{rt}]")));
            }
        }
    }
    Ok(Sourced::new(
        PreemptModel::Voluntary,
        "[assumed: no debugfs, preempt= or kernel config; voluntary is the common distribution default]",
    ))
}

pub(crate) fn itmt(fs: &Fs) -> Result<Sourced<bool>, HostError> {
    let rel = "proc/sys/kernel/sched_itmt_enabled";
    Ok(match fs.int_opt(rel)? {
        Some(v) => Sourced::new(v != 0, format!("[{}: {v}]", fs.cite(rel))),
        None => Sourced::new(false, format!("[{} absent: no driver registered ITMT support]", fs.cite(rel))),
    })
}

/// (`model name`, has the `hypervisor` flag) from /proc/cpuinfo.
pub(crate) fn cpuinfo(fs: &Fs) -> (String, bool) {
    let text = fs.read_opt("proc/cpuinfo").ok().flatten().unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == name).map(|(_, v)| v.trim().to_string()))
    };
    let model = field("model name").unwrap_or_default();
    let guest = field("flags").is_some_and(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    (model, guest)
}

/// cpuidle as the generated file states it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostIdle {
    pub driver: Sourced<String>,
    /// "menu" | "teo" | "haltpoll" | "none".
    pub governor: Sourced<String>,
    /// Shallowest first; disabled states left out (and noted).
    pub states: Vec<HostIdleState>,
    pub haltpoll: Option<Haltpoll>,
    /// Said in comments above [idle].
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HostIdleState {
    pub name: String,
    pub desc: String,
    /// None: sysfs has no value (the driver-less halt state).
    pub exit_latency_ns: Option<u64>,
    pub target_residency_ns: u64,
    pub polling: bool,
    pub source: String,
}

/// `/sys/module/haltpoll/parameters/*` (the haltpoll governor's knobs).
#[derive(Clone, Debug, PartialEq)]
pub struct Haltpoll {
    pub poll_ns: u64,
    pub grow: u64,
    pub grow_start_ns: u64,
    pub shrink: u64,
    pub allow_shrink: bool,
    pub source: String,
}

const CPUIDLE: &str = "sys/devices/system/cpu/cpuidle";

pub(crate) fn idle(
    fs: &Fs,
    first: usize,
    others: &[usize],
    cmdline: &str,
    flags: &[String],
    notes: &mut Vec<String>,
) -> Result<HostIdle, HostError> {
    let drv_rel = format!("{CPUIDLE}/current_driver");
    let driver = match fs.read_opt(&drv_rel)? {
        Some(d) => Sourced::new(d.trim().to_string(), format!("[{}]", fs.cite(&drv_rel))),
        None if !fs.exists(CPUIDLE) => {
            Sourced::new("none".to_string(), format!("[{} absent: kernel without CONFIG_CPU_IDLE]", fs.cite(CPUIDLE)))
        }
        None => return Err(fs.bad(&drv_rel, "missing, though the cpuidle directory exists")),
    };
    let mut idle_notes = Vec::new();
    if driver.value == "none" {
        // No cpuidle driver: the idle loop calls default_idle_call(), which on
        // x86 halts (or polls with idle=poll); no governor chooses anything.
        let gov_src = format!("[{}: none: no driver, so no governor runs]", fs.cite(&drv_rel));
        let poll = cmdline.split_whitespace().any(|w| w == "idle=poll");
        let mwait = flags.iter().any(|f| f == "monitor") && !cmdline.split_whitespace().any(|w| w == "idle=halt");
        let state = if poll {
            HostIdleState {
                name: "POLL".into(),
                desc: "idle=poll: cpu_idle_poll()".into(),
                exit_latency_ns: Some(0),
                target_residency_ns: 0,
                polling: true,
                source: "[/proc/cmdline: idle=poll]".into(),
            }
        } else if mwait {
            HostIdleState {
                name: "MWAIT-C1".into(),
                desc: "default idle: mwait_idle() (CPU flag monitor)".into(),
                exit_latency_ns: None,
                target_residency_ns: 0,
                polling: true,
                source:
                    "[assumed: /proc/cpuinfo has `monitor`, so x86 idles in MWAIT C1, which keeps the polling flag]"
                        .into(),
            }
        } else {
            HostIdleState {
                name: "HLT".into(),
                desc: "default idle: HLT (no cpuidle driver)".into(),
                exit_latency_ns: None,
                target_residency_ns: 0,
                polling: false,
                source: format!(
                    "[{}: none, no `monitor` CPU flag and no idle= on /proc/cmdline: x86 default_idle() halts]",
                    fs.cite(&drv_rel)
                ),
            }
        };
        if fs.exists("sys/module/haltpoll/parameters") {
            idle_notes.push(
                "/sys/module/haltpoll/parameters exist (the governor is built in) but no haltpoll cpuidle driver \
                 registered, so they do not apply"
                    .to_string(),
            );
        }
        return Ok(HostIdle {
            driver,
            governor: Sourced::new("none".into(), gov_src),
            states: vec![state],
            haltpoll: None,
            notes: idle_notes,
        });
    }

    let mut gov = None;
    for name in ["current_governor", "current_governor_ro"] {
        let rel = format!("{CPUIDLE}/{name}");
        if let Some(g) = fs.read_opt(&rel)? {
            gov = Some((g.trim().to_string(), fs.cite(&rel)));
            break;
        }
    }
    let (gov, gov_src) =
        gov.ok_or_else(|| fs.bad(&format!("{CPUIDLE}/current_governor"), "missing (and no current_governor_ro)"))?;
    let governor = match gov.as_str() {
        "menu" | "teo" | "haltpoll" => Sourced::new(gov.clone(), format!("[{gov_src}]")),
        other => Sourced::new(
            "menu".to_string(),
            format!("[{gov_src}: `{other}`; assumed: the model has no `{other}` governor, menu is the nearest]"),
        ),
    };
    let states = states_of(fs, first)?;
    for &cpu in others {
        let theirs = states_of(fs, cpu)?;
        let same = theirs.len() == states.len()
            && theirs
                .iter()
                .zip(&states)
                .all(|((a, _), (b, _))| (a.name.as_str(), a.exit_latency_ns) == (b.name.as_str(), b.exit_latency_ns));
        if !same {
            idle_notes.push(format!(
                "CPU {cpu}'s idle states differ from CPU {first}'s; the model has one list for every CPU: CPU {first}'s"
            ));
            break;
        }
    }
    let (enabled, disabled): (Vec<_>, Vec<_>) = states.into_iter().partition(|(_, disabled)| !*disabled);
    for (s, _) in &disabled {
        idle_notes.push(format!("state {} is disabled (stateK/disable = 1): left out", s.name));
    }
    if enabled.is_empty() {
        notes.push(format!("driver {} exports no enabled idle state for CPU {first}", driver.value));
    }
    // The parameters only mean something to the haltpoll governor.
    let haltpoll = if governor.value == "haltpoll" { haltpoll(fs)? } else { None };
    Ok(HostIdle {
        driver,
        governor,
        states: enabled.into_iter().map(|(s, _)| s).collect(),
        haltpoll,
        notes: idle_notes,
    })
}

/// (state, disabled) for one CPU, shallowest first.
fn states_of(fs: &Fs, cpu: usize) -> Result<Vec<(HostIdleState, bool)>, HostError> {
    let dir = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle");
    let mut out = Vec::new();
    for (_, name) in fs.numbered(&dir, "state")? {
        let s = format!("{dir}/{name}");
        let sname = fs.read(&format!("{s}/name"))?.trim().to_string();
        let desc = fs.read_opt(&format!("{s}/desc"))?.unwrap_or_default().trim().to_string();
        let lat = fs.int(&format!("{s}/latency"))?;
        let res = fs.int(&format!("{s}/residency"))?;
        let disabled = fs.int_opt(&format!("{s}/disable"))?.unwrap_or(0) != 0;
        if lat < 0 || res < 0 {
            return Err(fs.bad(&format!("{s}/latency"), "negative latency or residency"));
        }
        // poll_idle() spins with the polling flag set; MWAIT-based states
        // (intel_idle, acpi_idle FFH) arm a monitor on the thread flags, so a
        // remote wakeup only writes the flag. HLT and IO-port states need an IPI.
        let polling = sname == "POLL" || desc.to_ascii_uppercase().contains("MWAIT");
        let shown = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle/{name}");
        out.push((
            HostIdleState {
                name: sname,
                desc: desc.clone(),
                exit_latency_ns: Some(lat as u64 * 1000),
                target_residency_ns: res as u64 * 1000,
                polling,
                source: format!("[{shown}: desc `{desc}`]"),
            },
            disabled,
        ));
    }
    Ok(out)
}

fn haltpoll(fs: &Fs) -> Result<Option<Haltpoll>, HostError> {
    let dir = "sys/module/haltpoll/parameters";
    if !fs.exists(dir) {
        return Ok(None);
    }
    let int = |name: &str| -> Result<u64, HostError> {
        let rel = format!("{dir}/guest_halt_poll_{name}");
        let v = fs.int(&rel)?;
        u64::try_from(v).map_err(|_| fs.bad(&rel, format!("negative value {v}")))
    };
    let shrink_rel = format!("{dir}/guest_halt_poll_allow_shrink");
    let allow = fs.read(&shrink_rel)?;
    let allow_shrink = match allow.trim() {
        "Y" | "1" => true,
        "N" | "0" => false,
        other => return Err(fs.bad(&shrink_rel, format!("expected Y or N, found `{other}`"))),
    };
    Ok(Some(Haltpoll {
        poll_ns: int("ns")?,
        grow: int("grow")?,
        grow_start_ns: int("grow_start")?,
        shrink: int("shrink")?,
        allow_shrink,
        source: format!("[{}/guest_halt_poll_*]", fs.cite(dir)),
    }))
}
