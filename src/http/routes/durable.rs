//! `GET /api/durable` and `POST /api/durable/{name}/{conversation}/{verb}` (SPEC §10.3): the
//! crew's durable agents with their conversations, and a device's write to one. A starter's
//! `{conversation}` segment is ignored (write `-`); an answer goes through its card.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use collie_actors::durable::wire::Write;
use serde::Deserialize;

use super::body;
use crate::app::durable::DurableDone;
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

/// The write `verb` with the fields of `b`; a field the verb needs and lacks, or one it does not
/// take, is a 400 naming it.
fn write_of(verb: &str, b: &mut WriteBody) -> Result<Write, AppError> {
    let need = |f: Option<String>, name: &str| {
        f.ok_or_else(|| AppError::BadRequest(format!("{verb} needs \"{name}\"")))
    };
    let write = match verb {
        "send" => Write::Send {
            text: need(b.text.take(), "text")?,
        },
        "abort" => Write::Abort,
        "action" => Write::Action {
            action: need(b.action.take(), "action")?,
        },
        "rename" => Write::Rename {
            title: need(b.title.take(), "title")?,
        },
        "close" => Write::Close,
        "reopen" => Write::Reopen,
        "starter" => Write::Starter {
            starter: need(b.starter.take(), "starter")?,
        },
        "answer" => {
            return Err(AppError::BadRequest(
                "answer a durable question with its card (POST /api/cards/{id}/answer)".into(),
            ))
        }
        other => return Err(AppError::BadRequest(format!("unknown verb: {other}"))),
    };
    let extra = [
        ("text", b.text.is_some()),
        ("action", b.action.is_some()),
        ("title", b.title.is_some()),
        ("starter", b.starter.is_some()),
    ]
    .into_iter()
    .find(|(_, set)| *set);
    if let Some((field, _)) = extra {
        return Err(AppError::BadRequest(format!("{verb} takes no \"{field}\"")));
    }
    Ok(write)
}

pub(super) async fn write(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    ApiPath((name, conversation, verb)): ApiPath<(String, String, String)>,
    bytes: Bytes,
) -> Result<Json<DurableDone>, AppError> {
    let mut b: WriteBody = if bytes.is_empty() {
        WriteBody::default()
    } else {
        body(&bytes)?
    };
    let write = write_of(&verb, &mut b)?;
    Ok(Json(
        app.durable_write_on(&caller, b.machine.as_deref(), name, conversation, write)
            .await?,
    ))
}
