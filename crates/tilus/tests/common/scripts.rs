//! Scripts that more than one binary runs: the compile tests (`compiler`), the interpreter
//! (`interp`) and the GPU (`runtime`) check the same kernels. Diagnostics of these scripts
//! point at this file ([`FILE`]).

use half::f16;
use tilus::prelude::*;

use super::mark;

pub mod convert;
pub mod copy_async;
pub mod global;
pub mod lowp;
pub mod masks;
pub mod orders;
pub mod widths;
pub mod windows;
pub mod workspace;

/// This file, as diagnostics name it.
pub const FILE: &str = file!();

/// One thread copies each view's `[0, 0]` box into its tile with TMA, all on one new barrier
/// that expects their bytes; then every thread waits for them.
pub fn copy_in(k: &mut Kernel, copies: &[(&GlobalTensor<f16>, &SharedTensor<f16>)]) {
    let bar = k.mbarrier().alloc([1]);
    let bytes = copies.iter().map(|(_, s)| s.nbytes()).sum::<i32>();
    k.single_thread(|k| {
        k.mbarrier().arrive_and_expect_tx(bar[0], bytes);
        for (g, s) in copies {
            k.tma().global_to_shared(g, s, [0, 0], bar[0]);
        }
    });
    k.mbarrier().wait(bar[0], 0u32);
}

/// `(m_size, n_size, k_size, a, b, c)` of the seed's matmul.
pub type MatmulArgs = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

/// The seed's v0 body with 64x128x64 tiles (`c = a bᵀ`), and a switch for each bug the
/// interpreter tests plant. Marked calls: `sa`, `sb`, `bar`, `tma_a`, `load_a`.
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct SeedMatmul {
    /// No `sync` after the single thread's wait.
    pub no_first_sync: bool,
    /// The phase is never flipped.
    pub no_phase_flip: bool,
}

impl Script for SeedMatmul {
    type Args = MatmulArgs;
    fn body(&self, k: &mut Kernel, (m, n, kk, a, b, c): Handles<MatmulArgs>) {
        k.blocks([cdiv(m, 64), cdiv(n, 128)]);
        k.warps(4);
        let om = k.let_i32(64 * k.block_idx().x);
        let on = k.let_i32(128 * k.block_idx().y);
        let ga = k.global_view(a, [m, kk]);
        let gb = k.global_view(b, [n, kk]);
        #[rustfmt::skip]
        let sa: SharedTensor<f16> = mark("sa", line!(), k.shared_tensor([64, 64]));
        #[rustfmt::skip]
        let sb: SharedTensor<f16> = mark("sb", line!(), k.shared_tensor([128, 64]));
        let acc: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
        #[rustfmt::skip]
        let bar = mark("bar", line!(), k.mbarrier().alloc([1]));
        let phase = k.var_u32(0u32);
        k.for_range(0, kk, 64, |k, ok| {
            k.single_thread(|k| {
                k.mbarrier()
                    .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                #[rustfmt::skip]
                mark("tma_a", line!(), k.tma().global_to_shared(&ga, &sa, [om, ok], bar[0]));
                k.tma().global_to_shared(&gb, &sb, [on, ok], bar[0]);
                k.mbarrier().wait(bar[0], phase);
            });
            if !self.no_first_sync {
                k.sync();
            }
            #[rustfmt::skip]
            let ra = mark("load_a", line!(), k.load_shared(&sa));
            let rb = k.load_shared(&sb);
            k.dot(&ra, &rb.transpose(), &acc, &acc);
            k.sync();
            if !self.no_phase_flip {
                k.assign(phase, phase ^ 1);
            }
        });
        let h: RegisterTensor<f16> = k.cast(&acc);
        let gc = k.global_view(c, [m, n]);
        k.store_global(&gc, &h, [om, on]);
    }
}

/// Copies an `[m, n]` f32 matrix through shared memory (TMA of f32 tiles, with or without a
/// swizzle) and registers (the generic shared load), one tile per block.
#[derive(Clone, Debug, Hash)]
pub struct TileCopy {
    pub rows: i32,
    pub cols: i32,
}

impl TileCopy {
    /// `(m, n, rows, cols)`: matrices that are and are not multiples of the tile.
    pub const ODD_SHAPES: [(usize, usize, i32, i32); 4] = [
        (100, 72, 16, 32),
        (33, 40, 32, 16),
        (64, 64, 64, 64),
        (20, 100, 8, 48),
    ];

    /// The source matrix of an `[m, n]` copy.
    pub fn input(m: usize, n: usize) -> Vec<f32> {
        (0..m * n).map(|i| (i as f32).sin()).collect()
    }
}

impl Script for TileCopy {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = k.global_view::<f32>(src, [m, n]);
        let s = k.shared_tensor::<f32>([self.rows, self.cols]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [om, on], bar[0]);
        });
        // every thread may wait on the phase itself
        k.mbarrier().wait(bar[0], 0u32);
        let r = k.load_shared(&s);
        let out = k.global_view::<f32>(dst, [m, n]);
        k.store_global(&out, &r, [om, on]);
    }
}

/// Nested thread groups: warp group 0 and warp group 1 each fill their own register tile and
/// store it to their own row of a `[2, 256]` f32 output (1.0 and 2.0); inside, one warp of
/// group 0 and one thread of group 1 arrive on a barrier of count 33, and the whole block
/// waits for the phase.
#[derive(Clone, Debug, Hash)]
pub struct Groups;

impl Script for Groups {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(8);
        let g = k.global_view::<f32>(out, [2, 256]);
        // 32 arrivals from a warp of group 0 + 1 from a single thread of group 1
        let bar = k.mbarrier().alloc([33]);
        for wg in 0..2u32 {
            k.warp_group(4 * wg, |k| {
                let t = k.register_tensor::<f32>([1, 256], (wg + 1) as f64);
                k.store_global(&g, &t, [wg as i32, 0]);
                if wg == 0 {
                    k.single_warp(2, |k| k.mbarrier().arrive(bar[0]));
                } else {
                    k.thread_group(64, 32, |k| k.single_thread(|k| k.mbarrier().arrive(bar[0])));
                }
            });
        }
        k.mbarrier().wait(bar[0], 0u32);
    }
}

/// Lane 0 of each of 4 warps arrives 32 times in one instruction on a barrier of 128; the
/// block waits for the phase, then stores 3.0 to a `[128]` f32 output.
#[derive(Clone, Debug, Hash)]
pub struct WarpArrivals;

impl Script for WarpArrivals {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let bar = k.mbarrier().alloc([128]);
        for w in 0..4 {
            k.single_warp(w, |k| {
                k.single_thread(|k| k.mbarrier().arrive_count(bar[0], 32));
            });
        }
        k.mbarrier().wait(bar[0], 0u32);
        let g = k.global_view::<f32>(out, [128]);
        let t = k.register_tensor::<f32>([128], 3.0);
        k.store_global(&g, &t, [0]);
    }
}

/// Block `b` of `BLOCKS` divides `base + b · stride` by `cdiv(d, 3)` (a `let` of an
/// argument: the host sees through it) with `fast_divisor` and writes quotient and remainder
/// to `out[2b]`, `out[2b + 1]`. Arguments `(d, base, stride, out)`.
#[derive(Clone, Debug, Hash)]
pub struct FastDivide;

impl FastDivide {
    /// Blocks (dividends) per launch.
    pub const BLOCKS: i32 = 64;
    /// `(d, base, stride)` cases from small divisors to ones near 2³¹, dividends to 2³¹ − 1.
    pub const CASES: [(i32, i32, i32); 7] = [
        (1, 0, 1),
        (3, 5, 1),
        (20, 1000, 977),
        (384, 0, 12_345_679),
        (196_611, 7, 33_554_393),
        (i32::MAX - 2, i32::MAX - 64 * 30_000_000, 30_000_000),
        (1_000_000, i32::MAX - 63, 1),
    ];

    /// What the kernel must write for a case.
    pub fn reference((d, base, stride): (i32, i32, i32)) -> Vec<i32> {
        let divisor = (d as i64 + 2) / 3;
        (0..Self::BLOCKS as i64)
            .flat_map(|b| {
                let n = base as i64 + b * stride as i64;
                [(n / divisor) as i32, (n % divisor) as i32]
            })
            .collect()
    }
}

impl Script for FastDivide {
    type Args = (i32, i32, i32, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (d, base, stride, out): Handles<Self::Args>) {
        k.blocks([Self::BLOCKS]);
        k.warps(1);
        let divisor = k.let_i32(cdiv(d, 3));
        let fd = k.fast_divisor(divisor);
        let g = k.global_view::<i32>(out, [Self::BLOCKS * 2]);
        let b = k.let_i32(k.block_idx().x);
        let (q, r) = fd.divmod(k, base + b * stride);
        k.single_thread(|k| {
            k.atomic_exchange_scalar(&g, [b * 2], q);
            k.atomic_exchange_scalar(&g, [b * 2 + 1], r);
        });
    }
}

/// Two warp groups synchronizing on their own barriers: warp group 0 meets at `sync_group`
/// and then arrives on an mbarrier that warp group 1 waits for before its own `sync_group`.
/// A block-wide barrier in place of either would deadlock. Each group then stores its
/// number (1.0, 2.0) to its 128 elements of a `[256]` f32 output.
#[derive(Clone, Debug, Hash)]
pub struct GroupSyncs;

impl Script for GroupSyncs {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(8);
        let bar = k.mbarrier().alloc([128]);
        let g = k.global_view::<f32>(out, [256]);
        k.warp_group(0, |k| {
            k.sync_group();
            k.mbarrier().arrive(bar[0]);
            let t = k.register_tensor::<f32>([128], 1.0);
            k.store_global(&g, &t, [0]);
        });
        k.warp_group(4, |k| {
            k.mbarrier().wait(bar[0], 0u32);
            k.sync_group();
            let t = k.register_tensor::<f32>([128], 2.0);
            k.store_global(&g, &t, [128]);
        });
    }
}

/// Clusters of two blocks: each block meets its partner at `cluster_sync`, then writes
/// `out[block] = rank · 1000 + block`. Arguments `(blocks, out)`. With `lone_sync`, only the
/// cluster's rank 0 goes to the barrier (a bug: its partner finishes without it). Marked
/// call: `lone_sync`.
#[derive(Clone, Debug, Hash)]
pub struct ClusterPairs {
    pub lone_sync: bool,
}

impl ClusterPairs {
    /// What the kernel must write for `blocks` blocks.
    pub fn reference(blocks: usize) -> Vec<i32> {
        (0..blocks).map(|b| ((b % 2) * 1000 + b) as i32).collect()
    }
}

impl Script for ClusterPairs {
    type Args = (i32, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (blocks, out): Handles<Self::Args>) {
        k.cluster_blocks([2]);
        k.blocks([blocks]);
        k.warps(2);
        let rank = k.cluster_rank();
        let rank = k.let_i32(rank);
        if self.lone_sync {
            k.if_(rank.eq_(0), |k| {
                mark("lone_sync", line!(), k.cluster_sync())
            });
        } else {
            k.cluster_sync();
        }
        let g = k.global_view::<i32>(out, [blocks]);
        let b = k.let_i32(k.block_idx().x);
        k.single_thread(|k| {
            k.atomic_exchange_scalar(&g, [b], rank * 1000 + b);
        });
        if !self.lone_sync {
            k.cluster_sync();
        }
    }
}

/// Clusters of two blocks signalling each other: after `cluster_sync`, every thread arrives
/// on its partner's barrier (counting the partner's 64 threads), then waits for its own to
/// complete, and writes `out[block] = partner · 1000 + block`. Arguments `(blocks, out)`.
/// `to`: the rank arrived on, as an offset from the partner (0: the partner; 2: out of the
/// cluster, a fault).
#[derive(Clone, Debug, Hash)]
pub struct ClusterSignals {
    pub to: i32,
    /// Arrive with `arrive_remote_after_reads` (no cluster-scope release) instead.
    pub after_reads: bool,
    /// Meet after allocating the barrier with `cluster_sync_relaxed()` instead.
    pub relaxed_start: bool,
    /// Meet again before the end (`cluster_sync()`).
    pub end_sync: bool,
}

impl Default for ClusterSignals {
    /// Arrivals on the partner with release, both meetings ordered, each block waiting.
    fn default() -> Self {
        ClusterSignals {
            to: 0,
            after_reads: false,
            relaxed_start: false,
            end_sync: true,
        }
    }
}

impl Script for ClusterSignals {
    type Args = (i32, PtrMut<i32>);
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (blocks, out): Handles<Self::Args>) {
        k.cluster_blocks([2]);
        k.blocks([blocks]);
        k.warps(2);
        let bar = k.mbarrier().alloc([64]);
        if self.relaxed_start {
            k.cluster_sync_relaxed();
        } else {
            k.cluster_sync();
        }
        let rank = k.cluster_rank();
        let partner = k.let_i32(Scalar::from(1) - rank);
        let to = partner + self.to;
        if self.after_reads {
            mark("arrive_remote", line!(), k.mbarrier().arrive_remote_after_reads(bar[0], to));
        } else {
            mark("arrive_remote", line!(), k.mbarrier().arrive_remote(bar[0], to));
        }
        k.mbarrier().wait(bar[0], 0u32);
        let g = k.global_view::<i32>(out, [blocks]);
        let b = k.let_i32(k.block_idx().x);
        k.single_thread(|k| {
            k.atomic_exchange_scalar(&g, [b], partner * 1000 + b);
        });
        if self.end_sync {
            // no block leaves while its partner may still arrive on its barrier
            k.cluster_sync();
        }
    }
}

/// Clusters of two where rank 0 arrives once on rank 1's barrier and finishes without
/// waiting for anything; rank 1 waits for that arrival, then, a few block barriers later,
/// answers with one on rank 0's barrier (marked `answer`), which has finished by then: no
/// meeting at the end covers it.
/// Arguments `(blocks, out)`; `out[block] = 1` where the block got that far.
#[derive(Clone, Debug, Hash)]
pub struct ClusterLateAnswer;

impl Script for ClusterLateAnswer {
    type Args = (i32, PtrMut<i32>);
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (blocks, out): Handles<Self::Args>) {
        k.cluster_blocks([2]);
        k.blocks([blocks]);
        k.warps(1);
        let bar = k.mbarrier().alloc([1]);
        k.cluster_sync_relaxed();
        let rank = k.cluster_rank();
        let rank = k.let_i32(rank);
        let g = k.global_view::<i32>(out, [blocks]);
        let b = k.let_i32(k.block_idx().x);
        k.single_thread(|k| {
            k.atomic_exchange_scalar(&g, [b], 1);
        });
        k.if_else(
            rank.eq_(0),
            |k| k.single_thread(|k| k.mbarrier().arrive_remote(bar[0], 1)),
            |k| {
                k.mbarrier().wait(bar[0], 0u32);
                // a while later (the interpreter runs the blocks a step each in turn)
                for _ in 0..8 {
                    k.sync();
                }
                k.single_thread(|k| {
                    mark("answer", line!(), k.mbarrier().arrive_remote(bar[0], 0))
                });
            },
        );
    }
}

/// Multicast in clusters of two: a `[64, 32]` f32 tile is shared by both blocks, each loading
/// one half (rows `32 · rank ..`) into both blocks' staged tile `[2, 32, 32]` with one
/// multicast copy; each block declares the whole tile's bytes, waits, and writes the tile to
/// its own 64 rows of `out`. Arguments `(blocks, src, out)`; `mask` is the copies' mask
/// (0b11: both blocks; 0b100: a rank the cluster does not have). Marked call: `multicast`.
#[derive(Clone, Debug, Hash)]
pub struct ClusterMulticast {
    pub mask: i32,
}

impl Script for ClusterMulticast {
    type Args = (i32, Ptr<f32>, PtrMut<f32>);
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (blocks, src, out): Handles<Self::Args>) {
        k.cluster_blocks([2]);
        k.blocks([blocks]);
        k.warps(4);
        let g = k.global_view::<f32>(src, [64, 32]);
        let o = k.global_view::<f32>(out, [blocks * 64, Scalar::from(32)]);
        let s = k.shared_tensor::<f32>([2, 32, 32]);
        let bar = k.mbarrier().alloc([1]);
        // the partner's barrier is allocated before any copy completes on it
        k.cluster_sync();
        let rank = k.cluster_rank();
        let rank = k.let_i32(rank);
        let mask = self.mask;
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], 2 * s.at(Val::constant(0)).nbytes());
            mark("multicast", line!(), k.tma().global_to_shared_multicast(&g, &s.at(rank), [rank * 32, Scalar::from(0)], bar[0], mask));
        });
        k.mbarrier().wait(bar[0], 0u32);
        let b = k.let_i32(k.block_idx().x);
        for half in 0..2 {
            let t = k.load_shared(&s.at(Val::constant(half)));
            k.store_global(&o, &t, [b * 64 + half * 32, Scalar::from(0)]);
        }
        // no block leaves while its partner's copy may still write its tile
        k.cluster_sync();
    }
}

/// A persistent grid over `items` work items: block `b` of the `blocks` launched takes items
/// `b, b + blocks, ..` and writes `out[item] = b · 1000 + blocks` (so a test sees who ran
/// each item and how many blocks there were). Arguments `(items, out)`.
#[derive(Clone, Debug, Hash)]
pub struct PersistentItems;

impl PersistentItems {
    /// What the kernel must write on a device of `multiprocessors`.
    pub fn reference(items: usize, multiprocessors: usize) -> Vec<i32> {
        // the fewest blocks that take as many rounds as one per multiprocessor
        let rounds = items.div_ceil(multiprocessors).max(1);
        let blocks = items.div_ceil(rounds).max(1);
        (0..items)
            .map(|i| ((i % blocks) * 1000 + blocks) as i32)
            .collect()
    }
}

impl Script for PersistentItems {
    type Args = (i32, PtrMut<i32>);
    fn body(&self, k: &mut Kernel, (items, out): Handles<Self::Args>) {
        let work = k.let_i32(items);
        let blocks = k.persistent_blocks(work);
        k.warps(1);
        let g = k.global_view::<i32>(out, [items]);
        let b = k.let_i32(k.block_idx().x);
        k.for_range(b, work, blocks, |k, item| {
            k.single_thread(|k| {
                k.atomic_exchange_scalar(&g, [item], b * 1000 + blocks);
            });
        });
    }
}

/// Registers moved between warp groups as a warp-specialized kernel does: of 12 warps,
/// warp group 2 gives registers back (40 each) and stores 3.0 to elements 256-383 of a
/// `[384]` f32 output; warp groups 0-1 take them (232 each: the whole pool) and store 2.0 to
/// elements 0-255.
#[derive(Clone, Debug, Hash)]
pub struct RegisterSplit;

impl Script for RegisterSplit {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(12);
        let g = k.global_view::<f32>(out, [384]);
        k.warp_group(8, |k| {
            k.set_max_registers(40);
            let t = k.register_tensor::<f32>([128], 3.0);
            k.store_global(&g, &t, [256]);
        });
        k.thread_group(0, 256, |k| {
            k.set_max_registers(232);
            let t = k.register_tensor::<f32>([256], 2.0);
            k.store_global(&g, &t, [0]);
        });
    }
}

/// `C[64, 64] = ones[64, 64] · Bᵀ` with wgmma: A is written by threads (`store_shared`), B
/// arrives by TMA. Ordinary shared-memory stores must be published to the async proxy
/// (`fence_proxy_async`) before the wgmma reads them.
#[derive(Clone, Debug, Hash)]
pub struct OnesTimesB {
    /// 0: no fence; 1: every writer fences; 2: only threads that did not write fence.
    pub fence: u8,
}

impl OnesTimesB {
    /// The B operand.
    pub fn input() -> Vec<f16> {
        (0..64 * 64)
            .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 256.0))
            .collect()
    }

    /// The product for `b`: row sums of B, for every row of C.
    pub fn expected(b: &[f16]) -> Vec<f32> {
        let mut c = vec![0f32; 64 * 64];
        for i in 0..64 {
            for j in 0..64 {
                c[i * 64 + j] = (0..64).map(|x| b[j * 64 + x].to_f32()).sum();
            }
        }
        c
    }
}

impl Script for OnesTimesB {
    type Args = (Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (b_ptr, c_ptr): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(4);
        let gb = k.global_view::<f16>(b_ptr, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], sb.nbytes());
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        if self.fence == 2 {
            // the first half of the block writes A; the other half fences (wrongly)
            k.thread_group(0, 64, |k| {
                let ones = k.register_tensor::<f16>([64, 64], 1.0);
                k.store_shared(&sa, &ones);
            });
            k.thread_group(64, 64, |k| k.fence_proxy_async());
        } else {
            let ones = k.register_tensor::<f16>([64, 64], 1.0);
            k.store_shared(&sa, &ones);
            if self.fence == 1 {
                k.fence_proxy_async();
            }
        }
        k.sync();
        k.mbarrier().wait(bar[0], 0u32);
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let gc = k.global_view::<f32>(c_ptr, [64, 64]);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

/// `C[m, n] = A · Bᵀ` for one block with wgmma: A and B in shared memory (or A in
/// registers), one K step of `k` (16, 32 or 64), C of element type `C` (f32, or f16 for f16
/// accumulation).
#[derive(Clone, Debug)]
pub struct OneTile<C = f32> {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub a_in_registers: bool,
    pub warps: u32,
    pub b_transposed: bool,
    /// Stores the accumulator before `wait_group` too.
    pub read_early: bool,
    pub acc: std::marker::PhantomData<C>,
}

// by hand: the element marker carries no data (and f16 has no Hash)
impl<C> std::hash::Hash for OneTile<C> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (
            self.m,
            self.n,
            self.k,
            self.a_in_registers,
            self.warps,
            self.b_transposed,
            self.read_early,
        )
            .hash(h);
        std::any::type_name::<C>().hash(h);
    }
}

impl<C> OneTile<C> {
    /// An `[m, n]` tile with one K step of `k`: both operands in shared memory, 4 warps.
    pub fn new(m: i32, n: i32, k: i32) -> OneTile<C> {
        OneTile {
            m,
            n,
            k,
            a_in_registers: false,
            warps: 4,
            b_transposed: true,
            read_early: false,
            acc: std::marker::PhantomData,
        }
    }
}

impl<C: tilus::lang::Element + std::fmt::Debug> Script for OneTile<C> {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<C>);
    fn body(&self, k: &mut Kernel, (a_ptr, b_ptr, c_ptr): Handles<Self::Args>) {
        k.blocks([1]);
        let s = self;
        k.warps(s.warps);
        let ga = k.global_view::<f16>(a_ptr, [s.m, s.k]);
        let gb = k.global_view::<f16>(b_ptr, [s.n, s.k]);
        let sa = k.shared_tensor::<f16>([s.m, s.k]);
        let sb = k.shared_tensor::<f16>([s.n, s.k]);
        // f32 accumulation, or f16 accumulation when C is f16
        let acc = k.register_tensor::<C>([s.m, s.n], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [0, 0], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let b = if s.b_transposed { sb.transpose() } else { sb };
        k.wgmma().fence();
        if s.a_in_registers {
            let a = k.load_shared(&sa);
            k.wgmma().mma(&a, &b, &acc);
        } else {
            k.wgmma().mma(&sa, &b, &acc);
        }
        k.wgmma().commit_group();
        let gc = k.global_view::<C>(c_ptr, [s.m, s.n]);
        if s.read_early {
            k.store_global(&gc, &acc, [0, 0]);
        }
        k.wgmma().wait_group(0);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

/// What [`Epilogue`] gets wrong (or, for the last two, does differently and correctly).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EpilogueBug {
    /// Nothing.
    #[default]
    None,
    /// No `fence_proxy_async` between the ordinary stores and the TMA store.
    NoFence,
    /// The source is written again before the wait that covers the store.
    WriteBeforeWait,
    /// No wait at all.
    NoWait,
    /// The store runs in the whole block instead of one thread.
    WholeBlock,
    /// `wait_group_read(0)`, then the source is reused (correct).
    ReuseAfterReadWait,
    /// The source is freed before the wait and another tile allocated (correct: the planner
    /// keeps the source alive until the wait).
    FreeBeforeWait,
}

/// Columns of [`Epilogue`]'s matrices.
pub const EPILOGUE_COLS: usize = 64;

/// The TMA-store epilogue of the later matmuls: `dst = src` for `[rows, 64]` f16, one
/// `[32, 64]` tile per block and 4 warps, through a TMA load, registers (`load_shared`),
/// ordinary stores into a second tile, `fence_proxy_async` + `sync`, and a TMA store
/// (`shared_to_global`, `commit_group`, `wait_group`). Marked calls: `store_shared`, `store`,
/// and `rewrite` for [`EpilogueBug::WriteBeforeWait`].
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct Epilogue {
    /// The bug to plant.
    pub bug: EpilogueBug,
}

impl Script for Epilogue {
    type Args = (i32, Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["rows", "src", "dst"]
    }
    #[rustfmt::skip]
    fn body(&self, k: &mut Kernel, (rows, src, dst): Handles<Self::Args>) {
        use EpilogueBug as Bug;
        const TILE: i32 = 32;
        let bug = self.bug;
        k.blocks([cdiv(rows, TILE)]);
        k.warps(4);
        let bx = k.block_idx().x;
        let om = k.name_next("om").let_i32(TILE * bx);
        let cols = Val::constant(EPILOGUE_COLS as i32);
        let g_src = k.name_next("g_src").global_view::<f16>(src, [rows, cols]);
        let g_dst = k.name_next("g_dst").global_view::<f16>(dst, [rows, cols]);
        let s_in = k.name_next("s_in").shared_tensor::<f16>([TILE, EPILOGUE_COLS as i32]);
        let s_out = k.name_next("s_out").shared_tensor::<f16>([TILE, EPILOGUE_COLS as i32]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s_in.nbytes());
            k.tma().global_to_shared(&g_src, &s_in, (om, 0), bar[0]);
            k.mbarrier().wait(bar[0], 0u32);
        });
        k.sync();
        let r = k.load_shared(&s_in);
        mark("store_shared", line!(), k.store_shared(&s_out, &r));
        if bug != Bug::NoFence {
            k.fence_proxy_async();
        }
        k.sync();
        if bug == Bug::WholeBlock {
            mark("store", line!(), k.tma().shared_to_global(&s_out, &g_dst, (om, 0)));
            return;
        }
        k.single_thread(|k| {
            mark("store", line!(), k.tma().shared_to_global(&s_out, &g_dst, (om, 0)));
            k.tma().commit_group();
            if bug == Bug::ReuseAfterReadWait {
                k.tma().wait_group_read(0);
            }
        });
        match bug {
            Bug::WriteBeforeWait => {
                mark("rewrite", line!(), k.store_shared(&s_out, &r));
            }
            Bug::ReuseAfterReadWait => {
                // the source may be reused once its reads are done
                k.sync();
                k.store_shared(&s_out, &r);
            }
            Bug::FreeBeforeWait => {
                k.free_shared(&s_out);
                let other = k.name_next("other").shared_tensor::<f16>([TILE, EPILOGUE_COLS as i32]);
                k.store_shared(&other, &r);
            }
            Bug::None | Bug::NoFence | Bug::NoWait | Bug::WholeBlock => {}
        }
        if bug != Bug::NoWait {
            k.single_thread(|k| k.tma().wait_group(0));
        }
    }
}

/// Deterministic f16 inputs for [`Epilogue`] (no NaN, so NaN in an output is an unwritten
/// element).
pub fn epilogue_inputs(rows: usize) -> Vec<f16> {
    (0..rows * EPILOGUE_COLS)
        .map(|i| f16::from_f32(((i * 37 % 1013) as f32 - 500.0) / 64.0))
        .collect()
}

/// `dst[0..n) = 1` with 32 elements per block, and a loop up to the constant `k` by 64 that
/// only counts: the smallest script whose 32-bit arithmetic the index ranges check (`n + 31`
/// in the grid, the loop's counter after its last iteration).
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct CountingFill;

impl Script for CountingFill {
    type Args = (i32, Const<i32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["n", "k", "dst"]
    }
    fn body(&self, k: &mut Kernel, (n, kk, dst): Handles<Self::Args>) {
        k.blocks([cdiv(n, 32)]);
        k.warps(1);
        let bx = k.block_idx().x;
        let offset = k.let_i32(32 * bx);
        let t = k.register_tensor::<f32>([32], 1.0);
        let g = k.global_view::<f32>(dst, [n]);
        k.for_range(0, kk, 64, |_, _| {});
        k.store_global(&g, &t, (offset,));
    }
}

/// Conditionals and `while` loops, per block of a grid of [`Branches::BLOCKS`], into a
/// `[BLOCKS, 64]` f32 output (zeros elsewhere; [`Branches::expected`] computes it on the
/// host). Row `b`, columns 0..32: 1 in block 0, 2 in odd blocks, 3 in the others (nested
/// `if_else` on the block index). Column `32 + steps`: 4, where `steps` counts the doublings
/// of `p = 1` until `p >= 5 (b + 1)` (a `while` loop with two mutable variables and a `sync`
/// in its body). Column `48 + total % 16`: 5, where `total` sums, over `j in 0..b + 4`, `j`
/// for even `j` and 1 for odd `j > 4` (branches in a loop); warp 1 alone stores it, inside
/// an `if`.
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct Branches;

impl Branches {
    /// Blocks of the grid (rows of the output).
    pub const BLOCKS: usize = 4;
    /// Columns of the output.
    pub const COLS: usize = 64;

    /// The output, computed on the host.
    pub fn expected() -> Vec<f32> {
        let mut out = vec![0.0f32; Self::BLOCKS * Self::COLS];
        for b in 0..Self::BLOCKS {
            let row = &mut out[b * Self::COLS..(b + 1) * Self::COLS];
            let v = if b == 0 {
                1.0
            } else if b % 2 == 1 {
                2.0
            } else {
                3.0
            };
            row[..32].fill(v);
            let (mut p, mut steps) = (1, 0);
            while p < 5 * (b + 1) {
                p *= 2;
                steps += 1;
            }
            row[32 + steps] = 4.0;
            let mut total = 0;
            for j in 0..b + 4 {
                if j % 2 == 0 {
                    total += j;
                } else if j > 4 {
                    total += 1;
                }
            }
            if total > 0 {
                row[48 + total % 16] = 5.0;
            }
        }
        out
    }
}

impl Script for Branches {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([Self::BLOCKS as i32]);
        k.warps(2);
        let bidx = k.block_idx().x;
        let bx = k.name_next("bx").let_i32(bidx);
        let g = k.global_view::<f32>(out, [Self::BLOCKS as i32, Self::COLS as i32]);
        let fill = |k: &mut Kernel, v: f64| {
            let t = k.register_tensor::<f32>([1, 32], v);
            k.store_global(&g, &t, (bx, 0));
        };
        k.if_else(
            bx.eq_(0),
            |k| fill(k, 1.0),
            |k| k.if_else((bx % 2).eq_(1), |k| fill(k, 2.0), |k| fill(k, 3.0)),
        );
        let p = k.name_next("p").var_i32(1);
        let steps = k.name_next("steps").var_i32(0);
        k.while_(p.lt((bx + 1) * 5), |k| {
            k.assign(p, p * 2);
            k.assign(steps, steps + 1);
            k.sync();
        });
        let four = k.register_tensor::<f32>([1, 1], 4.0);
        k.store_global(&g, &four, (bx, steps + 32));
        let total = k.name_next("total").var_i32(0);
        k.for_range(0, bx + 4, 1, |k, j| {
            k.if_else(
                (j % 2).eq_(0),
                |k| k.assign(total, total + j),
                |k| k.if_(j.gt(4), |k| k.assign(total, total + 1)),
            );
        });
        k.if_(total.gt(0), |k| {
            k.single_warp(1, |k| {
                let five = k.register_tensor::<f32>([1, 1], 5.0);
                k.store_global(&g, &five, (bx, total % 16 + 48));
            });
        });
    }
}

/// Printing from a kernel: every block copies a `[4, 20]` f32 tile into shared memory (TMA)
/// and registers; block 1 alone prints a line with values, the shared tile and its transpose,
/// the register tile, a transposed f16 copy, a bf16, an i32 and a boolean tile computed from
/// it, its row sums, a 3-D tile, and a line from warp 3 (between block barriers, so that the
/// lines keep their order on the GPU too). The interpreter and the GPU print the same text.
#[derive(Clone, Debug, Hash)]
pub struct Printing;

impl Printing {
    /// The `[4, 20]` input: fractions of both signs, NaN, infinities, a negative zero, tiny
    /// and large magnitudes.
    pub fn input() -> Vec<f32> {
        let mut v: Vec<f32> = (0..80)
            .map(|i| ((i * 37) % 101 - 50) as f32 / 8.0)
            .collect();
        v[3] = f32::NAN;
        v[10] = f32::INFINITY;
        v[17] = -0.0;
        v[25] = 1e-7;
        v[42] = 3e9;
        v[61] = -123_456.79;
        v[70] = f32::NEG_INFINITY;
        v
    }
}

impl Script for Printing {
    type Args = (i32, Ptr<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["n", "src"]
    }
    fn body(&self, k: &mut Kernel, (n, src): Handles<Self::Args>) {
        k.blocks([2]);
        k.warps(4);
        let bidx = k.block_idx().x;
        let b = k.name_next("b").let_i32(bidx);
        let g = k.global_view::<f32>(src, [4, 20]);
        let s = k.name_next("s").shared_tensor::<f32>([4, 20]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let x = k.name_next("x").load_shared(&s);
        k.if_(b.eq_(1), |k| {
            k.printf(
                "printing {{n = {}}} in block {}: n > 3 is {}, 100%",
                (n, b, n.gt(3)),
            );
            let third = k.let_f32(n.cast::<f32>() / 3.0);
            k.printf("n / 3 = {}, -n / 3 = {}", (third, -third));
            k.print_tensor(&s);
            k.print_tensor(&s.transpose());
            k.print_tensor(&x);
            k.single_warp(3, |k| k.printf("warp 3 after x", ()));
            let h: RegisterTensor<f16> = k.name_next("h").cast(&x);
            k.print_tensor(&h.transpose());
            let bf: RegisterTensor<bf16> = k.name_next("bf").compute((&x * 2.0).cast::<bf16>());
            k.print_tensor(&bf);
            let i: RegisterTensor<i32> = k
                .name_next("i")
                .compute((&x * 4.0).clip(-1000.0, 1000.0).cast::<i32>());
            k.print_tensor(&i);
            let positive = k.name_next("positive").compute(x.gt(0.0));
            k.print_tensor(&positive);
            let sums = k.name_next("sums").sum(x, 1, true);
            k.print_tensor(&sums);
            let cube = k.name_next("cube").register_tensor::<i32>([2, 2, 3], 5.0);
            k.print_tensor(&cube);
        });
    }
}

/// Running statistics over the column blocks of `x` (`[ROWS, COLS · blocks]` f32, `blocks` a
/// runtime argument), each carried from one iteration of a runtime loop to the next with
/// `assign_tile`: `out` (`[3 · ROWS, COLS]`) holds the sum of the blocks, their maximum, and
/// the decayed sum `acc ← 0.5 · acc + x` (an assignment that reads its destination through
/// an expression).
#[derive(Clone, Copy, Debug, Default, Hash)]
pub struct RunningStats;

impl RunningStats {
    /// Rows of a block.
    pub const ROWS: usize = 4;
    /// Columns of a block.
    pub const COLS: usize = 32;

    /// The output for `x` of `blocks` column blocks, computed on the host in the kernel's
    /// order (f32, block after block), so that the sums are bit-exact.
    pub fn expected(x: &[f32], blocks: usize) -> Vec<f32> {
        let (rows, cols) = (Self::ROWS, Self::COLS);
        let mut out = vec![0.0f32; 3 * rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                let (mut sum, mut max, mut decayed) = (0.0f32, f32::NEG_INFINITY, 0.0f32);
                for b in 0..blocks {
                    let v = x[r * cols * blocks + b * cols + c];
                    sum += v;
                    max = max.max(v);
                    decayed = decayed * 0.5 + v;
                }
                out[r * cols + c] = sum;
                out[(rows + r) * cols + c] = max;
                out[(2 * rows + r) * cols + c] = decayed;
            }
        }
        out
    }
}

impl Script for RunningStats {
    type Args = (i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["blocks", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (blocks, x, out): Handles<Self::Args>) {
        let (rows, cols) = (Self::ROWS as i32, Self::COLS as i32);
        k.blocks([1]);
        k.warps(1);
        let gx = k.global_view::<f32>(x, [Scalar::from(rows), blocks * cols]);
        let sum = k.name_next("sum").register_tensor::<f32>([rows, cols], 0.0);
        let max = k
            .name_next("max")
            .register_tensor::<f32>([rows, cols], f64::NEG_INFINITY);
        let decayed = k
            .name_next("decayed")
            .register_tensor::<f32>([rows, cols], 0.0);
        k.for_range(0, blocks, 1, |k, i| {
            let t = k.load_global(&gx, [Scalar::from(0), i * cols], [rows, cols]);
            k.assign_tile(&sum, sum + t);
            k.assign_tile(&max, max.maximum(t));
            k.assign_tile(&decayed, decayed * 0.5 + t);
        });
        let go = k.global_view::<f32>(out, [3 * rows, cols]);
        for (j, t) in [sum, max, decayed].iter().enumerate() {
            k.store_global(&go, t, [j as i32 * rows, 0]);
        }
    }
}

/// Two warp groups that differ only in their index: group `g` writes `10 g + 1` to stage `g`
/// of a shared tile (stage 0 for both with `one_stage`: the groups race on it) and to row `g`
/// of a `[2, 256]` i32 output, then one thread of each arrives on a barrier of
/// count 2 that the block waits for. With `copies`, one `thread_groups` runs the code once
/// for both; otherwise each group is a `warp_group` of its own, traced twice. Marked call:
/// `store` (the store to the shared tile).
#[derive(Clone, Debug, Hash)]
pub struct GroupCopies {
    pub copies: bool,
    pub one_stage: bool,
}

impl Script for GroupCopies {
    type Args = (PtrMut<i32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(8);
        let g = k.global_view::<i32>(out, [2, 256]);
        let s = k.shared_tensor::<i32>([2, 1, 256]);
        let bar = k.mbarrier().alloc([2]);
        let one_stage = self.one_stage;
        let body = |k: &mut Kernel, i: Val| {
            let t = k.register_tensor::<i32>([1, 256], 1.0);
            k.assign_tile(&t, t + i * 10);
            let stage = s.at(if one_stage { Val::constant(0) } else { i });
            mark("store", line!(), k.store_shared(&stage, &t));
            k.store_global(&g, &t, [i, Val::constant(0)]);
            k.single_thread(|k| k.mbarrier().arrive(bar[0]));
        };
        if self.copies {
            k.thread_groups(0, 128, 2, body);
        } else {
            for i in 0..2 {
                k.warp_group(4 * i, |k| body(k, Val::constant(i as i32)));
            }
        }
        k.mbarrier().wait(bar[0], 0u32);
    }
}
