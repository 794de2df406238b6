//! The main job of every step: verify against cuBLAS on fresh random data, then time the step
//! and cuBLAS interleaved in the same process; without a GPU, show what can be shown.

use crate::harness::{self, Cublas, Problem, Row};
use crate::operand::Operand;
use hopper_matmul::v0::MatmulTma;
use hopper_matmul::v1::MatmulWgmma;
use std::sync::Arc;
use tilus::cudarc::driver::CudaStream;
use tilus::lang::ArgList;
use tilus::prelude::f16;
use tilus::runtime::Device;
use tilus::tune::{FixedOrTuned, Tunable};
use tilus::{Jit, Result};
use tilus_kernels::gemm::operand::MatmulArgsOf;

/// The series' own result type, for what the harness adds (allocations, output).
type HarnessResult<T> = crate::Result<T>;

/// A matmul version that can be launched on a problem of operand type `T`.
pub trait Version<T: Operand = f16> {
    /// Its name in tables (`v0`, ...).
    fn name(&self) -> String;
    /// Launches `C = A · Bᵀ` into `p.c`.
    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Result<()>;
    /// The configuration used for this problem, when there is one to report.
    fn describe(&self, _stream: &Arc<CudaStream>, _p: &mut Problem<T>) -> Option<String> {
        None
    }

    /// Where its autotuning decisions are kept on disk, when it tunes (for reports that say
    /// which table a first call wrote or read).
    fn table_path(&self) -> Option<std::path::PathBuf> {
        None
    }
}

/// The argument list every matmul of the series takes: `(m, n, k, a, b, c)` with `m` at run
/// time and `n`, `k` compile-time constants.
pub type MatmulArgs = MatmulArgsOf<f16>;

/// A matmul of the series, with a configuration chosen by hand or by the autotuner (its
/// arguments are [`MatmulArgs`], or the same in bf16 for [`tilus_kernels::gemm::operand::Bf16`] kernels).
pub struct Matmul<S: Tunable> {
    /// Its name in tables.
    name: &'static str,
    /// A fixed configuration, or the script's search space tuned on first use of each problem.
    kernel: FixedOrTuned<S>,
}

/// v0: TMA + mbarrier + mma.sync.
pub type V0 = Matmul<MatmulTma>;
/// v1: TMA + mbarrier + WGMMA.
pub type V1 = Matmul<MatmulWgmma>;

impl<S: Tunable> Matmul<S> {
    /// Binds a fixed configuration to a device.
    pub fn fixed(name: &'static str, config: S, device: &Device) -> Matmul<S> {
        Matmul {
            name,
            kernel: FixedOrTuned::Fixed(Jit::new(config, device)),
        }
    }

    /// The autotuned kernel.
    pub fn tuned(name: &'static str, device: &Device) -> Result<Matmul<S>> {
        Ok(Matmul {
            name,
            kernel: FixedOrTuned::Tuned(S::autotuned(device)?),
        })
    }

    /// The configuration used for this problem (tuning first when needed).
    pub fn config_for<T: Operand>(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Result<S>
    where
        S: Tunable<Args = MatmulArgsOf<T>>,
    {
        let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
        let args = (m, n, k, &p.a, &p.b, &mut p.c);
        let values = <MatmulArgsOf<T> as ArgList>::host_values(&args, stream);
        self.kernel.config(stream, &values)
    }
}

impl Matmul<MatmulTma> {
    /// v0 with a fixed configuration.
    pub fn new(config: MatmulTma, device: &Device) -> V0 {
        Matmul::fixed("v0", config, device)
    }

    /// v0 autotuned over the seed's 15 configurations.
    pub fn autotuned(device: &Device) -> Result<V0> {
        Matmul::tuned("v0", device)
    }
}

impl Matmul<MatmulWgmma> {
    /// v1 with a fixed configuration.
    pub fn new(config: MatmulWgmma, device: &Device) -> V1 {
        Matmul::fixed("v1", config, device)
    }

    /// v1 autotuned over its 12 configurations.
    pub fn autotuned(device: &Device) -> Result<V1> {
        Matmul::tuned("v1", device)
    }
}

impl<T: Operand, S: Tunable<Args = MatmulArgsOf<T>>> Version<T> for Matmul<S> {
    fn name(&self) -> String {
        self.name.to_string()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Result<()> {
        let (m, n, k) = (p.m as i32, p.n as i32, p.k as i32);
        self.kernel.launch(stream, (m, n, k, &p.a, &p.b, &mut p.c))
    }

    fn describe(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        let c = self.config_for(stream, p).ok()?;
        Some(tilus::lang::config_string(&format!("{c:?}")))
    }

    fn table_path(&self) -> Option<std::path::PathBuf> {
        self.kernel.table_path().cloned()
    }
}

/// Options of a benchmark run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Warm-up rounds.
    pub warmup: usize,
    /// Timed rounds (the median is reported).
    pub rounds: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// What precedes each timed run.
    pub timing: harness::Timing,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            warmup: 5,
            rounds: 20,
            seed: 0x5eed,
            timing: harness::Timing::default(),
        }
    }
}

/// Verifies each version on each shape against cuBLAS, then times them interleaved with
/// cuBLAS. Prints a `check` line per version and shape on stdout; returns the table rows and
/// whether every check passed. The rows come shape by shape, in the order of `shapes`: cuBLAS
/// first, then each version in the order of `versions`, each with its check
/// ([`Row::passed`]); a version that failed its check is timed and reported all the same. A
/// version the compiler refuses at a shape (its configuration breaks a rule there: a
/// `REFUSED` check line with the first diagnostic) keeps its row, untimed (NaN, `passed`
/// `None`), and the other versions run.
pub fn verify_and_bench<T: Operand>(
    device: &Device,
    versions: &[&dyn Version<T>],
    shapes: &[(usize, usize, usize)],
    opts: &BenchOptions,
) -> HarnessResult<(Vec<Row>, bool)> {
    verify_and_bench_to(&mut std::io::stdout(), device, versions, shapes, opts)
}

/// [`verify_and_bench`] with the `check` lines written to `out` (a write that fails, e.g. on
/// a closed pipe, ends the run with [`crate::Error::Output`]).
pub fn verify_and_bench_to<T: Operand>(
    out: &mut dyn std::io::Write,
    device: &Device,
    versions: &[&dyn Version<T>],
    shapes: &[(usize, usize, usize)],
    opts: &BenchOptions,
) -> HarnessResult<(Vec<Row>, bool)> {
    if opts.rounds == 0 {
        return Err(crate::Error::Usage(
            "at least one timed round is needed (--rounds)".into(),
        ));
    }
    let stream = device.stream().clone();
    let blas = Cublas::new(&stream)?;
    let mut rows = vec![];
    let mut all_ok = true;
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let mut p = Problem::<T>::new(&stream, m, n, k, opts.seed.wrapping_add(i as u64))?;
        blas.reference(&stream, &p)?;
        // each version's check at this shape, carried into its row (`None`: the compiler
        // refused the version here, so it is neither launched nor timed, and the others run)
        let mut passed: Vec<Option<bool>> = Vec::with_capacity(versions.len());
        for v in versions {
            p.poison(&stream)?;
            match v.launch(&stream, &mut p) {
                Err(tilus::Error::Script(d)) => {
                    let why = d.first().map(|d| d.to_string()).unwrap_or_default();
                    writeln!(
                        out,
                        "check {:>4} {m}x{n}x{k}: REFUSED before launch ({why})",
                        v.name()
                    )?;
                    all_ok = false;
                    passed.push(None);
                    continue;
                }
                launched => launched?,
            }
            stream.synchronize().map_err(|e| tilus::Error::Driver {
                call: "cuStreamSynchronize",
                message: format!("{e:?}"),
            })?;
            let c = harness::check(&stream, &p)?;
            let ok = c.passed();
            all_ok &= ok;
            passed.push(Some(ok));
            let config = v
                .describe(&stream, &mut p)
                .map(|c| format!(" [{c}]"))
                .unwrap_or_default();
            writeln!(
                out,
                "check {:>4}{config} {m}x{n}x{k}: {} (non-finite {}, mismatches {} of {}, max |diff| {:.2e}, rel. error {:.2e}{})",
                v.name(),
                if ok { "PASS" } else { "FAIL" },
                c.non_finite,
                c.mismatches,
                c.total,
                c.max_abs,
                c.rel_err,
                refereed(&c)
            )?;
        }
        // Timing: cuBLAS and every version, one run of each per round.
        let p = std::cell::RefCell::new(p);
        let mut fs: Vec<Box<dyn FnMut() -> HarnessResult<()>>> =
            vec![Box::new(|| Ok(blas.matmul(&stream, &p.borrow(), false)?))];
        for (v, _) in versions.iter().zip(&passed).filter(|(_, ok)| ok.is_some()) {
            let (s, p) = (&stream, &p);
            fs.push(Box::new(move || Ok(v.launch(s, &mut p.borrow_mut())?)));
        }
        let mut refs: Vec<&mut dyn FnMut() -> HarnessResult<()>> =
            fs.iter_mut().map(|f| f.as_mut() as _).collect();
        let timed =
            harness::time_interleaved(&stream, &mut refs, (opts.warmup, opts.rounds), opts.timing)?;
        // a refused version's row keeps its place, untimed (NaN)
        let mut timed = timed.into_iter();
        let mut times = vec![timed.next().expect("cuBLAS is timed")];
        times.extend(
            passed
                .iter()
                .map(|ok| ok.and_then(|_| timed.next()).unwrap_or(f64::NAN)),
        );
        let flops = p.borrow().flops();
        // cuBLAS is the reference: it has no check of its own
        let names = std::iter::once(("cublas".to_string(), None))
            .chain(versions.iter().zip(&passed).map(|(v, &ok)| (v.name(), ok)));
        for ((name, passed), t) in names.zip(&times) {
            rows.push(Row {
                m,
                n,
                k,
                name,
                latency_ms: *t,
                tflops: flops / (t * 1e-3) / 1e12,
                ratio: times[0] / t,
                passed,
            });
        }
    }
    Ok((rows, all_ok))
}

/// What the exact referee found, for a check line (empty where it did not run).
pub fn refereed(c: &crate::harness::Check) -> String {
    if c.refereed == 0 {
        return String::new();
    }
    format!(
        "; {} recomputed exactly: the kernel within rounding in {}, cuBLAS off in {}",
        c.refereed, c.refereed_ok, c.reference_off
    )
}
