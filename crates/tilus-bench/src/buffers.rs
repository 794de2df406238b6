//! Host and device buffers of the element-wise and row-wise workloads (`vector_add`, `softmax`,
//! `layer_norm`): random inputs drawn from a seed into fallibly allocated vectors, uploads,
//! downloads and the launch value of a device buffer, with driver failures as typed errors.

use crate::alloc;
use crate::harness::Rng;
use crate::Result;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};
use tilus::lang::HostValue;

/// An element type of these workloads' buffers: converts from the f64 a generator draws.
pub trait Sample:
    tilus::interp::Pod + DeviceRepr + ValidAsZeroBits + Unpin + Send + Sync + 'static
{
    /// The nearest value of this type.
    fn from_f64(v: f64) -> Self;
    /// The value, exactly, as an f64.
    fn to_f64(self) -> f64;
    /// A NaN, to poison outputs with: an element the kernel never writes shows.
    const NAN: Self;
}

impl Sample for f16 {
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    const NAN: Self = f16::NAN;
}

impl Sample for half::bf16 {
    fn from_f64(v: f64) -> Self {
        half::bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        half::bf16::to_f64(self)
    }
    const NAN: Self = half::bf16::NAN;
}

impl Sample for tilus::lowp::F8E4M3 {
    fn from_f64(v: f64) -> Self {
        tilus::lowp::F8E4M3::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        tilus::lowp::F8E4M3::to_f64(self)
    }
    // e4m3's only NaN pattern (sign aside): S.1111.111
    const NAN: Self = tilus::lowp::Float::<4, 3>(0x7f);
}

impl Sample for tilus::lowp::F8E5M2 {
    fn from_f64(v: f64) -> Self {
        tilus::lowp::F8E5M2::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        tilus::lowp::F8E5M2::to_f64(self)
    }
    // one of e5m2's NaN patterns: S.11111.11
    const NAN: Self = tilus::lowp::Float::<5, 2>(0x7f);
}

impl Sample for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    const NAN: Self = f32::NAN;
}

/// `len` values uniform in `[lo, hi)`, drawn from `seed` (never all zeros, never NaN).
pub fn random<T: Sample>(what: &str, len: usize, seed: u64, lo: f64, hi: f64) -> Result<Vec<T>> {
    let mut v = alloc::try_vec(what, len, T::from_f64(0.0))?;
    let mut rng = Rng::new(seed);
    for x in v.iter_mut() {
        *x = T::from_f64(lo + (hi - lo) * rng.next_f64());
    }
    Ok(v)
}

/// A driver error of `call`.
pub fn drv(call: &'static str) -> impl Fn(tilus::cudarc::driver::DriverError) -> tilus::Error {
    move |e| tilus::Error::Driver {
        call,
        message: format!("{e:?}"),
    }
}

/// A copy of a host buffer on the device.
pub fn upload<T: Sample>(stream: &Arc<CudaStream>, host: &[T]) -> Result<CudaSlice<T>> {
    Ok(stream.clone_htod(host).map_err(drv("cuMemcpyHtoD"))?)
}

/// A device buffer of `len` NaNs (an output: what the kernel leaves unwritten shows).
pub fn poisoned<T: Sample>(
    stream: &Arc<CudaStream>,
    what: &str,
    len: usize,
) -> Result<CudaSlice<T>> {
    upload(stream, &alloc::try_vec(what, len, T::NAN)?)
}

/// A copy of a device buffer on the host (allocated fallibly).
pub fn download<T: Sample>(
    stream: &Arc<CudaStream>,
    what: &str,
    dev: &CudaSlice<T>,
) -> Result<Vec<T>> {
    let mut host = alloc::try_vec(what, dev.len(), T::from_f64(0.0))?;
    stream
        .memcpy_dtoh(dev, &mut host)
        .map_err(drv("cuMemcpyDtoH"))?;
    Ok(host)
}

/// The launch value of a device buffer.
pub fn ptr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> HostValue {
    let (ptr, _sync) = s.device_ptr(stream);
    HostValue::Ptr {
        ptr,
        bytes: s.num_bytes(),
    }
}
