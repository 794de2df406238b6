//! Stream-K ([`tilus_kernels::gemm::stream_k`]) as a matmul version (`tilus bench matmul --versions
//! stream_k`), owning its workspace and flags, and as a workload of its own (`tilus run
//! hopper_matmul_stream_k`): the arguments `(m, n, k, a, b, c, workspace, flags)`, the
//! workspace poisoned with NaN and the flags zero, C checked against the matmul reference.

use crate::buffers::{drv, poisoned, ptr};
use crate::harness::{Check, Problem};
use crate::operand::Operand;
use crate::run::Version;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::workloads::matmul::MATMUL;
use crate::{alloc, Result};
use std::sync::{Arc, Mutex};
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::{ArgList, HostValue};
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};
use tilus::Jit;
use tilus_kernels::gemm::stream_k::{flags_len, workspace_len, StreamKArgsOf};

/// Elements of a workspace for every configuration: sized for the largest tiles of the space
/// (128 × 256 and 256 × 128).
fn workspace_elements() -> usize {
    workspace_len(128, 256)
}

/// The workspace and the flags, allocated once (the flags zero).
fn scratch(stream: &Arc<CudaStream>) -> tilus::Result<(CudaSlice<f32>, CudaSlice<i32>)> {
    let len = workspace_elements();
    let w = stream
        .alloc_zeros::<f32>(len)
        .map_err(|e| tilus::Error::Driver {
            call: "cuMemAlloc",
            message: format!("the stream-K workspace of {len} f32: {e}"),
        })?;
    let flags = stream
        .alloc_zeros::<i32>(flags_len())
        .map_err(|e| tilus::Error::Driver {
            call: "cuMemAlloc",
            message: format!("the stream-K flags: {e}"),
        })?;
    Ok((w, flags))
}

/// Stream-K as a matmul version in operand type `T` (its script `S`: `MatmulStreamK`, or
/// its bf16 form).
pub struct StreamK<T: Operand, S: Tunable<Args = StreamKArgsOf<T>>> {
    kernel: FixedOrTuned<S>,
    scratch: Mutex<Option<(CudaSlice<f32>, CudaSlice<i32>)>>,
}

impl<T: Operand, S: Tunable<Args = StreamKArgsOf<T>> + Clone> StreamK<T, S> {
    /// A fixed configuration.
    pub fn fixed(config: S, device: &Device) -> Self {
        StreamK {
            kernel: FixedOrTuned::Fixed(Jit::new(config, device)),
            scratch: Mutex::new(None),
        }
    }

    /// Autotuned per problem.
    pub fn tuned(device: &Device) -> tilus::Result<Self> {
        Ok(StreamK {
            kernel: FixedOrTuned::Tuned(S::autotuned(device)?),
            scratch: Mutex::new(None),
        })
    }

    /// Runs `f` with the workspace and flags (allocated on first use).
    fn with_scratch<R>(
        &self,
        stream: &Arc<CudaStream>,
        f: impl FnOnce(&mut CudaSlice<f32>, &mut CudaSlice<i32>) -> tilus::Result<R>,
    ) -> tilus::Result<R> {
        let mut guard = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(scratch(stream)?);
        }
        let Some((w, flags)) = guard.as_mut() else {
            unreachable!("the scratch buffers were just allocated")
        };
        f(w, flags)
    }
}

impl<T: Operand, S: Tunable<Args = StreamKArgsOf<T>> + Clone + std::fmt::Debug> Version<T>
    for StreamK<T, S>
{
    fn name(&self) -> String {
        "stream_k".into()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> tilus::Result<()> {
        let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
        self.with_scratch(stream, |w, flags| {
            self.kernel
                .launch(stream, (m, n, k, &p.a, &p.b, &mut p.c, w, flags))
        })
    }

    fn describe(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
        self.with_scratch(stream, |w, flags| {
            let args = (m, n, k, &p.a, &p.b, &mut p.c, w, flags);
            let values = <StreamKArgsOf<T> as ArgList>::host_values(&args, stream);
            self.kernel.config(stream, &values)
        })
        .ok()
        .map(|c| tilus::lang::config_string(&format!("{c:?}")))
    }

    fn table_path(&self) -> Option<std::path::PathBuf> {
        self.kernel.table_path().cloned()
    }
}

/// The stream-K kernel's workload (see the module documentation): the matmul workload's cases
/// with the workspace and the flags after C.
pub struct StreamKMatmul;

/// The one instance the registry points at.
pub static STREAM_K_MATMUL: StreamKMatmul = StreamKMatmul;

impl Workload for StreamKMatmul {
    fn dims(&self) -> &'static [&'static str] {
        MATMUL.dims()
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let what = format!("a {size} stream-K matmul on the host");
        let matmul = MATMUL.host_case(size, seed)?;
        let w = alloc::try_vec(&what, workspace_elements(), f32::NAN)?;
        let flags = alloc::try_vec(&what, flags_len(), 0i32)?;
        Ok(Box::new(OnHost { matmul, w, flags }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let matmul = MATMUL.device_case(stream, size, seed)?;
        let w = poisoned::<f32>(stream, "the stream-K workspace", workspace_elements())?;
        let flags = stream
            .alloc_zeros::<i32>(flags_len())
            .map_err(drv("cuMemAlloc"))?;
        Ok(Box::new(OnDevice { matmul, w, flags }))
    }

    fn device_reference(&self) -> &'static str {
        MATMUL.device_reference()
    }
}

struct OnHost {
    matmul: Box<dyn HostCase>,
    w: Vec<f32>,
    flags: Vec<i32>,
}

impl HostCase for OnHost {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let mut args = self.matmul.args();
        args.push(InterpValue::buffer_mut(&mut self.w));
        args.push(InterpValue::buffer_mut(&mut self.flags));
        args
    }

    fn check(&self) -> Result<Check> {
        self.matmul.check()
    }
}

struct OnDevice {
    matmul: Box<dyn DeviceCase>,
    w: CudaSlice<f32>,
    flags: CudaSlice<i32>,
}

impl DeviceCase for OnDevice {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let mut args = self.matmul.args(stream);
        args.push(ptr(&self.w, stream));
        args.push(ptr(&self.flags, stream));
        args
    }

    fn reference(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        self.matmul.reference(stream)
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        self.matmul.check(stream)
    }
}
