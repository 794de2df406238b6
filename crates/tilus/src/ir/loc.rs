//! Source locations: every instruction remembers the user's file and line.

use std::fmt;

/// A place in the user's source, captured by `#[track_caller]` builder methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    /// The file, as the compiler names it (relative to the workspace of the caller).
    pub file: &'static str,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

impl Loc {
    /// The location of the caller of the `#[track_caller]` function this is called from.
    #[track_caller]
    pub fn caller() -> Loc {
        let l = std::panic::Location::caller();
        Loc {
            file: l.file(),
            line: l.line(),
            col: l.column(),
        }
    }

    /// The file name without its directories, for compact comments.
    pub fn short_file(&self) -> &'static str {
        self.file.rsplit(['/', '\\']).next().unwrap_or(self.file)
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}
