//! The member's relay server: serves each relay stream the lead opens with the operations a phone
//! on this machine would get ([`crate::app`]), so a relayed request is masked, validated and
//! audited exactly like a local one. The caller is the lead relaying for its phone's device, with
//! the lead's request id: the audit line of a relayed write carries that device and request id,
//! `"via": "relay"` and the lead's name (SPEC §7).

use collie_actors::crew_link::RelayStream;
use collie_crew::relay::server::{self, Events, Handler};
use collie_crew::relay::{Card, ColourEvent, RelayError, RelayKind, RelayOk};
use collie_crew::relay::{RelayRequest, StreamEvent};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::app::blobs::Upload;
use crate::app::browse::BrowseFolders;
use crate::app::cards::{CardTap, ListCards};
use crate::app::chat::ReadChat;
use crate::app::commands::RunCommand;
use crate::app::durable::{AgentWrite, ListAgents};
use crate::app::ended::EndedDevice;
use crate::app::follow::Follow;
use crate::app::new_pane::{Launch, NewPane};
use crate::app::operation::Operation;
use crate::app::pane_writes::{PaneClose, PaneInput, PaneRename};
use crate::app::panes::{ListPanes, ReadScreen};
use crate::app::sent::{ListSent, SentDiscard};
use crate::app::windows::ListSessions;
use crate::app::{walky, wire};
use crate::app::{App, Caller};

/// How many relay streams may wait for the server at once (the crew link resets streams past
/// this; the lead's own per-member limits stay below it).
pub const QUEUE: usize = 64;

/// Serves relay streams from `streams` until the channel closes; each stream runs in its own task,
/// all aborted when this future is dropped.
pub async fn run(app: App, mut streams: mpsc::Receiver<RelayStream>) {
    let served = Served { app, deputy: None };
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            stream = streams.recv() => {
                let Some(RelayStream { send, recv, deputy }) = stream else { break };
                let served = Served { app: served.app.clone(), deputy };
                tasks.spawn(async move { server::serve(send, recv, &served).await });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// The [`Handler`] of this bridge, for the streams of one peer: the lead, or the deputy standing
/// in for it.
#[derive(Clone)]
struct Served {
    app: App,
    deputy: Option<String>,
}

impl Served {
    fn caller(&self, request: &RelayRequest) -> Caller {
        self.app.lead_caller(
            request.device.clone(),
            request.device_id.clone(),
            request.request_id.clone(),
            self.deputy.clone(),
        )
    }
}

/// A followed pane, for a subscription.
struct Following(Box<Follow>);

impl Events for Following {
    async fn next(&mut self) -> Option<StreamEvent> {
        self.0.next().await.map(|change| change.event)
    }

    async fn next_colour(&mut self) -> Option<ColourEvent> {
        self.0.next().await
    }

    fn ended(&self) -> Option<RelayError> {
        self.0.relay_ended()
    }
}

/// Card changes a lead's feed may fall behind by before they wait.
const CARD_FEED: usize = 64;

/// This machine, as a relayed request names it.
const HERE: &str = "local";

/// Runs `op` on this machine for the lead, as for this machine's own callers; answers what the
/// relay carries back.
async fn serve<O: Operation>(app: &App, caller: &Caller, op: O) -> Result<RelayOk, RelayError> {
    Ok(O::reply(app.run(caller, HERE, op).await?)?)
}

/// A screen as the lead asks for it.
fn read_screen(pane: String, scrollback: Option<u32>) -> ReadScreen {
    let scrollback = usize::try_from(scrollback.unwrap_or(0)).unwrap_or(usize::MAX);
    ReadScreen { pane, scrollback }
}

/// A create as the lead relays it: a starter by name, or the shell.
fn new_pane(
    name: Option<String>,
    starter: Option<String>,
    folder: Option<String>,
    session: Option<String>,
) -> NewPane {
    NewPane {
        name,
        launch: starter.map_or(Launch::Shell, Launch::Starter),
        folder,
        session,
    }
}

impl Handler for Served {
    type Events = Following;

    async fn handle(&self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        let app = &self.app;
        let caller = self.caller(request);
        let ok = match request.kind.clone() {
            RelayKind::PaneList => serve(app, &caller, ListPanes).await?,
            // A lead of this protocol asks with colours; the plain kind is still served.
            RelayKind::Snapshot { pane, scrollback } => {
                let op = read_screen(pane, scrollback);
                RelayOk::Snapshot(app.run(&caller, HERE, op).await?.snapshot)
            }
            RelayKind::SnapshotColour { pane, scrollback } => {
                serve(app, &caller, read_screen(pane, scrollback)).await?
            }
            RelayKind::Input { pane, text, keys } => {
                let text = text.unwrap_or_default();
                serve(app, &caller, PaneInput { pane, text, keys }).await?
            }
            RelayKind::Create { name, starter } => {
                serve(app, &caller, new_pane(name, starter, None, None)).await?
            }
            // The folder is checked against this machine's own workspaces.
            RelayKind::CreateIn {
                name,
                starter,
                folder,
            } => serve(app, &caller, new_pane(name, starter, Some(folder), None)).await?,
            RelayKind::Sessions => serve(app, &caller, ListSessions).await?,
            // The session, the folder and the starter are this machine's own, checked here.
            RelayKind::CreateWindow {
                name,
                starter,
                folder,
                session,
            } => serve(app, &caller, new_pane(name, starter, folder, Some(session))).await?,
            RelayKind::CreateRow {
                row,
                name,
                spec,
                folder,
            } => {
                // This machine's own `[phone]` rules for rows apply in the create.
                let new = NewPane {
                    name,
                    launch: Launch::Row { row, spec },
                    folder,
                    session: None,
                };
                serve(app, &caller, new).await?
            }
            RelayKind::Browse { path } => serve(app, &caller, BrowseFolders { path }).await?,
            RelayKind::Chat { pane, after } => {
                serve(app, &caller, ReadChat { pane, after }).await?
            }
            RelayKind::Rename { pane, name } => {
                serve(app, &caller, PaneRename { pane, name }).await?
            }
            RelayKind::Close { pane } => serve(app, &caller, PaneClose { pane }).await?,
            // One stream per subscription: the lead ends one by leaving its stream.
            RelayKind::Unsubscribe { .. } => RelayOk::Done,
            RelayKind::Walky { forwarded } => {
                RelayOk::Walky(walky::deliver::from_lead(app, *forwarded).await)
            }
            RelayKind::Cards => serve(app, &caller, ListCards).await?,
            RelayKind::CardAnswer {
                id,
                option,
                shown,
                confirm,
            } => serve(app, &caller, CardTap::new(id, option, shown, confirm)).await?,
            RelayKind::Durable => serve(app, &caller, ListAgents).await?,
            RelayKind::DurableWrite {
                agent,
                conversation,
                write,
            } => {
                let write = crate::app::durable::wire::write_of(write);
                let op = AgentWrite {
                    agent,
                    conversation,
                    write,
                };
                serve(app, &caller, op).await?
            }
            RelayKind::Tool { tool, args } => {
                let args = wire::object(&args).ok_or_else(|| {
                    RelayError::BadInput("the arguments must be a JSON object".into())
                })?;
                RelayOk::Tool(wire::json(&app.call_tool(&caller, &tool, args).await?)?)
            }
            RelayKind::DeviceEnded { device_id } => {
                let ended = EndedDevice {
                    id: device_id,
                    label: request.device.clone(),
                };
                app.device_ended(&caller, ended).await?;
                RelayOk::Done
            }
            RelayKind::Deputy { copy } => {
                match app.take_deputy_copy(&caller, copy.map(|c| *c)).await? {
                    Some(port) => RelayOk::DeputyDoor {
                        port,
                        url: app.public_url(),
                    },
                    None => RelayOk::Done,
                }
            }
            RelayKind::DeputyLines { after } => {
                let (lines, scanned) = app.deputy_lines(&caller, after).await?;
                RelayOk::DeputyLines { lines, scanned }
            }
            RelayKind::DeputyNotice { notice } => {
                app.take_deputy_notice(&caller, notice.map(|n| *n)).await?;
                RelayOk::Done
            }
            RelayKind::Blob { pane, name, bytes } => {
                serve(app, &caller, Upload { pane, name, bytes }).await?
            }
            RelayKind::SentList => serve(app, &caller, ListSent).await?,
            RelayKind::SentDiscard { id } => {
                serve(app, &caller, SentDiscard { id: Some(id) }).await?
            }
            RelayKind::SentClear => serve(app, &caller, SentDiscard { id: None }).await?,
            RelayKind::Starters => RelayOk::Starters(app.local_starters()),
            RelayKind::Command { command } => serve(app, &caller, RunCommand { command }).await?,
            RelayKind::WalkyCard { id } => RelayOk::WalkyCard(
                walky::inbox::card_of(app, &id)
                    .await?
                    .map(crate::app::walky::wire::card),
            ),
            _ => return Err(RelayError::UnknownKind),
        };
        Ok(ok)
    }

    async fn watch_cards(
        &self,
        _request: &RelayRequest,
    ) -> Result<mpsc::Receiver<Card>, RelayError> {
        let mut changes = self.app.watch_cards().await?;
        let (feed, rx) = mpsc::channel(CARD_FEED);
        self.app.spawn(async move {
            loop {
                tokio::select! {
                    () = feed.closed() => break,
                    change = changes.recv() => {
                        // A feed that fell behind (or whose cards actor stopped) ends: the lead's
                        // phone reads the list again when it reconnects.
                        let Ok(card) = change else { break };
                        if feed.send(wire::cards::card(card)).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(rx)
    }

    async fn subscribe(
        &self,
        _request: &RelayRequest,
        pane: &str,
    ) -> Result<Following, RelayError> {
        Ok(Following(Box::new(
            Follow::start(&self.app, pane.to_owned()).await?,
        )))
    }
}
