//! `tilus soak`: many launches of the matmul versions of the registry over random shapes, each
//! verified against cuBLAS, counting mismatches and NaN. Shapes: M, N, K uniform in 1..=max (K
//! a multiple of 8, as TMA's 16-byte row strides require); N and K are compile-time constants
//! of the series, so they are drawn from a pool of random pairs compiled up front, while M
//! varies freely. `--dtype bf16` soaks the versions that have a bf16 kernel, against cuBLAS
//! in bf16.

use crate::operand::BenchOperand;
use crate::out::{outln, CliError, CliResult};
use half::{bf16, f16};
use rayon::prelude::*;
use std::time::Instant;
use tilus::cudarc::driver::{sys, DevicePtrMut};
use tilus_bench::harness::{compare, referee_on_device, Check, Cublas, Problem, Rng};
use tilus_bench::registry::Entry;
use tilus_bench::run::Version;
use tilus_bench::size::{parse_dim, Size};
use tilus_bench::workloads::matmul::DIMS;

/// `a`, `a and b`, `a, b and c`.
fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Compiles `e`'s default configuration in operand type `T` for one (N, K) pair.
fn compile<T: BenchOperand>(e: &Entry, n: usize, k: usize) -> CliResult<()> {
    let Some(configure) = T::configure(e) else {
        return Ok(());
    };
    let script = configure(&[])?;
    let size = Size::new(DIMS, &[1, n as i64, k as i64])?;
    let program = script.trace(&(e.consts)(&size))?;
    let (program, plan) = tilus::passes::compile_program(program)?;
    tilus::compile::compile(&program, &plan)?;
    Ok(())
}

fn driver(e: impl std::fmt::Debug) -> CliError {
    CliError::Failed(format!("{e:?}"))
}

/// The options of `tilus soak`.
pub(crate) struct SoakArgs {
    pub launches: usize,
    pub max: u64,
    pub pool: usize,
    pub seed: u64,
    /// The operand type (`f16`, `bf16`).
    pub dtype: String,
}

/// Runs the soak; prints a summary line per version and returns whether everything matched.
pub fn soak(a: SoakArgs) -> CliResult<bool> {
    match a.dtype.as_str() {
        "f16" => soak_in::<f16>(a),
        "bf16" => soak_in::<bf16>(a),
        other => Err(CliError::Usage(format!(
            "unknown --dtype `{other}` (f16, bf16)"
        ))),
    }
}

/// The soak in operand type `T`.
fn soak_in<T: BenchOperand>(a: SoakArgs) -> CliResult<bool> {
    let SoakArgs {
        launches,
        max,
        pool,
        seed,
        ..
    } = a;
    // the options first, before the GPU is touched
    let max = parse_dim("--max", &max.to_string())? as usize;
    if max < 8 {
        return Err(CliError::Usage(format!(
            "--max {max}: at least 8 is needed (K is a multiple of 8)"
        )));
    }
    if pool == 0 {
        return Err(CliError::Usage("--pool must be at least 1".into()));
    }
    let square = tilus_bench::alloc::elements("the soak", &[max, max])?;
    tilus_bench::harness::Problem::ensure_host(max, max, max)?;
    // two page-locked host buffers of max*max halves
    tilus_bench::alloc::ensure(
        &format!("the soak's host buffers at --max {max}"),
        4 * square as u128,
    )?;
    let entries: Vec<&Entry> = crate::kernels()
        .entries()
        .iter()
        .filter(|e| {
            e.matmul
                .as_ref()
                .is_some_and(|m| m.soak && T::fixed(m).is_some())
        })
        .collect();
    if entries.is_empty() {
        return Err(CliError::Failed(format!(
            "no kernel of the registry takes part in the soak in {}",
            T::NAME
        )));
    }
    let device = tilus::runtime::Device::open(0)?;
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream)?;
    let mut rng = Rng::new(seed);
    let mut draw =
        |lo: usize, hi: usize| lo + ((rng.next_f64() * (hi - lo + 1) as f64) as usize).min(hi - lo);
    let pairs: Vec<(usize, usize)> = (0..pool)
        .map(|_| (draw(1, max), 8 * draw(1, max / 8)))
        .collect();
    let ms: Vec<usize> = (0..launches).map(|_| draw(1, max)).collect();
    let picks: Vec<usize> = (0..launches).map(|_| draw(0, pool - 1)).collect();
    // compile every specialization up front, in parallel
    let t = Instant::now();
    pairs
        .par_iter()
        .try_for_each(|&(n, k)| entries.iter().try_for_each(|e| compile::<T>(e, n, k)))?;
    let names: Vec<&str> = entries
        .iter()
        .filter_map(|e| e.matmul.as_ref().map(|m| m.version))
        .collect();
    outln!(
        "compiled {} specializations of {} ({}) in {:.1} s",
        pool,
        and_list(&names),
        T::NAME,
        t.elapsed().as_secs_f64()
    );
    // one allocation of the largest problem; each launch uses a prefix
    let mut p = Problem::<T>::new(&stream, max, max, max, seed ^ 0x50a4)?;
    // page-locked host buffers: device-to-host copies at full speed
    let ctx = device.context();
    // SAFETY: the buffers are written by the copies below before they are read.
    let (mut host_got, mut host_want) = unsafe {
        (
            ctx.alloc_pinned_with_flags::<T>(square, 0)
                .map_err(driver)?,
            ctx.alloc_pinned_with_flags::<T>(square, 0)
                .map_err(driver)?,
        )
    };
    let mut versions: Vec<Box<dyn Version<T>>> = vec![];
    for e in &entries {
        if let Some(fixed) = e.matmul.as_ref().and_then(T::fixed) {
            versions.push(fixed(&[], &device)?.0);
        }
    }
    let t = Instant::now();
    let count = versions.len();
    let (mut bad, mut nan, mut elements) = (vec![0usize; count], vec![0usize; count], 0usize);
    // elements where cuBLAS (reduced-precision reductions disallowed) was the one off
    let mut cublas_off = 0usize;
    for i in 0..launches {
        let (n, k) = pairs[picks[i]];
        let m = ms[i];
        let vi = i % count;
        (p.m, p.n, p.k) = (m, n, k);
        // poison the output (NaN), compute the reference, run the kernel
        {
            let (ptr, _g) = p.c.device_ptr_mut(&stream);
            // SAFETY: the buffer holds max*max >= m*n halves; ordered on the stream.
            let r =
                unsafe { sys::cuMemsetD16Async(ptr, T::NAN.to_bits(), m * n, stream.cu_stream()) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(CliError::Failed(format!("cuMemsetD16Async: {r:?}")));
            }
        }
        blas.reference(&stream, &p)?;
        versions[vi]
            .launch(&stream, &mut p)
            .map_err(|e| CliError::Failed(format!("launch {i} ({m}x{n}x{k}): {e}")))?;
        stream
            .memcpy_dtoh(&p.c.slice(0..m * n), &mut host_got)
            .map_err(driver)?;
        stream
            .memcpy_dtoh(&p.c_ref.slice(0..m * n), &mut host_want)
            .map_err(driver)?;
        stream.synchronize().map_err(driver)?;
        let got = &host_got.as_slice().map_err(driver)?[..m * n];
        let want = &host_want.as_slice().map_err(driver)?[..m * n];
        let chunk = 1 << 16;
        let checks: Vec<_> = got
            .par_chunks(chunk)
            .zip(want.par_chunks(chunk))
            .map(|(a, b)| compare(a, b))
            .collect();
        let (mm, nn): (usize, usize) = checks
            .iter()
            .fold((0, 0), |(x, y), c| (x + c.mismatches, y + c.non_finite));
        // the mismatches recomputed exactly: only those the kernel got wrong count
        let mut verdict = Check {
            total: m * n,
            mismatches: mm,
            non_finite: nn,
            ..Check::default()
        };
        if mm > 0 {
            referee_on_device(&stream, &p, &mut verdict, (got, want))?;
        }
        let wrong = mm - verdict.refereed_ok;
        bad[vi] += wrong;
        nan[vi] += nn;
        cublas_off += verdict.reference_off;
        elements += m * n;
        if mm + nn > 0 {
            outln!(
                "launch {i}: {} {m}x{n}x{k}: {mm} mismatches with cuBLAS, {wrong} the kernel's by the exact referee, {} cuBLAS's; {nn} non-finite",
                versions[vi].name(),
                verdict.reference_off
            );
        }
    }
    outln!(
        "{launches} launches ({} elements checked) in {:.1} s",
        elements,
        t.elapsed().as_secs_f64()
    );
    for (vi, v) in versions.iter().enumerate() {
        outln!(
            "{}: {} launches, {} mismatches, {} NaN/inf",
            v.name(),
            launches / count + (vi < launches % count) as usize,
            bad[vi],
            nan[vi]
        );
    }
    outln!(
        "(mismatches with cuBLAS are recomputed exactly and counted only where the kernel is off; \
         cuBLAS was off the exact value beyond its own rounding in {cublas_off} elements)"
    );
    Ok(bad.iter().sum::<usize>() + nan.iter().sum::<usize>() == 0)
}
