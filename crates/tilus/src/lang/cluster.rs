//! Thread-block clusters: blocks launched together on neighbouring multiprocessors, which
//! can meet at one barrier (`cluster_sync`) and, on Hopper, read each other's shared memory
//! and receive the same TMA copy (multicast). A cluster is `cluster_blocks([x, y])` blocks of
//! the grid, consecutive along each dimension; the grid must be a multiple of it.

use super::{Kernel, Scalar};
use crate::ir::{BinOp, Expr, Loc, StmtKind, SyncScope};

/// The most blocks a cluster may have (the portable size; larger ones need an opt-in the
/// hardware does not guarantee).
pub const MAX_CLUSTER_BLOCKS: u32 = 8;

impl Kernel {
    /// Groups the grid's blocks into clusters of `dims` blocks (x, then y, then z; 1 to 3
    /// numbers, their product at most [`MAX_CLUSTER_BLOCKS`]). At the top of the body, once.
    /// Every launch's grid must then be a multiple of the cluster along each dimension (a
    /// persistent grid is rounded down to one).
    #[track_caller]
    pub fn cluster_blocks<const N: usize>(&mut self, dims: [u32; N]) {
        let loc = Loc::caller();
        if self.prog.clustered {
            self.error(loc, "the cluster is already set; set it once");
            return;
        }
        if !(1..=3).contains(&N) {
            self.error(
                loc,
                format!("cluster_blocks takes 1 to 3 dimensions, got {N}"),
            );
            return;
        }
        let size: u64 = dims.iter().map(|&d| u64::from(d)).product();
        if dims.contains(&0) || size > u64::from(MAX_CLUSTER_BLOCKS) {
            self.error(
                loc,
                format!(
                    "cluster_blocks({dims:?}): a cluster has 1 to {MAX_CLUSTER_BLOCKS} blocks, \
                     every dimension at least 1"
                ),
            );
            return;
        }
        let mut cluster = [1u32; 3];
        cluster[..N].copy_from_slice(&dims);
        self.prog.cluster = cluster;
        self.prog.clustered = true;
    }

    /// This block's rank in its cluster, `0 .. blocks per cluster` (x fastest), as the
    /// hardware numbers it (`%cluster_ctarank`): computed from the block index, since a
    /// cluster is consecutive blocks along each dimension. After `cluster_blocks`.
    #[track_caller]
    pub fn cluster_rank(&mut self) -> Scalar {
        if !self.prog.clustered {
            self.error(
                Loc::caller(),
                "cluster_rank() before cluster_blocks(..): set the cluster first",
            );
        }
        let [cx, cy, cz] = self.prog.cluster.map(i64::from);
        let part = |axis: u8, extent: i64| {
            let idx = Expr::BlockIdx(axis);
            if extent == 1 {
                Expr::i32(0)
            } else {
                Expr::binary(BinOp::Rem, idx, Expr::i32(extent))
            }
        };
        let rank = Expr::binary(
            BinOp::Add,
            Expr::binary(
                BinOp::Add,
                part(0, cx),
                Expr::binary(BinOp::Mul, part(1, cy), Expr::i32(cx)),
            ),
            Expr::binary(BinOp::Mul, part(2, cz), Expr::i32(cx * cy)),
        );
        Scalar(rank)
    }

    /// Barrier for every thread of every block of the cluster (`barrier.cluster.arrive` +
    /// `wait`, with release and acquire semantics): what each block wrote to shared memory
    /// before it is visible to the others after it, and no block leaves while another may
    /// still use its shared memory. The whole block, outside thread groups.
    #[track_caller]
    pub fn cluster_sync(&mut self) {
        self.push(
            StmtKind::Sync {
                scope: SyncScope::Cluster,
                vote: None,
            },
            Loc::caller(),
        );
    }

    /// [`Kernel::cluster_sync`] without its memory ordering (a relaxed
    /// `barrier.cluster.arrive`, then `wait`): the threads of the cluster meet, and the
    /// mbarriers allocated before it
    /// (whose initialization `mbarrier.alloc` fences at cluster scope) take the other blocks'
    /// arrivals and copies after it, but nothing else written before it is made visible by
    /// it. The meeting after allocating a cluster's barriers costs no memory fence this way
    /// (the ordered form waits, in every thread, for its writes to reach the whole GPU).
    #[track_caller]
    pub fn cluster_sync_relaxed(&mut self) {
        self.push(
            StmtKind::Sync {
                scope: SyncScope::ClusterRelaxed,
                vote: None,
            },
            Loc::caller(),
        );
    }
}
