//! The shared-memory planner keeps *no barrier inside live data*: any two things (shared tiles,
//! mbarrier arrays) whose lifetimes overlap get disjoint bytes; a tile freed while a TMA copy
//! into it has not been waited on stays reserved until the wait; TMA destinations are aligned
//! to their swizzle's pattern.
//!
//! Lifetimes are computed here, independently of the planner, from a block-scope event list
//! (allocate / free / TMA / wait) that also builds the script.

use proptest::prelude::*;
use tilus::ir::Program;
use tilus::layout::Swizzle;
use tilus::prelude::*;

// ------------------------------------------------------------------------------------------
// Block-scope event lists: the script they build and the lifetimes they imply.
// ------------------------------------------------------------------------------------------

/// One block-scope event. Tiles and barrier arrays are numbered in allocation order, which is
/// also their index in `Program::shareds` / `Program::barriers`.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
enum Ev {
    /// `shared_tensor::<f16>([rows, cols])`.
    Alloc { rows: i32, cols: i32 },
    /// `free_shared(tile)`.
    Free(usize),
    /// `mbarrier().alloc([1; n])`.
    Bars(usize),
    /// In `single_thread`: `arrive_and_expect_tx(bar, bytes)` and a TMA copy into `tile`.
    Tma { tile: usize, arr: usize, idx: usize },
    /// In `single_thread`: `wait(bar, 0)`.
    Wait { arr: usize, idx: usize },
}

#[derive(Clone, Debug, Hash)]
struct Events(Vec<Ev>);

impl Script for Events {
    type Args = (Ptr<f16>,);
    fn body(&self, k: &mut Kernel, (a,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view(a, [4096, 4096]);
        let mut tiles: Vec<SharedTensor<f16>> = vec![];
        let mut bars: Vec<Barriers> = vec![];
        for ev in &self.0 {
            match *ev {
                Ev::Alloc { rows, cols } => tiles.push(k.shared_tensor([rows, cols])),
                Ev::Free(t) => k.free_shared(&tiles[t]),
                Ev::Bars(n) => bars.push(match n {
                    1 => k.mbarrier().alloc([1]),
                    2 => k.mbarrier().alloc([1, 1]),
                    _ => k.mbarrier().alloc([1, 1, 1]),
                }),
                Ev::Tma { tile, arr, idx } => {
                    let (s, b) = (tiles[tile], bars[arr][idx]);
                    k.single_thread(|k| {
                        k.mbarrier().arrive_and_expect_tx(b, s.nbytes());
                        k.tma().global_to_shared(&g, &s, [0, 0], b);
                    });
                }
                Ev::Wait { arr, idx } => {
                    let b = bars[arr][idx];
                    k.single_thread(|k| k.mbarrier().wait(b, 0u32));
                }
            }
        }
    }
}

/// Something the planner places.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Tile(usize),
    Bars(usize),
}

/// A placed thing and the event positions it is alive at (inclusive).
#[derive(Clone, Debug)]
struct Item {
    what: What,
    start: usize,
    end: usize,
    offset: u32,
    bytes: u32,
}

/// Lifetimes by the rules the planner promises: a tile lives from its allocation to its
/// free, or to the end; freed while a copy into it is pending (issued, and not yet observed
/// by a wait on the same barrier), it lives until that wait, or to the end if none comes.
/// Barriers live from their allocation to the end.
fn lifetimes(evs: &[Ev], p: &Program) -> Vec<Item> {
    let end = evs.len();
    let mut items = vec![];
    let (mut tile, mut arr) = (0usize, 0usize);
    for (pos, ev) in evs.iter().enumerate() {
        match ev {
            Ev::Alloc { .. } => {
                let t = tile;
                tile += 1;
                let free = evs.iter().position(|e| *e == Ev::Free(t));
                let last = match free {
                    None => end,
                    Some(f) => {
                        let mut last = f;
                        for (q, e) in evs[..f].iter().enumerate() {
                            let Ev::Tma { tile: x, arr, idx } = e else {
                                continue;
                            };
                            if *x != t {
                                continue;
                            }
                            let wait = Ev::Wait {
                                arr: *arr,
                                idx: *idx,
                            };
                            match evs[q..].iter().position(|e| *e == wait) {
                                Some(w) if q + w > f => last = last.max(q + w),
                                Some(_) => {}
                                None => last = end,
                            }
                        }
                        last
                    }
                };
                let d = &p.shareds[t];
                items.push(Item {
                    what: What::Tile(t),
                    start: pos,
                    end: last,
                    offset: d.offset.expect("planned"),
                    bytes: d.nbytes() as u32,
                });
            }
            Ev::Bars(_) => {
                let b = &p.barriers[arr];
                items.push(Item {
                    what: What::Bars(arr),
                    start: pos,
                    end,
                    offset: b.offset.expect("planned"),
                    bytes: 8 * b.counts.len() as u32,
                });
                arr += 1;
            }
            _ => {}
        }
    }
    items
}

/// Items alive at the same time have disjoint bytes; everything lies within `smem_bytes`;
/// barriers are 8-byte aligned; TMA destinations are aligned to their swizzle.
fn check_plan(p: &Program, items: &[Item], tma_dst: &[usize]) -> Result<(), String> {
    for (i, a) in items.iter().enumerate() {
        if a.offset + a.bytes > p.smem_bytes {
            return Err(format!(
                "{a:?} ends past the {} bytes of shared memory",
                p.smem_bytes
            ));
        }
        for b in &items[i + 1..] {
            let together = a.start <= b.end && b.start <= a.end;
            let apart = a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
            if together && !apart {
                return Err(format!(
                    "{:?} and {:?} are alive together but overlap: {a:?} and {b:?}",
                    a.what, b.what
                ));
            }
        }
    }
    for b in &p.barriers {
        if !b.offset.expect("planned").is_multiple_of(8) {
            return Err(format!("barrier array `{}` is not 8-byte aligned", b.name));
        }
    }
    for &t in tma_dst {
        let s = &p.shareds[t];
        let layout = s.layout.as_ref().expect("laid out");
        let row_bytes = *s.shape.last().unwrap() as u32 * s.dtype.nbytes();
        if layout.swizzle != Swizzle::widest_for_row(row_bytes) {
            return Err(format!(
                "TMA tile `{}` has swizzle {:?}",
                s.name, layout.swizzle
            ));
        }
        let align = layout.swizzle.alignment();
        if !s.offset.unwrap().is_multiple_of(align) {
            return Err(format!(
                "TMA tile `{}` at offset {} is not aligned to {align} ({:?})",
                s.name,
                s.offset.unwrap(),
                layout.swizzle
            ));
        }
    }
    Ok(())
}

fn plan(script: &impl Script, consts: &[i64]) -> Program {
    let program = tilus::trace(script, consts).expect("traces");
    match tilus::passes::compile_program(program) {
        Ok((p, _)) => p,
        Err(e) => panic!("the script must compile: {e}"),
    }
}

fn tma_destinations(evs: &[Ev]) -> Vec<usize> {
    let mut out: Vec<usize> = evs
        .iter()
        .filter_map(|e| match e {
            Ev::Tma { tile, .. } => Some(*tile),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Plans an event list and checks every invariant.
#[track_caller]
fn check_events(evs: &[Ev]) -> Program {
    let p = plan(&Events(evs.to_vec()), &[]);
    let items = lifetimes(evs, &p);
    if let Err(e) = check_plan(&p, &items, &tma_destinations(evs)) {
        panic!("{e}\n{}", tilus::ir::print_program(&p));
    }
    p
}

fn range(p: &Program, w: What) -> (u32, u32) {
    match w {
        What::Tile(t) => {
            let s = &p.shareds[t];
            (s.offset.unwrap(), s.offset.unwrap() + s.nbytes() as u32)
        }
        What::Bars(b) => {
            let d = &p.barriers[b];
            let o = d.offset.unwrap();
            (o, o + 8 * d.counts.len() as u32)
        }
    }
}

#[track_caller]
fn assert_disjoint(p: &Program, a: What, b: What) {
    let (ra, rb) = (range(p, a), range(p, b));
    assert!(
        ra.1 <= rb.0 || rb.1 <= ra.0,
        "{a:?} at {ra:?} and {b:?} at {rb:?} overlap\n{}",
        tilus::ir::print_program(p)
    );
}

// ------------------------------------------------------------------------------------------
// Scenarios.
// ------------------------------------------------------------------------------------------

type MatmulArgs = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

/// The seed's v0 with `free_shared(sa); free_shared(sb)` after the main loop, followed by
/// more shared allocations: an epilogue staging tile, a second barrier and a TMA tile.
#[derive(Clone, Debug, Hash)]
struct SeedFreedAfterLoop {
    block_m: i32,
    block_n: i32,
    block_k: i32,
}

impl Script for SeedFreedAfterLoop {
    type Args = MatmulArgs;
    fn body(&self, k: &mut Kernel, (m, n, kk, a, b, c): Handles<Self::Args>) {
        let (bm, bn, bk) = (self.block_m, self.block_n, self.block_k);
        k.blocks([cdiv(m, bm), cdiv(n, bn)]);
        k.warps(4);
        let om = k.let_i32(bm * k.block_idx().x);
        let on = k.let_i32(bn * k.block_idx().y);
        let ga = k.global_view(a, [m, kk]);
        let gb = k.global_view(b, [n, kk]);
        let sa: SharedTensor<f16> = k.shared_tensor([bm, bk]);
        let sb: SharedTensor<f16> = k.shared_tensor([bn, bk]);
        let acc: RegisterTensor<f32> = k.register_tensor([bm, bn], 0.0);
        let bar = k.mbarrier().alloc([1]);
        let phase = k.var_u32(0u32);
        k.for_range(0, kk, bk, |k, ok| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                k.tma().global_to_shared(&ga, &sa, [om, ok], bar[0]);
                k.tma().global_to_shared(&gb, &sb, [on, ok], bar[0]);
                k.mbarrier().wait(bar[0], phase);
            });
            k.sync();
            let ra = k.load_shared(&sa);
            let rb = k.load_shared(&sb);
            k.dot(&ra, &rb.transpose(), &acc, &acc);
            k.sync();
            k.assign(phase, phase ^ 1);
        });
        k.free_shared(&sa);
        k.free_shared(&sb);
        // after the loop: new tiles and a new barrier
        let staging: SharedTensor<f32> = k.shared_tensor([bm, 32]);
        let bar2 = k.mbarrier().alloc([1, 1]);
        let sa2: SharedTensor<f16> = k.shared_tensor([bm, bk]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar2[1], sa2.nbytes());
            k.tma()
                .global_to_shared(&ga, &sa2, [om, Val::constant(0)], bar2[1]);
            k.mbarrier().wait(bar2[1], 0u32);
        });
        k.sync();
        let h: RegisterTensor<f16> = k.cast(&acc);
        let gc = k.global_view(c, [m, n]);
        k.store_global(&gc, &h, [om, on]);
        k.free_shared(&staging);
        k.free_shared(&sa2);
    }
}

#[test]
fn the_seed_scenario_keeps_barriers_out_of_live_tiles() {
    for (bm, bn, bk) in [(64, 128, 64), (128, 128, 32), (64, 128, 16), (64, 64, 64)] {
        let s = SeedFreedAfterLoop {
            block_m: bm,
            block_n: bn,
            block_k: bk,
        };
        let p = plan(&s, &[4096, 4096]);
        let (sa, sb, staging, sa2) = (What::Tile(0), What::Tile(1), What::Tile(2), What::Tile(3));
        let (bar, bar2) = (What::Bars(0), What::Bars(1));
        // alive together before the frees
        assert_disjoint(&p, sa, sb);
        assert_disjoint(&p, sa, bar);
        assert_disjoint(&p, sb, bar);
        // alive together after them
        for x in [staging, bar2, sa2] {
            assert_disjoint(&p, x, bar);
        }
        assert_disjoint(&p, staging, bar2);
        assert_disjoint(&p, staging, sa2);
        assert_disjoint(&p, bar2, sa2);
        // TMA tiles are aligned to their swizzle, barriers to 8 bytes
        for t in [0, 1, 3] {
            let d = &p.shareds[t];
            let sw = d.layout.as_ref().unwrap().swizzle;
            assert_eq!(sw, Swizzle::widest_for_row(bk as u32 * 2));
            assert_eq!(d.offset.unwrap() % sw.alignment(), 0, "{}", d.name);
        }
        if bk == 64 {
            assert_eq!(p.shareds[0].offset.unwrap() % 1024, 0);
        }
        for b in &p.barriers {
            assert_eq!(b.offset.unwrap() % 8, 0);
        }
        let top = (0..4)
            .map(|t| range(&p, What::Tile(t)).1)
            .chain((0..2).map(|b| range(&p, What::Bars(b)).1))
            .max()
            .unwrap();
        assert!(top <= p.smem_bytes, "{top} > {}", p.smem_bytes);
        // the frees make room: the tiles after the loop reuse bytes of sa and sb
        let (a0, b1) = (range(&p, sa), range(&p, sb));
        let reused = [staging, sa2].iter().any(|&x| {
            let r = range(&p, x);
            r.0 < a0.1.max(b1.1) && a0.0.min(b1.0) < r.1
        });
        assert!(reused, "{}", tilus::ir::print_program(&p));
    }
}

/// The case the planner exists for: free the tile, allocate, and only then wait.
#[test]
fn a_tile_freed_before_its_copy_is_waited_on_stays_reserved_until_the_wait() {
    let evs = vec![
        Ev::Alloc { rows: 64, cols: 64 },
        Ev::Bars(1),
        Ev::Tma {
            tile: 0,
            arr: 0,
            idx: 0,
        },
        Ev::Free(0),
        Ev::Alloc { rows: 64, cols: 64 }, // 1: must not land on tile 0
        Ev::Bars(1),                      // must not land on tile 0
        Ev::Wait { arr: 0, idx: 0 },
        Ev::Alloc { rows: 64, cols: 64 }, // 2: may reuse tile 0
    ];
    let p = check_events(&evs);
    assert_disjoint(&p, What::Tile(1), What::Tile(0));
    assert_disjoint(&p, What::Bars(1), What::Tile(0));
    // reserved *until* the wait, not forever
    assert_eq!(
        p.shareds[2].offset,
        p.shareds[0].offset,
        "{}",
        tilus::ir::print_program(&p)
    );
}

#[test]
fn a_tile_whose_copy_was_waited_on_is_released_at_its_free() {
    let evs = vec![
        Ev::Alloc { rows: 64, cols: 64 },
        Ev::Bars(1),
        Ev::Tma {
            tile: 0,
            arr: 0,
            idx: 0,
        },
        Ev::Wait { arr: 0, idx: 0 },
        Ev::Free(0),
        Ev::Alloc { rows: 64, cols: 64 },
    ];
    let p = check_events(&evs);
    assert_eq!(p.shareds[1].offset, p.shareds[0].offset);
}

/// Two copies into one tile on two barriers: both must be observed before it is released.
#[test]
fn a_tile_with_two_pending_copies_waits_for_both() {
    let evs = vec![
        Ev::Bars(1),
        Ev::Bars(1),
        Ev::Alloc { rows: 64, cols: 64 },
        Ev::Tma {
            tile: 0,
            arr: 0,
            idx: 0,
        },
        Ev::Tma {
            tile: 0,
            arr: 1,
            idx: 0,
        },
        Ev::Free(0),
        Ev::Wait { arr: 0, idx: 0 },
        Ev::Alloc { rows: 64, cols: 64 }, // the copy on the second barrier may still land
        Ev::Wait { arr: 1, idx: 0 },
    ];
    let p = check_events(&evs);
    assert_disjoint(&p, What::Tile(1), What::Tile(0));
}

/// A wait on barrier 0 of an array says nothing about a copy tracked by barrier 1.
#[test]
fn a_wait_on_another_barrier_of_the_same_array_does_not_release_the_tile() {
    let evs = vec![
        Ev::Bars(2),
        Ev::Alloc { rows: 64, cols: 64 },
        Ev::Tma {
            tile: 0,
            arr: 0,
            idx: 1,
        },
        Ev::Free(0),
        Ev::Wait { arr: 0, idx: 0 },
        Ev::Alloc { rows: 64, cols: 64 }, // the copy on barrier 1 may still land in tile 0
        Ev::Wait { arr: 0, idx: 1 },
    ];
    let p = check_events(&evs);
    assert_disjoint(&p, What::Tile(1), What::Tile(0));
}

/// A freed tile whose copy is never waited on stays reserved to the end of the kernel.
#[test]
fn a_tile_whose_copy_is_never_waited_on_is_never_released() {
    let evs = vec![
        Ev::Bars(1),
        Ev::Alloc { rows: 32, cols: 64 },
        Ev::Tma {
            tile: 0,
            arr: 0,
            idx: 0,
        },
        Ev::Free(0),
        Ev::Alloc { rows: 32, cols: 64 },
        Ev::Bars(2),
        Ev::Alloc { rows: 16, cols: 32 },
    ];
    let p = check_events(&evs);
    for later in [What::Tile(1), What::Bars(1), What::Tile(2)] {
        assert_disjoint(&p, later, What::Tile(0));
    }
}

/// Barriers allocated while a tile is alive never land inside it, whatever the order.
#[test]
fn barriers_never_land_in_live_tiles() {
    for order in 0..4 {
        let mut evs = vec![
            Ev::Alloc { rows: 8, cols: 16 },
            Ev::Alloc { rows: 64, cols: 64 },
        ];
        match order {
            0 => evs.extend([Ev::Free(0), Ev::Bars(3)]),
            1 => evs.extend([Ev::Bars(3), Ev::Free(0)]),
            2 => evs.insert(0, Ev::Bars(3)),
            _ => evs.extend([Ev::Free(1), Ev::Bars(1), Ev::Free(0), Ev::Bars(2)]),
        }
        evs.push(Ev::Alloc {
            rows: 16,
            cols: 128,
        });
        check_events(&evs);
    }
}

/// A tile allocated in every iteration of a loop (and never freed) is alive in the next
/// iteration, when the loop's other tile is allocated again.
#[test]
fn a_tile_allocated_in_a_loop_without_a_free_stays_apart_from_the_loops_other_tiles() {
    #[derive(Clone, Debug, Hash)]
    struct InLoop;
    impl Script for InLoop {
        type Args = (Ptr<f16>,);
        fn body(&self, k: &mut Kernel, (a,): Handles<Self::Args>) {
            k.blocks([1]);
            k.warps(4);
            let g = k.global_view(a, [4096, 4096]);
            let bar = k.mbarrier().alloc([1]);
            k.for_range(0, 4, 1, |k, _| {
                let x: SharedTensor<f16> = k.shared_tensor([64, 64]);
                k.single_thread(|k| {
                    k.mbarrier().arrive_and_expect_tx(bar[0], x.nbytes());
                    k.tma().global_to_shared(&g, &x, [0, 0], bar[0]);
                    k.mbarrier().wait(bar[0], 0u32);
                });
                k.free_shared(&x);
                let _y: SharedTensor<f16> = k.shared_tensor([64, 64]);
            });
        }
    }
    let p = plan(&InLoop, &[]);
    assert_disjoint(&p, What::Tile(0), What::Tile(1));
    assert_disjoint(&p, What::Tile(0), What::Bars(0));
    assert_disjoint(&p, What::Tile(1), What::Bars(0));
}

/// The two branches of an `if` never run together: tiles allocated and freed in each may
/// share bytes; a tile one branch keeps alive past its end may not.
#[test]
fn the_branches_of_an_if_share_bytes_only_for_tiles_they_free() {
    #[derive(Clone, Debug, Hash)]
    struct Branches {
        free_first: bool,
    }
    impl Script for Branches {
        type Args = (Ptr<f16>,);
        fn body(&self, k: &mut Kernel, _: Handles<Self::Args>) {
            k.blocks([2]);
            k.warps(4);
            let free_first = self.free_first;
            k.if_else(
                k.block_idx().x.eq_(0),
                |k| {
                    let x: SharedTensor<f16> = k.shared_tensor([64, 64]);
                    if free_first {
                        k.free_shared(&x);
                    }
                },
                |k| {
                    let y: SharedTensor<f16> = k.shared_tensor([64, 64]);
                    k.free_shared(&y);
                },
            );
        }
    }
    let p = plan(&Branches { free_first: true }, &[]);
    assert_eq!(range(&p, What::Tile(0)), range(&p, What::Tile(1)));
    assert_eq!(p.smem_bytes, 64 * 64 * 2);
    let p = plan(&Branches { free_first: false }, &[]);
    assert_disjoint(&p, What::Tile(0), What::Tile(1));
}

/// A tile freed in its branch while a TMA copy into it is in flight stays reserved until the
/// wait after the `if`: what is in flight after an `if` is what either branch leaves in
/// flight, so neither the other branch's tile nor a later one takes its bytes.
#[test]
fn a_copy_in_flight_past_its_branch_keeps_its_tile() {
    #[derive(Clone, Debug, Hash)]
    struct CopyInBranch;
    impl Script for CopyInBranch {
        type Args = (Ptr<f16>,);
        fn body(&self, k: &mut Kernel, (a,): Handles<Self::Args>) {
            k.blocks([2]);
            k.warps(4);
            let g = k.global_view(a, [4096, 4096]);
            let bar = k.mbarrier().alloc([1]);
            k.if_else(
                k.block_idx().x.eq_(0),
                |k| {
                    let x: SharedTensor<f16> = k.shared_tensor([64, 64]);
                    k.single_thread(|k| {
                        k.mbarrier().arrive_and_expect_tx(bar[0], x.nbytes());
                        k.tma().global_to_shared(&g, &x, [0, 0], bar[0]);
                    });
                    k.free_shared(&x);
                },
                |k| {
                    let y: SharedTensor<f16> = k.shared_tensor([64, 64]);
                    k.single_thread(|k| {
                        k.mbarrier().arrive_and_expect_tx(bar[0], y.nbytes());
                        k.tma().global_to_shared(&g, &y, [64, 0], bar[0]);
                    });
                    k.free_shared(&y);
                },
            );
            let z: SharedTensor<f16> = k.shared_tensor([64, 64]);
            k.single_thread(|k| k.mbarrier().wait(bar[0], 0u32));
            k.free_shared(&z);
        }
    }
    let p = plan(&CopyInBranch, &[]);
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        assert_disjoint(&p, What::Tile(a), What::Tile(b));
    }
    assert_disjoint(&p, What::Tile(0), What::Bars(0));
}

/// A `while` body is a loop: a tile it allocates without a free is alive in the next
/// iteration, when the body's other tile is allocated again.
#[test]
fn a_tile_allocated_in_a_while_loop_without_a_free_stays_apart_from_its_other_tiles() {
    #[derive(Clone, Debug, Hash)]
    struct InWhile;
    impl Script for InWhile {
        type Args = (Ptr<f16>,);
        fn body(&self, k: &mut Kernel, _: Handles<Self::Args>) {
            k.blocks([1]);
            k.warps(4);
            let i = k.var_i32(0);
            k.while_(i.lt(4), |k| {
                let x: SharedTensor<f16> = k.shared_tensor([64, 64]);
                k.free_shared(&x);
                let _y: SharedTensor<f16> = k.shared_tensor([64, 64]);
                k.assign(i, i + 1);
            });
        }
    }
    let p = plan(&InWhile, &[]);
    assert_disjoint(&p, What::Tile(0), What::Tile(1));
}

/// The pipelined pattern: the copy for the next iteration is issued at the end of the body
/// and waited on at the start of the next; the tile is freed after the loop, with the last
/// prefetch still in flight.
#[test]
fn a_prefetched_tile_freed_after_the_loop_stays_reserved() {
    #[derive(Clone, Debug, Hash)]
    struct Prefetch;
    impl Script for Prefetch {
        type Args = (Ptr<f16>,);
        fn body(&self, k: &mut Kernel, (a,): Handles<Self::Args>) {
            k.blocks([1]);
            k.warps(4);
            let g = k.global_view(a, [4096, 4096]);
            let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
            let bar = k.mbarrier().alloc([1]);
            let phase = k.var_u32(0u32);
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
                k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
            });
            k.for_range(0, 4096, 64, |k, ok| {
                k.single_thread(|k| k.mbarrier().wait(bar[0], phase));
                k.sync();
                let _r = k.load_shared(&s);
                k.sync();
                k.assign(phase, phase ^ 1);
                k.single_thread(|k| {
                    k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
                    k.tma()
                        .global_to_shared(&g, &s, [Scalar::from(0), ok + 64], bar[0]);
                });
            });
            k.free_shared(&s);
            let _t: SharedTensor<f16> = k.shared_tensor([64, 64]);
        }
    }
    let p = plan(&Prefetch, &[]);
    assert_disjoint(&p, What::Tile(1), What::Tile(0));
    assert_disjoint(&p, What::Bars(0), What::Tile(0));
    assert_disjoint(&p, What::Bars(0), What::Tile(1));
}

// ------------------------------------------------------------------------------------------
// Random block-scope programs.
// ------------------------------------------------------------------------------------------

/// An event before resolution: indices are taken modulo what exists at that point, so that
/// every generated list (and every shrunk one) builds a valid script.
#[derive(Clone, Debug)]
enum Raw {
    Alloc(i32, i32),
    Free(usize),
    Bars(usize),
    Tma(usize, usize, usize),
    Wait(usize, usize),
}

fn raw(max_bars: usize) -> impl Strategy<Value = Raw> {
    prop_oneof![
        3 => (
            prop::sample::select(vec![8, 16, 32, 64]),
            prop::sample::select(vec![16, 32, 64, 128]),
        )
            .prop_map(|(r, c)| Raw::Alloc(r, c)),
        2 => (0usize..64).prop_map(Raw::Free),
        1 => (1..=max_bars).prop_map(Raw::Bars),
        3 => (0usize..64, 0usize..64, 0usize..3).prop_map(|(t, a, i)| Raw::Tma(t, a, i)),
        2 => (0usize..64, 0usize..3).prop_map(|(a, i)| Raw::Wait(a, i)),
    ]
}

/// At most 12 tiles (16 KB each at most) and 4 barrier arrays: always under 227 KB. With
/// `one_bar_per_tile`, every copy into a tile uses the barrier of its first copy.
fn resolve(raw: &[Raw], one_bar_per_tile: bool) -> Vec<Ev> {
    let mut evs = vec![];
    let (mut tiles, mut live, mut bars) = (0usize, vec![], vec![]);
    let mut bar_of: std::collections::HashMap<usize, (usize, usize)> = Default::default();
    for r in raw {
        match *r {
            Raw::Alloc(rows, cols) if tiles < 12 => {
                live.push(tiles);
                tiles += 1;
                evs.push(Ev::Alloc { rows, cols });
            }
            Raw::Free(i) if !live.is_empty() => {
                let t = live.remove(i % live.len());
                evs.push(Ev::Free(t));
            }
            Raw::Bars(n) if bars.len() < 4 => {
                bars.push(n);
                evs.push(Ev::Bars(n));
            }
            Raw::Tma(t, a, i) if !live.is_empty() && !bars.is_empty() => {
                let tile = live[t % live.len()];
                let arr = a % bars.len();
                let mut bar = (arr, i % bars[arr]);
                if one_bar_per_tile {
                    bar = *bar_of.entry(tile).or_insert(bar);
                }
                evs.push(Ev::Tma {
                    tile,
                    arr: bar.0,
                    idx: bar.1,
                });
            }
            Raw::Wait(a, i) if !bars.is_empty() => {
                let arr = a % bars.len();
                evs.push(Ev::Wait {
                    arr,
                    idx: i % bars[arr],
                });
            }
            _ => {}
        }
    }
    evs
}

fn check_random(raw: &[Raw], one_bar_per_tile: bool) -> Result<(), TestCaseError> {
    let evs = resolve(raw, one_bar_per_tile);
    let p = plan(&Events(evs.clone()), &[]);
    let items = lifetimes(&evs, &p);
    check_plan(&p, &items, &tma_destinations(&evs))
        .map_err(|e| TestCaseError::fail(format!("{e}\nevents: {evs:?}")))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Arrays of one barrier, and every copy into a tile tracked by the same barrier: the
    /// cases the planner's wait matching (by array, releasing a tile at its first observed
    /// copy) gets right.
    #[test]
    fn random_programs_with_one_barrier_per_tile_keep_the_invariants(
        raw in prop::collection::vec(raw(1), 1..40)
    ) {
        check_random(&raw, true)?;
    }

    /// Copies into a tile on several barriers, and arrays of up to three barriers: a tile
    /// freed with copies pending is released only when every one of them has been waited on,
    /// each on its own barrier.
    #[test]
    fn random_programs_keep_the_invariants(raw in prop::collection::vec(raw(3), 1..40)) {
        check_random(&raw, false)?;
    }
}

#[test]
fn a_freed_tma_store_source_stays_alive_until_the_wait_that_covers_it() {
    use crate::common::scripts::{Epilogue, EpilogueBug};
    let bug = EpilogueBug::FreeBeforeWait;
    let p = plan(&Epilogue { bug }, &[]);
    let range = |name: &str| {
        let s = p.shareds.iter().find(|s| s.name == name).unwrap();
        let o = s.offset.unwrap() as u64;
        (o, o + s.nbytes())
    };
    let (a, b) = (range("s_out"), range("other"));
    assert!(
        a.1 <= b.0 || b.1 <= a.0,
        "s_out {a:?} and other {b:?} share bytes"
    );
}
