//! The lead's side of the streams members open after their hello ([`collie_crew::uplink`]):
//! decoded here, answered by the application ([`crate::app::walky::forward`], and the audit heads
//! of [`crate::app::witness`]).

use collie_actors::crew_link::UplinkStream;
use collie_crew::relay::server::REQUEST_WITHIN;
use collie_crew::transport::{RecvFrames, SendFrames};
use collie_crew::uplink::{Uplink, UplinkAnswer};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::app::walky::forward;
use crate::app::App;

/// Uplink streams that may wait for the server at once.
pub const QUEUE: usize = 256;

/// Serves uplink streams until the channel closes; each in its own task, aborted with this future.
pub async fn run(app: App, mut streams: mpsc::Receiver<UplinkStream>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            stream = streams.recv() => {
                let Some(stream) = stream else { break };
                let app = app.clone();
                tasks.spawn(async move { serve(&app, stream).await });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
}

async fn serve(app: &App, stream: UplinkStream) {
    let UplinkStream {
        member,
        certificate,
        mut send,
        mut recv,
    } = stream;
    let request = match tokio::time::timeout(REQUEST_WITHIN, recv.recv_message::<Uplink>()).await {
        Ok(Ok(Some(request))) => request,
        _ => return,
    };
    let answer = match request {
        Uplink::Walky(signed) => {
            let result = forward::forward(app, &member, certificate, *signed).await;
            // The member hears first; the lead's own record of the result follows.
            let _ = send
                .send_message(&UplinkAnswer::Walky(result.clone()))
                .await;
            let _ = send.finish();
            forward::settle(app, &result);
            return;
        }
        Uplink::Who => {
            let (panes, unreachable) = crate::app::walky::inbox::crew_panes(app).await;
            UplinkAnswer::Who { panes, unreachable }
        }
        Uplink::AuditHead(head) => match app.keep_audit_head(&member, head).await {
            Ok(()) => UplinkAnswer::HeadKept,
            Err(why) => UplinkAnswer::Refused(why),
        },
        Uplink::Witnessed => match app.witnessed_heads(&member).await {
            Ok(heads) => UplinkAnswer::Witnessed(heads),
            Err(why) => UplinkAnswer::Refused(why),
        },
        _ => UplinkAnswer::Refused("unknown request".into()),
    };
    let _ = send.send_message(&answer).await;
    let _ = send.finish();
}
