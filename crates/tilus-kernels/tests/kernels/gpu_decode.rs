//! Decode attention on the GPU against the exact f64 step (`decode_reference`): contiguous
//! and paged caches whose unused rows hold NaN, ragged contexts down to one position, one to
//! eight new tokens, every head dimension, f16 and bf16, the host API's own split and a
//! batch of one (split until the machine is full); caches of e4m3 codes with a scale per
//! key-value head, and the append that quantizes into them.

use half::{bf16, f16};
use tilus::lowp::F8E4M3;
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::attention::decode::{Cache, CacheOf, DecodeOp};
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

/// [`check`] over a cache of `C`.
fn check_over<T: AttentionElement, C: CacheOf<T>>(
    (device, rng, op): (&Device, &mut Rng, &DecodeOp<T>),
    (queries, heads): (usize, Heads),
    lens: &[i32],
    page_size: Option<usize>,
) {
    let stream = device.stream();
    let step = Step::<T, C>::random(rng, (queries, heads), lens, page_size);
    let rows = lens.len() * queries * heads.q_heads;
    let scale = 1.25 / (heads.head_dim as f32).sqrt();
    let put = |x: &[T]| stream.clone_htod(x).unwrap();
    let dq = put(&step.q);
    let (dk, dv) = (
        stream.clone_htod(&step.k).unwrap(),
        stream.clone_htod(&step.v).unwrap(),
    );
    let dscales = step.scales.as_ref().map(|s| stream.clone_htod(s).unwrap());
    let dtable = step.table.as_ref().map(|t| stream.clone_htod(t).unwrap());
    let dlens = stream.clone_htod(&step.lens).unwrap();
    for round in 0..2 {
        let mut o = put(&vec![T::from_f64(f64::NAN); rows * heads.head_dim]);
        let mut lse = stream.clone_htod(&vec![f32::NAN; rows]).unwrap();
        let cache = Cache {
            k: &dk,
            v: &dv,
            table: dtable.as_ref(),
            lens: &dlens,
            scales: dscales.as_ref(),
        };
        op.run(stream, &step.call, scale, &dq, cache, (&mut o, &mut lse))
            .unwrap();
        let (o, lse) = (
            stream.clone_dtoh(&o).unwrap(),
            stream.clone_dtoh(&lse).unwrap(),
        );
        let what = format!(
            "{} over {} {:?} lens {lens:?} round {round}",
            T::NAME,
            C::NAME,
            step.call
        );
        step.assert_matches(&what, scale, (&o, &lse));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_matches_the_reference_on_every_layout_and_head_dimension() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = (
        DecodeOp::<f16>::new(&device).unwrap(),
        DecodeOp::<bf16>::new(&device).unwrap(),
    );
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

/// The append on the device: the new tokens' rows written bit for bit into a contiguous and
/// a paged cache, nothing else changed, then the step over them checked.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_decode_append_writes_the_new_tokens_where_the_step_reads_them() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let mut rng = Rng::new(seed());
    let op = DecodeOp::<f16>::new(&device).unwrap();
    for page_size in [None, Some(16)] {
        let heads = Heads::new(32, 8, 128);
        let mut step = Step::<f16>::random(&mut rng, (4, heads), &[4, 1000, 517], page_size);
        let (want_k, want_v) = (step.k.clone(), step.v.clone());
        // the new tokens' rows, taken out of the cache (NaN in their place)
        let (k_new, v_new) = step.take_new_tokens();
        let put = |x: &[f16]| stream.clone_htod(x).unwrap();
        let (dkn, dvn) = (put(&k_new), put(&v_new));
        let (mut dk, mut dv) = (put(&step.k), put(&step.v));
        let dtable = step.table.as_ref().map(|t| stream.clone_htod(t).unwrap());
        let dlens = stream.clone_htod(&step.lens).unwrap();
        op.append(
            stream,
            &step.call,
            (&dkn, &dvn),
            (&mut dk, &mut dv),
            (dtable.as_ref(), &dlens, None),
        )
        .unwrap();
        let bits = |x: &[f16]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        // the host's copy takes the device's, which the step's reference then reads
        (step.k, step.v) = (
            stream.clone_dtoh(&dk).unwrap(),
            stream.clone_dtoh(&dv).unwrap(),
        );
        assert_eq!(bits(&step.k), bits(&want_k));
        assert_eq!(bits(&step.v), bits(&want_v));
        let dq = put(&step.q);
        let rows_q = 3 * 4 * heads.q_heads;
        let mut o = put(&vec![f16::NAN; rows_q * heads.head_dim]);
        let mut lse = stream.clone_htod(&vec![f32::NAN; rows_q]).unwrap();
        let cache = Cache {
            k: &dk,
            v: &dv,
            table: dtable.as_ref(),
            lens: &dlens,
            scales: None,
        };
        op.run(stream, &step.call, 0.1, &dq, cache, (&mut o, &mut lse))
            .unwrap();
        let (o, lse) = (
            stream.clone_dtoh(&o).unwrap(),
            stream.clone_dtoh(&lse).unwrap(),
        );
        step.assert_matches("after the append", 0.1, (&o, &lse));
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
    let stream = device.stream();
    let mut rng = Rng::new(seed());
    let (op16, op_bf16) = (
        DecodeOp::<f16>::new(&device).unwrap(),
        DecodeOp::<bf16>::new(&device).unwrap(),
    );
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
        let mut step =
            Step::<f16, F8E4M3>::random(&mut rng, (2, heads), &[2, 1000, 517], page_size);
        let (want_k, want_v) = (step.k.clone(), step.v.clone());
        let (k_new, v_new) = step.take_new_tokens();
        let put = |x: &[f16]| stream.clone_htod(x).unwrap();
        let (dkn, dvn) = (put(&k_new), put(&v_new));
        let (mut dk, mut dv) = (
            stream.clone_htod(&step.k).unwrap(),
            stream.clone_htod(&step.v).unwrap(),
        );
        let scales = step.scales.clone().expect("a cache of codes has scales");
        let dscales = stream.clone_htod(&scales).unwrap();
        let dtable = step.table.as_ref().map(|t| stream.clone_htod(t).unwrap());
        let dlens = stream.clone_htod(&step.lens).unwrap();
        op16.append(
            stream,
            &step.call,
            (&dkn, &dvn),
            (&mut dk, &mut dv),
            (dtable.as_ref(), &dlens, Some(&dscales)),
        )
        .unwrap();
        (step.k, step.v) = (
            stream.clone_dtoh(&dk).unwrap(),
            stream.clone_dtoh(&dv).unwrap(),
        );
        let codes = |x: &[F8E4M3]| x.iter().map(|c| c.0).collect::<Vec<_>>();
        assert_eq!(codes(&step.k), codes(&want_k), "{page_size:?}: the keys");
        assert_eq!(codes(&step.v), codes(&want_v), "{page_size:?}: the values");
        let dq = put(&step.q);
        let rows_q = 3 * 2 * heads.q_heads;
        let mut o = put(&vec![f16::NAN; rows_q * heads.head_dim]);
        let mut lse = stream.clone_htod(&vec![f32::NAN; rows_q]).unwrap();
        let cache = Cache {
            k: &dk,
            v: &dv,
            table: dtable.as_ref(),
            lens: &dlens,
            scales: Some(&dscales),
        };
        op16.run(stream, &step.call, 0.1, &dq, cache, (&mut o, &mut lse))
            .unwrap();
        let (o, lse) = (
            stream.clone_dtoh(&o).unwrap(),
            stream.clone_dtoh(&lse).unwrap(),
        );
        step.assert_matches("after the append", 0.1, (&o, &lse));
    }
}
