//! Split-K on the GPU against cuBLAS at small M (and a ragged M), fixed and autotuned.

use super::checks::on_gpu;
use hopper_matmul::split_k::{MatmulSplitK, SplitK};
use tilus::runtime::Device;

#[test]
#[ignore = "needs a CUDA GPU"]
fn split_k_matches_cublas_at_small_m() {
    hopper_matmul::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let shapes = [
        (1, 4096, 4096),
        (16, 4096, 4096),
        (64, 8192, 8192),
        (100, 1000, 1000),
    ];
    for (i, splits) in [2, 8].into_iter().enumerate() {
        let v = SplitK::fixed(
            MatmulSplitK {
                splits,
                ..MatmulSplitK::default()
            },
            &device,
        );
        for (j, &shape) in shapes.iter().enumerate() {
            on_gpu(&v, &device, shape, (10 * i + j) as u64);
        }
    }
    let tuned = SplitK::tuned(&device).unwrap();
    for (j, &shape) in shapes.iter().enumerate() {
        on_gpu(&tuned, &device, shape, 100 + j as u64);
    }
}
