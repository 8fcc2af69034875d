//! `schedlab scenarios`: the scenarios and sweeps the binary carries, which
//! every command takes by name (`schedlab run asym_min`), and one of them
//! printed as a starting point for a file of your own.

use clap::Args;

use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = crate::examples::get("scenarios"))]
pub struct ScenariosArgs {
    /// Print the bundled scenario or sweep NAME (TOML) instead of the list.
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
}

pub fn scenarios(args: ScenariosArgs) -> Result {
    let Some(name) = args.show else { return crate::output::emit(&schedlab_bundle::catalogue()) };
    let Some(text) = schedlab_bundle::show(&name) else {
        let all = schedlab_bundle::list();
        return Err(CliError::Usage(format!(
            "--show: no bundled scenario or sweep named `{name}`{} (`schedlab scenarios` lists them)",
            schedlab_topology::diag::did_you_mean(&name, all.iter().map(|e| e.name.as_str()))
        ))
        .into());
    };
    crate::output::emit(text)
}
