//! The recent one-shot commands (SPEC §11): the last [`MAX_RECENT`] distinct lines, newest first,
//! as `commands-recent.json` keeps them (`{"commands":[…]}`).

use serde::{Deserialize, Serialize};

/// How many commands the list keeps.
pub const MAX_RECENT: usize = 12;

/// The list, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recent {
    /// The commands, newest first, each once.
    pub commands: Vec<String>,
}

impl Recent {
    /// Puts `line` first (removing an older copy), keeping at most [`MAX_RECENT`].
    pub fn push(&mut self, line: &str) {
        self.commands.retain(|c| c != line);
        self.commands.insert(0, line.to_owned());
        self.commands.truncate(MAX_RECENT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first_distinct_and_bounded() {
        let mut r = Recent::default();
        for i in 0..20 {
            r.push(&format!("cmd {i}"));
        }
        r.push("cmd 10");
        assert_eq!(r.commands.len(), MAX_RECENT);
        assert_eq!(r.commands[0], "cmd 10");
        assert_eq!(r.commands[1], "cmd 19");
        assert_eq!(r.commands.iter().filter(|c| *c == "cmd 10").count(), 1);
    }
}
