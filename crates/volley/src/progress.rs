//! The progress bar `volley bench` draws on stderr when stderr is a terminal: calls done, rate,
//! errors are in the report; nothing is drawn otherwise.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use indicatif::{ProgressBar, ProgressStyle};
use volley_bench::{RunOptions, Stop};

/// A running progress bar.
pub struct Bar {
    done: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Bar {
    /// Starts drawing `count` against the run's length (calls, or seconds with -z).
    pub fn start(count: Arc<AtomicU64>, run: &RunOptions) -> Bar {
        let by_time = run.stop.duration();
        let bar = match run.stop {
            Stop::Duration(d) => ProgressBar::new(d.as_secs().max(1)).with_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:40}] {msg} (eta {eta})")
                    .expect("valid template")
                    .progress_chars("=> "),
            ),
            Stop::Calls(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] {pos}/{len} {msg} (eta {eta})",
                )
                .expect("valid template")
                .progress_chars("=> "),
            ),
        };
        let done = Arc::new(AtomicBool::new(false));
        let stop = done.clone();
        let thread = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let n = count.load(Ordering::Relaxed);
                let rate = n as f64 / start.elapsed().as_secs_f64().max(1e-3);
                match by_time {
                    Some(_) => bar.set_position(start.elapsed().as_secs()),
                    None => bar.set_position(n),
                }
                bar.set_message(format!("{n} calls, {rate:.0}/s"));
                std::thread::sleep(Duration::from_millis(100));
            }
            bar.finish_and_clear();
        });
        Bar { done, thread }
    }

    /// Clears the bar.
    pub fn finish(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
    }
}
