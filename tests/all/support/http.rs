//! One raw HTTP/1.x client, written once: a request on a fresh connection (or the next answer on
//! a kept-alive one), the response read by its framing (`Content-Length`, chunked, or to the
//! end), a body read as it comes (an event stream), and the JSON messages of a body. And a
//! loopback server for the sites a plugin reaches.

use serde_json::Value;
use std::fmt::Display;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// How long a request waits for its answer before it takes what came.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A response: its status, its head (the status line and the header lines) and its body
/// (decoded if it was chunked).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    /// The value of header `name`.
    pub fn header(&self, name: &str) -> Option<String> {
        header(&self.head, name)
    }

    /// The body as JSON.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}\n{}", self.status, self.head, self.body))
    }

    /// The JSON messages of the body: one plain JSON document, or the `data:` of each event of
    /// an event stream.
    #[track_caller]
    pub fn messages(&self) -> Vec<Value> {
        if self.body.trim_start().starts_with('{') {
            vec![serde_json::from_str(self.body.trim()).unwrap_or_else(|e| panic!("{e}: {:?}", self.body))]
        } else {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        }
    }

    /// The status and the body.
    pub fn status_and_body(self) -> (u16, String) {
        (self.status, self.body)
    }
}

/// The value of header `name` in a response's head.
pub fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    })
}

/// `method path` to `to` (`HOST:PORT`) on a fresh connection, with the header lines `headers`
/// (each ending in CRLF; `Host: HOST:PORT` is added unless they name one), the body's length and
/// `Connection: close`; the answer.
#[track_caller]
pub fn request(to: impl Display, method: &str, path: &str, headers: &str, body: &str) -> Answer {
    send(&to, &request_head(&to, method, path, headers), body)
}

/// [`request`], with a failure to connect, send or read an answer's head as an `Err` (a server
/// may be going away under it).
pub fn try_request(
    to: impl Display,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> io::Result<Answer> {
    try_send(&to, &request_head(&to, method, path, headers), body)
}

/// `GET path` with the extra header lines `extra`: the status and body.
#[track_caller]
pub fn get(to: impl Display, path: &str, extra: &str) -> (u16, String) {
    request(to, "GET", path, extra, "").status_and_body()
}

fn request_head(to: &impl Display, method: &str, path: &str, headers: &str) -> String {
    let names_host = headers.lines().any(|l| l.to_ascii_lowercase().starts_with("host:"));
    let host = if names_host { String::new() } else { format!("Host: {to}\r\n") };
    format!("{method} {path} HTTP/1.1\r\n{host}{headers}")
}

/// One request written as given on a fresh connection to `to` (`head`: the request line and
/// header lines, each ending in CRLF; the body's length and `Connection: close` are added); the
/// answer (what came of its body, if the server stops sending).
#[track_caller]
pub fn send(to: impl Display, head: &str, body: &str) -> Answer {
    try_send(to, head, body).unwrap_or_else(|e| panic!("no answer to {head:?}: {e}"))
}

fn try_send(to: impl Display, head: &str, body: &str) -> io::Result<Answer> {
    let mut s = TcpStream::connect(to.to_string())?;
    s.write_all(
        format!("{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes(),
    )?;
    let mut r = BufReader::new(Deadline { s: &s, until: Instant::now() + READ_TIMEOUT });
    let (status, head) = read_head(&mut r)?;
    let mut body = Vec::new();
    // What came before the server stopped sending is the body (the test says what it wanted).
    let _ = body_reader(&head, r).read_to_end(&mut body);
    Ok(Answer { status, head, body: String::from_utf8_lossy(&body).into_owned() })
}

/// The next answer on a kept-alive connection (a body of known length or chunked); `None` if
/// none came whole within `within`.
pub fn read_answer(s: &mut TcpStream, within: Duration) -> Option<Answer> {
    // Byte by byte: nothing of a later answer is read ahead and lost.
    let mut r = BufReader::with_capacity(1, Deadline { s, until: Instant::now() + within });
    let (status, head) = read_head(&mut r).ok()?;
    let mut body = Vec::new();
    body_reader(&head, r).read_to_end(&mut body).ok()?;
    Some(Answer { status, head, body: String::from_utf8_lossy(&body).into_owned() })
}

/// A response whose body is read as it comes.
pub struct Streamed {
    pub status: u16,
    pub head: String,
    pub body: Box<dyn BufRead + Send>,
}

/// `method path` to `to` with the header lines `headers` and `body` (see [`request`]), its
/// answer's body left to read as it comes (an event stream).
#[track_caller]
pub fn stream(to: impl Display, method: &str, path: &str, headers: &str, body: &str) -> Streamed {
    let head = request_head(&to, method, path, headers);
    let mut s = TcpStream::connect(to.to_string()).unwrap();
    s.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    s.write_all(
        format!("{head}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes(),
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let (status, head) = read_head(&mut r).unwrap_or_else(|e| panic!("no answer to {head:?}: {e}"));
    let body = Box::new(BufReader::new(body_reader(&head, r)));
    Streamed { status, head, body }
}

/// The status line and header lines of a response (without the blank line that ends them).
fn read_head(r: &mut impl BufRead) -> io::Result<(u16, String)> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            if head.is_empty() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed"));
            }
            break;
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
        head.push_str(&line);
    }
    let head = head.trim_end().to_string();
    let status = head
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("no status: {head:?}")))?;
    Ok((status, head))
}

/// The body after `head`, by its framing.
fn body_reader<'a, R: BufRead + Send + 'a>(head: &str, r: R) -> Box<dyn Read + Send + 'a> {
    if header(head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        Box::new(Chunked { r, left: 0, done: false })
    } else if let Some(n) = header(head, "content-length").and_then(|v| v.parse::<u64>().ok()) {
        Box::new(r.take(n))
    } else {
        Box::new(r)
    }
}

/// A chunked body, decoded as it is read.
struct Chunked<R> {
    r: R,
    /// What is left of the chunk being read.
    left: usize,
    done: bool,
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            self.r.read_line(&mut line)?;
            let size = line.split(';').next().unwrap_or_default().trim();
            self.left = usize::from_str_radix(size, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("chunk size {line:?}")))?;
            if self.left == 0 {
                // The trailer, up to its blank line.
                while !matches!(self.r.read_line(&mut String::new())?, 0..=2) {}
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.r.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.left -= n;
        if self.left == 0 {
            self.r.read_exact(&mut [0; 2])?;
        }
        Ok(n)
    }
}

/// A connection read until a deadline: each read waits only for the time left.
struct Deadline<S> {
    s: S,
    until: Instant,
}

impl Read for Deadline<&TcpStream> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.s.set_read_timeout(Some(left))?;
        self.s.read(buf)
    }
}

impl Read for Deadline<&mut TcpStream> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Deadline { s: &*self.s, until: self.until }.read(buf)
    }
}

/// A request a server got: its request line, its head (the header lines, each ending in CRLF)
/// and its body.
pub struct Got {
    /// The server's port.
    pub port: u16,
    pub line: String,
    pub head: String,
    pub body: Vec<u8>,
}

impl Got {
    /// The request's path.
    pub fn path(&self) -> &str {
        self.line.split_whitespace().nth(1).unwrap_or("/")
    }
}

/// An HTTP/1.1 server on a free 127.0.0.1 port, a thread per connection, answering each request
/// with what `answer` writes on the connection (one request per connection, which it leaves to
/// the client to close); its port.
pub fn listen(answer: impl Fn(Got, &mut TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let Some(got) = read_request(&stream) else { return };
                answer(got, &mut stream);
                let _ = stream.flush();
                let _ = stream.read(&mut [0; 1]);
            });
        }
    });
    port
}

/// An HTTP/1.1 server on a free 127.0.0.1 port answering its connections one at a time, in the
/// order they come (a model that answers from a script): `answer` writes the answer to each
/// request; its port.
pub fn listen_in_order(mut answer: impl FnMut(Got, &mut TcpStream) + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let Some(got) = read_request(&stream) else { continue };
            answer(got, &mut stream);
        }
    });
    port
}

/// One request off `stream`, its body read by its `Content-Length`; `None` if none came.
fn read_request(stream: &TcpStream) -> Option<Got> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok().filter(|&n| n > 0)?;
    let mut head = String::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
            break;
        }
        head.push_str(&l);
    }
    // Read whole before answering (closing with some of it unread would reset the connection).
    let length = header(&head, "content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = Vec::new();
    let _ = r.take(length).read_to_end(&mut body);
    let port = stream.local_addr().ok()?.port();
    Some(Got { port, line: line.trim_end().to_string(), head, body })
}

/// Write a whole response: `status` (`200 OK`), the header lines `extra`, the body's length,
/// `Connection: close`, and `body`.
pub fn reply(out: &mut TcpStream, status: &str, extra: &str, body: &[u8]) {
    let head =
        format!("HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(body);
    let _ = out.flush();
}
