//! What shell completion offers where an argument is a name: a topology
//! preset, a kernel profile, a sched_feature setting, a bundled scenario or
//! sweep, a fidelity case.
//!
//! clap's static completion scripts offer an argument's *possible values*,
//! and only those. These parsers list the names as possible values without
//! restricting what is accepted: a topology may also be a file, a feature
//! list is checked later against the kernel profile chosen (with its own
//! did-you-mean), a scenario may be any file. Each argument using one sets
//! `hide_possible_values` so that `--help` does not claim the list is
//! exhaustive.

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use std::ffi::OsStr;
use std::path::PathBuf;

/// Names to complete, produced when a completion script is generated.
type Names = fn() -> Vec<String>;

/// Accept any UTF-8 string; offer `names` to completion.
#[derive(Clone)]
pub struct Named {
    names: Names,
}

impl TypedValueParser for Named {
    type Value = String;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new((self.names)().into_iter().map(PossibleValue::new)))
    }
}

/// A path argument that may also be a bundled name (the file on disk when there is one),
/// offering the bundled names of `kind`.
#[derive(Clone)]
pub struct BundledPath {
    kind: schedlab_bundle::Kind,
}

impl TypedValueParser for BundledPath {
    type Value = PathBuf;

    fn parse_ref(&self, _: &clap::Command, _: Option<&clap::Arg>, value: &OsStr) -> Result<PathBuf, clap::Error> {
        let p = PathBuf::from(value);
        Ok(schedlab_bundle::find(&p, self.kind).unwrap_or(p))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let kind = self.kind;
        Some(Box::new(
            schedlab_bundle::list().into_iter().filter(move |e| e.kind == kind).map(|e| PossibleValue::new(e.name)),
        ))
    }
}

/// A scenario: a file, `-`, or a bundled scenario's name.
pub fn scenario() -> BundledPath {
    BundledPath { kind: schedlab_bundle::Kind::Scenario }
}

/// A sweep: a file or a bundled sweep's name.
pub fn sweep() -> BundledPath {
    BundledPath { kind: schedlab_bundle::Kind::Sweep }
}

/// A topology: a preset name or a file.
pub fn topology() -> Named {
    Named { names: || schedlab_topology::Topology::preset_names().iter().map(|s| s.to_string()).collect() }
}

/// A kernel profile name.
pub fn kernel_profile() -> Named {
    Named { names: || schedlab_kernel::Profile::NAMES.iter().map(|s| s.to_string()).collect() }
}

/// A sched_features setting: `NAME` or `NO_NAME` for every feature the model knows.
pub fn feature() -> Named {
    Named {
        names: || {
            schedlab_kernel::Feature::ALL
                .iter()
                .flat_map(|f| [f.name().to_string(), format!("NO_{}", f.name())])
                .collect()
        },
    }
}

/// A fidelity case or case group.
pub fn fidelity_case() -> Named {
    Named { names: || schedlab_fidelity::cases::case_names().into_iter().map(str::to_string).collect() }
}
