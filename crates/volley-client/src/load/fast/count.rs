//! A stream's reply counts, kept as its DATA is parsed: shared by the call's slot (the reader
//! counts) and the call (which reads them at its end, or at its deadline; a bidi stream's
//! arrival times as it goes).

use std::time::Instant;

use crate::load::MessageCounter;

/// What a server stream returned, apart from its status.
#[derive(Clone, Copy, Debug, Default)]
pub struct StreamReply {
    /// Whole messages received.
    pub messages: u64,
    /// When the first one was in (parsed by the connection's reader).
    pub first_message: Option<Instant>,
}

/// A stream's reply messages as its DATA comes in; shared by the call's slot (the reader
/// counts) and the call (which reads the counts at its end, or at its deadline).
#[derive(Debug, Default)]
pub(super) struct StreamCount {
    counter: MessageCounter,
    reply: StreamReply,
    /// Messages after which the call has what it wanted; 0: no limit.
    limit: u64,
    /// When each reply message came, since the caller last took them (bidi streams, for
    /// per-message latency); `None`: not kept.
    arrivals: Option<Vec<Instant>>,
}

impl StreamCount {
    /// Counts the messages `data` completes; true once the limit is reached.
    pub(super) fn push(&mut self, data: &[u8]) -> bool {
        let n = self.counter.push(data);
        if n > 0 {
            if self.reply.messages == 0 || self.arrivals.is_some() {
                let now = Instant::now();
                if self.reply.messages == 0 {
                    self.reply.first_message = Some(now);
                }
                if let Some(a) = &mut self.arrivals {
                    a.extend(std::iter::repeat_n(now, n as usize));
                }
            }
            self.reply.messages += n;
        }
        self.limit > 0 && self.reply.messages >= self.limit
    }

    /// Counts until `limit` messages (0: no limit).
    pub(super) fn new(limit: u64) -> StreamCount {
        StreamCount {
            limit,
            ..StreamCount::default()
        }
    }

    /// Counts every message, stamping each one's arrival (see [`Self::take_arrivals`]).
    pub(super) fn stamped() -> StreamCount {
        StreamCount {
            arrivals: Some(Vec::new()),
            ..StreamCount::default()
        }
    }

    /// Moves the arrival times stamped since the last call into `into` (none when not stamped).
    pub(super) fn take_arrivals(&mut self, into: &mut Vec<Instant>) {
        if let Some(a) = &mut self.arrivals {
            into.append(a);
        }
    }

    /// What came so far.
    pub(super) fn reply(&self) -> StreamReply {
        self.reply
    }
}
