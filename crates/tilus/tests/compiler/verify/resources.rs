//! Resources: shared memory and registers (checked after layouts and the plan).

use super::OutF32;
use crate::common::{at, check};
use tilus::prelude::*;

#[test]
fn shared_memory_over_227_kb() {
    let d = check::<OutF32>(|k, _| {
        k.warps(4);
        let _: SharedTensor<f16> = k.shared_tensor([64, 64]);
        let _: SharedTensor<f32> = at(line!(), k.shared_tensor([256, 256]));
    })
    .fails_once("more than the 232448 a block can have");
    assert!(d.message.contains("`s1` 262144 B"), "{d}");

    // two tiles that fit alone but are alive together
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: SharedTensor<f16> = k.shared_tensor([256, 200]);
        let b: SharedTensor<f16> = at(line!(), k.shared_tensor([256, 256]));
        k.free_shared(&a);
        k.free_shared(&b);
    })
    .fails_once("more than the 232448 a block can have");

    // the same tiles, one after the other, fit
    check::<OutF32>(|k, _| {
        k.warps(4);
        let a: SharedTensor<f16> = k.shared_tensor([256, 200]);
        k.free_shared(&a);
        let b: SharedTensor<f16> = k.shared_tensor([256, 256]);
        k.free_shared(&b);
    })
    .compiles("tiles that are never alive together share their bytes");
}

/// A single plain (non-TMA) tile of exactly 227 KB is the most a block can have.
#[test]
fn shared_memory_of_exactly_227_kb() {
    let p = check::<OutF32>(|k, _| {
        k.warps(4);
        let _: SharedTensor<f32> = k.shared_tensor([227 * 1024 / 4]);
    })
    .compiles("227 KB of plain shared memory fits in a block");
    assert!(p.smem_bytes <= tilus::passes::MAX_SHARED_BYTES);
}

/// The byte count of a huge tile overflows `u32` in the builder.
#[test]
fn shared_tile_whose_size_overflows_u32() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let _: SharedTensor<f32> = at(line!(), k.shared_tensor([32768, 32768]));
    })
    .fails_once("more than the 232448 a block can have");
}

/// 2^32 elements of 2 bytes wrap to a tile of 0 bytes, which then "fits".
#[test]
fn shared_tile_whose_size_wraps_to_zero() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let _: SharedTensor<f16> = at(line!(), k.shared_tensor([65536, 65536]));
    })
    .fails_once("more than the 232448 a block can have");
}

/// Two 2 GiB tiles: the planner's offsets overflow `u32`.
#[test]
fn shared_tiles_whose_offsets_overflow_u32() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let _: SharedTensor<f32> = k.shared_tensor([16384, 32768]);
        let _: SharedTensor<f32> = at(line!(), k.shared_tensor([16384, 32768]));
    })
    .fails("a block can have");
}

#[test]
fn registers_over_255_per_thread() {
    // The seed's 128x256 f32 accumulator over 4 warps: 256 registers for it alone.
    let d = check::<(Ptr<f16>, Ptr<f16>)>(|k, (pa, pb)| {
        k.warps(4);
        let ga = k.global_view(pa, [4096, 4096]);
        let gb = k.global_view(pb, [4096, 4096]);
        let sa: SharedTensor<f16> = k.shared_tensor([128, 64]);
        let sb: SharedTensor<f16> = k.shared_tensor([256, 64]);
        let acc: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
        let bar = k.mbarrier().alloc([1]);
        k.for_range(0, 4096, 64, |k, ok| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                k.tma()
                    .global_to_shared(&ga, &sa, [Scalar::from(0), ok.into()], bar[0]);
                k.tma()
                    .global_to_shared(&gb, &sb, [Scalar::from(0), ok.into()], bar[0]);
                k.mbarrier().wait(bar[0], 0u32);
            });
            k.sync();
            let a = k.load_shared(&sa);
            let b = k.load_shared(&sb);
            k.dot(&a, &b.transpose(), &acc, &acc);
            k.sync();
        });
    })
    .fails_once("registers per thread");
    assert!(d.message.contains("`r0` 256"), "{d}");
    assert!(
        d.message
            .contains("more than the 255 a thread can have; use a smaller tile or more warps"),
        "{d}"
    );

    // the same accumulator alone, without the operands
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let acc: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
        let g = k.global_view(o, [128, 256]);
        k.store_global(&g, &acc, [0, 0]);
    })
    .fails_once("the register tiles alive together need 256 registers per thread");
}

/// A row whose width the threads do not divide, which also goes to shared memory (so it
/// cannot be masked), keeps much of itself in every thread (3000 columns over 128 threads:
/// 375 each, where 24 would be an even share): the register error says to pad the width,
/// not to shrink the tile or add warps (which would not help).
#[test]
fn a_width_the_threads_do_not_divide_is_told_to_pad() {
    let d = check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let row: RegisterTensor<f32> = at(line!(), k.register_tensor([1, 3000], 1.0));
        let g = k.global_view(o, [1, 3000]);
        k.store_global(&g, &row, [0, 0]);
        let s = k.shared_tensor::<f32>([1, 3000]);
        k.store_shared(&s, &row);
    })
    .fails_once("registers per thread");
    assert!(
        d.message
            .contains("does not divide evenly among the block's 128 threads"),
        "{d}"
    );
    assert!(d.message.contains("pad its last extent to 3072"), "{d}");
    assert!(
        !d.message.contains("use a smaller tile or more warps"),
        "{d}"
    );
}

/// The same row, only stored to global memory: it gets a masked layout (3072 columns
/// covered, 24 registers a thread) and compiles.
#[test]
fn a_width_the_threads_do_not_divide_is_masked_where_only_stores_use_it() {
    let p = check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let row: RegisterTensor<f32> = k.register_tensor([1, 3000], 1.0);
        let g = k.global_view(o, [1, 3000]);
        k.store_global(&g, &row, [0, 0]);
    })
    .compiles("a masked layout");
    let l = p.registers[0].layout.clone().expect("laid out");
    assert!(l.is_masked() && l.covered(1) == 3072, "{l}");
    assert_eq!(l.local_size(), 24, "{l}");
}

/// The diagnostic should point at a tile that makes the difference, not at the first tile
/// that happens to be alive.
#[test]
fn registers_over_255_points_at_the_large_tile() {
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let small: RegisterTensor<f32> = k.register_tensor([128], 0.0);
        let big: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
        let g = k.global_view(o, [128, 256]);
        k.store_global(&g, &big, [0, 0]);
        let g1 = k.global_view(o, [128]);
        k.store_global(&g1, &small, [0]);
    })
    .fails_once("the register tiles alive together need 257 registers per thread");
}

/// A tile read for the last time by the instruction that defines another of its size is not
/// counted with it: the new one takes its registers (128 each here, 256 together), while two
/// such tiles both read later are.
#[test]
fn a_result_takes_the_registers_of_a_tile_it_replaces() {
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let acc: RegisterTensor<f32> = k.register_tensor([64, 256], 1.0);
        let g = k.global_view(o, [1, 64, 256]);
        let wide = k.unsqueeze(&acc, 0);
        k.store_global(&g, &wide, [0, 0, 0]);
    })
    .compiles("the unsqueezed tile replaces the accumulator");

    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let acc: RegisterTensor<f32> = k.register_tensor([64, 256], 1.0);
        let g = k.global_view(o, [1, 64, 256]);
        let wide = at(line!(), k.unsqueeze(&acc, 0));
        k.store_global(&g, &wide, [0, 0, 0]);
        let g2 = k.global_view(o, [64, 256]);
        k.store_global(&g2, &acc, [0, 0]);
    })
    .fails_once("the register tiles alive together need 256 registers per thread");
}

/// A tile carried through a loop and assigned anew in each iteration is not alive between
/// its last read and that assignment (the assignment ends its old value): a tile as large
/// fits in the gap (128 registers each), while reading the carried tile after the other is
/// defined keeps both alive (256).
#[test]
fn a_carried_tile_is_dead_between_its_last_read_and_its_next_assignment() {
    check::<OutF32>(|k, (o,)| {
        carried(k, o, |k, g, held| {
            k.store_global(g, held, [0, 0]);
            let fresh: RegisterTensor<f32> = k.load_global(g, [0, 0], [64, 256]);
            k.store_global(g, &fresh, [0, 0]);
            k.assign_tile(held, fresh + 1.0);
        })
    })
    .compiles("the carried tile is dead while the fresh one lives");

    check::<OutF32>(|k, (o,)| {
        carried(k, o, |k, g, held| {
            let fresh: RegisterTensor<f32> = at(line!(), k.load_global(g, [0, 0], [64, 256]));
            k.store_global(g, held, [0, 0]);
            k.store_global(g, &fresh, [0, 0]);
            k.assign_tile(held, fresh + 1.0);
        })
    })
    .fails_once("the register tiles alive together need 256 registers per thread");

    // a tile defined before the loop and read after it is alive across the whole loop
    check::<OutF32>(|k, (o,)| {
        carried(k, o, |k, g, _| {
            let fresh: RegisterTensor<f32> = at(line!(), k.load_global(g, [0, 0], [64, 256]));
            k.store_global(g, &fresh, [0, 0]);
        })
    })
    .fails_once("the register tiles alive together need 256 registers per thread");
}

/// A `[64, 256]` f32 tile carried through a loop of four iterations running `body` (128
/// registers per thread on four warps), stored after it.
fn carried(
    k: &mut Kernel,
    o: PtrVal<f32>,
    body: fn(&mut Kernel, &GlobalTensor<f32>, &RegisterTensor<f32>),
) {
    k.warps(4);
    let g = k.global_view(o, [64, 256]);
    let held: RegisterTensor<f32> = k.register_tensor([64, 256], 0.0);
    k.for_range(0, 4, 1, |k, _| body(k, &g, &held));
    k.store_global(&g, &held, [0, 0]);
}

/// The register count of a huge tile overflows `u32` in the register check.
#[test]
fn register_tile_whose_size_overflows_u32() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let _: RegisterTensor<f32> = at(line!(), k.register_tensor([65536, 65536], 0.0));
    })
    .fails_once("registers per thread");
}

/// A computed tile of 2^31 - 1 elements (odd: every thread of the block holds all of them) is
/// rejected for its registers before the arithmetic rules build their per-element tables, which
/// would need tens of GiB of host memory.
#[test]
fn a_computed_tile_far_beyond_the_registers_is_rejected_without_exhausting_the_host() {
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let g = k.global_view(o, [i32::MAX]);
        let x: RegisterTensor<f32> = k.load_global(&g, [0], [i32::MAX]);
        let y: RegisterTensor<f32> = at(line!(), k.compute(x + 1.0));
        k.store_global(&g, &y, [0]);
    })
    .fails("registers per thread");
}

// ------------------------------------------------------------------------------------------
// set_max_registers: counts, whole warp groups, the block's pool.
// ------------------------------------------------------------------------------------------

#[test]
fn register_counts_are_multiples_of_8_from_24_to_256() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.set_max_registers(16));
    })
    .fails_once("set_max_registers(16): the count must be a multiple of 8 from 24 to 256");
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.set_max_registers(44));
    })
    .fails_once("set_max_registers(44): the count must be a multiple of 8");
    check::<OutF32>(|k, _| {
        k.warps(4);
        at(line!(), k.set_max_registers(264));
    })
    .fails_once("set_max_registers(264)");
}

#[test]
fn registers_move_between_whole_warp_groups_only() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        k.single_warp(4, |k| {
            at(line!(), k.set_max_registers(40));
        });
    })
    .fails_once(
        "set_max_registers runs on whole warp groups: a multiple of 128 threads starting at a \
         thread divisible by 128",
    );
    check::<OutF32>(|k, _| {
        k.warps(8);
        k.thread_group(64, 128, |k| {
            at(line!(), k.set_max_registers(40));
        });
    })
    .fails_once("here the group has 128 threads starting at thread 64");
    // v3's five warps: the producer warp is a warp group of one warp
    check::<OutF32>(|k, _| {
        k.warps(5);
        at(line!(), k.set_max_registers(40));
    })
    .fails(
        "set_max_registers moves registers between whole warp groups, but the block has 5 \
         warps: its last warp group is incomplete",
    );
}

#[test]
fn register_requests_must_fit_the_blocks_pool() {
    // 384 threads start with 168 registers each: 64512 in the pool
    check::<OutF32>(|k, _| {
        k.warps(12);
        k.warp_group(8, |k| k.set_max_registers(40));
        k.thread_group(0, 256, |k| {
            at(line!(), k.set_max_registers(240));
        });
    })
    .fails_once(
        "set_max_registers: the warp groups ask for 66560 registers in all (warp group 0: 240 \
         at ",
    );
    // 232 fits exactly: 2 x 128 x 232 + 128 x 40 = 64512
    check::<OutF32>(|k, _| {
        k.warps(12);
        k.warp_group(8, |k| k.set_max_registers(40));
        k.thread_group(0, 256, |k| k.set_max_registers(232));
    })
    .compiles("40 + 2 x 232 registers per thread of each warp group fill the pool exactly");
    // copies of a group (`thread_groups`) ask for each of their warp groups
    check::<OutF32>(|k, _| {
        k.warps(12);
        k.warp_group(8, |k| k.set_max_registers(24));
        k.thread_groups(0, 128, 2, |k, _| {
            at(line!(), k.set_max_registers(248));
        });
    })
    .fails_once("warp group 1: 248 at ");
    // a warp group that never asks keeps its launch count, and counts
    check::<OutF32>(|k, _| {
        k.warps(12);
        k.thread_group(0, 256, |k| {
            at(line!(), k.set_max_registers(232));
        });
    })
    .fails_once("warp group 2: 168 (its launch count)");
}

#[test]
fn register_moves_are_not_under_divergent_conditions() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        let flag = k.var_i32(0);
        k.single_thread(|k| k.assign(flag, 1));
        k.if_(flag.eq_(1), |k| {
            at(line!(), k.set_max_registers(40));
        });
    })
    .fails("set_max_registers must be executed by every warp of its warp groups at once");
}
