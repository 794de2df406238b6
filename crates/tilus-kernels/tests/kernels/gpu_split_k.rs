//! Split-K on the GPU against cuBLAS at small M (and a ragged M), fixed (with a second kernel
//! for the sum, and summed by the last split's blocks) and autotuned, f16 and bf16.

use half::{bf16, f16};
use tilus::runtime::Device;
use tilus_bench::checks::on_gpu;
use tilus_kernels::gemm::split_k::{MatmulSplitK, SplitK};

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_k_matches_cublas_at_small_m() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let shapes = [
        (1, 4096, 4096),
        (16, 4096, 4096),
        (64, 8192, 8192),
        (100, 1000, 1000),
    ];
    // both forms; each version runs every shape on one workspace and one set of counters,
    // so the serial form's later launches find the counters its earlier ones lowered
    let forms = [(2, 0), (8, 0), (2, 1), (8, 1), (16, 1)];
    for (i, (splits, serial)) in forms.into_iter().enumerate() {
        let v = SplitK::<f16>::fixed(
            MatmulSplitK {
                splits,
                serial,
                ..MatmulSplitK::default()
            },
            &device,
        );
        for (j, &shape) in shapes.iter().chain(&shapes).enumerate() {
            on_gpu(&v, &device, shape, (10 * i + j) as u64);
        }
    }
    let tuned = SplitK::<f16>::tuned(&device).unwrap();
    for (j, &shape) in shapes.iter().enumerate() {
        on_gpu(&tuned, &device, shape, 100 + j as u64);
    }
    // bf16: the same kernels on bf16 operands, autotuned
    let tuned = SplitK::<bf16>::tuned(&device).unwrap();
    for (j, &shape) in shapes.iter().enumerate() {
        on_gpu(&tuned, &device, shape, 200 + j as u64);
    }
}
