//! `tilus bench matmul --dtype e4m3` (or `e5m2`): the FP8 GEMM
//! ([`tilus_kernels::gemm::fp8::Fp8GemmOp`], tuned per shape) against cuBLASLt's FP8 GEMM
//! ([`crate::cublaslt_fp8`]) on the same codes and per-tensor scales, in one process and
//! interleaved round by round, bf16 out. Before anything is timed, both outputs are checked on
//! sampled elements against the exact product of the codes' values
//! ([`tilus_kernels::gemm::fp8::reference`]): each within the bound of an f32 accumulation and
//! one rounding to bf16, NaN failing.

use crate::buffers::{download, poisoned, upload, Sample};
use crate::cublaslt_fp8::CublasLtFp8;
use crate::harness::{self, Rng, Row};
use crate::run::BenchOptions;
use crate::Result;
use half::bf16;
use std::io::Write;
use tilus::lang::Element;
use tilus::lowp::LowpElement;
use tilus::runtime::Device;
use tilus_kernels::gemm::fp8::reference::tensor_core_tolerance;
use tilus_kernels::gemm::fp8::{Fp8BlocksGemmOp, Fp8GemmOp, MatmulFp8};

/// Elements of C checked against the exact product (its four corners among them).
pub const SAMPLES: usize = 512;

/// How one output fared on the sampled elements.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sampled {
    /// Elements outside their bound (NaN counted).
    pub outside: usize,
    /// The largest |error| over its bound (≤ 1 inside).
    pub worst: f64,
    /// The largest |error| relative to the exact value's magnitude sum.
    pub max_rel: f64,
}

impl Sampled {
    /// No element outside its bound.
    pub fn passed(&self) -> bool {
        self.outside == 0
    }
}

/// What one shape measured: cuBLASLt's row, then ours with per-tensor scales, then ours with
/// fine-grained scales (the comparison: against cuBLASLt's per-tensor time); each
/// output's check; the configuration ours ran.
pub struct Fp8Report {
    /// cuBLASLt's row, then the FP8 GEMM's, per tensor and per block.
    pub rows: Vec<Row>,
    /// cuBLASLt's output on the sampled elements.
    pub peer: Sampled,
    /// The FP8 GEMM's.
    pub ours: Sampled,
    /// The FP8 GEMM's with fine-grained scales (its own scales: one per 1 × 128 block of A,
    /// per 128 × 128 block of B).
    pub blocks: Sampled,
    /// The FP8 GEMM's configuration.
    pub config: String,
}

/// `len` codes: `±2^e · (1 + u)` for `e` in `[-4, 3]`, rounded to the nearest code (every
/// magnitude the types hold well, both signs). The FP8 GEMM's inputs wherever they are drawn:
/// this benchmark, the registry's workload, the tests.
pub fn codes<T: Sample>(rng: &mut Rng, len: usize) -> Vec<T> {
    (0..len)
        .map(|_| {
            let sign = if rng.next_f64() < 0.5 { -1.0 } else { 1.0 };
            let e = (rng.next_f64() * 8.0).floor() - 4.0;
            T::from_f64(sign * 2f64.powf(e) * (1.0 + rng.next_f64()))
        })
        .collect()
}

/// Two per-tensor scales (A's, B's), not powers of two, so that a scale left out or applied
/// twice shows.
pub fn tensor_scales(rng: &mut Rng) -> [f32; 2] {
    [
        (0.01 + rng.next_f64() * 0.05) as f32,
        (0.5 + rng.next_f64() * 2.0) as f32,
    ]
}

/// `len` block scales, each its own (from 1/16 to 4), so that a block's scale read for
/// another's shows.
pub fn block_scales(rng: &mut Rng, len: usize) -> Vec<f32> {
    (0..len)
        .map(|_| 2f64.powf(rng.next_f64() * 6.0 - 4.0) as f32)
        .collect()
}

/// Verifies and times the FP8 GEMM on codes `T` at `m × n × k` (`fixed`: one configuration
/// instead of tuning).
pub fn bench_fp8<T: Sample + Element + LowpElement>(
    out: &mut dyn Write,
    device: &Device,
    (m, n, k): (usize, usize, usize),
    fixed: Option<MatmulFp8<T, bf16>>,
    opts: &BenchOptions,
) -> Result<Fp8Report> {
    let what = format!("an {m}x{n}x{k} FP8 GEMM");
    let stream = device.stream().clone();
    let mut rng = Rng::new(opts.seed);
    let a: Vec<T> = codes(&mut rng, m * k);
    let b: Vec<T> = codes(&mut rng, n * k);
    let s = tensor_scales(&mut rng);
    let (da, db, ds) = (
        upload(&stream, &a)?,
        upload(&stream, &b)?,
        upload(&stream, &s)?,
    );
    // cuBLASLt's: the same two scales, each in its own buffer
    let (dsa, dsb) = (upload(&stream, &s[..1])?, upload(&stream, &s[1..])?);
    let mut c = poisoned::<bf16>(&stream, &what, m * n)?;
    let mut c_peer = poisoned::<bf16>(&stream, &what, m * n)?;
    let op = match fixed {
        Some(config) => Fp8GemmOp::fixed(config, device),
        None => Fp8GemmOp::<T, bf16>::new(device)?,
    };
    let mut lt = CublasLtFp8::new(&stream)?;
    op.run(&stream, (m, n, k), (&da, &db), &ds, &mut c)?;
    lt.matmul(&stream, (m, n, k), (&da, &db), (&dsa, &dsb), &mut c_peer)?;
    let config = format!(
        "{:?}",
        op.config(&stream, (m, n, k), (&da, &db), &ds, &mut c)?
    );
    // the same codes with fine-grained scales (tuned), beside
    let (k_blocks, n_blocks) = (k.div_ceil(128), n.div_ceil(128));
    let bsa = block_scales(&mut rng, k_blocks * m);
    let bsb = block_scales(&mut rng, n_blocks * k_blocks);
    let (dbsa, dbsb) = (upload(&stream, &bsa)?, upload(&stream, &bsb)?);
    let mut c_blocks = poisoned::<bf16>(&stream, &what, m * n)?;
    let blocks_op = Fp8BlocksGemmOp::<T, bf16>::new(device)?;
    blocks_op.run(
        &stream,
        (m, n, k),
        (&da, &db),
        (&dbsa, &dbsb),
        &mut c_blocks,
    )?;
    let (got, peer, got_blocks) = (
        download(&stream, &what, &c)?,
        download(&stream, &what, &c_peer)?,
        download(&stream, &what, &c_blocks)?,
    );
    // the sampled elements: the corners, then random ones
    let mut at = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    while at.len() < SAMPLES.min(m * n) {
        let i = ((rng.next_f64() * m as f64) as usize).min(m - 1);
        let j = ((rng.next_f64() * n as f64) as usize).min(n - 1);
        at.push((i, j));
    }
    let scale = f64::from(s[0]) * f64::from(s[1]);
    let (mut ours, mut theirs, mut blocks) =
        (Sampled::default(), Sampled::default(), Sampled::default());
    let judge = |judged: &mut Sampled, v: f64, (want, mag): (f64, f64)| {
        let tol = tensor_core_tolerance(want, mag, k, 1.0 / 256.0);
        let err = (v - want).abs();
        if !v.is_finite() || err > tol {
            judged.outside += 1;
        }
        judged.worst = judged.worst.max(err / tol);
        judged.max_rel = judged.max_rel.max(err / mag.max(f64::MIN_POSITIVE));
    };
    for &(i, j) in &at {
        let (mut sum, mut mag, mut bsum, mut bmag) = (0.0, 0.0, 0.0, 0.0);
        for x in 0..k {
            let p = a[i * k + x].to_f64() * b[j * k + x].to_f64();
            sum += p;
            mag += p.abs();
            let kb = x / 128;
            let bs = f64::from(bsa[kb * m + i]) * f64::from(bsb[j / 128 * k_blocks + kb]);
            bsum += p * bs;
            bmag += (p * bs).abs();
        }
        let want = (scale * sum, scale * mag);
        judge(&mut ours, got[i * n + j].to_f64(), want);
        judge(&mut theirs, peer[i * n + j].to_f64(), want);
        judge(&mut blocks, got_blocks[i * n + j].to_f64(), (bsum, bmag));
    }
    let t = <T as LowpElement>::DTYPE.name();
    writeln!(out, "gemm_fp8 {t} -> bf16 {m}x{n}x{k}: {config}")?;
    let mut t_lt = || Ok(lt.matmul(&stream, (m, n, k), (&da, &db), (&dsa, &dsb), &mut c_peer)?);
    let mut t_ours = || Ok(op.run(&stream, (m, n, k), (&da, &db), &ds, &mut c)?);
    let mut t_blocks = || {
        let scales = (&dbsa, &dbsb);
        Ok(blocks_op.run(&stream, (m, n, k), (&da, &db), scales, &mut c_blocks)?)
    };
    let mut timed: Vec<&mut dyn FnMut() -> Result<()>> =
        vec![&mut t_lt, &mut t_ours, &mut t_blocks];
    let ms =
        harness::time_interleaved(&stream, &mut timed, (opts.warmup, opts.rounds), opts.timing)?;
    drop(timed);
    let names = [
        format!("cublaslt fp8 {t} -> bf16"),
        format!("gemm_fp8 {t} -> bf16"),
        format!("gemm_fp8 blocks {t} -> bf16"),
    ];
    let passed = [
        Some(theirs.passed()),
        Some(ours.passed()),
        Some(blocks.passed()),
    ];
    let rows = harness::timed_rows((m, n, k), &names, &ms, &passed);
    Ok(Fp8Report {
        rows,
        peer: theirs,
        ours,
        blocks,
        config,
    })
}
