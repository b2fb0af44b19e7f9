//! Request messages from `-d`: read on a thread of their own (so `-d @` can feed a bidi stream
//! line by line while replies print), JSON values one after another or text-format messages
//! separated by 0x1E, counted as grpcurl counts them (every value read, parsed or not).

use std::{
    io::{BufRead, BufReader, Read},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
};

use prost_reflect::{DynamicMessage, MessageDescriptor};
use tokio::sync::mpsc;

use crate::{go_json::Values, json_in};

/// Where request data comes from.
pub(crate) enum Data {
    /// `-d '...'`.
    Inline(String),
    /// `-d @`: standard input.
    Stdin,
    /// Any reader (tests).
    Reader(Box<dyn Read + Send>),
}

/// Request data that could not be read: grpcurl's words, and where the data went wrong or what
/// it names that does not exist ([`hint`](mod@crate::hint)).
#[derive(Debug, Clone)]
pub(crate) struct DataError {
    /// grpcurl's (Go's, jhump's) message.
    pub text: String,
    /// volley's line after it.
    pub hint: Option<String>,
}

impl DataError {
    fn plain(text: String) -> DataError {
        DataError { text, hint: None }
    }
}

/// The request messages, parsed as they are needed.
pub(crate) struct Requests {
    rx: mpsc::Receiver<Result<DynamicMessage, DataError>>,
    count: Arc<AtomicUsize>,
    done: bool,
}

impl Requests {
    /// Starts reading `data` as `desc` messages (`text` for `-format text`).
    pub(crate) fn start(
        data: Data,
        desc: MessageDescriptor,
        text: bool,
        allow_unknown: bool,
    ) -> Requests {
        let (tx, rx) = mpsc::channel(1);
        let count = Arc::new(AtomicUsize::new(0));
        let counted = count.clone();
        let reader: Box<dyn Read + Send> = match data {
            Data::Inline(s) => Box::new(std::io::Cursor::new(s.into_bytes())),
            Data::Stdin => Box::new(std::io::stdin()),
            Data::Reader(r) => r,
        };
        // The reader's stack is the call's (`go_json::STACK`): JSON nests 10,000 levels deep.
        let failed = tx.clone();
        let read = move || {
            let reader = BufReader::new(reader);
            if text {
                read_text(reader, &desc, &counted, &tx);
            } else {
                read_json(reader, &desc, allow_unknown, &counted, &tx);
            }
        };
        if let Err(e) = std::thread::Builder::new()
            .name("volley-call-input".into())
            .stack_size(crate::go_json::STACK)
            .spawn(read)
        {
            let why = format!("cannot start reading the request data: {e}");
            let _ = failed.try_send(Err(DataError::plain(why)));
        }
        Requests {
            rx,
            count,
            done: false,
        }
    }

    /// The next message, `Ok(None)` at the end; an error ends the input.
    pub(crate) async fn next(&mut self) -> Result<Option<DynamicMessage>, DataError> {
        if self.done {
            return Ok(None);
        }
        match self.rx.recv().await {
            Some(Ok(m)) => Ok(Some(m)),
            Some(Err(e)) => {
                self.done = true;
                Err(e)
            }
            None => {
                self.done = true;
                Ok(None)
            }
        }
    }

    /// Values read so far (grpcurl's `NumRequests`).
    pub(crate) fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }
}

type Tx = mpsc::Sender<Result<DynamicMessage, DataError>>;

fn read_json<R: BufRead>(
    reader: R,
    desc: &MessageDescriptor,
    allow_unknown: bool,
    count: &AtomicUsize,
    tx: &Tx,
) {
    let mut values = Values::new(reader);
    loop {
        let item = match values.next_value() {
            Ok(None) => return,
            Ok(Some(node)) => {
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                json_in::message(desc, &node, allow_unknown).map_err(|text| DataError {
                    text,
                    hint: crate::hint::unknown_field(desc, &node)
                        .or_else(|| crate::hint::misfit(desc, &node, allow_unknown, n)),
                })
            }
            Err(text) => {
                let (line, column) = values.position();
                Err(DataError {
                    text,
                    hint: Some(format!(
                        "-d: the JSON goes wrong at line {line}, column {column}"
                    )),
                })
            }
        };
        let stop = item.is_err();
        if tx.blocking_send(item).is_err() || stop {
            return;
        }
    }
}

/// grpcurl's text parser: chunks split at 0x1E; empty input is one empty message, and a
/// trailing separator adds a final empty one.
fn read_text<R: BufRead>(mut reader: R, desc: &MessageDescriptor, count: &AtomicUsize, tx: &Tx) {
    loop {
        let mut chunk = Vec::new();
        match reader.read_until(0x1e, &mut chunk) {
            Ok(_) => {}
            Err(e) => {
                let _ = tx.blocking_send(Err(DataError::plain(e.to_string())));
                return;
            }
        }
        let last = chunk.last() != Some(&0x1e);
        if !last {
            chunk.pop();
        }
        count.fetch_add(1, Ordering::SeqCst);
        let text = String::from_utf8_lossy(&chunk);
        let item = DynamicMessage::parse_text_format(desc.clone(), &text)
            .map_err(|e| DataError::plain(text_error(&e, &text)));
        let stop = item.is_err() || last;
        if tx.blocking_send(item).is_err() || stop {
            return;
        }
    }
}

/// A text-format error in the words of jhump's parser where they are known (an unknown field or
/// enum value, with its line and column), else prost-reflect's.
fn text_error(e: &prost_reflect::text_format::ParseError, src: &str) -> String {
    use miette::Diagnostic;
    let msg = e.to_string();
    if msg.ends_with("but reached end of input") {
        return "unexpected EOF".into();
    }
    let at = e.labels().and_then(|mut l| l.next()).map(|l| l.offset());
    let Some(at) = at else {
        return msg;
    };
    let before = &src[..at.min(src.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    let quoted = |s: &str| crate::args::go_quote(s);
    let parts: Vec<&str> = msg.split('\'').collect();
    if msg.starts_with("field '") && parts.len() >= 4 {
        return format!(
            "line {line}, col {col}: {} is not a recognized field name of {}",
            quoted(parts[1]),
            quoted(parts[3])
        );
    }
    if let Some(found) = msg
        .strip_prefix("expected a field name, but found '")
        .and_then(|f| f.strip_suffix('\''))
    {
        return format!(
            "line {line}, col {col}: Expecting an identifier or tag number; instead got {}",
            quoted(found)
        );
    }
    if msg.starts_with("value '") && parts.len() >= 4 {
        return format!(
            "line {line}, col {col}: Expecting an enum {} value; got {}",
            parts[3],
            quoted(parts[1])
        );
    }
    msg
}
