//! A durable agent's write by its verb (SPEC §10.3): `send`, `abort`, `action`, `rename`,
//! `close`, `reopen` and `starter`, each with exactly the fields it needs. The HTTP route names
//! the verb in its path; the rule of which verb takes which field is this one.

use collie_actors::durable::wire::Write;

use super::AppError;

/// The fields a write may carry (each verb takes at most one of them).
#[derive(Debug, Clone, Default)]
pub struct WriteFields {
    /// A message to send.
    pub text: Option<String>,
    /// A button's action.
    pub action: Option<String>,
    /// A conversation's new title.
    pub title: Option<String>,
    /// A starter to run.
    pub starter: Option<String>,
}

/// The write `verb` with the fields of `b`; a field the verb needs and lacks, or one it does not
/// take, is a 400 naming it; an answer goes through its card, never through a write.
pub fn write_of(verb: &str, mut b: WriteFields) -> Result<Write, AppError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verb_takes_exactly_its_fields() {
        let text = WriteFields {
            text: Some("hi".into()),
            ..WriteFields::default()
        };
        assert!(matches!(
            write_of("send", text.clone()),
            Ok(Write::Send { .. })
        ));
        assert_eq!(
            write_of("send", WriteFields::default())
                .unwrap_err()
                .to_string(),
            "send needs \"text\""
        );
        assert_eq!(
            write_of("abort", text).unwrap_err().to_string(),
            "abort takes no \"text\""
        );
        assert!(write_of("answer", WriteFields::default()).is_err());
        assert_eq!(
            write_of("nope", WriteFields::default())
                .unwrap_err()
                .to_string(),
            "unknown verb: nope"
        );
    }
}
