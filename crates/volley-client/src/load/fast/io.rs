//! A fast-path connection's life on its socket: dial, the handshake in three steps (our preface
//! and SETTINGS, the server's first frame, the two tasks started), then the writer task (what
//! calls appended, sent once per wake) and the reader task (frames parsed in place, calls
//! settled), which reads nothing more while too much waits to be sent.

use std::{cell::RefCell, rc::Rc};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf},
    sync::Notify,
};
use volley_wire::{
    Status,
    h2::{DEFAULT_WINDOW, FRAME_HEADER_LEN, Head, MAX_WINDOW, PREFACE, kind, setting, write},
};

use super::{
    FastConnection,
    error::CallError,
    state::{FIRST_OUT_BUFFER, Inner, MAX_FRAME_IN},
};

/// The reader's buffer at most: whole frames are parsed in place, the rest kept for the next
/// read.
const READ_BUFFER: usize = 256 * 1024;

/// The reader's buffer at first (room for the largest frame we accept twice over); it doubles,
/// up to [`READ_BUFFER`], each time a read fills it. Allocating (and zeroing) the whole 256 KiB
/// at every dial cost about 14 us a connection (measured with a connection per call: 135 ->
/// 121 us a call).
const FIRST_READ_BUFFER: usize = 32 * 1024;

/// Bytes waiting to be sent past which the reader reads nothing more until the writer has taken
/// them. Every PING (and SETTINGS) the server sends is answered into that buffer, so a server
/// that floods PINGs and never reads our ACKs would otherwise grow it for as long as it sends
/// (measured: 200 MiB in under a second, by a 256 MiB flood). The h2 crate does the same (it
/// reads no frame while a PING ACK cannot be queued). The buffer then holds at most this much
/// plus the answers to one read's frames (the writer as much again, while its write blocks);
/// calls on such a connection end by their deadlines. Calls' own frames only pause the reader
/// while the writer catches up.
const MAX_OUT: usize = 1 << 20;

impl FastConnection {
    /// Speaks HTTP/2 over `io` (after TLS, if any): sends the preface and SETTINGS, and starts
    /// the connection's reader and writer on this thread's `LocalSet`.
    pub async fn handshake<IO>(io: IO) -> Result<FastConnection, Status>
    where
        IO: AsyncRead + AsyncWrite + Unpin + 'static,
    {
        let (mut rd, mut wr) = tokio::io::split(io);
        wr.write_all(&hello()).await.map_err(connection_error)?;
        let (buf, have) = first_settings(&mut rd).await?;
        let conn = FastConnection::new();
        // The writer says so here each time it takes what waits to be sent, and when it ends.
        let room = Rc::new(Notify::new());
        tokio::task::spawn_local(write_loop(
            conn.inner.clone(),
            conn.write.clone(),
            room.clone(),
            wr,
        ));
        tokio::task::spawn_local(read_loop(
            conn.inner.clone(),
            conn.write.clone(),
            room,
            rd,
            buf,
            have,
        ));
        Ok(conn)
    }

    /// Dials `ep` (TCP or Unix socket, TLS when configured) and speaks HTTP/2 on it, all within
    /// its connect timeout: a server that accepts and never sends its SETTINGS would otherwise
    /// hold the dial (and `volley bench`, which dials before its run starts) for ever.
    pub async fn connect(ep: &crate::Endpoint) -> Result<FastConnection, Status> {
        let dial = async {
            let io = crate::connection::dial_io(ep)
                .await
                .map_err(crate::connection::unavailable)?;
            FastConnection::handshake(io).await
        };
        match tokio::time::timeout(ep.connect_timeout, dial).await {
            Ok(Ok(conn)) => {
                if let Some(every) = ep.keepalive {
                    tokio::task::spawn_local(super::keepalive::keepalive(
                        Rc::downgrade(&conn.inner),
                        conn.write.clone(),
                        every,
                    ));
                }
                Ok(conn)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(crate::connection::unavailable(
                crate::connection::ConnectError::Timeout {
                    target: ep.target.to_string(),
                    after: ep.connect_timeout,
                },
            )),
        }
    }
}

fn connection_error(e: impl std::fmt::Display) -> Status {
    Status::unavailable(format!("connection error: {e}"))
}

/// Handshake, step 1: the preface, our SETTINGS (no push, the largest stream window) and the
/// connection window opened as wide.
fn hello() -> Vec<u8> {
    let mut hello = Vec::with_capacity(64);
    hello.extend_from_slice(PREFACE);
    let mut settings = Vec::new();
    for (id, v) in [
        (setting::ENABLE_PUSH, 0),
        (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
    ] {
        settings.extend_from_slice(&id.to_be_bytes());
        settings.extend_from_slice(&v.to_be_bytes());
    }
    write(&mut hello, kind::SETTINGS, 0, 0, &settings);
    write(
        &mut hello,
        kind::WINDOW_UPDATE,
        0,
        0,
        &(MAX_WINDOW - DEFAULT_WINDOW).to_be_bytes(),
    );
    hello
}

/// Handshake, step 2: reads until the server's first frame header is in, and checks that it
/// is SETTINGS: anything else (a TLS alert, an HTTP/1.1 answer) means the server does not speak
/// HTTP/2 here, and the caller takes the h2-crate path, which says why in its own words.
/// Returns the reader's buffer and how much of it is filled (the frame itself is parsed by the
/// reader, with whatever followed it).
async fn first_settings<R: AsyncRead + Unpin>(rd: &mut R) -> Result<(Vec<u8>, usize), Status> {
    let mut buf = vec![0u8; FIRST_READ_BUFFER];
    let mut have = 0;
    while have < FRAME_HEADER_LEN {
        match rd.read(&mut buf[have..]).await {
            Ok(0) | Err(_) => {
                return Err(Status::unavailable(
                    "connection error: no HTTP/2 SETTINGS from the server",
                ));
            }
            Ok(n) => have += n,
        }
    }
    let first = Head::read(&buf[..FRAME_HEADER_LEN]);
    if first.kind != kind::SETTINGS || first.stream != 0 || first.len > MAX_FRAME_IN {
        return Err(Status::unavailable(
            "connection error: the server's first frame is not SETTINGS",
        ));
    }
    Ok((buf, have))
}

/// The writer: what calls appended, sent once per wake; the socket is shut once the connection
/// is closed and its calls are settled. `room` wakes a reader held back by [`MAX_OUT`].
async fn write_loop<W: AsyncWrite>(
    inner: Rc<RefCell<Inner>>,
    notify: Rc<Notify>,
    room: Rc<Notify>,
    mut wr: WriteHalf<W>,
) {
    let mut buf = Vec::with_capacity(FIRST_OUT_BUFFER);
    loop {
        notify.notified().await;
        loop {
            inner.borrow_mut().take_out(&mut buf);
            if buf.is_empty() {
                break;
            }
            room.notify_one();
            if let Err(e) = wr.write_all(&buf).await {
                let mut i = inner.borrow_mut();
                i.close(CallError::Failed(connection_error(e)));
                i.writer_gone();
                room.notify_one();
                return;
            }
            buf.clear();
        }
        if inner.borrow().finished() {
            let _ = wr.shutdown().await;
            inner.borrow_mut().writer_gone();
            room.notify_one();
            return;
        }
    }
}

/// Waits while more than [`MAX_OUT`] bytes wait to be sent; false once the writer has ended
/// (nothing will be sent again, and every call is settled: the reader ends too).
async fn room_to_read(inner: &RefCell<Inner>, room: &Notify) -> bool {
    loop {
        {
            let i = inner.borrow();
            if i.is_writer_gone() {
                return false;
            }
            if i.out_len() <= MAX_OUT {
                return true;
            }
        }
        room.notified().await;
    }
}

/// The reader: frames parsed in place (the handshake's bytes first), calls settled, and the
/// writer woken when there is something to send or the connection is done; no read while more
/// than [`MAX_OUT`] bytes wait to be sent.
async fn read_loop<R: AsyncRead>(
    inner: Rc<RefCell<Inner>>,
    notify: Rc<Notify>,
    room: Rc<Notify>,
    mut rd: ReadHalf<R>,
    mut buf: Vec<u8>,
    mut have: usize,
) {
    loop {
        // Whole frames first (the handshake may have read some already), then a read.
        {
            let mut i = inner.borrow_mut();
            match i.parse(&buf[..have]) {
                Ok(used) => {
                    buf.copy_within(used..have, 0);
                    have -= used;
                }
                Err(s) => {
                    // A connection error, worded and coded as grpc-go's (and the h2-crate
                    // path's) are: UNAVAILABLE, whatever the frame that broke the connection.
                    i.close(CallError::Failed(connection_error(s.message())));
                    notify.notify_one();
                    return;
                }
            }
            i.trim();
            if i.has_out() || i.finished() {
                notify.notify_one();
            }
        }
        if !room_to_read(&inner, &room).await {
            return;
        }
        let n = match rd.read(&mut buf[have..]).await {
            Ok(0) => {
                inner
                    .borrow_mut()
                    .close(CallError::Failed(Status::unavailable(
                        "connection error: the server closed the connection",
                    )));
                return;
            }
            Ok(n) => n,
            Err(e) => {
                inner
                    .borrow_mut()
                    .close(CallError::Failed(connection_error(e)));
                return;
            }
        };
        have += n;
        if have == buf.len() && buf.len() < READ_BUFFER {
            buf.resize((buf.len() * 2).min(READ_BUFFER), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_wire::h2::flag;

    #[test]
    fn hello_is_the_preface_settings_and_a_window_update() {
        let h = hello();
        assert_eq!(&h[..PREFACE.len()], PREFACE);
        let settings = Head::read(&h[PREFACE.len()..]);
        assert_eq!((settings.kind, settings.len), (kind::SETTINGS, 12));
        let at = PREFACE.len() + FRAME_HEADER_LEN + settings.len;
        let update = Head::read(&h[at..]);
        assert_eq!((update.kind, update.stream), (kind::WINDOW_UPDATE, 0));
        let inc = &h[at + FRAME_HEADER_LEN..];
        assert_eq!(
            u32::from_be_bytes([inc[0], inc[1], inc[2], inc[3]]) + DEFAULT_WINDOW,
            MAX_WINDOW
        );
        assert_eq!(settings.flags & flag::ACK, 0);
    }
}
