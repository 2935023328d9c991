//! Reading typed config structs out of TOML, collecting *every* problem.
//!
//! serde's derive stops at the first error, but a user fixing a config wants the whole list.
//! So each config struct is declared once with [`config_struct!`](crate::config_struct), which generates the
//! struct (with `Serialize` for `config show`), its `Default`, and a [`FromToml`] impl that
//! walks the table key by key: each known key is converted by its field type's `FromToml`
//! (recording a [`ConfigIssue`] with the dotted path and the value on failure), and each
//! unknown key is an issue that lists the keys that are allowed.
//!
//! The same declaration describes itself ([`Describe`]): every key with its type, default and
//! doc comment, which is what the configuration reference is generated from.

use toml::Value;

use crate::error::ConfigIssue;
use crate::sim::SimDuration;
use crate::units::{parse_freq, parse_rate, parse_size, parse_time, parse_transfer_rate, Bandwidth, Bytes, Frequency, TransferRate};

/// Where problems are collected during loading and validation.
#[derive(Debug, Default)]
pub struct Issues(pub Vec<ConfigIssue>);

impl Issues {
    pub fn push(&mut self, path: &str, value: impl std::fmt::Display, rule: impl Into<String>) {
        self.0.push(ConfigIssue { path: path.to_string(), value: crate::error::shown(value.to_string()), rule: crate::error::clip(rule.into(), 600, 400) });
    }

    /// Records `rule` against `path = value` unless `ok` holds.
    pub fn check(&mut self, ok: bool, path: &str, value: impl std::fmt::Display, rule: impl Into<String>) {
        if !ok {
            self.push(path, value, rule);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Joins a table path and a key (`"pcie"` + `"lanes"` = `"pcie.lanes"`).
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Conversion from a TOML value that reports problems instead of stopping at them.
pub trait FromToml: Sized {
    /// Converts `v`, found at `path`; on failure records issues and returns `None`.
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self>;
}

fn type_issue<T>(v: &Value, path: &str, issues: &mut Issues, want: &str) -> Option<T> {
    issues.push(path, v, format!("must be {want}, not a {}", v.type_str()));
    None
}

impl FromToml for bool {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        v.as_bool().or_else(|| type_issue(v, path, issues, "true or false"))
    }
}

impl FromToml for String {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        v.as_str().map(str::to_string).or_else(|| type_issue(v, path, issues, "a string"))
    }
}

impl FromToml for f64 {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        match v {
            Value::Float(f) if f.is_finite() => Some(*f),
            Value::Float(_) => {
                issues.push(path, v, "must be a finite number");
                None
            }
            Value::Integer(i) => Some(*i as f64),
            _ => type_issue(v, path, issues, "a number"),
        }
    }
}

/// Integers accept TOML integers and, for convenience, strings with a size suffix (`"64k"`).
macro_rules! int_from_toml {
    ($($t:ty),*) => {$(
        impl FromToml for $t {
            fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
                let n: i128 = match v {
                    Value::Integer(i) => i128::from(*i),
                    Value::String(s) => match parse_size(s) {
                        Ok(n) => i128::from(n),
                        Err(e) => { issues.push(path, v, format!("must be a whole number: {e}")); return None; }
                    },
                    _ => return type_issue(v, path, issues, "a whole number"),
                };
                match <$t>::try_from(n) {
                    Ok(x) => Some(x),
                    Err(_) => {
                        issues.push(path, v, format!("must be between {} and {}", <$t>::MIN, <$t>::MAX));
                        None
                    }
                }
            }
        }
    )*};
}
int_from_toml!(u8, u16, u32, u64, usize, i64);

fn from_str_value<T>(v: &Value, path: &str, issues: &mut Issues, want: &str, parse: impl Fn(&str) -> Result<T, String>) -> Option<T> {
    match v {
        Value::String(s) => match parse(s) {
            Ok(x) => Some(x),
            Err(e) => {
                issues.push(path, v, e);
                None
            }
        },
        _ => type_issue(v, path, issues, want),
    }
}

impl FromToml for Bytes {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        match v {
            Value::Integer(i) if *i >= 0 => Some(Bytes(*i as u64)),
            Value::Integer(_) => {
                issues.push(path, v, "a size must not be negative");
                None
            }
            _ => from_str_value(v, path, issues, "a size such as \"4KiB\" or 4096", parse_size).map(Bytes),
        }
    }
}

impl FromToml for SimDuration {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        match v {
            Value::Integer(0) => Some(SimDuration::ZERO),
            Value::Integer(_) | Value::Float(_) => {
                issues.push(path, v, "a time needs a unit: write it as a string such as \"48ns\" or \"1.5us\"");
                None
            }
            _ => from_str_value(v, path, issues, "a time such as \"48ns\"", parse_time).and_then(|d| {
                if d > crate::sim::time::MAX_PARAM {
                    issues.push(path, v, format!("overflows simulated time: a time may be at most {} (time counts picoseconds in 64 bits)", crate::sim::time::MAX_PARAM));
                    return None;
                }
                Some(d)
            }),
        }
    }
}

impl FromToml for Bandwidth {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        from_str_value(v, path, issues, "a data rate such as \"3.2GB/s\"", parse_rate).map(Bandwidth)
    }
}

impl FromToml for Frequency {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        from_str_value(v, path, issues, "a frequency such as \"800MHz\"", parse_freq).map(Frequency)
    }
}

impl FromToml for TransferRate {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        from_str_value(v, path, issues, "a transfer rate such as \"16GT/s\"", parse_transfer_rate).map(TransferRate)
    }
}

impl<T: FromToml> FromToml for Option<T> {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        T::from_toml(v, path, issues).map(Some)
    }
}

impl<T: FromToml> FromToml for Vec<T> {
    fn from_toml(v: &Value, path: &str, issues: &mut Issues) -> Option<Self> {
        let Some(items) = v.as_array() else {
            return type_issue(v, path, issues, "an array");
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match T::from_toml(item, &format!("{path}[{i}]"), issues) {
                Some(x) => out.push(x),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// Declares a config struct: fields with doc comments (stating default and unit) and defaults.
///
/// Generates the struct, `Default`, `Serialize` (for `config show`), `FIELDS`, and a
/// [`FromToml`] impl that rejects unknown keys and reports every bad value.
#[macro_export]
macro_rules! config_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[doc = $fdoc:expr])* $field:ident : $ty:ty = $default:expr ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, serde::Serialize)]
        pub struct $name {
            $( $(#[doc = $fdoc])* #[serde(skip_serializing_if = "crate::schema::is_none_value")] pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::schema::IsNone for $name {}

        impl $crate::schema::Describe for $name {
            const TABLE: bool = true;
            fn kind() -> String {
                "table".into()
            }
            fn keys(prefix: &str, out: &mut Vec<$crate::schema::KeyDoc>) {
                let d = Self::default();
                $( <$ty as $crate::schema::Describe>::field(&$crate::schema::join(prefix, stringify!($field)), &d.$field, $crate::schema::doc_text(&[$($fdoc),*]), out); )*
            }
        }

        impl $name {
            /// The keys this table accepts.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl $crate::schema::FromToml for $name {
            fn from_toml(v: &toml::Value, path: &str, issues: &mut $crate::schema::Issues) -> Option<Self> {
                let Some(table) = v.as_table() else {
                    issues.push(path, v, format!("must be a table, not a {}", v.type_str()));
                    return None;
                };
                // Bad fields keep their defaults, so that the value rules can still check the
                // rest; the caller fails the load if any issue was recorded.
                let mut out = Self::default();
                for (key, val) in table {
                    let p = $crate::schema::join(path, key);
                    match key.as_str() {
                        $( stringify!($field) => {
                            if let Some(x) = <$ty as $crate::schema::FromToml>::from_toml(val, &p, issues) {
                                out.$field = x;
                            }
                        } )*
                        _ => issues.push(&p, val, $crate::schema::unknown_key_rule(key, Self::FIELDS)),
                    }
                }
                Some(out)
            }
        }
    };
}

/// Declares a string-valued config enum (`mode = "firmware"`). A variant may take other
/// spellings too (`Fifo = "fifo" | "rr"`); `NAMES` lists the first of each, which is how it
/// prints.
#[macro_export]
macro_rules! config_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal $(| $alias:literal)* ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $( $(#[$vmeta])* $variant, )+ }

        impl $name {
            /// The names, one per variant (how each prints).
            pub const NAMES: &'static [&'static str] = &[$($text),+];
            /// Every spelling accepted: the names and their aliases.
            pub const SPELLINGS: &'static [&'static str] = &[$($text $(, $alias)*),+];
            pub fn as_str(self) -> &'static str {
                match self { $( $name::$variant => $text, )+ }
            }
        }

        impl $crate::schema::IsNone for $name {}

        impl $crate::schema::Describe for $name {
            fn kind() -> String {
                format!("one of {}", Self::NAMES.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", "))
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $( $text $(| $alias)* => Ok($name::$variant), )+
                    _ => Err(format!("must be one of: {}", Self::NAMES.join(", "))),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl $crate::schema::FromToml for $name {
            fn from_toml(v: &toml::Value, path: &str, issues: &mut $crate::schema::Issues) -> Option<Self> {
                match v.as_str() {
                    Some(s) => match s.parse() {
                        Ok(x) => Some(x),
                        Err(e) => { issues.push(path, v, e); None }
                    },
                    None => {
                        issues.push(path, v, format!("must be a string, one of: {}", Self::NAMES.join(", ")));
                        None
                    }
                }
            }
        }
    };
}

/// The rule text for an unknown key, with a suggestion when one allowed key is close.
pub fn unknown_key_rule(key: &str, allowed: &[&str]) -> String {
    let close = allowed.iter().find(|a| edit_distance(a, key) <= 2);
    match close {
        Some(c) => format!("unknown key (did you mean `{c}`?)"),
        None => format!("unknown key (allowed: {})", allowed.join(", ")),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Lets `Option` fields that are `None` disappear from `config show` (TOML has no null).
pub fn is_none_value<T: IsNone>(v: &T) -> bool {
    v.is_none_value()
}

/// Implemented for every field type; only `Option::None` reports true.
pub trait IsNone {
    fn is_none_value(&self) -> bool {
        false
    }
}
impl<T> IsNone for Option<T> {
    fn is_none_value(&self) -> bool {
        self.is_none()
    }
}
macro_rules! never_none {
    ($($t:ty),*) => {$( impl IsNone for $t {} )*};
}
never_none!(bool, String, f64, u8, u16, u32, u64, usize, i64, Bytes, SimDuration, Bandwidth, Frequency, TransferRate);
impl<T> IsNone for Vec<T> {}

/// One key of the configuration, as the reference documents it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KeyDoc {
    /// The dotted key (`pcie.lanes`; `[]` marks an array of tables: `tenants[].weight`).
    pub key: String,
    /// What it takes (`integer`, `size`, `time`, `one of "a", "b"`, `table`, ...).
    pub kind: String,
    /// Its default as TOML text (empty for a table or a value that is unset by default).
    pub default: String,
    /// Its doc comment, joined into one paragraph.
    pub doc: String,
}

/// A config value that can say what it is: a leaf (one key) or a table (keys of its own).
/// Every field type of a [`config_struct!`](crate::config_struct) implements it.
pub trait Describe: serde::Serialize {
    /// Whether the value is a table of keys.
    const TABLE: bool = false;

    /// What a value of this type is, in a few words.
    fn kind() -> String;

    /// A table's keys under `prefix` (nothing for a leaf).
    fn keys(_prefix: &str, _out: &mut Vec<KeyDoc>) {}

    /// The row of a field of this type at `key`, and a table's keys after it.
    fn field(key: &str, default: &Self, doc: String, out: &mut Vec<KeyDoc>) {
        let shown = if Self::TABLE { String::new() } else { toml_text(default) };
        out.push(KeyDoc { key: key.to_string(), kind: Self::kind(), default: shown, doc });
        if Self::TABLE {
            Self::keys(key, out);
        }
    }
}

/// A value as TOML text (empty when TOML cannot show it alone, as for an unset option).
fn toml_text<T: serde::Serialize + ?Sized>(v: &T) -> String {
    toml::Value::try_from(v).map(|v| v.to_string()).unwrap_or_default()
}

/// Doc comment lines as one paragraph. A citation's brackets are escaped in the source
/// (`\[AXBOE\]`, so that rustdoc does not take it for a link) and plain here.
pub fn doc_text(lines: &[&str]) -> String {
    lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ").replace("\\[", "[").replace("\\]", "]")
}

macro_rules! describe_leaf {
    ($($t:ty: $kind:literal),*) => {$(
        impl Describe for $t {
            fn kind() -> String {
                $kind.into()
            }
        }
    )*};
}
describe_leaf!(
    bool: "true or false",
    String: "string",
    f64: "number",
    u8: "integer",
    u16: "integer",
    u32: "integer",
    u64: "integer",
    usize: "integer",
    i64: "integer",
    Bytes: "size (\"4KiB\", 4096)",
    SimDuration: "time (\"48ns\", \"1.5us\")",
    Bandwidth: "data rate (\"3.2GB/s\")",
    Frequency: "frequency (\"800MHz\")",
    TransferRate: "transfer rate (\"16GT/s\")"
);

impl<T: Describe> Describe for Option<T> {
    const TABLE: bool = T::TABLE;
    fn kind() -> String {
        T::kind()
    }
    fn keys(prefix: &str, out: &mut Vec<KeyDoc>) {
        T::keys(prefix, out);
    }
}

impl<T: Describe> Describe for Vec<T> {
    fn kind() -> String {
        if T::TABLE {
            "array of tables".into()
        } else {
            format!("array of {}", T::kind())
        }
    }
    fn field(key: &str, default: &Self, doc: String, out: &mut Vec<KeyDoc>) {
        let shown = if T::TABLE { String::new() } else { toml_text(default) };
        out.push(KeyDoc { key: key.to_string(), kind: Self::kind(), default: shown, doc });
        if T::TABLE {
            T::keys(&format!("{key}[]"), out);
        }
    }
}
