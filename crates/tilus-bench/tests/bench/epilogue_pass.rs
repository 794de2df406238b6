//! The unfused baseline of the epilogue benchmark computes what the fused kernel computes:
//! on the interpreter, at ragged sizes, against the f64 epilogue of the same product.

use half::f16;
use tilus_bench::epilogue_pass::EpiloguePass;
use tilus_bench::harness::{compare, Rng};
use tilus_kernels::gemm::epilogue::{Activation, GeluTanh, Relu};

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
    tilus_bench::test_cache!();
    for (m, n) in [(1, 8), (33, 264), (70, 520)] {
        check::<GeluTanh>(m, n);
        check::<Relu>(m, n);
    }
}

/// With `n` a multiple of 8 the pass moves T, D and C in 16-byte vectors, as a hand-written
/// baseline would.
#[test]
fn the_separate_pass_uses_16_byte_accesses() {
    let src = tilus::emit(&EpiloguePass::<GeluTanh>::default(), &[4096]).unwrap();
    for (what, at) in [
        ("t", "load_global(g0"),
        ("d", "load_global(g1"),
        ("c", "store_global(g3"),
    ] {
        let i = src.find(at).unwrap_or_else(|| panic!("no {at} in\n{src}"));
        let line = &src[i..src[i..].find('\n').map_or(src.len(), |j| i + j)];
        assert!(line.contains("vector=8"), "{what}: {line}");
    }
}
