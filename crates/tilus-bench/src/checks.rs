//! Assertions for tests (they panic, naming what failed): the two checks every matmul
//! version's tests make: a configuration on the CPU interpreter against
//! the f64 CPU reference, and a kernel on the GPU against cuBLAS (no NaN, every element within
//! the operand type's tolerance, relative error under 1e-3); in f16, or bf16 for the kernels
//! that take it.

use crate::harness::{self, Cublas, Problem, Rng};
use crate::operand::Operand;
use crate::run::{Matmul, Version};
use tilus::runtime::Device;
use tilus::tune::Tunable;
use tilus::Script;
use tilus_kernels::gemm::operand::MatmulArgsOf;

/// `config` on the interpreter at `(m, n, k)`, on inputs drawn from `seed`.
pub fn on_interpreter<T: Operand, S: Script<Args = MatmulArgsOf<T>>>(
    config: &S,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) {
    let mut rng = Rng::new(seed);
    let a = harness::seed_inputs::<T>(m * k, k, &mut rng);
    let b = harness::seed_inputs::<T>(n * k, k, &mut rng);
    let mut c = vec![T::NAN; m * n];
    tilus::interpret(
        config,
        (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]),
    )
    .unwrap_or_else(|e| panic!("{config:?} at {m}x{n}x{k}: {e}"));
    let check = harness::compare(&c, &harness::cpu_reference(&a, &b, m, n, k));
    assert!(check.passed(), "{config:?} at {m}x{n}x{k}: {check:?}");
    assert!(check.rel_err < 1e-3, "{check:?}");
}

/// A version on the GPU at `(m, n, k)` against cuBLAS, on inputs drawn from `seed`.
pub fn on_gpu<T: Operand>(
    v: &dyn Version<T>,
    device: &Device,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) {
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream).unwrap();
    let mut p = Problem::<T>::new(&stream, m, n, k, seed).unwrap();
    blas.reference(&stream, &p).unwrap();
    v.launch(&stream, &mut p).unwrap();
    stream.synchronize().unwrap();
    let c = harness::check(&stream, &p).unwrap();
    let config = v.describe(&stream, &mut p).unwrap_or_default();
    assert!(c.passed(), "{m}x{n}x{k} [{config}]: {c:?}");
    assert!(c.rel_err < 1e-3, "{m}x{n}x{k} [{config}]: {c:?}");
}

/// Each configuration, fixed, on the GPU at a square shape and a ragged one.
pub fn forms_on_gpu<T: Operand, S: Tunable<Args = MatmulArgsOf<T>>>(
    version: &'static str,
    forms: Vec<S>,
) {
    let device = Device::open(0).expect("a Hopper GPU");
    for (i, config) in forms.into_iter().enumerate() {
        let v = Matmul::fixed(version, config, &device);
        for (j, shape) in [(1024, 1024, 1024), (1000, 1500, 704)]
            .into_iter()
            .enumerate()
        {
            on_gpu(&v, &device, shape, (10 * i + j) as u64);
        }
    }
}

/// The autotuned kernel on the GPU at 4096³.
pub fn autotuned_on_gpu<T: Operand, S: Tunable<Args = MatmulArgsOf<T>>>(version: &'static str) {
    let device = Device::open(0).expect("a Hopper GPU");
    let v = Matmul::<S>::tuned(version, &device).unwrap();
    on_gpu(&v, &device, (4096, 4096, 4096), 7);
}

/// Interprets a registry entry's `script` at `size` on inputs of `seed` and asserts that its
/// workload's check passes (naming the entry, the configuration and the size).
pub fn entry_on_interpreter(
    e: &crate::registry::Entry,
    script: &dyn tilus::lang::DynScript,
    size: &crate::size::Size,
    seed: u64,
) {
    let r = e
        .interpret(script, size, seed, &tilus::interp::Options::default())
        .unwrap_or_else(|err| panic!("{} [{}] at {size}: {err}", e.name, script.config()));
    assert!(
        r.check.passed(),
        "{} [{}] at {size}: {:?}",
        e.name,
        script.config(),
        r.check
    );
}

/// Shows that every `fence_gpu` of a kernel with a cross-block handshake is needed: `run`
/// interprets the kernel with the options it is given (the same problem each time); with all
/// fences it must succeed, and with each fence removed in turn
/// ([`tilus::interp::Options::without_fence`]) it must fail with a missing release or acquire
/// fence. Returns the fault of each removal, in the program's order of fences.
pub fn every_fence_is_needed<T>(
    what: &str,
    mut run: impl FnMut(&tilus::interp::Options) -> tilus::Result<T>,
) -> Vec<tilus::interp::Fault> {
    use tilus::interp::{Fault, Options};
    if let Err(e) = run(&Options::default()) {
        panic!("{what} with all its fences: {e}");
    }
    let mut faults = vec![];
    for n in 0.. {
        let opts = Options {
            without_fence: Some(n),
            ..Options::default()
        };
        match run(&opts) {
            Err(tilus::Error::Argument { arg, .. }) if arg == "without_fence" => break,
            Err(tilus::Error::Interp { fault, .. })
                if matches!(
                    fault,
                    Fault::MissingReleaseFence | Fault::MissingAcquireFence
                ) =>
            {
                faults.push(fault)
            }
            Err(e) => panic!("{what} without fence {n}: another error than a missing fence: {e}"),
            Ok(_) => panic!("{what} ran without its fence {n}: nothing reported it missing"),
        }
    }
    assert!(!faults.is_empty(), "{what} has no fence_gpu");
    faults
}
