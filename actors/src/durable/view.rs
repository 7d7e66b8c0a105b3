//! A durable agent's state as the rest of Collie reads it: every string sanitized (SPEC §10.3,
//! [`super::sanitize`]), every id checked, every count bounded. Nothing outside
//! `actors/src/durable/` ever sees a [`super::wire`] value.
//!
//! The conversion ([`View::from_wire`]) is pure; it reports what it dropped as [`Dropped`] lines
//! (at most one per conversation and kind) so the shell can log them without logging agent text.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{sanitize, wire};

/// Most conversations kept of one agent (the newest by `updated`; the rest are dropped with one
/// log line).
pub const MAX_CONVERSATIONS: usize = 500;
/// Most items kept of one conversation (the last ones).
pub const MAX_ITEMS: usize = 200;
/// Most questions of one conversation.
pub const MAX_QUESTIONS: usize = 8;
/// Most items of one question.
pub const MAX_QUESTION_ITEMS: usize = 16;
/// Most options of one question (the cards' own bound).
pub const MAX_OPTIONS: usize = crate::cards::card::MAX_OPTIONS;
/// Most action buttons of one conversation.
pub const MAX_ACTIONS: usize = 8;
/// Most starters of one agent.
pub const MAX_STARTERS: usize = 32;

/// Byte limits of each field (the `…` appended to a shortened string counts).
pub mod limits {
    /// A conversation's title.
    pub const TITLE: usize = 256;
    /// An item's text, a tool call's output.
    pub const TEXT: usize = 16 * 1024;
    /// A tool call's summary.
    pub const SUMMARY: usize = 1024;
    /// A question's title (the cards' own bound).
    pub const QUESTION: usize = crate::cards::card::MAX_TITLE;
    /// A question's reason.
    pub const REASON: usize = 4096;
    /// A button's label (option, action, starter).
    pub const LABEL: usize = 64;
    /// A link's address, in characters (longer links are dropped, never shortened).
    pub const LINK_CHARS: usize = super::sanitize::MAX_LINK_CHARS;
    /// An id, in bytes (longer ids drop their object).
    pub const ID: usize = super::sanitize::MAX_ID;
    /// Whether a tool call's summary keeps `\n` and `\t`: yes — seed 000 lists the tool call's
    /// output *and summary* among the multi-line fields (decision 0026).
    pub const SUMMARY_MULTI_LINE: bool = true;
}

/// One agent's sanitized state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The conversations, newest `updated` first.
    pub conversations: Vec<ConversationView>,
    /// The starters.
    pub starters: Vec<ButtonView>,
}

/// `working`, `idle` or `closed`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationState {
    /// A turn is running (`abort` stops it).
    Working,
    /// Waiting for the person (or anything the agent did not name).
    #[default]
    Idle,
    /// Closed (`reopen` opens it again).
    Closed,
}

/// One conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationView {
    /// Its id, exactly as the agent gave it.
    pub id: String,
    /// Its title (its id when the agent's was empty after sanitizing).
    pub title: String,
    /// Where it is.
    pub state: ConversationState,
    /// When it last changed, Unix milliseconds (0 when the agent did not say).
    pub updated: u64,
    /// Its last [`MAX_ITEMS`] items, oldest first.
    pub items: Vec<ItemView>,
    /// Its open questions (each is also a card).
    pub questions: Vec<QuestionView>,
    /// Its action buttons.
    pub actions: Vec<ButtonView>,
}

/// What an item is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    /// Plain text (also any kind this version does not know).
    #[default]
    Text,
    /// Markdown, shown as text (no HTML is ever rendered).
    Markdown,
    /// Code, monospaced.
    Code,
    /// A unified diff.
    Diff,
    /// A link: `url` holds a checked `https://` address.
    Link,
    /// A tool call: `summary` and `output`.
    Tool,
}

/// Who said it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person.
    User,
    /// The agent (also any role this version does not know).
    #[default]
    Agent,
    /// A tool.
    Tool,
}

/// One item.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemView {
    /// Its id.
    pub id: String,
    /// What it is.
    pub kind: ItemKind,
    /// Who said it.
    pub role: Role,
    /// Its text (empty for a link).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// A link's address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// A tool call's summary.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// A tool call's output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output: String,
    /// When, Unix milliseconds (0 when the agent did not say).
    pub at: u64,
}

/// An open question.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionView {
    /// Its id.
    pub id: String,
    /// The question (its id when empty after sanitizing).
    pub title: String,
    /// Why it is asked.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// What is being decided.
    pub items: Vec<ItemView>,
    /// The answers offered (at least one: a question left without options is dropped).
    pub options: Vec<ButtonView>,
    /// The sanitizer changed its title or reason: the card says `Text shortened`.
    pub shortened: bool,
    /// The card that asks it on the phone (set by the agent's actor once the card is open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
}

/// An option, an action or a starter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ButtonView {
    /// Its id.
    pub id: String,
    /// Its label (never empty: a button whose label sanitized to nothing is dropped).
    pub label: String,
}

/// Something [`View::from_wire`] left out, for one log line (never with the agent's text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// Objects whose id was empty, too long, or held a control, whitespace, `/`, `?`, `#` or an
    /// invisible character ([`sanitize::id`]), or repeated an earlier id of the same list (the
    /// first is kept). One line for the whole state.
    BadIds {
        /// How many.
        count: usize,
    },
    /// Link items of one conversation whose address was refused.
    Links {
        /// The conversation.
        conversation: String,
        /// How many.
        count: usize,
    },
    /// Conversations over [`MAX_CONVERSATIONS`] (the oldest).
    Conversations {
        /// How many.
        count: usize,
    },
    /// Questions left without a single option, or over [`MAX_QUESTIONS`].
    Questions {
        /// The conversation.
        conversation: String,
        /// How many.
        count: usize,
    },
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dropped::BadIds { count } => write!(f, "dropped {count} objects with a bad id"),
            Dropped::Links {
                conversation,
                count,
            } => write!(f, "dropped {count} links of conversation {conversation}"),
            Dropped::Conversations { count } => {
                write!(f, "dropped the {count} oldest conversations")
            }
            Dropped::Questions {
                conversation,
                count,
            } => write!(
                f,
                "dropped {count} questions of conversation {conversation}"
            ),
        }
    }
}

impl View {
    /// Sanitizes an agent's state (SPEC §10.3) and reports what it left out.
    ///
    /// - Every object whose id fails [`sanitize::id`], or repeats an earlier id of its list, is
    ///   dropped (one [`Dropped::BadIds`] for the whole state). Ids are kept byte for byte.
    /// - Every string goes through [`sanitize::text`] with its limit from [`limits`]: item text,
    ///   tool output and a question's reason keep `\n` and `\t`; titles, labels and the tool
    ///   summary are one line.
    /// - A conversation's or question's title that is blank after sanitizing shows its id; an
    ///   option, action or starter whose label is blank is dropped (no button is ever blank);
    ///   a question left without options is dropped, and so are questions past
    ///   [`MAX_QUESTIONS`] ([`Dropped::Questions`]). A question is `shortened` when its title or
    ///   reason changed.
    /// - A link item whose address fails [`sanitize::link`] is dropped (one [`Dropped::Links`]
    ///   per conversation, counting its questions' items too). A link keeps only its address,
    ///   a tool call its summary and output besides its text, other kinds only their text.
    /// - Unknown kinds, roles and states read as their defaults.
    /// - Conversations are sorted newest `updated` first (the agent's order among equals) and cut
    ///   to [`MAX_CONVERSATIONS`] ([`Dropped::Conversations`]); a conversation keeps its last
    ///   [`MAX_ITEMS`] items, a question its first [`MAX_QUESTION_ITEMS`] items and
    ///   [`MAX_OPTIONS`] options, a conversation its first [`MAX_ACTIONS`] actions, the state its
    ///   first [`MAX_STARTERS`] starters.
    ///
    /// Ids are checked and lists cut before any text is sanitized, so a huge reply costs one
    /// look at each id, not a copy of each string.
    pub fn from_wire(state: wire::State) -> (View, Vec<Dropped>) {
        let mut bad_ids = 0;
        let mut conversations = first_valid(state.conversations, |c| &c.id, &mut bad_ids);
        // Stable: conversations with the same time keep the agent's order.
        conversations.sort_by_key(|c| std::cmp::Reverse(c.updated.unwrap_or(0)));
        let old = conversations.len().saturating_sub(MAX_CONVERSATIONS);
        conversations.truncate(MAX_CONVERSATIONS);
        let mut later = Vec::new();
        let conversations = conversations
            .into_iter()
            .map(|c| conversation(c, &mut bad_ids, &mut later))
            .collect();
        let starters = buttons(state.starters, MAX_STARTERS, &mut bad_ids);
        let mut dropped = Vec::new();
        if bad_ids > 0 {
            dropped.push(Dropped::BadIds { count: bad_ids });
        }
        if old > 0 {
            dropped.push(Dropped::Conversations { count: old });
        }
        dropped.append(&mut later);
        (
            View {
                conversations,
                starters,
            },
            dropped,
        )
    }
}

/// The objects of `list` whose id passes [`sanitize::id`] and is the first of its kind in the
/// list, in order; `bad` counts the rest.
fn first_valid<T>(list: Vec<T>, id_of: impl Fn(&T) -> &str, bad: &mut usize) -> Vec<T> {
    let keep: Vec<bool> = {
        let mut seen = HashSet::with_capacity(list.len());
        list.iter()
            .map(|t| {
                let id = id_of(t);
                sanitize::id(id) && seen.insert(id)
            })
            .collect()
    };
    *bad += keep.iter().filter(|k| !**k).count();
    list.into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect()
}

/// Whether a sanitized title or label shows nothing (empty, or only whitespace).
fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

fn conversation(
    c: wire::Conversation,
    bad: &mut usize,
    dropped: &mut Vec<Dropped>,
) -> ConversationView {
    let (title, _) = sanitize::text(&c.title, false, limits::TITLE);
    let title = if blank(&title) { c.id.clone() } else { title };
    let state = match c.state.as_str() {
        "working" => ConversationState::Working,
        "closed" => ConversationState::Closed,
        _ => ConversationState::Idle,
    };
    let mut links = 0;
    let items = items(c.items, Keep::Last(MAX_ITEMS), bad, &mut links);
    let mut unasked = 0;
    let mut questions = Vec::new();
    for q in first_valid(c.questions, |q| &q.id, bad) {
        if questions.len() == MAX_QUESTIONS {
            unasked += 1;
            continue;
        }
        match question(q, bad, &mut links) {
            Some(q) => questions.push(q),
            None => unasked += 1,
        }
    }
    let actions = buttons(c.actions, MAX_ACTIONS, bad);
    if links > 0 {
        dropped.push(Dropped::Links {
            conversation: c.id.clone(),
            count: links,
        });
    }
    if unasked > 0 {
        dropped.push(Dropped::Questions {
            conversation: c.id.clone(),
            count: unasked,
        });
    }
    ConversationView {
        id: c.id,
        title,
        state,
        updated: c.updated.unwrap_or(0),
        items,
        questions,
        actions,
    }
}

/// A question, or `None` when no option is left.
fn question(q: wire::Question, bad: &mut usize, links: &mut usize) -> Option<QuestionView> {
    let options = buttons(q.options, MAX_OPTIONS, bad);
    if options.is_empty() {
        return None;
    }
    let (title, title_changed) = sanitize::text(&q.title, false, limits::QUESTION);
    let (reason, reason_changed) = sanitize::text(&q.reason, true, limits::REASON);
    let title = if blank(&title) { q.id.clone() } else { title };
    Some(QuestionView {
        id: q.id,
        title,
        reason,
        items: items(q.items, Keep::First(MAX_QUESTION_ITEMS), bad, links),
        options,
        shortened: title_changed || reason_changed,
        card: None,
    })
}

/// Which end of a list of items is kept.
#[derive(Clone, Copy)]
enum Keep {
    /// A conversation's newest.
    Last(usize),
    /// A question's first (what is decided comes first).
    First(usize),
}

fn items(list: Vec<wire::Item>, keep: Keep, bad: &mut usize, links: &mut usize) -> Vec<ItemView> {
    let mut list: Vec<wire::Item> = first_valid(list, |i| &i.id, bad)
        .into_iter()
        .filter(|i| {
            let refused = item_kind(&i.kind) == ItemKind::Link && !sanitize::link(&i.url);
            *links += usize::from(refused);
            !refused
        })
        .collect();
    match keep {
        Keep::Last(max) => {
            let old = list.len().saturating_sub(max);
            list.drain(..old);
        }
        Keep::First(max) => list.truncate(max),
    }
    list.into_iter().map(item).collect()
}

fn item(i: wire::Item) -> ItemView {
    let kind = item_kind(&i.kind);
    let role = match i.role.as_str() {
        "user" => Role::User,
        "tool" => Role::Tool,
        _ => Role::Agent,
    };
    let mut view = ItemView {
        id: i.id,
        kind,
        role,
        text: String::new(),
        url: String::new(),
        summary: String::new(),
        output: String::new(),
        at: i.at.unwrap_or(0),
    };
    match kind {
        // Checked by `sanitize::link`, which refuses anything `sanitize::text` would change.
        ItemKind::Link => view.url = i.url,
        _ => view.text = sanitize::text(&i.text, true, limits::TEXT).0,
    }
    if kind == ItemKind::Tool {
        view.summary = sanitize::text(&i.summary, limits::SUMMARY_MULTI_LINE, limits::SUMMARY).0;
        view.output = sanitize::text(&i.output, true, limits::TEXT).0;
    }
    view
}

fn item_kind(kind: &str) -> ItemKind {
    match kind {
        "markdown" => ItemKind::Markdown,
        "code" => ItemKind::Code,
        "diff" => ItemKind::Diff,
        "link" => ItemKind::Link,
        "tool" => ItemKind::Tool,
        _ => ItemKind::Text,
    }
}

/// Options, actions or starters: valid first ids, labels not blank, at most `max`.
fn buttons(list: Vec<wire::Button>, max: usize, bad: &mut usize) -> Vec<ButtonView> {
    first_valid(list, |b| &b.id, bad)
        .into_iter()
        .filter_map(|b| {
            let (label, _) = sanitize::text(&b.label, false, limits::LABEL);
            (!blank(&label)).then_some(ButtonView { id: b.id, label })
        })
        .take(max)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
