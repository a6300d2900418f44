//! What a front end hands the executor to steer one call beyond its arguments ([`CallControl`]):
//! a way to cancel it ([`Cancel`]) and where its progress goes ([`ProgressSink`]); and the
//! forwarder that carries a call's progress from its store to the sink and the observer, at
//! most every [`MIN_INTERVAL`], the last report always.
//!
//! Cancelling drops the call's future: a guest running wasm is stopped at its next epoch
//! yield (every two ticks, 10 ms), a program it runs is killed with its process group (the
//! `process` capability kills the group when its run is dropped), an HTTP request in flight is
//! aborted (reqwest stops when its future is dropped), and a call waiting for a slot or for a
//! danger confirmation stops waiting. The outcome is [`ErrorKind::Cancelled`].
//!
//! A front end whose client can go away without cancelling (an HTTP connection closed while
//! its call waits) says so with [`CallControl::gone`]: a call still waiting for a slot is
//! then dropped before it runs, its arguments freed; one already running goes on.

use super::{ErrorKind, Outcome};
use crate::capability::progress::{MIN_INTERVAL, Progress};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Where a call's progress goes: a front end's way of showing it (an MCP progress
/// notification, a terminal bar, a JSON line). Called with coalesced reports, in order, one at
/// a time; the call runs on while a report is being delivered.
pub trait ProgressSink: Send + Sync {
    fn report<'a>(&'a self, progress: &'a Progress) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
}

/// A plain function as a [`ProgressSink`] (for sinks that need no waiting).
impl<F: Fn(&Progress) + Send + Sync> ProgressSink for F {
    fn report<'a>(&'a self, progress: &'a Progress) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        self(progress);
        Box::pin(std::future::ready(()))
    }
}

/// Cancels one call (or several: clones share it), saying who did.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    token: CancellationToken,
    by: Arc<OnceLock<String>>,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// A `Cancel` that fires with `token` (e.g. the one rmcp gives each request), blaming `by`
    /// unless [`Cancel::cancel`] names someone else first.
    pub fn from_token(token: CancellationToken, by: impl Into<String>) -> Cancel {
        let c = Cancel { token, by: Arc::default() };
        let _ = c.by.set(by.into());
        c
    }

    /// Cancel the call; `by` says who (`the client`, `Ctrl-C`, `a shutdown`). The first
    /// reason given is kept.
    pub fn cancel(&self, by: impl Into<String>) {
        let _ = self.by.set(by.into());
        self.token.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes once the call is cancelled.
    pub async fn cancelled(&self) {
        self.token.cancelled().await
    }

    /// Who cancelled (`someone`, if nobody said).
    pub fn by(&self) -> &str {
        self.by.get().map(String::as_str).unwrap_or("someone")
    }

    /// The token underneath (to tie it to other cancellations).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The outcome of a call dropped while it waited for a slot because this fired (its
    /// client went away): it never ran.
    pub fn gone_outcome(&self, tool: &str, waited_ms: u128) -> Outcome {
        Outcome::err(
            ErrorKind::Cancelled,
            format!(
                "call to `{tool}` was dropped after waiting {waited_ms} ms for a free slot: {} went away; it did not run",
                self.by()
            ),
        )
    }

    /// The outcome of a call this cancelled.
    pub fn outcome(&self, tool: &str, ran_ms: u128) -> Outcome {
        Outcome::err(
            ErrorKind::Cancelled,
            format!(
                "call to `{tool}` was cancelled by {} after {ran_ms} ms; it may have partly run",
                self.by()
            ),
        )
    }
}

/// How a front end steers one call: cancel it, follow its progress. The default does neither.
#[derive(Clone, Default)]
pub struct CallControl {
    pub cancel: Option<Cancel>,
    /// Fires when the call's client is gone (its connection closed): a call still waiting for
    /// a slot is dropped then (its outcome [`Cancel::gone_outcome`]), one running goes on.
    pub gone: Option<Cancel>,
    pub progress: Option<Arc<dyn ProgressSink>>,
}

impl std::fmt::Debug for CallControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallControl")
            .field("cancel", &self.cancel)
            .field("gone", &self.gone)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl CallControl {
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }

    pub fn with_gone(mut self, gone: Option<Cancel>) -> Self {
        self.gone = gone;
        self
    }

    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    pub fn with_progress_opt(mut self, sink: Option<Arc<dyn ProgressSink>>) -> Self {
        self.progress = sink;
        self
    }
}

/// Carries one call's reports from its store's slot to `deliver`: at once for the first, then
/// at most every [`MIN_INTERVAL`]; [`Forwarder::finish`] delivers the last one if it has not
/// gone yet, so the final report always arrives, and before the call's outcome.
pub(crate) struct Forwarder<D> {
    rx: watch::Receiver<Option<Progress>>,
    deliver: D,
    /// The last report delivered whole (a delivery cut short by the call's end does not count).
    sent: Mutex<Option<Progress>>,
}

impl<D, F> Forwarder<D>
where
    D: Fn(Progress) -> F,
    F: Future<Output = ()>,
{
    pub(crate) fn new(rx: watch::Receiver<Option<Progress>>, deliver: D) -> Self {
        Forwarder { rx, deliver, sent: Mutex::new(None) }
    }

    /// Forward reports until `ended` fires (the call has ended). A delivery under way is
    /// never cut short (a notification half sent could be lost, and with it the last report):
    /// only the waits between deliveries end early.
    pub(crate) async fn run_until(&self, ended: &CancellationToken) {
        let mut rx = self.rx.clone();
        loop {
            tokio::select! {
                biased;
                () = ended.cancelled() => return,
                changed = rx.changed() => if changed.is_err() { return ended.cancelled().await },
            }
            let latest = rx.borrow_and_update().clone();
            if let Some(p) = latest {
                self.send(p).await;
                tokio::select! {
                    () = ended.cancelled() => return,
                    () = tokio::time::sleep(MIN_INTERVAL) => {}
                }
            }
        }
    }

    /// Run `call` while forwarding its reports, then deliver the last one if it has not gone:
    /// the call's result comes after every report.
    pub(crate) async fn around<T>(&self, call: impl Future<Output = T>) -> T {
        let ended = CancellationToken::new();
        let call = async {
            let r = call.await;
            ended.cancel();
            r
        };
        let (r, ()) = tokio::join!(call, self.run_until(&ended));
        self.finish().await;
        r
    }

    /// Deliver the latest report if it has not been delivered (the call has ended).
    async fn finish(&self) {
        let latest = self.rx.borrow().clone();
        if let Some(p) = latest {
            let done = self.sent.lock().unwrap_or_else(|e| e.into_inner()).as_ref() == Some(&p);
            if !done {
                self.send(p).await;
            }
        }
    }

    async fn send(&self, p: Progress) {
        (self.deliver)(p.clone()).await;
        *self.sent.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::progress::ProgressCall;

    #[tokio::test]
    async fn a_flood_is_coalesced_and_the_last_report_always_arrives() {
        let started = std::time::Instant::now();
        let (mut call, rx) = ProgressCall::watched();
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let fwd = Forwarder::new(rx, move |p: Progress| {
            g.lock().unwrap().push(p.done);
            std::future::ready(())
        });
        let guest = async {
            // A report every millisecond, for a while.
            for i in 1..=300 {
                call.report(i, Some(300), String::new(), &Default::default());
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        };
        fwd.around(guest).await;
        let got = got.lock().unwrap().clone();
        let most = started.elapsed().as_secs_f64() * 10.0 + 2.0;
        assert!((got.len() as f64) <= most, "at most ten a second (and the last), got {}", got.len());
        assert!(got.len() >= 2, "the first at once, then more: {got:?}");
        assert_eq!(got.last(), Some(&300), "the last report always arrives: {got:?}");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "in order: {got:?}");
        // Nothing new: nothing more is sent.
        fwd.finish().await;
        assert_eq!(fwd.sent.lock().unwrap().as_ref().map(|p| p.done), Some(300));
    }

    #[test]
    fn cancel_keeps_the_first_reason() {
        let c = Cancel::from_token(CancellationToken::new(), "the client");
        assert!(!c.is_cancelled());
        c.cancel("Ctrl-C");
        assert!(c.is_cancelled());
        assert_eq!(c.by(), "the client");
        let o = c.outcome("nap", 12);
        assert_eq!(o.kind, Some(ErrorKind::Cancelled));
        assert!(o.error.unwrap().contains("cancelled by the client after 12 ms"));
        let d = Cancel::new();
        d.cancel("Ctrl-C");
        assert_eq!(d.by(), "Ctrl-C");
    }
}
