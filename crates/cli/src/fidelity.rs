//! `schedlab fidelity`: the suite of micro-workloads on this host's kernel
//! and on the model, one row per case and metric with its band and verdict
//! (the suite is `schedlab_fidelity`'s, the table `schedlab_report`'s).

use clap::Args;
use schedlab_fidelity::machine::other_machine_here;
use schedlab_fidelity::{cases, run_suite, suite_machine, SuiteMachine, SuiteOptions, DEFAULT_TOPOLOGY};
use schedlab_report::fidelity_failures;
use schedlab_topology::parse_duration;
use std::time::Instant;

use crate::args::{JsonArg, SeedArg};
use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = format!("{}\n\n{}", schedlab_fidelity::bands_help(), crate::examples::get("fidelity")))]
pub struct FidelityArgs {
    /// The machine the model uses: a preset name or a topology file (each
    /// case's own `topology` line is replaced).
    #[arg(long, default_value = DEFAULT_TOPOLOGY, conflicts_with = "probe",
          value_parser = crate::names::topology(), hide_possible_values = true)]
    pub topology: String,
    /// Probe this machine first, as `schedlab topologies --host --rounds N`
    /// does (about 8 s a round on 2 CPUs), and run the model on the fresh
    /// file: a host's costs move between phases and a committed file may
    /// describe another machine. 1-20.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub probe: Option<u32>,
    /// With --probe: also write the probed topology to FILE (to rerun with --topology FILE).
    #[arg(long, value_name = "FILE", requires = "probe")]
    pub probe_out: Option<std::path::PathBuf>,
    /// Run only these cases (comma-separated): schbench, cyclictest, asym_min,
    /// pingpong (both variants) or pingpong-2cpu / pingpong-1cpu, nice, placement, rt-squeeze, schbench-family
    /// (seed 004's -n 0 family: schbench-m1-t2, schbench-m1-t4, schbench-m2-t2).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = crate::names::fidelity_case(), hide_possible_values = true)]
    pub cases: Vec<String>,
    /// Length of every case's run, real and model (default: each case's own, 1-3 s).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<u64>,
    #[command(flatten)]
    pub seed: SeedArg,
    /// Run each case this many times on each side; figures are medians over the rounds
    /// (round k's model seed is the first seed + k - 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rounds: u32,
    /// Skip calibration: busy-loop iterations per microsecond of `run` work
    /// (default: the first real run calibrates, the others reuse its figure).
    #[arg(long, value_name = "N")]
    pub loops_per_us: Option<f64>,
    /// Exit 1 unless every row passes its band (a FAIL, UNSTEADY or n/a row fails the check).
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub json: JsonArg,
}

pub fn fidelity(args: FidelityArgs) -> Result {
    let selected = cases::select(&args.cases)?;
    if let Some(l) = args.loops_per_us {
        if !(l.is_finite() && l > 0.0) {
            return Err(CliError::LoopsPerUs(l).into());
        }
    }
    let command = crate::topologies::command_line();
    let machine = match args.probe {
        Some(rounds) => SuiteMachine::Probe { rounds, out: args.probe_out.as_deref(), command: &command },
        None => SuiteMachine::Named(&args.topology),
    };
    let (topology, mut topology_source) = suite_machine(&machine, &mut |line| stderr_line!("schedlab: {line}"))?;
    let opts = SuiteOptions {
        topology,
        cases: selected,
        duration_ns: args.duration,
        seed: args.seed.seed,
        rounds: args.rounds,
        loops_per_us: args.loops_per_us,
        no_noise: args.seed.no_noise,
    };
    let wall = Instant::now();
    let suite = run_suite(&opts, &mut |line| stderr_line!("{line}"))?;
    if let Some(note) = other_machine_here(&opts.topology.description, &suite.kernel) {
        stderr_line!("schedlab: note: {note}");
        topology_source = format!("{topology_source}; {note}");
    }
    let bands = schedlab_fidelity::bands_help();
    let text = suite.text(&opts, &topology_source, &bands, wall.elapsed().as_secs_f64());
    if args.json.json {
        crate::output::emit(&format!("{}\n", schedlab_report::to_json(&text.json())?))?;
    } else {
        crate::output::emit(&text.render())?;
    }
    let failed = fidelity_failures(&suite.rows);
    if args.check && !failed.is_empty() {
        return Err(CliError::FidelityCheck { n: failed.len(), of: suite.rows.len(), rows: failed.join("; ") }.into());
    }
    Ok(())
}
