//! mma.sync products (`dot`): the seed's matmul runs and is exact.

use super::seed::run_matmul;
use crate::common::inputs::matmul_inputs;
use crate::common::scripts::SeedMatmul;
use tilus::prelude::*;

#[test]
fn the_matmul_baseline_is_exact_on_small_integers() {
    // inputs are multiples of 1/16 with small sums: every partial sum is exact in f32 and f16
    let (m, n, k) = (70, 136, 128);
    let c = run_matmul(SeedMatmul::default(), m, n, k).unwrap();
    let (a, b) = matmul_inputs(m, n, k);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k)
                .map(|x| a[i * k + x].to_f32() * b[j * k + x].to_f32())
                .sum();
            assert_eq!(
                c[i * n + j].to_f32(),
                f16::from_f32(want).to_f32(),
                "({i}, {j})"
            );
        }
    }
}

#[test]
fn the_matmul_baseline_runs() {
    run_matmul(SeedMatmul::default(), 64, 128, 128).unwrap();
}
