//! The one error type of the harness, the registry and the tools built on them.

/// What can go wrong between a command line and a checked run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad value for an argument (a size, a `--set`, a kernel name, an option); nothing ran.
    #[error("{0}")]
    Usage(String),
    /// A host buffer this machine cannot give; nothing was allocated.
    #[error(transparent)]
    Memory(#[from] crate::alloc::AllocError),
    /// Writing the report failed (its reader went away, the disk is full).
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
    /// The language's error: a script diagnostic, NVRTC, the driver, cuBLAS, the interpreter.
    #[error(transparent)]
    Tilus(#[from] tilus::Error),
    /// A library kernel's error: a call it refused, or the language's error through it.
    #[error(transparent)]
    Kernels(#[from] tilus_kernels::Error),
}

/// A result with the series' [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
