//! `schedlab fidelity`: the suite of micro-workloads on this host's kernel
//! and on the model, one row per case and metric with its band and verdict
//! (the suite is `schedlab_fidelity`'s, the table `schedlab_report`'s).

use clap::Args;
use schedlab_fidelity::{cases, run_suite, SuiteOptions, DEFAULT_TOPOLOGY};
use schedlab_report::{fidelity_failures, FidelityText};
use schedlab_topology::{parse_duration, Topology};
use std::path::Path;
use std::time::Instant;

use crate::args::{JsonArg, SeedArg};

/// The `name` of a topology `--probe` measured.
const PROBED_NAME: &str = "this-host";
use crate::error::{CliError, Result};

#[derive(Args)]
#[command(after_help = format!("{}\n\n{}", schedlab_fidelity::bands_help(), crate::examples::FIDELITY))]
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
    /// pingpong (both variants) or pingpong-2cpu / pingpong-1cpu, nice, placement, schbench-family
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
    let selected = cases::select(&args.cases).map_err(CliError::Fidelity)?;
    if let Some(l) = args.loops_per_us {
        if !(l.is_finite() && l > 0.0) {
            return Err(CliError::LoopsPerUs(l).into());
        }
    }
    let (topology, topology_source) = match args.probe {
        Some(rounds) => {
            let text = crate::topologies::host_text(false, rounds as usize, Some(PROBED_NAME))?;
            if let Some(path) = &args.probe_out {
                crate::output::write_file(path, &text, "--probe-out")?;
                stderr_line!("schedlab: wrote {}", path.display());
            }
            let source = args.probe_out.as_ref().map_or_else(
                || format!("probed just now, {rounds} round(s)"),
                |p| format!("probed just now, {rounds} round(s): {}", p.display()),
            );
            // The text is this build's own output: a failure to load it is a bug, said as such.
            let topo = Topology::from_toml_str(PROBED_NAME, &text)
                .map_err(|e| CliError::Topology(format!("the probed topology does not load (a schedlab bug): {e}")))?;
            (topo, source)
        }
        None => {
            let topo = Topology::resolve(&args.topology, Path::new(".")).map_err(|e| {
                // The default is a path in the schedlab checkout.
                let hint = if args.topology == DEFAULT_TOPOLOGY {
                    " (run from the schedlab checkout, pass --topology, or --probe to measure this machine)"
                } else {
                    ""
                };
                CliError::Topology(format!("{e}{hint}"))
            })?;
            (topo, args.topology.clone())
        }
    };
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
    let mut topology_source = topology_source;
    let cpu_model = schedlab_topology::host::cpu_model(Path::new("/"));
    let cpu_model = Some(cpu_model.as_str()).filter(|m| !m.is_empty());
    if let Some(note) = schedlab_fidelity::machine::other_machine(&opts.topology.description, &suite.kernel, cpu_model)
    {
        stderr_line!("schedlab: note: {note}");
        topology_source = format!("{topology_source}; {note}");
    }
    let bands = schedlab_fidelity::bands_help();
    let text = FidelityText {
        kernel: &suite.kernel,
        topology: &opts.topology.name,
        topology_source: &topology_source,
        profiles: &suite.profiles,
        rounds: args.rounds,
        seed: args.seed.seed,
        bands: &bands,
        rows: &suite.rows,
        notes: &suite.notes,
        loads: &suite.loads,
        wall_s: wall.elapsed().as_secs_f64(),
    };
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
