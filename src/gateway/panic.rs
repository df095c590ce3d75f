//! A panic in a handler or in the routing stack is answered, not a dropped connection:
//! tower-http's [`CatchPanicLayer`] catches it and [`PanicAnswer`] makes the answer, a 500 in the
//! gateway's OpenAI error shape (`server_error`, code `internal_error`) that says nothing of the
//! panic. The panic's message is logged (escaped: it may quote a request's text), and the
//! connection stays open for the client's next request.
//!
//! A panic while a response body is being streamed is not caught here: the head has been sent,
//! and hyper ends that stream with an error.

use std::any::Any;

use axum::body::Body;
use http::StatusCode;
use switchyard_layers::logsafe::Escaped;
use tower_http::catch_panic::{CatchPanicLayer, ResponseForPanic};

use super::error::json_error;

/// The `code` of the answer to a panic, also its `x-switchyard-error`.
pub(crate) const CODE: &str = "internal_error";

/// [`CatchPanicLayer`] answering with [`PanicAnswer`].
pub(crate) fn layer() -> CatchPanicLayer<PanicAnswer> {
    CatchPanicLayer::custom(PanicAnswer)
}

/// Logs a panic and answers it with a 500 `internal_error`; see the [module docs](self).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PanicAnswer;

impl ResponseForPanic for PanicAnswer {
    type ResponseBody = Body;

    fn response_for_panic(&mut self, panic: Box<dyn Any + Send + 'static>) -> http::Response<Body> {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(no message)");
        tracing::error!(panic = %Escaped(message), "a request's handler panicked; answered 500");
        json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            CODE,
            "the gateway failed while answering this request; the failure is logged",
        )
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use switchyard_services::http_error::ERROR_KIND_HEADER;
    use tower::{Layer, ServiceExt, service_fn};

    use super::*;

    #[tokio::test]
    async fn a_panicking_handler_is_answered_with_a_500_in_the_openai_shape() {
        let handler = service_fn(|_req: http::Request<Body>| async move {
            if true {
                panic!("handler failed: {}", "\u{1b}[2J");
            }
            Ok::<_, std::convert::Infallible>(http::Response::new(Body::empty()))
        });
        let resp = layer().layer(handler).oneshot(http::Request::new(Body::empty())).await.expect("answered");
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(resp.headers()[ERROR_KIND_HEADER], CODE);
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(json["error"]["type"], "server_error");
        assert_eq!(json["error"]["code"], CODE);
        assert!(!String::from_utf8_lossy(&body).contains("handler failed"), "the panic is not shown");
    }
}
