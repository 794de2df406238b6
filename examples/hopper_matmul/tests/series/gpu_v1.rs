//! v1 on the GPU: every configuration that compiles is correct (32-, 64- and 128-byte
//! swizzles, one and two 64-row blocks, N of 128 and 256), the autotuned kernel is correct at
//! the seed's sizes and at shapes that are not multiples of the tile, with a relative error
//! under 1e-3 and no NaN.

use hopper_matmul::v1::MatmulWgmma;
use tilus::runtime::Device;
use tilus_bench::checks::on_gpu as check;
use tilus_bench::run::V1;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_config_that_compiles_is_correct() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut ran = 0;
    for config in MatmulWgmma::configs() {
        if tilus::build(&config, &[1000, 704]).is_err() {
            continue; // rejected with a reason (registers); see nvrtc_space_v1
        }
        check(
            &V1::new(config, &device),
            &device,
            (300, 1000, 704),
            40 + ran,
        );
        ran += 1;
    }
    assert_eq!(ran, 9);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v1_is_correct_at_4096_and_8192() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let v = V1::autotuned(&device).unwrap();
    check(&v, &device, (4096, 4096, 4096), 1);
    check(&v, &device, (8192, 8192, 8192), 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn v1_is_correct_at_shapes_that_are_not_multiples_of_the_tile() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let v = V1::new(MatmulWgmma::default(), &device);
    for (i, shape) in [
        (1000, 1500, 704),
        (77, 136, 64),
        (130, 8, 24),
        (4095, 4000, 4088),
    ]
    .into_iter()
    .enumerate()
    {
        check(&v, &device, shape, 10 + i as u64);
    }
}
