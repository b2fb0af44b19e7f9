//! grpcurl's output of a call on standard output: each response message, and with `-v` the
//! resolved method, the metadata sent, the response headers, `Response contents:`, the trailers
//! (`-vv` adds each message's size and, at the end, the timing tree in Go's durations).

use std::{io::Write, time::Duration};

use prost::Message as _;
use prost_reflect::{DynamicMessage, MethodDescriptor};
use volley_proto::gofmt;

use crate::{
    describe,
    format::Formatter,
    invoke::Events,
    metadata::{self, Metadata},
    status::CallStatus,
};

/// grpcurl's `DefaultEventHandler`.
pub(crate) struct Printer<'a> {
    out: &'a mut dyn Write,
    verbosity: u8,
    fmt: &'a Formatter,
    /// Responses printed.
    pub responses: usize,
    /// The call's status, once its trailers came.
    pub status: CallStatus,
}

impl<'a> Printer<'a> {
    /// Prints to `out` at `verbosity` 0, 1 (`-v`) or 2 (`-vv`).
    pub(crate) fn new(out: &'a mut dyn Write, verbosity: u8, fmt: &'a Formatter) -> Printer<'a> {
        Printer {
            out,
            verbosity,
            fmt,
            responses: 0,
            status: CallStatus::default(),
        }
    }
}

impl Events for Printer<'_> {
    fn resolved(&mut self, m: &MethodDescriptor) {
        if self.verbosity > 0 {
            let _ = write!(
                self.out,
                "\nResolved method descriptor:\n{}\n",
                describe::method_text(m)
            );
        }
    }

    fn request_metadata(&mut self, md: &Metadata) {
        if self.verbosity > 0 {
            let _ = write!(
                self.out,
                "\nRequest metadata to send:\n{}\n",
                metadata::to_string(md)
            );
        }
    }

    fn headers(&mut self, md: &Metadata) {
        if self.verbosity > 0 {
            let _ = write!(
                self.out,
                "\nResponse headers received:\n{}\n",
                metadata::to_string(md)
            );
        }
    }

    fn response(&mut self, msg: &DynamicMessage) {
        self.responses += 1;
        if self.verbosity > 1 {
            let _ = write!(
                self.out,
                "\nEstimated response size: {} bytes\n",
                msg.encoded_len()
            );
        }
        if self.verbosity > 0 {
            let _ = write!(self.out, "\nResponse contents:\n");
        }
        let _ = match self.fmt.message(msg) {
            Ok(text) => writeln!(self.out, "{text}"),
            Err(e) => writeln!(
                self.out,
                "Failed to format response message {}: {e}",
                self.responses
            ),
        };
        let _ = self.out.flush();
    }

    fn trailers(&mut self, status: &CallStatus, md: &Metadata) {
        self.status = status.clone();
        if self.verbosity > 0 {
            let _ = write!(
                self.out,
                "\nResponse trailers received:\n{}\n",
                metadata::to_string(md)
            );
        }
    }
}

/// `Sent 1 request and received 2 responses` (`-v`).
pub(crate) fn summary(requests: usize, responses: usize) -> String {
    let s = |n: usize| if n == 1 { "" } else { "s" };
    format!(
        "Sent {requests} request{} and received {responses} response{}\n",
        s(requests),
        s(responses)
    )
}

/// `-vv`'s timing tree: a title, a duration and the children, two spaces deeper each level.
#[derive(Debug, Default)]
pub(crate) struct Timing {
    /// The node's title (`Dial`, `BlockingDial`, ...).
    pub title: &'static str,
    /// How long it took.
    pub took: Duration,
    /// What it contains.
    pub children: Vec<Timing>,
}

impl Timing {
    /// The tree as grpcurl's `dumpTiming` prints it.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out, 0);
        out
    }

    fn render_into(&self, out: &mut String, depth: usize) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(&format!(
            "{}: {}\n",
            self.title,
            gofmt::duration(i64::try_from(self.took.as_nanos()).unwrap_or(i64::MAX))
        ));
        for c in &self.children {
            c.render_into(out, depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_timing() {
        assert_eq!(summary(1, 1), "Sent 1 request and received 1 response\n");
        assert_eq!(summary(0, 2), "Sent 0 requests and received 2 responses\n");
        let t = Timing {
            title: "Timing Data",
            took: Duration::from_micros(3933),
            children: vec![Timing {
                title: "Dial",
                took: Duration::from_micros(1318),
                children: vec![],
            }],
        };
        assert_eq!(t.render(), "Timing Data: 3.933ms\n  Dial: 1.318ms\n");
    }
}
