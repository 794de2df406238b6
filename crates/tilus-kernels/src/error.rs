//! The kernel library's one error type: a call the kernels cannot take (a shape, a buffer of
//! the wrong length), refused before anything is launched, or the language's own error.

/// What can go wrong in a call of a library kernel.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The call's shape or buffers do not fit the kernel; nothing was launched.
    #[error("{kernel}: {message}")]
    Shape {
        /// The kernel's host API (`softmax`, `gemm`).
        kernel: &'static str,
        /// The rule and the offending values.
        message: String,
    },
    /// The language's error: NVRTC, the driver, autotuning, the interpreter.
    #[error(transparent)]
    Tilus(#[from] tilus::Error),
}

/// A result with the library's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
