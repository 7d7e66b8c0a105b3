//! `collie cards [list] [--json]`: the cards waiting for a tap and the last receipts (SPEC §10.1).
//! Reading only — there is no CLI command that answers a card: only a paired device's tap does.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use collie_actors::cards::actor::CardList;

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
        let place = match &card.pane_name {
            Some(name) => format!("{}/{name}", card.machine),
            None => card.machine.clone(),
        };
        outln!(
            "waiting  {}  {place}  {}  (expires in {} s)",
            short(&card.id),
            card.title,
            card.expires.saturating_sub(now) / 1000
        )?;
    }
    for r in &list.receipts {
        let state = serde_json::to_value(r.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let by = match (&r.option, &r.device) {
            (Some(option), Some(device)) => format!("{option} by {device}"),
            _ => state,
        };
        outln!(
            "{:>3} s ago  {}  {}  {}  {by}",
            now.saturating_sub(r.at) / 1000,
            short(&r.card),
            r.machine,
            r.title
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The first 8 characters of an id (enough to tell cards apart on a screen).
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
