//! Structural tests of the CUDA generated for v0: self-contained, deterministic, and made of the
//! instructions the tutorial describes.

use hopper_matmul::v0::MatmulTma;

fn source() -> String {
    tilus::emit(&MatmulTma::default(), &[4096, 4096]).unwrap()
}

#[test]
fn generated_cuda_is_deterministic_and_self_contained() {
    let a = source();
    assert_eq!(a, source());
    assert!(
        !a.contains("#include"),
        "NVRTC from the wheel has no headers"
    );
    assert!(a.contains("extern \"C\" __global__ void __launch_bounds__(128, 1) matmul_tma("));
    assert!(a.contains("const __grid_constant__ CUtensorMap"));
}

#[test]
fn generated_cuda_uses_the_hopper_instructions_of_the_tutorial() {
    let s = source();
    for needle in [
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        "cvt.rn.f16x2.f32",
        "elect.sync",
        "__syncthreads();",
        "tilus_swizzle(",
    ] {
        assert!(s.contains(needle), "missing `{needle}`");
    }
    // one TMA copy for each tile, in the single thread's block
    assert_eq!(
        s.matches("tilus_tma_load_2d(").count(),
        2 + 1,
        "two calls and one definition"
    );
}

#[test]
fn every_statement_carries_the_users_file_and_line() {
    let s = source();
    let comments = s
        .lines()
        .filter(|l| l.trim_start().starts_with("// v0.rs:"))
        .count();
    assert!(comments >= 20, "only {comments} source comments");
}
