//! The agents a starter can name, and the flags the bridge picks for a starter's option fields
//! (SPEC §12: "option fields whose flags the bridge picks from its own table"). A row never carries
//! a flag for these itself: a phone that adds a row from a template chooses a model or "no
//! prompts", and the flag that means it comes from here.

use serde::{Deserialize, Serialize};

/// An agent Collie knows the flags of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`claude`).
    Claude,
    /// Codex (`codex`).
    Codex,
}

impl Agent {
    /// `claude` or `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }

    /// The agent a name means (`agent = "…"`, or an executable's file name).
    pub fn from_name(name: &str) -> Option<Agent> {
        match name {
            "claude" => Some(Agent::Claude),
            "codex" => Some(Agent::Codex),
            _ => None,
        }
    }

    /// The flags for the option fields, in a fixed order (model, then no prompts).
    pub fn option_flags(self, model: Option<&str>, no_prompts: bool) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(m) = model {
            flags.extend(["--model".to_owned(), m.to_owned()]);
        }
        if no_prompts {
            flags.push(
                match self {
                    Agent::Claude => "--dangerously-skip-permissions",
                    Agent::Codex => "--dangerously-bypass-approvals-and-sandbox",
                }
                .to_owned(),
            );
        }
        flags
    }
}

/// A model name as an option field may give it: a short word of letters, digits and `._:/-` (it
/// becomes one argument; nothing in it can become a second flag).
pub fn valid_model(model: &str) -> bool {
    (1..=100).contains(&model.len())
        && !model.starts_with('-')
        && model
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_come_from_the_table() {
        assert_eq!(
            Agent::Claude.option_flags(Some("sonnet"), true),
            ["--model", "sonnet", "--dangerously-skip-permissions"]
        );
        assert_eq!(
            Agent::Codex.option_flags(None, true),
            ["--dangerously-bypass-approvals-and-sandbox"]
        );
        assert!(Agent::Codex.option_flags(None, false).is_empty());
        assert!(valid_model("gpt-5.1-codex"));
        for bad in ["", "--yolo", "a b", "x;rm", &"m".repeat(101)] {
            assert!(!valid_model(bad), "{bad:?}");
        }
    }
}
