//! `tilus bench attention`: flash attention forward ([`tilus_kernels::attention`]) on batches
//! of `tokens` tokens in sequences of one length, verified on sampled rows against the exact
//! f64 attention, then timed. Its peers (PyTorch's `scaled_dot_product_attention` on cuDNN,
//! FlashAttention) cannot run in this process: `scripts/peers/attention.py` times them on the
//! same shapes, in the same device call.

use crate::buffers::{download, poisoned, upload, Sample};
use crate::harness::{self, Rng};
use crate::run::BenchOptions;
use crate::Result;
use tilus::runtime::Device;
use tilus_kernels::attention::{
    reference, AttentionElement, FlashForwardOp, FlashForwardWs, Heads, Sequences, Variant,
};

/// A kernel to time: one of the ablation's, or the specialized kernel with other tiles (keys
/// per step, stages) and the schedule of [`Variant::for_head_dim`]'s specialized kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// A variant with its default tiles.
    Variant(Variant),
    /// `FlashForwardWs` with these keys per step and stages (overlap on, ping-pong off), on a
    /// persistent grid or not.
    Tiles(i32, i32, bool),
}

impl Timed {
    /// How the tables name it.
    pub fn name(&self) -> String {
        match self {
            Timed::Variant(v) => v.name().to_string(),
            Timed::Tiles(kv, st, false) => format!("ws+overlap kv{kv} s{st}"),
            Timed::Tiles(kv, st, true) => format!("ws+overlap kv{kv} s{st} persistent"),
        }
    }
}

/// One benchmark's shape.
#[derive(Clone, Copy, Debug)]
pub struct AttentionCase {
    /// Sequences.
    pub batch: usize,
    /// Tokens per sequence (queries and keys).
    pub seq: usize,
    /// The heads.
    pub heads: Heads,
    /// Causal attention.
    pub causal: bool,
}

impl AttentionCase {
    /// The products' floating-point operations, `4 · b · h · s² · d`, halved for causal
    /// attention (the convention of FlashAttention's and cuDNN's figures).
    pub fn flops(&self) -> f64 {
        let h = self.heads;
        let full =
            4.0 * (self.batch * h.q_heads) as f64 * (self.seq as f64).powi(2) * h.head_dim as f64;
        if self.causal {
            full / 2.0
        } else {
            full
        }
    }
}

/// What one kernel measured on one case.
pub struct AttentionReport {
    /// The kernel.
    pub kernel: Timed,
    /// The median time, in milliseconds.
    pub ms: f64,
    /// TFLOPS by [`AttentionCase::flops`].
    pub tflops: f64,
    /// Rows checked against the exact attention.
    pub rows_checked: usize,
    /// The largest error of an output element, relative to `1 + |expected|`.
    pub max_err: f64,
    /// The largest error of a log-sum-exp.
    pub max_lse_err: f64,
    /// Every sampled element within the element type's tolerance, none NaN.
    pub passed: bool,
}

/// Verifies each kernel of `variants` on `case` with elements of `T`, then times them
/// interleaved round by round.
pub fn bench_attention<T: AttentionElement + Sample>(
    device: &Device,
    case: AttentionCase,
    kernels: &[Timed],
    opts: &BenchOptions,
) -> Result<Vec<AttentionReport>> {
    let stream = device.stream().clone();
    let h = case.heads;
    let (rows, d) = (case.batch * case.seq, h.head_dim);
    let what = format!("attention {case:?}");
    crate::alloc::ensure(
        &what,
        (rows * d * (2 * h.q_heads + 2 * h.kv_heads)) as u128 * 4,
    )?;
    let mut rng = Rng::new(opts.seed);
    let mut draw = |n: usize| -> Vec<T> {
        (0..n)
            .map(|_| <T as Sample>::from_f64(rng.next_f64() * 2.0 - 1.0))
            .collect()
    };
    let (q, k, v) = (
        draw(rows * h.q_heads * d),
        draw(rows * h.kv_heads * d),
        draw(rows * h.kv_heads * d),
    );
    let (dq, dk, dv) = (
        upload(&stream, &q)?,
        upload(&stream, &k)?,
        upload(&stream, &v)?,
    );
    let seqs = Sequences::Fixed {
        batch: case.batch,
        seq_q: case.seq,
        seq_kv: case.seq,
    };
    let scale = 1.0 / (d as f32).sqrt();
    let op = FlashForwardOp::<T>::new(device);
    type Out<T> = tilus::cudarc::driver::CudaSlice<T>;
    let run = |kernel: Timed, o: &mut Out<T>, lse: &mut Out<f32>| -> Result<()> {
        let inputs = (&dq, &dk, &dv);
        match kernel {
            Timed::Variant(v) => {
                op.run_variant(v, &stream, &seqs, h, scale, case.causal, inputs, (o, lse))?
            }
            Timed::Tiles(kv, st, persistent) => {
                let config = FlashForwardWs::<T>::new(d as i32, case.causal)
                    .with_tiles(kv, st)
                    .with_schedule(true, false)
                    .with_persistent(persistent);
                op.run_specialized(&config, &stream, (&seqs, h, scale), inputs, (o, lse))?
            }
        }
        Ok(())
    };
    // sampled rows (the first and last of the batch among them) against the exact attention
    let mut pick = Rng::new(opts.seed ^ 0x5eed);
    let mut samples = vec![(0, 0), (rows - 1, h.q_heads - 1)];
    samples.extend((0..62).map(|_| {
        let r = (pick.next_f64() * rows as f64) as usize;
        let hh = (pick.next_f64() * h.q_heads as f64) as usize;
        (r.min(rows - 1), hh.min(h.q_heads - 1))
    }));
    let wanted: Vec<(Vec<f64>, f64)> = samples
        .iter()
        .map(|&(r, hh)| {
            let inputs = (&q[..], &k[..], &v[..]);
            reference::attention_row(&seqs, h, scale as f64, case.causal, inputs, r, hh)
        })
        .collect();
    let eps = if T::NAME == "bf16" {
        1.0 / 128.0
    } else {
        1.0 / 1024.0
    };
    let mut outs = Vec::new();
    let mut checks = Vec::new();
    for &variant in kernels {
        let mut o = poisoned::<T>(&stream, &what, rows * h.q_heads * d)?;
        let mut lse = poisoned::<f32>(&stream, &what, rows * h.q_heads)?;
        run(variant, &mut o, &mut lse)?;
        stream
            .synchronize()
            .map_err(crate::buffers::drv("cuStreamSynchronize"))?;
        let got_o = download(&stream, &what, &o)?;
        let got_lse = download(&stream, &what, &lse)?;
        let (mut max_err, mut max_lse_err, mut passed) = (0.0f64, 0.0f64, true);
        for (&(r, hh), (want, want_lse)) in samples.iter().zip(&wanted) {
            for (x, w) in got_o[(r * h.q_heads + hh) * d..][..d].iter().zip(want) {
                let err = (<T as Sample>::to_f64(*x) - w).abs() / (1.0 + w.abs());
                passed &= err <= 2.0 * eps; // NaN fails
                max_err = max_err.max(if err.is_nan() { f64::INFINITY } else { err });
            }
            let l = got_lse[hh * rows + r] as f64;
            let err = (l - want_lse).abs() / (1.0 + want_lse.abs());
            passed &= err <= 1e-3;
            max_lse_err = max_lse_err.max(if err.is_nan() { f64::INFINITY } else { err });
        }
        checks.push((max_err, max_lse_err, passed));
        outs.push((o, lse));
    }
    let mut timed: Vec<Box<dyn FnMut() -> Result<()> + '_>> = kernels
        .iter()
        .zip(outs.iter_mut())
        .map(|(&variant, (o, lse))| {
            let run = &run;
            Box::new(move || run(variant, o, lse)) as Box<dyn FnMut() -> Result<()> + '_>
        })
        .collect();
    let mut refs: Vec<&mut dyn FnMut() -> Result<()>> = timed
        .iter_mut()
        .map(|f| f.as_mut() as &mut dyn FnMut() -> Result<()>)
        .collect();
    let ms =
        harness::time_interleaved(&stream, &mut refs, (opts.warmup, opts.rounds), opts.timing)?;
    Ok(kernels
        .iter()
        .zip(ms)
        .zip(checks)
        .map(
            |((&kernel, ms), (max_err, max_lse_err, passed))| AttentionReport {
                kernel,
                ms,
                tflops: case.flops() / (ms * 1e-3) / 1e12,
                rows_checked: samples.len(),
                max_err,
                max_lse_err,
                passed,
            },
        )
        .collect())
}
