//! `GET /v1/models`: the names a client may ask for, in OpenAI's list format.

use std::sync::Arc;

use axum::{Json, extract::State};
use serde::Serialize;

use crate::gateway::GatewayState;

#[derive(Serialize)]
pub(crate) struct ModelList {
    object: &'static str,
    data: Vec<Model>,
}

#[derive(Serialize)]
struct Model {
    id: String,
    object: &'static str,
    created: u64,
    owned_by: &'static str,
}

/// Model groups, wildcard patterns, visible aliases and the pre-routers' virtual names, sorted.
pub(crate) async fn list(State(shared): State<Arc<GatewayState>>) -> Json<ModelList> {
    let mut names = shared.router.registry().names();
    names.extend(shared.router.pre_routed_names());
    names.sort_unstable();
    names.dedup();
    let data = names.into_iter().map(|id| Model { id, object: "model", created: 0, owned_by: "switchyard" }).collect();
    Json(ModelList { object: "list", data })
}
