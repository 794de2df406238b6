//! The v2 search space through the whole compiler, NVRTC included (no GPU needed): all 24
//! configurations (every block tile, both K steps, rings of two to four stages). The 18 whose
//! accumulator fits compile without spills or a stack frame, with at most 255 registers and
//! WGMMA in the PTX the cubin came from; the six 128 × 256 ones are rejected by the verifier
//! with the register budget as the reason, as v1's.

use hopper_matmul::v2::MatmulStaged;
use tilus::Error;
use tilus_bench::spaces::{assert_clean_wgmma, configs};

#[test]
fn every_config_of_the_v2_space_compiles_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let space = configs::<MatmulStaged>();
    assert_eq!(space.len(), 24);
    let mut compiled = 0;
    for config in space {
        match tilus::build(&config, &[4096, 4096]) {
            Ok(c) => {
                assert_clean_wgmma(&config, &c);
                compiled += 1;
            }
            Err(Error::Script(d)) => {
                assert!(
                    d[0].message.contains("registers per thread"),
                    "{config:?}: {}",
                    d[0].message
                );
                assert!(d[0].loc.file.ends_with("v2.rs"), "{:?}", d[0].loc);
                assert_eq!((config.block_m, config.block_n), (128, 256), "{config:?}");
            }
            Err(e) => panic!("{config:?}: {e}"),
        }
    }
    assert_eq!(compiled, 18);
}
