//! v3 on the GPU: each of its forms (one WGMMA group in flight or none, registers moved
//! between warp groups or not) against cuBLAS, at shapes that are multiples of the tile and
//! shapes that are not, with a relative error under 1e-3 and no NaN.

use hopper_matmul::harness::{self, Cublas, Problem};
use hopper_matmul::run::{Matmul, Version};
use hopper_matmul::v3::MatmulSpecialized;
use tilus::runtime::Device;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    hopper_matmul::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let mut forms = super::interp_v3::forms();
    forms.push(MatmulSpecialized {
        register_split: 1,
        ..MatmulSpecialized::default()
    });
    for (i, config) in forms.into_iter().enumerate() {
        let v = Matmul::fixed("v3", config.clone(), &device);
        for (j, (m, n, k)) in [(1024, 1024, 1024), (1000, 1500, 704)]
            .into_iter()
            .enumerate()
        {
            let mut p = Problem::new(&stream, m, n, k, (10 * i + j) as u64).unwrap();
            blas.matmul(&stream, &p, true).unwrap();
            v.launch(&stream, &mut p).unwrap();
            stream.synchronize().unwrap();
            let c = harness::check(&stream, &p).unwrap();
            assert!(c.passed(), "{m}x{n}x{k} {config:?}: {c:?}");
            assert!(c.rel_err < 1e-3, "{m}x{n}x{k} {config:?}: {c:?}");
        }
    }
}
