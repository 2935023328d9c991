//! The core's top-level modules form layers: each uses only modules listed before it in the
//! table of `src/lib.rs`, so no import circle can form. This test reads every source file and
//! checks every `crate::` path (imports, paths in code, macro paths), test code included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules in layer order, from the table under "## Layers" in `lib.rs`.
fn declared_order() -> Vec<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let mut order = Vec::new();
    let mut in_table = false;
    for line in lib.lines() {
        let line = line.trim_start_matches("//!").trim();
        if line.starts_with("## Layers") {
            in_table = true;
            continue;
        }
        if in_table && line.starts_with("## ") {
            break;
        }
        if !in_table || !line.starts_with('|') || line.starts_with("|--") || line.starts_with("| layer") {
            continue;
        }
        let modules = line.split('|').nth(2).unwrap_or("");
        order.extend(modules.split('`').skip(1).step_by(2).map(str::to_string));
    }
    order
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source dir") {
        let p = entry.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a `crate::` path names (macros and crate-root re-exports resolve to
/// the module that defines them).
fn target(name: &str) -> Option<&str> {
    match name {
        "config_struct" | "config_enum" => Some("schema"),
        "Error" | "ConfigIssue" | "Result" => Some("error"),
        "VERSION" | "Config" | "Simulation" | "Summary" | "run" => None,
        n => Some(n),
    }
}

/// Every `crate::x` (and `$crate::x`, and each name of `crate::{x, y}`) outside comments.
fn references(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        rest = after;
    }
    out
}

#[test]
fn every_top_level_module_uses_only_the_layers_below_it() {
    let order = declared_order();
    assert!(order.len() > 10, "the layer table of lib.rs lists {order:?}");
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut modules: Vec<String> = Vec::new();
    let mut wrong = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(src()).expect("under src");
        let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if first == "lib" {
            continue;
        }
        modules.push(first.clone());
        let Some(&from) = rank.get(first.as_str()) else {
            wrong.push(format!("{}: module `{first}` is not in the layer table of lib.rs", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(path).expect("source");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in references(code) {
                let Some(to) = target(&name) else { continue };
                if to == first {
                    continue;
                }
                match rank.get(to) {
                    Some(&r) if r < from => {}
                    Some(_) => wrong.push(format!("{}:{}: `{first}` uses `{to}`, which is not below it", rel.display(), n + 1)),
                    None => wrong.push(format!("{}:{}: `crate::{name}` names no module of the layer table", rel.display(), n + 1)),
                }
            }
        }
    }
    modules.sort();
    modules.dedup();
    for m in &order {
        assert!(modules.contains(m), "the layer table names `{m}`, which is no module of src/");
    }
    assert!(wrong.is_empty(), "{} references break the layers:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_reference_scanner_sees_imports_groups_and_macros() {
    assert_eq!(references("use crate::{ftl, host::Host};"), ["ftl", "host"]);
    assert_eq!(references("let x = crate::io::Op::Read; $crate::schema::join(a, b)"), ["io", "schema"]);
}
