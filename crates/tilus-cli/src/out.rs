//! Output that survives its reader. Everything the command prints goes through [`line`] and
//! friends (the `outln!` and `out!` macros): a write to a closed pipe (`tilus cache ls | head
//! -1`) ends the command quietly through [`CliError::Closed`] instead of panicking, and a
//! failed write to stderr is ignored (there is nowhere left to report it).

use std::fmt;
use std::io::{self, Write};
use tilus_bench::Error as SeriesError;

/// How a command ends when it does not succeed.
#[derive(Debug)]
pub enum CliError {
    /// A bad argument: exit status 2, as for the argument parser's own errors.
    Usage(String),
    /// The command ran and failed: exit status 1.
    Failed(String),
    /// Stdout's reader went away: a quiet exit with status 0.
    Closed,
}

/// The command's result.
pub type CliResult<T> = Result<T, CliError>;

impl CliError {
    /// A failure with this message.
    pub fn failed(m: impl fmt::Display) -> CliError {
        CliError::Failed(m.to_string())
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            CliError::Closed
        } else {
            CliError::Failed(format!("cannot write the output: {e}"))
        }
    }
}

impl From<SeriesError> for CliError {
    fn from(e: SeriesError) -> CliError {
        match e {
            SeriesError::Usage(m) => CliError::Usage(m),
            SeriesError::Output(e) => e.into(),
            other => CliError::Failed(other.to_string()),
        }
    }
}

impl From<tilus_bench::alloc::AllocError> for CliError {
    fn from(e: tilus_bench::alloc::AllocError) -> CliError {
        CliError::Failed(e.to_string())
    }
}

impl From<tilus::Error> for CliError {
    fn from(e: tilus::Error) -> CliError {
        CliError::Failed(e.to_string())
    }
}

/// Writes formatted text to stdout.
pub fn text(args: fmt::Arguments<'_>) -> CliResult<()> {
    io::stdout().lock().write_fmt(args).map_err(CliError::from)
}

/// Writes formatted text and a newline to stdout.
pub fn line(args: fmt::Arguments<'_>) -> CliResult<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)
        .and_then(|_| out.write_all(b"\n"))
        .map_err(CliError::from)
}

/// Flushes stdout (what a closed reader did not take is dropped quietly).
pub fn flush() -> CliResult<()> {
    io::stdout().flush().map_err(CliError::from)
}

/// Writes a line to stderr; a failure is ignored.
pub fn warn(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|_| err.write_all(b"\n"));
}

/// `println!` through [`line`], returning from the function on a closed pipe.
macro_rules! outln {
    () => { $crate::out::line(format_args!(""))? };
    ($($arg:tt)*) => { $crate::out::line(format_args!($($arg)*))? };
}

/// `print!` through [`text`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::text(format_args!($($arg)*))? };
}

/// `eprintln!` through [`warn`].
macro_rules! warnln {
    ($($arg:tt)*) => { $crate::out::warn(format_args!($($arg)*)) };
}

pub(crate) use {out, outln, warnln};
