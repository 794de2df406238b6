//! Flash attention forward on the GPU against the exact f64 attention
//! (`attention_reference`): every head dimension, causal and not, f16 and bf16, GQA, packed
//! sequences of ragged lengths, more key blocks than the ring has stages.

use half::{bf16, f16};
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::attention::{
    AttentionElement, FlashForwardOp, FlashForwardWs, Heads, Sequences, Variant,
};

use crate::attention_reference::{assert_matches, inputs, rows};
use crate::quant_reference::seed;

/// Runs the host API (the kernel `variant`) on random inputs and checks its output.
fn run_and_check<T: AttentionElement>(
    variant: Variant,
    device: &Device,
    seqs: &Sequences,
    heads: Heads,
    causal: bool,
    rng: &mut Rng,
) {
    let stream = device.stream();
    let (rows_q, rows_kv) = rows(seqs);
    let (hq, hkv, d) = (heads.q_heads, heads.kv_heads, heads.head_dim);
    let q = inputs::<T>(rng, rows_q * hq * d);
    let k = inputs::<T>(rng, rows_kv * hkv * d);
    let v = inputs::<T>(rng, rows_kv * hkv * d);
    let scale = 1.5 / (d as f32).sqrt();
    let put = |x: &[T]| stream.clone_htod(x).unwrap();
    let (dq, dk, dv) = (put(&q), put(&k), put(&v));
    let mut o = put(&vec![T::from_f64(f64::NAN); rows_q * hq * d]);
    let mut lse = stream.clone_htod(&vec![f32::NAN; rows_q * hq]).unwrap();
    let op = FlashForwardOp::<T>::new(device);
    op.run(
        stream,
        seqs,
        heads,
        scale,
        causal,
        (&dq, &dk, &dv),
        (&mut o, &mut lse),
    )
    .unwrap();
    let (o, lse) = (
        stream.clone_dtoh(&o).unwrap(),
        stream.clone_dtoh(&lse).unwrap(),
    );
    let what = format!(
        "{} {} {seqs:?} {heads:?} causal {causal}",
        variant.name(),
        T::NAME
    );
    assert_matches(
        &what,
        (seqs, heads, scale, causal),
        (&q, &k, &v),
        (&o, &lse),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_flash_forward_matches_the_reference_at_every_head_dimension() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Fixed {
        batch: 2,
        seq_q: 300,
        seq_kv: 300,
    };
    for d in [64, 128, 256] {
        for causal in [false, true] {
            let heads = Heads::new(4, 2, d);
            run_and_check::<f16>(Variant::DEFAULT, &device, &seqs, heads, causal, &mut rng);
            run_and_check::<bf16>(Variant::DEFAULT, &device, &seqs, heads, causal, &mut rng);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_flash_forward_matches_the_reference_on_packed_sequences() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 1, 71, 201, 201, 331, 1100],
        cu_kv: vec![0, 90, 160, 220, 227, 557, 1300],
    };
    for causal in [false, true] {
        run_and_check::<f16>(
            Variant::DEFAULT,
            &device,
            &seqs,
            Heads::new(8, 2, 128),
            causal,
            &mut rng,
        );
        run_and_check::<bf16>(
            Variant::DEFAULT,
            &device,
            &seqs,
            Heads::new(3, 1, 64),
            causal,
            &mut rng,
        );
    }
}

/// Every kernel of the ablation (the plain one, each schedule of the specialized one) on a
/// packed batch, causal and not: on the GPU, where the warp groups really run at once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_flash_forward_every_variant_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 5, 700, 1333],
        cu_kv: vec![0, 900, 1100, 2000],
    };
    for variant in Variant::ALL {
        for causal in [false, true] {
            let heads = Heads::new(4, 1, 128);
            run_and_check::<f16>(variant, &device, &seqs, heads, causal, &mut rng);
        }
    }
}

/// The specialized kernel on a persistent grid (each block several items, rings and Q's
/// barrier going on between them), causal and not, against the exact attention.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_flash_forward_on_a_persistent_grid_matches_the_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 5, 700, 1333, 3000],
        cu_kv: vec![0, 900, 1100, 2000, 3667],
    };
    let heads = Heads::new(8, 2, 128);
    let (rows_q, rows_kv) = rows(&seqs);
    let q = inputs::<f16>(&mut rng, rows_q * 8 * 128);
    let k = inputs::<f16>(&mut rng, rows_kv * 2 * 128);
    let v = inputs::<f16>(&mut rng, rows_kv * 2 * 128);
    let put = |x: &[f16]| stream.clone_htod(x).unwrap();
    let (dq, dk, dv) = (put(&q), put(&k), put(&v));
    let op = FlashForwardOp::<f16>::new(&device);
    for causal in [false, true] {
        let config = FlashForwardWs::<f16>::new(128, causal).with_persistent(true);
        let mut o = put(&vec![f16::NAN; rows_q * 8 * 128]);
        let mut lse = stream.clone_htod(&vec![f32::NAN; rows_q * 8]).unwrap();
        let scale = 1.5 / 128f32.sqrt();
        op.run_specialized(
            &config,
            stream,
            (&seqs, heads, scale),
            (&dq, &dk, &dv),
            (&mut o, &mut lse),
        )
        .unwrap();
        let (o, lse) = (
            stream.clone_dtoh(&o).unwrap(),
            stream.clone_dtoh(&lse).unwrap(),
        );
        let what = format!("persistent causal {causal}");
        assert_matches(
            &what,
            (&seqs, heads, scale, causal),
            (&q, &k, &v),
            (&o, &lse),
        );
    }
}
