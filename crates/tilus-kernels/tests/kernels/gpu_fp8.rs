//! The FP8 GEMM on the GPU against the exact product of the codes' values (`fp8_reference`,
//! within the bound of the FP8 tensor cores' accumulation):
//! every operand and output type, cooperative and ping-pong tiles, odd edges and one row; the
//! host API tuned per shape at a larger one.

use super::fp8_reference::{check, codes, scales, Summed::TensorCores};
use super::quant_reference::seed;
use half::{bf16, f16};
use tilus::lowp::{F8E4M3, F8E5M2};
use tilus::runtime::Device;
use tilus_bench::harness::Rng;
use tilus_kernels::gemm::fp8::{Fp8GemmOp, MatmulFp8};
use tilus_kernels::gemm::persistent::MatmulPersistent;

/// Runs `op` at `shape` on fresh codes and checks every element.
#[allow(clippy::too_many_arguments)]
fn run_and_check<T, O>(
    device: &Device,
    op: &Fp8GemmOp<T, O>,
    shape: (usize, usize, usize),
    rng: &mut Rng,
    (nan, to_f64, u): (O, fn(O) -> f64, f64),
    what: &str,
) where
    T: tilus::lang::Element + tilus::lowp::LowpElement + tilus_bench::buffers::Sample,
    O: tilus::lang::Element + tilus::cudarc::driver::DeviceRepr + Copy,
{
    let stream = device.stream();
    let (m, n, k) = shape;
    let a = codes::<T>(rng, m * k);
    let b = codes::<T>(rng, n * k);
    let s = scales(rng);
    let (da, db) = (
        stream.clone_htod(&a).unwrap(),
        stream.clone_htod(&b).unwrap(),
    );
    let ds = stream.clone_htod(&s).unwrap();
    let mut dc = stream.clone_htod(&vec![nan; m * n]).unwrap();
    op.run(stream, shape, (&da, &db), &ds, &mut dc).unwrap();
    let c = stream.clone_dtoh(&dc).unwrap();
    check(what, shape, (&a, &b), s, &c, to_f64, (u, TensorCores)).unwrap();
}

fn tile(block_m: i32, block_n: i32, ping_pong: i32) -> MatmulPersistent {
    MatmulPersistent {
        block_m,
        block_n,
        ping_pong,
        ..MatmulPersistent::default()
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fp8_matches_the_exact_product() {
    tilus_bench::test_cache!();
    let device = Device::open(0).unwrap();
    let mut rng = Rng::new(seed());
    let bf = (bf16::NAN, bf16::to_f64 as fn(bf16) -> f64, 1.0 / 256.0);
    let hf = (f16::NAN, f16::to_f64 as fn(f16) -> f64, 1.0 / 2048.0);
    let ff = (f32::NAN, f64::from as fn(f32) -> f64, 1.0 / 16_777_216.0);
    let op = Fp8GemmOp::fixed(MatmulFp8::<F8E4M3, bf16>::default(), &device);
    for shape in [(300, 520, 656), (1, 8, 16), (1000, 1000, 4096)] {
        run_and_check(&device, &op, shape, &mut rng, bf, "e4m3 -> bf16");
    }
    for t in [tile(64, 128, 1), tile(256, 64, 0), tile(128, 64, 0)] {
        let op = Fp8GemmOp::fixed(MatmulFp8::<F8E5M2, f16>::new(t), &device);
        let shape = (77, 200, 400);
        run_and_check(&device, &op, shape, &mut rng, hf, "e5m2 -> f16");
    }
    // the overlapped promotion: odd and even step counts, cooperative and ping-pong
    // (in pairs; 128 x 128 also in runs of four and eight, and warp group 1 half a run
    // behind; 256 x 64 in pairs)
    for (t, pairs) in [
        (tile(128, 128, 0), 1),
        (tile(128, 64, 0), 1),
        (tile(64, 64, 1), 1),
        (tile(128, 128, 0), 2),
        (tile(128, 128, 0), 4),
        (tile(256, 64, 0), 1),
    ] {
        let config = MatmulFp8::<F8E4M3, bf16>::new(t).with_overlap(pairs);
        let op = Fp8GemmOp::fixed(config, &device);
        for shape in [(300, 520, 656), (77, 200, 400), (1000, 1000, 4096)] {
            run_and_check(&device, &op, shape, &mut rng, bf, "overlapped");
        }
    }
    let behind = MatmulFp8::<F8E4M3, bf16>::new(tile(128, 128, 0))
        .with_overlap(2)
        .with_turns(true);
    let op = Fp8GemmOp::fixed(behind, &device);
    for shape in [(300, 520, 656), (77, 200, 128), (1000, 1000, 4096)] {
        run_and_check(&device, &op, shape, &mut rng, bf, "overlapped, one behind");
    }
    // pairs of blocks sharing B's tile (cluster_m 2), a step at a time and in runs of four;
    // odd rows of tiles leave a pair's second block past M
    let pair = MatmulPersistent {
        cluster_m: 2,
        ..tile(128, 128, 0)
    };
    for overlap in [0, 2] {
        let config = MatmulFp8::<F8E4M3, bf16>::new(pair.clone()).with_overlap(overlap);
        let op = Fp8GemmOp::fixed(config, &device);
        for shape in [(300, 520, 656), (77, 200, 400), (1000, 1000, 4096)] {
            run_and_check(&device, &op, shape, &mut rng, bf, "pairs");
        }
    }
    let op = Fp8GemmOp::fixed(MatmulFp8::<F8E4M3, f32>::new(tile(128, 64, 0)), &device);
    for shape in [(257, 130, 272), (2048, 1536, 1024)] {
        run_and_check(&device, &op, shape, &mut rng, ff, "e4m3 -> f32");
    }
    // tuned per shape
    let op = Fp8GemmOp::<F8E4M3, bf16>::new(&device).unwrap();
    run_and_check(&device, &op, (1024, 2048, 2048), &mut rng, bf, "tuned");
}

/// Fine-grained scales on the GPU against the exact product: each block's scale its own,
/// blocks of N and K partly filled, every tile kind, and a long K.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fp8_blocks_match_the_exact_product() {
    use super::fp8_reference::{block_scales, check_blocks};
    use tilus_kernels::gemm::fp8::{Fp8BlocksGemmOp, MatmulFp8Blocks};
    tilus_bench::test_cache!();
    let device = Device::open(0).unwrap();
    let stream = device.stream();
    let mut rng = Rng::new(seed());
    let wide = tile(128, 128, 0);
    for (shape, t) in [
        ((300usize, 330usize, 656usize), wide.clone()),
        ((77, 200, 400), tile(128, 64, 0)),
        ((513, 260, 272), tile(256, 64, 0)),
        ((200, 384, 1024), tile(64, 128, 1)),
        ((1024, 1536, 4096), wide),
        ((300, 330, 656), tile(64, 64, 1)),
    ] {
        let (m, n, k) = shape;
        let kb = k.div_ceil(128);
        let a = codes::<F8E4M3>(&mut rng, m * k);
        let b = codes::<F8E4M3>(&mut rng, n * k);
        let sa = block_scales(&mut rng, kb * m);
        let sb = block_scales(&mut rng, n.div_ceil(128) * kb);
        // the narrow ping-pong tile overlapped
        let overlap = i32::from(t.block_n == 64 && t.ping_pong == 1);
        let config = MatmulFp8Blocks::<F8E4M3, bf16> {
            inner: MatmulFp8::new(t).with_overlap(overlap),
        };
        let op = Fp8BlocksGemmOp::fixed(config, &device);
        let put = |v: &[f32]| stream.clone_htod(v).unwrap();
        let (da, db) = (
            stream.clone_htod(&a).unwrap(),
            stream.clone_htod(&b).unwrap(),
        );
        let (dsa, dsb) = (put(&sa), put(&sb));
        let mut dc = stream.clone_htod(&vec![bf16::NAN; m * n]).unwrap();
        op.run(stream, shape, (&da, &db), (&dsa, &dsb), &mut dc)
            .unwrap();
        let c = stream.clone_dtoh(&dc).unwrap();
        let u = 1.0 / 256.0;
        let bound = (u, TensorCores);
        check_blocks(
            "blocks",
            shape,
            (&a, &b),
            (&sa, &sb),
            &c,
            bf16::to_f64,
            bound,
        )
        .unwrap();
    }
}
