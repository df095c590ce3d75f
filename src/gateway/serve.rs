//! Serving: accept connections until the shutdown signal, then stop accepting and let requests
//! in flight (streams included) finish, for at most the grace period; requests still running
//! then are cut off ([`cutoff`](super::cutoff)) and their connections close.
//!
//! While serving, `SIGHUP` reloads the config file (unix) and the Prometheus recorder's upkeep
//! runs every few seconds.

use std::{future::Future, io, sync::Arc, time::Duration};

use axum::middleware;
use http::Request;
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto::Builder,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore, watch},
    task::JoinHandle,
};
use tower::Service;

use super::{
    ConnectionLimits, Gateway,
    conn::{Expiry, Tracked, Watch, Watched},
    cutoff,
};

/// How often histogram samples are folded into the Prometheus distributions between scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);
/// How long connections get to close once their requests were cut off.
const AFTER_CUT: Duration = Duration::from_secs(2);

impl Gateway {
    /// Serves [`Gateway::router`] on `listener` until `shutdown` completes, then shuts down
    /// gracefully: no new connections, requests in flight finish (for at most
    /// [`GatewayBuilder::shutdown_grace`](super::GatewayBuilder::shutdown_grace); after that they
    /// are cut off: 503, or a stream ended with an error), then it returns.
    ///
    /// Every connection gets the [`ConnectionLimits`] of
    /// [`GatewayBuilder::connection_limits`](super::GatewayBuilder::connection_limits): a
    /// header-read and an idle timeout, a cap on connections served at once, a head size limit
    /// and HTTP/2 keep-alive pings.
    ///
    /// [`shutdown_signal`] is the usual `shutdown`: ctrl-c or `SIGTERM`.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let addr = listener.local_addr()?;
        let grace = self.shared.shutdown_grace;
        let (cut_tx, cut_rx) = watch::channel(false);
        let app = self.router().layer(middleware::from_fn(move |req, next| cutoff::race(cut_rx.clone(), req, next)));
        let _tasks = Tasks(vec![self.spawn_upkeep(), self.spawn_sighup()].into_iter().flatten().collect());
        tracing::info!(%addr, "gateway listening");
        let accepting = accept(listener, app, self.shared.limits, self.shared.stopping.subscribe());
        tokio::pin!(accepting);
        tokio::select! {
            () = &mut accepting => {}
            () = shutdown => {}
        }
        // Event streams never end on their own: end them now; connections close gracefully.
        self.shared.stopping.send_replace(true);
        tracing::info!(
            grace_seconds = grace.as_secs_f64(),
            "shutting down: no new connections, finishing requests in flight"
        );
        tokio::select! {
            () = &mut accepting => {
                self.flush_state().await;
                tracing::info!("gateway stopped");
                return Ok(());
            }
            () = tokio::time::sleep(grace) => {}
        }
        tracing::warn!(
            grace_seconds = grace.as_secs_f64(),
            "grace period over: cutting off the requests still in flight"
        );
        let _ = cut_tx.send(true);
        match tokio::time::timeout(AFTER_CUT, accepting).await {
            Ok(()) => {
                self.flush_state().await;
                tracing::info!("gateway stopped");
            }
            Err(_) => tracing::warn!("connections still open after the cut-off; leaving them to the runtime"),
        }
        Ok(())
    }

    /// Lets the state backend's queued bookkeeping (counts, spend) reach it, for at most
    /// [`AFTER_CUT`].
    async fn flush_state(&self) {
        // No probe after this point: its verdict could not be written anyway.
        self.shared.router.stop_health_checks();
        if tokio::time::timeout(AFTER_CUT, self.shared.router.store().flush()).await.is_err() {
            tracing::warn!("state writes still queued at shutdown were dropped");
        }
    }

    fn spawn_upkeep(&self) -> Option<JoinHandle<()>> {
        let handle = self.shared.prometheus.clone()?;
        Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_EVERY);
            loop {
                tick.tick().await;
                handle.run_upkeep();
            }
        }))
    }

    #[cfg(unix)]
    fn spawn_sighup(&self) -> Option<JoinHandle<()>> {
        use tokio::signal::unix::{SignalKind, signal};
        self.shared.config_path.as_ref()?;
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; reload with POST /router/reload");
                return None;
            }
        };
        let gateway = self.clone();
        Some(tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading the config");
                // The outcome is logged and counted by the reload itself.
                let _ = gateway.reload_from_file().await;
            }
        }))
    }

    #[cfg(not(unix))]
    fn spawn_sighup(&self) -> Option<JoinHandle<()>> {
        None
    }
}

/// Accepts connections (at most `limits.max_connections` at once) and serves each in its own
/// task until `stopping` turns true; then closes every connection gracefully and completes when
/// the last one has closed.
async fn accept(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
) {
    let builder = Arc::new(limits.builder());
    let slots = Arc::new(Semaphore::new(limits.max_connections.min(Semaphore::MAX_PERMITS)));
    // Every connection task holds a receiver: when the last one is dropped, all have ended.
    let (closed_tx, closed_rx) = watch::channel(());
    let mut at_cap_logged = false;
    loop {
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                at_cap_logged = false;
                slot
            }
            Err(_) => {
                if !at_cap_logged {
                    tracing::warn!(
                        max_connections = limits.max_connections,
                        "at the connection cap: new connections wait"
                    );
                    at_cap_logged = true;
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    _ = stopping.wait_for(|stop| *stop) => break,
                }
            }
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopping.wait_for(|stop| *stop) => break,
        };
        let tcp = match accepted {
            Ok((tcp, _peer)) => tcp,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                // Out of file descriptors and the like: wait instead of spinning.
                tracing::error!(error = %e, "accepting a connection failed; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        // Streams answer chunk by chunk: do not let Nagle hold them back.
        let _ = tcp.set_nodelay(true);
        tokio::spawn(connection(tcp, app.clone(), builder.clone(), limits, stopping.clone(), slot, closed_rx.clone()));
    }
    drop(closed_rx);
    drop(listener);
    closed_tx.closed().await;
}

/// Serves one connection until it closes, its watchdog fires, or the gateway stops.
async fn connection(
    tcp: TcpStream,
    app: axum::Router,
    builder: Arc<Builder<TokioExecutor>>,
    limits: ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
    _slot: OwnedSemaphorePermit,
    _open: watch::Receiver<()>,
) {
    let watch = Watch::new(&limits);
    let io = TokioIo::new(Watched::new(tcp, watch.clone()));
    let requests = watch.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let in_flight = requests.begin(req.version() == http::Version::HTTP_2);
        let mut app = app.clone();
        async move {
            let resp = app.call(req.map(axum::body::Body::new)).await;
            resp.map(|resp| resp.map(|body| Tracked::new(body, in_flight)))
        }
    });
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    let expired = watch.expired();
    tokio::pin!(expired);
    let mut closing = false;
    loop {
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::trace!(error = %e, "connection ended with an error");
                }
                return;
            }
            why = &mut expired, if !closing => match why {
                Expiry::Idle => {
                    tracing::trace!("closing an idle connection");
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                Expiry::Head => {
                    tracing::debug!(timeout_seconds = limits.header_read_timeout.as_secs_f64(), "dropping a connection whose request head did not arrive in time");
                    return;
                }
            },
            _ = stopping.wait_for(|stop| *stop), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    )
}

/// Background tasks that end with [`Gateway::serve`].
struct Tasks(Vec<JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Completes on ctrl-c, or on `SIGTERM` (unix): what orchestrators send to stop a process.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}
