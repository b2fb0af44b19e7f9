//! Behaviour shared by every built-in service: a delay before each reply, and CPU work that
//! takes a set time on an idle core.

use std::{
    sync::OnceLock,
    time::{Duration, Instant},
};

/// Behaviour shared by every built-in service.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Time every handler waits before replying (zero: no timer at all).
    pub delay: Duration,
    /// CPU work every handler does before replying, on tokio's blocking pool as a CPU-heavy
    /// async handler would (`spawn_blocking`): a fixed amount of computation that takes this long
    /// on an idle core, so a server given more calls than its cores can compute falls behind,
    /// as a real one does (a timed spin would not: it ends on time however busy the core).
    pub work: Duration,
}

impl Options {
    /// Waits the configured delay, then does the configured work, if any.
    pub(crate) async fn wait(self) {
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        if !self.work.is_zero() {
            let rounds = work_rounds(self.work);
            let _ = tokio::task::spawn_blocking(move || compute(rounds)).await;
        }
    }
}

/// Rounds of [`compute`] that take `work` on an idle core (measured once, at the first call or
/// when [`crate::all`] is given work).
pub(crate) fn work_rounds(work: Duration) -> u64 {
    static PER_MS: OnceLock<u64> = OnceLock::new();
    let per_ms = *PER_MS.get_or_init(|| {
        const ROUNDS: u64 = 2_000_000;
        let started = Instant::now();
        compute(ROUNDS);
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        (ROUNDS as f64 / ms.max(1e-3)) as u64
    });
    per_ms * work.as_micros() as u64 / 1000
}

/// A computation the optimizer cannot remove.
fn compute(rounds: u64) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..rounds {
        x = x.rotate_left(5) ^ x.wrapping_mul(0x0100_0000_01B3);
    }
    std::hint::black_box(x);
}
