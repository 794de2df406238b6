//! `tilus bench quant`: the quantized matmul ([`tilus_kernels::quant::QuantMatmulOp`], which
//! picks its kernel by M) against cuBLAS f16 on the dequantized weights, in one process and
//! interleaved round by round. The weights are random, quantized on the host; cuBLAS gets the
//! same weights dequantized and rounded to f16 (what the kernels multiply), so the outputs are
//! checked against cuBLAS's (reduced-precision reductions disallowed) before anything is timed.
//! The table gives each one's time and TFLOPS, the ratio (cuBLAS's time over each), and the
//! bytes of packed weights read per second.

use crate::alloc;
use crate::buffers::{download, drv, poisoned, upload};
use crate::harness::{self, Check, Cublas, Problem, Rng, Row};
use crate::run::BenchOptions;
use crate::Result;
use half::f16;
use std::io::Write;
use tilus::lowp::*;
use tilus::prelude::Element;
use tilus::runtime::Device;
use tilus_kernels::quant::prepack::{prepack, prepackable};
use tilus_kernels::quant::{
    kernel_name, plan, quantize, Plan, QuantMatmul, QuantMatmulFragments, QuantMatmulOp, Scheme,
};

/// The weight types `tilus bench quant --dtypes` takes.
pub const DTYPES: &[&str] = &[
    "i8", "i4", "i3", "i2", "u4", "f8e4m3", "f8e5m2", "f6e3m2", "f4e2m1",
];

/// Tiles of the few-rows kernel timed beside the one the host API picks (`tilus bench quant
/// --few-rows`): rows of W per block, tiles of K per step, warps.
pub type FewRowsTiles = (i32, i32, u32);

/// Kernels timed beside the picked one: few-rows tiles where M is few rows, and stage
/// counts of the fragment kernel where it takes the shape.
#[derive(Clone, Debug, Default)]
pub struct Variants {
    /// Tiles of the few-rows kernel.
    pub few_rows: Vec<FewRowsTiles>,
    /// Stage counts of the fragment kernel (its rows of A per block as the host API picks).
    pub fragment_stages: Vec<i32>,
    /// Counts of blocks sharing a tile's K steps in the fragment kernel (its rows of A per
    /// block as the host API picks), each at every stage count of `fragment_stages` (the
    /// host API's without them).
    pub fragment_splits: Vec<i32>,
    /// Rows of A per block and stages of the fragment kernel with two warp groups.
    pub fragment_wide: Vec<(i32, i32)>,
    /// K steps per stage of the fragment kernel (one warp group, its rows of A per block as
    /// the host API picks), each at every stage count of `fragment_stages` (the host API's
    /// without them).
    pub fragment_stage_steps: Vec<i32>,
    /// Also the fragment kernel with its products by `mma.sync` (one warp group, its rows of
    /// A per block and splits as the host API picks, where those are 8 or 16), at every
    /// stage count of `fragment_stages` (the host API's without them).
    pub fragment_mma_sync: bool,
    /// Also the fragment kernel with its sums scaled by group (one warp group, the host
    /// API's rows of A per block and splits), at one K step a stage and at each count of
    /// `fragment_stage_steps`, at every stage count of `fragment_stages` (the host API's
    /// without them); a plan it cannot take is reported and skipped.
    pub fragment_scale_sums: bool,
}

/// How a timed configuration of the fragment kernel dequantizes and multiplies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Scaled f16 pairs, products by WGMMA (the host API's form).
    Pairs,
    /// Scaled f16 pairs, products by `mma.sync`.
    MmaSync,
    /// Sums scaled by group.
    Sums,
}

/// What one shape and type measured.
pub struct QuantReport {
    /// cuBLAS's row, then the quantized matmul's.
    pub rows: Vec<Row>,
    /// The quantized matmul's output against cuBLAS's.
    pub check: Check,
    /// Bytes of packed weights (with their scales and zero points) read per second by the
    /// quantized matmul, in GB/s.
    pub weight_gbps: f64,
    /// Which kernel ran: `few rows`, `tensor cores` or `ring`.
    pub kernel: &'static str,
}

/// Verifies and times the quantized matmul with weights of type `dtype` (a name of
/// [`DTYPES`]) at `m × n × k`, quantized by `scheme`.
pub fn bench_quant_named(
    out: &mut dyn Write,
    device: &Device,
    dtype: &str,
    shape: (usize, usize, usize),
    scheme: Scheme,
    variants: &Variants,
    opts: &BenchOptions,
) -> Result<QuantReport> {
    match dtype {
        "i8" => bench_quant::<I8>(out, device, shape, scheme, variants, opts),
        "i4" => bench_quant::<I4>(out, device, shape, scheme, variants, opts),
        "i3" => bench_quant::<Int<3>>(out, device, shape, scheme, variants, opts),
        "i2" => bench_quant::<I2>(out, device, shape, scheme, variants, opts),
        "u4" => bench_quant::<U4>(out, device, shape, scheme, variants, opts),
        "f8e4m3" => bench_quant::<F8E4M3>(out, device, shape, scheme, variants, opts),
        "f8e5m2" => bench_quant::<F8E5M2>(out, device, shape, scheme, variants, opts),
        "f6e3m2" => bench_quant::<F6E3M2>(out, device, shape, scheme, variants, opts),
        "f4e2m1" => bench_quant::<F4E2M1>(out, device, shape, scheme, variants, opts),
        other => Err(crate::Error::Usage(format!(
            "no weight type `{other}` (one of {})",
            DTYPES.join(", ")
        ))),
    }
}

/// [`bench_quant_named`] for weights of type `T`.
pub fn bench_quant<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    out: &mut dyn Write,
    device: &Device,
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    variants: &Variants,
    opts: &BenchOptions,
) -> Result<QuantReport> {
    let what = format!("a {m}x{n}x{k} quantized matmul");
    let [mk, nk, mn] = Problem::ensure_host(m, n, k)?;
    // the weights in f32, their dequantized f16 copy and the packed codes at once
    alloc::ensure(&what, nk as u128 * 7)?;
    let stream = device.stream().clone();
    let t = <T as LowpElement>::DTYPE;
    let mut rng = Rng::new(opts.seed);
    let w: Vec<f32> = (0..nk)
        .map(|_| (rng.next_f64() * 2.0 - 1.0) as f32)
        .collect();
    let q = quantize::<T>(&w, (n, k), scheme);
    drop(w);
    let deq: Vec<f16> = (0..nk)
        .map(|i| f16::from_f64(q.dequantized(i / k, i % k)))
        .collect();
    let a: Vec<f16> = (0..mk)
        .map(|_| f16::from_f64(rng.next_f64() * 2.0 - 1.0))
        .collect();
    let p = Problem {
        m,
        n,
        k,
        a: upload(&stream, &a)?,
        b: upload(&stream, &deq)?,
        c: poisoned::<f16>(&stream, &what, mn)?,
        c_ref: poisoned::<f16>(&stream, &what, mn)?,
    };
    drop(deq);
    let blas = Cublas::new(&stream)?;
    let op = QuantMatmulOp::<T>::new(device, scheme)?;
    let dw = stream.clone_htod(&q.packed).map_err(drv("cuMemcpyHtoD"))?;
    let ds = upload(&stream, &q.scales)?;
    let dz = if q.zeros.is_empty() {
        None
    } else {
        Some(upload(&stream, &q.zeros)?)
    };
    let mut c = poisoned::<f16>(&stream, &what, mn)?;
    let weights = (dw.clone(), ds.clone(), dz.clone());
    let run = |c: &mut tilus::cudarc::driver::CudaSlice<f16>| -> Result<()> {
        op.run(
            &stream,
            (m, n, k),
            &p.a,
            (&weights.0, &weights.1, weights.2.as_ref()),
            c,
        )
        .map_err(crate::Error::from)
    };
    // correctness first
    run(&mut c)?;
    blas.reference(&stream, &p)?;
    stream
        .synchronize()
        .map_err(crate::buffers::drv("cuStreamSynchronize"))?;
    // an output against cuBLAS's, the disputed elements recomputed exactly (the referee:
    // cuBLAS's own rounding cannot fail a correct kernel)
    let expect = download(&stream, &what, &p.c_ref)?;
    let judge = |got: &[f16]| -> Result<Check> {
        let mut check = harness::compare(got, &expect);
        harness::referee_on_device(&stream, &p, &mut check, (got, &expect))?;
        Ok(check)
    };
    let check = judge(&download(&stream, &what, &c)?)?;
    let kernel = kernel_name((m, n, k), scheme);
    writeln!(
        out,
        "quant_matmul {t} {scheme:?} {m}x{n}x{k}: the {kernel} kernel"
    )?;
    // the few-rows kernel with other tiles, each checked as the picked one
    let mut others = Vec::new();
    if let (Plan::FewRows { block_m }, false) =
        (plan((m, n, k), scheme), variants.few_rows.is_empty())
    {
        let group = scheme.group.map_or(0, |g| g as i32);
        let dims = (m as i32, n as i32, k as i32);
        for &(bn, steps, warps) in &variants.few_rows {
            let config = QuantMatmul::<T>::new(group)
                .with_block_m(block_m)
                .with_tiles(bn, steps, warps);
            let jit = tilus::Jit::new(config, device);
            let mut cv = poisoned::<f16>(&stream, &what, mn)?;
            let zeros = weights.2.as_ref().unwrap_or(&weights.1);
            let args = |cv| {
                (
                    dims.0, dims.1, dims.2, &p.a, &weights.0, &weights.1, zeros, cv,
                )
            };
            jit.launch(&stream, args(&mut cv))
                .map_err(tilus_kernels::Error::from)?;
            let got = download(&stream, &what, &cv)?;
            let vcheck = judge(&got)?;
            let name = format!("quant_matmul {t} few rows n{bn} s{steps} w{warps}");
            others.push((name, vcheck, jit, cv));
        }
    }
    // the fragment kernel on the weights prepacked, where it takes them
    let group = scheme.group.map_or(0, |g| g as i32);
    let mut fragments = None;
    let mut staged = Vec::new();
    if prepackable(t) && k % 8 == 0 && (group == 0 || group >= 64) {
        let pre = prepack(&q)?;
        let words = stream.clone_htod(&pre.words).map_err(drv("cuMemcpyHtoD"))?;
        // the scales and zero points as prepacked (transposed, padded to whole tiles)
        let sc = upload(&stream, &pre.scales)?;
        let z = if pre.zeros.is_empty() {
            None
        } else {
            Some(upload(&stream, &pre.zeros)?)
        };
        let mut cf = poisoned::<f16>(&stream, &what, mn)?;
        op.run_fragments(&stream, (m, n, k), &p.a, (&words, &sc, z.as_ref()), &mut cf)?;
        let got = download(&stream, &what, &cf)?;
        let fcheck = judge(&got)?;
        // the other stage counts, each checked as the default
        let bm = m.next_power_of_two().clamp(8, 256) as i32;
        let host_stages = tilus_kernels::quant::fragment_stages(t.bits(), bm);
        let host_splits = tilus_kernels::quant::fragment_splits(
            n.div_ceil(64) * m.div_ceil(bm as usize),
            k.div_ceil(64),
        );
        // the stage counts asked for, or the host's without any
        let stages = if variants.fragment_stages.is_empty() {
            vec![host_stages]
        } else {
            variants.fragment_stages.clone()
        };
        let at_stages = |label: String, (bm, splits, steps, form): (i32, i32, i32, Form)| {
            stages
                .iter()
                .map(move |&s| (format!("{label} s{s}"), (bm, s, splits, 1, steps, form)))
        };
        let configs = variants
            .fragment_stages
            .iter()
            .map(|&s| (format!("s{s}"), (bm, s, 1, 1, 1, Form::Pairs)))
            // each split count at each stage count
            .chain(
                variants
                    .fragment_splits
                    .iter()
                    .flat_map(|&x| at_stages(format!("k{x}"), (bm, x, 1, Form::Pairs))),
            )
            // each count of steps per stage at each stage count, the host's splits
            .chain(
                variants
                    .fragment_stage_steps
                    .iter()
                    .flat_map(|&x| at_stages(format!("t{x}"), (bm, host_splits, x, Form::Pairs))),
            )
            // products by mma.sync (the form takes 8 or 16 rows of A per block)
            .chain(
                (variants.fragment_mma_sync && bm <= 16)
                    .then(|| at_stages("mma".into(), (bm, host_splits, 1, Form::MmaSync)))
                    .into_iter()
                    .flatten(),
            )
            .chain(
                variants
                    .fragment_wide
                    .iter()
                    .map(|&(b, s)| (format!("b{b} s{s} w2"), (b, s, 1, 2, 1, Form::Pairs))),
            )
            // sums scaled by group, at one step a stage and each count asked for
            .chain(
                variants
                    .fragment_scale_sums
                    .then(|| {
                        std::iter::once(1)
                            .chain(variants.fragment_stage_steps.iter().copied())
                            .flat_map(|x| {
                                at_stages(format!("sums t{x}"), (bm, host_splits, x, Form::Sums))
                            })
                    })
                    .into_iter()
                    .flatten(),
            );
        for (label, (bm, stages, splits, warp_groups, stage_steps, form)) in configs {
            let config = QuantMatmulFragments::<T>::new(group, bm)
                .with_stages(stages)
                .with_splits(splits)
                .with_warp_groups(warp_groups)
                .with_stage_steps(stage_steps)
                .with_mma_sync(form == Form::MmaSync)
                .with_scale_sums(form == Form::Sums);
            if form == Form::Sums {
                if let Err(e) = tilus::trace(&config, &[k as i64]) {
                    println!("quant_matmul {t} fragments {label}: not taken ({e})");
                    continue;
                }
            }
            let jit = tilus::Jit::new(config, device);
            let mut cv = poisoned::<f16>(&stream, &what, mn)?;
            let zeros = z.as_ref().unwrap_or(&sc);
            let dims = (m as i32, n as i32, k as i32);
            jit.launch(
                &stream,
                (dims.0, dims.1, dims.2, &p.a, &words, &sc, zeros, &mut cv),
            )
            .map_err(tilus_kernels::Error::from)?;
            let vcheck = judge(&download(&stream, &what, &cv)?)?;
            staged.push((
                format!("quant_matmul {t} fragments {label}"),
                vcheck,
                jit,
                cv,
            ));
        }
        fragments = Some((words, (sc, z), cf, fcheck));
    }
    let mut t_cublas = || Ok(blas.matmul(&stream, &p, true)?);
    let mut t_quant = || run(&mut c);
    let mut timed: Vec<Box<dyn FnMut() -> Result<()> + '_>> =
        vec![Box::new(&mut t_cublas), Box::new(&mut t_quant)];
    let dims = (m as i32, n as i32, k as i32);
    let zeros = weights.2.as_ref().unwrap_or(&weights.1);
    for (_, _, jit, cv) in others.iter_mut() {
        let (a, w, sc) = (&p.a, &weights.0, &weights.1);
        let stream = &stream;
        timed.push(Box::new(move || {
            jit.launch(stream, (dims.0, dims.1, dims.2, a, w, sc, zeros, &mut *cv))
                .map_err(tilus_kernels::Error::from)?;
            Ok(())
        }));
    }
    if let Some((words, (sc, z), cf, _)) = fragments.as_mut() {
        let (op, a, stream) = (&op, &p.a, &stream);
        let (words, sc, z) = (&*words, &*sc, z.as_ref());
        let zeros = z.unwrap_or(sc);
        timed.push(Box::new(move || {
            op.run_fragments(stream, (m, n, k), a, (words, sc, z), &mut *cf)?;
            Ok(())
        }));
        for (_, _, jit, cv) in staged.iter_mut() {
            timed.push(Box::new(move || {
                jit.launch(
                    stream,
                    (dims.0, dims.1, dims.2, a, words, sc, zeros, &mut *cv),
                )
                .map_err(tilus_kernels::Error::from)?;
                Ok(())
            }));
        }
    }
    let mut refs: Vec<&mut dyn FnMut() -> Result<()>> = timed
        .iter_mut()
        .map(|f| f.as_mut() as &mut dyn FnMut() -> Result<()>)
        .collect();
    let ms =
        harness::time_interleaved(&stream, &mut refs, (opts.warmup, opts.rounds), opts.timing)?;
    drop(refs);
    drop(timed);
    let bytes = (q.packed.len() + 2 * (q.scales.len() + q.zeros.len())) as f64;
    let mut names = vec![
        "cublas f16, dequantized weights".to_string(),
        format!("quant_matmul {t}"),
    ];
    let mut passed = vec![None, Some(check.passed())];
    for (name, vcheck, _, _) in &others {
        names.push(name.clone());
        passed.push(Some(vcheck.passed()));
    }
    if let Some((_, _, _, fcheck)) = &fragments {
        names.push(format!("quant_matmul {t} fragments (prepacked)"));
        passed.push(Some(fcheck.passed()));
    }
    for (name, vcheck, _, _) in &staged {
        names.push(name.clone());
        passed.push(Some(vcheck.passed()));
    }
    let rows = harness::timed_rows((m, n, k), &names, &ms, &passed);
    Ok(QuantReport {
        rows,
        check,
        weight_gbps: bytes / (ms[1] * 1e-3) / 1e9,
        kernel,
    })
}
