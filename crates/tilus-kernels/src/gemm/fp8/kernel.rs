//! The FP8 GEMM's kernel: v6's persistent, warp-specialized main loop on 8-bit operands (K
//! steps of 128 codes: 128-byte rows, the 128-byte swizzle; WGMMA takes 32 of K an
//! instruction), each step's product promoted into an f32 accumulator on the CUDA cores (the
//! FP8 tensor cores accumulate in fewer bits than f32), the per-tensor scales applied to the
//! accumulator before it is rounded to the output type.

use super::scaled::Scaled;
use crate::gemm::persistent::MatmulPersistent;
use crate::gemm::promote::StepScale;
use crate::gemm::tile_epilogue::{CastAndStore, TileAt, STORE_CHUNK};
use std::marker::PhantomData;
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

/// The arguments of [`MatmulFp8`]: `(m, n, k, a, b, scales, c)`: A `[m, k]` and B `[n, k]`
/// row-major codes (K-major, as the FP8 tensor cores take them), `scales` two f32 on the
/// device (A's, then B's: a code stands for `code · scale`), C `[m, n]` row-major. `n` and
/// `k` are compile-time constants; `k` a multiple of 16 (16-byte rows for TMA).
pub type Fp8ArgsOf<T, O> = (
    i32,
    Const<i32>,
    Const<i32>,
    Ptr<T>,
    Ptr<T>,
    Ptr<f32>,
    PtrMut<O>,
);

/// `C = (scale_a · scale_b) · A · Bᵀ` on FP8 codes `T` (`F8E4M3` or `F8E5M2`), accumulated in
/// f32, rounded once to `O` (bf16, f16 or f32). Fields: v6's tile (`block_k` 128 codes).
///
/// ```
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::gemm::fp8::MatmulFp8;
/// let (m, n, k) = (64usize, 256usize, 128usize);
/// let (a, b) = (vec![F8E4M3::from_f32(0.5); m * k], vec![F8E4M3::from_f32(2.0); n * k]);
/// let mut c = vec![half::bf16::NAN; m * n];
/// let kernel = MatmulFp8::<F8E4M3, half::bf16>::default();
/// let (mi, ni, ki) = (m as i32, n as i32, k as i32);
/// tilus::interpret(&kernel, (mi, ni, ki, &a[..], &b[..], &[0.5f32, 0.25][..], &mut c[..]))?;
/// // each output: 128 products of 1, times 0.5 · 0.25
/// assert!(c.iter().all(|&v| v == half::bf16::from_f32(16.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
pub struct MatmulFp8<T, O> {
    /// The main loop's tile (v6's hyperparameters: blocks alone, or pairs sharing B's tile
    /// by multicast with `cluster_m` 2).
    pub tile: MatmulPersistent,
    /// n ≥ 1: the K steps in runs of `2 n` on two partial accumulators, each step's
    /// product issued while the step before it is promoted, so that only each run's last
    /// addition waits with none of the warp group's own products in flight (no held result;
    /// `gemm/promote.rs`); 0: each step's product waited for and promoted before the next is
    /// issued.
    pub overlap: i32,
    /// 1: cooperative warp groups take turns, one's promotion under the other's products:
    /// without `overlap` each K step's products are issued in turn; with it, warp group 1
    /// runs half a run behind warp group 0. 0: each issues as soon as its stage is full.
    pub turns: i32,
    _t: PhantomData<fn() -> (T, O)>,
}

/// K per step: 128 codes, a 128-byte row (the widest the 128-byte swizzle takes).
pub const FP8_BLOCK_K: i32 = 128;

impl<T, O> MatmulFp8<T, O> {
    /// The kernel on `tile` (its `block_k` set to [`FP8_BLOCK_K`]).
    pub fn new(tile: MatmulPersistent) -> MatmulFp8<T, O> {
        MatmulFp8 {
            tile: MatmulPersistent {
                block_k: FP8_BLOCK_K,
                ..tile
            },
            overlap: 0,
            turns: 0,
            _t: PhantomData,
        }
    }
}

impl<T, O> MatmulFp8<T, O> {
    /// This kernel with its promotions overlapped with the next step's product in runs of
    /// `2 pairs` steps, or not overlapped (`pairs` = 0; [`MatmulFp8::overlap`]).
    pub fn with_overlap(self, pairs: i32) -> MatmulFp8<T, O> {
        MatmulFp8 {
            overlap: pairs,
            ..self
        }
    }

    /// This kernel with its cooperative warp groups taking turns at each K step, or not
    /// ([`MatmulFp8::turns`]).
    pub fn with_turns(self, on: bool) -> MatmulFp8<T, O> {
        MatmulFp8 {
            turns: i32::from(on),
            ..self
        }
    }
}

impl<T, O> Default for MatmulFp8<T, O> {
    /// 128 × 128 tiles on two consumer warp groups, four stages (each warp group holds its
    /// 64 × 128 accumulator and the step's product beside it).
    fn default() -> Self {
        MatmulFp8::new(MatmulPersistent {
            block_n: 128,
            ..MatmulPersistent::default()
        })
    }
}

impl<T: Element, O: Element> Script for MatmulFp8<T, O> {
    type Args = Fp8ArgsOf<T, O>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "m_size", "n_size", "k_size", "a_ptr", "b_ptr", "scales", "c_ptr",
        ]
    }

    fn name(&self) -> String {
        format!("matmul_fp8_{}_{}", T::DTYPE.name(), O::DTYPE.name())
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (m_size, n_size, k_size, a_ptr, b_ptr, scales, c_ptr) =
            (args.0, args.1, args.2, args.3, args.4, args.5, args.6);
        let scaling = Scaling::Tensor(scales);
        fp8_body::<T, O>(
            (&self.tile, self.overlap, self.turns != 0),
            k,
            (m_size, n_size, k_size),
            (a_ptr, b_ptr, c_ptr),
            scaling,
        );
    }
}

/// How the FP8 GEMM's codes are scaled: one scale per tensor (`[2]`: A's, B's), or per block
/// (A's `[k_blocks, m]`, B's `[n_blocks, k_blocks]`, blocks of 128).
pub(crate) enum Scaling {
    Tensor(PtrVal<f32>),
    Blocks(PtrVal<f32>, PtrVal<f32>),
}

/// The FP8 GEMM's body on `t`'s tile, its scaling either way.
pub(crate) fn fp8_body<T: Element, O: Element>(
    (t, overlap, turns): (&MatmulPersistent, i32, bool),
    k: &mut Kernel,
    (m_size, n_size, k_size): (Val, Val, Val),
    (a_ptr, b_ptr, c_ptr): (PtrVal<T>, PtrVal<T>, PtrVal<O>),
    scaling: Scaling,
) {
    if T::DTYPE.bits() != 8 || !T::DTYPE.is_float() {
        k.refuse_config(format!(
            "{}: the FP8 GEMM's operands are 8-bit floats (f8e4m3, f8e5m2)",
            T::DTYPE.name()
        ));
        return;
    }
    if t.block_k != FP8_BLOCK_K || !(1..=2).contains(&t.cluster_m) {
        k.refuse_config(format!(
            "{t:?}: block_k {FP8_BLOCK_K} (128-byte rows of codes), blocks alone or in pairs"
        ));
        return;
    }
    if matches!(scaling, Scaling::Blocks(..)) && FP8_BLOCK_K % t.block_n != 0 {
        k.refuse_config(format!(
            "{t:?}: block_n 64 or 128 with scales per block (a tile's columns within one \
             block of 128 of B's scales)"
        ));
        return;
    }
    let gc = k.name_next("gc").global_view::<O>(c_ptr, [m_size, n_size]);
    // chunks of 128 bytes of the output (64 columns of 16-bit, 32 of f32), halved for warp
    // groups of 128 rows as v6 does
    let bytes = (O::DTYPE.bits() / 8) as i32;
    let mut width = STORE_CHUNK * 2 / bytes;
    if t.group_rows() > 64 {
        width /= 2;
    }
    let stores = t.c_stores(k, gc, n_size, width);
    // (a tile held for deferred stores in f32 would be as large as the accumulator)
    // (the overlapped loop's third accumulator takes the held result's registers)
    let defer = t.defer_stores != 0 && t.ping_pong == 0 && bytes == 2 && overlap == 0;
    let store = CastAndStore::new(stores, t.block_n, defer);
    let dims = (m_size, n_size, k_size);
    match scaling {
        Scaling::Tensor(scales) => {
            let scales = k.name_next("scales").global_view::<f32>(scales, [2]);
            let sa = k.load_global_scalar(&scales, [0]);
            let sb = k.load_global_scalar(&scales, [1]);
            let alpha = k.name_next("alpha").let_f32(sa * sb);
            let epilogue = Scaled::new(&store, alpha);
            t.tiles_promoted(k, dims, (a_ptr, b_ptr), &epilogue, (None, overlap, turns));
        }
        Scaling::Blocks(sa, sb) => {
            // (the views' shapes in the arguments themselves: the host checks the buffers
            // against them)
            let (k_blocks, n_blocks) = (cdiv(k_size, FP8_BLOCK_K), cdiv(n_size, FP8_BLOCK_K));
            let gsa = k
                .name_next("gsa")
                .global_view::<f32>(sa, [k_blocks.clone(), m_size.into()]);
            let gsb = k
                .name_next("gsb")
                .global_view::<f32>(sb, [n_blocks, k_blocks]);
            let rows = t.group_rows();
            // step `i`'s factor of each of the warp group's rows: its A block's scale times
            // the tile's B block's (rows past M read as zero: never stored)
            let step_scale = |k: &mut Kernel, i: Val, at: &TileAt| {
                let row_scales = k
                    .name_next("a_scales")
                    .load_global(&gsa, (i, at.rows), [1, rows]);
                let row_scales = k.reshape(&row_scales, [rows, 1]);
                let b_block = k.let_i32(at.cols / FP8_BLOCK_K);
                let b_scale = k.load_global_scalar(&gsb, (b_block, i));
                k.name_next("step_scale")
                    .compute(row_scales * Scalar::from(b_scale))
            };
            let scaled = (Some(&step_scale as StepScale<'_>), overlap, turns);
            t.tiles_promoted(k, dims, (a_ptr, b_ptr), &store, scaled);
        }
    }
}

/// The hyperparameters the FP8 GEMM's search space covers (v6's others keep their defaults;
/// `block_k` is fixed).
const FP8_TUNED: &[&str] = &[
    "block_m",
    "block_n",
    "ping_pong",
    "stages",
    "group_m",
    "cluster_m",
];

/// The FP8 GEMM's tiles, stages and orders; `pairs`: 128 × 128 tiles also in pairs of blocks.
pub(super) fn fp8_space(pairs: bool) -> Space {
    // a warp group's accumulator and its partial products in a consumer's 232 registers: the
    // step's product and the held result beside a 64 × 128 share (64 × 192 spills), or two
    // products beside it; overlapped in runs of four steps (11-18% faster than one step at a
    // time at 128 × 128, and than pairs or runs of eight: docs/perf.md); 256 × 64 in pairs
    // (its runs of four spill with fine-grained scales, the factors of 128 rows a warp
    // group); 128 × 128 also in pairs of blocks along M that read B's tile from L2 once (a
    // step's 32 KB of operands per 4 MFLOP is close to what L2 serves 132 blocks at the FP8
    // rate; a pair reads 24 KB a block)
    let mut tiles = vec![
        vec![128, 128, 0, 0, 1],
        vec![128, 128, 0, 2, 1],
        vec![128, 64, 0, 0, 1],
        vec![128, 64, 0, 2, 1],
        vec![256, 64, 0, 0, 1],
        vec![256, 64, 0, 1, 1],
        vec![64, 128, 1, 0, 1],
        vec![64, 128, 1, 2, 1],
        vec![64, 64, 1, 1, 1],
    ];
    if pairs {
        tiles.push(vec![128, 128, 0, 2, 2]);
    }
    Space::new()
        .axis(
            &["block_m", "block_n", "ping_pong", "overlap", "cluster_m"],
            tiles,
        )
        .and_then(|s| s.values("stages", &[3, 4]))
        .and_then(|s| s.values("group_m", &[8, 16]))
        .expect("the FP8 GEMM's space is well formed")
}

/// v6's tiles, stages and orders, 128 × 128 also in pairs.
impl<T: Element, O: Element> Tunable for MatmulFp8<T, O> {
    fn space() -> Space {
        fp8_space(true)
    }

    fn from_binding(binding: &Binding) -> Result<Self, String> {
        let tile = MatmulPersistent::from_subset(binding, FP8_TUNED)?;
        Ok(MatmulFp8 {
            overlap: binding.get_i32("overlap")?,
            // (not searched yet: 0 unless set)
            turns: binding.get_i32("turns").unwrap_or(0),
            ..MatmulFp8::new(tile)
        })
    }

    fn to_binding(&self) -> Option<Binding> {
        let mut b = self.tile.subset_binding(FP8_TUNED);
        b.0.push(("overlap".to_string(), i64::from(self.overlap)));
        b.0.push(("turns".to_string(), i64::from(self.turns)));
        Some(b)
    }
}

// by hand: the element types are named in the kernel's name, not among its hyperparameters
impl<T, O> Clone for MatmulFp8<T, O> {
    fn clone(&self) -> Self {
        MatmulFp8 {
            tile: self.tile.clone(),
            overlap: self.overlap,
            turns: self.turns,
            _t: PhantomData,
        }
    }
}

impl<T, O> PartialEq for MatmulFp8<T, O> {
    fn eq(&self, o: &Self) -> bool {
        self.tile == o.tile && self.overlap == o.overlap && self.turns == o.turns
    }
}

impl<T, O> Eq for MatmulFp8<T, O> {}

impl<T, O> std::hash::Hash for MatmulFp8<T, O> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.tile.hash(h);
        self.overlap.hash(h);
        self.turns.hash(h);
    }
}

impl<T, O> std::fmt::Debug for MatmulFp8<T, O> {
    /// The tile's hyperparameters, the searched ones first (what the command line's `--set`
    /// takes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tile;
        f.debug_struct("MatmulFp8")
            .field("block_m", &t.block_m)
            .field("block_n", &t.block_n)
            .field("ping_pong", &t.ping_pong)
            .field("stages", &t.stages)
            .field("group_m", &t.group_m)
            .field("overlap", &self.overlap)
            .field("turns", &self.turns)
            .field("cluster_m", &t.cluster_m)
            .field("block_k", &t.block_k)
            .field("persistent", &t.persistent)
            .field("tma_store", &t.tma_store)
            .field("defer_stores", &t.defer_stores)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::MatmulFp8;
    use crate::gemm::fp8::MatmulFp8Blocks;
    use crate::gemm::persistent::MatmulPersistent;
    use half::bf16;
    use std::collections::HashSet;
    use tilus::lowp::{F8E4M3, F8E5M2};
    use tilus::Script;

    /// The schedule's switches reach the per-tensor kernel's body (the same product either
    /// way: only the traced program tells them apart).
    #[test]
    fn overlap_and_turns_reach_the_body() {
        use tilus::ir::print_program;
        let text =
            |c: &MatmulFp8<F8E4M3, bf16>| print_program(&tilus::trace(c, &[4096, 4096]).unwrap());
        let plain = MatmulFp8::<F8E4M3, bf16>::default();
        let base = text(&plain);
        assert!(!base.contains("let pairs") && !base.contains("turn_phase"));
        // deferred stores hold the tile before; the overlapped loop's partial takes their
        // registers
        assert!(base.contains("held_rows"), "the default defers its stores");
        let overlapped = text(&plain.clone().with_overlap(1));
        assert!(overlapped.contains("let pairs"), "two steps at a time");
        assert!(!overlapped.contains("let runs"), "pairs only");
        let runs = text(&plain.clone().with_overlap(2));
        assert!(runs.contains("let runs"), "runs of four steps");
        assert_ne!(runs, text(&plain.clone().with_overlap(4)), "runs of eight");
        // warp group 1 half a run behind only with turns, and only in cooperative tiles
        assert!(!runs.contains("lead"), "no half run without turns");
        let behind = plain.clone().with_overlap(2).with_turns(true);
        let behind_text = text(&behind);
        assert!(behind_text.contains("lead"), "warp group 1's half run");
        // a half run of runs of four is two steps: one more step promoted under the next
        let waits = |t: &str| t.matches("wait_group(1)").count();
        assert_eq!(waits(&behind_text), waits(&runs) + 1, "{behind_text}");
        let mut ping_pong = behind.clone();
        (ping_pong.tile.block_m, ping_pong.tile.ping_pong) = (64, 1);
        assert!(
            !text(&ping_pong).contains("lead"),
            "ping-pong tiles are not staggered"
        );
        assert!(
            !overlapped.contains("held_rows"),
            "no held result beside two partials"
        );
        let mut eager = plain.clone();
        eager.tile.defer_stores = 0;
        assert!(
            !text(&eager).contains("held_rows"),
            "stores right after the loop"
        );
        let turns = text(&plain.with_turns(true));
        assert!(turns.contains("turn_phase"), "the turns' waits");
    }

    /// Every configuration of the space survives its binding both ways (what the tuning
    /// cache and `--set` go through), the schedule's switches included, and a clone.
    #[test]
    fn the_space_round_trips_through_bindings() {
        use tilus::tune::Tunable;
        for b in MatmulFp8::<F8E4M3, bf16>::space().bindings() {
            let config = MatmulFp8::<F8E4M3, bf16>::from_binding(&b).unwrap();
            let back = config.to_binding().unwrap();
            // every searched value comes back (`turns`, not searched, comes back as 0)
            for (name, value) in &b.0 {
                assert!(
                    back.0.contains(&(name.clone(), *value)),
                    "{config:?}: {name}"
                );
            }
            assert_eq!(MatmulFp8::from_binding(&back).unwrap(), config);
            assert_eq!(
                config.clone(),
                config,
                "a clone is the configuration it copies"
            );
        }
        let turned = MatmulFp8::<F8E4M3, bf16>::default().with_turns(true);
        let b = turned.to_binding().unwrap();
        assert_eq!(MatmulFp8::from_binding(&b).unwrap(), turned);
    }

    /// Each kernel's name says its scaling and types (the compile cache and the generated
    /// code go by it); configurations of other tiles are other kernels (unequal, hashed
    /// apart), and their settings read flat, the searched ones first.
    #[test]
    fn names_equality_and_settings_tell_the_kernels_apart() {
        let per_tensor = MatmulFp8::<F8E4M3, bf16>::default();
        let e5m2 = MatmulFp8::<F8E5M2, f32>::default();
        let blocks = MatmulFp8Blocks::<F8E4M3, bf16>::default();
        let names = [per_tensor.name(), e5m2.name(), blocks.name()];
        assert_eq!(
            names,
            [
                "matmul_fp8_f8e4m3_bf16",
                "matmul_fp8_f8e5m2_f32",
                "matmul_fp8_blocks_f8e4m3_bf16"
            ]
        );
        let narrow = MatmulPersistent {
            block_n: 64,
            ..MatmulPersistent::default()
        };
        let other = MatmulFp8::<F8E4M3, bf16>::new(narrow.clone());
        assert_ne!(per_tensor, other);
        assert_ne!(blocks, MatmulFp8Blocks::new(narrow));
        assert_eq!(per_tensor, per_tensor.clone());
        let set: HashSet<_> = [per_tensor.clone(), other, per_tensor.clone()].into();
        assert_eq!(set.len(), 2);
        let shown = format!("{per_tensor:?}");
        assert!(
            shown.starts_with("MatmulFp8 { block_m: 128, block_n: 128"),
            "{shown}"
        );
        assert!(format!("{blocks:?}").starts_with("MatmulFp8Blocks(MatmulFp8 {"));
        // the tile's K step, whatever the tile given; its pairs as given
        let given = MatmulPersistent {
            block_k: 64,
            cluster_m: 2,
            ..MatmulPersistent::default()
        };
        let t = MatmulFp8::<F8E4M3, bf16>::new(given).tile;
        assert_eq!((t.block_k, t.cluster_m), (128, 2));
    }
}
