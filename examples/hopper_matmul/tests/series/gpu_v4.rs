//! v4 on the GPU: its forms and its default against cuBLAS at shapes that are multiples of
//! the tile and shapes that are not (relative error under 1e-3, no NaN), and the autotuned
//! kernel at 4096³.

use super::checks::on_gpu as check;
use hopper_matmul::run::Matmul;
use hopper_matmul::v4::MatmulPipelined;
use tilus::runtime::Device;

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
