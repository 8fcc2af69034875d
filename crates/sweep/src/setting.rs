//! One settings syntax: `diff --a/--b`, `vm --setting` and `compare
//! --setting` take a setting as text, and a sweep file's `[[setting]]` (or
//! axis value) takes the same text as `set = "..."`, which sets what its
//! `features`, `itmt`, `energy_aware` and `kernel` keys set.
//!
//! ```text
//! setting := item { sep item }         (may be empty)
//! sep     := "," | " "                  (runs of separators count as one)
//! item    := FEATURE | NO_FEATURE       sched_features, debugfs syntax   (features = [..])
//!          | "itmt=" ("0" | "1")        also sched_itmt_enabled=         (itmt = false | true)
//!          | "energy_aware=" ("0" | "1") also sched_energy_aware=      (energy_aware = false | true)
//!          | "kernel=" PROFILE          6.9, 6.12, 6.12.0, 6.15, mainline, ... (kernel = "..")
//!          | "defaults" | "-"           nothing: the base state
//! ```
//!
//! `itmt`, `energy_aware` and `kernel` may each be given once. A command that cannot apply
//! a part says so ([`SettingSpec::features_only`]: a VM guest takes only
//! sched_features).

use schedlab_kernel::{Feature, Profile};

/// A setting as typed, split into its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SettingSpec {
    /// The text as typed.
    pub text: String,
    /// sched_features items, in order.
    pub features: Vec<String>,
    pub itmt: Option<bool>,
    /// `sysctl kernel.sched_energy_aware` (EAS where possible).
    pub energy_aware: Option<bool>,
    /// A kernel profile name (checked).
    pub kernel: Option<String>,
}

/// A setting that does not parse; `flag` is the option it came from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    #[error("{flag} {text}: `{item}`: expected itmt=0 or itmt=1")]
    BadItmt { flag: String, text: String, item: String },
    #[error("{flag} {text}: `{item}`: expected energy_aware=0 or energy_aware=1")]
    BadEnergyAware { flag: String, text: String, item: String },
    #[error("{flag} {text}: {key} is given twice")]
    Twice { flag: String, text: String, key: &'static str },
    #[error("{flag} {text}: unknown kernel profile `{kernel}` (expected one of: {})", Profile::NAMES.join(", "))]
    UnknownKernel { flag: String, text: String, kernel: String },
    #[error(
        "{flag} {text}: unknown setting `{key}=` (expected sched_features, itmt=0|1, energy_aware=0|1 or kernel=NAME)"
    )]
    UnknownKey { flag: String, text: String, key: String },
    #[error("{flag} {text}: `{key}=` cannot be set here, only sched_features")]
    NotFeatures { flag: String, text: String, key: &'static str },
}

impl SettingSpec {
    /// Parse `text`, the value of `flag`, by the grammar above.
    pub fn parse(flag: &str, text: &str) -> Result<SettingSpec, SettingError> {
        let mut s = SettingSpec { text: text.to_string(), ..SettingSpec::default() };
        let err_text = || (flag.to_string(), text.to_string());
        for item in text.split([',', ' ']).map(str::trim).filter(|i| !i.is_empty() && *i != "defaults" && *i != "-") {
            match item.split_once('=') {
                Some(("itmt" | "sched_itmt_enabled", v)) => {
                    let on = match v {
                        "0" => false,
                        "1" => true,
                        _ => {
                            let (flag, text) = err_text();
                            return Err(SettingError::BadItmt { flag, text, item: item.to_string() });
                        }
                    };
                    if s.itmt.replace(on).is_some() {
                        let (flag, text) = err_text();
                        return Err(SettingError::Twice { flag, text, key: "itmt" });
                    }
                }
                Some(("energy_aware" | "sched_energy_aware", v)) => {
                    let on = match v {
                        "0" => false,
                        "1" => true,
                        _ => {
                            let (flag, text) = err_text();
                            return Err(SettingError::BadEnergyAware { flag, text, item: item.to_string() });
                        }
                    };
                    if s.energy_aware.replace(on).is_some() {
                        let (flag, text) = err_text();
                        return Err(SettingError::Twice { flag, text, key: "energy_aware" });
                    }
                }
                Some(("kernel", k)) => {
                    if Profile::by_name(k).is_none() {
                        let (flag, text) = err_text();
                        return Err(SettingError::UnknownKernel { flag, text, kernel: k.to_string() });
                    }
                    if s.kernel.replace(k.to_string()).is_some() {
                        let (flag, text) = err_text();
                        return Err(SettingError::Twice { flag, text, key: "kernel" });
                    }
                }
                Some((key, _)) => {
                    let (flag, text) = err_text();
                    return Err(SettingError::UnknownKey { flag, text, key: key.to_string() });
                }
                None => s.features.push(item.to_string()),
            }
        }
        Ok(s)
    }

    /// The features of a setting that may only hold features (a VM
    /// guest's: its ITMT and kernel are the guest's own).
    pub fn features_only(self, flag: &str) -> Result<Vec<String>, SettingError> {
        let key = if self.itmt.is_some() {
            "itmt"
        } else if self.energy_aware.is_some() {
            "energy_aware"
        } else if self.kernel.is_some() {
            "kernel"
        } else {
            return Ok(self.features);
        };
        Err(SettingError::NotFeatures { flag: flag.to_string(), text: self.text, key })
    }
}

/// The values of a repeatable `flag` that takes feature sets (`vm
/// --setting`), each parsed as a setting that may hold only features.
pub fn feature_sets(flag: &str, raw: &[String]) -> Result<Vec<Vec<String>>, SettingError> {
    raw.iter().map(|t| SettingSpec::parse(flag, t)?.features_only(flag)).collect()
}

/// The sched_features a setting may name, with `profile`'s defaults and
/// whether the model implements each (`schedlab features`).
pub fn render_features(profile: &Profile) -> String {
    let mut out = format!("kernel profile {}: {}\n", profile.name, profile.description);
    out.push_str(&format!("{:<24} {:<8} {:<10} description\n", "feature", "default", "modeled"));
    for f in Feature::ALL {
        let info = f.info();
        if let Some((_, since)) = profile.absent.iter().find(|(a, _)| a == f) {
            out.push_str(&format!(
                "{:<24} {:<8} {:<10} {} (not in this kernel: added in {since})\n",
                info.name, "-", "-", info.doc
            ));
            continue;
        }
        let default = if profile.defaults.is_set(*f) { "on" } else { "off" };
        let modeled = if info.not_modeled.is_none() { "yes" } else { "not yet" };
        out.push_str(&format!("{:<24} {:<8} {:<10} {}\n", info.name, default, modeled, info.doc));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flag: &str, text: &str) -> Result<SettingSpec, String> {
        SettingSpec::parse(flag, text).map_err(|e| e.to_string())
    }

    #[test]
    fn settings_split_into_features_itmt_and_kernel() {
        let s = parse("--a", "NO_DELAY_DEQUEUE, itmt=0,kernel=6.12").unwrap();
        assert_eq!(s.features, vec!["NO_DELAY_DEQUEUE"]);
        assert_eq!((s.itmt, s.kernel.as_deref()), (Some(false), Some("6.12")));
        assert_eq!(parse("--b", "").unwrap().features, Vec::<String>::new());
        assert_eq!(
            parse("--b", "defaults").unwrap(),
            SettingSpec { text: "defaults".into(), ..SettingSpec::default() }
        );
        assert!(parse("--a", "itmt=2").unwrap_err().contains("expected itmt=0 or itmt=1"));
        assert!(parse("--a", "itmt=1,itmt=0").unwrap_err().contains("itmt is given twice"));
        assert!(parse("--a", "kernel=5.4").unwrap_err().contains("unknown kernel profile `5.4`"));
        assert!(parse("--a", "slice=3ms").unwrap_err().contains("unknown setting `slice=`"));
        let s = parse("--a", "energy_aware=0").unwrap();
        assert_eq!((s.energy_aware, s.itmt), (Some(false), None));
        assert_eq!(parse("--a", "sched_energy_aware=1").unwrap().energy_aware, Some(true));
        assert!(parse("--a", "energy_aware=on").unwrap_err().contains("expected energy_aware=0 or energy_aware=1"));
        assert!(parse("--a", "energy_aware=1 energy_aware=0").unwrap_err().contains("energy_aware is given twice"));
    }

    #[test]
    fn feature_sets_as_vm_setting_takes_them() {
        let raw = ["NO_RT_PUSH_IPI", "-", "A, NO_B"].map(String::from);
        let sets = feature_sets("--setting", &raw).unwrap();
        assert_eq!(sets, vec![vec!["NO_RT_PUSH_IPI".to_string()], vec![], vec!["A".to_string(), "NO_B".to_string()]]);
        let e = SettingSpec::parse("--setting", "A,itmt=0").unwrap().features_only("--setting").unwrap_err();
        assert_eq!(e.to_string(), "--setting A,itmt=0: `itmt=` cannot be set here, only sched_features");
    }
}
