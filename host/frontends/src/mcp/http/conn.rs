//! Connections: caps in all and per address, the `503` of a refused one, request bodies due by a
//! deadline, the drain's last steps (new connections stopped before the port closes) and the
//! answers still on their way.

use super::Body;
use super::requests::RETRY_AFTER_S;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Open connections, in all and per peer address, against [`HttpLimits`]'s caps.
///
/// [`HttpLimits`]: crate::service::HttpLimits
#[derive(Debug)]
pub(super) struct Connections {
    max_total: usize,
    max_per_peer: usize,
    open: std::sync::Mutex<(usize, std::collections::HashMap<std::net::IpAddr, usize>)>,
}

/// One admitted connection; dropping it frees its place.
pub(super) struct Admitted {
    connections: Arc<Connections>,
    peer: std::net::IpAddr,
}

impl Connections {
    pub(super) fn new(limits: &crate::service::HttpLimits) -> Arc<Connections> {
        Arc::new(Connections {
            max_total: limits.max_connections,
            max_per_peer: limits.max_connections_per_peer,
            open: Default::default(),
        })
    }

    /// A place for a connection from `peer`, or `None` when a cap is reached.
    pub(super) fn admit(self: &Arc<Self>, peer: std::net::IpAddr) -> Option<Admitted> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let from_peer = open.1.get(&peer).copied().unwrap_or(0);
        if open.0 >= self.max_total || from_peer >= self.max_per_peer {
            return None;
        }
        open.0 += 1;
        open.1.insert(peer, from_peer + 1);
        Some(Admitted { connections: self.clone(), peer })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|p| p.into_inner());
        open.0 -= 1;
        if let Some(n) = open.1.get_mut(&self.peer) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.peer);
            }
        }
    }
}

/// Raise this process's open-file limit to its hard limit (a server holds a descriptor per
/// connection, per open plugin file and per granted directory), and return the soft limit now
/// in force, if known.
pub(super) fn raise_fd_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let lim = getrlimit(Resource::Nofile);
        if let (Some(cur), max) = (lim.current, lim.maximum)
            && max.is_none_or(|m| m > cur)
        {
            let want = max.unwrap_or(1 << 20).min(1 << 20);
            if setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: max }).is_ok() {
                return Some(want);
            }
        }
        lim.current
    }
    #[cfg(not(unix))]
    None
}

/// Descriptors kept back from connections for everything else the server opens.
pub(super) const FD_RESERVE: u64 = 256;

/// Refused connections being answered at once; past this many they are simply closed.
pub(super) const MAX_REFUSING: usize = 64;

/// Answer a connection over a cap with `503` and close it, without reading its request.
pub(super) fn refuse_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    refusing: Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    tracing::warn!(
        "HTTP connection from {peer} refused: too many open connections ([serve] max_connections, max_connections_per_peer)"
    );
    if refusing.fetch_add(1, Ordering::Relaxed) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        const BODY: &str = "too many connections: retry later\n";
        let resp = format!(
            "HTTP/1.1 503 Service Unavailable\r\nRetry-After: {RETRY_AFTER_S}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
            BODY.len()
        );
        let mut stream = stream;
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(resp.as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
        refusing.fetch_sub(1, Ordering::Relaxed);
    });
}

/// A request body that must arrive in full by a deadline (a client sending its body a byte at
/// a time holds a connection and a task for as long as it likes otherwise).
pub(super) struct DeadlineBody {
    inner: hyper::body::Incoming,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    timeout: Duration,
}

impl DeadlineBody {
    /// `inner`, due in full within `timeout` from now.
    pub(super) fn new(inner: hyper::body::Incoming, timeout: Duration) -> DeadlineBody {
        DeadlineBody { inner, deadline: Box::pin(tokio::time::sleep(timeout)), timeout }
    }
}

impl hyper::body::Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = String;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, String>>> {
        use std::task::Poll;
        match std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(|e| e.to_string()))),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(format!(
                    "the request body did not arrive within {} ms ([serve] body_timeout_ms)",
                    self.timeout.as_millis()
                )))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// How long, after the last call, connections get to deliver their final responses.
pub(super) const FLUSH_WAIT: Duration = Duration::from_secs(2);
/// Once drained, the port closes after no connection has come for this long…
pub(super) const CLOSE_QUIET: Duration = Duration::from_millis(50);
/// …or at the latest after this.
pub(super) const CLOSE_MAX: Duration = Duration::from_secs(1);

/// The drain's last step, before the port closes. Closing a listening socket resets the
/// connections the kernel has accepted that the server has not yet taken: a load balancer that
/// had already sent a request on one sees it fail after sending, and must not replay it (it
/// cannot know the request was never read), so the client would get a `502` for a call that
/// never ran. So first new connections are stopped: a socket filter (classic BPF) drops the
/// SYN of every new connection reaching the listening socket — it goes unanswered, and its
/// retransmission, after the port has closed, is refused (a balancer passes a refused
/// connection to the next replica: nothing was sent) — while the handshakes under way complete.
/// The server then takes and serves (`503`, draining) what is queued, and closes the port once
/// nothing more arrives for [`CLOSE_QUIET`].
pub(super) fn stop_new_connections(listener: &tokio::net::TcpListener) {
    #[cfg(target_os = "linux")]
    if let Err(e) = socket2::SockRef::from(listener).attach_filter(&DROP_SYN) {
        tracing::debug!("could not stop new connections before closing the port: {e}");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = listener;
}

/// A TCP socket's filter sees the segment from its TCP header on: load the flags (byte 13),
/// drop a segment with SYN set, keep the rest.
#[cfg(target_os = "linux")]
const DROP_SYN: [socket2::SockFilter; 4] = {
    const LD_B_ABS: u16 = 0x30;
    const JMP_JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const SYN: u32 = 0x02;
    [
        socket2::SockFilter::new(LD_B_ABS, 0, 0, 13),
        socket2::SockFilter::new(JMP_JSET_K, 0, 1, SYN),
        socket2::SockFilter::new(RET_K, 0, 0, 0),
        socket2::SockFilter::new(RET_K, 0, 0, u32::MAX),
    ]
};

/// MCP `POST`s whose response has not been sent in full, counted from the request on. A call
/// that finishes during the drain has its answer still on the way through rmcp to the client
/// when the drain sees no call in flight: sessions are ended only once these are done (or after
/// [`FLUSH_WAIT`]) — ending them first would turn a 2026-07-28 stateless call's answer into a 500.
#[derive(Clone, Default)]
pub(super) struct OpenAnswers(Arc<(std::sync::atomic::AtomicUsize, tokio::sync::Notify)>);

/// Held by a response body until hyper has sent it (or dropped it).
pub(super) struct OpenAnswer(OpenAnswers);

impl Drop for OpenAnswer {
    fn drop(&mut self) {
        let (count, notify) = &*self.0.0;
        if count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            notify.notify_waiters();
        }
    }
}

impl OpenAnswers {
    /// One more answer on its way, counted from before rmcp handles the request: a 2026-07-28
    /// stateless request has no response at all until its handler's first message.
    pub(super) fn open(&self) -> OpenAnswer {
        self.0.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        OpenAnswer(self.clone())
    }

    /// `resp`, still counted (by `open`) until its body is done.
    pub(super) fn track(open: OpenAnswer, resp: hyper::Response<Body>) -> hyper::Response<Body> {
        held_by_body(resp, open)
    }

    /// Until no tracked response is open.
    pub(super) async fn idle(&self) {
        let (count, notify) = &*self.0;
        loop {
            let notified = notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// `resp`, whose body holds `held` until hyper is done with it (sent or dropped).
pub(super) fn held_by_body<T: Send + Sync + 'static>(
    resp: hyper::Response<Body>,
    held: T,
) -> hyper::Response<Body> {
    use http_body_util::BodyExt;
    resp.map(move |body| {
        body.map_frame(move |frame| {
            let _held = &held;
            frame
        })
        .boxed()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[tokio::test]
    pub(super) async fn once_new_connections_are_stopped_queued_ones_are_still_served() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut queued = tokio::net::TcpStream::connect(addr).await.unwrap();
        queued.write_all(b"ping").await.unwrap();
        stop_new_connections(&listener);
        // A new connection's SYN goes unanswered…
        let late =
            tokio::time::timeout(Duration::from_millis(300), tokio::net::TcpStream::connect(addr)).await;
        assert!(late.is_err(), "a new connection was accepted: {late:?}");
        // …while the one the kernel had queued is taken and its bytes read.
        let (mut served, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4];
        served.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        served.write_all(b"pong").await.unwrap();
        queued.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    }
}
