//! `tilus bench epilogue`: the fused epilogue against what it replaces, in one process and
//! interleaved round by round: cuBLAS alone, cuBLAS followed by the separate elementwise pass
//! ([`EpiloguePass`]), v6 with the epilogue kernel's own configuration (the plain kernel it is
//! built on), v6 autotuned, and the epilogue kernel autotuned (or in a configuration given).
//! Every output is checked first against cuBLAS's f32 product with the epilogue applied on the
//! host.

use crate::buffers::{download, poisoned, upload};
use crate::epilogue_pass::EpiloguePass;
use crate::harness::{self, Check, Cublas, Problem, Row};
use crate::run::BenchOptions;
use crate::workloads::epilogue::Extra;
use crate::Result;
use half::f16;
use std::io::Write;
use tilus::lang::ArgList;
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};
use tilus::Jit;
use tilus_kernels::gemm::epilogue::{Activation, EpilogueArgs, MatmulEpilogue};
use tilus_kernels::gemm::persistent::MatmulPersistent;

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
    /// Why v6 with the fused kernel's configuration was not timed, when it was not (the
    /// fused kernel stores narrower chunks, so a configuration can fit it and not v6).
    pub plain_missing: Option<String>,
}

impl EpilogueReport {
    /// The latency of the row named `name`, if it was timed.
    pub fn latency(&self, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.latency_ms)
    }
}

/// The name of the cuBLAS row of [`bench_epilogue`]'s table (the ratios are against it).
pub const ROW_CUBLAS: &str = "cublas";
/// v6 with the fused kernel's configuration.
pub const ROW_PLAIN: &str = "v6, same config";
/// v6 autotuned on its own.
pub const ROW_V6: &str = "v6 autotuned";

/// Verifies and times the fused epilogue with activation `A` at `m × n × k`: autotuned, or
/// with `fixed` as its main loop's configuration.
pub fn bench_epilogue<A: Activation>(
    out: &mut dyn Write,
    device: &Device,
    (m, n, k): (usize, usize, usize),
    opts: &BenchOptions,
    fixed: Option<&MatmulPersistent>,
) -> Result<EpilogueReport> {
    let stream = device.stream().clone();
    let seed = opts.seed;
    let mut p = Problem::new(&stream, m, n, k, seed)?;
    let extra = Extra::draw("the epilogue benchmark", m, n, seed)?;
    let blas = Cublas::new(&stream)?;
    let what = "the epilogue benchmark";
    let d = upload(&stream, &extra.d)?;
    let bias = upload(&stream, &extra.bias)?;
    let mut unfused = poisoned::<f16>(&stream, what, m * n)?;
    let mut plain = poisoned::<f16>(&stream, what, m * n)?;
    let mut product = poisoned::<f32>(&stream, what, m * n)?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    let (alpha, beta) = (extra.alpha, extra.beta);

    let fused = match fixed {
        Some(tile) => FixedOrTuned::Fixed(Jit::new(MatmulEpilogue::<A>::new(tile.clone()), device)),
        None => FixedOrTuned::Tuned(MatmulEpilogue::<A>::autotuned(device)?),
    };
    let tile = {
        let args = (mi, ni, ki, alpha, beta, &p.a, &p.b, &d, &bias, &mut p.c);
        let values = <EpilogueArgs as ArgList>::host_values(&args, &stream);
        fused.config(&stream, &values)?.tile
    };
    let config =
        tilus::lang::config_string(&format!("{:?}", MatmulEpilogue::<A>::new(tile.clone())));
    writeln!(out, "matmul_epilogue_{} {m}x{n}x{k}: {config}", A::NAME)?;
    let same_tile = Jit::new(tile, device);
    let v6 = MatmulPersistent::autotuned(device)?;
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
    stream
        .synchronize()
        .map_err(crate::buffers::drv("cuStreamSynchronize"))?;
    let prod = download(&stream, what, &product)?;
    let expect = extra.expect::<A>(|i| prod[i] as f64, n);
    let fused_check = harness::compare(&download(&stream, what, &p.c)?, &expect);
    let unfused_check = harness::compare(&download(&stream, what, &unfused)?, &expect);

    // v6 with the fused kernel's configuration may not fit (its staging is wider): then it
    // is left out of the table and said so
    let plain_missing = same_tile
        .launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut plain))
        .err()
        .map(|e| e.to_string());
    let names = [
        ROW_CUBLAS.to_string(),
        format!("cublas + pass ({})", A::NAME),
        ROW_PLAIN.to_string(),
        ROW_V6.to_string(),
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
    let mut v6_out = poisoned::<f16>(&stream, what, m * n)?;
    let mut t_v6 = || Ok(v6.launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut v6_out))?);
    let mut fused_out = poisoned::<f16>(&stream, what, m * n)?;
    let mut t_fused = || {
        let args = (
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
        );
        Ok(fused.launch(&stream, args)?)
    };
    let mut timed: Vec<&mut dyn FnMut() -> Result<()>> = vec![&mut t_cublas, &mut t_unfused];
    if plain_missing.is_none() {
        timed.push(&mut t_plain);
    }
    timed.push(&mut t_v6);
    timed.push(&mut t_fused);
    let ms =
        harness::time_interleaved(&stream, &mut timed, (opts.warmup, opts.rounds), opts.timing)?;
    let flops = 2.0 * m as f64 * n as f64 * k as f64;
    // the rows checked above: cuBLAS + pass and the fused kernel (the plain v6 rows are timed
    // for comparison only)
    let passed = [
        None,
        Some(unfused_check.passed()),
        None,
        None,
        Some(fused_check.passed()),
    ];
    let kept = |i: &usize| *i != 2 || plain_missing.is_none();
    let rows = names
        .iter()
        .enumerate()
        .filter(|(i, _)| kept(i))
        .map(|(_, name)| name)
        .zip(&ms)
        .zip(
            passed
                .iter()
                .enumerate()
                .filter(|(i, _)| kept(i))
                .map(|(_, p)| *p),
        )
        .map(|((name, &t), passed)| Row {
            m,
            n,
            k,
            name: name.clone(),
            latency_ms: t,
            tflops: flops / (t * 1e-3) / 1e12,
            ratio: ms[0] / t,
            passed,
        })
        .collect();
    Ok(EpilogueReport {
        rows,
        fused: fused_check,
        unfused: unfused_check,
        config,
        plain_missing,
    })
}
