//! The machinery of stream-K that the persistent kernel runs on its last rounds: each
//! walker's share of the K steps ([`Part`], [`Shares`]), the workspace and flags
//! ([`StreamK`]) and the finishing of a shared tile (see the module above).

use crate::gemm::tile_epilogue::{columns, CastAndStore, TileAt, TileEpilogue, STORE_CHUNK};
use tilus::lang::Element;
use tilus::prelude::*;

/// Registers per producer thread in stream-K: the fewest `setmaxnreg` allows.
pub const STREAM_K_PRODUCER_REGISTERS: u32 = 24;

/// Registers per consumer thread in stream-K: the rest of the pool, `(3 · 168 - 24) / 2`.
pub const STREAM_K_CONSUMER_REGISTERS: u32 = 240;

/// The K steps of one tile a walker takes: all of them, or its share of a shared tile.
pub struct Part {
    /// The first K step.
    pub first: Val,
    /// How many.
    pub steps: Val,
    /// For a shared tile: the K steps that end the share (`first + steps`, the tile's
    /// `k_tiles` when this block finishes the tile).
    pub share: Option<Share>,
}

/// Where a block's share of a shared tile lies in the tile's K steps.
#[derive(Clone, Copy)]
pub struct Share {
    first: Val,
    end: Val,
    k_tiles: Val,
    /// The shared tile's place among the shared tiles: its partial's slot and flag.
    tile: Val,
}

impl Part {
    /// A whole tile of `k_tiles` steps.
    pub fn whole(k_tiles: Val) -> Part {
        Part {
            first: Val::constant(0),
            steps: k_tiles,
            share: None,
        }
    }
}

/// How the units (tiles, or pairs' two tiles) are shared out: the first `whole_units` whole,
/// the rest by K steps, `[lo, hi)` of them this block's (a pair's blocks alike).
pub struct Shares {
    /// Units walked whole, in v6's rounds.
    pub whole_units: Val,
    lo: Val,
    hi: Val,
}

impl Shares {
    /// The shares of `units` units of `k_tiles` K steps among `workers` walkers (blocks, or
    /// pairs) of `blocks` blocks, `worker` this block's: the last two rounds' units shared
    /// where the units are not whole rounds, there are two rounds at least and the workspace
    /// has a slot for every block; none otherwise.
    pub fn new(
        k: &mut Kernel,
        (units, workers, k_tiles): (Val, Val, Val),
        (worker, blocks): (Val, Val),
    ) -> Shares {
        let rounds = k.name_next("whole_rounds").let_i32(units / workers);
        let rest = k.name_next("rest_units").let_i32(units - rounds * workers);
        let shared = k.name_next("shared_units").var_i32(0);
        let fits = blocks.le(WORKSPACE_BLOCKS);
        k.if_(rest.gt(0).and(rounds.gt(0)).and(fits), |k| {
            k.assign(shared, rest + workers);
        });
        let whole_units = k.name_next("whole_units").let_i32(units - shared);
        let steps = k.name_next("shared_steps").let_i32(shared * k_tiles);
        let lo = k.name_next("share_lo").let_i32(worker * steps / workers);
        let hi = k
            .name_next("share_hi")
            .let_i32((worker + 1) * steps / workers);
        Shares {
            whole_units,
            lo,
            hi,
        }
    }

    /// Runs `body(k, unit, part)` on this block's shared tiles, from the last to the first.
    pub fn walk(&self, k: &mut Kernel, k_tiles: Val, body: &dyn Fn(&mut Kernel, Val, &Part)) {
        let (lo, hi) = (self.lo, self.hi);
        k.if_(hi.gt(lo), |k| {
            let last = k.name_next("last_shared").let_i32((hi - 1) / k_tiles);
            let first = k.name_next("first_shared").let_i32(lo / k_tiles);
            k.name_next("j");
            k.for_range(0, last - first + 1, 1, |k, j| {
                let t = k.name_next("shared_tile").let_i32(last - j);
                let start = k.name_next("tile_start").let_i32(t * k_tiles);
                let from = k.name_next("share_from").var_i32(0);
                k.if_(lo.gt(start), |k| k.assign(from, lo - start));
                let end = k.name_next("share_end").var_i32(k_tiles);
                k.if_(hi.lt(start + k_tiles), |k| k.assign(end, hi - start));
                let steps = k.name_next("share_steps").let_i32(end - from);
                let unit = k.name_next("shared_unit").let_i32(self.whole_units + t);
                let part = Part {
                    first: from,
                    steps,
                    share: Some(Share {
                        first: from,
                        end,
                        k_tiles,
                        tile: t,
                    }),
                };
                body(k, unit, &part);
            });
        });
    }
}

/// The most blocks the workspace has slots for (Hopper parts have at most 132
/// multiprocessors); a grid of more walks every tile whole, as v6 does.
pub const WORKSPACE_BLOCKS: i32 = 144;

/// Slots of the workspace: the shared tiles (fewer than two rounds' worth, so fewer than two
/// per block) each have one.
const SLOTS: i32 = 2 * WORKSPACE_BLOCKS;

/// Elements of the f32 workspace: a slot of a `block_m × block_n` tile for each shared tile.
pub fn workspace_len(block_m: usize, block_n: usize) -> usize {
    SLOTS as usize * block_m * block_n
}

/// Flags: one per consumer warp group of each slot.
pub fn flags_len() -> usize {
    2 * SLOTS as usize
}

/// Stream-K's workspace and flags, and the epilogue that finishes tiles.
pub struct StreamK<T: Element> {
    /// v6's cast-and-store, which also adds partials.
    pub epilogue: CastAndStore<T>,
    w_ptr: PtrVal<f32>,
    flags_ptr: PtrVal<i32>,
    block_m: i32,
    block_n: i32,
    group_rows: i32,
    per_unit: i32,
}

/// [`StreamK`]'s views, once the grid is known.
pub struct BoundStreamK<'a, T: Element> {
    sk: &'a StreamK<T>,
    gw: GlobalTensor<f32>,
    gflags: GlobalTensor<i32>,
}

impl<T: Element> StreamK<T> {
    /// The workspace and flags of the tiles of a kernel with `block_m × block_n` tiles,
    /// `group_rows` rows per consumer warp group and `per_unit` blocks per walker (2 in pairs),
    /// finished by `epilogue`.
    pub fn new(
        (block_m, block_n, group_rows, per_unit): (i32, i32, i32, i32),
        epilogue: CastAndStore<T>,
        (w_ptr, flags_ptr): (PtrVal<f32>, PtrVal<i32>),
    ) -> StreamK<T> {
        StreamK {
            epilogue,
            w_ptr,
            flags_ptr,
            block_m,
            block_n,
            group_rows,
            per_unit,
        }
    }

    /// The views of the workspace and the flags.
    pub fn bind(&self, k: &mut Kernel) -> BoundStreamK<'_, T> {
        // a tile too large for any block is the verifier's to reject: no overflow on the way
        let rows = SLOTS.saturating_mul(self.block_m);
        let gw = k
            .name_next("gw")
            .global_view::<f32>(self.w_ptr, [rows, self.block_n]);
        let gflags = k
            .name_next("gflags")
            .global_view::<i32>(self.flags_ptr, [SLOTS * 2]);
        BoundStreamK {
            sk: self,
            gw,
            gflags,
        }
    }
}

impl<T: Element> BoundStreamK<'_, T> {
    /// Consumer warp group `g` of a block of rank `rank` in its pair (0 alone), its share of
    /// the tile at `at` multiplied into `acc`: the finisher of the tile adds the partial the
    /// block before it left (when that block took the tile's first steps) and stores C; any
    /// other block leaves its partial in the tile's slot and raises its flag.
    pub fn settle(
        &self,
        k: &mut Kernel,
        g: usize,
        acc: &RegisterTensor<f32>,
        at: &TileAt,
        share: Share,
        rank: Scalar,
    ) {
        let sk = self.sk;
        // the shared tile's slot (a pair's blocks side by side) and this warp group's rows
        // and flag in it: they change from tile to tile, so the compiler keeps no address
        // of them alive across the main loop
        let slot = k.name_next("slot").let_i32(share.tile * sk.per_unit + rank);
        let row = k
            .name_next("slot_row")
            .let_i32(slot * sk.block_m + sk.group_rows * g as i32);
        let flag = k.name_next("flag").let_i32(slot * 2 + g as i32);
        k.if_else(
            share.end.eq_(share.k_tiles),
            |k| {
                k.if_else(
                    share.first.gt(0),
                    |k| {
                        // the block before took the tile's first steps: its partial
                        k.single_thread(|k| {
                            let seen = k.name_next("seen").var_i32(0);
                            k.while_(seen.eq_(0), |k| {
                                let old = k.atomic_cas_scalar(&self.gflags, [flag], 1, 0);
                                k.assign(seen, old);
                            });
                        });
                        k.fence_gpu();
                        k.sync_group();
                        let rows = sk.group_rows;
                        sk.epilogue.tile_plus(k, g, acc, at, &|k, start, width| {
                            k.name_next("partial").load_global(
                                &self.gw,
                                [row, Val::constant(start)],
                                [rows, width],
                            )
                        });
                    },
                    |k| sk.epilogue.tile(k, g, acc, at),
                );
            },
            |k| {
                // column by column, as the epilogue reads the accumulator
                let width = STORE_CHUNK.min(sk.block_n);
                for j in 0..sk.block_n / width {
                    k.name_next("acc_part");
                    let part = columns(k, (acc, sk.block_n), j * width, width);
                    k.store_global(&self.gw, &part, [row, Val::constant(j * width)]);
                }
                k.fence_gpu();
                k.sync_group();
                k.single_thread(|k| {
                    k.atomic_exchange_scalar(&self.gflags, [flag], 1);
                });
            },
        );
    }
}
