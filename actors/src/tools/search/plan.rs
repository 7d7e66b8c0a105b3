//! A request checked and compiled into what the walker needs: the matcher, the name filters and
//! the bounds that apply. Every refusal here is a `BadArgument` that says what to change, in one
//! sentence, with none of the regex engine's own text.

use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};

use super::args::{SearchType, StartSearchArgs};
use super::limits::SearchLimits;
use crate::tools::ToolError;

/// Deepest nesting of groups and classes a pattern may have (the parser refuses more).
const NEST_LIMIT: u32 = 64;
/// The compiled program and lazy DFA of one pattern may use this much memory.
const REGEX_SIZE_LIMIT: usize = 8 << 20;

/// How a name search decides that a file's name matches.
#[derive(Debug, Clone)]
pub(crate) enum NameMatch {
    /// The name contains this text (lower-cased when `lower`).
    Contains { needle: String, lower: bool },
    /// The name matches this glob.
    Glob(GlobMatcher),
}

impl NameMatch {
    /// Whether `name` matches.
    pub(crate) fn is_match(&self, name: &str) -> bool {
        match self {
            NameMatch::Contains { needle, lower } if *lower => {
                name.to_lowercase().contains(needle.as_str())
            }
            NameMatch::Contains { needle, .. } => name.contains(needle.as_str()),
            NameMatch::Glob(glob) => glob.is_match(name),
        }
    }
}

/// What a search looks for.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// File names; `exact` is the name that ends the search early (`earlyTermination`).
    Names {
        matcher: NameMatch,
        exact: Option<String>,
    },
    /// File contents, with this many context lines each side.
    Content {
        matcher: RegexMatcher,
        context: usize,
    },
}

/// The name filters of `filePattern`: globs on a file's name, and globs with a `/` on its path
/// below the root.
#[derive(Debug, Clone)]
pub(crate) struct FileFilter {
    names: GlobSet,
    paths: GlobSet,
}

impl FileFilter {
    /// Whether a file with this name, at this path below the root, is searched.
    pub(crate) fn is_match(&self, name: &str, relative: &std::path::Path) -> bool {
        self.names.is_match(name) || self.paths.is_match(relative)
    }
}

/// A checked request.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) target: Target,
    pub(crate) files: Option<FileFilter>,
    pub(crate) include_hidden: bool,
    pub(crate) max_results: usize,
    pub(crate) time: Duration,
    pub(crate) pattern_len: usize,
    pub(crate) literal: bool,
}

impl Plan {
    /// Checks `a` against `limits` and compiles it.
    pub(crate) fn new(a: &StartSearchArgs, limits: &SearchLimits) -> Result<Plan, ToolError> {
        if a.pattern.is_empty() {
            return Err(bad("pattern must not be empty"));
        }
        if a.pattern.len() > limits.max_pattern_len {
            return Err(bad(&format!(
                "pattern is longer than {} bytes",
                limits.max_pattern_len
            )));
        }
        let ignore_case = a.ignore_case.unwrap_or(true);
        let literal = a.literal_search.unwrap_or(false);
        let max_results = match a.max_results {
            Some(0) => return Err(bad("maxResults must be at least 1")),
            Some(n) => usize::try_from(n)
                .unwrap_or(usize::MAX)
                .min(limits.max_results),
            None => limits.max_results,
        };
        let time = match a.timeout_ms {
            Some(0) => return Err(bad("timeout_ms must be at least 1")),
            Some(ms) => Duration::from_millis(ms).min(limits.max_time),
            None => limits.max_time,
        };
        let target = match a.search_type {
            SearchType::Content => {
                let context = usize::try_from(a.context_lines.unwrap_or(5))
                    .unwrap_or(usize::MAX)
                    .min(limits.max_context_lines);
                Target::Content {
                    matcher: content_matcher(&a.pattern, ignore_case, literal)?,
                    context,
                }
            }
            SearchType::Files => Target::Names {
                matcher: name_matcher(&a.pattern, ignore_case, literal)?,
                exact: a
                    .early_termination
                    .unwrap_or(true)
                    .then(|| a.pattern.clone()),
            },
        };
        let files = match &a.file_pattern {
            Some(p) if p.len() > limits.max_pattern_len => {
                return Err(bad(&format!(
                    "filePattern is longer than {} bytes",
                    limits.max_pattern_len
                )))
            }
            Some(p) if !p.trim().is_empty() => Some(file_filter(p)?),
            _ => None,
        };
        Ok(Plan {
            target,
            files,
            include_hidden: a.include_hidden.unwrap_or(false),
            max_results,
            time,
            pattern_len: a.pattern.len(),
            literal,
        })
    }
}

fn bad(message: &str) -> ToolError {
    ToolError::BadArgument(message.to_owned())
}

/// The content matcher. The pattern is parsed first on its own so that a mistake is named by the
/// parser's error kind ("unclosed group") rather than the engine's multi-line report.
fn content_matcher(
    pattern: &str,
    ignore_case: bool,
    literal: bool,
) -> Result<RegexMatcher, ToolError> {
    if !literal {
        let parsed = regex_syntax::ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .case_insensitive(ignore_case)
            .build()
            .parse(pattern);
        if let Err(e) = parsed {
            let kind = match &e {
                regex_syntax::Error::Parse(e) => e.kind().to_string(),
                regex_syntax::Error::Translate(e) => e.kind().to_string(),
                _ => "it cannot be parsed".to_owned(),
            };
            return Err(bad(&format!(
                "pattern is not a valid regular expression ({kind}); set literalSearch to search for the text as typed"
            )));
        }
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .nest_limit(NEST_LIMIT)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| match e.kind() {
            grep_regex::ErrorKind::NotAllowed(_) => bad(
                "pattern must not match a line break; a content search matches one line at a time",
            ),
            _ => bad("pattern is too large or complex to search for; make it simpler"),
        })
}

/// The name matcher: a glob when the pattern has glob characters (and is not literal), else a
/// part of the name.
fn name_matcher(pattern: &str, ignore_case: bool, literal: bool) -> Result<NameMatch, ToolError> {
    if !literal && pattern.contains(['*', '?', '[', '{']) {
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(ignore_case)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                bad(&format!(
                    "pattern is not a valid glob ({}); set literalSearch to match the text as typed",
                    e.kind()
                ))
            })?;
        return Ok(NameMatch::Glob(glob.compile_matcher()));
    }
    Ok(NameMatch::Contains {
        needle: if ignore_case {
            pattern.to_lowercase()
        } else {
            pattern.to_owned()
        },
        lower: ignore_case,
    })
}

/// `filePattern`: globs separated by `|`.
fn file_filter(patterns: &str) -> Result<FileFilter, ToolError> {
    let mut names = GlobSetBuilder::new();
    let mut paths = GlobSetBuilder::new();
    for p in patterns.split('|').map(str::trim).filter(|p| !p.is_empty()) {
        let glob = GlobBuilder::new(p)
            .literal_separator(true)
            .build()
            .map_err(|e| {
                bad(&format!(
                    "filePattern is not a valid glob ({}); separate several globs with |",
                    e.kind()
                ))
            })?;
        if p.contains('/') {
            paths.add(glob);
        } else {
            names.add(glob);
        }
    }
    let build = |b: GlobSetBuilder| {
        b.build()
            .map_err(|_| bad("filePattern is too large; use fewer globs"))
    };
    Ok(FileFilter {
        names: build(names)?,
        paths: build(paths)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pattern: &str, search_type: SearchType) -> StartSearchArgs {
        StartSearchArgs {
            path: ".".into(),
            pattern: pattern.into(),
            search_type,
            file_pattern: None,
            ignore_case: None,
            max_results: None,
            include_hidden: None,
            context_lines: None,
            timeout_ms: None,
            early_termination: None,
            literal_search: None,
        }
    }

    #[test]
    fn a_bad_regex_is_one_clean_sentence() {
        let limits = SearchLimits::default();
        let Err(ToolError::BadArgument(m)) = Plan::new(&args("(abc", SearchType::Content), &limits)
        else {
            panic!("an unclosed group must be refused");
        };
        assert_eq!(
            m,
            "pattern is not a valid regular expression (unclosed group); set literalSearch to search for the text as typed"
        );
        assert!(!m.contains('\n') && !m.contains('^'));
    }

    #[test]
    fn a_literal_search_takes_regex_characters_as_text() {
        let limits = SearchLimits::default();
        let mut a = args("(abc", SearchType::Content);
        a.literal_search = Some(true);
        assert!(Plan::new(&a, &limits).is_ok());
    }

    #[test]
    fn requests_cannot_raise_the_bounds() {
        let limits = SearchLimits::default();
        let mut a = args("x", SearchType::Content);
        a.max_results = Some(u64::MAX);
        a.timeout_ms = Some(u64::MAX);
        a.context_lines = Some(u64::MAX);
        let plan = Plan::new(&a, &limits).expect("valid");
        assert_eq!(plan.max_results, limits.max_results);
        assert_eq!(plan.time, limits.max_time);
        let Target::Content { context, .. } = plan.target else {
            panic!("content");
        };
        assert_eq!(context, limits.max_context_lines);
    }

    #[test]
    fn empty_and_oversized_patterns_are_refused() {
        let limits = SearchLimits::default();
        assert!(Plan::new(&args("", SearchType::Files), &limits).is_err());
        let long = "a".repeat(limits.max_pattern_len + 1);
        assert!(Plan::new(&args(&long, SearchType::Content), &limits).is_err());
    }

    #[test]
    fn a_pattern_matching_a_line_break_is_refused() {
        let limits = SearchLimits::default();
        let Err(ToolError::BadArgument(m)) =
            Plan::new(&args("a\\nb", SearchType::Content), &limits)
        else {
            panic!("\\n must be refused");
        };
        assert!(m.starts_with("pattern must not match a line break"), "{m}");
    }

    #[test]
    fn name_matching() {
        let contains = name_matcher("Main", true, false).expect("valid");
        assert!(contains.is_match("src_main.rs"));
        let glob = name_matcher("*.RS", true, false).expect("valid");
        assert!(glob.is_match("lib.rs") && !glob.is_match("lib.rsx"));
        let literal = name_matcher("*.rs", false, true).expect("valid");
        assert!(!literal.is_match("lib.rs") && literal.is_match("odd*.rs"));
    }
}
