//! A progress bar on stderr while a sweep runs (indicatif), drawn only
//! when stderr is a terminal so logs and pipes stay clean.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Progress;

/// The bar, or nothing when stderr is not a terminal.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    /// A bar for `total` simulations; `label` is shown before it (e.g.
    /// `shard 1/4`), empty for none.
    pub fn new(total: usize, label: &str) -> Bar {
        if !std::io::stderr().is_terminal() || total == 0 {
            return Bar(None);
        }
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{prefix}[{elapsed}] {bar:30} {pos}/{len} ETA {eta} {wide_msg}")
            .expect("the template is valid")
            .progress_chars("=> ");
        bar.set_style(style);
        if !label.is_empty() {
            bar.set_prefix(format!("{label} "));
        }
        Bar(Some(bar))
    }

    /// Record one finished simulation.
    pub fn update(&self, p: &Progress) {
        if let Some(b) = &self.0 {
            b.inc(1);
            b.set_message(format!("{} run {}: {} stalls of {} handoffs", p.setting, p.run, p.stalls, p.handoffs));
        }
    }

    /// Show `done` of the total finished, with `msg` (work counted
    /// elsewhere, e.g. shard files a cluster wrote).
    pub fn set(&self, done: usize, msg: &str) {
        if let Some(b) = &self.0 {
            b.set_position(done as u64);
            b.set_message(msg.to_string());
        }
    }

    /// Remove the bar from the terminal.
    pub fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}
