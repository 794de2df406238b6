//! Stream-K on the GPU against cuBLAS (relative error under 1e-3, no NaN): each tile shape
//! alone and in pairs, at shapes whose last rounds are shared (4096³: 512 tiles on 132
//! multiprocessors; ragged ones), one of whole rounds and three of fewer tiles than
//! multiprocessors (every tile walked whole), each launched three times on the
//! same workspace (the flags back at zero each time), in f16 and bf16. (Not autotuned: its
//! kernels spill a few words, and the autotuner skips spilling kernels.)

use tilus::runtime::Device;
use tilus_bench::checks::on_gpu;
use tilus_kernels::gemm::persistent::MatmulPersistent;
use tilus_kernels::gemm::stream_k::{MatmulStreamK, StreamK};

const SHAPES: [(usize, usize, usize); 7] = [
    (4096, 4096, 4096),
    (1000, 1500, 704),
    (4000, 5000, 3000),
    (4224, 4096, 1024),
    (256, 4096, 4096),
    (100, 700, 5000),
    (512, 4096, 12288),
];

fn forms() -> Vec<MatmulStreamK> {
    let tiles = [(128, 256, 1), (256, 128, 2), (128, 128, 1), (128, 256, 2)];
    tiles
        .into_iter()
        .map(|(block_m, block_n, cluster_m)| MatmulStreamK {
            tile: MatmulPersistent {
                block_m,
                block_n,
                cluster_m,
                ..MatmulPersistent::default()
            },
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas_launch_after_launch() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    for (i, config) in forms().into_iter().enumerate() {
        let f16 = StreamK::<half::f16>::fixed(config.clone(), &device);
        let bf16 = StreamK::<half::bf16>::fixed(config, &device);
        for (j, &shape) in SHAPES.iter().enumerate() {
            for launch in 0..3 {
                let seed = (100 * i + 10 * j + launch) as u64;
                on_gpu(&f16, &device, shape, seed);
                on_gpu(&bf16, &device, shape, seed);
            }
        }
    }
}
