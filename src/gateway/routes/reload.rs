//! `POST /router/reload`: re-read the config file and swap its deployments and aliases in.

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    response::{IntoResponse, Response},
};

use crate::gateway::{Gateway, ReloadError, error::bad_request};

/// Answers with the [`ReloadSummary`](crate::gateway::ReloadSummary), or 400 naming what is
/// wrong with the file (nothing changed then).
pub(crate) async fn reload(State(shared): State<Arc<crate::gateway::GatewayState>>) -> Response {
    let gateway = Gateway { shared };
    match gateway.reload_from_file().await {
        Ok(summary) => Json(summary).into_response(),
        Err(e @ ReloadError::NoConfigPath) => bad_request("no_config_file", e.to_string()),
        Err(e) => bad_request("invalid_config", format!("config not reloaded, nothing changed: {e}")),
    }
}
