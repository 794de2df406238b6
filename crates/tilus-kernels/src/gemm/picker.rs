//! [`Gemm`]: one entry point for `C = A · Bᵀ` on f16 or bf16 device buffers of any shape, for users
//! who do not write kernels. It holds the kernels that suit different shapes — v6 (a
//! persistent, warp-specialized kernel: large problems), stream-K (v6 with its last two
//! rounds' tiles shared out by K steps: shapes whose tiles do not fill the machine in whole
//! rounds; a second, 128 × 128 form shares out every tile of mid-size shapes whose 128 × 128
//! tiles are about one round), split-K (small M: K in ranges, so that every multiprocessor
//! has work) and the general GEMM (any K: rows TMA cannot read are staged first) — each
//! autotuned over its own space on first use of a problem, and picks between them per shape:
//! a shape where more than one applies is timed with each once (CUDA events, the median of a
//! few runs) and the faster is kept.
//!
//! ```no_run
//! use tilus_kernels::gemm::Gemm;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let device = tilus::runtime::Device::open(0)?;
//! let gemm = Gemm::new(&device)?;
//! let (m, n, k) = (16, 4096, 4096);
//! let a = device.stream().clone_htod(&vec![half::f16::ONE; m * k])?;
//! let b = device.stream().clone_htod(&vec![half::f16::ONE; n * k])?;
//! let mut c = device.stream().alloc_zeros::<half::f16>(m * n)?;
//! gemm.matmul(device.stream(), (m, n, k), &a, &b, &mut c)?; // C = A · Bᵀ
//! # Ok(()) }
//! ```

use crate::gemm::general::{GemmGeneral, GemmProblem, Layout};
use crate::gemm::matmuls::Matmuls;
use crate::gemm::split_k::SplitK;
use crate::gemm::stream_k::{MatmulStreamK, StreamK};
use crate::host::{dim, elements, length};
use half::f16;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus::tune::bench::{time_interleaved, Timing};
use tilus::tune::{Autotuned, Tunable};

/// Largest M for which split-K is a candidate: beyond it, v6's tiles fill the machine.
pub const SPLIT_K_MAX_M: usize = 256;

/// Timed runs of each candidate when a shape is first seen (after one warm-up run, which
/// also tunes the kernel itself).
const CHOICE_ROUNDS: usize = 5;

/// The kernels a shape can run on.
///
/// ```
/// use tilus_kernels::gemm::{candidates, Kernel};
/// let names: Vec<&str> = candidates((1, 4096, 4096)).into_iter().map(Kernel::name).collect();
/// assert_eq!(names, ["split_k", "v6"]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// v6 (`hopper_matmul_v6`).
    V6,
    /// Split-K (`hopper_matmul_split_k` and its sum).
    SplitK,
    /// Stream-K (`hopper_matmul_stream_k`) on v6's default 128 × 256 tiles.
    StreamK,
    /// Stream-K on 128 × 128 tiles with six stages: mid-size shapes (M of 128 to a few
    /// thousand, long K) whose larger tiles leave multiprocessors idle.
    StreamKNarrow,
    /// The general GEMM (`gemm::general`), its operands staged into rows TMA can read.
    General,
}

impl Kernel {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::V6 => "v6",
            Kernel::SplitK => "split_k",
            Kernel::StreamK => "stream_k",
            Kernel::StreamKNarrow => "stream_k_128x128",
            Kernel::General => "general",
        }
    }
}

/// The kernels that apply to a shape `(m, n, k)`, the usual winner first: rows of K that do
/// not start on 16-byte boundaries (K not a multiple of 8) only the general GEMM takes; the
/// others are timed against each other: split-K up to [`SPLIT_K_MAX_M`] rows, stream-K on
/// v6's tiles beyond (below, its tiles are fewer than a round and it shares none), and
/// stream-K on 128 × 128 tiles from [`STREAM_K_NARROW_MIN_M`] rows (at 256 × 8192 × 8192,
/// 512 × 4096 × 4096 and 2048 × 1024 × 8192 it ran 0.91× cuBLAS where the others reached
/// 0.84–0.90×; see docs/perf.md).
///
/// ```
/// use tilus_kernels::gemm::{candidates, Kernel, SPLIT_K_MAX_M};
/// assert_eq!(candidates((16, 4096, 4096)), [Kernel::SplitK, Kernel::V6]);
/// assert_eq!(
///     candidates((SPLIT_K_MAX_M, 4096, 4096)),
///     [Kernel::SplitK, Kernel::V6, Kernel::StreamKNarrow]
/// );
/// assert_eq!(
///     candidates((SPLIT_K_MAX_M + 1, 4096, 4096)),
///     [Kernel::V6, Kernel::StreamK, Kernel::StreamKNarrow]
/// );
/// assert_eq!(candidates((4096, 4096, 4095)), [Kernel::General]);
/// ```
pub fn candidates((m, _, k): (usize, usize, usize)) -> Vec<Kernel> {
    let mut options = if !k.is_multiple_of(8) {
        return vec![Kernel::General];
    } else if m <= SPLIT_K_MAX_M {
        vec![Kernel::SplitK, Kernel::V6]
    } else {
        vec![Kernel::V6, Kernel::StreamK]
    };
    if m >= STREAM_K_NARROW_MIN_M {
        options.push(Kernel::StreamKNarrow);
    }
    options
}

/// Smallest M for which stream-K on 128 × 128 tiles is a candidate: below, a row of its tiles
/// is all there is and split-K or v6's narrow tiles win (0.65× cuBLAS at 128 × 4096 × 4096).
/// A bucket's first M (choices are kept per power of two), so that every M of a bucket has
/// the same candidates.
pub const STREAM_K_NARROW_MIN_M: usize = 129;

/// Stream-K's 128 × 128 form, six stages deep ([`Kernel::StreamKNarrow`]).
fn stream_k_narrow() -> MatmulStreamK {
    let mut config = MatmulStreamK::default();
    config.tile.block_n = 128;
    config.tile.stages = 6;
    config
}

/// `Gemm`'s `C = A · Bᵀ` as the general GEMM's problem: A `[m, k]` and C `[m, n]` row-major;
/// B `[n, k]` row-major is op(B) = `[k, n]` column-major.
fn tn_problem((m, n, k): (usize, usize, usize)) -> GemmProblem {
    GemmProblem::new(1, (m, n, k))
        .a(Layout::row_major(k))
        .b(Layout::col_major(k))
        .c(Layout::row_major(n))
}

/// The shape a choice is kept for: M rounded up to a power of two (as the kernels' own
/// autotuners bucket it), N and K exactly (they are compile-time constants of the kernels).
fn choice_key((m, n, k): (usize, usize, usize)) -> (usize, usize, usize) {
    (m.next_power_of_two(), n, k)
}

/// The lengths of `a`, `b` and `c` against `(m, n, k)`, and dimensions that fit the kernels'
/// `i32` arguments (`m` may be 0).
fn check_shape((m, n, k): (usize, usize, usize), [a, b, c]: [usize; 3]) -> crate::Result<()> {
    const NAME: &str = "gemm";
    dim(NAME, "m", m, 0)?;
    dim(NAME, "n", n, 1)?;
    dim(NAME, "k", k, 1)?;
    length(NAME, "a", a, elements(NAME, m, k)?)?;
    length(NAME, "b", b, elements(NAME, n, k)?)?;
    length(NAME, "c", c, elements(NAME, m, n)?)
}

/// `C = A · Bᵀ` for any shape (see the module documentation), on operands of type `T` (f16
/// or bf16; `Gemm::<half::bf16>::new`).
///
/// ```no_run
/// use tilus_kernels::gemm::Gemm;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let gemm = Gemm::<half::bf16>::new(&device)?;
/// let (m, n, k) = (4096, 4096, 4096);
/// let a = device.stream().clone_htod(&vec![half::bf16::ONE; m * k])?;
/// let b = device.stream().clone_htod(&vec![half::bf16::ONE; n * k])?;
/// let mut c = device.stream().alloc_zeros::<half::bf16>(m * n)?;
/// gemm.matmul(device.stream(), (m, n, k), &a, &b, &mut c)?;
/// println!("ran {:?}", gemm.chosen_for((m, n, k))); // Some(V6)
/// # Ok(()) }
/// ```
pub struct Gemm<T: Matmuls = f16> {
    v6: Autotuned<T::V6>,
    split_k: SplitK<T>,
    stream_k: StreamK<T>,
    stream_k_narrow: StreamK<T>,
    general: GemmGeneral<T>,
    chosen: Mutex<HashMap<(usize, usize, usize), Kernel>>,
}

impl<T: Matmuls> Gemm<T> {
    /// The kernels bound to `device` (nothing is compiled until a shape is first used).
    pub fn new(device: &Device) -> tilus::Result<Gemm<T>> {
        Ok(Gemm {
            v6: T::V6::autotuned(device)?,
            split_k: SplitK::tuned(device)?,
            // its space spills a few words (the autotuner skips spilling kernels): v6's
            // default tile, 128 × 256
            stream_k: StreamK::fixed(Default::default(), device),
            stream_k_narrow: StreamK::fixed(stream_k_narrow(), device),
            general: GemmGeneral::new(device).map_err(tilus::Error::from)?,
            chosen: Mutex::new(HashMap::new()),
        })
    }

    /// `c = a · bᵀ` with `a` `[m, k]`, `b` `[n, k]` (both row-major, K innermost) and `c`
    /// `[m, n]`, in `T` with f32 accumulation, on `stream`, for any K. The buffers are
    /// checked against the shape before anything is launched; `m = 0` launches nothing.
    pub fn matmul(
        &self,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> crate::Result<()> {
        check_shape((m, n, k), [a.len(), b.len(), c.len()])?;
        if m == 0 {
            return Ok(());
        }
        let dims = (m, n, k);
        let known = self.chosen_for(dims);
        let kernel = match known {
            Some(kernel) => kernel,
            None => {
                let kernel = self.choose(stream, dims, a, b, c)?;
                let mut chosen = self.chosen.lock().unwrap_or_else(|e| e.into_inner());
                chosen.insert(choice_key(dims), kernel);
                kernel
            }
        };
        self.run(kernel, stream, dims, a, b, c)
    }

    /// The kernel chosen for a shape, once it has run.
    pub fn chosen_for(&self, dims: (usize, usize, usize)) -> Option<Kernel> {
        let chosen = self.chosen.lock().unwrap_or_else(|e| e.into_inner());
        chosen.get(&choice_key(dims)).copied()
    }

    fn run(
        &self,
        kernel: Kernel,
        stream: &Arc<CudaStream>,
        (m, n, k): (usize, usize, usize),
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> crate::Result<()> {
        match kernel {
            Kernel::V6 => self
                .v6
                .launch(stream, (m as i32, n as i32, k as i32, a, b, c))?,
            Kernel::SplitK => self.split_k.launch_on(stream, (m, n, k), (a, b), c)?,
            Kernel::StreamK => self.stream_k.launch_on(stream, (m, n, k), (a, b), c)?,
            Kernel::StreamKNarrow => {
                self.stream_k_narrow
                    .launch_on(stream, (m, n, k), (a, b), c)?
            }
            Kernel::General => self.general.run(stream, &tn_problem((m, n, k)), a, b, c)?,
        }
        Ok(())
    }

    /// Times each candidate on the problem itself (its output is overwritten by the launch
    /// that follows) and returns the fastest.
    fn choose(
        &self,
        stream: &Arc<CudaStream>,
        dims: (usize, usize, usize),
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> crate::Result<Kernel> {
        let options = candidates(dims);
        if options.len() == 1 {
            return Ok(options[0]);
        }
        let c = std::cell::RefCell::new(c);
        let mut runs: Vec<Box<dyn FnMut() -> tilus::Result<()> + '_>> = options
            .iter()
            .map(|&kernel| {
                let c = &c;
                Box::new(move || {
                    let mut c = c.borrow_mut();
                    self.run(kernel, stream, dims, a, b, &mut c)
                        .map_err(tilus::Error::from)
                }) as Box<dyn FnMut() -> tilus::Result<()>>
            })
            .collect();
        let mut launchers: Vec<&mut dyn FnMut() -> tilus::Result<()>> =
            runs.iter_mut().map(|r| r.as_mut() as _).collect();
        let times = time_interleaved(stream, &mut launchers, (1, CHOICE_ROUNDS), Timing::Flushed)?;
        let best = times
            .iter()
            .enumerate()
            .min_by(|x, y| x.1.total_cmp(y.1))
            .map_or(0, |(i, _)| i);
        Ok(options[best])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `Gemm` runs on the general GEMM at a K TMA cannot read is `A · Bᵀ` (on the
    /// interpreter, against a host product; small integers, so every sum is exact).
    #[test]
    fn the_general_gemm_runs_gemms_product_at_an_odd_k() {
        use crate::gemm::general::{GemmGeneral, MatmulGeneral};
        let (m, n, k) = (70, 40, 13);
        let value = |i: usize| f16::from_f32((i * 7 % 11) as f32 - 5.0);
        let a: Vec<f16> = (0..m * k).map(value).collect();
        let b: Vec<f16> = (0..n * k).map(|i| value(i + 3)).collect();
        let mut c = vec![f16::NAN; m * n];
        let p = tn_problem((m, n, k));
        GemmGeneral::<f16>::interpret(&MatmulGeneral::default(), &p, &a, &b, &mut c).unwrap();
        for i in 0..m {
            for j in 0..n {
                let exact: f32 = (0..k)
                    .map(|x| a[i * k + x].to_f32() * b[j * k + x].to_f32())
                    .sum();
                assert_eq!(c[i * n + j].to_f32(), exact, "C[{i}, {j}]");
            }
        }
    }

    /// The kernels' names tell them apart (reports and the cached choice name them), and the
    /// narrow stream-K candidate is another configuration than stream-K's default.
    #[test]
    fn kernels_have_distinct_names_and_the_narrow_stream_k_its_own_tiles() {
        let all = [
            Kernel::V6,
            Kernel::SplitK,
            Kernel::StreamK,
            Kernel::StreamKNarrow,
            Kernel::General,
        ];
        let names: std::collections::BTreeSet<&str> = all.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), all.len());
        assert!(names
            .iter()
            .all(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')));
        assert!(!names.contains(""));
        let narrow = stream_k_narrow();
        assert_eq!((narrow.tile.block_n, narrow.tile.stages), (128, 6));
        assert_ne!((narrow.tile.block_n, narrow.tile.stages), {
            let d = MatmulStreamK::default();
            (d.tile.block_n, d.tile.stages)
        });
    }

    #[test]
    fn small_m_weighs_split_k_larger_m_stream_k_and_k_off_16_bytes_runs_the_general_gemm() {
        let (n, k) = (4096, 4096);
        let small = vec![Kernel::SplitK, Kernel::V6];
        assert_eq!(candidates((1, n, k)), small);
        assert_eq!(candidates((STREAM_K_NARROW_MIN_M - 1, n, k)), small);
        let mid = vec![Kernel::SplitK, Kernel::V6, Kernel::StreamKNarrow];
        assert_eq!(candidates((STREAM_K_NARROW_MIN_M, n, k)), mid);
        assert_eq!(candidates((SPLIT_K_MAX_M, n, k)), mid);
        assert_eq!(
            candidates((SPLIT_K_MAX_M + 1, n, k)),
            vec![Kernel::V6, Kernel::StreamK, Kernel::StreamKNarrow]
        );
        let narrow = stream_k_narrow().tile;
        assert_eq!(
            (narrow.block_m, narrow.block_n, narrow.stages),
            (128, 128, 6)
        );
        for k in [1, 7, 4095, 1001] {
            assert_eq!(candidates((1, n, k)), vec![Kernel::General]);
            assert_eq!(candidates((5000, n, k)), vec![Kernel::General]);
        }
        assert_eq!(choice_key((100, 4096, 512)), (128, 4096, 512));
        assert_eq!(choice_key((128, 4096, 512)), (128, 4096, 512));
    }
}
