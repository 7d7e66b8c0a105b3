//! One push request: the payload encrypted for the subscription (RFC 8291 `aes128gcm`, by
//! `web-push-native`) and signed for the service (RFC 8292 VAPID, by [`super::vapid`]).

use web_push_native::{p256, Auth, WebPushBuilder};

use super::endpoint::{Endpoint, EndpointError, Subscription};
use super::vapid::{Vapid, VapidError};

/// How long a push service may hold a message for an offline phone (the `TTL` header): as long as
/// a held permission waits by default, after which the question is gone anyway.
pub const TTL: std::time::Duration = std::time::Duration::from_secs(600);

/// Why a request could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The stored keys are not usable.
    #[error(transparent)]
    Keys(#[from] EndpointError),
    /// Encryption failed.
    #[error("push encryption failed: {0}")]
    Encrypt(String),
    /// Signing failed.
    #[error(transparent)]
    Sign(#[from] VapidError),
}

/// The POST of `plaintext` to `sub` (whose endpoint was checked as `endpoint`), signed at `now`
/// (Unix seconds).
pub fn request(
    sub: &Subscription,
    endpoint: &Endpoint,
    vapid: &Vapid,
    plaintext: Vec<u8>,
    now: u64,
) -> Result<http::Request<Vec<u8>>, MessageError> {
    let keys = sub.keys()?;
    let ua_public =
        p256::PublicKey::from_sec1_bytes(&keys.p256dh).map_err(|_| EndpointError::P256dh)?;
    let uri: http::Uri = endpoint.url.parse().map_err(|_| EndpointError::NotHttps)?;
    let mut request = WebPushBuilder::new(uri, ua_public, Auth::clone_from_slice(&keys.auth))
        .with_valid_duration(TTL)
        .build(plaintext)
        .map_err(|e| MessageError::Encrypt(e.to_string()))?;
    let authorization = vapid.authorization(&endpoint.origin(), now)?;
    let headers = request.headers_mut();
    headers.insert(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_str(&authorization)
            .map_err(|e| MessageError::Encrypt(e.to_string()))?,
    );
    // A question waits for a person: deliver at once, also to a phone saving its battery.
    headers.insert("urgency", http::HeaderValue::from_static("high"));
    Ok(request)
}
