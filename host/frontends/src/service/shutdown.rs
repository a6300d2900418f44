//! Graceful shutdown: what `serve` does between a SIGTERM (or SIGINT, or over stdio the end of
//! stdin) and its exit.
//!
//! 1. **Draining**: no new call is admitted (the executor answers `unavailable`) and `/readyz`
//!    says not ready, while the calls in flight go on. Over HTTP a new session and a new
//!    stateless call get `503` with `Retry-After` before any MCP handling, but everything of an
//!    existing session (its GET stream, notifications, a new call answered `unavailable`, its
//!    DELETE) and stateless requests that are not calls are served: the official clients end
//!    the whole session on a `503`, and with it the answers they wait for.
//! 2. When the last one finishes, or at the grace period (`[serve] shutdown_grace_ms`),
//!    **cancelling**: each call still running is stopped (its sandbox dropped, its programs
//!    killed, its requests aborted) and ends at once with a `cancelled` outcome that its client
//!    receives as the answer; MCP tasks still running end `cancelled` the same way.
//! 3. The front end sends those answers and closes; `serve` syncs the audit file and exits 0.
//!
//! A second signal during all this exits at once (status 130 for SIGINT, 143 for SIGTERM).

/// `eprintln!` for what `serve` tells its operator, except that a line that cannot be written
/// (stderr closed, its reader gone) is dropped: `eprintln!` would panic — in a drain, with
/// calls in flight whose answers are still to be written.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        // One write per line: stderr is unbuffered, and a line written in pieces can be split
        // by another thread's log line.
        let line = format!("{}\n", format_args!($($arg)*));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }};
}

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// How long cancelled calls get to hand back their outcome before the front end closes.
const CANCEL_WAIT: Duration = Duration::from_secs(5);

/// Where the process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Serving,
    /// No new calls; calls in flight go on.
    Draining,
    /// The grace period is over: calls still running are being cancelled.
    Cancelling,
    /// Every call has its outcome.
    Drained,
}

/// The shutdown state and the calls in flight.
#[derive(Debug)]
pub struct Lifecycle {
    phase: watch::Sender<Phase>,
    /// Calls admitted and not yet ended (plus, for an instant, one being refused).
    in_flight: AtomicUsize,
    /// `false` from the drain's start: [`Lifecycle::admit`] refuses. Atomics, not the `phase`
    /// channel: a call pays two atomic operations to be admitted and ended, where a channel's
    /// send takes its locks and wakes its receivers each time.
    admitting: AtomicBool,
    /// Woken when the last call in flight ends once admitting has stopped.
    idle: tokio::sync::Notify,
    ready: AtomicBool,
    grace: Duration,
}

/// Holds one admitted call in the in-flight count until dropped.
#[derive(Debug)]
pub struct Ticket<'a>(&'a Lifecycle);

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// What a drain did, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    /// Calls in flight when the shutdown began.
    pub in_flight: usize,
    /// Of those, cancelled at the end of the grace period.
    pub cancelled: usize,
}

impl Lifecycle {
    pub fn new(grace: Duration) -> Lifecycle {
        Lifecycle {
            phase: watch::Sender::new(Phase::Serving),
            in_flight: AtomicUsize::new(0),
            admitting: AtomicBool::new(true),
            idle: tokio::sync::Notify::new(),
            ready: AtomicBool::new(false),
            grace,
        }
    }

    pub fn grace(&self) -> Duration {
        self.grace
    }

    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// The registry is loaded and the front end is up.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::SeqCst);
    }

    /// `/readyz`: loaded, and not shutting down.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && self.phase() == Phase::Serving
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Admit a call, unless shutting down.
    pub fn admit(&self) -> Option<Ticket<'_>> {
        // Counted, then checked, both `SeqCst` (as `stop_admitting` stops, then counts): either
        // this sees the drain and takes its count back, or the drain's count includes this call.
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if !self.admitting.load(Ordering::SeqCst) {
            self.release();
            return None;
        }
        Some(Ticket(self))
    }

    /// One call (admitted, or being refused) has ended: wake a drain waiting for the last.
    fn release(&self) {
        let before = self.in_flight.fetch_sub(1, Ordering::SeqCst);
        // Admitting stopped before this: the drain may wait (see `all_ended`).
        if before == 1 && !self.admitting.load(Ordering::SeqCst) {
            self.idle.notify_waiters();
        }
    }

    /// Completes when no call is in flight (meant for after admitting has stopped).
    async fn all_ended(&self) {
        loop {
            let woken = self.idle.notified();
            let mut woken = std::pin::pin!(woken);
            // Registered before the count is read: a last call ending after the read wakes it.
            woken.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            woken.await;
        }
    }

    /// Completes when calls still running must give up (the grace period is over).
    pub async fn cancelled(&self) {
        let mut rx = self.phase.subscribe();
        let _ = rx.wait_for(|p| *p >= Phase::Cancelling).await;
    }

    /// Completes when the shutdown begins (no new calls are admitted): long-lived streams such
    /// as the console's activity feed end then, so they do not hold the drain.
    pub async fn stopping(&self) {
        let mut rx = self.phase.subscribe();
        let _ = rx.wait_for(|p| *p >= Phase::Draining).await;
    }

    /// Completes when the drain is over.
    pub async fn drained(&self) {
        let mut rx = self.phase.subscribe();
        let _ = rx.wait_for(|p| *p == Phase::Drained).await;
    }

    /// Stop admitting calls (the first step of [`Lifecycle::drain`], which may come later);
    /// returns the calls in flight now.
    pub fn stop_admitting(&self) -> usize {
        self.admitting.store(false, Ordering::SeqCst);
        self.phase.send_if_modified(|p| {
            let was = *p;
            *p = (*p).max(Phase::Draining);
            was != *p
        });
        self.in_flight()
    }

    /// Stop admitting calls, wait up to the grace period for those in flight, cancel the rest
    /// and wait (briefly) for them to hand back their outcomes.
    pub async fn drain(&self) -> Drained {
        let count = self.stop_admitting();
        let mut cancelled = 0;
        if tokio::time::timeout(self.grace, self.all_ended()).await.is_err() {
            cancelled = self.in_flight();
            self.phase.send_if_modified(|p| {
                let was = *p;
                *p = (*p).max(Phase::Cancelling);
                was != *p
            });
            let _ = tokio::time::timeout(CANCEL_WAIT, self.all_ended()).await;
        }
        self.phase.send_replace(Phase::Drained);
        Drained { in_flight: count, cancelled }
    }
}

/// SIGTERM and SIGINT, as a process manager or a person at the terminal sends them.
#[derive(Debug)]
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Install the handlers (from now on the signals no longer kill the process by default).
    pub fn install() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals { term: signal(SignalKind::terminate())?, int: signal(SignalKind::interrupt())? })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next signal: its name and the exit status a process killed by it would have.
    pub async fn recv(&mut self) -> (&'static str, u8) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => ("SIGTERM", 143),
                _ = self.int.recv() => ("SIGINT", 130),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            ("Ctrl-C", 130)
        }
    }

    /// After the first signal: a second one ends the process at once, with `on_exit` run first
    /// (it syncs the audit file).
    pub fn exit_on_next(mut self, on_exit: impl FnOnce() + Send + 'static) {
        tokio::spawn(async move {
            let (name, status) = self.recv().await;
            crate::say!("toolhost: {name} again: exiting now, without waiting for calls in flight");
            on_exit();
            std::process::exit(i32::from(status));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_drain_waits_for_calls_then_cancels_what_is_left() {
        let l = std::sync::Arc::new(Lifecycle::new(Duration::from_millis(200)));
        l.set_ready();
        assert!(l.is_ready());
        let quick = l.admit().unwrap();
        let slow = l.admit().unwrap();
        assert_eq!(l.in_flight(), 2);
        let l2 = l.clone();
        let drain = tokio::spawn(async move { l2.drain().await });
        // Draining: not ready, nothing new admitted, calls in flight go on.
        let mut phase = l.phase.subscribe();
        phase.wait_for(|p| *p == Phase::Draining).await.unwrap();
        assert!(!l.is_ready());
        assert!(l.admit().is_none());
        assert_eq!(l.in_flight(), 2, "a refused call is not counted, nor uncounts another");
        drop(quick);
        // The slow one is told to give up at the end of the grace period, and does.
        let started = std::time::Instant::now();
        l.cancelled().await;
        assert!(started.elapsed() >= Duration::from_millis(150), "{:?}", started.elapsed());
        drop(slow);
        assert_eq!(drain.await.unwrap(), Drained { in_flight: 2, cancelled: 1 });
        assert_eq!(l.phase(), Phase::Drained);
    }

    #[tokio::test]
    async fn a_drain_ends_when_its_last_call_does_not_at_the_grace_period() {
        let l = std::sync::Arc::new(Lifecycle::new(Duration::from_secs(60)));
        let call = l.admit().unwrap();
        let l2 = l.clone();
        let drain = tokio::spawn(async move { l2.drain().await });
        l.phase.subscribe().wait_for(|p| *p == Phase::Draining).await.unwrap();
        // A refused call passing through the count does not end the drain early.
        assert!(l.admit().is_none());
        tokio::task::yield_now().await;
        assert!(!drain.is_finished(), "the drain ended with a call in flight");
        drop(call);
        let drained = tokio::time::timeout(Duration::from_secs(5), drain).await;
        let drained = drained.expect("the drain was not woken by the last call's end").unwrap();
        assert_eq!(drained, Drained { in_flight: 1, cancelled: 0 });
    }

    #[tokio::test]
    async fn an_idle_drain_ends_at_once() {
        let l = Lifecycle::new(Duration::from_secs(60));
        let started = std::time::Instant::now();
        assert_eq!(l.drain().await, Drained { in_flight: 0, cancelled: 0 });
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
