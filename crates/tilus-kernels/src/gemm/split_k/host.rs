//! [`SplitK`]: the split-K kernels as one call, with the workspace and counters they need
//! kept on the device between launches.

use super::kernels::{counters_len, workspace_len, MatmulSplitK, MAX_SPLITS};
use crate::gemm::matmuls::Matmuls;
use crate::gemm::operand::PartialsArgsOf;
use crate::host::device_zeros;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::prelude::*;
use tilus::tune::FixedOrTuned;

/// What split-K keeps on the device between launches: the partials' workspace and the tiles'
/// counters (zero between launches: each launch lowers what it raised).
struct Scratch {
    w: CudaSlice<f32>,
    counters: CudaSlice<i32>,
}

/// Split-K as a matmul version, in f16 or bf16: the partials into a workspace it owns (grown
/// on demand), then their sum into C (by the last split's blocks, or a second kernel).
///
/// ```no_run
/// use tilus_kernels::gemm::SplitK;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let split_k = SplitK::<half::bf16>::tuned(&device)?; // the splits chosen per shape
/// let (m, n, k) = (1, 8192, 8192);
/// let a = device.stream().clone_htod(&vec![half::bf16::ONE; m * k])?;
/// let b = device.stream().clone_htod(&vec![half::bf16::ONE; n * k])?;
/// let mut c = device.stream().alloc_zeros::<half::bf16>(m * n)?;
/// split_k.launch_on(device.stream(), (m, n, k), (&a, &b), &mut c)?;
/// # Ok(()) }
/// ```
pub struct SplitK<T: Matmuls = f16> {
    /// The partial products' kernel: a fixed configuration or the autotuned one.
    partials: FixedOrTuned<T::Partials>,
    reduce: tilus::Jit<T::Reduce>,
    scratch: std::sync::Mutex<Option<Scratch>>,
}

impl<T: Matmuls> SplitK<T> {
    /// A fixed configuration of the partials.
    pub fn fixed(config: MatmulSplitK, device: &tilus::runtime::Device) -> SplitK<T> {
        SplitK::with(
            FixedOrTuned::Fixed(tilus::Jit::new(T::partials(config), device)),
            device,
        )
    }

    /// The partials autotuned per problem (the split count with them).
    pub fn tuned(device: &tilus::runtime::Device) -> tilus::Result<SplitK<T>> {
        Ok(SplitK::with(
            FixedOrTuned::Tuned(T::Partials::autotuned(device)?),
            device,
        ))
    }

    fn with(partials: FixedOrTuned<T::Partials>, device: &tilus::runtime::Device) -> SplitK<T> {
        SplitK {
            partials,
            reduce: tilus::Jit::new(T::reduce(), device),
            scratch: std::sync::Mutex::new(None),
        }
    }

    /// The configuration of the partials that launches at this shape run (tuning first when
    /// needed); `None` before the first launch (no workspace yet) or when choosing it fails.
    pub fn config_used(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        c: &mut CudaSlice<T>,
    ) -> Option<MatmulSplitK> {
        let mut guard = self.scratch.lock().ok()?;
        let s = guard.as_mut()?;
        let dims = (m as i32, n as i32, k as i32);
        self.config_for(stream, dims, (a, b), s, c).ok()
    }

    /// The configuration of the partials for this problem (tuning first when needed).
    fn config_for(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (i32, i32, i32),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        s: &mut Scratch,
        c: &mut CudaSlice<T>,
    ) -> tilus::Result<MatmulSplitK> {
        let args = (m, n, k, a, b, &mut s.w, &mut s.counters, c);
        let values = <PartialsArgsOf<T> as tilus::lang::ArgList>::host_values(&args, stream);
        Ok(self.partials.config(stream, &values)?.as_ref().clone())
    }

    /// `c = a · bᵀ` for `m × n × k` on device buffers: the partials into the workspace
    /// (allocated, or grown, on first use of a larger problem, with the counters), then their
    /// sum.
    pub fn launch_on(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        c: &mut CudaSlice<T>,
    ) -> tilus::Result<()> {
        let (len, counted) = (workspace_len(m, n, MAX_SPLITS), counters_len(m, n));
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard
            .as_ref()
            .is_none_or(|s| s.w.len() < len || s.counters.len() < counted)
        {
            let w = device_zeros(
                stream,
                len.max(1),
                &format!("the split-K workspace of {len} f32"),
            )?;
            let counters = device_zeros(
                stream,
                counted.max(1),
                &format!("split-K's {counted} tile counters"),
            )?;
            *guard = Some(Scratch { w, counters });
        }
        let Some(s) = guard.as_mut() else {
            unreachable!("the scratch was just allocated")
        };
        let (m, n, k) = (m as i32, n as i32, k as i32);
        // one decision per launch: the kernel it picks, whether it sums, and the splits
        let config = self
            .partials
            .launch_config(stream, (m, n, k, a, b, &mut s.w, &mut s.counters, &mut *c))?;
        let config = config.as_ref();
        if config.serial != 0 {
            return Ok(());
        }
        self.reduce.launch(stream, (m, n, config.splits, &s.w, c))
    }
}
