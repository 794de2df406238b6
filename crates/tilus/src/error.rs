//! The one error type of the library. User mistakes are values of it, never panics.

use crate::ir::Loc;
use std::fmt;

/// A problem in a script, with the user's source location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the offending instruction was written.
    pub loc: Loc,
    /// What is wrong and, where possible, what to do instead.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: error: {}", self.loc, self.message)
    }
}

/// Everything that can go wrong between a script and a finished launch.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The script is invalid; each diagnostic names the user's file:line.
    #[error("{}", .0.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Script(Vec<Diagnostic>),
    /// NVRTC could not be found or loaded.
    #[error("NVRTC is not available: {0}")]
    NvrtcUnavailable(String),
    /// NVRTC rejected the generated source (a bug in Tilus or an unsupported construct).
    #[error("NVRTC failed to compile kernel `{kernel}` (source: {source_path}):\n{log}")]
    Compile {
        /// Kernel name.
        kernel: String,
        /// Where the generated source was written.
        source_path: String,
        /// The compiler's log.
        log: String,
    },
    /// No usable CUDA driver on this machine.
    #[error("no CUDA GPU is usable: {0}")]
    NoGpu(String),
    /// The GPU is not a Hopper (sm_90) part.
    #[error("GPU `{name}` has compute capability {major}.{minor}; Tilus kernels need sm_90 (Hopper: H100/H200)")]
    UnsupportedGpu {
        /// Device name.
        name: String,
        /// Major compute capability.
        major: i32,
        /// Minor compute capability.
        minor: i32,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver call `{call}` failed: {message}")]
    Driver {
        /// Which call.
        call: &'static str,
        /// The driver's description.
        message: String,
    },
    /// A launch argument breaks a rule of the kernel; nothing was launched.
    #[error("argument `{arg}`: {message}")]
    Argument {
        /// The argument's name.
        arg: String,
        /// The rule and the offending value.
        message: String,
    },
    /// cuBLAS failed (reference computations).
    #[error("cuBLAS call `{call}` failed: {message}")]
    Cublas {
        /// Which call.
        call: &'static str,
        /// The library's description.
        message: String,
    },
    /// Every candidate of a search space failed.
    #[error("no configuration of `{script}` works:\n{}", .candidates.iter().map(|(c, r)| format!("  {c}: {r}")).collect::<Vec<_>>().join("\n"))]
    Tuning {
        /// The script's type.
        script: String,
        /// Each candidate and why it failed.
        candidates: Vec<(String, String)>,
    },
    /// The CPU interpreter ([`crate::interp`]) found a fault while running a kernel: a deadlock,
    /// an asynchronous copy read before its wait, a transaction count that cannot be met,
    /// overlapping shared buffers, an out-of-bounds global access. The first diagnostic names
    /// the faulting instruction; the others the instructions involved (the copy, the other
    /// buffer, every waiting thread).
    #[error("interpreting `{kernel}`, block {block:?}: {fault}\n{}", .diagnostics.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("\n"))]
    Interp {
        /// Kernel name.
        kernel: String,
        /// The block (x, y, z) in which the fault happened.
        block: [u32; 3],
        /// What kind of fault it is (for tests and tools that react to one kind).
        fault: Fault,
        /// Where: the faulting instruction first, then the others involved.
        diagnostics: Vec<Diagnostic>,
    },
    /// Reading or writing the cache directory failed.
    #[error("cache directory {path}: {message}")]
    Cache {
        /// The path involved.
        path: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// One script diagnostic as an error.
    pub fn script(loc: Loc, message: impl Into<String>) -> Error {
        Error::Script(vec![Diagnostic {
            loc,
            message: message.into(),
        }])
    }

    /// The diagnostics, when this is a script error or an interpreter fault.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Script(d) => d,
            Error::Interp { diagnostics, .. } => diagnostics,
            _ => &[],
        }
    }
}

/// What kind of fault the CPU interpreter ([`crate::interp`]) found (the diagnostics say where and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Every thread of the block waits and nothing in flight can release any of them.
    Deadlock,
    /// A wait on a phase whose arrivals are all in but whose transaction bytes will never all
    /// arrive (`arrive_and_expect_tx` declared more than the copies deliver).
    TxNeverMet,
    /// A barrier received more transaction bytes than the phase declared.
    TxExceeded,
    /// A TMA destination was read while a copy into it had not been observed by a wait.
    ReadBeforeWait,
    /// An asynchronous operation's source was overwritten before the wait that covers it (a
    /// TMA copy into a tile that an unfinished wgmma reads).
    OverwriteBeforeWait,
    /// Two live shared buffers (tiles, barriers, copies in flight) share bytes.
    SharedOverlap,
    /// A planned shared buffer lies beyond the block's shared memory, or a stage index lies
    /// outside a staged tile's stages (`at`).
    SharedOutOfBounds,
    /// A global access outside its buffer (or outside its view where the generated code does
    /// not check).
    GlobalOutOfBounds,
    /// Part of a warp reached a warp-collective instruction while the rest can never join.
    Diverged,
    /// The async proxy (wgmma) read shared memory written by ordinary stores whose threads have
    /// not run `fence_proxy_async` since.
    MissingProxyFence,
    /// The block finished while an asynchronous operation it issued could still read shared
    /// memory (no wait covered it).
    NotWaited,
    /// A block signalled another (an atomic it then saw) over global stores that no
    /// `fence_gpu` had published, and the other block read them: the release fence is missing.
    MissingReleaseFence,
    /// A block read global stores another block published, without a `fence_gpu` between the
    /// atomic that saw the signal and the read: the acquire fence is missing.
    MissingAcquireFence,
    /// Two warps of a block accessed the same shared bytes, at least one of them writing, with
    /// no barrier ordering the accesses (compute-sanitizer's racecheck reports these on the
    /// chip).
    SharedRace,
    /// A `while` loop ran more iterations than the interpreter allows
    /// ([`crate::interp::Options::max_loop_iterations`]): its condition never became false.
    RunawayLoop,
    /// A workspace declared `zeroed` (`global_tensor(.., true)`) was not all zeros when the
    /// kernel ended: the next launch would find what this one left.
    DirtyWorkspace,
    /// The program uses something the interpreter does not implement yet.
    Unsupported,
    /// The program cannot run as written (an expression that cannot be evaluated, a barrier
    /// index out of range, a barrier used before its allocation, ...).
    Invalid,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Fault::Deadlock => "deadlock",
            Fault::TxNeverMet => "transaction count never met",
            Fault::TxExceeded => "transaction count exceeded",
            Fault::ReadBeforeWait => "read of a TMA destination before its wait",
            Fault::OverwriteBeforeWait => "overwrite of an asynchronous operand before its wait",
            Fault::SharedOverlap => "overlapping shared buffers",
            Fault::SharedOutOfBounds => "shared memory out of bounds",
            Fault::GlobalOutOfBounds => "out-of-bounds global access",
            Fault::Diverged => "diverged warp",
            Fault::MissingProxyFence => "async read of ordinary stores without a proxy fence",
            Fault::NotWaited => "asynchronous operation never waited for",
            Fault::MissingReleaseFence => {
                "signal over unpublished global writes (no release fence)"
            }
            Fault::MissingAcquireFence => {
                "read of published global writes without an acquire fence"
            }
            Fault::SharedRace => "shared-memory race between warps",
            Fault::RunawayLoop => "a while loop that does not end",
            Fault::DirtyWorkspace => "a zeroed workspace left dirty",
            Fault::Unsupported => "not supported by the interpreter",
            Fault::Invalid => "invalid program",
        })
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
