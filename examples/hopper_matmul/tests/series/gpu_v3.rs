//! v3 on the GPU: each of its forms (one WGMMA group in flight or none, registers moved
//! between warp groups or not) against cuBLAS, at shapes that are multiples of the tile and
//! shapes that are not, with a relative error under 1e-3 and no NaN.

use super::checks::forms_on_gpu;
use hopper_matmul::v3::MatmulSpecialized;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    hopper_matmul::test_cache!();
    let mut forms = super::interp_v3::forms();
    forms.push(MatmulSpecialized {
        register_split: 1,
        ..MatmulSpecialized::default()
    });
    forms_on_gpu("v3", forms);
}
