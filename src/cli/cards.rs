//! `collie cards [list] [--json]`: the cards waiting for a tap and the last receipts (SPEC §10.1).
//! Reading only — there is no CLI command that answers a card: only a paired device's tap does.
//!
//! A card shows what it decides, all of it: each waiting card is printed with its items (the
//! command, path or URL, what "Always allow" adds), its notes and its options. Every string goes
//! through [`visible`] — the bridge already escaped a card's text, and this prints no control
//! character whatever it is given: no line of a card can write to the terminal's clipboard,
//! retitle or clear it.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use collie_actors::cards::actor::CardList;
use collie_actors::cards::card::{Card, Item};
use collie_actors::cards::visible::visible;

use super::{ask, print_json};
use crate::control::protocol::Request;

/// What to show.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(super) enum What {
    /// Waiting cards and receipts (the default).
    List,
}

/// Arguments of `collie cards`.
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// What to show.
    #[arg(value_enum, default_value = "list")]
    what: What,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `s` on one line, every control, invisible or direction character an escape.
fn one(s: &str) -> std::borrow::Cow<'_, str> {
    visible(s, false)
}

pub(super) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let What::List = args.what;
    let list: CardList = match ask(&Request::Cards) {
        Ok(v) => v,
        Err(code) => return Ok(code),
    };
    if args.json {
        print_json(&list)?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    if list.cards.is_empty() {
        outln!("no cards waiting")?;
    }
    for card in &list.cards {
        print_card(card, now)?;
    }
    for r in &list.receipts {
        let state = serde_json::to_value(r.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let by = match (&r.option, &r.device) {
            (Some(option), Some(device)) => format!("{} by {}", one(option), one(device)),
            _ => state,
        };
        outln!(
            "{:>3} s ago  {}  {}  {}  {by}",
            now.saturating_sub(r.at) / 1000,
            one(short(&r.card)),
            one(&r.machine),
            one(&r.title)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One waiting card: a heading line, its notes, its items indented line by line, its options.
fn print_card(card: &Card, now: u64) -> std::io::Result<()> {
    let place = match &card.pane_name {
        Some(name) => format!("{}/{}", one(&card.machine), one(name)),
        None => one(&card.machine).into_owned(),
    };
    outln!(
        "waiting  {}  {place}  {}  (expires in {} s)",
        one(short(&card.id)),
        one(&card.title),
        card.expires.saturating_sub(now) / 1000
    )?;
    if card.hidden_characters {
        outln!("    ! holds hidden characters, shown as ⟨…⟩")?;
    }
    if card.masked {
        outln!("    ! secrets masked (•)")?;
    }
    if card.not_shown > 0 {
        outln!(
            "    ! shortened: {} bytes not shown; only Deny is offered",
            card.not_shown
        )?;
    } else if card.shortened {
        outln!("    ! text shortened")?;
    }
    for item in &card.items {
        let (mark, text) = match item {
            Item::Text { text } => ("  ", text),
            Item::Code { text } | Item::Diff { text } => ("| ", text),
            Item::Link { url } => ("→ ", url),
        };
        for line in text.split('\n') {
            outln!("    {mark}{}", one(line))?;
        }
    }
    let options: Vec<String> = card
        .options
        .iter()
        .map(|o| one(&o.label).into_owned())
        .collect();
    outln!("    answers (on a paired phone): {}", options.join(" · "))
}

/// The first 8 characters of an id (enough to tell cards apart on a screen).
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
