//! The memory-bound kernels (`vector_add`, `vector_add_f32`, `softmax`, `layer_norm`, `rms_norm`) on the CPU
//! interpreter, against their host references: every configuration of each search space, at
//! sizes that end inside a block (a vector's last block, a row tile wider than the row, rows
//! whose length is not a multiple of a 16-byte vector, rows shorter than one vector per
//! thread).

use tilus_bench::checks::entry_on_interpreter;
use tilus_bench::registry::{entries, Entry};
use tilus_bench::size::Size;

/// The memory-bound entries.
fn memory_bound() -> Vec<Entry> {
    let all: Vec<Entry> = entries()
        .into_iter()
        .filter(|e| e.memory.is_some())
        .collect();
    let names: Vec<&str> = all.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "vector_add",
            "vector_add_f32",
            "softmax",
            "layer_norm",
            "rms_norm"
        ]
    );
    all
}

/// Ragged sizes of an entry's dimensions.
fn ragged(e: &Entry) -> Vec<Size> {
    let sizes: &[&[i64]] = match e.workload.dims().len() {
        1 => &[&[1], &[777], &[9000]],
        _ => &[&[5, 300], &[3, 1001], &[9, 7]],
    };
    sizes
        .iter()
        .map(|v| Size::new(e.workload.dims(), v).unwrap())
        .collect()
}

#[test]
fn every_config_passes_its_check_at_ragged_sizes() {
    tilus_bench::test_cache!();
    for e in memory_bound() {
        for script in (e.space)() {
            for (i, size) in ragged(&e).into_iter().enumerate() {
                entry_on_interpreter(&e, script.as_ref(), &size, 11 + i as u64);
            }
        }
    }
}

#[test]
fn the_default_configs_pass_at_their_run_size() {
    tilus_bench::test_cache!();
    for e in memory_bound() {
        let script = (e.configure)(&[]).unwrap();
        let size = e.size(None, e.run_size).unwrap();
        let r = e
            .interpret(
                script.as_ref(),
                &size,
                1,
                &tilus::interp::Options::default(),
            )
            .unwrap();
        assert!(r.check.passed(), "{} at {size}: {:?}", e.name, r.check);
        assert_eq!(
            r.check.total,
            size.values().iter().map(|&v| v as usize).product::<usize>()
        );
    }
}
