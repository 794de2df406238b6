//! Keeps the interpreter's files layered (docs/architecture.md): each names only files of its
//! own layer or below. The block's state at the bottom is data every family reads; were it to
//! name a family's type, the families and the state would form a circle, and changing one file
//! would mean reading all of them.

use std::fs;
use std::path::Path;

/// The files by layer, bottom first: the block's state and tasks (and `region`, where shared
/// bytes lie; `publication`, the record of global writes across blocks that the state holds;
/// `args` and `printf`, which name no other file), the shared views placed in the
/// region, barriers and hazards, one file per instruction family (a family's directory counts
/// as its file), and the scheduler. The front, `mod.rs`, is above them all: no file here names
/// its items.
const LAYERS: &[&[&str]] = &[
    &[
        "state",
        "task",
        "region",
        "publication",
        "races",
        "args",
        "printf",
    ],
    &["views"],
    &["barrier", "hazards"],
    &[
        "arithmetic",
        "control",
        "cp_async",
        "debug",
        "mbarrier",
        "memory",
        "mma",
        "shape",
        "tma",
        "wgmma",
    ],
    &["sched"],
];

/// The layer of a file, or of an item of `mod.rs` (above every file).
fn layer(name: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&name))
        .unwrap_or(LAYERS.len())
}

/// The names in `interp` that code names: after `crate::interp::`, or after as many `super::`
/// as the file is deep (`depth`: 1 for `interp/x.rs`, 2 for `interp/x/y.rs`), the first segment
/// of each path, in braces too (`use super::{views, state::Block}` names `views` and `state`).
/// Comments are skipped.
fn interp_names(code: &str, depth: usize) -> Vec<String> {
    let code: String = code
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut names = vec![];
    let mut i = 0;
    while i < b.len() {
        if !code.is_char_boundary(i) || i > 0 && ident(b[i - 1]) {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        let after = if let Some(r) = rest.strip_prefix("crate::interp::") {
            r
        } else if rest.starts_with("super::") {
            // the whole chain of `super::`, so that `super::super::x` is not read as `super::x`
            let mut r = rest;
            let mut n = 0;
            while let Some(t) = r.strip_prefix("super::") {
                r = t;
                n += 1;
            }
            if n != depth {
                i = code.len() - r.len();
                continue;
            }
            r
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let start = code.len() - after.len();
        let first = |s: &str| -> String {
            let s = s.trim_start();
            let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_'));
            let word = &s[..end.unwrap_or(s.len())];
            if word.is_empty() {
                s.chars().take(1).collect()
            } else {
                word.to_string()
            }
        };
        if let Some(group) = after.strip_prefix('{') {
            // the items at the group's top level, each up to its comma
            let mut level = 0;
            let mut item = 0;
            for (k, c) in group.char_indices() {
                match c {
                    '{' => level += 1,
                    '}' if level == 0 => {
                        names.push(first(&group[item..k]));
                        break;
                    }
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        names.push(first(&group[item..k]));
                        item = k + 1;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(first(after));
        }
        names.retain(|n| !n.is_empty());
        i = start;
    }
    names
}

#[test]
fn names_are_found() {
    let code = "use super::{views, state::{Block, R},\n    task};\n\
                // super::sched in a comment\n\
                let x = super::tma::f(crate::interp::Options::default());\n\
                use super::super::hazards;";
    assert_eq!(
        interp_names(code, 1),
        ["views", "state", "task", "tma", "Options"]
    );
    assert_eq!(
        interp_names(code, 2),
        ["Options", "hazards"],
        "in a nested file, one `super::` is its own directory"
    );
}

#[test]
fn no_file_names_a_layer_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/interp");
    let mut files = vec![];
    let mut dirs = vec![(root.clone(), 1)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("the interpreter's sources are readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push((path, depth + 1));
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push((path, depth));
            }
        }
    }
    let mut arrows = vec![];
    for (path, depth) in files {
        let rel = path.strip_prefix(&root).expect("under the root");
        // a file of a family's directory counts as the family's file
        let name = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_string())
            .expect("a file name");
        if name == "mod" || name == "layers" {
            continue;
        }
        let own = layer(&name);
        assert!(
            own < LAYERS.len(),
            "interp/{} is in no layer: put it in one of LAYERS (interp/layers.rs) and \
             docs/architecture.md",
            rel.display()
        );
        let source = fs::read_to_string(&path).expect("a readable source file");
        // unit tests may use anything
        let code = source.split("#[cfg(test)]").next().unwrap_or("");
        for named in interp_names(code, depth) {
            if named != name && layer(&named) > own {
                arrows.push(format!(
                    "interp/{} (layer {own}) names `{named}` (layer {})",
                    rel.display(),
                    layer(&named)
                ));
            }
        }
    }
    assert!(
        arrows.is_empty(),
        "the interpreter's files name layers above them (move the data down instead):\n{}",
        arrows.join("\n")
    );
}
