//! The kernel library's one error type: a call the kernels cannot take (a shape, a buffer of
//! the wrong length), refused before anything is launched, or the language's own error.

/// What can go wrong in a call of a library kernel.
///
/// ```
/// use tilus_kernels::norm::{RmsNorm, RmsNormOp};
/// use tilus_kernels::Error;
/// let (x, w) = (vec![half::f16::ONE; 4 * 8], vec![half::f16::ONE; 7]);
/// let mut y = vec![half::f16::NAN; 4 * 8];
/// let e = RmsNormOp::interpret(&RmsNorm::default(), (4, 8), 1e-6, (&x, &w), &mut y).unwrap_err();
/// assert!(matches!(e, Error::Shape { kernel: "rms_norm", .. }));
/// assert_eq!(e.to_string(), "rms_norm: `w` has 7 elements; the shape needs 8");
/// assert!(y.iter().all(|v| v.is_nan())); // nothing ran
/// ```
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
///
/// ```
/// fn softmax_rows(x: &[half::f16], y: &mut [half::f16]) -> tilus_kernels::Result<()> {
///     use tilus_kernels::norm::{Softmax, SoftmaxOp};
///     SoftmaxOp::interpret(&Softmax::default(), (1, x.len()), x, y)
/// }
/// let mut y = vec![half::f16::NAN; 4];
/// softmax_rows(&[half::f16::ZERO; 4], &mut y)?;
/// assert!(y.iter().all(|&v| v == half::f16::from_f32(0.25)));
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub type Result<T> = std::result::Result<T, Error>;

/// The library's error as the language's, for callers that speak only the language's (the
/// autotuner's timed runs, `tilus bench`): a refused call becomes an argument error that
/// names the kernel's rule.
///
/// ```
/// let e = tilus_kernels::Error::Shape { kernel: "gemm", message: "`a` is short".into() };
/// let t = tilus::Error::from(e);
/// assert!(t.to_string().contains("`a` is short"), "{t}");
/// ```
impl From<Error> for tilus::Error {
    fn from(e: Error) -> tilus::Error {
        match e {
            Error::Tilus(t) => t,
            Error::Shape { kernel, message } => tilus::Error::Argument {
                arg: kernel.into(),
                message,
            },
        }
    }
}
