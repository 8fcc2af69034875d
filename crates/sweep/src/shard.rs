//! Sharded sweeps: split the jobs over processes or machines (Slurm job
//! arrays, GNU parallel, plain loops) and merge the pieces into exactly
//! the report one process would print.
//!
//! # The contract
//!
//! * Jobs are numbered in the fixed order of [`crate::job_order`]
//!   (round-major, interleaved: `j = round × settings + setting`).
//! * Shard `I/N` runs the jobs with `j % N == I` and writes
//!   `DIR/shard-I-of-N.json` ([`ShardFile`]), atomically (a temporary file
//!   renamed into place).
//! * Every shard file carries the sweep's [`fingerprint`]: a hash of the
//!   sweep file, the scenario file, every setting's machine and the options
//!   that change results (rounds, seeds, duration). [`merge_dir`] refuses
//!   files whose fingerprints differ, a missing or duplicated shard, and
//!   a split whose jobs do not add up.
//! * Merging sorts the jobs back into (setting, round) order and goes
//!   through the same [`crate::assemble`] as an unsharded run, so every
//!   table, the JSON and the CSV are byte-identical.
//!
//! The hash is 64-bit FNV-1a: it guards against mixing up runs, not
//! against forgery.
//!
//! ```sh
//! # Slurm: `schedlab sweep S.toml --slurm` submits the array and the merge
//! # (crates/cli/src/slurm.rs); by hand it is
//! sbatch --array=0-7 --wrap 'schedlab sweep S.toml --shard auto --out out/'
//! schedlab sweep-merge out/          # or: schedlab sweep S.toml --merge out/
//! # GNU parallel on one machine or over ssh:
//! parallel schedlab sweep S.toml --jobs 1 --shard {}/4 --out out/ ::: 0 1 2 3
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::run::{assemble, run_jobs, skeleton, JobOutput, Progress};
use crate::{Sweep, SweepError};
use schedlab_report::AbSpec;
use schedlab_report::SweepResult;

/// `format` of a shard file.
pub const SHARD_FORMAT: &str = "schedlab-sweep-shard/1";

/// Most shards a sweep may be split into.
pub const MAX_SHARDS: u32 = 1_000_000;

/// `--shard I/N`: this process runs shard `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

/// A `--shard` value that is not `I/N`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardSpecError {
    #[error("`{0}`: expected I/N with 0 <= I < N, e.g. 0/4 (shard 0 of 4)")]
    Syntax(String),
    #[error("`{0}`: the shard count must be 1..{MAX_SHARDS}")]
    Count(String),
    #[error("`{text}`: shard index {index} is not below the count {count} (shards are 0..{})", count - 1)]
    Index { text: String, index: u32, count: u32 },
}

impl FromStr for ShardSpec {
    type Err = ShardSpecError;

    fn from_str(s: &str) -> Result<ShardSpec, ShardSpecError> {
        let expected = || ShardSpecError::Syntax(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(expected)?;
        let num = |t: &str| t.trim().parse::<u32>().map_err(|_| expected());
        let (index, count) = (num(i)?, num(n)?);
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardSpecError::Count(s.to_string()));
        }
        if index >= count {
            return Err(ShardSpecError::Index { text: s.to_string(), index, count });
        }
        Ok(ShardSpec { index, count })
    }
}

/// A `--shard` value that names no shard: `I/N`, `auto` or `auto/N`.
#[derive(Debug, thiserror::Error)]
pub enum ShardArgError {
    #[error("--shard {0}")]
    Spec(#[from] ShardSpecError),
    #[error("--shard `{0}`: expected auto or auto/N")]
    Auto(String),
    #[error(transparent)]
    Env(#[from] schedlab_slurm::ShardEnvError),
}

impl ShardSpec {
    /// `--shard I/N`, `auto` or `auto/N`: the index, and maybe the count,
    /// from `env`, a Slurm array task's or a Kubernetes Indexed Job's
    /// environment (`schedlab_slurm::shard_from_env`).
    pub fn from_arg(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<ShardSpec, ShardArgError> {
        let Some(rest) = text.strip_prefix("auto") else { return Ok(text.parse::<ShardSpec>()?) };
        let count = match rest.strip_prefix('/') {
            None if rest.is_empty() => None,
            Some(n) => Some(n.parse::<u32>().map_err(|_| ShardArgError::Auto(text.to_string()))?),
            None => return Err(ShardArgError::Auto(text.to_string())),
        };
        let (index, count) = schedlab_slurm::shard_from_env(count, env)?;
        Ok(format!("{index}/{count}").parse::<ShardSpec>()?)
    }
}

/// A shard file that cannot be written, read or merged. Paths are as
/// displayed; `name` is a shard file's name in its directory.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("cannot create {dir}: {source}")]
    Create { dir: String, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Encode(#[from] serde_json::Error),
    #[error("{path}: cannot read: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: not a schedlab sweep shard: {source}")]
    NotAShard { path: String, source: serde_json::Error },
    #[error("{path}: shard format `{found}`, but this schedlab reads `{SHARD_FORMAT}`")]
    WrongFormat { path: String, found: String },
    #[error("{path}: not a schedlab sweep shard (no `format`)")]
    NoFormat { path: String },
    #[error("{path}: damaged shard file: {source}")]
    Damaged { path: String, source: serde_json::Error },
    #[error("{dir}: cannot list: {source}")]
    List { dir: String, source: std::io::Error },
    #[error("{dir}: no shard files (shard-I-of-N.json) to merge")]
    NoShards { dir: String },
    #[error("{dir}: shard files of different splits ({splits}): keep one split")]
    MixedSplits { dir: String, splits: String },
    #[error("{name}: holds shard {shard}/{shards}, not {spec}")]
    WrongShard { name: String, shard: u32, shards: u32, spec: ShardSpec },
    #[error(
        "{name} comes from a different sweep or different options (hash {hash}, {against} {want}); rerun that shard or remove it"
    )]
    OtherSweep { name: String, hash: String, against: String, want: String },
    #[error("{dir}: missing {file}")]
    MissingShard { dir: String, file: String },
    #[error("{name}: {total} jobs do not match {settings} settings × {rounds} rounds")]
    JobCount { name: String, total: usize, settings: usize, rounds: u32 },
    #[error("{name}: job {job} is not one of this shard's jobs")]
    NotItsJob { name: String, job: usize },
    #[error("{name}: job {job} appears twice")]
    JobTwice { name: String, job: usize },
    #[error("{dir}: job {job} is missing from {file}")]
    MissingJob { dir: String, job: usize, file: String },
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl ShardSpec {
    /// `shard-I-of-N.json`.
    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }

    /// Whether job `j` belongs to this shard.
    pub fn owns(&self, j: usize) -> bool {
        j % self.count as usize == self.index as usize
    }
}

/// 64-bit FNV-1a.
pub(crate) fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// The sweep's identity for shards: its sources (`Sweep::source_hash`),
/// the options that change results, and the schedlab version, as 16 hex
/// digits.
pub fn fingerprint(sweep: &Sweep) -> String {
    let mut h = fnv1a(FNV_OFFSET, SHARD_FORMAT.as_bytes());
    h = fnv1a(h, env!("CARGO_PKG_VERSION").as_bytes());
    h = fnv1a(h, &sweep.source_hash.to_le_bytes());
    let options = format!("rounds={} seeds={:?} duration={:?}", sweep.rounds(), sweep.seeds(), sweep.duration_ns);
    h = fnv1a(h, options.as_bytes());
    format!("{h:016x}")
}

/// What `schedlab sweep FILE --shard I/N` writes.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardFile {
    pub format: String,
    /// [`fingerprint`] of the sweep that was run.
    pub hash: String,
    pub shard: u32,
    pub shards: u32,
    /// Jobs in the whole sweep.
    pub jobs: usize,
    /// The sweep's description without runs (as [`crate::skeleton`]).
    pub skeleton: SweepResult,
    /// The file's `[ab]` table, for `sweep-merge`.
    pub ab: Option<AbSpec>,
    /// The jobs this shard ran, in job order.
    results: Vec<JobOutput>,
}

impl ShardFile {
    /// Jobs this shard ran.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Write `dir/shard-I-of-N.json` (creating `dir`), through a temporary
    /// file renamed into place so a reader never sees half a shard.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, ShardError> {
        std::fs::create_dir_all(dir).map_err(|source| ShardError::Create { dir: dir.display().to_string(), source })?;
        let spec = ShardSpec { index: self.shard, count: self.shards };
        let path = dir.join(spec.file_name());
        let tmp = dir.join(format!(".{}.tmp-{}", spec.file_name(), std::process::id()));
        let mut text = serde_json::to_string(self)?;
        text.push('\n');
        std::fs::write(&tmp, text).map_err(|source| ShardError::Write { path: tmp.display().to_string(), source })?;
        std::fs::rename(&tmp, &path)
            .map_err(|source| ShardError::Write { path: path.display().to_string(), source })?;
        Ok(path)
    }

    /// Read and check one shard file.
    pub fn read(path: &Path) -> Result<ShardFile, ShardError> {
        let shown = || path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ShardError::Read { path: shown(), source })?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| ShardError::NotAShard { path: shown(), source })?;
        match v.get("format").and_then(|f| f.as_str()) {
            Some(SHARD_FORMAT) => {}
            Some(other) => return Err(ShardError::WrongFormat { path: shown(), found: other.to_string() }),
            None => return Err(ShardError::NoFormat { path: shown() }),
        }
        serde_json::from_value(v).map_err(|source| ShardError::Damaged { path: shown(), source })
    }
}

/// Whether `dir` holds shard `spec` of `sweep` (this sweep and these
/// options, readable): what a rerun of a sharded sweep need not run again.
pub fn shard_done(dir: &Path, sweep: &Sweep, spec: ShardSpec) -> bool {
    ShardFile::read(&dir.join(spec.file_name()))
        .is_ok_and(|f| (f.shard, f.shards) == (spec.index, spec.count) && f.hash == fingerprint(sweep))
}

/// Run shard `spec` of `sweep` on the current rayon pool.
pub fn run_shard(
    sweep: &Sweep,
    spec: ShardSpec,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<ShardFile, SweepError> {
    let results = run_jobs(sweep, &|j| spec.owns(j), progress)?;
    Ok(ShardFile {
        format: SHARD_FORMAT.to_string(),
        hash: fingerprint(sweep),
        shard: spec.index,
        shards: spec.count,
        jobs: sweep.jobs(),
        skeleton: skeleton(sweep),
        ab: sweep.ab.clone(),
        results,
    })
}

/// A merged sweep.
#[derive(Clone, Debug)]
pub struct Merged {
    pub result: SweepResult,
    /// The `[ab]` table of the sweep file the shards ran.
    pub ab: Option<AbSpec>,
    /// How many shard files were joined.
    pub shards: u32,
}

/// The shard files in `dir`, by name.
fn shard_paths(dir: &Path) -> Result<Vec<(ShardSpec, PathBuf)>, ShardError> {
    let list = |source| ShardError::List { dir: dir.display().to_string(), source };
    let entries = std::fs::read_dir(dir).map_err(list)?;
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(list)?;
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(core) = name.strip_prefix("shard-").and_then(|n| n.strip_suffix(".json")) else { continue };
        let Some((i, n)) = core.split_once("-of-") else { continue };
        if let Ok(spec) = format!("{i}/{n}").parse::<ShardSpec>() {
            out.push((spec, e.path()));
        }
    }
    out.sort_by_key(|(s, _)| (s.count, s.index));
    Ok(out)
}

/// Join the shard files in `dir`. With `sweep` (`schedlab sweep FILE
/// --merge DIR`), every shard must come from it and its options, and the
/// report describes it as given now; without (`schedlab sweep-merge DIR`),
/// the shards must agree with each other and shard 0 describes the sweep.
pub fn merge_dir(dir: &Path, sweep: Option<&Sweep>) -> Result<Merged, ShardError> {
    let shown = || dir.display().to_string();
    let paths = shard_paths(dir)?;
    if paths.is_empty() {
        return Err(ShardError::NoShards { dir: shown() });
    }
    let counts: Vec<u32> = paths.iter().map(|(s, _)| s.count).collect();
    if counts.iter().any(|&c| c != counts[0]) {
        let mut seen: Vec<String> = counts.iter().map(|c| format!("of-{c}")).collect();
        seen.dedup();
        return Err(ShardError::MixedSplits { dir: shown(), splits: seen.join(", ") });
    }
    let count = counts[0];
    let expected_hash = sweep.map(fingerprint);
    let mut files: Vec<(String, ShardFile)> = Vec::new();
    for (spec, path) in &paths {
        let f = ShardFile::read(path)?;
        let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if (f.shard, f.shards) != (spec.index, spec.count) {
            return Err(ShardError::WrongShard { name, shard: f.shard, shards: f.shards, spec: *spec });
        }
        let (want, against) = match (&expected_hash, files.first()) {
            (Some(h), _) => (h.clone(), "this sweep file and these options have".to_string()),
            (None, Some((first, g))) => (g.hash.clone(), format!("{first} has")),
            (None, None) => (f.hash.clone(), String::new()),
        };
        if f.hash != want {
            return Err(ShardError::OtherSweep { name, hash: f.hash, against, want });
        }
        files.push((name, f));
    }
    for i in 0..count {
        if !files.iter().any(|(_, f)| f.shard == i) {
            return Err(ShardError::MissingShard { dir: shown(), file: ShardSpec { index: i, count }.file_name() });
        }
    }
    let skel = match sweep {
        Some(s) => skeleton(s),
        None => files[0].1.skeleton.clone(),
    };
    let nsettings = skel.settings.len();
    let total = files[0].1.jobs;
    if total != nsettings * skel.rounds as usize {
        let name = files[0].0.clone();
        return Err(ShardError::JobCount { name, total, settings: nsettings, rounds: skel.rounds });
    }
    let mut seen = vec![false; total];
    let mut outputs = Vec::with_capacity(total);
    let ab = files[0].1.ab.clone();
    for (name, f) in files {
        let spec = ShardSpec { index: f.shard, count };
        for rec in f.results {
            let in_order =
                rec.job < total && rec.setting == rec.job % nsettings && rec.round as usize == rec.job / nsettings;
            if !in_order || !spec.owns(rec.job) {
                return Err(ShardError::NotItsJob { name, job: rec.job });
            }
            if std::mem::replace(&mut seen[rec.job], true) {
                return Err(ShardError::JobTwice { name, job: rec.job });
            }
            outputs.push(rec);
        }
    }
    if let Some(j) = seen.iter().position(|s| !s) {
        let spec = ShardSpec { index: (j % count as usize) as u32, count };
        return Err(ShardError::MissingJob { dir: shown(), job: j, file: spec.file_name() });
    }
    Ok(Merged { result: assemble(&skel, outputs), ab, shards: count })
}
