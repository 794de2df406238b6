//! cuBLASLt's FP8 GEMM, the FP8 GEMM's reference and timing peer in the same process:
//! `c [m, n] = (scale_a · scale_b) · a [m, k] · b [n, k]ᵀ` on e4m3 or e5m2 codes, the scales
//! read from the device, f32 accumulation (no fast accumulation: what `torch._scaled_mm`
//! runs by default), out in bf16, f16 or f32.
//!
//! cuBLASLt is column-major and takes FP8 only as "TN": its first operand transposed. Our
//! row-major `b [n, k]` is its column-major `[k, n]`, transposed to `[n, k]`; our `a [m, k]`
//! its `[k, m]`; the product `[n, m]` column-major is our row-major `c [m, n]`. So its A is
//! our B (with B's scale) and its B our A.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;
use tilus::cudarc::cublaslt::{result, sys};
use tilus::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use tilus::lang::Element;
use tilus::Error;

/// cuBLASLt's data type of an element type the FP8 GEMM takes or gives.
fn data_type<T: Element>() -> tilus::Result<sys::cudaDataType> {
    use tilus::ir::DType;
    use tilus::lowp::{F8E4M3, F8E5M2};
    Ok(match T::DTYPE {
        DType::F16 => sys::cudaDataType::CUDA_R_16F,
        DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
        DType::F32 => sys::cudaDataType::CUDA_R_32F,
        t if t == <F8E4M3 as Element>::DTYPE => sys::cudaDataType::CUDA_R_8F_E4M3,
        t if t == <F8E5M2 as Element>::DTYPE => sys::cudaDataType::CUDA_R_8F_E5M2,
        t => {
            return Err(Error::Cublas {
                call: "cublasLtMatmul",
                message: format!("no FP8 GEMM of {}", t.name()),
            })
        }
    })
}

fn lt_err(call: &'static str) -> impl Fn(result::CublasError) -> Error {
    move |e| Error::Cublas {
        call,
        message: format!("{e:?}"),
    }
}

/// A cuBLASLt handle with its workspace (32 MiB, what cuBLASLt asks for on Hopper).
pub struct CublasLtFp8 {
    handle: sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    /// Per (m, n, k, input and output types, the scales' addresses).
    plans: HashMap<PlanKey, Planned>,
}

type PlanKey = (usize, usize, usize, u32, u32, u64, u64);

// SAFETY: a cuBLASLt handle may be used from any thread, one call at a time; `&self` methods
// only read it and every call is ordered on the caller's stream.
unsafe impl Send for CublasLtFp8 {}
// SAFETY: as above.
unsafe impl Sync for CublasLtFp8 {}

const WORKSPACE: usize = 32 << 20;

impl CublasLtFp8 {
    /// A handle and its workspace on `stream`'s device.
    pub fn new(stream: &Arc<CudaStream>) -> tilus::Result<CublasLtFp8> {
        let handle = result::create_handle().map_err(lt_err("cublasLtCreate"))?;
        let workspace = stream
            .alloc_zeros::<u8>(WORKSPACE)
            .map_err(|e| Error::Driver {
                call: "cuMemAlloc",
                message: format!("cuBLASLt's workspace: {e}"),
            })?;
        Ok(CublasLtFp8 {
            handle,
            workspace,
            plans: HashMap::new(),
        })
    }

    /// `c = (scale_a · scale_b) · a · bᵀ` on `stream` (shapes as the module says), each scale
    /// one f32 on the device in a buffer of its own (a scale 4 bytes into a shared buffer
    /// made `cublasLtMatmul` answer NOT_SUPPORTED on an H100). The descriptors and the algorithm are planned once per shape,
    /// types and scales, so that a timed call is the launch alone.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul<T: Element, O: Element>(
        &mut self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        (scale_a, scale_b): (&CudaSlice<f32>, &CudaSlice<f32>),
        c: &mut CudaSlice<O>,
    ) -> tilus::Result<()> {
        let (tin, tout) = (data_type::<T>()?, data_type::<O>()?);
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (psa, _gsa) = scale_a.device_ptr(stream);
        let (psb, _gsb) = scale_b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        let (pw, _gw) = self.workspace.device_ptr_mut(stream);
        let key = (m, n, k, tin as u32, tout as u32, psa, psb);
        if !self.plans.contains_key(&key) {
            let plan = Planned::new(self.handle, (m, n, k), (tin, tout), (psa, psb))?;
            self.plans.insert(key, plan);
        }
        let plan = &self.plans[&key];
        let [la, lb, lc] = &plan.layouts;
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: the plan's descriptors are valid (dropped with the handle's owner); the
        // device pointers are the buffers' (kept alive and ordered on `stream` by the
        // guards), of the lengths the shape needs (the caller's `Fp8GemmOp` checks the same
        // shape); the workspace is `WORKSPACE` bytes; alpha and beta live through the call.
        unsafe {
            result::matmul(
                self.handle,
                plan.desc.0,
                &alpha as *const f32 as *const c_void,
                &beta as *const f32 as *const c_void,
                pb as *const c_void,
                la.0,
                pa as *const c_void,
                lb.0,
                pc as *const c_void,
                lc.0,
                pc as *mut c_void,
                lc.0,
                &plan.algo,
                pw as *mut c_void,
                WORKSPACE,
                stream.cu_stream() as sys::cudaStream_t,
            )
            .map_err(lt_err("cublasLtMatmul"))?;
        }
        Ok(())
    }
}

/// One shape's descriptors and the algorithm cuBLASLt's heuristic chose for it.
struct Planned {
    desc: Desc,
    layouts: [Layout; 3],
    algo: sys::cublasLtMatmulAlgo_t,
}

impl Planned {
    fn new(
        handle: sys::cublasLtHandle_t,
        (m, n, k): (usize, usize, usize),
        (tin, tout): (sys::cudaDataType, sys::cudaDataType),
        (scale_a, scale_b): (u64, u64),
    ) -> tilus::Result<Planned> {
        let desc = Desc::new()?;
        let layouts = [
            Layout::new(tin, k, n)?,
            Layout::new(tin, k, m)?,
            Layout::new(tout, n, m)?,
        ];
        // our B's scale goes with its A, our A's with its B
        let (scale_of_a, scale_of_b) = (scale_b, scale_a);
        // SAFETY: every attribute is given a pointer to a value of the size it names, alive
        // for the call; the descriptor, preference and layouts are valid until dropped.
        unsafe {
            let set = |attr, v: *const c_void, size| {
                result::set_matmul_desc_attribute(desc.0, attr, v, size)
                    .map_err(lt_err("cublasLtMatmulDescSetAttribute"))
            };
            // cublasOperation_t: 1 is CUBLAS_OP_T, 0 CUBLAS_OP_N
            let t: i32 = 1;
            let nt: i32 = 0;
            use sys::cublasLtMatmulDescAttributes_t as A;
            set(A::CUBLASLT_MATMUL_DESC_TRANSA, &t as *const _ as _, 4)?;
            set(A::CUBLASLT_MATMUL_DESC_TRANSB, &nt as *const _ as _, 4)?;
            let sa = scale_of_a as *const c_void;
            let sb = scale_of_b as *const c_void;
            set(
                A::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                &sa as *const _ as _,
                8,
            )?;
            set(
                A::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                &sb as *const _ as _,
                8,
            )?;
            let pref = Pref::new()?;
            result::set_matmul_pref_attribute(
                pref.0,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                &WORKSPACE as *const usize as *const c_void,
                8,
            )
            .map_err(lt_err("cublasLtMatmulPreferenceSetAttribute"))?;
            let [la, lb, lc] = &layouts;
            let heuristic =
                result::get_matmul_algo_heuristic(handle, desc.0, la.0, lb.0, lc.0, lc.0, pref.0)
                    .map_err(lt_err("cublasLtMatmulAlgoGetHeuristic"))?;
            Ok(Planned {
                desc,
                layouts,
                algo: heuristic.algo,
            })
        }
    }
}

impl Drop for CublasLtFp8 {
    fn drop(&mut self) {
        // the plans' descriptors before the handle
        self.plans.clear();
        // SAFETY: the handle was created by `new` and is destroyed once.
        let _ = unsafe { result::destroy_handle(self.handle) };
    }
}

/// A matmul descriptor: f32 compute and scale types.
struct Desc(sys::cublasLtMatmulDesc_t);

impl Desc {
    fn new() -> tilus::Result<Desc> {
        result::create_matmul_desc(
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cudaDataType::CUDA_R_32F,
        )
        .map(Desc)
        .map_err(lt_err("cublasLtMatmulDescCreate"))
    }
}

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { result::destroy_matmul_desc(self.0) };
    }
}

/// A column-major `[rows, cols]` layout, leading dimension `rows`.
struct Layout(sys::cublasLtMatrixLayout_t);

impl Layout {
    fn new(t: sys::cudaDataType, rows: usize, cols: usize) -> tilus::Result<Layout> {
        result::create_matrix_layout(t, rows as u64, cols as u64, rows as i64)
            .map(Layout)
            .map_err(lt_err("cublasLtMatrixLayoutCreate"))
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { result::destroy_matrix_layout(self.0) };
    }
}

/// A preference (the workspace's size).
struct Pref(sys::cublasLtMatmulPreference_t);

impl Pref {
    fn new() -> tilus::Result<Pref> {
        result::create_matmul_pref()
            .map(Pref)
            .map_err(lt_err("cublasLtMatmulPreferenceCreate"))
    }
}

impl Drop for Pref {
    fn drop(&mut self) {
        // SAFETY: created by `new`, destroyed once.
        let _ = unsafe { result::destroy_matmul_pref(self.0) };
    }
}
