//! Loading a compiled program and launching it: arguments are checked against the launch plan
//! (buffer sizes, alignment, grid limits) before anything reaches the GPU.

use super::device::driver_err;
use super::{tensor_map, Device};
use crate::compile::CompiledProgram;
use crate::ir::{fast_divisor_bits, HostValue, KernelParam, LaunchPlan};
use crate::{Error, Result};
use cudarc::driver::sys::CUfunction_attribute_enum as Attr;
use cudarc::driver::{CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr};
use cudarc::nvrtc::Ptx;
use std::ffi::c_void;
use std::sync::Arc;

/// The last tensor map encoded for one parameter (buffer, extents then strides), reused while
/// the buffer and sizes repeat
/// (encoding costs about a microsecond of host time; the common case is the same buffers).
type MapCache = Vec<Option<(u64, Vec<i64>, cudarc::driver::sys::CUtensorMap)>>;

/// A program loaded into a context.
#[derive(Debug)]
pub struct LoadedKernel {
    _module: Arc<CudaModule>,
    func: CudaFunction,
    plan: LaunchPlan,
    arg_names: Vec<String>,
    maps: std::sync::Mutex<MapCache>,
    /// The device's multiprocessors: the most blocks a persistent grid launches.
    multiprocessors: u32,
    /// The workspaces the kernel owns (`global_tensor`), one per workspace parameter in
    /// order, allocated zeroed on the first launch that needs them (again, larger, when a
    /// launch needs more) and kept between launches.
    workspaces: std::sync::Mutex<Vec<Option<CudaSlice<u8>>>>,
    /// Where workspaces are allocated and zeroed (the device's stream).
    alloc: Arc<CudaStream>,
}

impl LoadedKernel {
    /// Loads the cubin and raises the function's dynamic shared-memory limit.
    pub fn load(
        device: &Device,
        compiled: &CompiledProgram,
        arg_names: Vec<String>,
    ) -> Result<LoadedKernel> {
        let module = device
            .context()
            .load_module(Ptx::from_binary(compiled.cubin.clone()))
            .map_err(driver_err("cuModuleLoadData"))?;
        let func = module
            .load_function(&compiled.plan.kernel_name)
            .map_err(driver_err("cuModuleGetFunction"))?;
        if compiled.plan.smem_bytes > 48 * 1024 {
            func.set_attribute(
                Attr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                compiled.plan.smem_bytes as i32,
            )
            .map_err(driver_err("cuFuncSetAttribute"))?;
        }
        if compiled.plan.params.len() > MAX_PARAMS {
            return Err(Error::Argument {
                arg: compiled.plan.kernel_name.clone(),
                message: format!(
                    "the kernel has {} parameters; at most {MAX_PARAMS} are supported",
                    compiled.plan.params.len()
                ),
            });
        }
        let n_maps = compiled
            .plan
            .params
            .iter()
            .filter(|p| matches!(p, KernelParam::TensorMap(_)))
            .count();
        if n_maps > MAX_MAPS {
            return Err(Error::Argument {
                arg: compiled.plan.kernel_name.clone(),
                message: format!(
                    "the kernel uses {n_maps} tensor maps; at most {MAX_MAPS} are supported"
                ),
            });
        }
        let multiprocessors = device
            .context()
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(driver_err("cuDeviceGetAttribute"))?;
        Ok(LoadedKernel {
            _module: module,
            func,
            plan: compiled.plan.clone(),
            arg_names,
            maps: std::sync::Mutex::new(vec![None; n_maps]),
            multiprocessors: multiprocessors.max(1) as u32,
            workspaces: std::sync::Mutex::new(
                compiled
                    .plan
                    .params
                    .iter()
                    .filter(|p| matches!(p, KernelParam::Workspace { .. }))
                    .map(|_| None)
                    .collect(),
            ),
            alloc: device.stream().clone(),
        })
    }

    /// The launch plan.
    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    fn name(&self, arg: usize) -> String {
        self.arg_names
            .get(arg)
            .cloned()
            .unwrap_or_else(|| format!("arg{arg}"))
    }

    /// Checks the arguments and launches on `stream`. `values` holds every script argument in
    /// order (constants included).
    pub fn launch(&self, stream: &CudaStream, values: &[HostValue]) -> Result<()> {
        self.prepare_and(values, Some(stream), |grid, args| {
            if self.plan.waits_for_prior_grid && super::programmatic_launch() {
                // SAFETY: as below; the kernel's first statement is `griddepcontrol.wait`
                // (`Program::waits_for_prior_grid`).
                return unsafe {
                    super::programmatic::launch(
                        self.func.cu_function(),
                        grid,
                        self.plan.block_threads,
                        self.plan.smem_bytes,
                        stream.cu_stream(),
                        args,
                    )
                };
            }
            // SAFETY: `args` has one pointer per kernel parameter, in the order and with the
            // types the generated signature declares (scalars are read through their low bytes
            // on this little-endian target); buffers were checked; storage outlives the call.
            unsafe {
                cudarc::driver::result::launch_kernel(
                    self.func.cu_function(),
                    (grid[0], grid[1], grid[2]),
                    (self.plan.block_threads, 1, 1),
                    self.plan.smem_bytes,
                    stream.cu_stream(),
                    args,
                )
            }
            .map_err(driver_err("cuLaunchKernel"))
        })
    }

    /// Everything [`LoadedKernel::launch`] does on the host except the driver call: argument
    /// checks, grid, tensor maps, the parameter list. For measuring the library's own share of
    /// the launch cost.
    pub fn dry_run(&self, values: &[HostValue]) -> Result<()> {
        self.prepare_and(values, None, |_, args| {
            std::hint::black_box(args);
            Ok(())
        })
    }

    fn prepare_and(
        &self,
        values: &[HostValue],
        stream: Option<&CudaStream>,
        launch: impl FnOnce([u32; 3], &mut [*mut c_void]) -> Result<()>,
    ) -> Result<()> {
        let plan = &self.plan;
        let int = |i: usize| match values.get(i) {
            Some(HostValue::Int(v)) => Some(*v),
            _ => None,
        };
        let eval = |e: &crate::ir::Expr, what: &dyn Fn() -> String| {
            plan.eval_with(e, &int).ok_or_else(|| Error::Argument {
                arg: what(),
                message: format!("cannot evaluate {e} on the host"),
            })
        };
        let ptr_of = |arg: usize| -> Result<(u64, usize)> {
            match values.get(arg) {
                Some(HostValue::Ptr { ptr, bytes }) => Ok((*ptr, *bytes)),
                _ => Err(Error::Argument {
                    arg: self.name(arg),
                    message: "expected a device buffer".into(),
                }),
            }
        };
        // 32-bit index arithmetic that these arguments would overflow (first: it explains a
        // grid that comes out negative)
        plan.check_index_guards(&int, &|a| self.name(a))
            .map_err(|(arg, message)| Error::Argument { arg, message })?;
        let mut grid = [1u32; 3];
        for (i, g) in plan.grid.iter().enumerate() {
            let v = eval(g, &|| "blocks".into())?;
            if v == 0 {
                // an empty problem (e.g. m = 0): nothing to compute, nothing to launch
                return Ok(());
            }
            if v < 0 || v > if i == 0 { (1 << 31) - 1 } else { 65535 } {
                return Err(Error::Argument {
                    arg: "blocks".into(),
                    message: format!("grid dimension {i} would be {v}"),
                });
            }
            grid[i] = v as u32;
        }
        let grid = plan
            .launched_grid(grid, self.multiprocessors)
            .map_err(|message| Error::Argument {
                arg: "blocks".into(),
                message,
            })?;
        // Buffers: non-null, large enough and aligned as the code assumes.
        for rule in &plan.pointer_rules {
            let (ptr, bytes) = ptr_of(rule.arg)?;
            let bad = |message: String| Error::Argument {
                arg: self.name(rule.arg),
                message,
            };
            if ptr == 0 {
                return Err(bad("null device pointer".into()));
            }
            if ptr % rule.align as u64 != 0 {
                return Err(bad(format!(
                    "address 0x{ptr:x} is not {}-byte aligned ({})",
                    rule.align, rule.why
                )));
            }
            for (stride, what) in &rule.nonnegative {
                let v = eval(stride, &|| self.name(rule.arg))?;
                if v < 0 {
                    return Err(bad(format!("{what} is {v}; strides must not be negative")));
                }
            }
            let need = eval(&rule.min_elems, &|| self.name(rule.arg))?;
            let elem = rule.elem_bytes as i64;
            if elem > 0 && (bytes as i64) < need.saturating_mul(elem) {
                return Err(bad(format!(
                    "the buffer holds {} elements, the kernel reads {need}",
                    bytes as i64 / elem
                )));
            }
        }
        // A buffer the kernel writes may not overlap any other buffer argument: the kernel
        // would read what it is overwriting (or race with itself).
        for &(w, mutable) in &plan.pointers {
            if !mutable {
                continue;
            }
            let (wp, wb) = ptr_of(w)?;
            for &(o, _) in &plan.pointers {
                if o == w {
                    continue;
                }
                let (op, ob) = ptr_of(o)?;
                if wb > 0 && ob > 0 && wp < op + ob as u64 && op < wp + wb as u64 {
                    return Err(Error::Argument {
                        arg: self.name(w),
                        message: format!(
                            "the kernel writes this buffer, and it overlaps `{}` (bytes 0x{wp:x}..0x{:x} and 0x{op:x}..0x{:x}); \
                             pass separate buffers",
                            self.name(o),
                            wp + wb as u64,
                            op + ob as u64
                        ),
                    });
                }
            }
        }
        // Parameter storage first (fixed arrays: no allocation on this path), then pointers into
        // it. `load` checked that the counts fit.
        let mut scalars = [0u64; MAX_PARAMS];
        let mut maps = [EMPTY_MAP; MAX_MAPS];
        let (mut ns, mut nm, mut nw) = (0, 0, 0);
        let mut cache = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        let mut workspaces = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        for p in &plan.params {
            match p {
                KernelParam::Scalar { arg, dtype } => {
                    scalars[ns] = scalar_bits(values.get(*arg), *dtype).map_err(|message| {
                        Error::Argument {
                            arg: self.name(*arg),
                            message,
                        }
                    })?;
                    ns += 1;
                }
                KernelParam::Pointer { arg } => {
                    scalars[ns] = ptr_of(*arg)?.0;
                    ns += 1;
                }
                KernelParam::TensorMap(spec) => {
                    // extents, then strides
                    let mut sizes = [0i64; 10];
                    let rank = spec.global_shape.len().min(5);
                    for (d, e) in spec.global_shape.iter().take(rank).enumerate() {
                        sizes[d] = eval(e, &|| spec.name.clone())?;
                    }
                    for (d, e) in spec.global_strides.iter().take(rank).enumerate() {
                        sizes[rank + d] = eval(e, &|| spec.name.clone())?;
                    }
                    let sizes = &sizes[..2 * rank];
                    let (ptr, _) = ptr_of(spec.ptr_arg)?;
                    let slot = &mut cache[nm];
                    maps[nm] = match slot {
                        Some((p, d, m)) if *p == ptr && d[..] == sizes[..] => *m,
                        _ => {
                            let m = tensor_map::encode(
                                spec,
                                &self.name(spec.ptr_arg),
                                ptr,
                                &sizes[..rank],
                                &sizes[rank..],
                            )?;
                            *slot = Some((ptr, sizes.to_vec(), m));
                            m
                        }
                    };
                    nm += 1;
                }
                KernelParam::FastDivisor { divisor, .. } => {
                    let names = || {
                        let names: Vec<String> =
                            plan.args_of(divisor).map(|a| self.name(a)).collect();
                        names.join(", ")
                    };
                    let d = eval(divisor, &names)?;
                    scalars[ns] = fast_divisor_bits(d).map_err(|m| Error::Argument {
                        arg: names(),
                        message: format!("the divisor {divisor} {m}"),
                    })?;
                    ns += 1;
                }
                KernelParam::Workspace { name, bytes, .. } => {
                    let what = || format!("workspace `{name}`");
                    let need = eval(bytes, &what)?;
                    if need < 0 {
                        return Err(Error::Argument {
                            arg: what(),
                            message: format!("it would hold {need} bytes"),
                        });
                    }
                    scalars[ns] = self.workspace(&mut workspaces[nw], need as usize, stream)?;
                    ns += 1;
                    nw += 1;
                }
            }
        }
        drop(cache);
        drop(workspaces);
        let mut args = [std::ptr::null_mut::<c_void>(); MAX_PARAMS];
        let (mut si, mut mi) = (0, 0);
        for (slot, p) in args.iter_mut().zip(&plan.params) {
            match p {
                KernelParam::Scalar { .. }
                | KernelParam::Pointer { .. }
                | KernelParam::FastDivisor { .. }
                | KernelParam::Workspace { .. } => {
                    // Little-endian: a pointer to the u64 is also a pointer to its low 32 bits.
                    *slot = &mut scalars[si] as *mut u64 as *mut c_void;
                    si += 1;
                }
                KernelParam::TensorMap(_) => {
                    *slot = &mut maps[mi] as *mut _ as *mut c_void;
                    mi += 1;
                }
            }
        }
        launch(grid, &mut args[..plan.params.len()])
    }
}

impl LoadedKernel {
    /// The device address of a workspace of at least `bytes` bytes in `slot`: the one already
    /// there, or a new zeroed one (after the launches in flight on `stream`, which may use the
    /// old one, have finished). A dry run (`stream` = `None`) allocates nothing.
    fn workspace(
        &self,
        slot: &mut Option<CudaSlice<u8>>,
        bytes: usize,
        stream: Option<&CudaStream>,
    ) -> Result<u64> {
        let fits = slot.as_ref().is_some_and(|b| b.len() >= bytes.max(1));
        if let (false, Some(stream)) = (fits, stream) {
            if slot.is_some() {
                stream
                    .synchronize()
                    .map_err(driver_err("cuStreamSynchronize"))?;
            }
            let buf = self
                .alloc
                .alloc_zeros::<u8>(bytes.max(1).next_multiple_of(256))
                .map_err(driver_err("cuMemAlloc"))?;
            // zeroed before any launch, on whichever stream, reads it
            self.alloc
                .synchronize()
                .map_err(driver_err("cuStreamSynchronize"))?;
            *slot = Some(buf);
        }
        Ok(slot.as_ref().map_or(0, |b| b.device_ptr(&self.alloc).0))
    }
}

/// Most kernel parameters a program may have (scalars, pointers and tensor maps).
const MAX_PARAMS: usize = 32;
/// Most tensor maps a program may have.
const MAX_MAPS: usize = 8;
const EMPTY_MAP: cudarc::driver::sys::CUtensorMap =
    cudarc::driver::sys::CUtensorMap { opaque: [0; 16] };

/// The bits a scalar parameter of type `dtype` passes in its 8-byte slot (the kernel reads the
/// low bytes, little-endian): integers as themselves, floats rounded to their type.
fn scalar_bits(v: Option<&HostValue>, dtype: crate::ir::DType) -> std::result::Result<u64, String> {
    use crate::ir::DType;
    Ok(match (v, dtype) {
        (Some(HostValue::Float(x)), DType::F32) => (*x as f32).to_bits() as u64,
        (Some(HostValue::Float(x)), DType::F16) => half::f16::from_f64(*x).to_bits() as u64,
        (Some(HostValue::Float(x)), DType::BF16) => half::bf16::from_f64(*x).to_bits() as u64,
        (Some(HostValue::Int(v)), t) if !t.is_float() => *v as u64,
        (v, t) => return Err(format!("expected a {t} scalar, got {v:?}")),
    })
}
