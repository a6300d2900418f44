//! A child's output read line by line as it comes (so it never blocks on a full pipe), waiting
//! for a line or a condition, and a child spawned with its pipes so.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// Lines from a child's pipe, as they come (read on until the pipe closes, whether or not the
/// receiver is still there).
pub fn lines(pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// The next line containing `what` within `secs`, keeping what was seen in `seen`.
#[track_caller]
pub fn wait_line(rx: &Receiver<String>, what: &str, secs: u64, seen: &mut Vec<String>) -> String {
    next_line(rx, secs, |l| l.contains(what), seen)
        .unwrap_or_else(|| panic!("no line containing {what:?} within {secs} s; saw:\n{}", seen.join("\n")))
}

/// The next line for which `want` holds, if one comes within `secs`; every line read is kept in
/// `seen`.
pub fn next_line(
    rx: &Receiver<String>,
    secs: u64,
    want: impl Fn(&str) -> bool,
    seen: &mut Vec<String>,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let line = rx.recv_timeout(left).ok()?;
        seen.push(line.clone());
        if want(&line) {
            return Some(line);
        }
    }
    None
}

/// Poll `f` every 20 ms until it returns `Some`, or fail after `secs` naming `what`.
#[track_caller]
pub fn poll<T>(secs: u64, what: &str, f: impl FnMut() -> Option<T>) -> T {
    poll_showing(secs, what, f, String::new)
}

/// [`poll`], failing with what `seen` says of the state at that moment as well.
#[track_caller]
pub fn poll_showing<T>(
    secs: u64,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
    seen: impl FnOnce() -> String,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {secs} s waiting for {what}\n{}", seen());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `cmd` spawned with nothing on its stdin and its stdout read line by line (its stderr to
/// nothing).
pub fn spawn_reading(cmd: &mut Command) -> (Child, Receiver<String>) {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let out = lines(child.stdout.take().unwrap());
    (child, out)
}

/// `cmd` spawned with its stdin a pipe, and its stdout and stderr read line by line.
pub fn spawn_piped(cmd: &mut Command) -> (Child, ChildStdin, Receiver<String>, Receiver<String>) {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let (out, err) = (lines(child.stdout.take().unwrap()), lines(child.stderr.take().unwrap()));
    (child, stdin, out, err)
}

/// `cmd` run to its end with `input` on its stdin: its output.
pub fn output_with(cmd: &mut Command, input: &[u8]) -> Output {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}
