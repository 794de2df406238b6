//! `quant_matmul_ring`: the quantized matmul for many rows of A (prefill, large batches) on
//! the persistent GEMM's ring (`gemm/persistent.rs`, the series' v6): `C = A · dequant(W)ᵀ`
//! as `C = A · Bᵀ` with B the dequantized weights. TMA brings A's tiles as in the GEMM; the
//! producer warp group loads B's from the packed codes instead, dequantizes them in
//! registers (`(q - z) · s` rounded to f16, as every path) and stores them, f16, into the
//! stage the consumers' WGMMAs read. The dequantization thus runs on the producer's warps
//! while the tensor cores work on earlier stages: it is hidden where the producer keeps up.
//!
//! W's rows are B's (`block_n` per tile); each K step of 64 lies in one group (groups of 64
//! or more, or per channel). Rows of A past M arrive as zeros (TMA), rows of W past N load
//! zeros, and C is stored from registers under its bounds: every M and N are taken.

use super::views::{QuantArgs, QuantViews, ARG_NAMES};
use crate::gemm::cooperative::{StageAt, StageLoader};
use crate::gemm::persistent::{MatmulPersistent, Operands};
use crate::gemm::ring_operands::RingOperands;
use crate::gemm::tile_epilogue::{CStores, CastAndStore, STORE_CHUNK};
use half::f16;
use std::marker::PhantomData;
use std::rc::Rc;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// Rows of W dequantized per chunk of a stage: 2048 elements, 16 per producer thread.
const CHUNK_ELEMENTS: i32 = 2048;

/// The kernel for weights of type `T`. Fields are compile-time hyperparameters.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct QuantMatmulRing<T> {
    /// Rows of A per tile (two consumer warp groups of half of them): 128 or 256.
    pub block_m: i32,
    /// Rows of W per tile: 64 to 256, a multiple of 64 (WGMMA's N), the producer's work.
    pub block_n: i32,
    /// Stages of the ring.
    pub stages: i32,
    /// Chunks of a stage (of `CHUNK_ELEMENTS`) whose loads the producer has in flight
    /// together before it converts the first.
    pub in_flight: i32,
    /// Stages of W's packed codes the producer has TMA bring ahead into its own ring of
    /// shared tiles (for signed integers and floats of 2, 4 or 8 bits; 0: the producer's
    /// threads load them).
    pub code_stages: i32,
    /// Elements of a row of W that share a scale (0: the whole row; otherwise 64 or more).
    pub group: i32,
    _t: PhantomData<fn() -> T>,
}

impl<T> QuantMatmulRing<T> {
    /// The kernel for `group` (0: per channel): tiles of 256 rows of A by 128 of W, four
    /// stages (the fewer rows of W, the less the producer dequantizes per product).
    pub fn new(group: i32) -> QuantMatmulRing<T> {
        QuantMatmulRing {
            block_m: 256,
            block_n: 128,
            stages: 4,
            in_flight: 2,
            code_stages: 4,
            group,
            _t: PhantomData,
        }
    }

    /// The same kernel with tiles of `block_m` rows of A by `block_n` of W.
    pub fn with_tiles(mut self, block_m: i32, block_n: i32) -> QuantMatmulRing<T> {
        (self.block_m, self.block_n) = (block_m, block_n);
        self
    }

    /// The GEMM's configuration this kernel runs: one block per tile, cooperative warp
    /// groups, each tile stored from its registers in its own epilogue.
    fn gemm(&self) -> MatmulPersistent {
        MatmulPersistent {
            block_m: self.block_m,
            block_n: self.block_n,
            block_k: 64,
            stages: self.stages,
            group_m: 8,
            persistent: 1,
            tma_store: 0,
            cluster_m: 1,
            cluster_n: 1,
            hilbert: 0,
            ping_pong: 0,
            defer_stores: 0,
        }
    }
}

impl<T> Script for QuantMatmulRing<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    type Args = QuantArgs;

    fn arg_names() -> &'static [&'static str] {
        ARG_NAMES
    }

    fn name(&self) -> String {
        format!("quant_matmul_ring_{}", <T as LowpElement>::DTYPE)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (m, n, kk) = (args.0, args.1, args.2);
        let v = QuantViews::<T>::new(k, args, self.group);
        let gemm = self.gemm();
        let ops = RingOperands {
            ga: v.a,
            // B has no f16 view: the loader reads W's codes; A's view stands in, never read
            gb: v.a,
            a_mn: false,
            b_mn: false,
            batches: None,
            a_loaded: false,
            b_loaded: true,
        };
        let gc = v.c;
        let stage = [gemm.block_n, gemm.block_k];
        let in_flight = self.in_flight.max(1) as usize;
        let loader: StageLoader<f16> = match self.staged_codes(k, &args, kk) {
            Some(codes) => Rc::new(move |k, tile, at| {
                codes.dequantize_into(k, &v, (tile, stage, in_flight), at);
            }),
            None => Rc::new(move |k, tile, at| {
                dequantize_into(k, &v, (tile, stage, in_flight), (at.row, at.k_at));
            }),
        };
        let width = if gemm.group_rows() > 64 {
            STORE_CHUNK / 2
        } else {
            STORE_CHUNK
        };
        let stores = CStores::plan(k, gc, (n, width), (gemm.group_rows(), gemm.block_n, false));
        let epilogue = CastAndStore::new(stores, gemm.block_n, false);
        let operands = Operands::Views {
            ops,
            batch: None,
            b_loader: Some(loader),
        };
        gemm.tiles_on(k, (m, n, kk), operands, &epilogue, None);
    }
}

impl<T: Element + LowpElement> QuantMatmulRing<T> {
    /// The producer's ring of W's codes, where TMA can bring them: signed integers and floats
    /// of 2, 4 or 8 bits (a K step's codes a whole number of 16-byte units), `code_stages` of
    /// 2 or more.
    fn staged_codes(
        &self,
        k: &mut Kernel,
        args: &Handles<QuantArgs>,
        kk: Val,
    ) -> Option<StagedCodes> {
        let bits = <T as LowpElement>::DTYPE.bits();
        let width = kk.as_const()?;
        let step_bytes = 64 * bits as i32 / 8;
        // (unsigned types' zero points take the producer past its registers on this path:
        // their threads load the codes)
        let unsigned = matches!(<T as LowpElement>::DTYPE, tilus::ir::DType::UInt(_));
        if unsigned
            || !matches!(bits, 2 | 4 | 8)
            || self.code_stages < 2
            || width * bits as i64 % 128 != 0
        {
            return None;
        }
        let row_bytes = (width * bits as i64 / 8) as i32;
        let stages = self.code_stages;
        let gw = k
            .name_next("gw_bytes")
            .global_view::<u8>(args.4, [args.1, Val::constant(row_bytes)]);
        let tiles = k
            .name_next("sw")
            .shared_tensor::<u8>([stages, self.block_n, step_bytes]);
        let bars = k.mbarrier().alloc_counts(&vec![1; stages as usize]);
        let k_steps = ((width + 63) / 64) as i32;
        Some(StagedCodes {
            gw,
            tiles,
            bars,
            stages,
            step_bytes,
            k_steps,
        })
    }
}

/// The producer's own ring of W's packed codes: TMA brings the codes of the steps ahead
/// (`stages - 1` of them, within a tile) into shared tiles while the producer dequantizes
/// the current one from shared memory, so its threads never wait for global memory.
struct StagedCodes {
    /// W's codes as bytes, `[n, k · bits / 8]`.
    gw: GlobalTensor<u8>,
    /// `[stages, block_n, step_bytes]`.
    tiles: SharedTensor<u8>,
    /// One per stage, for the copy's bytes.
    bars: Barriers,
    stages: i32,
    /// Bytes of one K step of a row.
    step_bytes: i32,
    /// K steps of a tile.
    k_steps: i32,
}

impl StagedCodes {
    /// The copy of ring step `step`'s codes (K step `k_step` of the tile at row `row`).
    fn issue(&self, k: &mut Kernel, step: Scalar, (row, k_step): (Val, Val)) {
        k.single_thread(|k| {
            let slot = k.let_i32(step % self.stages);
            let tile = self.tiles.at(slot);
            let bar = self.bars.at(slot);
            k.mbarrier().arrive_and_expect_tx(bar, tile.nbytes());
            let col = k.let_i32(k_step * self.step_bytes);
            k.tma().global_to_shared(&self.gw, &tile, (row, col), bar);
        });
    }

    /// Fills `tile` with the stage at `at` dequantized from its codes in shared memory, after
    /// sending the copies ahead: at a tile's first step the first `stages - 1`, then one a
    /// step, `stages - 1` steps ahead.
    fn dequantize_into<T: Element + LowpElement>(
        &self,
        k: &mut Kernel,
        v: &QuantViews<T>,
        (tile, [rows, cols], in_flight): (&SharedTensor<f16>, [i32; 2], usize),
        at: &StageAt,
    ) {
        let ahead = self.stages - 1;
        k.if_(Scalar::from(at.k_step).eq_(0), |k| {
            for d in 0..ahead {
                k.if_(Scalar::from(Val::constant(d)).lt(self.k_steps), |k| {
                    self.issue(k, at.step.clone() + d, (at.row, Val::constant(d)));
                });
            }
        });
        let next = k.let_i32(at.k_step + ahead);
        k.if_(next.lt(self.k_steps), |k| {
            self.issue(k, at.step.clone() + ahead, (at.row, next));
        });
        let slot = k.let_i32(at.step.clone() % self.stages);
        let parity = k.let_i32((at.step.clone() / self.stages) % 2);
        k.mbarrier().wait(self.bars.at(slot), parity);
        let codes = self.tiles.at(slot);
        // whole 1024-byte patterns of the codes' swizzle per chunk
        let chunk = (CHUNK_ELEMENTS / cols)
            .max(1024 / self.step_bytes)
            .clamp(8, rows);
        let firsts: Vec<i32> = (0..rows / chunk).map(|c| c * chunk).collect();
        for group in firsts.chunks(in_flight) {
            for &first in group {
                let bytes = k.load_shared(&codes.rows(first, chunk));
                let q = k.unpack::<T>(&bytes);
                let r = k.let_i32(at.row + first);
                let raw = v.with_codes(k, q, (r, at.k_at), chunk);
                let deq = raw.dequantized(k);
                k.store_shared(&tile.rows(first, chunk), &deq);
            }
        }
        // every thread has read the stage's codes before the copy a pass later overwrites it
        k.sync_group();
    }
}

/// Fills `tile` (`[rows, cols]` f16, one stage of B) with W's rows `row ..` dequantized, columns `k_at .. k_at + block_k`, in chunks
/// of [`CHUNK_ELEMENTS`], `in_flight` chunks' loads in flight before the first is
/// converted. Run by the producer's warp group.
fn dequantize_into<T: Element + LowpElement>(
    k: &mut Kernel,
    v: &QuantViews<T>,
    (tile, [rows, cols], in_flight): (&SharedTensor<f16>, [i32; 2], usize),
    (row, k_at): (Val, Val),
) {
    let chunk = (CHUNK_ELEMENTS / cols).clamp(8, rows);
    let firsts: Vec<i32> = (0..rows / chunk).map(|c| c * chunk).collect();
    for group in firsts.chunks(in_flight) {
        let raws: Vec<_> = group
            .iter()
            .map(|&first| {
                let r = k.let_i32(row + first);
                v.load(k, (r, k_at), [chunk, cols])
            })
            .collect();
        for (&first, raw) in group.iter().zip(&raws) {
            let deq = raw.dequantized(k);
            k.store_shared(&tile.rows(first, chunk), &deq);
        }
    }
}

// by hand: the type marker is named in the kernel's name, not among its hyperparameters
impl<T> std::fmt::Debug for QuantMatmulRing<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuantMatmulRing")
            .field("block_m", &self.block_m)
            .field("block_n", &self.block_n)
            .field("stages", &self.stages)
            .field("in_flight", &self.in_flight)
            .field("code_stages", &self.code_stages)
            .field("group", &self.group)
            .finish()
    }
}
