//! Progress of the training examples: an indicatif bar with the rate and the time left when
//! stdout is a terminal, a plain line per epoch when it is not (a log, a pipe), so logs hold
//! one readable line per epoch rather than redrawn bars.

#![allow(dead_code)]

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// Whether this process draws bars: outside `mpirun`, or its rank 0 (Open MPI's and MPICH's rank
/// variables). `mpirun` gives every rank the terminal, where R bars would overwrite each other.
fn first_rank() -> bool {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK"].iter().all(|v| std::env::var(v).map_or(true, |rank| rank == "0"))
}

/// A bar of `len` steps (on a terminal) or a line printer (elsewhere).
pub struct Progress {
    bar: Option<ProgressBar>,
    prefix: String,
    len: u64,
}

impl Progress {
    /// `len` steps labelled `prefix` (`seed 3`, `dense epoch 2/20`, ...).
    pub fn new(len: u64, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        let bar = (std::io::stdout().is_terminal() && first_rank()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stdout());
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos:>4}/{len} {msg} ({elapsed}, ETA {eta})")
                .expect("a valid template")
                .progress_chars("#>.");
            bar.set_style(style);
            bar.set_prefix(prefix.clone());
            bar
        });
        Self { bar, prefix, len }
    }

    /// Step `pos` done: moves the bar and shows `message` on it (nothing without a terminal).
    pub fn step(&self, pos: u64, message: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            bar.set_position(pos);
            bar.set_message(message());
        }
    }

    /// Epoch `pos` done: moves the bar, or prints `prefix pos/len: message` without a terminal.
    pub fn epoch(&self, pos: u64, message: impl FnOnce() -> String) {
        match &self.bar {
            Some(bar) => {
                bar.set_position(pos);
                bar.set_message(message());
            }
            None => println!("{} {pos}/{}: {}", self.prefix, self.len, message()),
        }
    }

    /// Prints `line` above the bar (or plainly).
    pub fn println(&self, line: impl AsRef<str>) {
        match &self.bar {
            Some(bar) => bar.println(line.as_ref()),
            None => println!("{}", line.as_ref()),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
