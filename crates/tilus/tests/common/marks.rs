//! Line markers: which call of a script a diagnostic must point at.
//!
//! Write the marked call on one line, inside the marker: `at(line!(), k.sync())`. The marker
//! returns the call's result and records the line it is given and the file it is written in
//! (its caller's), so that a test can check a diagnostic's `file:line` without counting
//! lines. Where rustfmt would split a long marked call over several lines, put
//! `#[rustfmt::skip]` on the statement. Markers are per thread and cleared by every helper
//! that traces a script.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::Location;

/// Where a marked call is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The file, as the compiler names it (the same string a diagnostic's location holds).
    pub file: &'static str,
    /// 1-based line.
    pub line: u32,
}

impl Mark {
    /// `file:line:`, as messages print a location.
    pub fn loc(&self) -> String {
        format!("{}:{}:", self.file, self.line)
    }
}

thread_local! {
    static MARKS: RefCell<HashMap<&'static str, Mark>> = RefCell::new(HashMap::new());
}

/// Marks `call` (written on the same line) under `key`.
#[track_caller]
pub fn mark<T>(key: &'static str, line: u32, call: T) -> T {
    let file = Location::caller().file();
    MARKS.with(|m| m.borrow_mut().insert(key, Mark { file, line }));
    call
}

/// Marks `call` (written on the same line) as the one the diagnostic must point at.
#[track_caller]
pub fn at<T>(line: u32, call: T) -> T {
    mark("at", line, call)
}

/// Marks `call` (written on the same line) as one the diagnostic's message must mention.
#[track_caller]
pub fn note<T>(line: u32, call: T) -> T {
    mark("note", line, call)
}

/// The call marked `key`, if one was.
pub fn marked(key: &str) -> Option<Mark> {
    MARKS.with(|m| m.borrow().get(key).copied())
}

/// The line of the call marked `key`.
#[track_caller]
pub fn line_of(key: &str) -> u32 {
    marked(key)
        .unwrap_or_else(|| panic!("`{key}` was not marked"))
        .line
}

/// Forgets every mark (before a script is traced).
pub fn clear_marks() {
    MARKS.with(|m| m.borrow_mut().clear());
}
