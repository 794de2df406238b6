//! Flash attention forward on the GPU against the exact f64 attention
//! (`attention_reference`): every head dimension, causal and not, f16 and bf16, GQA, packed
//! sequences of ragged lengths, more key blocks than the ring has stages, every kernel of the
//! ablation and the persistent grid.

use half::{bf16, f16};
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::attention::{
    AttentionElement, FlashForwardOp, FlashForwardWs, Heads, Sequences, Variant,
};

use crate::attention_reference::{assert_matches, batch, rows};
use crate::quant_reference::seed;

/// Q, K and V on the device.
type Ins<'a, T> = (&'a CudaSlice<T>, &'a CudaSlice<T>, &'a CudaSlice<T>);
/// O and the log-sum-exp on the device.
type Outs<'a, T> = (&'a mut CudaSlice<T>, &'a mut CudaSlice<f32>);
/// A launch of the host API: the op, its stream and scale, inputs and outputs.
type Launch<'a, T> = &'a dyn Fn(
    &FlashForwardOp<T>,
    &Arc<CudaStream>,
    f32,
    Ins<T>,
    Outs<T>,
) -> tilus_kernels::Result<()>;

/// Runs `launch` on random inputs of the batch and checks its output (`what` names it).
fn run_and_check<T: AttentionElement>(
    (device, rng): (&Device, &mut Rng),
    (seqs, heads, causal): (&Sequences, Heads, bool),
    what: &str,
    launch: Launch<'_, T>,
) {
    let stream = device.stream();
    let (rows_q, _) = rows(seqs);
    let (q, k, v) = batch::<T>(rng, seqs, heads);
    let scale = 1.5 / (heads.head_dim as f32).sqrt();
    let put = |x: &[T]| stream.clone_htod(x).unwrap();
    let (dq, dk, dv) = (put(&q), put(&k), put(&v));
    let mut o = put(&vec![
        T::from_f64(f64::NAN);
        rows_q * heads.q_heads * heads.head_dim
    ]);
    let mut lse = stream
        .clone_htod(&vec![f32::NAN; rows_q * heads.q_heads])
        .unwrap();
    let op = FlashForwardOp::<T>::new(device);
    launch(&op, stream, scale, (&dq, &dk, &dv), (&mut o, &mut lse)).unwrap();
    let (o, lse) = (
        stream.clone_dtoh(&o).unwrap(),
        stream.clone_dtoh(&lse).unwrap(),
    );
    let what = format!("{what} {} {seqs:?} {heads:?} causal {causal}", T::NAME);
    assert_matches(
        &what,
        (seqs, heads, scale, causal),
        (&q, &k, &v),
        (&o, &lse),
    );
}

/// [`run_and_check`] of the kernel `variant`.
fn check_variant<T: AttentionElement>(
    variant: Variant,
    (device, rng): (&Device, &mut Rng),
    (seqs, heads, causal): (&Sequences, Heads, bool),
) {
    let launch =
        |op: &FlashForwardOp<T>, stream: &Arc<CudaStream>, scale, ins: Ins<T>, outs: Outs<T>| {
            op.run_variant(variant, stream, seqs, heads, scale, causal, ins, outs)
        };
    run_and_check(
        (device, rng),
        (seqs, heads, causal),
        variant.name(),
        &launch,
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
            let variant = Variant::for_head_dim(d);
            check_variant::<f16>(variant, (&device, &mut rng), (&seqs, heads, causal));
            check_variant::<bf16>(variant, (&device, &mut rng), (&seqs, heads, causal));
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
        let (h128, h64) = (Heads::new(8, 2, 128), Heads::new(3, 1, 64));
        let v = Variant::for_head_dim(128);
        check_variant::<f16>(v, (&device, &mut rng), (&seqs, h128, causal));
        let v = Variant::for_head_dim(64);
        check_variant::<bf16>(v, (&device, &mut rng), (&seqs, h64, causal));
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
            check_variant::<f16>(variant, (&device, &mut rng), (&seqs, heads, causal));
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
    let mut rng = Rng::new(seed());
    let seqs = Sequences::Packed {
        cu_q: vec![0, 5, 700, 1333, 3000],
        cu_kv: vec![0, 900, 1100, 2000, 3667],
    };
    let heads = Heads::new(8, 2, 128);
    for causal in [false, true] {
        let config = FlashForwardWs::<f16>::new(128, causal).with_persistent(true);
        let launch = |op: &FlashForwardOp<f16>,
                      stream: &Arc<CudaStream>,
                      scale,
                      ins: Ins<f16>,
                      outs: Outs<f16>| {
            op.run_specialized(&config, stream, (&seqs, heads, scale), ins, outs)
        };
        let what = "persistent";
        run_and_check((&device, &mut rng), (&seqs, heads, causal), what, &launch);
    }
}
