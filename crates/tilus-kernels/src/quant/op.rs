//! The host API of [`QuantMatmul`]: shapes and buffers checked before anything is launched.

use super::views::QuantArgs;
use super::{
    Prepacked, QuantMatmul, QuantMatmulFragments, QuantMatmulRing, QuantMatmulTc, Quantized, Scheme,
};
use crate::host::{dim, elements, length};
use half::f16;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::ir::DType;
use tilus::lowp::LowpElement;
use tilus::prelude::*;
use tilus::runtime::Device;

const NAME: &str = "quant_matmul";

/// `C = A · dequant(W)ᵀ` on device buffers with weights of type `T` quantized by `scheme`
/// ([`super::quantize`] on the host, then uploaded: the packed codes, the scales, the zero
/// points of unsigned types).
///
/// ```no_run
/// use half::f16;
/// use tilus::lowp::I4;
/// use tilus_kernels::quant::{quantize, QuantMatmulOp, Scheme};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let stream = device.stream();
/// let (m, n, k) = (1, 4096, 4096);
/// let q = quantize::<I4>(&vec![0.25; n * k], (n, k), Scheme::grouped(128));
/// let op = QuantMatmulOp::<I4>::new(&device, Scheme::grouped(128))?;
/// let (w, s) = (stream.clone_htod(&q.packed)?, stream.clone_htod(&q.scales)?);
/// let a = stream.clone_htod(&vec![f16::ONE; m * k])?;
/// let mut c = stream.alloc_zeros::<f16>(m * n)?;
/// op.run(stream, (m, n, k), &a, (&w, &s, None), &mut c)?;
/// # Ok(()) }
/// ```
///
/// The same on the CPU interpreter, on host slices:
///
/// ```
/// use half::f16;
/// use tilus::lowp::I4;
/// use tilus_kernels::quant::{quantize, QuantMatmul, QuantMatmulOp, Scheme};
/// let (m, n, k) = (2, 16, 128);
/// let w: Vec<f32> = (0..n * k).map(|i| ((i % 7) as f32 - 3.0) / 4.0).collect();
/// let q = quantize::<I4>(&w, (n, k), Scheme::grouped(64));
/// let a = vec![f16::ONE; m * k];
/// let mut c = vec![f16::NAN; m * n];
/// QuantMatmulOp::<I4>::interpret(&QuantMatmul::new(64).with_block_m(2), (m, &a), &q, &mut c)?;
/// // A is all ones: each output is its row of W, dequantized (to f16) and summed
/// let row0: f64 = (0..k).map(|x| f16::from_f64(q.dequantized(0, x)).to_f64()).sum();
/// assert!((c[0].to_f64() - row0).abs() <= row0.abs() * 1e-3 + 1e-3);
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub struct QuantMatmulOp<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> {
    /// The few-rows kernel for 1, 2 and 4 rows of A per block.
    few: [tilus::Jit<QuantMatmul<T>>; 3],
    /// The tensor-core kernel for 16, 32, 64 and 128 rows of A per block.
    tc: [tilus::Jit<QuantMatmulTc<T>>; 4],
    /// The ring kernel (W dequantized by the producer of the persistent GEMM's ring).
    ring: tilus::Jit<QuantMatmulRing<T>>,
    /// The fragment kernel on prepacked weights, for 8, 16, 32, 64 and 128 rows of A per
    /// block, each with K in 1, 2, 4 and 8 splits.
    fragments: [[tilus::Jit<QuantMatmulFragments<T>>; 4]; 5],
    /// The fragment kernel for 8 rows of A per block with its scales applied to the sums by
    /// group, K in 1, 2, 4 and 8 splits: taken instead of `fragments[0]` where its stages hold
    /// two steps each and the plan at that K takes the sums (docs/perf.md: 3-12% faster at
    /// 1 x 28672 x 8192).
    sums: [tilus::Jit<QuantMatmulFragments<T>>; 4],
    /// The fragment kernel with two warp groups, for 64, 128 and 256 rows of A per block.
    wide: [tilus::Jit<QuantMatmulFragments<T>>; 3],
    scheme: Scheme,
    /// Passed for the zero points of types without them (never read).
    no_zeros: CudaSlice<f16>,
}

impl<T: Element + LowpElement + std::hash::Hash + std::fmt::Debug> QuantMatmulOp<T> {
    /// The kernel for `scheme` bound to `device` (compiled on first use of each K).
    pub fn new(device: &Device, scheme: Scheme) -> crate::Result<Self> {
        let group = group_arg(scheme)?;
        let no_zeros =
            crate::host::device_zeros::<f16>(device.stream(), 1, "quant_matmul's zero points")?;
        let few = |bm| tilus::Jit::new(QuantMatmul::new(group).with_block_m(bm), device);
        let tc = |bm| tilus::Jit::new(QuantMatmulTc::new(group).with_block_m(bm), device);
        let bits = <T as LowpElement>::DTYPE.bits();
        let fragments = |bm, splits| host_fragments::<T>(group, bm, splits);
        Ok(QuantMatmulOp {
            few: [few(1), few(2), few(4)],
            tc: [tc(16), tc(32), tc(64), tc(128)],
            ring: tilus::Jit::new(QuantMatmulRing::new(group), device),
            fragments: [8, 16, 32, 64, 128].map(|bm| {
                [1, 2, 4, 8].map(|splits| tilus::Jit::new(fragments(bm, splits), device))
            }),
            sums: [1, 2, 4, 8]
                .map(|splits| tilus::Jit::new(fragments(8, splits).with_scale_sums(true), device)),
            wide: [64, 128, 256].map(|bm| {
                let config = QuantMatmulFragments::new(group, bm)
                    .with_stages(super::fragment_stages(bits, bm))
                    .with_warp_groups(2);
                tilus::Jit::new(config, device)
            }),
            scheme,
            no_zeros,
        })
    }

    /// `c [m, n] = a [m, k] · dequant(w)ᵀ` on `stream`: `w` the packed codes
    /// (`n · k · bits / 8` bytes), `scales` (and `zeros`, for unsigned types) `n · groups`.
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        shape: (usize, usize, usize),
        a: &CudaSlice<f16>,
        (w, scales, zeros): (&CudaSlice<u8>, &CudaSlice<f16>, Option<&CudaSlice<f16>>),
        c: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let lens = Lengths {
            a: a.len(),
            w: Some(w.len()),
            scales: scales.len(),
            zeros: zeros.map(|z| z.len()),
            c: c.len(),
            prepacked: false,
        };
        let (m, n, k) = checked::<T>(shape, self.scheme, &lens)?;
        let z = zeros.unwrap_or(&self.no_zeros);
        let args = (m, n, k, a, w, scales, z, c);
        match plan(shape, self.scheme) {
            Plan::FewRows { block_m } => {
                let i = block_m.trailing_zeros() as usize;
                Ok(self.few[i].launch(stream, args)?)
            }
            Plan::TensorCores { block_m } => {
                let i = (block_m / 16).trailing_zeros() as usize;
                Ok(self.tc[i].launch(stream, args)?)
            }
            Plan::Ring => Ok(self.ring.launch(stream, args)?),
        }
    }

    /// `c [m, n] = a [m, k] · dequant(w)ᵀ` on `stream` by the fragment kernel, on weights
    /// prepacked by [`super::prepack()`] and uploaded (`words`, `scales` and, for unsigned
    /// types, `zeros` as [`Prepacked`] holds them: whole numbers of the codes' range, which
    /// the kernel subtracts in f16), `shape` W's: any number of rows of A (up
    /// to 128 the fewest rows per block of 8 to 128 that hold them, past that two warp groups
    /// per block; see `fragment_choice`), K a multiple of 8, groups of 64 or more (or per
    /// channel).
    ///
    /// ```no_run
    /// use half::f16;
    /// use tilus::lowp::I4;
    /// use tilus_kernels::quant::{prepack, quantize, QuantMatmulOp, Scheme};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let device = tilus::runtime::Device::open(0)?;
    /// let stream = device.stream();
    /// let (m, n, k) = (1, 4096, 4096);
    /// let q = quantize::<I4>(&vec![0.25; n * k], (n, k), Scheme::grouped(128));
    /// let p = prepack(&q)?; // once, when the weights are loaded
    /// let op = QuantMatmulOp::<I4>::new(&device, Scheme::grouped(128))?;
    /// // (the prepacked scales: transposed, padded to whole tiles)
    /// let (w, s) = (stream.clone_htod(&p.words)?, stream.clone_htod(&p.scales)?);
    /// let a = stream.clone_htod(&vec![f16::ONE; m * k])?;
    /// let mut c = stream.alloc_zeros::<f16>(m * n)?;
    /// op.run_fragments(stream, (m, n, k), &a, (&w, &s, None), &mut c)?;
    /// # Ok(()) }
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn run_fragments(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        a: &CudaSlice<f16>,
        (words, scales, zeros): (&CudaSlice<u32>, &CudaSlice<f16>, Option<&CudaSlice<f16>>),
        c: &mut CudaSlice<f16>,
    ) -> crate::Result<()> {
        let t = <T as LowpElement>::DTYPE;
        let bad = |message: String| crate::Error::Shape {
            kernel: NAME,
            message,
        };
        if !super::prepack::prepackable(t) {
            return Err(bad(format!(
                "{t} weights do not prepack: the fragment kernel takes types of 1, 2, 4 or 8 bits and 3-bit integers"
            )));
        }
        let group = group_arg(self.scheme)?;
        ring_fits(k, group)?;
        let (tiles_n, tiles_k) = (
            n.div_ceil(super::prepack::TILE_N),
            k.div_ceil(super::prepack::TILE_K),
        );
        let want = tiles_n * tiles_k * super::prepack::THREADS * Prepacked::words_per_thread(t);
        length(NAME, "words", words.len(), want)?;
        let lens = Lengths {
            a: a.len(),
            w: None,
            scales: scales.len(),
            zeros: zeros.map(|z| z.len()),
            c: c.len(),
            prepacked: true,
        };
        let (mi, ni, ki) = checked::<T>((m, n, k), self.scheme, &lens)?;
        let z = zeros.unwrap_or(&self.no_zeros);
        let choice = fragment_choice(m, (tiles_n, tiles_k));
        let jit = match choice.table(|col| sums_pay(self.sums[col].script(), k)) {
            Table::Sums(col) => &self.sums[col],
            Table::Fragments(row, col) => &self.fragments[row][col],
            Table::Wide(row) => &self.wide[row],
        };
        Ok(jit.launch(stream, (mi, ni, ki, a, words, scales, z, c))?)
    }

    /// The same computation by `config` on the CPU interpreter, on host slices.
    pub fn interpret(
        config: &QuantMatmul<T>,
        (m, a): (usize, &[f16]),
        w: &Quantized,
        c: &mut [f16],
    ) -> crate::Result<()> {
        interpret_script::<T, _>(config, config.group, (m, a), w, c)
    }

    /// The computation by the tensor-core kernel `config` on the CPU interpreter.
    pub fn interpret_tc(
        config: &QuantMatmulTc<T>,
        (m, a): (usize, &[f16]),
        w: &Quantized,
        c: &mut [f16],
    ) -> crate::Result<()> {
        if !w.shape.1.is_multiple_of(8) {
            return Err(crate::Error::Shape {
                kernel: NAME,
                message: format!(
                    "k = {}: the tensor-core kernel reads rows of A by TMA, whole 16-byte units (k a multiple of 8)",
                    w.shape.1
                ),
            });
        }
        interpret_script::<T, _>(config, config.group, (m, a), w, c)
    }

    /// The computation by the fragment kernel `config` on the CPU interpreter, on weights
    /// prepacked by [`super::prepack()`].
    pub fn interpret_fragments(
        config: &QuantMatmulFragments<T>,
        (m, a): (usize, &[f16]),
        w: &Prepacked,
        c: &mut [f16],
    ) -> crate::Result<()> {
        let (n, k) = w.shape;
        fragments_fit::<T>(w, config.group)?;
        // (the words' count is checked above)
        let lens = (a.len(), None, c.len());
        let (dims, zeros) = host_dims::<T>((m, n, k), w.scheme, lens, (&w.scales, &w.zeros))?;
        let (m, n, k) = dims;
        tilus::interpret(config, (m, n, k, a, &w.words[..], &w.scales[..], zeros, c))?;
        Ok(())
    }

    /// The computation by the ring kernel `config` on the CPU interpreter.
    pub fn interpret_ring(
        config: &QuantMatmulRing<T>,
        (m, a): (usize, &[f16]),
        w: &Quantized,
        c: &mut [f16],
    ) -> crate::Result<()> {
        ring_fits(w.shape.1, config.group)?;
        interpret_script::<T, _>(config, config.group, (m, a), w, c)
    }
}

/// The host's one-warp-group fragment kernel for `bm` rows of A per block and K in `splits`:
/// its stages (and steps a stage) by the bytes a step carries.
fn host_fragments<T>(group: i32, bm: i32, splits: i32) -> QuantMatmulFragments<T>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    let bits = <T as LowpElement>::DTYPE.bits();
    let (stages, steps) = super::fragment_stage_steps(super::fragment_stages(bits, bm));
    QuantMatmulFragments::new(group, bm)
        .with_stages(stages)
        .with_stage_steps(steps)
        .with_splits(splits)
}

/// Whether `sums` (a fragment kernel with its scales applied to the sums by group) is the one
/// to launch at K = `k`: its stages hold more than one step each (where it was measured
/// faster) and its plan at that K takes the sums.
fn sums_pay<T>(sums: &QuantMatmulFragments<T>, k: usize) -> bool
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
{
    sums.sums_take(k).is_some_and(|steps| steps > 1)
}

/// Multiprocessors of an H100 or H200: the blocks a grid of the two-warp-group fragment
/// kernel should reach before it takes more rows of A per block.
const MULTIPROCESSORS: usize = 132;

/// Which fragment kernel `run_fragments` launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FragmentKernel {
    /// One warp group, `block_m` rows of A per block (8 to 128), K in `splits`.
    One {
        /// Rows of A per block.
        block_m: i32,
        /// Blocks sharing a tile's K steps.
        splits: i32,
    },
    /// Two warp groups (128 rows of W per block), `block_m` rows of A per block (64, 128 or
    /// 256).
    Two {
        /// Rows of A per block.
        block_m: i32,
    },
}

/// Which of `QuantMatmulOp`'s tables, and where in it, a fragment kernel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Table {
    /// `fragments[row][col]`.
    Fragments(usize, usize),
    /// `sums[col]` (8 rows of A, the scales applied to the sums by group).
    Sums(usize),
    /// `wide[row]`.
    Wide(usize),
}

impl FragmentKernel {
    /// Its table and place: the sums kernel of its split count where it has 8 rows of A and
    /// `sums(col)` says that one pays (col: the splits' place), else its own slot.
    fn table(self, sums: impl Fn(usize) -> bool) -> Table {
        match (self, self.slot()) {
            (FragmentKernel::One { .. }, (0, col)) if sums(col) => Table::Sums(col),
            (FragmentKernel::One { .. }, (row, col)) => Table::Fragments(row, col),
            (FragmentKernel::Two { .. }, (row, _)) => Table::Wide(row),
        }
    }

    /// Its place in `QuantMatmulOp`'s tables: `fragments[row][col]` for one warp group (rows
    /// of A per block 8 to 128, splits 1 to 8), `wide[row]` for two (64 to 256 rows; col 0).
    fn slot(self) -> (usize, usize) {
        match self {
            FragmentKernel::One { block_m, splits } => (
                (block_m / 8).trailing_zeros() as usize,
                splits.trailing_zeros() as usize,
            ),
            FragmentKernel::Two { block_m } => ((block_m / 64).trailing_zeros() as usize, 0),
        }
    }
}

/// The fragment kernel `run_fragments` launches for `m` rows of A over `(tiles_n, tiles_k)`
/// tiles of W. Up to 128 rows: one warp group, the fewest rows of A per block of 8 to 128
/// that hold them, and the K splits of [`super::fragment_splits`]. Past 128: two warp groups
/// with 256 rows of A per block, or 128 or 64 where 256 would leave multiprocessors idle
/// (docs/perf.md, on an H100: 4096 x 28672 x 8192 int4 0.93x cuBLAS f16 with 256 rows
/// against 0.81x with one warp group; 300 x 8192 x 8192 0.69x with 128 rows, 0.45x with 256).
fn fragment_choice(m: usize, (tiles_n, tiles_k): (usize, usize)) -> FragmentKernel {
    if m <= 128 {
        return FragmentKernel::One {
            block_m: m.next_power_of_two().clamp(8, 128) as i32,
            splits: super::fragment_splits(tiles_n, tiles_k),
        };
    }
    let pairs = tiles_n.div_ceil(2);
    let block_m = [256, 128, 64]
        .into_iter()
        .find(|&bm| pairs * m.div_ceil(bm) >= MULTIPROCESSORS)
        .unwrap_or(64);
    FragmentKernel::Two {
        block_m: block_m as i32,
    }
}

/// Whether the fragment kernel takes prepacked weights `w` with a kernel for groups of
/// `group`: its type, rows of A of whole 16-byte units (TMA), K steps of 64 in one group.
fn fragments_fit<T: LowpElement>(w: &Prepacked, group: i32) -> crate::Result<()> {
    let bad = |message: String| crate::Error::Shape {
        kernel: NAME,
        message,
    };
    if w.dtype != T::DTYPE {
        return Err(bad(format!(
            "weights of {}, a kernel for {}",
            w.dtype,
            T::DTYPE
        )));
    }
    if group_arg(w.scheme)? != group {
        return Err(bad(format!(
            "weights in groups of {:?}, a kernel for groups of {group}",
            w.scheme.group
        )));
    }
    let (n, k) = w.shape;
    let (tiles_n, tiles_k) = w.tiles();
    if w.words.len()
        != tiles_n * tiles_k * super::prepack::THREADS * Prepacked::words_per_thread(w.dtype)
    {
        return Err(bad(format!(
            "{} prepacked words for [{n}, {k}]: prepack them with quant::prepack",
            w.words.len()
        )));
    }
    ring_fits(k, group)
}

/// Whether the ring kernel takes weights of `k` columns in groups of `group`: rows of A of
/// whole 16-byte units (TMA), and K steps of 64 within one group.
fn ring_fits(k: usize, group: i32) -> crate::Result<()> {
    if !k.is_multiple_of(8) || (group != 0 && group < 64) {
        return Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "k = {k}, groups of {group}: the ring kernel reads rows of A by TMA (k a multiple of 8) and K steps of 64 in one group (groups of 64 or more, or per channel)"
            ),
        });
    }
    Ok(())
}

/// Rows of A from which the tensor-core kernel runs: below, the few-rows kernel takes all of
/// them in one block, reading each row of W once. The tensor-core kernel also needs rows of A
/// of whole 16-byte units (K a multiple of 8) for TMA.
pub const TENSOR_CORE_MIN_M: usize = 5;

/// Which kernel [`QuantMatmulOp::run`] launches, and with how many rows of A per block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// [`QuantMatmul`] with 1, 2 or 4 rows per block: every row of A in one block.
    FewRows {
        /// Rows of A per block.
        block_m: i32,
    },
    /// [`QuantMatmulTc`] with 16, 32, 64 or 128 rows per block (the fewest that hold M, up to
    /// 128): each row of W read once up to 128 rows of A.
    TensorCores {
        /// Rows of A per block.
        block_m: i32,
    },
    /// [`QuantMatmulRing`]: more rows of A than one tile of the tensor-core kernel holds,
    /// groups of 64 or more (or per channel).
    Ring,
}

/// Rows of A from which [`QuantMatmulOp::run`] takes the ring kernel (where the scheme
/// allows): past one tile of [`QuantMatmulTc`], which reads each row of W once per 128 rows
/// of A and dequantizes it each time on the warps that multiply.
pub const RING_MIN_M: usize = 129;

/// The kernel for `(m, n, k)` with weights quantized by `scheme`.
pub fn plan((m, _, k): (usize, usize, usize), scheme: Scheme) -> Plan {
    let group = scheme.group.map_or(0, |g| g as i32);
    if m >= RING_MIN_M && ring_fits(k, group).is_ok() {
        Plan::Ring
    } else if m >= TENSOR_CORE_MIN_M && k.is_multiple_of(8) {
        Plan::TensorCores {
            block_m: m.next_power_of_two().clamp(16, 128) as i32,
        }
    } else {
        Plan::FewRows {
            block_m: m.next_power_of_two().min(4) as i32,
        }
    }
}

/// The kernel [`QuantMatmulOp::run`] takes for `(m, n, k)` and `scheme`, in words.
pub fn kernel_name(shape: (usize, usize, usize), scheme: Scheme) -> &'static str {
    match plan(shape, scheme) {
        Plan::FewRows { .. } => "few rows",
        Plan::TensorCores { .. } => "tensor cores",
        Plan::Ring => "ring",
    }
}

/// Runs `script` (for groups of `group`) on the interpreter once the weights and buffers fit.
fn interpret_script<T, S>(
    script: &S,
    group: i32,
    (m, a): (usize, &[f16]),
    w: &Quantized,
    c: &mut [f16],
) -> crate::Result<()>
where
    T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
    S: Script<Args = QuantArgs>,
{
    let (n, k) = w.shape;
    if w.dtype != <T as LowpElement>::DTYPE {
        return Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "weights of {}, a kernel for {}",
                w.dtype,
                <T as LowpElement>::DTYPE
            ),
        });
    }
    if group_arg(w.scheme)? != group {
        return Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "weights in groups of {:?}, a kernel for groups of {group}",
                w.scheme.group
            ),
        });
    }
    let lens = (a.len(), Some(w.packed.len()), c.len());
    let (dims, zeros) = host_dims::<T>((m, n, k), w.scheme, lens, (&w.scales, &w.zeros))?;
    let (m, n, k) = dims;
    tilus::interpret(script, (m, n, k, a, &w.packed[..], &w.scales[..], zeros, c))?;
    Ok(())
}

/// A kernel's `(m, n, k)` and the zero points it is given.
type HostDims<'z> = ((i32, i32, i32), &'z [f16]);

/// Passed for the zero points of types without them (never read).
static NO_ZEROS: [f16; 1] = [f16::ZERO];

/// The kernel's `(m, n, k)` for host buffers of lengths `(a, w, c)` (`w`: the packed codes';
/// None for prepacked words, checked apart) and the zero points to pass (a stand-in for types without them), once the lengths fit.
fn host_dims<'z, T: LowpElement>(
    shape: (usize, usize, usize),
    scheme: Scheme,
    (a, w, c): (usize, Option<usize>, usize),
    (scales, zeros): (&[f16], &'z [f16]),
) -> crate::Result<HostDims<'z>> {
    let unsigned = matches!(T::DTYPE, DType::UInt(_));
    let lens = Lengths {
        a,
        w,
        scales: scales.len(),
        zeros: unsigned.then_some(zeros.len()),
        c,
        // (prepacked words come without packed codes)
        prepacked: w.is_none(),
    };
    let dims = checked::<T>(shape, scheme, &lens)?;
    Ok((dims, if unsigned { zeros } else { &NO_ZEROS }))
}

/// The kernel's `group` for a scheme: a positive multiple of 32 (whose steps of K stay in one
/// group), or 0 per channel.
fn group_arg(scheme: Scheme) -> crate::Result<i32> {
    match scheme.group {
        None => Ok(0),
        Some(g) if g >= 32 && g % 32 == 0 && g <= 1 << 20 => Ok(g as i32),
        Some(g) => Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "groups of {g}: a positive multiple of 32 (32, 64, 128, ...) is needed"
            ),
        }),
    }
}

struct Lengths {
    a: usize,
    /// The packed codes' (None: prepacked words, whose count the caller checks).
    w: Option<usize>,
    scales: usize,
    zeros: Option<usize>,
    c: usize,
    /// Scales and zero points as [`Prepacked`] holds them (transposed, padded to whole tiles).
    prepacked: bool,
}

/// The kernel's `(m, n, k)` once the buffers' lengths fit the shape: K a multiple of the
/// group, packed rows of whole bytes.
fn checked<T: LowpElement>(
    (m, n, k): (usize, usize, usize),
    scheme: Scheme,
    lens: &Lengths,
) -> crate::Result<(i32, i32, i32)> {
    let dims = (
        dim(NAME, "m", m, 1)?,
        dim(NAME, "n", n, 1)?,
        dim(NAME, "k", k, 1)?,
    );
    let bits = T::DTYPE.bits() as usize;
    let bad = |message: String| crate::Error::Shape {
        kernel: NAME,
        message,
    };
    if !(k * bits).is_multiple_of(8) {
        return Err(bad(format!(
            "k = {k}: rows of {} must be whole bytes (k a multiple of {})",
            T::DTYPE,
            8 / gcd(bits, 8)
        )));
    }
    if let Some(g) = scheme.group {
        if k % g != 0 {
            return Err(bad(format!("k = {k} is not a multiple of the group ({g})")));
        }
    }
    let groups = scheme.groups(k);
    length(NAME, "a", lens.a, elements(NAME, m, k)?)?;
    if let Some(w) = lens.w {
        length(NAME, "w", w, elements(NAME, n, k * bits / 8)?)?;
    }
    let per_scale = if lens.prepacked {
        Prepacked::scale_count((n, k), scheme.group.unwrap_or(0))
    } else {
        elements(NAME, n, groups)?
    };
    length(NAME, "scales", lens.scales, per_scale)?;
    match (T::DTYPE, lens.zeros) {
        (DType::UInt(_), Some(z)) => length(NAME, "zeros", z, per_scale)?,
        (DType::UInt(_), None) => {
            return Err(bad(format!("{} weights need zero points", T::DTYPE)))
        }
        (_, Some(_)) => return Err(bad(format!("{} weights have no zero points", T::DTYPE))),
        (_, None) => {}
    }
    length(NAME, "c", lens.c, elements(NAME, m, n)?)?;
    Ok(dims)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host asks the block's plan whether the sums by group take a K exactly where the
    /// kernel itself would trace them (every group, K and split count), and launches them at
    /// 8 rows of A only where its stages hold two steps: four bits or fewer, groups of whole
    /// stages, an even count of K steps.
    #[test]
    fn sums_by_group_are_taken_where_the_kernel_takes_them() {
        use tilus::lowp::{Int, I4, I8};
        fn agree<T>(group: i32, k: usize, splits: i32)
        where
            T: Element + LowpElement + std::hash::Hash + std::fmt::Debug,
        {
            let plain = host_fragments::<T>(group, 8, splits);
            let what = format!("{plain:?} at k = {k}");
            assert!(tilus::trace(&plain, &[k as i64]).is_ok(), "{what}");
            let sums = plain.with_scale_sums(true);
            let traced = tilus::trace(&sums, &[k as i64]).is_ok();
            assert_eq!(sums.sums_take(k).is_some(), traced, "{what}");
        }
        for group in [0, 64, 128, 256] {
            for k in [256, 640, 1024, 8192, 8448] {
                for splits in [1, 2, 8] {
                    agree::<I4>(group, k, splits);
                    agree::<I8>(group, k, splits);
                    agree::<Int<3>>(group, k, splits);
                }
            }
        }
        let pays = |sums: QuantMatmulFragments<I4>, k| sums_pay(&sums.with_scale_sums(true), k);
        assert!(pays(host_fragments(128, 8, 1), 8192));
        assert!(pays(host_fragments(0, 8, 2), 8192), "per channel");
        assert!(
            !pays(host_fragments(64, 8, 1), 8192),
            "a group within a stage"
        );
        assert!(
            !pays(host_fragments(128, 8, 1), 8256),
            "129 steps: one a stage"
        );
        let wide = host_fragments::<I8>(128, 8, 1).with_scale_sums(true);
        assert!(!sums_pay(&wide, 8192), "eight bits: one step a stage");
    }

    /// Up to 128 rows of A one warp group, the fewest rows per block that hold M and the
    /// splits that fill the machine; past 128 two warp groups, with 256 rows per block where
    /// that still gives every multiprocessor a block, fewer where it would not.
    #[test]
    fn fragments_take_the_fewest_rows_per_block_and_split_small_grids() {
        use super::{fragment_choice, FragmentKernel::*};
        let one = |block_m, splits| One { block_m, splits };
        assert_eq!(fragment_choice(1, (448, 128)), one(8, 1));
        assert_eq!(fragment_choice(1, (192, 64)), one(8, 2));
        assert_eq!(fragment_choice(16, (128, 128)), one(16, 4));
        assert_eq!(fragment_choice(100, (448, 128)), one(128, 1));
        assert_eq!(fragment_choice(129, (448, 128)), Two { block_m: 256 });
        assert_eq!(fragment_choice(4096, (448, 128)), Two { block_m: 256 });
        assert_eq!(fragment_choice(300, (128, 128)), Two { block_m: 128 });
        assert_eq!(fragment_choice(300, (16, 64)), Two { block_m: 64 });
        // their places in the op's tables; the sums kernel only at 8 rows of A, where it pays
        assert_eq!(one(8, 4).table(|col| col == 2), Table::Sums(2));
        assert_eq!(one(8, 2).table(|col| col == 2), Table::Fragments(0, 1));
        assert_eq!(one(16, 4).table(|_| true), Table::Fragments(1, 2));
        assert_eq!(Two { block_m: 128 }.table(|_| true), Table::Wide(1));
        assert_eq!(one(8, 1).slot(), (0, 0));
        assert_eq!(one(16, 4).slot(), (1, 2));
        assert_eq!(one(128, 8).slot(), (4, 3));
        assert_eq!(Two { block_m: 64 }.slot(), (0, 0));
        assert_eq!(Two { block_m: 128 }.slot(), (1, 0));
        assert_eq!(Two { block_m: 256 }.slot(), (2, 0));
    }

    /// Every row of A in one block up to 4 rows; the tensor cores from 5, the fewest rows per
    /// block that hold M (up to 128); the ring past 128 rows where the groups allow; a K whose
    /// rows of A TMA cannot read stays on the few-rows kernel.
    #[test]
    fn plans_take_every_row_of_a_in_one_block_up_to_128_then_the_ring() {
        let few = |b| Plan::FewRows { block_m: b };
        let tc = |b| Plan::TensorCores { block_m: b };
        let g = Scheme::grouped(128);
        assert_eq!(plan((1, 4096, 4096), g), few(1));
        assert_eq!(plan((2, 4096, 4096), g), few(2));
        assert_eq!(plan((3, 4096, 4096), g), few(4));
        assert_eq!(plan((4, 4096, 4096), g), few(4));
        assert_eq!(plan((5, 4096, 4096), g), tc(16));
        assert_eq!(plan((16, 4096, 4096), g), tc(16));
        assert_eq!(plan((17, 4096, 4096), g), tc(32));
        assert_eq!(plan((64, 4096, 4096), g), tc(64));
        assert_eq!(plan((100, 4096, 4096), g), tc(128));
        assert_eq!(plan((128, 4096, 4096), g), tc(128));
        assert_eq!(plan((129, 4096, 4096), g), Plan::Ring);
        assert_eq!(plan((4096, 4096, 4096), Scheme::per_channel()), Plan::Ring);
        assert_eq!(plan((4096, 4096, 4096), Scheme::grouped(32)), tc(128));
        assert_eq!(plan((300, 4096, 4092), g), few(4));
        assert_eq!(kernel_name((16, 1, 8), g), "tensor cores");
        assert_eq!(kernel_name((4, 1, 8), g), "few rows");
        assert_eq!(kernel_name((200, 1, 128), g), "ring");
    }
}
