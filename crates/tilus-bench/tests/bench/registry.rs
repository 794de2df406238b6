//! Every entry of the registry runs through its workload: on the interpreter here, on the GPU
//! where there is one.

use tilus_bench::registry::entries;
use tilus_bench::size::Size;

/// A size of the entry's dimensions small enough for one block of every configuration.
fn small(dims: &'static [&'static str]) -> Size {
    let values: Vec<i64> = dims.iter().map(|_| 64).collect();
    Size::new(dims, &values).expect("a valid size")
}

#[test]
fn every_entry_runs_on_the_interpreter_and_passes_its_check() {
    tilus_bench::test_cache!();
    for e in entries() {
        let script = (e.configure)(&[]).unwrap();
        let size = small(e.workload.dims());
        let r = e
            .interpret(
                script.as_ref(),
                &size,
                3,
                &tilus::interp::Options::default(),
            )
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert!(r.check.passed(), "{}: {:?}", e.name, r.check);
        assert!(r.interp.is_some_and(|i| i.blocks > 0));
    }
}

#[test]
fn a_size_too_large_for_the_host_is_an_error_not_an_abort() {
    tilus_bench::test_cache!();
    // a vector's largest size (2^31 - 1 elements) fits a large host: only sizes of several
    // dimensions are sure to be beyond any
    for e in entries()
        .into_iter()
        .filter(|e| e.workload.dims().len() > 1)
    {
        let script = (e.configure)(&[]).unwrap();
        // within the 32-bit index rules (those are checked when tracing), beyond any host; a
        // row-wise kernel holds a row in registers, so its row length is the verifier's to
        // limit (a diagnostic, see `nvrtc_memory`): its rows are many and short instead
        let row_wise = e.memory.is_some();
        let values: Vec<i64> = e
            .workload
            .dims()
            .iter()
            .enumerate()
            .map(|(d, _)| if row_wise && d == 1 { 1000 } else { 1 << 30 })
            .collect();
        let size = Size::new(e.workload.dims(), &values).unwrap();
        match e.interpret(
            script.as_ref(),
            &size,
            3,
            &tilus::interp::Options::default(),
        ) {
            Err(tilus_bench::Error::Memory(m)) => {
                assert!(m.to_string().contains("host memory"), "{m}")
            }
            // or a kernel whose indices of this size leave the 32-bit integers (the
            // prepacked weights' runs), refused before anything is allocated
            Err(tilus_bench::Error::Tilus(tilus::Error::Argument { message, .. }))
                if message.contains("outside the 32-bit integers") => {}
            other => panic!("{}: expected a memory error, got {other:?}", e.name),
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_entry_runs_on_the_gpu_and_passes_its_check() {
    tilus_bench::test_cache!();
    let device = tilus::runtime::Device::open(0).expect("a Hopper GPU");
    for e in entries() {
        let script = (e.configure)(&[]).unwrap();
        for size in [small(e.workload.dims()), e.size(None, e.run_size).unwrap()] {
            let r = e
                .run_on_gpu(script.as_ref(), &size, 5, &device)
                .unwrap_or_else(|err| panic!("{} at {size}: {err}", e.name));
            assert!(r.check.passed(), "{} at {size}: {:?}", e.name, r.check);
        }
    }
}
