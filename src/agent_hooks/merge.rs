//! The pure core of `collie hooks`: Collie's hook merged into, found in and removed from an
//! agent's hooks document, as `serde_json::Value`s. No I/O.
//!
//! Both agents use one shape (Claude Code's `settings.json` and Codex's `hooks.json`):
//!
//! ```text
//! { …, "hooks": { "<Event>": [ { "matcher": "…", "hooks": [ { "type": "command",
//!                                                              "command": "…", "timeout": N } ] } ] } }
//! ```
//!
//! The user's document is theirs: every key, every other event and every entry of theirs stays
//! where it is, in its order. Collie touches only entries whose `command` the caller's
//! `ours` recognises, a matcher group it adds for its own entry, and a group, an event list or a
//! `hooks` object that removing its own entries left empty. A document of the wrong shape where
//! Collie would have to write (`hooks` not an object, the event not a list) is refused before
//! anything changes; groups and entries of a shape Collie does not know are left alone.

use serde_json::{json, Map, Value};

/// The entry Collie wants under one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hook<'a> {
    /// The event's key under `hooks`, e.g. `PermissionRequest`.
    pub event: &'a str,
    /// The matcher of the group Collie adds (`*`: every tool).
    pub matcher: &'a str,
    /// The shell command the agent runs.
    pub command: &'a str,
    /// The agent's `timeout` for the command, in the agent's unit.
    pub timeout: u64,
}

impl Hook<'_> {
    /// The entry as it is written, members in this order.
    fn entry(&self) -> Value {
        json!({ "type": "command", "command": self.command, "timeout": self.timeout })
    }
}

/// What [`install`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// No entry of Collie's was there; a new matcher group holding it ends the event's list.
    Added,
    /// Collie's first entry was rewritten in place (and any further ones removed).
    Replaced,
    /// Collie's entry was there exactly as wanted, once; the document is as it was.
    Unchanged,
}

/// Why a document cannot take Collie's hook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// The document itself is not an object.
    #[error("the file holds {0}, not a JSON object")]
    NotAnObject(&'static str),
    /// `hooks` is there but not an object.
    #[error("`hooks` is {0}, not an object")]
    Hooks(&'static str),
    /// `hooks.<event>` is there but not a list.
    #[error("`hooks.{event}` is {kind}, not a list")]
    Event {
        /// The event's key.
        event: String,
        /// What it is instead.
        kind: &'static str,
    },
}

/// Puts `hook` into `doc`: rewrites Collie's first entry under `hook.event` in place (keeping its
/// group, and the group's matcher, where they are) and removes any further ones; without one,
/// appends a group `{"matcher", "hooks": [entry]}` to the event's list, creating `hooks` and the
/// list when missing. On error `doc` is unchanged.
pub fn install(
    doc: &mut Value,
    hook: &Hook<'_>,
    ours: &dyn Fn(&str) -> bool,
) -> Result<Installed, ShapeError> {
    // Asked to create the list, `event_list_mut` always returns one; `None` reads as the
    // shape it could not make.
    let list = event_list_mut(doc, hook.event, true)?.ok_or_else(|| ShapeError::Event {
        event: hook.event.to_owned(),
        kind: "missing",
    })?;
    let wanted = hook.entry();
    let Some((group, index)) = first_of_ours(list, ours) else {
        list.push(json!({ "matcher": hook.matcher, "hooks": [wanted] }));
        return Ok(Installed::Added);
    };
    // `first_of_ours` returned the place of an existing entry.
    let Some(slot) = list[group]
        .get_mut("hooks")
        .and_then(Value::as_array_mut)
        .and_then(|entries| entries.get_mut(index))
    else {
        return Err(ShapeError::Event {
            event: hook.event.to_owned(),
            kind: "changed while read",
        });
    };
    let same = *slot == wanted;
    *slot = wanted;
    let extra = remove_ours(list, ours, Some((group, index)));
    Ok(if same && extra == 0 {
        Installed::Unchanged
    } else {
        Installed::Replaced
    })
}

/// Removes every entry of Collie's under `event`, and each matcher group that this left empty;
/// then the event's list, and `hooks`, when that removal left them empty (so a document Collie
/// added them to is what it was before). Returns how many entries went; 0 leaves `doc` as it was.
/// On error `doc` is unchanged.
///
/// Only emptiness Collie caused is cleaned up: a user's own empty group stays. The one thing not
/// restored is a user's own empty event list or empty `hooks` object that held only Collie's
/// hook: it means the same as none, and nothing in the document says it was there before.
pub fn uninstall(
    doc: &mut Value,
    event: &str,
    ours: &dyn Fn(&str) -> bool,
) -> Result<usize, ShapeError> {
    let Some(list) = event_list_mut(doc, event, false)? else {
        return Ok(0);
    };
    let removed = remove_ours(list, ours, None);
    if removed > 0 && list.is_empty() {
        // The event list was just found under `hooks`.
        let Some(hooks) = hooks_mut(doc) else {
            return Ok(removed);
        };
        hooks.shift_remove(event);
        if hooks.is_empty() {
            if let Some(top) = doc.as_object_mut() {
                top.shift_remove("hooks");
            }
        }
    }
    Ok(removed)
}

/// The commands of Collie's entries under `event`, in document order.
pub fn find(
    doc: &Value,
    event: &str,
    ours: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, ShapeError> {
    let top = doc.as_object().ok_or(ShapeError::NotAnObject(kind(doc)))?;
    let Some(hooks) = top.get("hooks") else {
        return Ok(Vec::new());
    };
    let hooks = hooks.as_object().ok_or(ShapeError::Hooks(kind(hooks)))?;
    let Some(list) = hooks.get(event) else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or_else(|| ShapeError::Event {
        event: event.to_owned(),
        kind: kind(list),
    })?;
    Ok(list
        .iter()
        .filter_map(|group| group.get("hooks").and_then(Value::as_array))
        .flatten()
        .filter_map(|entry| command_of(entry).filter(|c| ours(c)))
        .map(str::to_owned)
        .collect())
}

/// The list under `hooks.<event>`, checked for shape before anything is created. `None` when
/// missing and not `create`.
fn event_list_mut<'d>(
    doc: &'d mut Value,
    event: &str,
    create: bool,
) -> Result<Option<&'d mut Vec<Value>>, ShapeError> {
    // Check the whole path first, so that an error leaves `doc` untouched.
    find(doc, event, &|_| false)?;
    // `find` checked the shape of this path, so these errors cannot happen; they are errors
    // rather than panics all the same.
    let top = doc
        .as_object_mut()
        .ok_or(ShapeError::NotAnObject("not an object"))?;
    let missing = top.get("hooks").is_none_or(|h| h.get(event).is_none());
    if missing && !create {
        return Ok(None);
    }
    let list = top
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(ShapeError::Hooks("not an object"))?
        .entry(event)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .ok_or_else(|| ShapeError::Event {
            event: event.to_owned(),
            kind: "not a list",
        })?;
    Ok(Some(list))
}

fn hooks_mut(doc: &mut Value) -> Option<&mut Map<String, Value>> {
    doc.get_mut("hooks").and_then(Value::as_object_mut)
}

fn command_of(entry: &Value) -> Option<&str> {
    entry.get("command").and_then(Value::as_str)
}

fn is_ours(entry: &Value, ours: &dyn Fn(&str) -> bool) -> bool {
    command_of(entry).is_some_and(ours)
}

/// (group, entry) of Collie's first entry.
fn first_of_ours(list: &[Value], ours: &dyn Fn(&str) -> bool) -> Option<(usize, usize)> {
    list.iter().enumerate().find_map(|(g, group)| {
        let entries = group.get("hooks").and_then(Value::as_array)?;
        entries
            .iter()
            .position(|e| is_ours(e, ours))
            .map(|i| (g, i))
    })
}

/// Removes Collie's entries but `keep`, and each group that this left empty. Returns how many.
fn remove_ours(
    list: &mut Vec<Value>,
    ours: &dyn Fn(&str) -> bool,
    keep: Option<(usize, usize)>,
) -> usize {
    let mut removed = 0;
    let mut group = 0;
    list.retain_mut(|g| {
        let this = group;
        group += 1;
        let Some(entries) = g.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let before = entries.len();
        let mut index = 0;
        entries.retain(|e| {
            let at = (this, index);
            index += 1;
            keep == Some(at) || !is_ours(e, ours)
        });
        let gone = before - entries.len();
        removed += gone;
        !(gone > 0 && entries.is_empty())
    });
    removed
}

/// "a string", "an array", … for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
