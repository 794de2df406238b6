//! v2 on the GPU: its forms (`interp_v2::forms`, a covering sample of its space) and its
//! default against cuBLAS at shapes that are multiples of the tile and shapes that are not
//! (relative error under 1e-3, no NaN), and the autotuned kernel at 4096³.

use hopper_matmul::v2::MatmulStaged;
use tilus_bench::checks::{autotuned_on_gpu, forms_on_gpu};

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    tilus_bench::test_cache!();
    let mut forms = super::interp_v2::forms();
    forms.push(MatmulStaged::default());
    forms_on_gpu("v2", forms);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v2_is_correct_at_4096() {
    tilus_bench::test_cache!();
    autotuned_on_gpu::<_, MatmulStaged>("v2");
}
