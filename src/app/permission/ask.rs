//! A `PermissionRequest` hook's input → a card, and a card's answer → the hook's output (SPEC
//! §10.2). Pure: no I/O.
//!
//! What the agents send and read (see docs/guide/hooks.md for the sources): both Claude Code and
//! Codex give `hook_event_name: "PermissionRequest"`, `tool_name` and a `tool_input` object
//! (`command` for a shell call, `file_path` for a file tool, `url` for a fetch), and a
//! `session_id`; Claude Code adds `permission_suggestions`, the rules "always allow" would add.
//! Both read `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{…}}}` with
//! `behavior` `allow` or `deny` (and a `message` for a deny). Only Claude Code accepts
//! `updatedPermissions` (Codex refuses a decision carrying it), so only a Claude Code card
//! offers "Always allow", and only when the request suggested a rule of type `addRules` or
//! `addDirectories` — never `setMode`, which would change the agent's whole permission mode.

use collie_actors::cards::actor::Decision;
use collie_actors::cards::card::{CardOption, Item, NewCard, Source};
use collie_crew::relay::PaneInfo;
use serde::Serialize;
use serde_json::{Map, Value};

use super::always::Suggestion;
use super::Agent;

/// Why a hook input is not a permission request this bridge can show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// Not a JSON object.
    #[error("hook input is not a JSON object")]
    NotObject,
    /// `hook_event_name` is not `PermissionRequest`.
    #[error("not a PermissionRequest hook")]
    WrongEvent,
    /// A field is missing or of the wrong type.
    #[error("hook input field {0} missing or invalid")]
    Field(&'static str),
}

/// A permission request, as far as the card and the answer need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    agent: Agent,
    tool: String,
    input: Map<String, Value>,
    session: Option<String>,
    /// What "Always allow" adds: exactly what the card shows of it (see [`super::always`]).
    always: Vec<Suggestion>,
}

impl Ask {
    /// Reads a hook input.
    pub fn parse(agent: Agent, input: &Value) -> Result<Ask, AskError> {
        let obj = input.as_object().ok_or(AskError::NotObject)?;
        if obj.get("hook_event_name").and_then(Value::as_str) != Some("PermissionRequest") {
            return Err(AskError::WrongEvent);
        }
        let tool = obj
            .get("tool_name")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or(AskError::Field("tool_name"))?
            .to_owned();
        let input = match obj.get("tool_input") {
            Some(Value::Object(m)) => m.clone(),
            None | Some(Value::Null) => Map::new(),
            Some(_) => return Err(AskError::Field("tool_input")),
        };
        let session = obj
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let always = match (agent, obj.get("permission_suggestions")) {
            (Agent::Claude, Some(Value::Array(list))) => {
                list.iter().filter_map(Suggestion::read).collect()
            }
            _ => Vec::new(),
        };
        Ok(Ask {
            agent,
            tool,
            input,
            session,
            always,
        })
    }

    /// The card the phone shows: the tool, and the command, path or URL in full (the cards core
    /// escapes and, past its limits, cuts them and offers only Deny), and what "Always allow"
    /// adds.
    pub fn card(&self, machine: &str, pane: &PaneInfo) -> NewCard {
        let who = match self.agent {
            Agent::Claude => "Claude Code",
            Agent::Codex => "Codex",
        };
        let mut options = vec![option("allow", "Allow"), option("deny", "Deny")];
        if !self.always.is_empty() {
            options.push(option("always", "Always allow"));
        }
        NewCard {
            machine: machine.to_owned(),
            pane: Some(pane.pane.clone()),
            pane_name: Some(pane.name.clone()),
            source: match self.agent {
                Agent::Claude => Source::Claude,
                Agent::Codex => Source::Codex,
            },
            conversation: self.session.clone(),
            title: format!("{who} asks to use {}", self.tool),
            items: self.items(),
            options,
            question: None,
            shortened: false,
            masked: false,
        }
    }

    /// What the card shows of the tool call.
    fn items(&self) -> Vec<Item> {
        let text = |key: &str| self.input.get(key).and_then(Value::as_str);
        let mut items = Vec::new();
        if let Some(description) = text("description") {
            items.push(Item::Text {
                text: description.to_owned(),
            });
        }
        if let Some(command) = text("command") {
            items.push(Item::Code {
                text: command.to_owned(),
            });
        }
        for key in ["file_path", "notebook_path", "path"] {
            if let Some(path) = text(key) {
                items.push(Item::Code {
                    text: path.to_owned(),
                });
            }
        }
        if let Some(url) = text("url") {
            items.push(Item::Code {
                text: url.to_owned(),
            });
        }
        if let (Some(old), Some(new)) = (text("old_string"), text("new_string")) {
            let diff: String = old
                .lines()
                .map(|l| format!("-{l}\n"))
                .chain(new.lines().map(|l| format!("+{l}\n")))
                .collect();
            items.push(Item::Diff { text: diff });
        }
        if let Some(content) = text("content") {
            items.push(Item::Code {
                text: content.to_owned(),
            });
        }
        if items.is_empty() && !self.input.is_empty() {
            // A tool this reading does not know: show its whole input rather than nothing.
            let whole = serde_json::to_string_pretty(&self.input).unwrap_or_default();
            items.push(Item::Code { text: whole });
        }
        if !self.always.is_empty() {
            items.push(Item::Text {
                text: "\u{201c}Always allow\u{201d} also adds:".to_owned(),
            });
            items.push(Item::Code {
                text: super::always::describe(&self.always),
            });
        }
        items
    }

    /// The hook's output for `decision`: the exact JSON the agent reads.
    pub fn output(&self, decision: &Decision) -> Value {
        let verdict = match decision.option.id.as_str() {
            "allow" => Verdict {
                behavior: "allow",
                message: None,
                updated_permissions: None,
            },
            "always" if !self.always.is_empty() => Verdict {
                behavior: "allow",
                message: None,
                updated_permissions: Some(&self.always),
            },
            _ => Verdict {
                behavior: "deny",
                message: Some(format!("Denied from {} via Collie", decision.device)),
                updated_permissions: None,
            },
        };
        let output = Output {
            hook_specific_output: Specific {
                hook_event_name: "PermissionRequest",
                decision: verdict,
            },
        };
        // Plain strings and values: serializing cannot fail.
        serde_json::to_value(output).unwrap_or(Value::Null)
    }
}

/// `{"hookSpecificOutput": …}`: what both agents read from a PermissionRequest hook's stdout.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Output<'a> {
    hook_specific_output: Specific<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Specific<'a> {
    hook_event_name: &'static str,
    decision: Verdict<'a>,
}

/// The decision: `behavior`, a deny's `message`, "Always allow"'s `updatedPermissions`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Verdict<'a> {
    behavior: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_permissions: Option<&'a [Suggestion]>,
}

fn option(id: &str, label: &str) -> CardOption {
    CardOption {
        id: id.to_owned(),
        label: label.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use collie_actors::cards::card::MAX_ITEM;
    use serde_json::json;

    fn claude_input() -> Value {
        json!({
            "session_id": "s-1",
            "transcript_path": "/home/u/.claude/projects/p/s-1.jsonl",
            "cwd": "/home/u/p",
            "permission_mode": "default",
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": {"command": "rm -rf build", "description": "Clean the build"},
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}],
                 "behavior": "allow", "destination": "localSettings"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
            ],
        })
    }

    fn pane() -> PaneInfo {
        PaneInfo {
            machine: "laptop".into(),
            pane: "t0-3".into(),
            token: "ab12".into(),
            name: "agent".into(),
            backend: "tmux".into(),
            alive: true,
            cols: 80,
            rows: 24,
            last_activity: None,
            asking_password: false,
            at_shell: false,
            activity: Default::default(),
        }
    }

    fn decision(option: &str) -> Decision {
        Decision {
            option: CardOption {
                id: option.into(),
                label: option.into(),
            },
            device: "pixel".into(),
        }
    }

    #[test]
    fn a_bash_request_shows_the_whole_command_and_offers_always() {
        let ask = Ask::parse(Agent::Claude, &claude_input()).unwrap();
        let card = ask.card("laptop", &pane());
        assert_eq!(card.title, "Claude Code asks to use Bash");
        assert_eq!(card.source, Source::Claude);
        assert_eq!(card.pane.as_deref(), Some("t0-3"));
        assert_eq!(card.pane_name.as_deref(), Some("agent"));
        assert_eq!(card.conversation.as_deref(), Some("s-1"));
        assert!(card.items.contains(&Item::Code {
            text: "rm -rf build".into()
        }));
        let ids: Vec<&str> = card.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["allow", "deny", "always"]);
        assert!(card.check().is_ok());
    }

    #[test]
    fn the_outputs_are_exactly_what_the_agent_reads() {
        let ask = Ask::parse(Agent::Claude, &claude_input()).unwrap();
        assert_eq!(
            ask.output(&decision("allow")),
            json!({"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}})
        );
        assert_eq!(
            ask.output(&decision("deny")),
            json!({"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{
                "behavior":"deny","message":"Denied from pixel via Collie"}}})
        );
        let always = ask.output(&decision("always"));
        let updated = &always["hookSpecificOutput"]["decision"]["updatedPermissions"];
        assert_eq!(
            always["hookSpecificOutput"]["decision"]["behavior"],
            "allow"
        );
        assert_eq!(
            updated.as_array().map(Vec::len),
            Some(1),
            "setMode is never applied"
        );
        assert_eq!(updated[0]["type"], "addRules");
    }

    #[test]
    fn without_a_rule_to_add_there_is_no_always_and_codex_never_has_one() {
        let mut input = claude_input();
        input["permission_suggestions"] = json!([{"type": "setMode", "mode": "bypassPermissions"}]);
        let ask = Ask::parse(Agent::Claude, &input).unwrap();
        assert_eq!(ask.card("m", &pane()).options.len(), 2);
        // A forged "always" answer without suggestions denies rather than widening anything.
        assert_eq!(
            ask.output(&decision("always"))["hookSpecificOutput"]["decision"]["behavior"],
            "deny"
        );
        let codex = Ask::parse(Agent::Codex, &claude_input()).unwrap();
        assert_eq!(codex.card("m", &pane()).options.len(), 2);
        assert_eq!(codex.card("m", &pane()).source, Source::Codex);
    }

    #[test]
    fn codex_s_real_request_makes_a_card_without_always() {
        // What Codex 0.171.0 wrote on its hook's stdin for an `exec_command` it asked to run
        // outside the sandbox (captured from the real Codex; only the paths changed).
        // Shell calls arrive as tool `Bash`, the model's justification as `description`; there
        // are no `permission_suggestions`.
        let input = json!({
            "session_id": "01a233a9-93b1-7323-8417-1405822b3aa2",
            "turn_id": "01a233a9-a545-7e40-b2e0-7ae5afef661e",
            "transcript_path": "/home/u/.codex/sessions/2026/12/01/rollout-2026-12-01T22-11-21-01a233a9-93b1-7323-8417-1405822b3aa2.jsonl",
            "cwd": "/home/u/work",
            "hook_event_name": "PermissionRequest",
            "model": "gpt-standin",
            "permission_mode": "default",
            "tool_name": "Bash",
            "tool_input": {"command": "touch marker", "description": "Make the marker file"},
        });
        let ask = Ask::parse(Agent::Codex, &input).unwrap();
        let card = ask.card("laptop", &pane());
        assert_eq!(card.title, "Codex asks to use Bash");
        assert_eq!(card.source, Source::Codex);
        assert_eq!(
            card.conversation.as_deref(),
            Some("01a233a9-93b1-7323-8417-1405822b3aa2")
        );
        assert_eq!(
            card.items,
            [
                Item::Text {
                    text: "Make the marker file".into()
                },
                Item::Code {
                    text: "touch marker".into()
                }
            ]
        );
        let ids: Vec<&str> = card.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, ["allow", "deny"]);
        // The same output shape as Claude Code's, which Codex reads
        // (`hookSpecificOutput.decision.behavior`, and `message` for a deny).
        assert_eq!(
            ask.output(&decision("deny")),
            json!({"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{
                "behavior":"deny","message":"Denied from pixel via Collie"}}})
        );
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(
            Ask::parse(Agent::Claude, &json!([1])),
            Err(AskError::NotObject)
        );
        let mut other = claude_input();
        other["hook_event_name"] = json!("PreToolUse");
        assert_eq!(Ask::parse(Agent::Claude, &other), Err(AskError::WrongEvent));
        let mut no_tool = claude_input();
        no_tool.as_object_mut().unwrap().remove("tool_name");
        assert_eq!(
            Ask::parse(Agent::Claude, &no_tool),
            Err(AskError::Field("tool_name"))
        );
        let mut bad_input = claude_input();
        bad_input["tool_input"] = json!("rm");
        assert_eq!(
            Ask::parse(Agent::Claude, &bad_input),
            Err(AskError::Field("tool_input"))
        );
    }

    #[test]
    fn long_text_reaches_the_cards_core_whole() {
        // The core cuts it, marks the card shortened and offers only Deny (`cards::present`).
        let mut input = claude_input();
        let long = "é".repeat(MAX_ITEM);
        input["tool_input"]["command"] = json!(long);
        let card = Ask::parse(Agent::Claude, &input)
            .unwrap()
            .card("m", &pane());
        assert!(card.items.contains(&Item::Code { text: long }));
    }

    #[test]
    fn always_allow_s_rules_and_directories_are_shown_as_applied() {
        let mut input = claude_input();
        input["permission_suggestions"] = json!([
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}],
             "behavior": "allow", "destination": "localSettings", "extra": "dropped"},
            {"type": "addDirectories", "directories": ["/srv/a\nrule Bash"], "destination": "session"},
            {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
        ]);
        let ask = Ask::parse(Agent::Claude, &input).unwrap();
        let card = ask.card("m", &pane());
        let Some(Item::Code { text }) = card.items.last() else {
            panic!("the rules")
        };
        assert_eq!(
            text,
            "rule Bash(rm -rf build) (allow) in localSettings\n\
             directory /srv/a⟨U+000A⟩rule Bash in session"
        );
        let always = ask.output(&decision("always"));
        assert_eq!(
            always["hookSpecificOutput"]["decision"]["updatedPermissions"],
            json!([
                {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build"}],
                 "behavior": "allow", "destination": "localSettings"},
                {"type": "addDirectories", "directories": ["/srv/a\nrule Bash"], "destination": "session"},
            ]),
            "exactly what was shown, no field it did not show"
        );
    }

    #[test]
    fn an_edit_shows_the_path_and_a_diff() {
        let input = json!({"hook_event_name": "PermissionRequest", "tool_name": "Edit",
            "tool_input": {"file_path": "/home/u/p/src/main.rs", "old_string": "a\nb", "new_string": "c"}});
        let card = Ask::parse(Agent::Claude, &input)
            .unwrap()
            .card("m", &pane());
        assert_eq!(
            card.items,
            [
                Item::Code {
                    text: "/home/u/p/src/main.rs".into()
                },
                Item::Diff {
                    text: "-a\n-b\n+c\n".into()
                }
            ]
        );
    }
}
