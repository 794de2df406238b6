//! `tilus bench attention --decode`: a decode step ([`tilus_kernels::attention::decode`]) over
//! a contiguous or paged cache of `batch` sequences of `context` positions (of the
//! attention's type, or of e4m3 codes with a scale per key-value head), verified on
//! sampled rows against the exact f64 step, then timed; its figure is the bandwidth of the
//! keys and values it reads. Its peers (PyTorch's `scaled_dot_product_attention` on cuDNN,
//! FlashInfer) time the same shapes from `scripts/peers/attention.py --decode`.

use crate::buffers::{download, poisoned, upload, Sample};
use crate::harness::{self, Rng};
use crate::run::BenchOptions;
use crate::Result;
use tilus::runtime::Device;
use tilus_kernels::attention::decode::{
    reference, Cache, CacheOf, Decode, DecodeOp, KvLayout, Tiling,
};
use tilus_kernels::attention::{AttentionElement, Heads};

/// One benchmark's shape.
#[derive(Clone, Copy, Debug)]
pub struct DecodeCase {
    /// Sequences.
    pub batch: usize,
    /// Positions per sequence's context, the new tokens included.
    pub context: usize,
    /// New tokens per sequence.
    pub queries: usize,
    /// The heads.
    pub heads: Heads,
    /// Rows per page (`None`: a contiguous cache).
    pub page_size: Option<usize>,
    /// Stages and splits given to the host API instead of its own choice.
    pub tiling: Tiling,
}

impl DecodeCase {
    /// The bytes of keys and values a step reads: every position of every sequence, once
    /// per key-value head.
    pub fn kv_bytes<T>(&self) -> f64 {
        let h = self.heads;
        2.0 * (self.batch * self.context * h.kv_heads * h.head_dim * std::mem::size_of::<T>())
            as f64
    }

    /// The call it makes (the pages of the cache in a shuffled order).
    pub fn call(&self) -> Decode {
        let layout = match self.page_size {
            None => KvLayout::Contiguous {
                capacity: self.context,
            },
            Some(page_size) => {
                let pages_per_seq = self.context.div_ceil(page_size);
                KvLayout::Paged {
                    page_size,
                    pages: self.batch * pages_per_seq,
                    pages_per_seq,
                }
            }
        };
        Decode {
            batch: self.batch,
            queries: self.queries,
            heads: self.heads,
            layout,
            max_context: self.context,
        }
    }
}

/// What the kernel measured on one case.
pub struct DecodeReport {
    /// The median time, in milliseconds.
    pub ms: f64,
    /// Keys and values read per second, in TB/s ([`DecodeCase::kv_bytes`]).
    pub tbps: f64,
    /// Rows checked against the exact step.
    pub rows_checked: usize,
    /// The largest error of an output element, relative to `1 + |expected|`.
    pub max_err: f64,
    /// The largest error of a log-sum-exp.
    pub max_lse_err: f64,
    /// Every sampled element within the element type's tolerance, none NaN.
    pub passed: bool,
}

/// `n` values in (-top, top): a random block of a million repeated (a cache of billions of
/// elements is drawn in a moment; the rows a check reads are as random as any).
fn values<T: Sample>(rng: &mut Rng, n: usize, top: f64) -> Vec<T> {
    let block: Vec<T> = (0..n.min(1 << 20))
        .map(|_| T::from_f64((rng.next_f64() * 2.0 - 1.0) * top))
        .collect();
    block.iter().copied().cycle().take(n).collect()
}

/// Verifies the decode step on `case` with queries and output of `T` over a cache of `C`,
/// then times it. A cache of scaled codes holds codes across the format's range and scales
/// that make the values about (-1, 1), a different pair in each key-value head.
pub fn bench_decode<T: AttentionElement + Sample, C: CacheOf<T> + Sample>(
    device: &Device,
    case: DecodeCase,
    opts: &BenchOptions,
) -> Result<DecodeReport> {
    let stream = device.stream().clone();
    let call = case.call();
    let h = case.heads;
    let d = h.head_dim;
    let what = format!("decode {case:?}");
    let rows_cache = match call.layout {
        KvLayout::Contiguous { capacity } => case.batch * capacity,
        KvLayout::Paged {
            page_size, pages, ..
        } => pages * page_size,
    };
    let bytes = std::mem::size_of::<C>() as u128;
    crate::alloc::ensure(&what, (2 * rows_cache * h.kv_heads * d) as u128 * bytes)?;
    let mut rng = Rng::new(opts.seed);
    let rows = case.batch * case.queries * h.q_heads;
    let q = values::<T>(&mut rng, rows * d, 1.0);
    // codes over (-top, top): the whole range of a scaled format
    let top = C::code_range();
    let n = rows_cache * h.kv_heads * d;
    let (k, v) = (values::<C>(&mut rng, n, top), values::<C>(&mut rng, n, top));
    let scales: Option<Vec<f32>> = C::SCALED.then(|| {
        let grow = |h: usize| (1.0 + h as f64 / 8.0) / top;
        let ks = (0..h.kv_heads).map(|i| grow(i) as f32);
        let vs = (0..h.kv_heads).map(|i| (1.0 / (grow(i) * top * top)) as f32);
        ks.chain(vs).collect()
    });
    let table = match call.layout {
        KvLayout::Contiguous { .. } => None,
        KvLayout::Paged { pages, .. } => {
            let mut order: Vec<i32> = (0..pages as i32).collect();
            for i in (1..pages).rev() {
                let j = (rng.next_f64() * (i + 1) as f64) as usize;
                order.swap(i, j.min(i));
            }
            Some(order)
        }
    };
    let lens = vec![case.context as i32; case.batch];
    let (dq, dk, dv) = (
        upload(&stream, &q)?,
        upload(&stream, &k)?,
        upload(&stream, &v)?,
    );
    let ints = |x: &[i32]| -> Result<tilus::cudarc::driver::CudaSlice<i32>> {
        Ok(stream
            .clone_htod(x)
            .map_err(crate::buffers::drv("cuMemcpyHtoD"))?)
    };
    let dtable = table.as_deref().map(ints).transpose()?;
    let dlens = ints(&lens)?;
    let dscales = scales.as_deref().map(|s| upload(&stream, s)).transpose()?;
    let scale = 1.0 / (d as f32).sqrt();
    let op = DecodeOp::<T>::new(device)?;
    let mut o = poisoned::<T>(&stream, &what, rows * d)?;
    let mut lse = poisoned::<f32>(&stream, &what, rows)?;
    let run = |o: &mut tilus::cudarc::driver::CudaSlice<T>,
               lse: &mut tilus::cudarc::driver::CudaSlice<f32>|
     -> Result<()> {
        let cache = Cache {
            k: &dk,
            v: &dv,
            table: dtable.as_ref(),
            lens: &dlens,
            scales: dscales.as_ref(),
        };
        op.run_with(&stream, (&call, case.tiling), scale, &dq, cache, (o, lse))?;
        Ok(())
    };
    run(&mut o, &mut lse)?;
    stream
        .synchronize()
        .map_err(crate::buffers::drv("cuStreamSynchronize"))?;
    let (got_o, got_lse) = (
        download(&stream, &what, &o)?,
        download(&stream, &what, &lse)?,
    );
    // sampled rows (the first and the last among them) against the exact step
    let host = Cache {
        k: &k[..],
        v: &v[..],
        table: table.as_deref(),
        lens: &lens[..],
        scales: scales.as_deref(),
    };
    let mut pick = Rng::new(opts.seed ^ 0x5eed);
    let mut samples = vec![0, rows - 1];
    samples.extend((0..30).map(|_| ((pick.next_f64() * rows as f64) as usize).min(rows - 1)));
    let eps = if T::NAME == "bf16" {
        1.0 / 128.0
    } else {
        1.0 / 1024.0
    };
    let (mut max_err, mut max_lse_err, mut passed) = (0.0f64, 0.0f64, true);
    for &r in &samples {
        let (hh, t, b) = (
            r % h.q_heads,
            r / h.q_heads % case.queries,
            r / h.q_heads / case.queries,
        );
        let (want, want_lse) = reference::decode_row(&call, scale as f64, &q, &host, (b, t, hh));
        for (x, w) in got_o[r * d..][..d].iter().zip(&want) {
            let err = (<T as Sample>::to_f64(*x) - w).abs() / (1.0 + w.abs());
            passed &= err <= 2.0 * eps; // NaN fails
            max_err = max_err.max(if err.is_nan() { f64::INFINITY } else { err });
        }
        let err = (got_lse[r] as f64 - want_lse).abs() / (1.0 + want_lse.abs());
        passed &= err <= 1e-3;
        max_lse_err = max_lse_err.max(if err.is_nan() { f64::INFINITY } else { err });
    }
    let mut step = || run(&mut o, &mut lse);
    let mut refs: Vec<&mut dyn FnMut() -> Result<()>> = vec![&mut step];
    let ms =
        harness::time_interleaved(&stream, &mut refs, (opts.warmup, opts.rounds), opts.timing)?;
    let ms = ms[0];
    Ok(DecodeReport {
        ms,
        tbps: case.kv_bytes::<C>() / (ms * 1e-3) / 1e12,
        rows_checked: samples.len(),
        max_err,
        max_lse_err,
        passed,
    })
}
