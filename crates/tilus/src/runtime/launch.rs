//! Loading a compiled program and launching it: arguments are checked against the launch plan
//! (buffer sizes, alignment, grid limits) before anything reaches the GPU.

use super::device::driver_err;
use super::{tensor_map, Device};
use crate::compile::CompiledProgram;
use crate::ir::{KernelParam, LaunchPlan};
use crate::lang::HostValue;
use crate::{Error, Result};
use cudarc::driver::sys::CUfunction_attribute_enum as Attr;
use cudarc::driver::{CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use std::ffi::c_void;
use std::sync::Arc;

/// The last tensor map encoded for one parameter, reused while the buffer and sizes repeat
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
        let n_maps = compiled
            .plan
            .params
            .iter()
            .filter(|p| matches!(p, KernelParam::TensorMap(_)))
            .count();
        Ok(LoadedKernel {
            _module: module,
            func,
            plan: compiled.plan.clone(),
            arg_names,
            maps: std::sync::Mutex::new(vec![None; n_maps]),
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
        let plan = &self.plan;
        let ints: Vec<i64> = values
            .iter()
            .map(|v| if let HostValue::Int(i) = v { *i } else { 0 })
            .collect();
        let eval = |e: &crate::ir::Expr, what: &str| {
            plan.eval(e, &ints).ok_or_else(|| Error::Argument {
                arg: what.into(),
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
        // Buffers: non-null, large enough and aligned as the code assumes.
        for rule in &plan.pointer_rules {
            let (ptr, bytes) = ptr_of(rule.arg)?;
            let name = self.name(rule.arg);
            if ptr == 0 {
                return Err(Error::Argument {
                    arg: name,
                    message: "null device pointer".into(),
                });
            }
            if ptr % rule.align as u64 != 0 {
                return Err(Error::Argument {
                    arg: name,
                    message: format!(
                        "address 0x{ptr:x} is not {}-byte aligned ({})",
                        rule.align, rule.why
                    ),
                });
            }
            let need = eval(&rule.min_elems, &name)?;
            let elem = match &plan.params.iter().find_map(|p| match p {
                KernelParam::TensorMap(s) if s.ptr_arg == rule.arg => Some(s.dtype.nbytes()),
                _ => None,
            }) {
                Some(n) => *n as i64,
                None => 0,
            };
            if elem > 0 && (bytes as i64) < need * elem {
                return Err(Error::Argument {
                    arg: name,
                    message: format!(
                        "the buffer holds {} elements, the kernel reads {need}",
                        bytes as i64 / elem
                    ),
                });
            }
        }
        let mut grid = [1u32; 3];
        for (i, g) in plan.grid.iter().enumerate() {
            let v = eval(g, "blocks")?;
            if v <= 0 || v > if i == 0 { (1 << 31) - 1 } else { 65535 } {
                return Err(Error::Argument {
                    arg: "blocks".into(),
                    message: format!("grid dimension {i} would be {v}"),
                });
            }
            grid[i] = v as u32;
        }
        // Parameter storage first, then pointers into it (the vectors are not resized after).
        let mut scalars: Vec<u64> = Vec::with_capacity(plan.params.len());
        let mut maps = Vec::with_capacity(plan.params.len());
        let mut cache = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        for p in &plan.params {
            match p {
                KernelParam::Scalar { arg, .. } => scalars.push(ints[*arg] as u64),
                KernelParam::Pointer { arg } => scalars.push(ptr_of(*arg)?.0),
                KernelParam::TensorMap(spec) => {
                    let dims: Vec<i64> = spec
                        .global_shape
                        .iter()
                        .map(|e| eval(e, &spec.name))
                        .collect::<Result<_>>()?;
                    let (ptr, _) = ptr_of(spec.ptr_arg)?;
                    let slot = &mut cache[maps.len()];
                    let map = match slot {
                        Some((p, d, m)) if *p == ptr && *d == dims => *m,
                        _ => {
                            let m = tensor_map::encode(spec, &self.name(spec.ptr_arg), ptr, &dims)?;
                            *slot = Some((ptr, dims, m));
                            m
                        }
                    };
                    maps.push(map);
                }
            }
        }
        drop(cache);
        let (mut si, mut mi) = (0, 0);
        let mut args: Vec<*mut c_void> = Vec::with_capacity(plan.params.len());
        for p in &plan.params {
            match p {
                KernelParam::Scalar { .. } | KernelParam::Pointer { .. } => {
                    // Little-endian: a pointer to the u64 is also a pointer to its low 32 bits.
                    args.push(&mut scalars[si] as *mut u64 as *mut c_void);
                    si += 1;
                }
                KernelParam::TensorMap(_) => {
                    args.push(&mut maps[mi] as *mut _ as *mut c_void);
                    mi += 1;
                }
            }
        }
        // SAFETY: `args` has one pointer per kernel parameter, in the order and with the types
        // the generated signature declares (scalars are read through their low bytes on this
        // little-endian target); buffers were checked above; storage outlives the call.
        unsafe {
            cudarc::driver::result::launch_kernel(
                self.func.cu_function(),
                (grid[0], grid[1], grid[2]),
                (plan.block_threads, 1, 1),
                plan.smem_bytes,
                stream.cu_stream(),
                &mut args,
            )
        }
        .map_err(driver_err("cuLaunchKernel"))
    }
}
