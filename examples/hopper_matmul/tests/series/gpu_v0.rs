//! v0 on the GPU: correct against cuBLAS at the seed's sizes and at a shape that is not a
//! multiple of the tile, and free of NaN in the seed's `free_shared` scenario.

use hopper_matmul::v0::MatmulTma;
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus_bench::harness::{self, Cublas, Problem};
use tilus_bench::run::{Version, V0};

fn check_shape(m: usize, n: usize, k: usize, seed: u64) {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let mut p = Problem::new(&stream, m, n, k, seed).unwrap();
    blas.matmul(&stream, &p, true).unwrap();
    let v0 = V0::new(MatmulTma::default(), &device);
    v0.launch(&stream, &mut p).unwrap();
    stream.synchronize().unwrap();
    let c = harness::check(&stream, &p).unwrap();
    assert!(c.passed(), "{m}x{n}x{k}: {c:?}");
    assert!(c.rel_err < 1e-3, "{c:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn v0_is_correct_at_4096() {
    tilus_bench::test_cache!();
    check_shape(4096, 4096, 4096, 1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn v0_is_correct_at_8192() {
    tilus_bench::test_cache!();
    check_shape(8192, 8192, 8192, 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn v0_is_correct_at_shapes_that_are_not_multiples_of_the_tile() {
    tilus_bench::test_cache!();
    check_shape(1000, 1500, 704, 3);
    check_shape(77, 136, 64, 4);
    check_shape(130, 8, 24, 5);
}

/// The same check against a CPU reference in f64, independent of cuBLAS.
#[test]
#[ignore = "needs a CUDA GPU"]
fn v0_agrees_with_a_cpu_reference() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let (m, n, k) = (200, 264, 192);
    let mut p = Problem::new(&stream, m, n, k, 11).unwrap();
    V0::new(MatmulTma::default(), &device)
        .launch(&stream, &mut p)
        .unwrap();
    let a = stream.clone_dtoh(&p.a).unwrap();
    let b = stream.clone_dtoh(&p.b).unwrap();
    let c = stream.clone_dtoh(&p.c).unwrap();
    let expect = harness::cpu_reference(&a, &b, m, n, k);
    let check = harness::compare(&c, &expect);
    assert!(check.passed(), "{check:?}");
}

/// The seed's v0 with `free_shared(sa)` and `free_shared(sb)` right after the main loop: the
/// scenario in which Python Tilus places the mbarrier inside a live TMA destination.
#[derive(Clone, Debug, Hash)]
struct FreedAfterLoop(MatmulTma);

impl Script for FreedAfterLoop {
    type Args = <MatmulTma as Script>::Args;
    fn arg_names() -> &'static [&'static str] {
        MatmulTma::arg_names()
    }
    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        let c = &self.0;
        k.blocks([cdiv(m_size, c.block_m), cdiv(n_size, c.block_n)]);
        k.warps(4);
        let offset_m = k.let_i32(c.block_m * k.block_idx().x);
        let offset_n = k.let_i32(c.block_n * k.block_idx().y);
        let ga = k.global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k.global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k.shared_tensor::<f16>([c.block_m, c.block_k]);
        let sb = k.shared_tensor::<f16>([c.block_n, c.block_k]);
        let acc = k.register_tensor::<f32>([c.block_m, c.block_n], 0.0);
        let bar = k.mbarrier().alloc([1]);
        let phase = k.var_u32(0u32);
        k.for_range(0, k_size, c.block_k, |k, offset_k| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                k.tma()
                    .global_to_shared(&ga, &sa, [offset_m, offset_k], bar[0]);
                k.tma()
                    .global_to_shared(&gb, &sb, [offset_n, offset_k], bar[0]);
                k.mbarrier().wait(bar[0], phase);
            });
            k.sync();
            let a = k.load_shared(&sa);
            let b = k.load_shared(&sb);
            k.dot(&a, &b.transpose(), &acc, &acc);
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        k.free_shared(&sa);
        k.free_shared(&sb);
        let out = k.cast::<f16>(&acc);
        let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
        k.store_global(&gc, &out, [offset_m, offset_n]);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn free_shared_after_the_loop_never_corrupts_a_barrier() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let (m, n, k) = (4096, 4096, 4096);
    let mut p = Problem::new(&stream, m, n, k, 7).unwrap();
    blas.matmul(&stream, &p, true).unwrap();
    let jit = tilus::Jit::new(FreedAfterLoop(MatmulTma::default()), &device);
    let mut nan = 0;
    for launch in 0..20 {
        p.poison(&stream).unwrap();
        jit.launch(
            &stream,
            (m as i32, n as i32, k as i32, &p.a, &p.b, &mut p.c),
        )
        .unwrap();
        stream.synchronize().unwrap();
        let c = harness::check(&stream, &p).unwrap();
        nan += c.non_finite;
        assert!(c.passed(), "launch {launch}: {c:?}");
    }
    assert_eq!(nan, 0);
}

/// The autotuner benchmarks the configurations that compile and picks one of them; the
/// result is correct and the decision is recorded with every candidate's outcome.
#[test]
#[ignore = "needs a CUDA GPU"]
fn autotuned_v0_is_correct_and_picks_a_survivor() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    // a problem size no other test uses, so this run tunes rather than reads a decision
    let (m, n, k) = (2048 + 64, 3072, 1536);
    let mut p = Problem::new(&stream, m, n, k, 21).unwrap();
    blas.matmul(&stream, &p, true).unwrap();
    let v0 = V0::autotuned(&device).unwrap();
    v0.launch(&stream, &mut p).unwrap();
    stream.synchronize().unwrap();
    let c = harness::check(&stream, &p).unwrap();
    assert!(c.passed(), "{c:?}");
    let chosen = v0.config_for(&stream, &mut p).unwrap();
    let survivors = [
        (64, 128, 16),
        (64, 128, 32),
        (64, 128, 64),
        (128, 128, 16),
        (128, 128, 32),
    ];
    assert!(
        survivors.contains(&(chosen.block_m, chosen.block_n, chosen.block_k)),
        "{chosen:?}"
    );
    let path = tilus_bench::run::Version::<half::f16>::table_path(&v0)
        .expect("the autotuned v0 keeps a table");
    let table = tilus::tune::table::read(&path);
    let entry = table
        .entries
        .iter()
        .find(|(key, _)| key.contains("consts=[3072, 1536]"))
        .expect("recorded")
        .1;
    assert_eq!(entry.candidates.len(), 15);
    let ok: Vec<_> = entry
        .candidates
        .iter()
        .filter(|c| c.status == "ok")
        .collect();
    assert_eq!(ok.len(), 5, "{:?}", entry.candidates);
    assert!(ok.iter().all(|c| c.latency_ms.is_some_and(|t| t > 0.0)));
    assert!(entry
        .candidates
        .iter()
        .filter(|c| c.status != "ok")
        .all(|c| c.reason.is_some()));
}
