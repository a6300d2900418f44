//! The `progress` import: how far a running call has come. A report costs the guest one host
//! call and the host a compare and a swap: the call's latest report is kept in a
//! [`tokio::sync::watch`] slot ([`ProgressCall`]), which the executor's forwarder reads at most
//! every [`MIN_INTERVAL`] and once more when the call ends (see `executor::progress`), so a
//! plugin reporting in a tight loop costs every front end at most ten reports a second, and the
//! last report is never lost. `done` never goes backwards (a lower value is raised to the
//! highest seen), messages are cut at [`MAX_MESSAGE_CHARS`], control characters become spaces,
//! and the plugin's secrets are redacted, as in its log lines. With nobody listening (no front
//! end asked for progress and no observer), a report is counted and dropped.

use crate::capability::net::NetGrant;
use serde::Serialize;
use std::time::Duration;
use tokio::sync::watch;

/// The longest progress message kept (characters); the rest is cut and marked with `…`.
pub const MAX_MESSAGE_CHARS: usize = 200;

/// The shortest time between two reports forwarded for one call (so at most ten a second).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// One progress report of a running call, as the host forwards it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Units of work done; never lower than in an earlier report of the same call.
    pub done: u64,
    /// Units of work in all, when the plugin knows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A short line for the person waiting (may be empty).
    pub message: String,
}

impl Progress {
    /// `done / total` in `0.0..=1.0`, when the total is known and not zero.
    pub fn fraction(&self) -> Option<f64> {
        self.total.filter(|t| *t > 0).map(|t| (self.done as f64 / t as f64).min(1.0))
    }
}

impl std::fmt::Display for Progress {
    /// `3/10 hashing` or `3 hashing` (no total).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.total {
            Some(t) => write!(f, "{}/{t}", self.done)?,
            None => write!(f, "{}", self.done)?,
        }
        if !self.message.is_empty() {
            write!(f, " {}", self.message)?;
        }
        Ok(())
    }
}

/// The progress side of one call's store.
#[derive(Debug)]
pub struct ProgressCall {
    /// Where the latest report goes; `None`: nobody listens.
    latest: Option<watch::Sender<Option<Progress>>>,
    /// The highest `done` reported so far.
    done: u64,
    /// Reports the plugin made (forwarded or not).
    pub reports: u64,
}

impl ProgressCall {
    /// A call whose reports nobody reads.
    pub fn none() -> Self {
        ProgressCall { latest: None, done: 0, reports: 0 }
    }

    /// A call whose reports go to the returned receiver (the latest one only).
    pub fn watched() -> (Self, watch::Receiver<Option<Progress>>) {
        let (tx, rx) = watch::channel(None);
        (ProgressCall { latest: Some(tx), done: 0, reports: 0 }, rx)
    }

    /// The guest's `progress(done, total, message)`, with the secret values of `redact` (the
    /// plugin's) redacted from the message.
    pub fn report(&mut self, done: u64, total: Option<u64>, message: String, redact: &NetGrant) {
        self.reports += 1;
        let Some(latest) = &self.latest else { return };
        self.done = self.done.max(done);
        let message = clean(&message);
        let message = crate::capability::net::redact_owned(message, redact);
        latest.send_replace(Some(Progress { done: self.done, total, message }));
    }
}

/// `message` on one line, cut at [`MAX_MESSAGE_CHARS`].
fn clean(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS * 4));
    for (i, c) in message.chars().enumerate() {
        if i == MAX_MESSAGE_CHARS {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

/// The progress capability: a call's latest report (see the module docs). Its `progress`
/// function is half of the `host` interface, linked with `log`'s (`capability::log`).
pub struct ProgressCap;

impl crate::capability::Capability for ProgressCap {
    type Grant = ();
    type Call = ProgressCall;

    fn effective(_: &crate::capability::GrantContext<'_>) -> ((), Vec<crate::capability::Missing>) {
        ((), Vec::new())
    }

    /// Not watched: the executor watches a call's progress only when someone follows it.
    fn prepare(_: &(), _: &crate::capability::CallSetup<'_>) -> ProgressCall {
        ProgressCall::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_keep_done_monotonic_and_messages_short() {
        let (mut call, rx) = ProgressCall::watched();
        let none = NetGrant::default();
        call.report(5, Some(10), "half".into(), &none);
        call.report(3, Some(10), "back?\nno".into(), &none);
        let p = rx.borrow().clone().unwrap();
        assert_eq!(p, Progress { done: 5, total: Some(10), message: "back? no".into() });
        call.report(7, None, "x".repeat(1000), &none);
        let p = rx.borrow().clone().unwrap();
        assert_eq!(p.message.chars().count(), MAX_MESSAGE_CHARS + 1, "cut and marked");
        assert!(p.message.ends_with('…'));
        assert_eq!(call.reports, 3);
        assert_eq!(p.to_string().len(), p.message.len() + 2);
    }

    #[test]
    fn unwatched_reports_are_counted_and_dropped() {
        let mut call = ProgressCall::none();
        call.report(1, None, "x".into(), &NetGrant::default());
        assert_eq!((call.reports, call.done), (1, 0));
    }

    #[test]
    fn fraction_needs_a_total() {
        let p = |done, total| Progress { done, total, message: String::new() };
        assert_eq!(p(5, Some(10)).fraction(), Some(0.5));
        assert_eq!(p(5, None).fraction(), None);
        assert_eq!(p(5, Some(0)).fraction(), None);
        assert_eq!(p(50, Some(10)).fraction(), Some(1.0));
    }
}
