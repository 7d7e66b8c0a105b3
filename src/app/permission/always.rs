//! What "Always allow" adds (SPEC §10.1, §10.2): the request's own `permission_suggestions` of
//! type `addRules` or `addDirectories`, read into the fields the card shows — and written back
//! from those same fields, so the agent is given exactly what the person read and nothing else.
//!
//! Claude Code's suggestion shapes (its hooks reference): `{"type":"addRules","rules":
//! [{"toolName","ruleContent"?}],"behavior","destination"}` and `{"type":"addDirectories",
//! "directories":[…],"destination"}`. A field the card does not show (any other key) is not
//! passed on; a suggestion of another type (`setMode` changes the agent's whole permission mode)
//! or of the wrong shape is not offered at all.

use collie_actors::cards::visible::visible;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One suggestion "Always allow" may apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub(super) enum Suggestion {
    /// Permission rules to add.
    #[serde(rename = "addRules")]
    AddRules {
        /// The rules.
        rules: Vec<Rule>,
        /// `allow`, `deny` or `ask`, as the agent gave it.
        behavior: String,
        /// Which settings keep them (`localSettings`, `session`, …).
        destination: String,
    },
    /// Directories the agent may work in.
    #[serde(rename = "addDirectories")]
    AddDirectories {
        /// The directories.
        directories: Vec<String>,
        /// Which settings keep them.
        destination: String,
    },
}

/// A permission rule: a tool, and what of it (`Bash` with `make deploy:*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Rule {
    /// The tool.
    pub(super) tool_name: String,
    /// What of the tool; none: all of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) rule_content: Option<String>,
}

impl Suggestion {
    /// A suggestion of the request, if it is one "Always allow" may apply and it adds something.
    pub(super) fn read(value: &Value) -> Option<Suggestion> {
        let suggestion = Suggestion::deserialize(value).ok()?;
        let adds = match &suggestion {
            Suggestion::AddRules { rules, .. } => !rules.is_empty(),
            Suggestion::AddDirectories { directories, .. } => !directories.is_empty(),
        };
        adds.then_some(suggestion)
    }
}

/// The card's text of what `always` adds: one line per rule or directory, each value on its
/// line (a line break in one is shown as an escape, so no value can pass for another line).
pub(super) fn describe(always: &[Suggestion]) -> String {
    let one = |s: &str| visible(s, false).into_owned();
    let mut lines = Vec::new();
    for suggestion in always {
        match suggestion {
            Suggestion::AddRules {
                rules,
                behavior,
                destination,
            } => {
                for rule in rules {
                    let what = match &rule.rule_content {
                        Some(content) => format!("{}({})", one(&rule.tool_name), one(content)),
                        None => one(&rule.tool_name),
                    };
                    lines.push(format!(
                        "rule {what} ({}) in {}",
                        one(behavior),
                        one(destination)
                    ));
                }
            }
            Suggestion::AddDirectories {
                directories,
                destination,
            } => {
                for dir in directories {
                    lines.push(format!("directory {} in {}", one(dir), one(destination)));
                }
            }
        }
    }
    lines.join("\n")
}
