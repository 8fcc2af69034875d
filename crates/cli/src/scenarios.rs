//! `schedlab scenarios`: the scenarios and sweeps the binary carries, which
//! every command takes by name (`schedlab run asym_min`), and one of them
//! printed as a starting point for a file of your own.

use clap::Args;
use schedlab_bundle::Kind;

use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = crate::examples::get("scenarios"))]
pub struct ScenariosArgs {
    /// Print the bundled scenario or sweep NAME (TOML) instead of the list.
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
}

pub fn scenarios(args: ScenariosArgs) -> Result {
    let all = schedlab_bundle::list();
    if let Some(name) = args.show {
        let path = schedlab_bundle::find(std::path::Path::new(&name), Kind::Scenario)
            .or_else(|| schedlab_bundle::find(std::path::Path::new(&name), Kind::Sweep))
            .filter(|p| !p.starts_with("scenarios/topologies"));
        let Some(text) = path.as_deref().and_then(schedlab_bundle::get) else {
            let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
            return Err(CliError::Usage(format!(
                "--show: no bundled scenario or sweep named `{name}`{} (`schedlab scenarios` lists them)",
                schedlab_topology::diag::did_you_mean(&name, names.iter().copied())
            ))
            .into());
        };
        return crate::output::emit(text);
    }
    let width = all.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (kind, title) in [(Kind::Scenario, "scenarios"), (Kind::Sweep, "sweeps")] {
        out.push_str(&format!("{title} (schedlab {} NAME):\n", if kind == Kind::Sweep { "sweep" } else { "run" }));
        for e in all.iter().filter(|e| e.kind == kind) {
            out.push_str(&format!("  {:width$}  {}\n", e.name, e.description));
        }
        out.push('\n');
    }
    out.push_str("A file of the same path on disk wins over the bundled one; --show NAME prints one to copy.\n");
    crate::output::emit(&out)
}
