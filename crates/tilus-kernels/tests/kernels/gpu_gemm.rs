//! The `Gemm` entry point on the GPU against cuBLAS: small M (where split-K competes with v6),
//! mid-size, large and ragged shapes (v6 against stream-K), K off 16 bytes (the
//! general GEMM, staged), and a second call of a shape reusing its choice.

use half::{bf16, f16};
use tilus::runtime::Device;
use tilus_bench::harness::{self, Cublas, Problem};
use tilus_bench::operand::Operand;
use tilus_kernels::gemm::{candidates, Gemm};

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_matches_cublas_at_every_kind_of_shape() {
    tilus_bench::test_cache!();
    every_kind_of_shape::<f16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_matches_cublas_at_every_kind_of_shape_in_bf16() {
    tilus_bench::test_cache!();
    every_kind_of_shape::<bf16>();
}

/// The entry point in `T` at each kind of shape, called twice per shape.
fn every_kind_of_shape<T: Operand>() {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let gemm = Gemm::<T>::new(&device).unwrap();
    let shapes = [
        (1, 4096, 4096),
        (16, 4096, 4096),
        (200, 1000, 1000),
        (1000, 1500, 704),
        (4096, 4096, 4096),
        (256, 4096, 4096),
        (512, 2000, 1001),
        (100, 4096, 4095),
    ];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let mut p = Problem::<T>::new(&stream, m, n, k, 500 + i as u64).unwrap();
        blas.matmul(&stream, &p, true).unwrap();
        for call in 0..2 {
            gemm.matmul(&stream, (m, n, k), &p.a, &p.b, &mut p.c)
                .unwrap();
            stream.synchronize().unwrap();
            let c = harness::check(&stream, &p).unwrap();
            let kernel = gemm
                .chosen_for((m, n, k))
                .expect("a choice once it has run");
            assert!(candidates((m, n, k)).contains(&kernel));
            assert!(
                c.passed(),
                "{} {m}x{n}x{k} call {call} on {}: {c:?}",
                T::NAME,
                kernel.name()
            );
            assert!(c.rel_err < 1e-3, "{c:?}");
        }
    }
}
