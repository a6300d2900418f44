//! Ports and connections on loopback.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::OnceLock;

/// A 127.0.0.1 port free a moment ago, for a server that must be told its port before it starts
/// (a registry, nginx, a replica restarted on the same port).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.2 and up stand for other
/// machines: the server's per-address caps see them apart).
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    let rt = RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap());
    let stream = rt.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((from, 0))).unwrap();
        let stream = socket.connect(to).await.unwrap();
        stream.into_std().unwrap()
    });
    stream.set_nonblocking(false).unwrap();
    stream
}
