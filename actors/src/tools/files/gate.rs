//! What a file write checks before it touches anything: each path it names resolved inside the
//! workspaces, and writable there. The write tools run these first; the application runs them
//! ([`crate::tools::toolbox::Toolbox::check_write`]) before it writes the tool's audit line, so a
//! write refused here leaves a `security.denied` and no `tool.<name>` line (SPEC §7: a line is
//! written for what happened, never for what was refused before it happened). Everything later
//! (the open beneath the root, the kind of the target) is still checked by the tool itself.

use serde::Deserialize;
use serde_json::Value;

use crate::tools::registry::ToolName;
use crate::tools::workspace::{is_special_folder_name, Last, Resolved, Workspaces};
use crate::tools::ToolError;

/// `path`, resolved (the last component followed or kept as `last` says), where a write may go.
pub(super) fn writable(ws: &Workspaces, path: &str, last: Last) -> Result<Resolved, ToolError> {
    let r = ws.resolve_with(path, last)?;
    if !ws.allows_write(&r.path) {
        return Err(ToolError::PathNotAllowed);
    }
    Ok(r)
}

/// A move's source and destination, both resolved without following their last component and
/// both where a write may go (never a special folder such as `.git` itself).
pub(super) fn movable(
    ws: &Workspaces,
    source: &str,
    destination: &str,
) -> Result<(Resolved, Resolved), ToolError> {
    let src = ws.resolve_with(source, Last::Keep)?;
    if src.missing > 0 {
        return Err(ToolError::NoSuchFile);
    }
    let dst = ws.resolve_with(destination, Last::Keep)?;
    for p in [&src.path, &dst.path] {
        if !ws.allows_write(p) || is_special_folder_name(p) {
            return Err(ToolError::PathNotAllowed);
        }
    }
    Ok((src, dst))
}

/// The path arguments of the write tools (the rest of the arguments is the tool's to read).
#[derive(Deserialize)]
struct Paths {
    path: Option<String>,
    file_path: Option<String>,
    source: Option<String>,
    destination: Option<String>,
}

/// The checks above for `tool` with `args`, before it runs; other tools pass. Arguments that do
/// not read pass too: the tool itself refuses them, before it touches anything.
pub fn check_write(ws: &Workspaces, tool: ToolName, args: &Value) -> Result<(), ToolError> {
    let Ok(p) = Paths::deserialize(args) else {
        return Ok(());
    };
    match (tool, p) {
        (
            ToolName::WriteFile | ToolName::CreateDirectory,
            Paths {
                path: Some(path), ..
            },
        ) => writable(ws, &path, Last::Follow).map(|_| ()),
        (
            ToolName::EditBlock,
            Paths {
                file_path: Some(path),
                ..
            },
        ) => {
            let resolved = ws.resolve(&path)?;
            if ws.allows_write(&resolved) {
                Ok(())
            } else {
                Err(ToolError::PathNotAllowed)
            }
        }
        (
            ToolName::MoveFile,
            Paths {
                source: Some(s),
                destination: Some(d),
                ..
            },
        ) => movable(ws, &s, &d).map(|_| ()),
        _ => Ok(()),
    }
}
