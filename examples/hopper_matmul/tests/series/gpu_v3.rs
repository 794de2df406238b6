//! v3 on the GPU: each of its forms (one WGMMA group in flight or none, registers moved
//! between warp groups or not) against cuBLAS, at shapes that are multiples of the tile and
//! shapes that are not, with a relative error under 1e-3 and no NaN.

use super::checks::on_gpu;
use hopper_matmul::run::Matmul;
use hopper_matmul::v3::MatmulSpecialized;
use tilus::runtime::Device;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    hopper_matmul::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let mut forms = super::interp_v3::forms();
    forms.push(MatmulSpecialized {
        register_split: 1,
        ..MatmulSpecialized::default()
    });
    for (i, config) in forms.into_iter().enumerate() {
        let v = Matmul::fixed("v3", config.clone(), &device);
        for (j, shape) in [(1024, 1024, 1024), (1000, 1500, 704)]
            .into_iter()
            .enumerate()
        {
            on_gpu(&v, &device, shape, (10 * i + j) as u64);
        }
    }
}
