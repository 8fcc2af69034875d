//! `schedlab topologies`: list the presets, print one, or read this host
//! into a topology file (`--host`).

use clap::Args;
use schedlab_topology::Topology;
use std::path::{Path, PathBuf};

use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = crate::examples::get("topologies"), after_long_help = format!("{}\n\n{}", schedlab_runner::probe::HOST_HELP, crate::examples::get("topologies")))]
pub struct TopologiesArgs {
    /// A preset name to print in full.
    #[arg(conflicts_with = "host", value_parser = crate::names::topology(), hide_possible_values = true)]
    pub name: Option<String>,
    /// Read this machine (sysfs, procfs, kernel config) and measure what sysfs cannot say
    /// with short probes (about 2.5 s per distance level plus 3 s; 5.2 s on a 2-CPU guest), then print it as a topology TOML (see below).
    #[arg(long)]
    pub host: bool,
    /// With --host: read sysfs only, run no probe (every cost is then marked assumed).
    #[arg(long, requires = "host")]
    pub no_probe: bool,
    /// With --host: run the probes N times and write each figure as the median of the rounds
    /// (noise pooled). A VM's costs move between phases of a few seconds; one round describes
    /// one phase. 1-20.
    #[arg(long, value_name = "N", default_value_t = 1, requires = "host",
          value_parser = clap::value_parser!(u16).range(1..=20), conflicts_with = "no_probe")]
    pub rounds: u16,
    /// With --host: write the TOML to FILE instead of stdout.
    #[arg(long, value_name = "FILE", requires = "host")]
    pub out: Option<PathBuf>,
}

pub fn topologies(args: TopologiesArgs) -> Result {
    if args.host {
        return host(args.no_probe, args.rounds as usize, args.out.as_deref());
    }
    match args.name.as_deref() {
        Some(n) => {
            let text = Topology::preset_text(n).ok_or_else(|| CliError::UnknownPreset { name: n.to_string() })?;
            crate::output::emit(text)
        }
        None => crate::output::emit(&schedlab_report::render_presets()),
    }
}

fn host(no_probe: bool, rounds: usize, out: Option<&Path>) -> Result {
    let log = &mut |line: &str| stderr_line!("schedlab: {line}");
    let text = schedlab_runner::probe::host_text(no_probe, rounds, None, &command_line(), log)?;
    match out {
        Some(path) => {
            crate::output::write_file(path, &text, "--out")?;
            stderr_line!("schedlab: wrote {}", path.display());
            Ok(())
        }
        None => crate::output::emit(&text),
    }
}

/// The command as typed, program name shortened to `schedlab`.
pub fn command_line() -> String {
    std::iter::once("schedlab".to_string()).chain(std::env::args().skip(1)).collect::<Vec<_>>().join(" ")
}
