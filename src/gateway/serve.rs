//! Serving: accept connections until the shutdown signal, then stop accepting and let requests
//! in flight (streams included) finish, for at most the grace period; requests still running
//! then are cut off ([`cutoff`](super::cutoff)) and their connections close.
//!
//! While serving, `SIGHUP` reloads the config file (unix) and the Prometheus recorder's upkeep
//! runs every few seconds.

use std::{
    future::{Future, IntoFuture},
    io,
    time::Duration,
};

use axum::{middleware, serve::ListenerExt};
use tokio::{
    net::TcpListener,
    sync::{oneshot, watch},
    task::JoinHandle,
};

use super::{Gateway, cutoff};

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
    /// [`shutdown_signal`] is the usual `shutdown`: ctrl-c or `SIGTERM`.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let addr = listener.local_addr()?;
        let grace = self.shared.shutdown_grace;
        let (stopping_tx, stopping_rx) = oneshot::channel::<()>();
        let shared = self.shared.clone();
        let signal = async move {
            shutdown.await;
            // Event streams never end on their own: end them now.
            shared.stopping.send_replace(true);
            tracing::info!(
                grace_seconds = grace.as_secs_f64(),
                "shutting down: no new connections, finishing requests in flight"
            );
            let _ = stopping_tx.send(());
        };
        let (cut_tx, cut_rx) = watch::channel(false);
        let app = self.router().layer(middleware::from_fn(move |req, next| cutoff::race(cut_rx.clone(), req, next)));
        let _tasks = Tasks(vec![self.spawn_upkeep(), self.spawn_sighup()].into_iter().flatten().collect());
        tracing::info!(%addr, "gateway listening");
        // Streams answer chunk by chunk: do not let Nagle hold them back.
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        // `into_make_service` turns the routes into services once; handing `axum::serve` the
        // router itself would rebuild its route table for every connection (about 17 KB each).
        let mut server = axum::serve(listener, app.into_make_service()).with_graceful_shutdown(signal).into_future();
        let grace_over = async move {
            match stopping_rx.await {
                Ok(()) => tokio::time::sleep(grace).await,
                // The signal future was dropped without firing: only the server can end.
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            done = &mut server => {
                self.flush_state().await;
                tracing::info!("gateway stopped");
                return done;
            }
            () = grace_over => {}
        }
        tracing::warn!(
            grace_seconds = grace.as_secs_f64(),
            "grace period over: cutting off the requests still in flight"
        );
        let _ = cut_tx.send(true);
        match tokio::time::timeout(AFTER_CUT, server).await {
            Ok(done) => {
                self.flush_state().await;
                tracing::info!("gateway stopped");
                done
            }
            Err(_) => {
                tracing::warn!("connections still open after the cut-off; leaving them to the runtime");
                Ok(())
            }
        }
    }

    /// Lets the state backend's queued bookkeeping (counts, spend) reach it, for at most
    /// [`AFTER_CUT`].
    async fn flush_state(&self) {
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
