//! The v5 search space through the whole compiler, NVRTC included (no GPU needed): all 24
//! configurations (every block tile, rings of three and four stages, registers moved or not,
//! tiles row by row and in groups of eight rows) compile without spills or a stack frame, with
//! at most 255 registers, within the shared memory a block has and with WGMMA in the PTX the
//! cubin came from; none is rejected. Registers are moved (`setmaxnreg`, a whole producer
//! warp group: 12 warps) exactly in the configurations that ask for it.

use hopper_matmul::v5::MatmulCooperative;
use tilus_bench::spaces::{assert_clean_wgmma, configs};

#[test]
fn every_config_of_the_v5_space_compiles_or_is_rejected_with_a_reason() {
    tilus_bench::test_cache!();
    let space = configs::<MatmulCooperative>();
    assert_eq!(space.len(), 24);
    for config in space {
        // none is rejected: each warp group's half of every tile fits the register file
        let c = tilus::build(&config, &[4096, 4096]).unwrap_or_else(|e| panic!("{config:?}: {e}"));
        assert_clean_wgmma(&config, &c);
        let split = config.register_split != 0;
        assert_eq!(c.source.contains("setmaxnreg"), split, "{config:?}");
        let threads = if split { 384 } else { 288 };
        assert!(
            c.source.contains(&format!("__launch_bounds__({threads}")),
            "{config:?}: {threads} threads"
        );
    }
}
