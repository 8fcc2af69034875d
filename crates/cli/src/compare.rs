//! `schedlab compare`: one scenario on the model and on a real kernel with
//! the same settings — this machine's kernel, or with `--vm` a kernel booted
//! under QEMU with the same `sched_features` set inside it — the figures
//! side by side, then each run's per-thread table and stall causes. The two
//! go through one analysis, so a difference is a difference between the
//! model and the kernel (or the hardware), not between two measuring tools.

use clap::Args;
use schedlab_sides::compare::{compare_settings, model_side, Real, GRACE_NS};
use schedlab_sides::{self as sides, Model};
use schedlab_sim::SimOptions;
use std::path::PathBuf;

use crate::args::{FeaturesArg, MemoryArg, SeedArg, TraceArg};
use crate::error::{CliError, Result};
use crate::real::{host, load, RealSettings};
use crate::vm::{alternate_sets, guest, vm_log, VmSettings};

#[derive(Args)]
#[command(after_help = crate::examples::get("compare"))]
pub struct CompareArgs {
    #[command(flatten)]
    pub settings: RealSettings,
    #[command(flatten)]
    pub seed: SeedArg,
    #[command(flatten)]
    pub trace: TraceArg,
    /// Write the simulation's trace (ftrace text) too.
    #[arg(long, value_name = "FILE")]
    pub sim_trace: Option<PathBuf>,
    #[command(flatten)]
    pub features: FeaturesArg,
    /// Run the real side in a QEMU guest (`schedlab vm`) instead of on this
    /// machine; with --runs N the model runs N seeds from --seed.
    #[arg(long)]
    pub vm: bool,
    /// With --vm: alternate feature sets in one boot (repeatable, as `schedlab
    /// vm --setting`); the model runs each set over the same seeds, and the
    /// table has a model row and a guest row per set.
    #[arg(long = "setting", value_name = "FEATURES")]
    pub settings_alt: Vec<String>,
    #[command(flatten, next_help_heading = "The guest (with --vm)")]
    pub guest: VmSettings,
    #[command(flatten)]
    pub memory: MemoryArg,
}

/// The model side, with the flags' options (compare has no `--grace`:
/// both sides take `sides::compare::GRACE_NS`).
fn model(args: &CompareArgs, seeds: u64, keep_first: bool) -> Model {
    let options = SimOptions {
        no_noise: args.seed.no_noise,
        seed: args.seed.seed,
        duration_ns: args.settings.duration.duration,
        features: args.features.features.clone(),
        memory_budget: Some(args.memory.budget(1)),
        ..Default::default()
    };
    model_side(options, seeds, keep_first)
}

pub fn compare(args: CompareArgs) -> Result {
    let trace = args.trace.trace.as_deref();
    let features = &args.features.features;
    if !args.settings_alt.is_empty() {
        if !args.vm {
            return Err(CliError::SettingNeedsVm.into());
        }
        let sets = alternate_sets(&args.settings_alt)?;
        let guest = guest(&args.settings, &args.guest, features, &sets, trace, GRACE_NS)?;
        let scenario = load(&args.settings)?;
        let model = model(&args, u64::from(args.guest.runs), false);
        let done = compare_settings(&scenario, &guest, &model, &sets, &mut vm_log)?;
        return crate::output::emit(&done.text(&scenario, &sets, trace));
    }
    let real = if args.vm {
        Real::Guest(guest(&args.settings, &args.guest, features, &[], trace, GRACE_NS)?)
    } else {
        Real::Host(host(&args.settings, args.trace.trace.clone(), features, GRACE_NS, args.memory.budget(1))?)
    };
    let scenario = load(&args.settings)?;
    let done = sides::compare::compare(&scenario, &real, &model(&args, 1, args.sim_trace.is_some()), &mut vm_log)?;
    if let Some(path) = &args.sim_trace {
        schedlab_trace::files::write_ftrace(&done.first_sim().trace, path, "--sim-trace")?;
    }
    crate::output::emit(&done.text(&scenario, trace, args.sim_trace.as_deref()))
}
