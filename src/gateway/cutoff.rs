//! The end of the grace period: requests still running when it is over are cut off, so their
//! connections close and the server can stop.
//!
//! axum runs every connection on its own task, which outlives the server future; dropping the
//! server would leave them running. Instead each request races the cut-off: a handler still
//! waiting answers 503, and a body still streaming ends with an error (the client sees the
//! connection close mid-stream, never a clean end). Dropping them releases their guards
//! (in-flight counts, rate-limit reservations) as any cancellation does.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use axum::{
    body::Body,
    extract::Request,
    middleware::Next,
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use http::StatusCode;
use http_body::{Frame, SizeHint};
use tokio::sync::watch;

use super::error::json_error;

type Signal = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Completes once `cut` turns true; never, if its sender is gone without that.
fn cut_off(mut cut: watch::Receiver<bool>) -> Signal {
    Box::pin(async move {
        if cut.wait_for(|cut| *cut).await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}

/// Runs the request unless the cut-off comes first, and cuts its body off too.
pub(crate) async fn race(cut: watch::Receiver<bool>, req: Request, next: Next) -> Response {
    tokio::select! {
        resp = next.run(req) => {
            let (parts, body) = resp.into_parts();
            Response::from_parts(parts, Body::new(CutOff { inner: body, cut: Some(cut_off(cut)) }))
        }
        () = cut_off(cut.clone()) => json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "shutting_down",
            "the gateway shut down before the answer was ready",
        )
        .into_response(),
    }
}

/// A body that ends with an error at the cut-off.
struct CutOff {
    inner: Body,
    /// `None` once cut off.
    cut: Option<Signal>,
}

impl http_body::Body for CutOff {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(cut) = self.cut.as_mut() else {
            return Poll::Ready(None);
        };
        if cut.as_mut().poll(cx).is_ready() {
            self.cut = None;
            return Poll::Ready(Some(Err(axum::Error::new("the gateway shut down during the answer"))));
        }
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.cut.is_none() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
