//! `tilus soak`: many launches of the example kernels over random shapes, each verified against
//! cuBLAS, counting mismatches and NaN. Shapes: M, N, K uniform in 1..=max (K a multiple of 8,
//! as TMA's 16-byte row strides require); N and K are compile-time constants of the examples,
//! so they are drawn from a pool of random pairs compiled up front, while M varies freely.

use hopper_matmul::harness::{compare, Cublas, Problem, Rng};
use hopper_matmul::run::{Version, V0, V1};
use rayon::prelude::*;
use std::time::Instant;
use tilus::cudarc::driver::{sys, DevicePtrMut};

/// Runs the soak; prints a summary line per version and returns whether everything matched.
pub fn soak(launches: usize, max: usize, pool: usize, seed: u64) -> Result<bool, String> {
    let device = tilus::runtime::Device::open(0).map_err(|e| e.to_string())?;
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).map_err(|e| e.to_string())?;
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
    let v0c = hopper_matmul::v0::MatmulTma::default();
    let v1c = hopper_matmul::v1::MatmulWgmma::default();
    pairs
        .par_iter()
        .try_for_each(|&(n, k)| -> Result<(), String> {
            let c = [n as i64, k as i64];
            tilus::build(&v0c, &c).map_err(|e| e.to_string())?;
            tilus::build(&v1c, &c).map_err(|e| e.to_string())?;
            Ok(())
        })?;
    println!(
        "compiled {} specializations of v0 and v1 in {:.1} s",
        pool,
        t.elapsed().as_secs_f64()
    );
    // one allocation of the largest problem; each launch uses a prefix
    let mut p = Problem::new(&stream, max, max, max, seed ^ 0x50a4).map_err(|e| e.to_string())?;
    // page-locked host buffers: device-to-host copies at full speed
    let ctx = device.context();
    // SAFETY: the buffers are written by the copies below before they are read.
    let (mut host_got, mut host_want) = unsafe {
        (
            ctx.alloc_pinned_with_flags::<half::f16>(max * max, 0)
                .map_err(|e| format!("{e:?}"))?,
            ctx.alloc_pinned_with_flags::<half::f16>(max * max, 0)
                .map_err(|e| format!("{e:?}"))?,
        )
    };
    let versions: Vec<Box<dyn Version>> = vec![
        Box::new(V0::new(v0c, &device)),
        Box::new(V1::new(v1c, &device)),
    ];
    let t = Instant::now();
    let (mut bad, mut nan, mut elements) = (vec![0usize; 2], vec![0usize; 2], 0usize);
    for i in 0..launches {
        let (n, k) = pairs[picks[i]];
        let m = ms[i];
        let vi = i % versions.len();
        (p.m, p.n, p.k) = (m, n, k);
        // poison the output (NaN), compute the reference, run the kernel
        {
            let (ptr, _g) = p.c.device_ptr_mut(&stream);
            // SAFETY: the buffer holds max*max >= m*n halves; ordered on the stream.
            let r = unsafe { sys::cuMemsetD16Async(ptr, 0x7e00, m * n, stream.cu_stream()) };
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(format!("cuMemsetD16Async: {r:?}"));
            }
        }
        blas.matmul(&stream, &p, true).map_err(|e| e.to_string())?;
        versions[vi]
            .launch(&stream, &mut p)
            .map_err(|e| format!("launch {i} ({m}x{n}x{k}): {e}"))?;
        stream
            .memcpy_dtoh(&p.c.slice(0..m * n), &mut host_got)
            .map_err(|e| format!("{e:?}"))?;
        stream
            .memcpy_dtoh(&p.c_ref.slice(0..m * n), &mut host_want)
            .map_err(|e| format!("{e:?}"))?;
        stream.synchronize().map_err(|e| format!("{e:?}"))?;
        let got = &host_got.as_slice().map_err(|e| format!("{e:?}"))?[..m * n];
        let want = &host_want.as_slice().map_err(|e| format!("{e:?}"))?[..m * n];
        let chunk = 1 << 16;
        let checks: Vec<_> = got
            .par_chunks(chunk)
            .zip(want.par_chunks(chunk))
            .map(|(a, b)| compare(a, b))
            .collect();
        let (mm, nn): (usize, usize) = checks
            .iter()
            .fold((0, 0), |(x, y), c| (x + c.mismatches, y + c.non_finite));
        bad[vi] += mm;
        nan[vi] += nn;
        elements += m * n;
        if mm + nn > 0 {
            println!(
                "launch {i}: {} {m}x{n}x{k}: {mm} mismatches, {nn} non-finite",
                versions[vi].name()
            );
        }
    }
    println!(
        "{launches} launches ({} elements checked) in {:.1} s",
        elements,
        t.elapsed().as_secs_f64()
    );
    for (vi, v) in versions.iter().enumerate() {
        println!(
            "{}: {} launches, {} mismatches, {} NaN/inf",
            v.name(),
            launches / 2 + (vi < launches % 2) as usize,
            bad[vi],
            nan[vi]
        );
    }
    Ok(bad.iter().sum::<usize>() + nan.iter().sum::<usize>() == 0)
}
