//! Counting whole gRPC messages in a reply's bytes without decoding them (the load engine counts
//! and times stream messages; it never reads them).

/// Counts whole gRPC messages (5-byte prefix, then the length it gives) in bytes fed in pieces.
#[derive(Clone, Copy, Debug, Default)]
pub struct MessageCounter {
    header: [u8; 5],
    have: usize,
    remaining: usize,
}

impl MessageCounter {
    /// Feeds bytes; returns how many messages they completed.
    pub fn push(&mut self, mut b: &[u8]) -> u64 {
        let mut done = 0;
        while !b.is_empty() {
            if self.have < 5 {
                let take = (5 - self.have).min(b.len());
                self.header[self.have..self.have + take].copy_from_slice(&b[..take]);
                self.have += take;
                b = &b[take..];
                if self.have == 5 {
                    self.remaining = u32::from_be_bytes([
                        self.header[1],
                        self.header[2],
                        self.header[3],
                        self.header[4],
                    ]) as usize;
                    if self.remaining == 0 {
                        done += 1;
                        self.have = 0;
                    }
                }
            } else {
                let take = self.remaining.min(b.len());
                self.remaining -= take;
                b = &b[take..];
                if self.remaining == 0 {
                    done += 1;
                    self.have = 0;
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_messages_across_chunks() {
        let mut all = Vec::new();
        for len in [3usize, 0, 10] {
            all.push(0u8);
            all.extend_from_slice(&(len as u32).to_be_bytes());
            all.extend(std::iter::repeat_n(7u8, len));
        }
        for cut in 0..all.len() {
            let mut c = MessageCounter::default();
            let n = c.push(&all[..cut]) + c.push(&all[cut..]);
            assert_eq!(n, 3, "cut {cut}");
        }
    }
}
