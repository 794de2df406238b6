//! The quantized matmul on the GPU against the exact reference (`quant_reference`): weights of
//! every kind, decoding sizes (M of 1 and 16) and a few rows past a block's, N and K of a
//! layer.

use half::f16;
use tilus::lowp::*;
use tilus::prelude::Element;
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::quant::{QuantMatmulOp, Scheme};

use crate::quant_reference::{assert_matches, inputs, reference, reference_exact, seed};

/// Runs `QuantMatmulOp` (`run`, or `run_fragments` on the weights prepacked when
/// `prepacked`) for type `T` at `(m, n, k)` and checks C against the exact product.
fn run_and_check<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    device: &Device,
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    prepacked: bool,
    rng: &mut Rng,
) {
    let stream = device.stream();
    let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
    let op = QuantMatmulOp::<T>::new(device, scheme).unwrap();
    let put = |v: &[f16]| stream.clone_htod(v).unwrap();
    let (da, ds) = (put(&a), put(&q.scales));
    let dz = (!q.zeros.is_empty()).then(|| put(&q.zeros));
    let mut dc = put(&vec![f16::NAN; m * n]);
    let kernel = if prepacked {
        let p = tilus_kernels::quant::prepack(&q).unwrap();
        let dw = stream.clone_htod(&p.words).unwrap();
        // the scales and zero points as prepacked
        let ds = put(&p.scales);
        let dz = (!p.zeros.is_empty()).then(|| put(&p.zeros));
        op.run_fragments(stream, (m, n, k), &da, (&dw, &ds, dz.as_ref()), &mut dc)
            .unwrap();
        "fragments"
    } else {
        let dw = stream.clone_htod(&q.packed).unwrap();
        op.run(stream, (m, n, k), &da, (&dw, &ds, dz.as_ref()), &mut dc)
            .unwrap();
        tilus_kernels::quant::kernel_name((m, n, k), scheme)
    };
    let c = stream.clone_dtoh(&dc).unwrap();
    let what = format!(
        "{kernel} {} {scheme:?} ({m}, {n}, {k})",
        <T as LowpElement>::DTYPE
    );
    assert_matches(&what, &c, reference(&a, &q, m), n);
}

/// [`run_and_check`] through `run`.
fn check<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    device: &Device,
    shape: (usize, usize, usize),
    scheme: Scheme,
    rng: &mut Rng,
) {
    run_and_check::<T>(device, shape, scheme, false, rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quant_matmul_matches_the_exact_product_for_every_kind_of_weight() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let g128 = Scheme::grouped(128);
    for m in [1, 16, 5] {
        check::<I4>(&device, (m, 1024, 4096), g128, &mut rng);
        check::<U4>(&device, (m, 1000, 2048), g128, &mut rng);
    }
    check::<I8>(&device, (16, 512, 4096), g128, &mut rng);
    check::<F8E4M3>(&device, (1, 512, 4096), g128, &mut rng);
    check::<F8E5M2>(&device, (3, 256, 2048), Scheme::per_channel(), &mut rng);
    check::<F6E3M2>(&device, (1, 256, 4096), g128, &mut rng);
    check::<F4E2M1>(&device, (16, 256, 2048), Scheme::grouped(32), &mut rng);
    check::<Int<3>>(&device, (1, 256, 4096), Scheme::grouped(64), &mut rng);
    check::<I2>(&device, (2, 256, 4096), g128, &mut rng);
}

/// Rows of A from [`tilus_kernels::quant::TENSOR_CORE_MIN_M`] take the tensor-core kernel:
/// its product against the exact one of the weights rounded to f16.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quant_matmul_on_tensor_cores_matches_the_product_of_the_f16_weights() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let g128 = Scheme::grouped(128);
    assert_eq!(
        tilus_kernels::quant::kernel_name((100, 512, 2048), g128),
        "tensor cores"
    );
    check::<I4>(&device, (100, 512, 2048), g128, &mut rng);
    check::<U4>(&device, (64, 256, 1024), g128, &mut rng);
    check::<F8E4M3>(&device, (29, 192, 1024), Scheme::per_channel(), &mut rng);
    check::<F4E2M1>(&device, (300, 128, 512), Scheme::grouped(32), &mut rng);
}

/// Rows of A from [`tilus_kernels::quant::RING_MIN_M`] take the ring kernel (groups of 64 or
/// more): its product against the exact one of the weights rounded to f16, with more tiles
/// than multiprocessors and ragged edges.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quant_matmul_on_the_ring_matches_the_product_of_the_f16_weights() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let g128 = Scheme::grouped(128);
    assert_eq!(
        tilus_kernels::quant::kernel_name((200, 512, 2048), g128),
        "ring"
    );
    check::<I4>(&device, (200, 512, 2048), g128, &mut rng);
    check::<U4>(&device, (1000, 4104, 1024), g128, &mut rng);
    check::<F8E4M3>(&device, (129, 192, 1024), Scheme::per_channel(), &mut rng);
    check::<I8>(&device, (2048, 2048, 4096), Scheme::grouped(64), &mut rng);
    check::<F6E3M2>(&device, (300, 1000, 512), g128, &mut rng);
}

/// [`run_and_check`] through `run_fragments`, on prepacked weights.
fn check_fragments<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
    device: &Device,
    shape: (usize, usize, usize),
    scheme: Scheme,
    rng: &mut Rng,
) {
    run_and_check::<T>(device, shape, scheme, true, rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quant_matmul_on_prepacked_fragments_matches_the_product_of_the_f16_weights() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    let g128 = Scheme::grouped(128);
    // (300: two warp groups per block, 64 rows of A each for 8 pairs of tiles of W)
    for m in [1, 16, 100, 300] {
        check_fragments::<I4>(&device, (m, 1000, 4096), g128, &mut rng);
    }
    // two warp groups with 128 and 256 rows of A per block, ragged M and N
    check_fragments::<I4>(&device, (600, 4100, 1024), g128, &mut rng);
    check_fragments::<I8>(&device, (2000, 8200, 512), g128, &mut rng);
    check_fragments::<U4>(&device, (3, 512, 2048), g128, &mut rng);
    check_fragments::<I8>(&device, (64, 520, 1024), Scheme::per_channel(), &mut rng);
    check_fragments::<F8E4M3>(&device, (1, 256, 4096), Scheme::grouped(64), &mut rng);
    check_fragments::<F4E2M1>(&device, (9, 256, 2048), g128, &mut rng);
    check_fragments::<I2>(&device, (2, 192, 4096), g128, &mut rng);
    // 3-bit codes in two planes, one and two warp groups
    check_fragments::<Int<3>>(&device, (16, 320, 2048), g128, &mut rng);
    check_fragments::<UInt<3>>(&device, (300, 256, 1024), g128, &mut rng);
}

/// The fragment kernel with its sums scaled by group (`scale_sums`), launched as configured,
/// against the product of the exact dequantized weights: groups of one and two rounds, two
/// steps a stage, per channel with splits, zero points, 3-bit planes, 1 to 64 rows of A.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quant_matmul_on_fragments_with_sums_scaled_by_group_matches_the_exact_product() {
    use tilus_kernels::quant::QuantMatmulFragments;
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut rng = Rng::new(seed());
    fn run<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug>(
        device: &Device,
        (m, n, k): (usize, usize, usize),
        scheme: Scheme,
        config: QuantMatmulFragments<T>,
        rng: &mut Rng,
    ) {
        let stream = device.stream();
        let (a, q) = inputs::<T>(rng, (m, n, k), scheme);
        let p = tilus_kernels::quant::prepack(&q).unwrap();
        let put = |v: &[f16]| stream.clone_htod(v).unwrap();
        let (da, ds) = (put(&a), put(&p.scales));
        let dz = (!p.zeros.is_empty()).then(|| put(&p.zeros));
        let dw = stream.clone_htod(&p.words).unwrap();
        let mut dc = put(&vec![f16::NAN; m * n]);
        let what = format!("{config:?} {} ({m}, {n}, {k})", <T as LowpElement>::DTYPE);
        let config = config.with_scale_sums(true);
        let jit = tilus::Jit::new(config, device);
        let dims = (m as i32, n as i32, k as i32);
        let zeros = dz.as_ref().unwrap_or(&ds);
        jit.launch(
            stream,
            (dims.0, dims.1, dims.2, &da, &dw, &ds, zeros, &mut dc),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let c = stream.clone_dtoh(&dc).unwrap();
        assert_matches(&what, &c, reference_exact(&a, &q, m), n);
    }
    let g128 = Scheme::grouped(128);
    fn g<T>(bm: i32) -> QuantMatmulFragments<T> {
        QuantMatmulFragments::new(128, bm).with_stages(8)
    }
    run::<I4>(&device, (1, 1000, 4096), g128, g(8), &mut rng);
    run::<I2>(&device, (16, 520, 4096), g128, g(16), &mut rng);
    run::<Int<3>>(&device, (5, 256, 2048), g128, g(8), &mut rng);
    run::<U4>(
        &device,
        (40, 264, 2048),
        g128,
        g(64).with_stages(4),
        &mut rng,
    );
    let two = QuantMatmulFragments::new(128, 8)
        .with_stages(4)
        .with_stage_steps(2);
    run::<I4>(&device, (3, 512, 4096), g128, two, &mut rng);
    let g64 = QuantMatmulFragments::new(64, 8).with_stages(6);
    run::<F8E4M3>(&device, (2, 256, 3072), Scheme::grouped(64), g64, &mut rng);
    let channel = QuantMatmulFragments::new(0, 16)
        .with_stages(4)
        .with_splits(4);
    run::<I8>(
        &device,
        (9, 640, 4096),
        Scheme::per_channel(),
        channel,
        &mut rng,
    );
}
