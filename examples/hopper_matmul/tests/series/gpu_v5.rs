//! v5 on the GPU: its forms and its default against cuBLAS at shapes that are multiples of
//! the tile and shapes that are not (relative error under 1e-3: f32 accumulation, nothing
//! lost to the split between warp groups; no NaN), and the autotuned kernel at 4096³.

use hopper_matmul::v5::MatmulCooperative;
use tilus_bench::checks::{autotuned_on_gpu, forms_on_gpu};

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    tilus_bench::test_cache!();
    let mut forms = super::interp_v5::forms();
    forms.push(MatmulCooperative::default());
    forms_on_gpu("v5", forms);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v5_is_correct_at_4096() {
    tilus_bench::test_cache!();
    autotuned_on_gpu::<_, MatmulCooperative>("v5");
}
