//! NDJSON request data: one message (or a JSON array of messages) per line, call `i` taking
//! line `i mod n` (as a JSON array's messages go round robin), or with `--data-order random` the
//! line a hash of `i` picks, so shards and reruns send the same data. Every line is checked once
//! before the run (a line that does not fit the message fails with its number). A file whose
//! messages encode to at most [`KEEP`] bytes is kept encoded in memory, so its calls cost what
//! fixed data costs; a larger one is streamed from disk and memory stays flat whatever its size:
//! what stays is a checkpoint every 4 KiB (its first line's number and offset), a call reads and
//! encodes the block holding its line, and each thread keeps its last block, so calls that
//! follow one another mostly read memory.

use std::{
    cell::RefCell,
    fs::File,
    io::{BufRead, BufReader},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use bytes::Bytes;
use prost_reflect::MessageDescriptor;
use volley_proto::message::{encode_all, from_json};

use super::{frame::frame, mix::splitmix64};
use crate::plan::LineOrder;

/// Bytes between checkpoints.
const BLOCK: u64 = 4096;

/// Encoded bytes up to which a file's messages are kept in memory.
pub(super) const KEEP: usize = 8 << 20;

/// An NDJSON data file, indexed.
pub struct Lines {
    path: PathBuf,
    file: File,
    /// `(first line number, byte offset)` of each block; a last entry marks the end.
    checkpoints: Vec<(u64, u64)>,
    /// Lines that hold data (blank lines are skipped).
    count: u64,
    input: MessageDescriptor,
    gzip: bool,
    order: LineOrder,
    /// Every line's framed messages, when they fit in [`KEEP`] bytes.
    kept: Option<Vec<Box<[Bytes]>>>,
    /// Tells one `Lines` from another in the threads' block caches.
    id: u64,
}

/// Why a data file cannot be used: its path, the line and what is wrong, in one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LinesError(String);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's last block: which `Lines`, which block, its bytes.
    static CACHE: RefCell<(u64, usize, Vec<u8>)> = const { RefCell::new((0, usize::MAX, Vec::new())) };
}

fn trim(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    let start = line[..end]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(end);
    &line[start..end]
}

impl Lines {
    /// Opens and checks `path`: every non-blank line must be JSON that fits `input`.
    pub fn open(
        path: &Path,
        input: MessageDescriptor,
        gzip: bool,
        order: LineOrder,
    ) -> Result<Lines, LinesError> {
        let shown = path.display();
        let open = || File::open(path).map_err(|e| LinesError(format!("cannot read {shown}: {e}")));
        let mut reader = BufReader::with_capacity(64 * 1024, open()?);
        let mut line = Vec::new();
        let (mut offset, mut number, mut count) = (0u64, 0u64, 0u64);
        let mut checkpoints = Vec::new();
        let mut last_checkpoint: Option<u64> = None;
        let (mut kept, mut kept_bytes) = (Some(Vec::new()), 0usize);
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| LinesError(format!("cannot read {shown}: {e}")))?;
            if n == 0 {
                break;
            }
            number += 1;
            let data = trim(&line);
            if !data.is_empty() {
                if last_checkpoint.is_none_or(|at| offset - at >= BLOCK) {
                    checkpoints.push((count, offset));
                    last_checkpoint = Some(offset);
                }
                let text = std::str::from_utf8(data)
                    .map_err(|_| LinesError(format!("{shown} line {number}: not UTF-8 text")))?;
                let msgs = from_json(&input, text)
                    .map_err(|e| LinesError(format!("{shown} line {number}: {e}")))?;
                if msgs.is_empty() {
                    return Err(LinesError(format!(
                        "{shown} line {number}: an empty array sends nothing"
                    )));
                }
                if let Some(k) = &mut kept {
                    let framed: Box<[Bytes]> =
                        encode_all(&msgs).iter().map(|m| frame(m, gzip)).collect();
                    kept_bytes += framed.iter().map(Bytes::len).sum::<usize>();
                    if kept_bytes <= KEEP {
                        k.push(framed);
                    } else {
                        kept = None;
                    }
                }
                count += 1;
            }
            offset += n as u64;
        }
        if count == 0 {
            return Err(LinesError(format!("{shown}: no data lines")));
        }
        checkpoints.push((count, offset));
        Ok(Lines {
            path: path.to_owned(),
            file: open()?,
            checkpoints,
            count,
            input,
            gzip,
            order,
            kept,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Lines that hold data.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The framed messages of data line `index` (0-based, blank lines not counted).
    fn messages_of(&self, index: u64) -> Result<Vec<Bytes>, String> {
        let block = self
            .checkpoints
            .partition_point(|(first, _)| *first <= index)
            - 1;
        let (first, start) = self.checkpoints[block];
        let end = self.checkpoints[block + 1].1;
        CACHE.with(|cache| {
            let mut cache = cache.borrow_mut();
            if cache.0 != self.id || cache.1 != block {
                cache.2.resize((end - start) as usize, 0);
                self.file
                    .read_exact_at(&mut cache.2, start)
                    .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
                cache.0 = self.id;
                cache.1 = block;
            }
            let data = cache
                .2
                .split(|b| *b == b'\n')
                .map(trim)
                .filter(|l| !l.is_empty())
                .nth((index - first) as usize)
                .ok_or_else(|| format!("{}: changed during the run", self.path.display()))?;
            let text = std::str::from_utf8(data).map_err(|e| e.to_string())?;
            let msgs = from_json(&self.input, text).map_err(|e| e.to_string())?;
            Ok(encode_all(&msgs)
                .iter()
                .map(|m| frame(m, self.gzip))
                .collect())
        })
    }

    /// Every message of call `i`'s line.
    pub fn messages(&self, i: u64) -> Result<Vec<Bytes>, String> {
        let k = self.line_of(i);
        match &self.kept {
            Some(kept) => Ok(kept[k as usize].to_vec()),
            None => self.messages_of(k),
        }
    }

    /// The message unary call `i` sends: its line's, or one of them by `i` when the line is an
    /// array.
    pub fn message(&self, i: u64) -> Result<Bytes, String> {
        let k = self.line_of(i);
        let pick = |all: &[Bytes]| all[(i % all.len() as u64) as usize].clone();
        match &self.kept {
            Some(kept) => Ok(pick(&kept[k as usize])),
            None => self.messages_of(k).map(|all| pick(&all)),
        }
    }

    /// The data line call `i` takes.
    fn line_of(&self, i: u64) -> u64 {
        let k = match self.order {
            LineOrder::RoundRobin => i,
            // Not the mix's hash of `i` itself: a mix entry's calls would then see a skewed
            // share of the lines.
            LineOrder::Random => splitmix64(i ^ 0x6c69_6e65_7321_5eed),
        };
        k % self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> MessageDescriptor {
        let p = file(
            "t.proto",
            "syntax = \"proto3\"; package t; message Req { int64 id = 1; }",
        );
        let pool = volley_proto::load::compile_proto(&p, &[]).unwrap();
        pool.get_message_by_name("t.Req").unwrap()
    }

    /// `text` written to a file of its own: a folder per call, since the tests run in parallel
    /// and several write `t.proto` (one truncating it while another compiles it made
    /// `t.Req` go missing).
    fn file(name: &str, text: &str) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("volley-lines-{}-{k}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn call_i_takes_line_i_mod_n_across_blocks() {
        // Enough lines for several 4 KiB blocks, with blank lines between some.
        let mut text = String::new();
        for k in 0..3000 {
            text += &format!("{{\"id\": {k}}}\n");
            if k % 7 == 0 {
                text += "\n";
            }
        }
        let lines = Lines::open(
            &file("many.ndjson", &text),
            input(),
            false,
            LineOrder::RoundRobin,
        )
        .unwrap();
        assert_eq!(lines.count(), 3000);
        assert!(lines.checkpoints.len() > 4);
        assert!(lines.kept.is_some(), "a small file is kept encoded");
        // The same file streamed from disk, as one over KEEP would be.
        let mut streamed = Lines::open(
            &file("many.ndjson", &text),
            input(),
            false,
            LineOrder::RoundRobin,
        )
        .unwrap();
        streamed.kept = None;
        let want = |k: u64| {
            let msg = from_json(&input(), &format!("{{\"id\": {k}}}")).unwrap();
            frame(&encode_all(&msg)[0], false)
        };
        for i in [0u64, 1, 599, 600, 2999, 3000, 4321, 17] {
            assert_eq!(lines.messages(i).unwrap(), vec![want(i % 3000)], "call {i}");
            assert_eq!(
                streamed.messages(i).unwrap(),
                vec![want(i % 3000)],
                "call {i}"
            );
            assert_eq!(lines.message(i).unwrap(), want(i % 3000), "call {i}");
            assert_eq!(streamed.message(i).unwrap(), want(i % 3000), "call {i}");
        }
        // At random: every line is a valid one, most are taken, and reruns agree.
        let random = Lines::open(
            &file("many.ndjson", &text),
            input(),
            false,
            LineOrder::Random,
        )
        .unwrap();
        let picked: Vec<Vec<Bytes>> = (0..3000).map(|i| random.messages(i).unwrap()).collect();
        let distinct: std::collections::HashSet<&Vec<Bytes>> = picked.iter().collect();
        assert!(
            distinct.len() > 1500 && distinct.len() < 3000,
            "{}",
            distinct.len()
        );
        assert_eq!(random.messages(77).unwrap(), picked[77]);
    }

    #[test]
    fn a_line_that_does_not_fit_fails_with_its_number() {
        let p = file("bad.ndjson", "{\"id\": 1}\n\n{\"id\": \"x\"}\n");
        let rr = LineOrder::RoundRobin;
        let e = Lines::open(&p, input(), false, rr)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with(&format!("{} line 3: ", p.display())), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let p = file("unknown.ndjson", "{\"id\": 1}\n{\"name\": 2}\n");
        let e = Lines::open(&p, input(), false, rr)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("line 2: "), "{e}");
        let e = Lines::open(&file("empty.ndjson", "\n\n"), input(), false, rr)
            .err()
            .unwrap()
            .to_string();
        assert!(e.ends_with("no data lines"), "{e}");
    }
}
