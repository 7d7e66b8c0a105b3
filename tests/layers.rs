//! The module layers of SPEC §1, checked over the source (`cargo test --test layers`): no import
//! cycle among the modules of any crate of the workspace — at the top level and among the
//! children of every module, `app`'s too — and in the binary the application (`app`) depends on no
//! adapter, names no transport type and no HTTP framework, while no adapter depends on another or
//! names an actor.
//!
//! How it reads the source: every `.rs` file, comments dropped, test code left out (files named
//! `tests.rs` or `*_tests.rs`, and everything from a `#[cfg(test)]` line on). Every path that
//! starts with `crate::`, `super::` or `self::` — written out or inside a grouped `use … {…}` — is
//! resolved to the module it names; a file of module `a::b::x` naming `a::b::y::…` is an edge
//! `x → y` among the children of `a::b`. A module naming its own ancestor, or its own descendant,
//! is no edge (a parent declares its children, a child uses its parent's items). Test code may
//! reach across layers to build its fixtures; shipped code may not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

const CRATES: [&str; 5] = [
    "src",
    "actors/src",
    "crew/src",
    "sandbox/src",
    "simulations/src",
];

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

/// A module's path in its crate: `src/app/walky/send.rs` is `["app", "walky", "send"]`; a
/// `mod.rs` names its directory, `lib.rs` and `main.rs` the crate root (`[]`).
type Module = Vec<String>;

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_owned());
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_space(s: &[char], i: &mut usize) {
    while *i < s.len() && s[*i].is_whitespace() {
        *i += 1;
    }
}

/// The paths of one path tree at `s[*i..]` (`a::b`, `a::{b, c::{d, self}}`), each as its segments.
fn path_tree(s: &[char], i: &mut usize) -> Vec<Vec<String>> {
    skip_space(s, i);
    if s.get(*i) == Some(&'{') {
        *i += 1;
        let mut out = Vec::new();
        loop {
            skip_space(s, i);
            match s.get(*i) {
                None => return out,
                Some('}') => {
                    *i += 1;
                    return out;
                }
                Some(',') => *i += 1,
                Some(_) => {
                    let before = *i;
                    out.extend(path_tree(s, i));
                    // `x as y`, or anything this reader does not know: skip to the next item.
                    while *i < s.len() && !matches!(s[*i], ',' | '}') {
                        *i += 1;
                    }
                    if *i == before {
                        *i += 1;
                    }
                }
            }
        }
    }
    let start = *i;
    while *i < s.len() && is_ident(s[*i]) {
        *i += 1;
    }
    let word: String = s[start..*i].iter().collect();
    if word.is_empty() {
        return vec![Vec::new()];
    }
    let mut look = *i;
    skip_space(s, &mut look);
    if s.get(look) == Some(&':') && s.get(look + 1) == Some(&':') {
        *i = look + 2;
        return path_tree(s, i)
            .into_iter()
            .map(|mut rest| {
                rest.insert(0, word.clone());
                rest
            })
            .collect();
    }
    vec![vec![word]]
}

/// Every path in `code` that starts with `crate::`, `super::` or `self::`, grouped imports
/// expanded (`use super::{a, b::c}` is `super::a` and `super::b::c`).
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let s: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let starts_word = i == 0 || !(is_ident(s[i - 1]) || s[i - 1] == ':');
        let rest: String = s[i..s.len().min(i + 7)].iter().collect();
        if starts_word
            && ["crate::", "super::", "self::"]
                .iter()
                .any(|p| rest.starts_with(p))
        {
            found.extend(path_tree(&s, &mut i));
        } else {
            i += 1;
        }
    }
    found
}

/// The module a path written in module `from` names: `crate`, `super` and `self` resolved, then
/// the longest prefix that is one of `modules` (the rest names an item in it).
fn resolve(from: &Module, path: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut at: Module = from.clone();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut best = at.clone();
    for segment in rest {
        at.push(segment.clone());
        if modules.contains(&at) {
            best = at.clone();
        } else {
            break;
        }
    }
    Some(best)
}

/// The import graph among the children of every module of the crate whose source is `src`,
/// keyed by the parent (`[]`: the top-level modules).
fn levels(src: &Path) -> BTreeMap<Module, Graph> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut levels: BTreeMap<Module, Graph> = BTreeMap::new();
    for module in modules.iter().filter(|m| !m.is_empty()) {
        let (parent, name) = module.split_at(module.len() - 1);
        levels
            .entry(parent.to_vec())
            .or_default()
            .entry(name[0].clone())
            .or_default();
    }
    for file in &files {
        let from = module_of(src, file);
        for path in crate_paths(&shipped(file)) {
            let Some(to) = resolve(&from, &path, &modules) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            levels
                .entry(from[..common].to_vec())
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    levels
}

/// The top-level module graph of the crate whose source is `src`.
fn graph(src: &Path) -> Graph {
    levels(src).remove(&Module::new()).unwrap_or_default()
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
    let mut cycles = Vec::new();
    for src in CRATES {
        let levels = levels(&root().join(src));
        assert!(
            levels.get(&Module::new()).is_some_and(|g| g.len() > 2),
            "{src}: modules not found"
        );
        for (parent, graph) in &levels {
            if let Some(cycle) = cycle(graph) {
                let parent = if parent.is_empty() {
                    "crate".to_owned()
                } else {
                    parent.join("::")
                };
                cycles.push(format!(
                    "{src}: among the children of `{parent}`: {}\n{}",
                    cycle.join(" -> "),
                    shown(graph)
                ));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_application_depends_on_no_adapter_and_no_adapter_on_another() {
    let graph = graph(&root().join("src"));
    let adapters = ["http", "control", "relay", "mcp", "hooks", "cli"];
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
    for from in ["http", "control", "relay", "mcp", "hooks"] {
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
    let owned = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        crate_paths("use crate::app::App;\nlet x = collie_crate::http::y;"),
        vec![owned(&["crate", "app", "App"])]
    );
    // Grouped imports are expanded; `super` and `self` are resolved against the file's module.
    let modules: BTreeSet<Module> = [
        owned(&["app"]),
        owned(&["app", "rows"]),
        owned(&["app", "rows", "row"]),
        owned(&["app", "starters"]),
        owned(&["app", "error"]),
    ]
    .into();
    let from = owned(&["app", "rows", "row"]);
    let named: BTreeSet<Module> =
        crate_paths("use super::super::{starters::Starter, error::{self, X}};\nself::y()")
            .iter()
            .filter_map(|p| resolve(&from, p, &modules))
            .collect();
    assert_eq!(
        named,
        [
            owned(&["app", "starters"]),
            owned(&["app", "error"]),
            owned(&["app", "rows", "row"])
        ]
        .into()
    );
}

#[test]
fn no_adapter_names_an_actor() {
    // An adapter reaches the actors only through `app`: it never names an actor's message type,
    // its slot or ractor.
    for adapter in ["http", "control", "relay", "mcp", "hooks"] {
        let dir = root().join("src").join(adapter);
        let mut files = Vec::new();
        rust_files(&dir, &mut files);
        let single = dir.with_extension("rs");
        if single.exists() {
            files.push(single);
        }
        for file in files {
            let code = shipped(&file);
            let actorish = code
                .split(|c: char| !is_ident(c))
                .filter(|w| (w.ends_with("Msg") && w.len() > 3) || *w == "Slot" || *w == "ractor")
                .collect::<Vec<_>>();
            assert!(actorish.is_empty(), "{} names {actorish:?}", file.display());
        }
    }
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
    let forbidden = [
        "quic::",
        "Quic",
        "quinn",
        "axum::",
        "axum;",
        "hyper::",
        "tower",
        "rustls",
        "UnixStream",
        "UnixListener",
    ];
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
