//! Decode attention on the GPU against the exact f64 step (`decode_reference`): contiguous
//! and paged caches whose unused rows hold NaN, ragged contexts down to one position, one to
//! eight new tokens, every head dimension, f16 and bf16, the host API's own split and a
//! batch of one (split until the machine is full); caches of e4m3 codes with a scale per
//! key-value head, and the append that quantizes into them.

use half::{bf16, f16};
use tilus::cudarc::driver::CudaSlice;
use tilus::lowp::F8E4M3;
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::attention::decode::{Cache, CacheOf, DecodeOp, Tiling};
use tilus_kernels::attention::{AttentionElement, Heads};

use crate::decode_reference::Step;
use crate::quant_reference::seed;

/// One random step on the device by the host API `op`, checked; twice, so that the second
/// call reuses the kept kernels and workspace (the tests share one op across shapes, so that
/// its workspace grows from call to call).
fn check<T: AttentionElement>(
    (device, rng, op): (&Device, &mut Rng, &DecodeOp<T>),
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
) {
    check_over::<T, T>((device, rng, op), (queries, heads), lens, page_size);
}

/// [`check`] over a cache of `C` with the host API's choices given (`DecodeOp::run_with`).
fn check_tiled<T: AttentionElement, C: CacheOf<T>>(
    (device, rng, op): (&Device, &mut Rng, &DecodeOp<T>),
    (queries, heads, tiling): (usize, Heads, Tiling),
    lens: &[i32],
    page_size: Option<usize>,
) {
    let step = Step::<T, C>::random(rng, (queries, heads), lens, page_size);
    let scale = 1.25 / (heads.head_dim as f32).sqrt();
    let on_device = OnDevice::upload(device, &step);
    for round in 0..2 {
        let (o, lse) = on_device.run(device, (op, tiling), &step, scale);
        let what = format!(
            "{} over {} {:?} {tiling:?} lens {lens:?} round {round}",
            T::NAME,
            C::NAME,
            step.call
        );
        step.assert_matches(&what, scale, (&o, &lse));
    }
}

/// [`check`] over a cache of `C`.
fn check_over<T: AttentionElement, C: CacheOf<T>>(
    (device, rng, op): (&Device, &mut Rng, &DecodeOp<T>),
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
) {
    let at = (queries, heads, Tiling::default());
    check_tiled::<T, C>((device, rng, op), at, lens, page_size);
}

/// A step's buffers on the device.
struct OnDevice<T, C> {
    q: CudaSlice<T>,
    k: CudaSlice<C>,
    v: CudaSlice<C>,
    scales: Option<CudaSlice<f32>>,
    table: Option<CudaSlice<i32>>,
    lens: CudaSlice<i32>,
}

impl<T: AttentionElement, C: CacheOf<T>> OnDevice<T, C> {
    fn upload(device: &Device, step: &Step<T, C>) -> Self {
        let stream = device.stream();
        OnDevice {
            q: stream.clone_htod(&step.q).unwrap(),
            k: stream.clone_htod(&step.k).unwrap(),
            v: stream.clone_htod(&step.v).unwrap(),
            scales: step.scales.as_ref().map(|s| stream.clone_htod(s).unwrap()),
            table: step.table.as_ref().map(|t| stream.clone_htod(t).unwrap()),
            lens: stream.clone_htod(&step.lens).unwrap(),
        }
    }

    /// `o` and `lse` of the step by `op` with `tiling`'s choices into outputs full of NaN.
    fn run(
        &self,
        device: &Device,
        (op, tiling): (&DecodeOp<T>, Tiling),
        step: &Step<T, C>,
        scale: f32,
    ) -> (Vec<T>, Vec<f32>) {
        let stream = device.stream();
        let rows = step.q.len() / step.call.heads.head_dim;
        let mut o = stream
            .clone_htod(&vec![T::from_f64(f64::NAN); step.q.len()])
            .unwrap();
        let mut lse = stream.clone_htod(&vec![f32::NAN; rows]).unwrap();
        let cache = Cache {
            k: &self.k,
            v: &self.v,
            table: self.table.as_ref(),
            lens: &self.lens,
            scales: self.scales.as_ref(),
        };
        op.run_with(
            stream,
            (&step.call, tiling),
            scale,
            &self.q,
            cache,
            (&mut o, &mut lse),
        )
        .unwrap();
        (
            stream.clone_dtoh(&o).unwrap(),
            stream.clone_dtoh(&lse).unwrap(),
        )
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_matches_the_reference_on_every_layout_and_head_dimension() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = ops(&device);
    for d in [64, 128, 256] {
        let heads = Heads::new(8, 2, d);
        check(
            (&device, &mut rng, &op16),
            (1, heads),
            &[1, 700, 1500],
            None,
        );
        check(
            (&device, &mut rng, &op_bf16),
            (2, heads),
            &[2, 333, 1025],
            Some(16),
        );
        check(
            (&device, &mut rng, &op16),
            (4, heads),
            &[900, 64, 4],
            Some(256),
        );
    }
    // eight tokens of a group of 24 (two tokens a block), pages of 32
    let heads = Heads::new(24, 1, 128);
    check(
        (&device, &mut rng, &op16),
        (8, heads),
        &[40, 2000],
        Some(32),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_splits_a_long_context_of_a_batch_of_one() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    // 8 key-value heads: the context is split among blocks to fill the machine
    let heads = Heads::new(32, 8, 128);
    let op = DecodeOp::<f16>::new(&device).unwrap();
    // a short context first: the long ones' slots grow the workspace
    check((&device, &mut rng, &op), (1, heads), &[300], None);
    check((&device, &mut rng, &op), (1, heads), &[8192], None);
    check((&device, &mut rng, &op), (1, heads), &[20000], Some(64));
}

/// The merge in the kernel (the block that takes its group's last ticket weighs every
/// split), where blocks finish in whatever order the device runs them: a batch of one split
/// 16 and 32 ways, ragged contexts whose short ones leave splits empty, pages, several tokens
/// (two blocks of rows per key-value head), both head dimensions it takes; each twice on one
/// workspace, so that a counter not left at zero fails the second round (the host API checks
/// them too).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_merged_in_the_kernel_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let op = DecodeOp::<f16>::new(&device).unwrap();
    let op_bf16 = DecodeOp::<bf16>::new(&device).unwrap();
    let merged = |splits| Tiling {
        splits: Some(splits),
        merge: Some(true),
        ..Tiling::default()
    };
    let heads = Heads::new(32, 8, 128);
    check_tiled::<f16, f16>(
        (&device, &mut rng, &op),
        (1, heads, merged(16)),
        &[8192],
        None,
    );
    check_tiled::<f16, f16>(
        (&device, &mut rng, &op),
        (1, heads, merged(32)),
        &[5000],
        Some(64),
    );
    let heads = Heads::new(8, 2, 64);
    check_tiled::<bf16, bf16>(
        (&device, &mut rng, &op_bf16),
        (1, heads, merged(7)),
        &[1, 700, 1500],
        None,
    );
    check_tiled::<f16, f16>(
        (&device, &mut rng, &op),
        (3, heads, merged(4)),
        &[3, 333, 1025],
        Some(16),
    );
    // four tokens a block of rows: eight tokens take two blocks, each its own counter
    let heads = Heads::new(12, 1, 128);
    check_tiled::<f16, f16>(
        (&device, &mut rng, &op),
        (8, heads, merged(5)),
        &[40, 2000],
        Some(32),
    );
}

/// The append on the device: the new tokens' rows written bit for bit into a contiguous and
/// a paged cache, nothing else changed, then the step over them checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_append_writes_the_new_tokens_where_the_step_reads_them() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let op = DecodeOp::<f16>::new(&device).unwrap();
    for page_size in [None, Some(16)] {
        let heads = Heads::new(32, 8, 128);
        let step = Step::<f16>::random(&mut rng, (4, heads), &[4, 1000, 517], page_size);
        let bits = |x: &[f16]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        append_then_step((&device, &op), step, bits);
    }
}

/// A cache of e4m3 codes with a scale per key-value head: every head dimension, contiguous
/// and paged (pages shorter than a step, a step, longer), several tokens, the host API's
/// split and a batch of one; then new tokens appended into it (each code back bit for bit)
/// and the step over them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_over_e4m3_codes_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = ops(&device);
    for d in [64, 128, 256] {
        let heads = Heads::new(8, 2, d);
        let at = (&device, &mut rng, &op16);
        check_over::<f16, F8E4M3>(at, (1, heads), &[1, 700, 1500], None);
        let at = (&device, &mut rng, &op_bf16);
        check_over::<bf16, F8E4M3>(at, (2, heads), &[2, 333, 1025], Some(16));
        let at = (&device, &mut rng, &op16);
        check_over::<f16, F8E4M3>(at, (4, heads), &[900, 64, 4], Some(256));
    }
    let heads = Heads::new(32, 8, 128);
    let at = (&device, &mut rng, &op16);
    check_over::<f16, F8E4M3>(at, (1, heads), &[8000], Some(64));

    for page_size in [None, Some(16)] {
        let step = Step::<f16, F8E4M3>::random(&mut rng, (2, heads), &[2, 1000, 517], page_size);
        let codes = |x: &[F8E4M3]| x.iter().map(|c| u16::from(c.0)).collect::<Vec<_>>();
        append_then_step((&device, &op16), step, codes);
    }
}

/// The new tokens of `step` taken out of its cache (NaN in their place), appended back by
/// `op` on the device (with the cache's scales, if any): every element of the cache as it was
/// (`bits` of each, NaN included), nothing else changed; then the step over the device's
/// cache checked.
fn append_then_step<T: AttentionElement, C: CacheOf<T>>(
    (device, op): (&Device, &DecodeOp<T>),
    mut step: Step<T, C>,
    bits: impl Fn(&[C]) -> Vec<u16>,
) {
    let stream = device.stream();
    let (want_k, want_v) = (step.k.clone(), step.v.clone());
    let (k_new, v_new) = step.take_new_tokens();
    let (dkn, dvn) = (
        stream.clone_htod(&k_new).unwrap(),
        stream.clone_htod(&v_new).unwrap(),
    );
    let mut on_device = OnDevice::upload(device, &step);
    op.append(
        stream,
        &step.call,
        (&dkn, &dvn),
        (&mut on_device.k, &mut on_device.v),
        (
            on_device.table.as_ref(),
            &on_device.lens,
            on_device.scales.as_ref(),
        ),
    )
    .unwrap();
    // the host's copy takes the device's, which the step's reference then reads
    (step.k, step.v) = (
        stream.clone_dtoh(&on_device.k).unwrap(),
        stream.clone_dtoh(&on_device.v).unwrap(),
    );
    let what = format!("{} into {} {:?}", T::NAME, C::NAME, step.call.layout);
    assert_eq!(bits(&step.k), bits(&want_k), "{what}: the keys");
    assert_eq!(bits(&step.v), bits(&want_v), "{what}: the values");
    let (o, lse) = on_device.run(device, (op, Tiling::default()), &step, 0.1);
    step.assert_matches(&format!("{what}: after the append"), 0.1, (&o, &lse));
}

/// The host API in f16 and in bf16 on `device`.
fn ops(device: &Device) -> (DecodeOp<f16>, DecodeOp<bf16>) {
    (
        DecodeOp::<f16>::new(device).unwrap(),
        DecodeOp::<bf16>::new(device).unwrap(),
    )
}

/// Q straight from global memory into registers over a cache of the queries' type, with
/// three stages where its shared tile was: slots of 8 and 16 rows, several tokens, pages,
/// split and merged in the kernel, both types.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_with_q_from_global_memory_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = ops(&device);
    let tiling = |splits, merge| Tiling {
        splits: Some(splits),
        merge: Some(merge),
        stages: Some(3),
        q_in_registers: Some(true),
        ..Tiling::default()
    };
    for d in [64, 128] {
        check_tiled::<f16, f16>(
            (&device, &mut rng, &op16),
            (1, Heads::new(32, 8, d), tiling(4, true)),
            &[4096, 77, 1],
            None,
        );
        check_tiled::<bf16, bf16>(
            (&device, &mut rng, &op_bf16),
            (3, Heads::new(12, 1, d), tiling(2, false)),
            &[3, 700, 1500],
            Some(64),
        );
    }
}

/// A warp group of converters beside the products over a cache of e4m3 codes: ragged
/// contexts (a split with no step), several tokens, pages, splits, both head dimensions it
/// takes, f16 and bf16 queries.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_with_converters_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = ops(&device);
    let tiling = |splits| Tiling {
        splits: Some(splits),
        converters: Some(true),
        ..Tiling::default()
    };
    for d in [64, 128] {
        check_tiled::<f16, F8E4M3>(
            (&device, &mut rng, &op16),
            (1, Heads::new(32, 8, d), tiling(4)),
            &[4096, 77, 1],
            None,
        );
        check_tiled::<bf16, F8E4M3>(
            (&device, &mut rng, &op_bf16),
            (3, Heads::new(8, 2, d), tiling(1)),
            &[3, 700, 1500],
            Some(16),
        );
    }
}
