//! A tool's arguments and answer as the relay carries them (SPEC §11): [`super::RelayKind::Tool`]
//! and [`super::RelayOk::Tool`].
//!
//! A tool's arguments and answer are JSON by definition (MCP's `arguments` and structured result,
//! one shape per tool of an open registry), so what travels is a JSON value — but as typed
//! nodes, not as text the other side parses. The nodes are flat, in pre-order (an array or an
//! object gives its length, then its elements follow), so decoding never recurses: a frame of
//! sixteen million opening brackets decodes into a list, and [`Json::to_value`] refuses anything
//! nested deeper than [`MAX_DEPTH`] (serde_json's own parse limit) before it builds a value.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// The deepest nesting [`Json::to_value`] accepts (what `serde_json::from_str` accepts).
pub const MAX_DEPTH: usize = 128;

/// A JSON value as flat typed nodes (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Json(Vec<Node>);

/// One node of a [`Json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Node {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A negative integer.
    Int(i64),
    /// A non-negative integer.
    Uint(u64),
    /// Any other number.
    Float(Float),
    /// A string.
    Str(String),
    /// An array of this many values, which follow.
    Array(u32),
    /// An object of this many members, which follow as a [`Node::Str`] key and a value each.
    Object(u32),
}

/// A finite `f64`, compared by its bits (so [`Json`] is `Eq`, as every relay answer is).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Float(pub f64);

impl PartialEq for Float {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

/// A [`Json`] that is no JSON value: too deep, cut short, a key that is not a string, a number
/// JSON cannot hold, or nodes left over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a JSON value")]
pub struct NotJson;

impl Json {
    /// The nodes of `value`. A value nested deeper than [`MAX_DEPTH`] does not come from
    /// serde_json's parser; it is refused here too, so what is sent can be read.
    pub fn from_value(value: &Value) -> Result<Json, NotJson> {
        let mut nodes = Vec::new();
        push(value, 0, &mut nodes)?;
        Ok(Json(nodes))
    }

    /// The value these nodes describe.
    pub fn to_value(&self) -> Result<Value, NotJson> {
        let mut at = 0;
        let value = take(&self.0, &mut at, 0)?;
        if at != self.0.len() {
            return Err(NotJson);
        }
        Ok(value)
    }
}

fn push(value: &Value, depth: usize, nodes: &mut Vec<Node>) -> Result<(), NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson);
    }
    let len = |n: usize| u32::try_from(n).map_err(|_| NotJson);
    match value {
        Value::Null => nodes.push(Node::Null),
        Value::Bool(b) => nodes.push(Node::Bool(*b)),
        Value::Number(n) => nodes.push(if let Some(u) = n.as_u64() {
            Node::Uint(u)
        } else if let Some(i) = n.as_i64() {
            Node::Int(i)
        } else {
            Node::Float(Float(n.as_f64().ok_or(NotJson)?))
        }),
        Value::String(s) => nodes.push(Node::Str(s.clone())),
        Value::Array(items) => {
            nodes.push(Node::Array(len(items.len())?));
            for item in items {
                push(item, depth + 1, nodes)?;
            }
        }
        Value::Object(members) => {
            nodes.push(Node::Object(len(members.len())?));
            for (key, item) in members {
                nodes.push(Node::Str(key.clone()));
                push(item, depth + 1, nodes)?;
            }
        }
    }
    Ok(())
}

fn take(nodes: &[Node], at: &mut usize, depth: usize) -> Result<Value, NotJson> {
    if depth > MAX_DEPTH {
        return Err(NotJson);
    }
    let node = nodes.get(*at).ok_or(NotJson)?;
    *at += 1;
    Ok(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::Int(i) => Value::Number((*i).into()),
        Node::Uint(u) => Value::Number((*u).into()),
        Node::Float(f) => Value::Number(Number::from_f64(f.0).ok_or(NotJson)?),
        Node::Str(s) => Value::String(s.clone()),
        Node::Array(n) => {
            // Every element is at least one node: a count past what is left is a lie, refused
            // before anything is reserved for it.
            let n = usize::try_from(*n).map_err(|_| NotJson)?;
            if n > nodes.len() - *at {
                return Err(NotJson);
            }
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(take(nodes, at, depth + 1)?);
            }
            Value::Array(items)
        }
        Node::Object(n) => {
            let n = usize::try_from(*n).map_err(|_| NotJson)?;
            if n > (nodes.len() - *at) / 2 {
                return Err(NotJson);
            }
            let mut members = Map::new();
            for _ in 0..n {
                let Some(Node::Str(key)) = nodes.get(*at) else {
                    return Err(NotJson);
                };
                *at += 1;
                let item = take(nodes, at, depth + 1)?;
                members.insert(key.clone(), item);
            }
            Value::Object(members)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode, encode};

    #[test]
    fn a_value_crosses_the_wire_whole() {
        let value = serde_json::json!({
            "path": "/home/a/x.rs",
            "lines": [1, -2, 3.5, null, true, {"deep": ["x"]}],
            "big": u64::MAX,
        });
        let json = Json::from_value(&value).unwrap();
        let back: Json = decode(&encode(&json).unwrap()).unwrap();
        assert_eq!(back.to_value().unwrap(), value);
    }

    #[test]
    fn deep_nesting_and_lying_counts_are_refused_without_recursing_on_decode() {
        // Deeper than serde_json parses: refused on both sides.
        let mut nodes = vec![Node::Array(1); MAX_DEPTH + 2];
        nodes.push(Node::Null);
        let deep = Json(nodes);
        let back: Json = decode(&encode(&deep).unwrap()).unwrap();
        assert_eq!(back.to_value(), Err(NotJson));
        let ok = Json([vec![Node::Array(1); MAX_DEPTH], vec![Node::Null]].concat());
        assert!(ok.to_value().is_ok(), "{MAX_DEPTH} levels are fine");
        assert_eq!(Json(vec![Node::Array(u32::MAX)]).to_value(), Err(NotJson));
        assert_eq!(
            Json(vec![Node::Object(1), Node::Null, Node::Null]).to_value(),
            Err(NotJson),
            "a key is a string"
        );
        assert_eq!(
            Json(vec![Node::Null, Node::Null]).to_value(),
            Err(NotJson),
            "nothing left over"
        );
        assert_eq!(Json(vec![]).to_value(), Err(NotJson));
        assert_eq!(
            Json(vec![Node::Float(Float(f64::NAN))]).to_value(),
            Err(NotJson)
        );
    }
}
