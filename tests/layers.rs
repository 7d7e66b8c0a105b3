//! The module layers of SPEC §1, checked over the source (`cargo test --test layers`): no import
//! cycle among the top-level modules of any crate of the workspace, and in the binary the
//! application (`app`) depends on no adapter while no adapter depends on another.
//!
//! How it reads the source: every `.rs` file of a top-level module (`src/m.rs` and `src/m/**`),
//! comments dropped, test code left out (files named `tests.rs` or `*_tests.rs`, and everything
//! from a `#[cfg(test)]` line on); an edge `m → n` for every `crate::n` path in what remains. Test
//! code may reach across layers to build its fixtures; shipped code may not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

const CRATES: [&str; 4] = ["src", "actors/src", "crew/src", "simulations/src"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shipped code of `file`: no comments, no test code.
fn shipped(file: &Path) -> String {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(file).expect("read a source file");
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]") {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::<name>` in `code`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        // `collie_crate::x` or `my_crate::x` is another path.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

/// The top-level module graph of the crate whose source is `src`.
fn graph(src: &Path) -> Graph {
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("read src").flatten() {
        let path = entry.path();
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_owned();
        if path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && !stem.is_empty()) {
            modules.insert(stem);
        }
    }
    for root_file in ["lib", "main"] {
        modules.remove(root_file);
    }
    let mut graph = Graph::new();
    for module in &modules {
        let mut files = Vec::new();
        let file = src.join(format!("{module}.rs"));
        if file.exists() {
            files.push(file);
        }
        rust_files(&src.join(module), &mut files);
        let mut deps = BTreeSet::new();
        for file in files {
            deps.extend(
                crate_paths(&shipped(&file))
                    .into_iter()
                    .filter(|n| n != module && modules.contains(n)),
            );
        }
        graph.insert(module.clone(), deps);
    }
    graph
}

/// A cycle of `graph`, if it has one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

fn shown(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, deps)| {
            format!(
                "  {m} -> {}",
                deps.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_crate_has_an_import_cycle_among_its_modules() {
    for src in CRATES {
        let graph = graph(&root().join(src));
        assert!(graph.len() > 2, "{src}: modules not found");
        if let Some(cycle) = cycle(&graph) {
            panic!(
                "{src}: import cycle {}\n{}",
                cycle.join(" -> "),
                shown(&graph)
            );
        }
    }
}

#[test]
fn the_application_depends_on_no_adapter_and_no_adapter_on_another() {
    let graph = graph(&root().join("src"));
    let adapters = ["http", "control", "relay", "mcp", "cli"];
    let app = &graph["app"];
    for adapter in adapters.iter().chain(&["bridge"]) {
        assert!(
            !app.contains(*adapter),
            "app depends on {adapter}\n{}",
            shown(&graph)
        );
    }
    // `mcp` runs in its own process and talks to the bridge as a client of the control socket, as
    // the CLI does; `cli` starts the bridge and the MCP server. Those are the only crossings.
    let allowed = [("mcp", "control"), ("cli", "control"), ("cli", "mcp")];
    for from in ["http", "control", "relay", "mcp"] {
        for to in &graph[from] {
            let crossing = adapters.contains(&to.as_str()) || to == "bridge";
            assert!(
                !crossing || allowed.contains(&(from, to.as_str())),
                "adapter {from} depends on {to}\n{}",
                shown(&graph)
            );
        }
    }
}

#[test]
fn the_checker_finds_a_cycle_and_a_path_behind_a_comment_is_no_edge() {
    // The check itself must be able to fail.
    let mut graph = Graph::new();
    graph.insert("a".into(), ["b".into()].into());
    graph.insert("b".into(), ["c".into()].into());
    graph.insert("c".into(), ["a".into()].into());
    assert_eq!(
        cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    graph.insert("c".into(), BTreeSet::new());
    assert_eq!(cycle(&graph), None);
    assert_eq!(
        crate_paths("use crate::app::App;\nlet x = collie_crate::http::y;"),
        ["app".to_owned()].into()
    );
}

#[test]
fn no_shipped_code_detaches_a_task() {
    // A task is owned: by a `JoinSet` or a `TaskTracker`, or through a handle kept in its owner's
    // state (aborted on drop). A bare `tokio::spawn(…);` or `let _ = tokio::spawn(…)` outlives
    // whatever started it.
    let mut detached = Vec::new();
    for src in CRATES {
        let mut files = Vec::new();
        rust_files(&root().join(src), &mut files);
        for file in files {
            for line in shipped(&file).lines() {
                let t = line.trim_start();
                if t.starts_with("tokio::spawn(")
                    || t.starts_with("tokio::task::spawn(")
                    || t.starts_with("let _ = tokio::spawn(")
                    || t.starts_with("drop(tokio::spawn(")
                {
                    detached.push(format!("{}: {t}", file.display()));
                }
            }
        }
    }
    assert!(
        detached.is_empty(),
        "detached tasks:\n{}",
        detached.join("\n")
    );
}

#[test]
fn the_application_names_no_transport_and_no_http_framework() {
    // SPEC §1: `app` never names axum, the socket or QUIC. The crew link exports what the relay
    // runs on under names of its own (`MemberRelay`, `MemberSubscription`), so a change of
    // transport is the link's business alone.
    let forbidden = ["quic::", "Quic", "quinn", "axum::", "axum;"];
    let mut files = Vec::new();
    rust_files(&root().join("src/app"), &mut files);
    let mut named = Vec::new();
    for file in files {
        for line in shipped(&file).lines() {
            if let Some(word) = forbidden.iter().find(|w| line.contains(*w)) {
                named.push(format!("{}: {word}: {}", file.display(), line.trim()));
            }
        }
    }
    assert!(named.is_empty(), "app names:\n{}", named.join("\n"));
}
