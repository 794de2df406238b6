//! [`StreamK`]: the stream-K kernel as one call, with the workspace and flags it needs kept on
//! the device between launches.

use super::kernel::{MatmulStreamK, StreamKArgsOf};
use super::shares::{flags_len, workspace_len};
use crate::gemm::matmuls::Matmuls;
use crate::host::device_zeros;
use half::f16;
use std::sync::{Arc, Mutex};
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};

/// Elements of a workspace for every configuration: sized for the largest tiles of the space
/// (128 × 256 and 256 × 128).
pub fn workspace_elements() -> usize {
    workspace_len(128, 256)
}

/// The workspace and the flags (zero: each launch lowers the flags it raised).
struct Scratch {
    w: CudaSlice<f32>,
    flags: CudaSlice<i32>,
}

/// Stream-K in f16 or bf16, owning its workspace and flags (allocated on first use).
///
/// ```no_run
/// use tilus_kernels::gemm::stream_k::StreamK;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let stream_k = StreamK::<half::f16>::fixed(Default::default(), &device);
/// let (m, n, k) = (4096, 4096, 4096); // 512 tiles: the last two rounds' shared
/// let a = device.stream().clone_htod(&vec![half::f16::ONE; m * k])?;
/// let b = device.stream().clone_htod(&vec![half::f16::ONE; n * k])?;
/// let mut c = device.stream().alloc_zeros::<half::f16>(m * n)?;
/// stream_k.launch_on(device.stream(), (m, n, k), (&a, &b), &mut c)?;
/// # Ok(()) }
/// ```
pub struct StreamK<T: Matmuls = f16> {
    kernel: FixedOrTuned<T::StreamK>,
    scratch: Mutex<Option<Scratch>>,
}

impl<T: Matmuls> StreamK<T> {
    /// A fixed configuration.
    pub fn fixed(config: MatmulStreamK, device: &Device) -> StreamK<T> {
        StreamK {
            kernel: FixedOrTuned::Fixed(tilus::Jit::new(T::stream_k(config), device)),
            scratch: Mutex::new(None),
        }
    }

    /// Autotuned per problem.
    pub fn tuned(device: &Device) -> tilus::Result<StreamK<T>> {
        Ok(StreamK {
            kernel: FixedOrTuned::Tuned(T::StreamK::autotuned(device)?),
            scratch: Mutex::new(None),
        })
    }

    /// Runs `f` with the workspace and flags (allocated on first use).
    fn with_scratch<R>(
        &self,
        stream: &Arc<CudaStream>,
        f: impl FnOnce(&mut Scratch) -> tilus::Result<R>,
    ) -> tilus::Result<R> {
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            let len = workspace_elements();
            let w = device_zeros(stream, len, &format!("the stream-K workspace of {len} f32"))?;
            let flags = device_zeros(stream, flags_len(), "the stream-K flags")?;
            *guard = Some(Scratch { w, flags });
        }
        let Some(s) = guard.as_mut() else {
            unreachable!("the scratch buffers were just allocated")
        };
        f(s)
    }

    /// `c = a · bᵀ` for `m × n × k` on device buffers (K a multiple of 8: TMA's 16-byte rows).
    pub fn launch_on(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        c: &mut CudaSlice<T>,
    ) -> tilus::Result<()> {
        let (m, n, k) = (m as i32, n as i32, k as i32);
        self.with_scratch(stream, |s| {
            self.kernel
                .launch(stream, (m, n, k, a, b, c, &mut s.w, &mut s.flags))
        })
    }

    /// The configuration that launches at this shape run (tuning first when needed); `None`
    /// when choosing it fails.
    pub fn config_used(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        c: &mut CudaSlice<T>,
    ) -> Option<MatmulStreamK> {
        let (m, n, k) = (m as i32, n as i32, k as i32);
        self.with_scratch(stream, |s| {
            let args = (m, n, k, a, b, c, &mut s.w, &mut s.flags);
            let values = <StreamKArgsOf<T> as tilus::lang::ArgList>::host_values(&args, stream);
            Ok(self
                .kernel
                .config(stream, &values)?
                .as_ref()
                .as_ref()
                .clone())
        })
        .ok()
    }

    /// Where the autotuner keeps its choices, when it tunes.
    pub fn table_path(&self) -> Option<std::path::PathBuf> {
        self.kernel.table_path().cloned()
    }
}
