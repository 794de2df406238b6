//! Verification and timing shared by the examples, the CLI and the GPU tests: random inputs as
//! in the seed (`(rand - 0.5) / sqrt(K)`), cuBLAS as the reference (f16 in, f32 accumulation,
//! f16 out), a check that counts NaN as failure, and interleaved CUDA-event timing.

use crate::alloc::{self, try_vec, AllocError};
use crate::operand::Operand;
use crate::Result;
use half::f16;
use std::sync::Arc;
use tilus::cudarc::cublas::{result as blas_result, sys as blas_sys, CudaBlas};
use tilus::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use tilus::Error;

/// A deterministic generator (SplitMix64): reproducible inputs from a seed.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next uniform number in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `(rand - 0.5) / sqrt(k)` in f16 or bf16, as the seed draws its inputs.
pub fn seed_inputs<T: Operand>(len: usize, k: usize, rng: &mut Rng) -> Vec<T> {
    let scale = 1.0 / (k as f64).sqrt();
    (0..len)
        .map(|_| T::from_f64((rng.next_f64() - 0.5) * scale))
        .collect()
}

/// [`seed_inputs`] into a buffer allocated fallibly, in any operand type: a length this
/// machine cannot hold is an error naming `what`.
pub fn try_seed_inputs<T: Operand>(
    what: &str,
    len: usize,
    k: usize,
    rng: &mut Rng,
) -> std::result::Result<Vec<T>, AllocError> {
    let mut v = try_vec(what, len, T::default())?;
    let scale = 1.0 / (k as f64).sqrt();
    for x in &mut v {
        *x = T::from_f64((rng.next_f64() - 0.5) * scale);
    }
    Ok(v)
}

fn drv_err(call: &'static str) -> impl Fn(tilus::cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver {
        call,
        message: format!("{e:?}"),
    }
}

/// One matmul problem on the device: `C = A · Bᵀ`, in f16 or bf16.
pub struct Problem<T: Operand = f16> {
    /// Rows of A and C.
    pub m: usize,
    /// Rows of B, columns of C.
    pub n: usize,
    /// The shared dimension.
    pub k: usize,
    /// `[m, k]`.
    pub a: CudaSlice<T>,
    /// `[n, k]`.
    pub b: CudaSlice<T>,
    /// `[m, n]`: the output under test.
    pub c: CudaSlice<T>,
    /// `[m, n]`: cuBLAS's output.
    pub c_ref: CudaSlice<T>,
}

impl<T: Operand> Problem<T> {
    /// Fresh random inputs from `seed`; outputs poisoned with NaN so unwritten elements show.
    /// The host staging buffers are checked against the memory this machine has and allocated
    /// fallibly; device allocations that fail are driver errors.
    pub fn new(
        stream: &Arc<CudaStream>,
        m: usize,
        n: usize,
        k: usize,
        seed: u64,
    ) -> Result<Problem<T>> {
        let what = format!("a {m}x{n}x{k} matmul");
        let [mk, nk, mn] = Problem::ensure_host(m, n, k)?;
        let mut rng = Rng::new(seed);
        let a = stream
            .clone_htod(&try_seed_inputs::<T>(&what, mk, k, &mut rng)?)
            .map_err(drv_err("cuMemcpyHtoD"))?;
        let b = stream
            .clone_htod(&try_seed_inputs::<T>(&what, nk, k, &mut rng)?)
            .map_err(drv_err("cuMemcpyHtoD"))?;
        let nan = try_vec(&what, mn, T::NAN)?;
        let c = stream.clone_htod(&nan).map_err(drv_err("cuMemcpyHtoD"))?;
        let c_ref = stream.clone_htod(&nan).map_err(drv_err("cuMemcpyHtoD"))?;
        Ok(Problem {
            m,
            n,
            k,
            a,
            b,
            c,
            c_ref,
        })
    }

    /// Fills the output under test with NaN again.
    pub fn poison(&mut self, stream: &Arc<CudaStream>) -> Result<()> {
        let nan = try_vec("the poisoned output", self.c.len(), T::NAN)?;
        stream
            .memcpy_htod(&nan, &mut self.c)
            .map_err(drv_err("cuMemcpyHtoD"))?;
        Ok(())
    }

    /// Floating-point operations of one product.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// What does not depend on the operand type (both take two bytes).
impl Problem {
    /// Checks that the host memory a problem of this size needs (one staging buffer at a time
    /// while it is built, both outputs in [`check`]) is there; returns the element counts of A,
    /// B and C. Tools call it before they look for the GPU.
    pub fn ensure_host(
        m: usize,
        n: usize,
        k: usize,
    ) -> std::result::Result<[usize; 3], AllocError> {
        let what = format!("a {m}x{n}x{k} matmul");
        let (mk, nk, mn) = (
            alloc::elements(&what, &[m, k])?,
            alloc::elements(&what, &[n, k])?,
            alloc::elements(&what, &[m, n])?,
        );
        alloc::ensure(&what, 2 * (mk as u128).max(nk as u128).max(2 * mn as u128))?;
        Ok([mk, nk, mn])
    }
}

/// cuBLAS on a stream, computing the reference `C = A · Bᵀ` (f16 or bf16 in and out, f32
/// accumulation).
pub struct Cublas {
    blas: CudaBlas,
}

impl Cublas {
    /// A handle bound to `stream`.
    pub fn new(stream: &Arc<CudaStream>) -> tilus::Result<Cublas> {
        let blas = CudaBlas::new(stream.clone()).map_err(|e| Error::Cublas {
            call: "cublasCreate",
            message: format!("{e:?}"),
        })?;
        Ok(Cublas { blas })
    }

    /// `out = a · bᵀ` for row-major a `[m, k]`, b `[n, k]`, out `[m, n]`.
    pub fn matmul<T: Operand>(
        &self,
        stream: &Arc<CudaStream>,
        p: &Problem<T>,
        reference: bool,
    ) -> tilus::Result<()> {
        let out = if reference { &p.c_ref } else { &p.c };
        let (c, _gc) = out.device_ptr(stream);
        self.gemm(stream, p, c, T::CUBLAS)
    }

    /// The reference `c_ref = a · bᵀ`, computed with cuBLAS's reduced-precision reductions
    /// disallowed (`CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION`): the most exact product
    /// cuBLAS gives. The handle returns to its default mode after, so timings of
    /// [`Cublas::matmul`] keep what users get.
    pub fn reference<T: Operand>(
        &self,
        stream: &Arc<CudaStream>,
        p: &Problem<T>,
    ) -> tilus::Result<()> {
        self.math_mode(blas_sys::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)?;
        let (c, _gc) = p.c_ref.device_ptr(stream);
        let result = self.gemm(stream, p, c, T::CUBLAS);
        self.math_mode(blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)?;
        result
    }

    /// Sets the handle's math mode.
    fn math_mode(&self, mode: blas_sys::cublasMath_t) -> tilus::Result<()> {
        // SAFETY: the handle is live (owned by `self.blas`); setting its math mode touches
        // nothing else, and no call on the handle is in flight on the host.
        let status = unsafe { blas_sys::cublasSetMathMode(*self.blas.handle(), mode) };
        if status == blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(Error::Cublas {
                call: "cublasSetMathMode",
                message: format!("{status:?}"),
            })
        }
    }

    /// `out = a · bᵀ` with the f32 accumulator kept (no rounding to f16): the reference of a
    /// fused epilogue, which rounds only its final result.
    pub fn matmul_f32<T: Operand>(
        &self,
        stream: &Arc<CudaStream>,
        p: &Problem<T>,
        out: &mut CudaSlice<f32>,
    ) -> tilus::Result<()> {
        if out.len() < p.m * p.n {
            return Err(Error::Cublas {
                call: "cublasGemmEx",
                message: format!(
                    "an f32 output of {} elements for {}x{}",
                    out.len(),
                    p.m,
                    p.n
                ),
            });
        }
        let (c, _gc) = out.device_ptr_mut(stream);
        self.gemm(stream, p, c, blas_sys::cudaDataType::CUDA_R_32F)
    }

    /// The general problem `p` (a row-major C) with cuBLAS's strided batched GEMM, in its
    /// default math mode: the peer of `tilus_kernels::gemm::general`. Row-major C is cuBLAS's
    /// column-major `Cᵀ = op(B)ᵀ · op(A)ᵀ`: B comes first, each operand transposed where it is
    /// column-major.
    pub fn gemm_general<T: Operand>(
        &self,
        stream: &Arc<CudaStream>,
        p: &tilus_kernels::gemm::general::GemmProblem,
        (a, b): (&CudaSlice<T>, &CudaSlice<T>),
        c: &mut CudaSlice<T>,
    ) -> tilus::Result<()> {
        use tilus_kernels::gemm::general::Order;
        if p.c.order != Order::RowMajor {
            return Err(Error::Argument {
                arg: "c".into(),
                message: "cuBLAS's peer takes a row-major C".into(),
            });
        }
        let op = |o: Order| match o {
            Order::RowMajor => blas_sys::cublasOperation_t::CUBLAS_OP_N,
            Order::ColMajor => blas_sys::cublasOperation_t::CUBLAS_OP_T,
        };
        let (alpha, beta) = (p.alpha, p.beta);
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        // SAFETY: the buffers are live device allocations the caller sized for `p`
        // (`GemmProblem::lengths`); alpha and beta are f32 as CUBLAS_COMPUTE_32F needs.
        let status = unsafe {
            blas_sys::cublasGemmStridedBatchedEx(
                *self.blas.handle(),
                op(p.b.order),
                op(p.a.order),
                p.n as i32,
                p.m as i32,
                p.k as i32,
                &alpha as *const f32 as *const _,
                pb as *const _,
                T::CUBLAS,
                p.b.ld as i32,
                p.b.batch_stride as i64,
                pa as *const _,
                T::CUBLAS,
                p.a.ld as i32,
                p.a.batch_stride as i64,
                &beta as *const f32 as *const _,
                pc as *mut _,
                T::CUBLAS,
                p.c.ld as i32,
                p.c.batch_stride as i64,
                p.batch as i32,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
            )
        };
        if status == blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(Error::Cublas {
                call: "cublasGemmStridedBatchedEx",
                message: format!("{status:?}"),
            })
        }
    }

    /// `C = A · Bᵀ` of the problem into `c` (of `c_type`, `[m, n]`).
    fn gemm<T: Operand>(
        &self,
        stream: &Arc<CudaStream>,
        p: &Problem<T>,
        c: u64,
        c_type: blas_sys::cudaDataType,
    ) -> tilus::Result<()> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
        let (a, _ga) = p.a.device_ptr(stream);
        let (b, _gb) = p.b.device_ptr(stream);
        // Column-major view: Cᵀ [n, m] = B [n, k] · Aᵀ [k, m], i.e. op(B) = T on B's
        // column-major [k, n] storage and op(A) = N on A's column-major [k, m] storage.
        // SAFETY: the pointers are live device buffers of the sizes the dimensions imply
        // (checked when the problem was built, and by the callers for `c`); alpha/beta are
        // f32 as CUBLAS_COMPUTE_32F needs.
        unsafe {
            blas_result::gemm_ex(
                *self.blas.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_T,
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                n,
                m,
                k,
                &alpha as *const f32 as *const _,
                b as *const _,
                T::CUBLAS,
                k,
                a as *const _,
                T::CUBLAS,
                k,
                &beta as *const f32 as *const _,
                c as *mut _,
                c_type,
                n,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
            )
        }
        .map_err(|e| Error::Cublas {
            call: "cublasGemmEx",
            message: format!("{e:?}"),
        })
    }
}

/// Compares two host outputs within one rounding step of their type ([`Operand::TOLERANCE`]:
/// for f16 rtol 1e-3, atol 1e-5).
pub fn compare<T: Operand>(actual: &[T], expect: &[T]) -> Check {
    compare_within(
        actual.iter().map(|x| x.to_f64()),
        expect.iter().map(|y| y.to_f64()),
        T::TOLERANCE,
    )
}

/// `C = A · Bᵀ` on the CPU in f64, rounded to the operand type: a reference that shares
/// nothing with cuBLAS.
pub fn cpu_reference<T: Operand>(a: &[T], b: &[T], m: usize, n: usize, k: usize) -> Vec<T> {
    let bf: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
    let mut c = vec![T::default(); m * n];
    reference_rows(a, &bf, n, k, &mut c);
    c
}

/// [`cpu_reference`] with its buffers allocated fallibly: B in f64 and C (`[m, n]`).
pub fn try_cpu_reference<T: Operand>(
    a: &[T],
    b: &[T],
    m: usize,
    n: usize,
    k: usize,
) -> std::result::Result<Vec<T>, AllocError> {
    let mut bf = try_vec("the CPU reference", b.len(), 0.0f64)?;
    for (y, x) in bf.iter_mut().zip(b) {
        *y = x.to_f64();
    }
    let mut c = try_vec(
        "the CPU reference",
        alloc::elements("the CPU reference", &[m, n])?,
        T::default(),
    )?;
    reference_rows(a, &bf, n, k, &mut c);
    Ok(c)
}

/// The rows of `C = A · Bᵀ` (A converted to f64 one row at a time).
fn reference_rows<T: Operand>(a: &[T], bf: &[f64], n: usize, k: usize, c: &mut [T]) {
    let mut ar = vec![0.0f64; k];
    for (i, row) in c.chunks_mut(n.max(1)).enumerate() {
        for (x, y) in ar.iter_mut().zip(&a[i * k..(i + 1) * k]) {
            *x = y.to_f64();
        }
        for (j, out) in row.iter_mut().enumerate() {
            let br = &bf[j * k..(j + 1) * k];
            let s: f64 = ar.iter().zip(br).map(|(x, y)| x * y).sum();
            *out = T::from_f64(s);
        }
    }
}

/// Copies both outputs to the host (into buffers allocated fallibly) and compares them.
pub fn check<T: Operand>(stream: &Arc<CudaStream>, p: &Problem<T>) -> Result<Check> {
    let mut actual = try_vec("the output check", p.c.len(), T::default())?;
    let mut expect = try_vec("the output check", p.c_ref.len(), T::default())?;
    stream
        .memcpy_dtoh(&p.c, &mut actual)
        .map_err(drv_err("cuMemcpyDtoH"))?;
    stream
        .memcpy_dtoh(&p.c_ref, &mut expect)
        .map_err(drv_err("cuMemcpyDtoH"))?;
    let mut c = compare(&actual, &expect);
    if c.mismatches > 0 {
        referee_on_device(stream, p, &mut c, (&actual, &expect))?;
    }
    Ok(c)
}

/// Recomputes the mismatches of `check` exactly ([`crate::referee`]) from the problem's
/// inputs, brought to the host (the first `m · k` and `n · k` elements of A and B); `actual`
/// and `expect` are the first `m · n` outputs of the kernel and the reference.
pub fn referee_on_device<T: Operand>(
    stream: &Arc<CudaStream>,
    p: &Problem<T>,
    check: &mut Check,
    (actual, expect): (&[T], &[T]),
) -> Result<()> {
    let (m, n, k) = (p.m, p.n, p.k);
    let mut a = try_vec("the referee's A", m * k, T::default())?;
    let mut b = try_vec("the referee's B", n * k, T::default())?;
    stream
        .memcpy_dtoh(&p.a.slice(0..m * k), &mut a)
        .map_err(drv_err("cuMemcpyDtoH"))?;
    stream
        .memcpy_dtoh(&p.b.slice(0..n * k), &mut b)
        .map_err(drv_err("cuMemcpyDtoH"))?;
    let c = (&actual[..m * n], &expect[..m * n]);
    crate::referee::referee(check, (&a, &b), (m, n, k), c, T::TOLERANCE);
    Ok(())
}

pub use crate::compare::{compare_within, Check, Tolerance};
pub use tilus::tune::bench::{time_interleaved, Timing, L2_FLUSH_BYTES};

/// One row of the results table.
#[derive(Clone, Debug)]
pub struct Row {
    /// Problem size.
    pub m: usize,
    /// Problem size.
    pub n: usize,
    /// Problem size.
    pub k: usize,
    /// `cublas` or the version's name.
    pub name: String,
    /// Median latency in milliseconds.
    pub latency_ms: f64,
    /// Achieved TFLOPS.
    pub tflops: f64,
    /// cuBLAS time / this time, from the same run.
    pub ratio: f64,
    /// Whether this row's output matched the reference before it was timed; `None` for a row
    /// that was not checked (cuBLAS itself, the reference; a version the compiler refused at
    /// this shape, untimed). Kept so a recorded failure stays a failure instead of a missing
    /// row.
    pub passed: Option<bool>,
}

/// The rows of one shape's interleaved timing: `ms[i]` the median of `names[i]`, whose
/// output passed its check or not (`passed[i]`; `None`: the reference itself), each ratio
/// to the first (the reference's time over its own) and its TFLOPS of `2·m·n·k`.
pub fn timed_rows(
    (m, n, k): (usize, usize, usize),
    names: &[String],
    ms: &[f64],
    passed: &[Option<bool>],
) -> Vec<Row> {
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    names
        .iter()
        .zip(ms)
        .zip(passed)
        .map(|((name, &time), &passed)| Row {
            m,
            n,
            k,
            name: name.clone(),
            latency_ms: time,
            tflops: flops / (time * 1e-3) / 1e12,
            ratio: ms[0] / time,
            passed,
        })
        .collect()
}

/// Prints the seed's table (`m n k name latency(ms) tflops`) plus the ratio to cuBLAS.
pub fn print_table(rows: &[Row]) {
    // stdout closed early: nothing more to say (this printer is for examples; tools that must
    // notice a closed reader use `write_table`)
    let _ = write_table(&mut std::io::stdout(), rows);
}

/// [`print_table`] into any writer.
pub fn write_table(out: &mut dyn std::io::Write, rows: &[Row]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>6} {:>6} {:>6} {:>10} {:>13} {:>8} {:>10}",
        "m", "n", "k", "name", "latency (ms)", "tflops", "vs cuBLAS"
    )?;
    for r in rows {
        // a row whose output failed its check says so beside its time
        let mark = if r.passed == Some(false) {
            "  FAIL"
        } else {
            ""
        };
        writeln!(
            out,
            "{:>6} {:>6} {:>6} {:>10} {:>13.4} {:>8.1} {:>9.3}x{mark}",
            r.m, r.n, r.k, r.name, r.latency_ms, r.tflops, r.ratio
        )?;
    }
    Ok(())
}

/// The mutable device pointer of a buffer (for launchers that take raw pointers).
pub fn ptr_mut(s: &mut CudaSlice<f16>, stream: &CudaStream) -> u64 {
    let (p, _g) = s.device_ptr_mut(stream);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_are_named_as_the_command_line_names_them() {
        for t in [Timing::Flushed, Timing::Written, Timing::Idle] {
            assert_eq!(Timing::parse(t.name()), Ok(t));
        }
        assert_eq!(Timing::default(), Timing::Flushed);
        let e = Timing::parse("warm").unwrap_err();
        assert!(
            e.contains("`warm`") && e.contains("flushed, written, idle"),
            "{e}"
        );
    }

    #[test]
    fn compare_counts_nan_and_out_of_tolerance_elements() {
        let expect: Vec<f16> = (0..100)
            .map(|i| f16::from_f32(i as f32 * 0.01 - 0.5))
            .collect();
        assert!(compare(&expect, &expect).passed());
        let mut bad = expect.clone();
        bad[3] = f16::NAN;
        bad[7] = f16::from_f32(expect[7].to_f32() + 0.01);
        bad[9] = f16::INFINITY;
        let c = compare(&bad, &expect);
        assert_eq!((c.non_finite, c.mismatches), (2, 1));
        assert!(!c.passed());
        assert!(
            !compare::<f16>(&[], &[]).passed(),
            "an empty comparison proves nothing"
        );
    }

    #[test]
    fn cpu_reference_matches_a_hand_computed_product() {
        let a: Vec<f16> = [1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|&x| f16::from_f32(x))
            .collect(); // [2, 2]
        let b: Vec<f16> = [1.0, 0.0, 0.5, 0.5]
            .iter()
            .map(|&x| f16::from_f32(x))
            .collect(); // [2, 2]
        let c = cpu_reference(&a, &b, 2, 2, 2);
        let c: Vec<f32> = c.iter().map(|x| x.to_f32()).collect();
        assert_eq!(c, vec![1.0, 1.5, 3.0, 3.5]);
    }

    #[test]
    fn seed_inputs_are_centered_and_scaled() {
        let mut rng = Rng::new(1);
        let v = seed_inputs::<f16>(10000, 64, &mut rng);
        let mean: f64 = v.iter().map(|x| x.to_f64()).sum::<f64>() / v.len() as f64;
        let max = v.iter().map(|x| x.to_f64().abs()).fold(0.0, f64::max);
        assert!(mean.abs() < 0.005, "{mean}");
        assert!(max <= 0.5 / 8.0 + 1e-3 && max > 0.05, "{max}");
    }
}
