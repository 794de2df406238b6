//! `tilus bench epilogue`: the fused epilogue against what it replaces, in one process and
//! interleaved round by round: cuBLAS alone, cuBLAS followed by the separate elementwise pass
//! ([`EpiloguePass`]), v1 with the epilogue kernel's own tile (the plain kernel it is built
//! on), v1 autotuned, and the epilogue kernel autotuned. Every output is checked first against
//! cuBLAS's f32 product with the epilogue applied on the host.

use crate::epilogue::{Activation, MatmulEpilogue};
use crate::epilogue_pass::EpiloguePass;
use crate::epilogue_workload::Extra;
use crate::harness::{self, Check, Cublas, Problem, Row};
use crate::v1::MatmulWgmma;
use crate::{alloc, Result};
use half::f16;
use std::io::Write;
use tilus::cudarc::driver::CudaSlice;
use tilus::runtime::Device;
use tilus::tune::Tunable;

/// What one shape's run measured.
pub struct EpilogueReport {
    /// The table's rows: cuBLAS first, ratios against it.
    pub rows: Vec<Row>,
    /// The fused kernel's check.
    pub fused: Check,
    /// The unfused path's check (its product is rounded to f16 before the epilogue).
    pub unfused: Check,
    /// The fused kernel's configuration.
    pub config: String,
}

fn drv(call: &'static str) -> impl Fn(tilus::cudarc::driver::DriverError) -> tilus::Error {
    move |e| tilus::Error::Driver {
        call,
        message: format!("{e:?}"),
    }
}

fn download(
    stream: &std::sync::Arc<tilus::cudarc::driver::CudaStream>,
    s: &CudaSlice<f16>,
) -> Result<Vec<f16>> {
    let mut v = alloc::try_vec("the epilogue check", s.len(), f16::ZERO)?;
    stream.memcpy_dtoh(s, &mut v).map_err(drv("cuMemcpyDtoH"))?;
    Ok(v)
}

/// Verifies and times the fused epilogue with activation `A` at `m × n × k`.
pub fn bench_epilogue<A: Activation>(
    out: &mut dyn Write,
    device: &Device,
    (m, n, k): (usize, usize, usize),
    warmup: usize,
    rounds: usize,
) -> Result<EpilogueReport> {
    let stream = device.stream().clone();
    let seed = 2026;
    let mut p = Problem::new(&stream, m, n, k, seed)?;
    let extra = Extra::draw("the epilogue benchmark", m, n, seed)?;
    let blas = Cublas::new(&stream)?;
    let up = |v: &[f16]| stream.clone_htod(v).map_err(drv("cuMemcpyHtoD"));
    let d = up(&extra.d)?;
    let bias = up(&extra.bias)?;
    let nan = alloc::try_vec("the epilogue benchmark", m * n, f16::NAN)?;
    let mut unfused = up(&nan)?;
    let mut plain = up(&nan)?;
    let mut product = stream
        .clone_htod(&alloc::try_vec("the epilogue benchmark", m * n, 0.0f32)?)
        .map_err(drv("cuMemcpyHtoD"))?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let (alpha, beta) = (extra.alpha, extra.beta);

    let fused = MatmulEpilogue::<A>::autotuned(device)?;
    let chosen = {
        let args = (mi, ni, ki, alpha, beta, &p.a, &p.b, &d, &bias, &mut p.c);
        let values =
            <<MatmulEpilogue<A> as tilus::Script>::Args as tilus::lang::ArgList>::host_values(
                &args, &stream,
            );
        fused.choose(&stream, &values)?
    };
    let config = tilus::lang::config_string(&format!("{:?}", chosen.config));
    writeln!(out, "matmul_epilogue_{} {m}x{n}x{k}: {config}", A::NAME)?;
    let same_tile = tilus::Jit::new(chosen.config.tile.clone(), device);
    let v1 = MatmulWgmma::autotuned(device)?;
    let pass = tilus::Jit::new(EpiloguePass::<A>::default(), device);

    // correctness first: the fused kernel and cuBLAS + pass against the f32 product
    blas.matmul_f32(&stream, &p, &mut product)?;
    fused.launch(
        &stream,
        (mi, ni, ki, alpha, beta, &p.a, &p.b, &d, &bias, &mut p.c),
    )?;
    blas.matmul(&stream, &p, true)?;
    pass.launch(
        &stream,
        (mi, ni, alpha, beta, &p.c_ref, &d, &bias, &mut unfused),
    )?;
    stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
    let mut prod = alloc::try_vec("the epilogue check", m * n, 0.0f32)?;
    stream
        .memcpy_dtoh(&product, &mut prod)
        .map_err(drv("cuMemcpyDtoH"))?;
    let expect = extra.expect::<A>(|i| prod[i] as f64, n);
    let fused_check = harness::compare(&download(&stream, &p.c)?, &expect);
    let unfused_check = harness::compare(&download(&stream, &unfused)?, &expect);

    let names = [
        "cublas".to_string(),
        format!("cublas + pass ({})", A::NAME),
        "v1, same tile".to_string(),
        "v1 autotuned".to_string(),
        format!("matmul_epilogue_{}", A::NAME),
    ];
    let mut t_cublas = || Ok(blas.matmul(&stream, &p, true)?);
    let mut t_unfused = || {
        blas.matmul(&stream, &p, true)?;
        Ok(pass.launch(
            &stream,
            (mi, ni, alpha, beta, &p.c_ref, &d, &bias, &mut unfused),
        )?)
    };
    let mut t_plain = || Ok(same_tile.launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut plain))?);
    let mut v1_out = up(&nan)?;
    let mut t_v1 = || Ok(v1.launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut v1_out))?);
    let mut fused_out = up(&nan)?;
    let mut t_fused = || {
        Ok(fused.launch(
            &stream,
            (
                mi,
                ni,
                ki,
                alpha,
                beta,
                &p.a,
                &p.b,
                &d,
                &bias,
                &mut fused_out,
            ),
        )?)
    };
    let ms = harness::time_interleaved(
        &stream,
        &mut [
            &mut t_cublas,
            &mut t_unfused,
            &mut t_plain,
            &mut t_v1,
            &mut t_fused,
        ],
        warmup,
        rounds,
    )?;
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    let rows = names
        .iter()
        .zip(&ms)
        .map(|(name, &t)| Row {
            m,
            n,
            k,
            name: name.clone(),
            latency_ms: t,
            tflops: flops / (t * 1e-3) / 1e12,
            ratio: ms[0] / t,
        })
        .collect();
    Ok(EpilogueReport {
        rows,
        fused: fused_check,
        unfused: unfused_check,
        config,
    })
}
