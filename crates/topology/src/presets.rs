//! Built-in machines: the files in the repository's `topologies/`
//! directory, compiled in so `topology = "ryzen-7950x"` works anywhere.

use crate::Topology;

/// Preset names, in the order `--help` should list them.
pub(crate) const NAMES: &[&str] = &[
    "ryzen-7950x",
    "ryzen-5800x",
    "sapphire-rapids-2s",
    "skylake-sp-1s",
    "epyc-turin-1s",
    "qemu-4",
    "qemu-2",
    "smt-2x2",
    "juno-r2",
    "intel-13900k",
    "intel-285k",
    "rk3399",
];

/// The TOML text of a preset.
pub(crate) fn text(name: &str) -> Option<&'static str> {
    Some(match name {
        "ryzen-7950x" => include_str!("../../../topologies/ryzen-7950x.toml"),
        "sapphire-rapids-2s" => include_str!("../../../topologies/sapphire-rapids-2s.toml"),
        "epyc-turin-1s" => include_str!("../../../topologies/epyc-turin-1s.toml"),
        "skylake-sp-1s" => include_str!("../../../topologies/skylake-sp-1s.toml"),
        "qemu-4" => include_str!("../../../topologies/qemu-4.toml"),
        "qemu-2" => include_str!("../../../topologies/qemu-2.toml"),
        "smt-2x2" => include_str!("../../../topologies/smt-2x2.toml"),
        "juno-r2" => include_str!("../../../topologies/juno-r2.toml"),
        "rk3399" => include_str!("../../../topologies/rk3399.toml"),
        "ryzen-5800x" => include_str!("../../../topologies/ryzen-5800x.toml"),
        "intel-13900k" => include_str!("../../../topologies/intel-13900k.toml"),
        "intel-285k" => include_str!("../../../topologies/intel-285k.toml"),
        _ => return None,
    })
}

pub(crate) fn get(name: &str) -> Option<Topology> {
    let text = text(name)?;
    let path = format!("topologies/{name}.toml");
    // The presets are tested to parse (tests/presets.rs); failing here is a
    // build defect, not bad user input.
    Some(Topology::from_toml_str(&path, text).unwrap_or_else(|e| panic!("built-in preset is invalid: {e}")))
}
