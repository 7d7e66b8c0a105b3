//! `POST /mcp`: the tools of SPEC §11 for any MCP client that holds a paired device's token — MCP's
//! Streamable HTTP transport, served by the `rmcp` SDK statelessly with JSON answers.
//!
//! An adapter like the others: [`authorize`] names the caller from `Authorization: Bearer <token>`
//! exactly as for `/api` (a missing, unknown, revoked or expired token is refused before the MCP
//! layer sees the request), and every `tools/call` goes to [`App::call_tool`] — the same registry,
//! tier gate, validation, audit and masking as `POST /api/tools/{tool}`. `tools/list` shows only
//! the tools the device's tier allows now; each tool takes an optional `machine`, so one client
//! reaches every machine of the crew.
//!
//! A tool's refusal is a tool result with `isError` and Collie's error string (MCP clients show a
//! tool result's text to the model, but often hide a protocol error).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

mod reject;

pub use self::reject::json_rejections;

use super::auth::origin;
use crate::app::authn::Credential;
use crate::app::ops::Op;
use crate::app::{App, AppError, Caller};

/// The largest MCP request body (a `write_file` of the tools' largest content, JSON-escaped).
pub const MAX_MCP_BODY: usize = 24 * 1024 * 1024;

/// The `/mcp` service: stateless, JSON answers, the bridge's own Host names.
pub fn service(
    app: App,
    allowed_hosts: Vec<String>,
) -> StreamableHttpService<Tools, NeverSessionManager> {
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.allowed_hosts = allowed_hosts;
    config.max_request_body_bytes = MAX_MCP_BODY;
    config.sse_keep_alive = None;
    config.cancellation_token = app.shutdown_token();
    StreamableHttpService::new(
        move || Ok(Tools { app: app.clone() }),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Names the caller of an MCP request (a paired device, by its bearer token) and puts it in the
/// request's extensions, where [`Tools`] finds it; refuses anyone else before the MCP layer.
pub async fn authorize(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let from = origin(req.headers(), req.method(), peer);
    let header = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // The local secret is never an MCP credential: only a device has a tier and an owner.
    let caller = match Credential::of(header) {
        Credential::Bearer(_) => app.authenticate(Credential::of(header), &from),
        Credential::Local(_) => Err(AppError::NotPaired),
    };
    let caller = match caller {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = app.admit(&caller, Op::ToolCall.access().gate(), &from) {
        return e.into_response();
    }
    let identity = req
        .extensions()
        .get::<crate::identity::Vouched>()
        .and_then(|v| v.0.clone());
    req.extensions_mut().insert(caller.with_identity(identity));
    next.run(req).await
}

/// The MCP server handler: one per request (stateless), over the application.
#[derive(Clone)]
pub struct Tools {
    app: App,
}

/// The caller the [`authorize`] middleware named, from the HTTP request's parts.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("device not paired", None))
}

/// The MCP description of a tool: its registry entry, its arguments' schema with `machine`.
fn describe(spec: collie_actors::tools::ToolSpec) -> Tool {
    let schema = collie_actors::tools::toolbox::input_schema(spec.name);
    let mut tool = Tool::new(spec.name.as_str(), spec.description, Arc::new(schema));
    let mut hints = ToolAnnotations::new();
    hints.read_only_hint = Some(spec.read_only);
    tool.annotations = Some(hints);
    tool
}

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new(
                "collie",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Collie: files, search and processes on the machines of a crew, under the tier of \
                 this device. Every tool takes an optional `machine` (a crew member's name; this \
                 machine when absent). Text that looks like a secret is masked."
                    .to_owned(),
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller_of(&context)?;
        let tools = crate::app::tools::visible(&self.app, &caller)
            .into_iter()
            .map(describe)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let result = match self
            .app
            .call_tool(&caller, request.name.as_ref(), args)
            .await
        {
            Ok(answer) => {
                let text = answer.to_string();
                let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
                r.structured_content = Some(answer);
                r
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}
