//! `GET /api/durable` and `POST /api/durable/{name}/{conversation}/{verb}` (SPEC §10.3): the
//! crew's durable agents with their conversations, and a device's write to one. A starter's
//! `{conversation}` segment is ignored (write `-`); an answer goes through its card.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;

use super::body;
use crate::app::durable::{AgentWrite, DurableDone};
use crate::app::durable_verb::{write_of, WriteFields};
use crate::app::{App, AppError, Caller};
use crate::http::extract::ApiPath;
use crate::http::json::durable::DurableList;

pub(super) async fn list(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<DurableList>, AppError> {
    Ok(Json(DurableList::from(app.durable_list(&caller).await?)))
}

/// A write's body: the fields its verb needs, and the agent's machine (this one when absent).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteBody {
    machine: Option<String>,
    text: Option<String>,
    action: Option<String>,
    title: Option<String>,
    starter: Option<String>,
}

pub(super) async fn write(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((name, conversation, verb)): ApiPath<(String, String, String)>,
    bytes: Bytes,
) -> Result<Json<DurableDone>, AppError> {
    let b: WriteBody = if bytes.is_empty() {
        WriteBody::default()
    } else {
        body(&bytes)?
    };
    let fields = WriteFields {
        text: b.text,
        action: b.action,
        title: b.title,
        starter: b.starter,
    };
    let write = write_of(&verb, fields)?;
    let machine = b.machine.as_deref().unwrap_or("local");
    let op = AgentWrite {
        agent: name,
        conversation,
        write,
    };
    Ok(Json(app.run(&caller, machine, op).await?))
}
