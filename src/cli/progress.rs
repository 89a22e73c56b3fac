//! Progress of a long `run` or `sweep` on stderr, never on stdout (which carries the results).
//!
//! On a terminal a bar is redrawn in place a few times a second and erased at the end. Elsewhere
//! (a CI log, `nohup`, a file) a redrawn bar would be a carriage return soup, and nothing at all
//! left a 4-minute sweep silent; so a plain line is printed every few seconds instead, saying
//! what is done, of how much, the time elapsed and an estimate of the time left. The interval is
//! 5 s, or `RETRYSTORM_PROGRESS_SECONDS` (any number of seconds above zero: the tests set a
//! tenth of one so as not to wait), which docs/reference.md documents with the commands.

use std::io::{self, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// The environment variable that sets the seconds between progress lines.
pub const INTERVAL_VARIABLE: &str = "RETRYSTORM_PROGRESS_SECONDS";

/// Seconds between progress lines when the variable is not set.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A bar redrawn in place: stderr is a terminal.
    Bar,
    /// A line every interval: stderr is not a terminal.
    Lines(Duration),
}

impl Mode {
    /// The mode for this process's stderr; an invalid [`INTERVAL_VARIABLE`] is an error, even
    /// on a terminal, so that a typo shows where it is tried.
    pub fn of_stderr() -> Result<Mode, String> {
        let interval = match std::env::var(INTERVAL_VARIABLE) {
            Err(std::env::VarError::NotPresent) => DEFAULT_INTERVAL,
            Ok(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|seconds| seconds.is_finite() && *seconds > 0.0 && *seconds < 1e9)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| {
                    format!("{INTERVAL_VARIABLE}={text:?}: expected seconds above zero, such as 5 or 0.5")
                })?,
            Err(error) => return Err(format!("{INTERVAL_VARIABLE}: {error}")),
        };
        Ok(if io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines(interval)
        })
    }
}

/// `12s elapsed, about 30s left`: the estimate from the pace so far, none before anything is
/// done.
pub fn timing(elapsed: Duration, fraction: f64) -> String {
    let seconds = elapsed.as_secs_f64();
    if fraction > 0.0 {
        format!(
            "{seconds:.1}s elapsed, about {:.1}s left",
            seconds * (1.0 - fraction).max(0.0) / fraction
        )
    } else {
        format!("{seconds:.1}s elapsed, no estimate yet")
    }
}

/// A thread that shows progress until stopped.
pub struct Painter {
    done: Arc<AtomicBool>,
    thread: thread::JoinHandle<()>,
}

impl Painter {
    /// Shows `status(elapsed)`: as a bar redrawn every `frame` (then erased over `width`
    /// columns) in [`Mode::Bar`], as a line every interval in [`Mode::Lines`].
    pub fn start(
        mode: Mode,
        frame: Duration,
        width: usize,
        status: impl Fn(Duration) -> String + Send + 'static,
    ) -> Painter {
        let done = Arc::new(AtomicBool::new(false));
        let stop = Arc::clone(&done);
        let thread = thread::spawn(move || {
            let started = Instant::now();
            let mut next_line = match mode {
                Mode::Lines(interval) => interval,
                Mode::Bar => Duration::ZERO,
            };
            while !stop.load(Ordering::Relaxed) {
                let elapsed = started.elapsed();
                match mode {
                    Mode::Bar => {
                        eprint!("\r{}   ", status(elapsed));
                        let _ = io::stderr().flush();
                    }
                    Mode::Lines(interval) if elapsed >= next_line => {
                        eprintln!("{}", status(elapsed));
                        next_line += interval;
                    }
                    Mode::Lines(_) => {}
                }
                let pause = match mode {
                    Mode::Bar => frame,
                    Mode::Lines(_) => next_line.saturating_sub(elapsed).min(frame),
                };
                thread::sleep(pause);
            }
            if mode == Mode::Bar {
                eprint!("\r{}\r", " ".repeat(width));
            }
        });
        Painter { done, thread }
    }

    /// Stops showing progress (a bar is erased).
    pub fn stop(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The estimate scales the time so far by what is left: a quarter done in 10 s leaves 30 s.
    #[test]
    fn the_estimate_follows_the_pace_so_far() {
        assert_eq!(
            timing(Duration::from_secs(10), 0.25),
            "10.0s elapsed, about 30.0s left"
        );
        assert_eq!(
            timing(Duration::from_secs(3), 0.0),
            "3.0s elapsed, no estimate yet"
        );
    }
}
