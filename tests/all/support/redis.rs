//! `redis-server` on a free 127.0.0.1 port, started by a test and killed when it is dropped:
//! the fleet's replay store and the key-value store's Redis backend are tested against it.

use super::free_port;
use super::server::Killed;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `redis-server` on a free 127.0.0.1 port, killed on drop.
pub struct Redis {
    _process: Killed,
    pub port: u16,
    _dir: tempfile::TempDir,
}

fn redis_server_bin() -> PathBuf {
    let bin = std::env::var_os("TOOLHOST_TEST_REDIS_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-server"));
    assert!(
        bin.is_file(),
        "the fleet tests need redis-server at {}: run `cargo xtask test` (it installs Debian's redis-server), \
         `apt-get install redis-server`, or set TOOLHOST_TEST_REDIS_SERVER",
        bin.display()
    );
    bin
}

pub fn redis() -> Redis {
    redis_on(free_port())
}

pub fn redis_on(port: u16) -> Redis {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(redis_server_bin())
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let redis = Redis { _process: Killed(child), port, _dir: dir };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let pong = TcpStream::connect(("127.0.0.1", port)).ok().and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            s.write_all(b"PING\r\n").ok()?;
            let mut buf = [0u8; 7];
            s.read_exact(&mut buf).ok()?;
            Some(buf == *b"+PONG\r\n")
        });
        if pong == Some(true) {
            return redis;
        }
        assert!(Instant::now() < deadline, "redis-server did not answer PING on 127.0.0.1:{port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Redis {
    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `line` sent as an inline command on a connection of its own; the first line of the
    /// answer (`+OK`, `-ERR …`).
    pub fn command(&self, line: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(format!("{line}\r\n").as_bytes()).unwrap();
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n") {
            s.read_exact(&mut byte).unwrap();
            answer.push(byte[0]);
        }
        String::from_utf8_lossy(&answer[..answer.len() - 2]).into_owned()
    }
}
