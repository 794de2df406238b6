//! The memory-bound kernels' search spaces through the whole compiler, NVRTC included (no GPU
//! needed), at the benchmark's sizes (rows of 8192 and 4096 halves, vectors of 2^27 elements):
//! each configuration compiles or is rejected with the register budget as the reason (at the
//! larger rows, where registers are tightest); the defaults compile without spills at both,
//! and their global accesses are 16-byte vectors.

use tilus::Error;
use tilus_bench::registry::{entries, Entry};
use tilus_bench::size::Size;

fn build(
    e: &Entry,
    script: &dyn tilus::lang::DynScript,
    size: &Size,
) -> tilus::Result<tilus::compile::CompiledProgram> {
    let program = script.trace(&(e.consts)(size))?;
    let (program, plan) = tilus::passes::compile_program(program)?;
    tilus::compile::compile(&program, &plan)
}

/// The benchmark's sizes for an entry.
fn bench_sizes(e: &Entry) -> Vec<Size> {
    let m = e.memory.as_ref().expect("a memory-bound entry");
    [(16384, 8192), (32768, 4096)]
        .into_iter()
        .map(|(r, c)| Size::new(e.workload.dims(), &(m.size)(r, c)).unwrap())
        .collect()
}

#[test]
fn every_config_compiles_or_is_rejected_for_its_registers() {
    tilus_bench::test_cache!();
    for e in entries().into_iter().filter(|e| e.memory.is_some()) {
        for size in bench_sizes(&e).into_iter().take(1) {
            let mut clean = 0;
            for script in (e.space)() {
                let what = format!("{} [{}] at {size}", e.name, script.config());
                match build(&e, script.as_ref(), &size) {
                    Ok(c) => {
                        assert!(c.report.registers <= 255, "{what}: {:?}", c.report);
                        if c.report.spill_stores == 0 && c.report.stack_frame == 0 {
                            clean += 1;
                        }
                    }
                    Err(Error::Script(d)) => assert!(
                        d[0].message.contains("registers per thread"),
                        "{what}: {}",
                        d[0].message
                    ),
                    Err(err) => panic!("{what}: {err}"),
                }
            }
            assert!(
                clean >= 3,
                "{} at {size}: {clean} clean configurations",
                e.name
            );
        }
    }
}

#[test]
fn the_defaults_use_16_byte_vectors_without_spills() {
    tilus_bench::test_cache!();
    for e in entries().into_iter().filter(|e| e.memory.is_some()) {
        let script = (e.configure)(&[]).unwrap();
        for size in bench_sizes(&e) {
            let what = format!("{} at {size}", e.name);
            let c = build(&e, script.as_ref(), &size).unwrap_or_else(|err| panic!("{what}: {err}"));
            assert_eq!(c.report.spill_stores, 0, "{what}: {:?}", c.report);
            assert_eq!(c.report.serialized_wgmma, None, "{what}: {:?}", c.report);
            assert_eq!(c.report.stack_frame, 0, "{what}: {:?}", c.report);
            let elem = if e.name == "vector_add_f32" {
                "float"
            } else {
                "u32"
            };
            let vector = format!("tilus_vec<{elem}, 4>");
            assert!(c.source.contains(&vector), "{what}: no {vector}");
            for line in c.source.lines().filter(|l| l.contains("_global(")) {
                assert!(line.contains("vector="), "{what}: {line}");
                let width = if e.name == "vector_add_f32" {
                    "vector=4"
                } else {
                    "vector=8"
                };
                assert!(line.contains(width), "{what}: {line}");
            }
        }
    }
}
