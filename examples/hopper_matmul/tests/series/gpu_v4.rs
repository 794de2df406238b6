//! v4 on the GPU: its forms and its default against cuBLAS at shapes that are multiples of
//! the tile and shapes that are not (relative error under 1e-3, no NaN), and the autotuned
//! kernel at 4096³.

use hopper_matmul::harness::{self, Cublas, Problem};
use hopper_matmul::run::{Matmul, Version};
use hopper_matmul::v4::MatmulPipelined;
use tilus::runtime::Device;

fn check(v: &dyn Version, device: &Device, (m, n, k): (usize, usize, usize), seed: u64) {
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let mut p = Problem::new(&stream, m, n, k, seed).unwrap();
    blas.matmul(&stream, &p, true).unwrap();
    v.launch(&stream, &mut p).unwrap();
    stream.synchronize().unwrap();
    let c = harness::check(&stream, &p).unwrap();
    assert!(c.passed(), "{m}x{n}x{k}: {c:?}");
    assert!(c.rel_err < 1e-3, "{m}x{n}x{k}: {c:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    hopper_matmul::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut forms = super::interp_v4::forms();
    forms.push(MatmulPipelined::default());
    for (i, config) in forms.into_iter().enumerate() {
        let v = Matmul::fixed("v4", config, &device);
        for (j, shape) in [(1024, 1024, 1024), (1000, 1500, 704)]
            .into_iter()
            .enumerate()
        {
            check(&v, &device, shape, (10 * i + j) as u64);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v4_is_correct_at_4096() {
    hopper_matmul::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let v = Matmul::<MatmulPipelined>::tuned("v4", &device).unwrap();
    check(&v, &device, (4096, 4096, 4096), 7);
}
