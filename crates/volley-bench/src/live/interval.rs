//! What one thread (or, merged, the run) recorded in an interval: calls, statuses and latency,
//! for the run and per entry of a mix.

use hdrhistogram::Histogram;
use volley_wire::Code;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// One method's calls in an interval.
#[derive(Clone, Debug)]
pub(crate) struct MethodInterval {
    /// Calls finished.
    pub(crate) calls: u64,
    /// Calls per status code.
    pub(crate) statuses: [u64; 17],
    /// Latency of the OK calls (from the intended send time), ns.
    pub(crate) latency: Histogram<u64>,
}

impl MethodInterval {
    fn new() -> MethodInterval {
        MethodInterval {
            calls: 0,
            statuses: [0; 17],
            latency: histogram(),
        }
    }

    fn add(&mut self, o: &MethodInterval) {
        self.calls += o.calls;
        for (a, b) in self.statuses.iter_mut().zip(o.statuses) {
            *a += b;
        }
        let _ = self.latency.add(&o.latency);
    }

    fn reset(&mut self) {
        self.calls = 0;
        self.statuses = [0; 17];
        self.latency.reset();
    }
}

/// What one thread (or, merged, the run) recorded in an interval.
#[derive(Clone, Debug)]
pub(crate) struct Interval {
    /// All calls.
    pub(crate) all: MethodInterval,
    /// Service time (from the actual send) of the OK calls, ns.
    pub(crate) service: Histogram<u64>,
    /// Per entry of a mix (empty otherwise).
    pub(crate) methods: Vec<MethodInterval>,
}

impl Interval {
    /// An empty interval for a run with `methods` mix entries.
    pub(crate) fn new(methods: usize) -> Interval {
        Interval {
            all: MethodInterval::new(),
            service: histogram(),
            methods: (0..methods).map(|_| MethodInterval::new()).collect(),
        }
    }

    /// Records one finished call.
    pub(crate) fn record(
        &mut self,
        method: Option<usize>,
        code: Code,
        latency_ns: u64,
        service_ns: u64,
    ) {
        let one = |m: &mut MethodInterval| {
            m.calls += 1;
            m.statuses[code as usize] += 1;
            if code == Code::Ok {
                m.latency.saturating_record(latency_ns.max(1));
            }
        };
        one(&mut self.all);
        if let Some(m) = method.and_then(|m| self.methods.get_mut(m)) {
            one(m);
        }
        if code == Code::Ok {
            self.service.saturating_record(service_ns.max(1));
        }
    }

    /// Empties it (its histograms keep their memory).
    pub(crate) fn clear(&mut self) {
        self.all.reset();
        self.service.reset();
        self.methods.iter_mut().for_each(MethodInterval::reset);
    }

    /// Adds `o` into this one and empties `o`.
    pub(crate) fn take_from(&mut self, o: &mut Interval) {
        self.all.add(&o.all);
        let _ = self.service.add(&o.service);
        for (a, b) in self.methods.iter_mut().zip(&o.methods) {
            a.add(b);
        }
        o.clear();
    }
}
