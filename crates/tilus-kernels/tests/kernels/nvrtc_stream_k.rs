//! Stream-K through the whole compiler, NVRTC included (no GPU needed): every configuration of
//! its search space compiles, spilling no more than the few words it spills today, or is
//! rejected for the shared memory it would need; and the emitted code fences around its flags.

use tilus::tune::Tunable;
use tilus::Error;
use tilus_kernels::gemm::stream_k::MatmulStreamK;

/// Bytes of spills and stack the stream-K kernels take at most today.
const SPILL_BOUND: u32 = 128;

#[test]
fn every_config_of_the_stream_k_space_compiles_within_its_spill_bound() {
    tilus_bench::test_cache!();
    let mut compiled = 0;
    let mut spilled = vec![];
    for b in <MatmulStreamK as Tunable>::space().bindings() {
        let config = MatmulStreamK::from_binding(&b).unwrap();
        match tilus::build(&config, &[4096, 4096]) {
            Ok(c) => {
                // a few words of the shares' bounds do not fit beside the accumulator yet
                // (at most 108 bytes at 128 x 256): more than that is a regression
                if c.report.spill_stores > SPILL_BOUND || c.report.stack_frame > SPILL_BOUND {
                    spilled.push(format!("{b}: {:?}", c.report));
                }
                compiled += 1;
            }
            Err(Error::Script(d)) => {
                let msg = &d[0].message;
                assert!(msg.contains("bytes of shared memory"), "{config:?}: {msg}");
            }
            Err(e) => panic!("{config:?}: {e}"),
        }
    }
    assert!(spilled.is_empty(), "spills: {spilled:#?}");
    assert!(compiled >= 16, "only {compiled} configurations compiled");
}

#[test]
fn the_flags_are_fenced_on_both_sides() {
    let src = tilus::emit(&MatmulStreamK::default(), &[4096, 4096]).unwrap();
    // per consumer warp group: after the partial's stores, and after the flag is seen
    assert!(
        src.matches("__threadfence()").count() >= 4,
        "fences on both sides of the flags"
    );
    assert!(
        src.contains("tilus_atom_cas_i32(flags_ptr"),
        "the finisher lowers the flag"
    );
    assert!(
        src.contains("tilus_atom_exchange_i32(flags_ptr"),
        "a partial raises it"
    );
}
