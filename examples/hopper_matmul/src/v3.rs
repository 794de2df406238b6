//! v3: warp specialization. One producer warp only issues the TMA copies into the ring; the
//! consumer warp group (threads 0-127) only runs the WGMMA. They meet on two barriers per
//! stage: *full* (one arrival plus the copies' bytes: the stage has landed) and *empty* (128
//! arrivals, once the WGMMA that read the stage is complete: it may be refilled). Nobody waits
//! at a block barrier inside the loop, so copies and products overlap without a `sync()`.
//!
//! `C = A · Bᵀ` with A `[M, K]`, B `[N, K]` (both K-major), C `[M, N]`; f16 in, f32
//! accumulation, f16 out. Step `i` uses stage `i % stages`; the consumers wait on `full` for
//! phase `(i / stages) % 2`, the producer on `empty` for the phase before it,
//! `(i / stages + 1) % 2`, which a fresh barrier counts as complete: the first trip round the
//! ring does not wait.
//!
//! The consumers keep one product in flight (`in_flight = 1`): after issuing step `i`'s
//! WGMMA they wait until only it is still running, which means step `i - 1`'s is complete,
//! and free that one's stage. The loop is unrolled by the ring's depth.

use tilus::prelude::*;

/// The v3 kernel. Fields are compile-time hyperparameters: the block tile and the ring's depth.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
// moving registers leaves every thread 128 at launch (two blocks per multiprocessor), which
// the compiler needs for each instruction: a 256-column WGMMA's accumulator alone takes 128
#[tune(block_m, block_n, register_split = [
    (64, 128, 0), (64, 256, 0), (128, 128, 0), (128, 256, 0), (64, 128, 1), (128, 128, 1)
])]
#[tune(block_k = [32, 64])]
#[tune(stages = [2, 3, 4])]
#[tune(in_flight = [0, 1])]
pub struct MatmulSpecialized {
    /// Rows of C per block (a multiple of 64: one WGMMA covers 64 rows).
    pub block_m: i32,
    /// Columns of C per block (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (32 or 64 halves: rows of 64 or 128 bytes, one swizzle).
    pub block_k: i32,
    /// Tiles in the ring.
    pub stages: i32,
    /// WGMMA groups the consumers keep running while they wait for the next stage: 1 (a
    /// stage is freed once the product after it is issued and the one reading it is
    /// complete), or 0 (wait for each product before freeing its stage). Both are in the
    /// space: with a shallow ring of wide tiles (64 × 256, two stages) waiting is faster,
    /// with a deeper one overlapping is.
    pub in_flight: i32,
    /// 0: five warps (the consumer warp group and one producer warp), registers as the
    /// compiler allots them. 1: a whole producer warp group (eight warps), room for two blocks
    /// per multiprocessor, and registers moved with `set_max_registers`: the producers keep
    /// [`PRODUCER_REGISTERS`], the consumers take the rest of the block's pool.
    pub register_split: i32,
}

/// Registers per producer thread when v3 moves registers: enough to issue copies.
pub const PRODUCER_REGISTERS: u32 = 40;

/// Blocks per multiprocessor v3 leaves room for when it moves registers.
pub const SPLIT_BLOCKS_PER_SM: u32 = 2;

/// Registers per consumer thread when v3 moves registers: the block's pool (256 threads at
/// the launch count of two blocks per multiprocessor) less the producers' part.
pub fn consumer_registers() -> u32 {
    let pool = 65536 / SPLIT_BLOCKS_PER_SM;
    (pool / 128 - PRODUCER_REGISTERS) / 8 * 8
}

/// How a block of one consumer warp group and a producer is laid out (v3 and v4): with
/// `split`, a producer warp group that gives registers back, consumers that take them and
/// room for two blocks per multiprocessor; without, a producer warp (five warps).
#[derive(Clone, Copy, Debug)]
pub struct Roles {
    /// Whether registers move from the producer to the consumers.
    pub split: bool,
}

impl Roles {
    /// The block's warps (and occupancy, when registers move).
    pub fn block(self, k: &mut Kernel) {
        if self.split {
            // the consumer warp group, then a producer warp group of which one thread works
            k.warps(8);
            k.min_blocks_per_sm(SPLIT_BLOCKS_PER_SM);
        } else {
            k.warps(5); // the consumer warp group, then the producer warp
        }
    }

    /// The producer's threads, from thread 128.
    pub fn producer_threads(self) -> u32 {
        if self.split {
            128
        } else {
            32
        }
    }

    /// First thing in the producer's group: give registers back.
    pub fn enter_producer(self, k: &mut Kernel) {
        if self.split {
            k.set_max_registers(PRODUCER_REGISTERS);
        }
    }

    /// First thing in the consumers' group: take them.
    pub fn enter_consumers(self, k: &mut Kernel) {
        if self.split {
            k.set_max_registers(consumer_registers());
        }
    }
}

impl Default for MatmulSpecialized {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulSpecialized {
            block_m: 128,
            block_n: 128,
            block_k: 64,
            stages: 3,
            in_flight: 1,
            register_split: 0,
        }
    }
}

#[tilus::script]
impl Script for MatmulSpecialized {
    // m_size: runtime; n_size, k_size: compile-time constants (a new value specializes).
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

    fn body(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr): Handles<Self::Args>,
    ) {
        k.blocks([cdiv(m_size, self.block_m), cdiv(n_size, self.block_n)]);
        let roles = Roles {
            split: self.register_split != 0,
        };
        roles.block(k);

        let offset_m = k.let_i32(self.block_m * k.block_idx().x);
        let offset_n = k.let_i32(self.block_n * k.block_idx().y);
        let k_tiles = k.let_i32(cdiv(k_size, self.block_k));

        let ga = k.global_view::<f16>(a_ptr, [m_size, k_size]);
        let gb = k.global_view::<f16>(b_ptr, [n_size, k_size]);
        let sa = k.shared_tensor::<f16>([self.stages, self.block_m, self.block_k]);
        let sb = k.shared_tensor::<f16>([self.stages, self.block_n, self.block_k]);
        let stages = self.stages.max(0) as usize;
        let full = k.mbarrier().alloc_counts(&vec![1; stages]);
        let empty = k.mbarrier().alloc_counts(&vec![128; stages]);

        // the producer: one thread of warp 4 issues every copy, as soon as its stage is empty
        k.thread_group(128, roles.producer_threads(), |k| {
            roles.enter_producer(k);
            k.single_thread(|k| {
                k.for_range(0, k_tiles, 1, |k, i| {
                    let stage = k.let_i32(i % self.stages);
                    let free = k.let_i32((i / self.stages + 1) % 2);
                    k.mbarrier().wait(empty.at(stage), free);
                    let (a, b, bar) = (sa.at(stage), sb.at(stage), full.at(stage));
                    k.mbarrier()
                        .arrive_and_expect_tx(bar, a.nbytes() + b.nbytes());
                    let offset_k = k.let_i32(i * self.block_k);
                    k.tma().global_to_shared(&ga, &a, [offset_m, offset_k], bar);
                    k.tma().global_to_shared(&gb, &b, [offset_n, offset_k], bar);
                });
            });
        });

        // the consumers: the warp group multiplies each stage once it is full, keeping one
        // product in flight; once the product before it is complete, that one's stage is
        // freed. Unrolled by the ring's depth, each copy of the body sees its stage as a
        // constant.
        k.thread_group(0, 128, |k| {
            roles.enter_consumers(k);
            let acc = k.register_tensor::<f32>([self.block_m, self.block_n], 0.0);
            k.for_range_unrolled(0, k_tiles, 1, self.stages.max(1) as u32, |k, i| {
                let stage = k.let_i32(i % self.stages);
                let phase = k.let_i32(i / self.stages % 2);
                k.mbarrier().wait(full.at(stage), phase);
                k.wgmma().fence();
                k.wgmma()
                    .mma(&sa.at(stage), &sb.at(stage).transpose(), &acc);
                k.wgmma().commit_group();
                if self.in_flight > 0 {
                    k.wgmma().wait_group(1);
                    k.if_(i.gt(0), |k| {
                        let previous = k.let_i32((i + self.stages - 1) % self.stages);
                        k.mbarrier().arrive(empty.at(previous));
                    });
                } else {
                    k.wgmma().wait_group(0);
                    k.mbarrier().arrive(empty.at(stage));
                }
            });
            k.wgmma().wait_group(0);
            let casted_acc = k.cast::<f16>(&acc);
            let gc = k.global_view::<f16>(c_ptr, [m_size, n_size]);
            k.store_global(&gc, &casted_acc, [offset_m, offset_n]);
        });
    }
}
