// The report goes through output::emit (a full disk is an error, not a
// panic) and messages through stderr_line! (an unwritable stderr is not a
// panic either).
#![deny(clippy::print_stdout, clippy::print_stderr)]
//! `schedlab`: the command line. It only parses arguments and wires the
//! library crates together; every rule lives in a crate. The binary is
//! `main.rs`; the definition is a library so that the tests in `tests/`
//! can check it (every example and docs command line parses, the man
//! pages, the completions).

/// `eprintln!` without its panic when standard error cannot be written
/// (`2>/dev/full`, a closed pipe): the line is dropped, and the exit status
/// still says how the command ended.
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::output::to_stderr(&format!("{}\n", format_args!($($arg)*)))
    };
}

mod analyze;
mod args;
mod bench;
mod compare;
mod completions;
mod diff;
mod error;
mod examples;
mod fidelity;
mod hunt;
mod man;
mod names;
mod output;
mod real;
mod run;
mod scenarios;
mod slurm;
mod sweep;
mod topologies;
mod vm;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

use crate::error::{CliError, Result};

/// `--version`: the crate's version, the commit it was built from and the
/// build (`release`, `dist`, `dist+pgo`, `debug`; build.rs).
const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("SCHEDLAB_COMMIT"), ", ", env!("SCHEDLAB_BUILD"), " build)");

/// The command line's definition.
#[derive(Parser)]
#[command(
    name = "schedlab",
    version = VERSION,
    about = "A laboratory for the Linux CPU scheduler: simulate scheduler scenarios under a model of kernel/sched and explain the results",
    after_help = "Exit status: 0 success; 1 a check you asked for failed (an A/B gate of a sweep, \
                  fidelity --check), after its report; 2 an error or a usage error."
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a scenario and print per-thread runtime, wait, wakeup and handoff latency.
    Run(run::RunArgs),
    /// Simulate a scenario under several settings over seeded rounds and print
    /// a results table (stalls per run, totals, median handoff) like the seed reports'.
    Sweep(sweep::SweepArgs),
    /// Join the shard files of `schedlab sweep FILE --shard I/N --out DIR` and print
    /// the report the unsharded sweep prints.
    SweepMerge(sweep::MergeArgs),
    /// Run a scenario and seed under two settings (--a, --b) and show the first scheduler
    /// decision where the runs diverge, the CPUs involved, and how far the runs drift apart.
    Diff(diff::DiffArgs),
    /// Analyse a trace captured elsewhere (tracefs text, `trace-cmd report` text, trace.dat,
    /// perf.data or Perfetto): the `schedlab run` report for the workload's threads, or the
    /// `perf sched` views, with lost events and skipped lines accounted for.
    Analyze(analyze::AnalyzeArgs),
    /// Run a scenario on this machine's kernel (root): real threads, tracefs capture of the
    /// sched tracepoints and the workload's markers, the `schedlab run` report.
    Real(real::RealArgs),
    /// Run a scenario on the model and on this machine's kernel with the same settings and
    /// print the figures, per-thread tables and stall causes side by side.
    Compare(compare::CompareArgs),
    /// Run the fidelity suite: micro-workloads (schbench, a cyclictest-like RT probe,
    /// asym_min, eventfd ping-pong on 2 CPUs and on 1, nice shares) on this machine's
    /// kernel (root) and on the model, one row per case and metric with real, model,
    /// ratio, band and verdict.
    Fidelity(fidelity::FidelityArgs),
    /// Boot a real kernel under QEMU (Debian's 6.12 or your bzImage), set sched_features
    /// and knobs inside it, run the scenario there (--runs N in one boot) and report it
    /// like `schedlab real`. In the guest the scenario's sched_rt_runtime_us and
    /// fair_server_runtime are always applied (the guest is thrown away after).
    Vm(vm::VmArgs),
    /// Search random scenarios for stalls the kernel should not have (an idle CPU beside a
    /// waiting task, a stranded RT task, starvation) and model invariant failures, optionally
    /// differentially under two feature sets; shrink each find to a minimal scenario file.
    Hunt(hunt::HuntArgs),
    /// Measure the simulator on asym_min, rt-pi-push, schbench-spr (alone and as a diff of two settings), post-after-wait, 16 and 64 cgroups of 64 threads, and the seed-000 sweep:
    /// wall and CPU time, simulated time and trace events and engine steps per CPU second,
    /// CPU ns per trace event and its ratio to a reference discrete-event loop measured in the
    /// same run, peak RSS (median of --reps).
    Bench(bench::BenchArgs),
    /// List the sched_features the model knows, with each kernel profile's defaults.
    #[command(after_help = examples::get("features"))]
    Features {
        /// Kernel profile whose defaults to show.
        #[arg(long, default_value = "6.12", value_parser = crate::names::kernel_profile(), hide_possible_values = true)]
        kernel: String,
    },
    /// List the topology presets, print one as TOML, or read this machine into one (--host).
    Topologies(topologies::TopologiesArgs),
    /// List the scenarios and sweeps built into schedlab (every command takes them by
    /// name, from any directory), or print one (--show NAME).
    Scenarios(scenarios::ScenariosArgs),
    /// Print a shell completion script, e.g.
    /// `schedlab completions bash > ~/.local/share/bash-completion/completions/schedlab`.
    #[command(after_help = examples::get("completions"))]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (schedlab.1 and schedlab-COMMAND.1 for each command) into DIR;
    /// read one with `man -l DIR/schedlab-run.1`.
    #[command(after_help = examples::get("man"))]
    Man {
        #[arg(long, value_name = "DIR", default_value = "man")]
        out: std::path::PathBuf,
    },
}

/// Parse the command line, run the command, and say how it ended.
pub fn main() -> ExitCode {
    // As a VM guest's /init, schedlab runs the job packed in its initramfs.
    if std::process::id() == 1 {
        schedlab_vm::guest::main();
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version go to stdout through emit, so a full disk is
        // an error there too; usage errors go to stderr with status 2.
        Err(e) if !e.use_stderr() => {
            use std::io::IsTerminal;
            let text = e.render();
            let text = if std::io::stdout().is_terminal() { text.ansi().to_string() } else { text.to_string() };
            return match crate::output::emit(&text) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    stderr_line!("schedlab: error: {err}");
                    ExitCode::from(2)
                }
            };
        }
        Err(e) => e.exit(),
    };
    // `schedlab run ... | head` should end quietly as other Unix tools do,
    // not panic in println!. Not for `real`/`compare`/`fidelity`: their supervisor must
    // outlive a closed stdout to restore tracefs.
    if !matches!(cli.cmd, Cmd::Real(_) | Cmd::Compare(_) | Cmd::Fidelity(_) | Cmd::Vm(_)) {
        // SAFETY: called before any thread exists; only resets a signal disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match cli.cmd {
        Cmd::Run(args) => run::run(args),
        Cmd::Sweep(args) => sweep::sweep(args),
        Cmd::SweepMerge(args) => sweep::sweep_merge(args),
        Cmd::Diff(args) => diff::diff(args),
        Cmd::Analyze(args) => analyze::analyze_trace(args),
        Cmd::Real(args) => real::real(args),
        Cmd::Compare(args) => compare::compare(args),
        Cmd::Fidelity(args) => fidelity::fidelity(args),
        Cmd::Vm(args) => vm::vm(args),
        Cmd::Hunt(args) => hunt::hunt(args),
        Cmd::Bench(args) => bench::bench(args),
        Cmd::Features { kernel } => features(&kernel),
        Cmd::Topologies(args) => topologies::topologies(args),
        Cmd::Scenarios(args) => scenarios::scenarios(args),
        Cmd::Completions { shell } => crate::output::emit(&completions::script(shell, &mut Cli::command())),
        Cmd::Man { out } => man::write_man_pages(Cli::command(), &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            stderr_line!("schedlab: error: {e}");
            ExitCode::from(CliError::exit_status(e.as_ref()))
        }
    }
}

fn features(kernel: &str) -> Result {
    let profile = schedlab_kernel::Profile::by_name(kernel)
        .ok_or_else(|| CliError::UnknownProfile { name: kernel.to_string() })?;
    crate::output::emit(&schedlab_sweep::setting::render_features(&profile))?;
    Ok(())
}
