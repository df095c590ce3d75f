//! [`FaultyListener`]: the profile's connection faults, in front of the server.

use std::{
    io,
    net::SocketAddr,
    sync::{Arc, atomic::Ordering},
};

use rand::{Rng, SeedableRng, rngs::SmallRng};

use super::server::MockState;

/// The listener in front of the server: applies the profile's connection faults (reset, no
/// response) and hands every other connection to axum.
pub(super) struct FaultyListener {
    inner: tokio::net::TcpListener,
    shared: Arc<MockState>,
    connections: u64,
}

impl FaultyListener {
    pub(super) fn new(inner: tokio::net::TcpListener, shared: Arc<MockState>) -> Self {
        Self { inner, shared, connections: 0 }
    }
}

impl axum::serve::Listener for FaultyListener {
    type Io = tokio::net::TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (stream, addr) = axum::serve::Listener::accept(&mut self.inner).await;
            let n = self.connections;
            self.connections += 1;
            let profile = self.shared.profile.read().clone();
            if profile.reset_rate == 0.0 && profile.silent_rate == 0.0 {
                return (stream, addr);
            }
            let mut rng = SmallRng::seed_from_u64(!profile.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let reset = rng.random_bool(profile.reset_rate);
            let silent = rng.random_bool(profile.silent_rate);
            if !(reset || silent) {
                return (stream, addr);
            }
            self.shared.counters.connection_faults.fetch_add(1, Ordering::Relaxed);
            let mut shutdown = self.shared.shutdown.clone();
            tokio::spawn(async move {
                if reset {
                    // Closing a socket with unread data makes the kernel answer with a reset
                    // (RST) instead of an orderly close: wait for the request (peeking leaves it
                    // unread), read none of it.
                    let mut first = [0u8; 1];
                    tokio::select! {
                        _ = stream.peek(&mut first) => {}
                        _ = shutdown.wait_for(|down| *down) => {}
                    }
                    drop(stream);
                } else {
                    let _ = shutdown.wait_for(|down| *down).await;
                    drop(stream);
                }
            });
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::{Read, Write},
        time::Duration,
    };

    use super::*;
    use crate::mock::{MockProfile, MockUpstream};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reset_profile_resets_the_connection_before_any_answer() {
        let profile = MockProfile::builder().reset(1.0).build().expect("valid profile");
        let mock = MockUpstream::start(profile).expect("mock upstream");
        let addr = mock.addr();
        let read = tokio::task::spawn_blocking(move || {
            let mut sock = std::net::TcpStream::connect(addr)?;
            sock.set_read_timeout(Some(Duration::from_secs(20)))?;
            sock.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-length: 2\r\n\r\n{}")?;
            let mut answer = Vec::new();
            sock.read_to_end(&mut answer).map(|_| answer)
        });
        let err = read.await.expect("reader").expect_err("a reset, not an answer");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
        assert_eq!(mock.stats().connection_faults, 1);
        assert_eq!(mock.requests(), 0, "no request was read");
    }
}
