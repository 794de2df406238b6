//! The checks every host API makes before it launches: dimensions that fit the kernels' `i32`
//! arguments, buffers of the lengths the shape needs.

use crate::{Error, Result};

/// `value` as the kernels' `i32` argument named `name`: at least `min`, at most `i32::MAX`.
pub(crate) fn dim(kernel: &'static str, name: &str, value: usize, min: usize) -> Result<i32> {
    if value < min {
        return Err(Error::Shape {
            kernel,
            message: format!("{name} = {value}: must be at least {min}"),
        });
    }
    i32::try_from(value).map_err(|_| Error::Shape {
        kernel,
        message: format!("{name} = {value} does not fit the kernel's i32 arguments"),
    })
}

/// `a · b` elements, refused when the product overflows.
pub(crate) fn elements(kernel: &'static str, a: usize, b: usize) -> Result<usize> {
    a.checked_mul(b).ok_or_else(|| Error::Shape {
        kernel,
        message: format!("{a} × {b} elements overflow the address space"),
    })
}

/// A buffer named `what` holds exactly `needed` elements.
pub(crate) fn length(kernel: &'static str, what: &str, len: usize, needed: usize) -> Result<()> {
    if len == needed {
        Ok(())
    } else {
        Err(Error::Shape {
            kernel,
            message: format!("`{what}` has {len} elements; the shape needs {needed}"),
        })
    }
}

/// A zeroed device buffer of `len` elements on `stream`, for a workspace the host API owns;
/// a failed allocation names `what` (`the split-K workspace of 1024 f32`).
pub(crate) fn device_zeros<
    T: tilus::cudarc::driver::DeviceRepr + tilus::cudarc::driver::ValidAsZeroBits,
>(
    stream: &std::sync::Arc<tilus::cudarc::driver::CudaStream>,
    len: usize,
    what: &str,
) -> tilus::Result<tilus::cudarc::driver::CudaSlice<T>> {
    stream
        .alloc_zeros::<T>(len)
        .map_err(|e| tilus::Error::Driver {
            call: "cuMemAlloc",
            message: format!("{what}: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dimensions_and_lengths_are_refused_with_the_values_named() {
        assert_eq!(dim("k", "rows", 5, 1).unwrap(), 5);
        let e = dim("k", "rows", 0, 1).unwrap_err().to_string();
        assert!(e.contains("rows = 0") && e.starts_with("k:"), "{e}");
        assert!(dim("k", "n", 1 << 31, 1).is_err());
        assert!(dim("k", "n", (1 << 31) - 1, 1).is_ok());
        assert!(elements("k", usize::MAX, 2).is_err());
        assert!(length("k", "x", 10, 10).is_ok());
        let e = length("k", "x", 9, 10).unwrap_err().to_string();
        assert!(
            e.contains("`x` has 9 elements") && e.contains("needs 10"),
            "{e}"
        );
    }
}
