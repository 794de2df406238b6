//! The unfused baseline of the epilogue benchmark computes what the fused kernel computes:
//! on the interpreter, at ragged sizes, against the f64 epilogue of the same product.

use half::f16;
use hopper_matmul::epilogue::{Activation, GeluTanh, Relu};
use hopper_matmul::epilogue_pass::EpiloguePass;
use hopper_matmul::harness::{compare, Rng};

fn random(n: usize, rng: &mut Rng) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f64(4.0 * rng.next_f64() - 2.0))
        .collect()
}

fn check<A: Activation>(m: usize, n: usize) {
    let mut rng = Rng::new((m * 1000 + n) as u64);
    let (t, d, bias) = (
        random(m * n, &mut rng),
        random(m * n, &mut rng),
        random(n, &mut rng),
    );
    let (alpha, beta) = (1.25f32, -0.75f32);
    let mut c = vec![f16::NAN; m * n];
    tilus::interp::run(
        &EpiloguePass::<A>::default(),
        (
            m as i32,
            n as i32,
            alpha,
            beta,
            &t[..],
            &d[..],
            &bias[..],
            &mut c[..],
        ),
    )
    .unwrap();
    let expect: Vec<f16> = (0..m * n)
        .map(|i| {
            let pre =
                alpha as f64 * t[i].to_f64() + beta as f64 * d[i].to_f64() + bias[i % n].to_f64();
            f16::from_f64(A::reference(pre))
        })
        .collect();
    let r = compare(&c, &expect);
    assert!(r.passed(), "{} {m}x{n}: {r:?}", A::NAME);
}

#[test]
fn the_separate_pass_applies_the_epilogue_at_ragged_sizes() {
    hopper_matmul::test_cache!();
    for (m, n) in [(1, 8), (33, 264), (70, 520)] {
        check::<GeluTanh>(m, n);
        check::<Relu>(m, n);
    }
}
