//! The one error type of the core.
//!
//! Every error a user can cause is a variant here, carrying what a person needs to fix it:
//! config problems list *every* offending key with its value and the rule it breaks. The
//! binding crate maps each variant to one Python exception class, in one place.
//! None of these is resumable: a run that returns an error has stopped.

use std::fmt;

use serde::Serialize;

/// One configuration problem: where, what was given, and which rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfigIssue {
    /// Dotted key path, e.g. `pcie.lanes`, or a file position for syntax errors.
    pub path: String,
    /// The offending value as written (TOML syntax), or empty when the key is missing.
    pub value: String,
    /// The rule, phrased so that `path = value: rule` reads as a sentence.
    pub rule: String,
}

impl fmt::Display for ConfigIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}: {}", self.path, self.rule)
        } else {
            write!(f, "{} = {}: {}", self.path, shown(self.value.clone()), self.rule)
        }
    }
}

/// Everything that can go wrong in the core.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// The configuration is invalid; each issue names a key, its value and the rule.
    #[error("invalid configuration ({} problem{}):\n{}", .0.len(), if .0.len() == 1 { "" } else { "s" }, list(.0))]
    Config(Vec<ConfigIssue>),
    /// A workload cannot be generated or sustained: where (a key path or a job), the value
    /// involved (empty when none), and why.
    #[error("invalid workload: {}", Self::issue_text(.path, .value, .reason))]
    Workload { path: String, value: String, reason: String },
    /// A trace line is malformed: where (`file:line`), the text, and what is wrong.
    #[error("{location}: {reason}: {text:?}")]
    Trace { location: String, text: String, reason: String },
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    /// Simulated time passed [`crate::sim::time::LIMIT`]: some time, cycle count or rate of the
    /// config is too large for this run (each one alone is checked when the config loads).
    #[error("simulated time overflows: {detail}")]
    TimeOverflow { detail: String },
    /// The run was interrupted by the caller (Ctrl-C in Python).
    #[error("simulation cancelled")]
    Cancelled,
    /// A model broke one of its own invariants: a bug in ssdlab, not in the input.
    #[error("internal invariant violated in {component}: {detail}")]
    Invariant { component: &'static str, detail: String },
}

/// A value as an error message shows it: whole up to 200 bytes, else its start and its size (a
/// 10 MB value is never echoed back).
pub fn shown(v: String) -> String {
    clip(v, 200, 160)
}

/// `v` whole up to `max` bytes, else its first `cut` bytes and its size (a rule that quotes a
/// huge value, say a parser's message, stays short).
pub fn clip(v: String, max: usize, cut: usize) -> String {
    if v.len() <= max {
        return v;
    }
    let mut cut = cut.min(v.len());
    while !v.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes)", &v[..cut], v.len())
}

fn list(issues: &[ConfigIssue]) -> String {
    issues.iter().map(|i| format!("  - {i}")).collect::<Vec<_>>().join("\n")
}

impl Error {
    /// A workload error: `path = value: reason` (or `path: reason` without a value).
    pub fn workload(path: impl Into<String>, value: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Workload { path: path.into(), value: shown(value.into()), reason: reason.into() }
    }

    fn issue_text(path: &str, value: &str, reason: &str) -> String {
        ConfigIssue { path: path.to_string(), value: value.to_string(), rule: reason.to_string() }.to_string()
    }

    /// The same error with key paths under `from` moved under `to` (a tenant's workload keys
    /// checked by code that names them as `[workload]`'s).
    #[must_use]
    pub fn rebased(self, from: &str, to: &str) -> Self {
        let re = |p: String| if let Some(rest) = p.strip_prefix(from) { format!("{to}{rest}") } else { p };
        match self {
            Error::Config(issues) => Error::Config(issues.into_iter().map(|i| ConfigIssue { path: re(i.path), ..i }).collect()),
            Error::Workload { path, value, reason } => Error::Workload { path: re(path), value, reason },
            other => other,
        }
    }

    /// A single-issue config error.
    pub fn config(path: impl Into<String>, value: impl Into<String>, rule: impl Into<String>) -> Self {
        Error::Config(vec![ConfigIssue { path: path.into(), value: shown(value.into()), rule: rule.into() }])
    }
}

pub type Result<T> = std::result::Result<T, Error>;
