//! v3 on the GPU: each of its forms (one WGMMA group in flight or none, registers moved
//! between warp groups or not) against cuBLAS, at shapes that are multiples of the tile and
//! shapes that are not, with a relative error under 1e-3 and no NaN.

use hopper_matmul::v3::MatmulSpecialized;
use tilus_bench::checks::forms_on_gpu;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    tilus_bench::test_cache!();
    let mut forms = super::interp_v3::forms();
    forms.push(MatmulSpecialized {
        register_split: 1,
        ..MatmulSpecialized::default()
    });
    forms_on_gpu("v3", forms);
}
