//! Web Push for the phone (SPEC §10.4): the bridge's public key, a device's subscription and its
//! removal. The Push actor checks the endpoint against the allow-list and keeps the
//! subscription; the rules of who may subscribe, and the audit line, live here. [`watch`] is the
//! lead's standing watch that asks the actor about every new card of its members.
//!
//! A subscription belongs to the device that made it, named by its token's hash as well as its
//! label: it is dropped when the device is revoked or unpaired (the actor watches the policy), and
//! a later device under the same label does not inherit it.

pub mod watch;

use collie_actors::audit::AuditEventKind;
use collie_actors::push::actor::{NewSubscription, PushError, PushMsg};
use serde::Serialize;

use super::{App, AppError, Caller, Who};

/// Longest `endpoint` or key string a subscribe may carry, checked before anything else.
const MAX_FIELD: usize = 4_096;

impl From<PushError> for AppError {
    fn from(e: PushError) -> Self {
        match e {
            PushError::Endpoint(e) => AppError::BadRequest(e.to_string()),
            other => AppError::backend("push", other),
        }
    }
}

/// `GET /api/push/subscribe`: whether the asking device has a subscription here, and which
/// devices have one.
#[derive(Debug, Clone, Serialize)]
pub struct PushView {
    /// The asking device has a subscription.
    pub subscribed: bool,
    /// The labels of the devices with a subscription.
    pub devices: Vec<String>,
}

impl App {
    /// The VAPID public key, base64url (made on first use).
    pub async fn push_key(&self) -> Result<String, AppError> {
        Ok(self.agents.push.call(PushMsg::Key).await??)
    }

    /// Keeps `caller`'s subscription (replacing its earlier one): a paired device only. Audited
    /// `push.subscribed` with the push service's host (never the endpoint, which is a credential
    /// for reaching the phone); a line that cannot be written undoes the subscription.
    pub async fn push_subscribe(
        &self,
        caller: &Caller,
        endpoint: String,
        p256dh: String,
        auth: String,
    ) -> Result<(), AppError> {
        let Who::Device { label, token, .. } = caller.who() else {
            return Err(AppError::NotPaired);
        };
        for (name, value) in [
            ("endpoint", &endpoint),
            ("keys.p256dh", &p256dh),
            ("keys.auth", &auth),
        ] {
            if value.len() > MAX_FIELD {
                return Err(AppError::BadRequest(format!("{name} is too long")));
            }
        }
        let new = NewSubscription {
            device: label.clone(),
            token: *token,
            endpoint,
            p256dh,
            auth,
        };
        let host = self
            .agents
            .push
            .call(|reply| PushMsg::Subscribe(Box::new(new), reply))
            .await??;
        let rec = caller
            .record(self, AuditEventKind::PushSubscribed)
            .with_detail("subscribed", "yes")
            .with_detail("service", host);
        if let Err(e) = self.audit(rec).await {
            let _ = self
                .agents
                .push
                .call(|reply| PushMsg::Unsubscribe(label.clone(), reply))
                .await;
            return Err(e);
        }
        Ok(())
    }

    /// Drops `caller`'s subscription; whether it had one. Audited as `push.subscribed` with
    /// `subscribed: no`.
    pub async fn push_unsubscribe(&self, caller: &Caller) -> Result<bool, AppError> {
        let Who::Device { label, .. } = caller.who() else {
            return Err(AppError::NotPaired);
        };
        let rec = caller
            .record(self, AuditEventKind::PushSubscribed)
            .with_detail("subscribed", "no");
        self.audit(rec).await?;
        Ok(self
            .agents
            .push
            .call(|reply| PushMsg::Unsubscribe(label.clone(), reply))
            .await??)
    }

    /// Whether `caller` has a subscription, and who has one.
    pub async fn push_view(&self, caller: &Caller) -> Result<PushView, AppError> {
        let devices = self.agents.push.call(PushMsg::Subscribed).await?;
        let subscribed = caller
            .device_label()
            .is_some_and(|me| devices.iter().any(|d| d == me));
        Ok(PushView {
            subscribed,
            devices,
        })
    }
}
