//! The memory-bound kernels on the GPU, against their host references: every configuration
//! that compiles at ragged sizes, the defaults and the autotuned kernels at the benchmark's
//! sizes (256 MiB of f16 per matrix), and the benchmark itself on small sizes.

use tilus::runtime::Device;
use tilus_bench::bandwidth::{verify_and_time, Choice};
use tilus_bench::registry::{entries, Entry};
use tilus_bench::run::BenchOptions;
use tilus_bench::size::Size;

fn memory_bound() -> Vec<Entry> {
    entries()
        .into_iter()
        .filter(|e| e.memory.is_some())
        .collect()
}

fn size(e: &Entry, rows: usize, cols: usize) -> Size {
    let m = e.memory.as_ref().expect("a memory-bound entry");
    Size::new(e.workload.dims(), &(m.size)(rows, cols)).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_config_that_compiles_is_correct_at_ragged_sizes() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    for e in memory_bound() {
        for script in (e.space)() {
            for (i, (r, c)) in [(3, 1001), (129, 8000)].into_iter().enumerate() {
                let size = size(&e, r, c);
                let what = format!("{} [{}] at {size}", e.name, script.config());
                match e.run_on_gpu(script.as_ref(), &size, 20 + i as u64, &device) {
                    Ok(run) => assert!(run.check.passed(), "{what}: {:?}", run.check),
                    // the verifier's register budget (see nvrtc_memory)
                    Err(tilus_bench::Error::Tilus(tilus::Error::Script(d))) => {
                        assert!(
                            d[0].message.contains("registers per thread"),
                            "{what}: {}",
                            d[0].message
                        )
                    }
                    Err(err) => panic!("{what}: {err}"),
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_defaults_are_correct_at_the_benchmarks_sizes() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    for e in memory_bound() {
        let script = (e.configure)(&[]).unwrap();
        for (r, c) in [(16384, 8192), (32768, 4096)] {
            let size = size(&e, r, c);
            let run = e
                .run_on_gpu(script.as_ref(), &size, 7, &device)
                .unwrap_or_else(|err| panic!("{} at {size}: {err}", e.name));
            assert!(run.check.passed(), "{} at {size}: {:?}", e.name, run.check);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_benchmark_checks_tunes_and_times_every_kernel() {
    tilus_bench::test_cache!();
    let device = Device::open(0).expect("a Hopper GPU");
    let kernels = memory_bound();
    let opts = BenchOptions {
        warmup: 1,
        rounds: 3,
        ..BenchOptions::default()
    };
    let mut out = vec![];
    let (rows, ok) = verify_and_time(
        &mut out,
        &device,
        &kernels.iter().collect::<Vec<_>>(),
        &[(1000, 4096), (300, 8192)],
        Choice::Tuned,
        &opts,
    )
    .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(ok, "{text}");
    assert_eq!(rows.len(), 2 * kernels.len(), "{text}");
    for r in &rows {
        assert!(r.kernel_ms > 0.0 && r.copy_ms > 0.0, "{r:?}");
        assert!(r.ratio().is_finite(), "{r:?}");
    }
    assert_eq!(text.matches(": PASS").count(), rows.len(), "{text}");
}
