//! The member's relay server: serves each relay stream the lead opens with the operations a phone
//! on this machine would get ([`crate::app`]), so a relayed request is masked, validated and
//! audited exactly like a local one. The caller is the lead relaying for its phone's device, with
//! the lead's request id: the audit line of a relayed write carries that device and request id,
//! `"via": "relay"` and the lead's name (SPEC §7).

use collie_actors::crew_link::RelayStream;
use collie_crew::relay::server::{self, Events, Handler};
use collie_crew::relay::{Card, ColourEvent, RelayError, RelayKind, RelayOk};
use collie_crew::relay::{Folders, RelayRequest, Stored, StreamEvent};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::app::ended::EndedDevice;
use crate::app::follow::Follow;
use crate::app::panes::Launch;
use crate::app::{walky, wire};
use crate::app::{App, Caller};

/// How many relay streams may wait for the server at once (the crew link resets streams past
/// this; the lead's own per-member limits stay below it).
pub const QUEUE: usize = 64;

/// Serves relay streams from `streams` until the channel closes; each stream runs in its own task,
/// all aborted when this future is dropped.
pub async fn run(app: App, mut streams: mpsc::Receiver<RelayStream>) {
    let served = Served { app };
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            stream = streams.recv() => {
                let Some((send, recv)) = stream else { break };
                let served = served.clone();
                tasks.spawn(async move { server::serve(send, recv, &served).await });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

/// The [`Handler`] of this bridge.
#[derive(Clone)]
struct Served {
    app: App,
}

impl Served {
    fn caller(&self, request: &RelayRequest) -> Caller {
        self.app.lead_caller(
            request.device.clone(),
            request.device_id.clone(),
            request.request_id.clone(),
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

impl Handler for Served {
    type Events = Following;

    async fn handle(&self, request: &RelayRequest) -> Result<RelayOk, RelayError> {
        let app = &self.app;
        let caller = self.caller(request);
        let ok = match request.kind.clone() {
            RelayKind::PaneList => RelayOk::PaneList(app.local_panes().await?),
            RelayKind::Snapshot { pane, scrollback } => {
                let lines = usize::try_from(scrollback.unwrap_or(0)).unwrap_or(usize::MAX);
                RelayOk::Snapshot(app.snapshot(&caller, HERE, pane, lines).await?.snapshot)
            }
            RelayKind::SnapshotColour { pane, scrollback } => {
                let lines = usize::try_from(scrollback.unwrap_or(0)).unwrap_or(usize::MAX);
                RelayOk::SnapshotColour(app.snapshot(&caller, HERE, pane, lines).await?)
            }
            RelayKind::Input { pane, text, keys } => {
                app.input(&caller, HERE, pane, text.unwrap_or_default(), keys)
                    .await?;
                RelayOk::Done
            }
            RelayKind::Create { name, starter } => {
                let launch = starter.map_or(Launch::Shell, Launch::Starter);
                RelayOk::Created(app.create_pane(&caller, HERE, name, launch).await?)
            }
            RelayKind::CreateIn {
                name,
                starter,
                folder,
            } => {
                // The folder is checked against this machine's own workspaces.
                let launch = starter.map_or(Launch::Shell, Launch::Starter);
                RelayOk::Created(
                    app.create_pane_in(&caller, HERE, name, launch, Some(folder))
                        .await?,
                )
            }
            RelayKind::Sessions => RelayOk::Sessions(app.local_sessions().await?),
            RelayKind::CreateWindow {
                name,
                starter,
                folder,
                session,
            } => {
                // The session, the folder and the starter are this machine's own, checked here.
                let launch = starter.map_or(Launch::Shell, Launch::Starter);
                RelayOk::Created(
                    app.create_window(&caller, HERE, session, name, launch, folder)
                        .await?,
                )
            }
            RelayKind::CreateRow {
                row,
                name,
                spec,
                folder,
            } => {
                // This machine's own `[phone]` rules for rows apply in the create.
                let launch = Launch::Row { row, spec };
                RelayOk::Created(
                    app.create_pane_in(&caller, HERE, name, launch, folder)
                        .await?,
                )
            }
            RelayKind::Browse { path } => {
                let b = app.browse_folders(&caller, HERE, path).await?;
                RelayOk::Folders(Folders {
                    path: b.path,
                    folders: b.folders,
                    truncated: b.truncated,
                })
            }
            RelayKind::Chat { pane, after } => {
                RelayOk::Chat(wire::chat::chat(app.local_chat(pane, after).await?))
            }
            RelayKind::Rename { pane, name } => {
                app.rename_pane(&caller, HERE, pane, name).await?;
                RelayOk::Done
            }
            RelayKind::Close { pane } => {
                app.close_pane(&caller, HERE, pane).await?;
                RelayOk::Done
            }
            // One stream per subscription: the lead ends one by leaving its stream.
            RelayKind::Unsubscribe { .. } => RelayOk::Done,
            RelayKind::Walky { forwarded } => {
                RelayOk::Walky(walky::deliver::from_lead(app, *forwarded).await)
            }
            RelayKind::Cards => RelayOk::Cards(wire::cards::list(app.cards().await?)),
            RelayKind::CardAnswer {
                id,
                option,
                shown,
                confirm,
            } => RelayOk::CardAnswer(
                app.answer_card(&caller, id, option, shown, confirm)
                    .await?
                    .relayed(),
            ),
            RelayKind::Durable => {
                RelayOk::Durable(crate::app::durable::wire::list(app.local_durable().await?))
            }
            RelayKind::DurableWrite {
                agent,
                conversation,
                write,
            } => {
                let write = crate::app::durable::wire::write_of(write);
                let done = app
                    .durable_write(&caller, agent, conversation, write)
                    .await?;
                RelayOk::DurableWrite(done.conversation)
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
            RelayKind::Blob { pane, name, bytes } => {
                let up = app.upload(&caller, HERE, &pane, &name, bytes).await?;
                RelayOk::Stored(Stored {
                    id: up.id,
                    path: up.path,
                    name: up.name,
                    size: up.size,
                })
            }
            RelayKind::SentList => RelayOk::SentLines(app.sent_list(&caller).await?.relayed()),
            RelayKind::SentDiscard { id } => RelayOk::Discarded(
                app.sent_discard(&caller, HERE, Some(id)).await?.discarded as u64,
            ),
            RelayKind::SentClear => {
                RelayOk::Discarded(app.sent_discard(&caller, HERE, None).await?.discarded as u64)
            }
            RelayKind::Starters => RelayOk::Starters(app.local_starters()),
            RelayKind::Command { command } => {
                RelayOk::Created(app.run_command(&caller, None, command).await?.pane)
            }
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
