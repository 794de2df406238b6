//! v6 on the GPU: its forms and its default against cuBLAS at shapes that are multiples of
//! the tile and shapes that are not (relative error under 1e-3, no NaN), and the autotuned
//! kernel at 4096³.

use hopper_matmul::v6::MatmulPersistent;
use tilus_bench::checks::{autotuned_on_gpu, forms_on_gpu};
use tilus_kernels::gemm::operand::Bf16;

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas() {
    tilus_bench::test_cache!();
    let mut forms = super::interp_v6::forms();
    forms.extend(super::interp_v6::pairs_along_n());
    forms.push(MatmulPersistent::default());
    forms_on_gpu("v6", forms);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v6_is_correct_at_4096() {
    tilus_bench::test_cache!();
    autotuned_on_gpu::<_, MatmulPersistent>("v6");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_form_matches_cublas_in_bf16() {
    tilus_bench::test_cache!();
    let mut forms: Vec<Bf16<MatmulPersistent>> =
        super::interp_v6::forms().into_iter().map(Bf16).collect();
    forms.extend(super::interp_v6::pairs_along_n().into_iter().map(Bf16));
    forms.push(Bf16(MatmulPersistent::default()));
    forms_on_gpu("v6", forms);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v6_is_correct_at_4096_in_bf16() {
    tilus_bench::test_cache!();
    autotuned_on_gpu::<_, Bf16<MatmulPersistent>>("v6");
}
