//! The split-K kernels: the partial products ([`MatmulSplitK`]) and their sum
//! ([`SplitKReduce`]), and the sizes of their workspace and counters (see the module above).

use crate::gemm::operand::PartialsArgsOf;
use crate::gemm::products::products_one_in_flight;
use crate::gemm::tile_epilogue::columns;
use tilus::lang::Element;
use tilus::prelude::*;

/// Rows of one tile: one WGMMA's 64.
pub const SPLIT_K_BLOCK_M: i32 = 64;

/// Elements of the f32 workspace for `m × n` with `splits` splits.
///
/// ```
/// use tilus_kernels::gemm::split_k::{counters_len, workspace_len, MAX_SPLITS, SPLIT_K_BLOCK_M};
/// assert_eq!(SPLIT_K_BLOCK_M, 64);
/// assert_eq!(workspace_len(16, 4096, 4), 4 * 64 * 4096); // rows padded to a whole tile
/// assert_eq!(counters_len(16, 4096), 64); // one per 64 × 64 tile
/// assert!(MAX_SPLITS >= 16);
/// ```
pub fn workspace_len(m: usize, n: usize, splits: usize) -> usize {
    m.div_ceil(SPLIT_K_BLOCK_M as usize) * SPLIT_K_BLOCK_M as usize * n * splits
}

/// The partial products. Fields are compile-time hyperparameters.
///
/// With `serial = 1` (the default) the last split's blocks of a tile sum the partials in the
/// same launch; [`super::SplitK`] owns the workspace and counters and is what [`crate::gemm::Gemm`] runs.
///
/// ```no_run
/// use tilus_kernels::gemm::split_k::{MatmulSplitK, SplitK};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let split_k = SplitK::<half::f16>::fixed(MatmulSplitK::default(), &device);
/// let (m, n, k) = (16, 4096, 4096);
/// let a = device.stream().clone_htod(&vec![half::f16::ONE; m * k])?;
/// let b = device.stream().clone_htod(&vec![half::f16::ONE; n * k])?;
/// let mut c = device.stream().alloc_zeros::<half::f16>(m * n)?;
/// split_k.launch_on(device.stream(), (m, n, k), (&a, &b), &mut c)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Tunable)]
// deeper rings for the narrower tiles: a 256-column tile takes 40 KiB a stage
#[tune(block_n, stages = [(64, 8), (128, 4), (128, 8), (256, 4)])]
#[tune(block_k = [64])]
#[tune(splits = [2, 4, 8, 16])]
// the summing form only: the autotuner times one kernel, and the two-kernel form's second
// launch (the sum) would not be in what it compares (perf.md: the serial form was faster in
// eight of nine fixed pairs)
#[tune(serial = [1])]
pub struct MatmulSplitK {
    /// Columns of C per tile (one WGMMA covers up to 256).
    pub block_n: i32,
    /// Depth of one K step (64 halves: the 128-byte swizzle).
    pub block_k: i32,
    /// Stages in the ring.
    pub stages: i32,
    /// Ranges K is split into (blocks per tile).
    pub splits: i32,
    /// 1: the last split's block sums the partials and stores C (one kernel); 0: a second
    /// kernel does ([`SplitKReduce`]).
    pub serial: i32,
}

impl Default for MatmulSplitK {
    /// A configuration that compiles (the autotuner chooses per problem).
    fn default() -> Self {
        MatmulSplitK {
            block_n: 128,
            block_k: 64,
            stages: 4,
            splits: 4,
            serial: 1,
        }
    }
}

impl Script for MatmulSplitK {
    // m_size: runtime; n_size, k_size: compile-time constants; the workspace
    // `[splits · tiles_m · 64, n]` f32, the counters (one per tile) and C (both for `serial`).
    type Args = PartialsArgsOf<f16>;

    fn arg_names() -> &'static [&'static str] {
        PARTIALS_ARG_NAMES
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        self.partials::<f16>(k, args);
    }
}

// split-K's partial products on bf16 operands
crate::gemm::operand::bf16_script!(
    MatmulSplitK,
    "matmul_split_k_bf16",
    crate::gemm::operand::PartialsArgsOf<bf16>,
    PARTIALS_ARG_NAMES,
    partials
);

/// The names of the partial products' arguments in the generated code.
const PARTIALS_ARG_NAMES: &[&str] = &[
    "m_size",
    "n_size",
    "k_size",
    "a_ptr",
    "b_ptr",
    "w_ptr",
    "counters_ptr",
    "c_ptr",
];

/// The handles of the partials' arguments in operand type `T`.
type PartialsHandles<T> = (
    Val,
    Val,
    Val,
    PtrVal<T>,
    PtrVal<T>,
    PtrVal<f32>,
    PtrVal<i32>,
    PtrVal<T>,
);

impl MatmulSplitK {
    /// The partial products' body for operand type `T`.
    fn partials<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, w_ptr, counters_ptr, c_ptr): PartialsHandles<T>,
    ) {
        let tiles_m = k
            .name_next("tiles_m")
            .let_i32(cdiv(m_size, SPLIT_K_BLOCK_M));
        let tiles_n = k.name_next("tiles_n").let_i32(cdiv(n_size, self.block_n));
        k.blocks([tiles_m * tiles_n, Scalar::from(self.splits)]);
        // the sum (a programmatic dependent) scheduled beside the last blocks, waiting there
        k.launch_dependents_early();
        k.warps(5); // the consumer warp group, then the producer warp
        let bx = k.block_idx();
        let tile = k.name_next("tile").let_i32(bx.x);
        // tiles_n is a constant: these divide by a constant
        let offset_m = k
            .name_next("offset_m")
            .let_i32(tile / tiles_n * SPLIT_K_BLOCK_M);
        let offset_n = k
            .name_next("offset_n")
            .let_i32(tile % tiles_n * self.block_n);
        let split = k.name_next("split").let_i32(bx.y);
        // this split's K steps: `per` of them from `first`, fewer in the last split
        let k_tiles = cdiv(k_size, self.block_k);
        let per = k
            .name_next("per")
            .let_i32(cdiv(k_tiles.clone(), self.splits));
        let first = k.name_next("first").let_i32(split * per);
        let steps = k.name_next("steps").var_i32(per);
        k.if_((first + per).gt(k_tiles.clone()), |k| {
            k.assign(steps, k_tiles - first)
        });

        let ga = k.name_next("ga").global_view::<T>(a_ptr, [m_size, k_size]);
        let gb = k.name_next("gb").global_view::<T>(b_ptr, [n_size, k_size]);
        let sa = k
            .name_next("sa")
            .shared_tensor::<T>([self.stages, SPLIT_K_BLOCK_M, self.block_k]);
        let sb = k
            .name_next("sb")
            .shared_tensor::<T>([self.stages, self.block_n, self.block_k]);
        let pipe = Pipeline::new(k, self.stages.max(1) as u32, 128);
        let stage_bytes = sa.at(Val::constant(0)).nbytes() + sb.at(Val::constant(0)).nbytes();

        // the producer: warp 4 fills each stage once it is empty
        k.single_warp(4, |k| {
            k.name_next("i");
            k.for_range(0, steps, 1, |k, i| {
                let slot = pipe.producer_acquire(k, i, stage_bytes);
                let (a, b) = (sa.at(slot.stage()), sb.at(slot.stage()));
                let offset_k = k.name_next("offset_k").let_i32((first + i) * self.block_k);
                k.tma()
                    .global_to_shared(&ga, &a, [offset_m, offset_k], slot.barrier());
                k.tma()
                    .global_to_shared(&gb, &b, [offset_n, offset_k], slot.barrier());
            });
        });

        // the consumers: one product in flight; step i frees step i - 1's stage
        k.warp_group(0, |k| {
            let acc = k
                .name_next("acc")
                .register_tensor::<f32>([SPLIT_K_BLOCK_M, self.block_n], 0.0);
            let unroll = self.stages.max(1) as u32;
            k.name_next("i");
            products_one_in_flight(k, &pipe, (&sa, &sb), steps, unroll, &acc);
            // the partial's rows of C (not the tile's padding: at M = 1 that is 63 rows
            // of 64) in split `split`'s part of the workspace
            let gw = workspace_view(k, w_ptr, (m_size, n_size), self.splits);
            // in column chunks where the accumulator stays alive after (the last split's
            // branch reads it): a whole-tile copy would double its registers
            let leave = |k: &mut Kernel, width: i32| {
                for j in 0..self.block_n / width {
                    k.name_next("acc_part");
                    let part = columns(k, (&acc, self.block_n), j * width, width);
                    k.name_next("partial");
                    let partial = k.unsqueeze(&part, 0);
                    let col = Scalar::from(offset_n) + j * width;
                    k.store_global(&gw, &partial, [Scalar::from(split), offset_m.into(), col]);
                }
            };
            if self.serial == 0 {
                leave(k, self.block_n);
                return;
            }
            // an expression of the arguments (the launch checks the view against the buffer)
            let tiles = cdiv(m_size, SPLIT_K_BLOCK_M) * cdiv(n_size, self.block_n);
            let gcount = k
                .name_next("gcount")
                .global_view::<i32>(counters_ptr, [tiles]);
            let last = self.splits.max(1) - 1;
            k.if_else(
                split.lt(last),
                |k| {
                    // the partial, then (all of it stored and visible) the tile's count
                    leave(k, sum_width(self.block_n));
                    k.fence_gpu();
                    k.sync_group();
                    k.single_thread(|k| {
                        k.atomic_add_scalar(&gcount, [tile], 1);
                    });
                },
                |k| {
                    // the other splits' partials, once all are there, and this one's last
                    k.single_thread(|k| {
                        let seen = k.name_next("seen").var_i32(-1);
                        k.while_(seen.ne_(last), |k| {
                            let old = k.atomic_cas_scalar(&gcount, [tile], last, 0);
                            k.assign(seen, old);
                        });
                    });
                    k.fence_gpu();
                    k.sync_group();
                    let gc = k.name_next("gc").global_view::<T>(c_ptr, [m_size, n_size]);
                    sum_into_c(
                        k,
                        (&acc, self.block_n),
                        (&gw, &gc),
                        last,
                        (offset_m, offset_n),
                    );
                },
            );
        });
    }
}

/// Columns of C the last split's block sums at a time: a chunk's partials (up to 15 of them,
/// loaded ahead of their sum, and a group of chunks' together) are alive beside the
/// accumulator.
const SUM_CHUNK: i32 = 16;

/// C's tile at `(row, col)`: the partials of splits `0 .. splits` from the workspace `gw`, in
/// order, then `acc`, rounded once to C's type (all chunks) and stored (masked at the edges,
/// as the loads).
fn sum_into_c<T: Element>(
    k: &mut Kernel,
    (acc, block_n): (&RegisterTensor<f32>, i32),
    (gw, gc): (&GlobalTensor<f32>, &GlobalTensor<T>),
    splits: i32,
    (row, col): (Val, Val),
) {
    let width = sum_width(block_n);
    // a chunk's partials take `width / 2` registers each (64 rows over 128 threads)
    let per_chunk = (i64::from(splits) * i64::from(width) / 2).max(1);
    let group = (i64::from(SUM_LOAD_REGISTERS) / per_chunk).max(1) as usize;
    let mut outs = vec![];
    for j in 0..block_n / width {
        let c0 = k.name_next("sum_col").let_i32(col + j * width);
        k.name_next("own");
        let own = columns(k, (acc, block_n), j * width, width);
        let mut total: Option<RegisterTensor<f32>> = None;
        for s in 0..splits {
            let part = k.name_next("part").load_global(
                gw,
                [Scalar::from(s), row.into(), c0.into()],
                [1, SPLIT_K_BLOCK_M, width],
            );
            let part = k.name_next("part").squeeze(&part, 0);
            total = Some(match total {
                None => part,
                Some(t) => k.name_next("total").compute(t + part),
            });
        }
        let sum = match total {
            None => own,
            Some(t) => k.name_next("total").compute(t + own),
        };
        outs.push((c0, k.name_next("out").compute(sum.cast::<T>())));
        // the stores after a group's loads: a store to C between two chunks' loads would
        // hold the next chunk's loads back (the compiler cannot tell C from the workspace);
        // a group's loads in flight together take at most `SUM_LOAD_REGISTERS`
        if outs.len() >= group || j + 1 == block_n / width {
            for (c0, out) in outs.drain(..) {
                k.store_global(gc, &out, [row, c0]);
            }
        }
    }
}

/// The chunk width for a tile of `block_n` columns: [`SUM_CHUNK`], or the whole tile where it
/// is wider than a WGMMA can be (a tile the verifier rejects, traced in one chunk rather
/// than in millions).
fn sum_width(block_n: i32) -> i32 {
    if block_n > 256 {
        block_n
    } else {
        SUM_CHUNK.min(block_n)
    }
}

/// Registers per thread the partials' loads in flight may take (beside the accumulator).
const SUM_LOAD_REGISTERS: i32 = 96;

/// The workspace as `[splits, m, n]`: split `s`'s partial of C's rows, whose rows are `n`
/// apart and whose splits are [`workspace_len`]'s padded rows apart.
fn workspace_view(
    k: &mut Kernel,
    w_ptr: PtrVal<f32>,
    (m_size, n_size): (Val, Val),
    splits: i32,
) -> GlobalTensor<f32> {
    // an expression of the arguments (the launch checks the view against the buffer)
    let split_stride = cdiv(m_size, SPLIT_K_BLOCK_M) * SPLIT_K_BLOCK_M * n_size;
    k.name_next("gw").global_view_strided::<f32>(
        w_ptr,
        [Scalar::from(splits.max(1)), m_size.into(), n_size.into()],
        [split_stride, n_size.into(), Scalar::from(1)],
    )
}

/// The sum of the partials, rounded once to f16. `ROWS × COLS` elements per block, the
/// splits added in order (so the result does not depend on timing).
///
/// ```
/// use tilus_kernels::gemm::split_k::{workspace_len, SplitKReduce, SPLIT_K_BLOCK_M};
/// let (m, n, splits) = (3, 64, 2);
/// // the partials one above the other, rows padded to whole tiles of SPLIT_K_BLOCK_M
/// let mut w = vec![0.0f32; workspace_len(m, n, splits)];
/// let rows = SPLIT_K_BLOCK_M as usize;
/// for (s, part) in w.chunks_mut(rows * n).enumerate() {
///     part[..m * n].iter_mut().for_each(|x| *x = 0.25 + s as f32);
/// }
/// let mut c = vec![half::f16::NAN; m * n];
/// tilus::interpret(&SplitKReduce, (m as i32, n as i32, splits as i32, &w[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(1.5)));
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SplitKReduce;

impl SplitKReduce {
    /// Rows per block.
    pub(crate) const ROWS: i32 = 16;
    /// Columns per block.
    pub(crate) const COLS: i32 = 256;
}

impl Script for SplitKReduce {
    // m_size: runtime; n_size and splits: compile-time constants; the workspace, C.
    type Args = (i32, Const<i32>, Const<i32>, Ptr<f32>, PtrMut<f16>);

    fn arg_names() -> &'static [&'static str] {
        REDUCE_ARG_NAMES
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        self.sum::<f16>(k, args);
    }
}

// the sum of the partials, rounded once to bf16
crate::gemm::operand::bf16_script!(
    SplitKReduce,
    "split_k_reduce_bf16",
    crate::gemm::operand::ReduceArgsOf<bf16>,
    REDUCE_ARG_NAMES,
    sum
);

/// The names of the sum's arguments in the generated code.
const REDUCE_ARG_NAMES: &[&str] = &["m_size", "n_size", "splits", "w_ptr", "c_ptr"];

impl SplitKReduce {
    /// The sum's body for operand type `T`.
    fn sum<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, splits, w_ptr, c_ptr): (Val, Val, Val, PtrVal<f32>, PtrVal<T>),
    ) {
        let (rows, cols) = (Self::ROWS, Self::COLS);
        k.blocks([cdiv(m_size, rows), cdiv(n_size, cols)]);
        k.warps(4);
        // it reads what the partials' kernel just wrote: launched as its programmatic
        // dependent (when asked for), it waits for that kernel first
        k.wait_for_prior_grid();
        let splits = splits.as_const().unwrap_or(1).max(1) as i32;
        let gw = workspace_view(k, w_ptr, (m_size, n_size), splits);
        let gc = k.name_next("gc").global_view::<T>(c_ptr, [m_size, n_size]);
        let bx = k.block_idx();
        let r0 = k.name_next("r0").let_i32(bx.x * rows);
        let c0 = k.name_next("c0").let_i32(bx.y * cols);
        // split `s`'s rows of the block, as a `[rows, cols]` tile
        let load = |k: &mut Kernel, s: i32| {
            let part = k.name_next("part").load_global(
                &gw,
                [Scalar::from(s), r0.into(), c0.into()],
                [1, rows, cols],
            );
            k.name_next("part").squeeze(&part, 0)
        };
        let mut total = load(k, 0);
        for s in 1..splits {
            let part = load(k, s);
            total = k.name_next("total").compute(total + part);
        }
        let out = k.name_next("out").compute(total.cast::<T>());
        k.store_global(&gc, &out, [r0, c0]);
    }
}

/// The most splits the search space has: the workspace is sized for it.
pub const MAX_SPLITS: usize = 16;

/// Counters for `m × n`: one per tile of the narrowest tiles the space has (64 columns).
pub fn counters_len(m: usize, n: usize) -> usize {
    m.div_ceil(SPLIT_K_BLOCK_M as usize) * n.div_ceil(64)
}
