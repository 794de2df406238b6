//! [`GemmGeneral`]: the general GEMM's host API. A problem ([`GemmProblem`]) names the
//! operands' orders, leading dimensions and batch strides; it is checked against the buffers
//! before anything is launched, a column-major C becomes the transposed product into a
//! row-major one, and the kernel's [`Form`] is chosen from it.

use super::kernel::{Form, MatmulGeneral};
use crate::gemm::Matmuls;
use crate::host::{dim, elements};
use crate::{Error, Result};
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;
use tilus::tune::FixedOrTuned;

/// The kernel's name in errors.
const KERNEL: &str = "gemm";

/// How a matrix lies in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Rows contiguous: element `(i, j)` at `i · ld + j`.
    RowMajor,
    /// Columns contiguous: element `(i, j)` at `i + j · ld`.
    ColMajor,
}

/// One operand's storage: its order, leading dimension (elements between rows, or columns)
/// and batch stride (elements between the matrices of a batch; 0: one matrix shared by every
/// product).
///
/// ```
/// use tilus_kernels::gemm::general::{Layout, Order};
/// let a = Layout::row_major(4096).batched(4096 * 4096);
/// assert_eq!((a.order, a.ld, a.batch_stride), (Order::RowMajor, 4096, 4096 * 4096));
/// assert_eq!(Layout::col_major(8).offset(2, 3), 2 + 3 * 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// Rows or columns contiguous.
    pub order: Order,
    /// Elements from one row (row-major) or column (column-major) to the next.
    pub ld: usize,
    /// Elements from one matrix of the batch to the next (0: shared).
    pub batch_stride: usize,
}

impl Layout {
    /// Row-major with leading dimension `ld`, one matrix (or shared by a batch).
    pub fn row_major(ld: usize) -> Layout {
        Layout {
            order: Order::RowMajor,
            ld,
            batch_stride: 0,
        }
    }

    /// Column-major with leading dimension `ld`.
    pub fn col_major(ld: usize) -> Layout {
        Layout {
            order: Order::ColMajor,
            ld,
            batch_stride: 0,
        }
    }

    /// The same, `stride` elements from one matrix of a batch to the next.
    pub fn batched(self, stride: usize) -> Layout {
        Layout {
            batch_stride: stride,
            ..self
        }
    }

    /// Element `(i, j)`'s offset in one matrix.
    pub fn offset(&self, i: usize, j: usize) -> usize {
        match self.order {
            Order::RowMajor => i * self.ld + j,
            Order::ColMajor => i + j * self.ld,
        }
    }

    /// The transposed matrix's storage: the other order, the same elements.
    fn transposed(self) -> Layout {
        Layout {
            order: match self.order {
                Order::RowMajor => Order::ColMajor,
                Order::ColMajor => Order::RowMajor,
            },
            ..self
        }
    }

    /// `(rows, cols)` of an `r × c` matrix as stored (rows of the storage: the leading
    /// dimension's extent is `cols`).
    fn stored(&self, r: usize, c: usize) -> (usize, usize) {
        match self.order {
            Order::RowMajor => (r, c),
            Order::ColMajor => (c, r),
        }
    }
}

/// `C[b] = alpha · A[b] · B[b] + beta · C[b]` for `b < batch`, A `[m, k]`, B `[k, n]`, C
/// `[m, n]`, each stored as its [`Layout`] says. With `beta == 0`, C is not read (it may
/// hold anything, NaN included).
///
/// ```
/// use tilus_kernels::gemm::general::{GemmProblem, Layout};
/// // 8 products of a [64, 32] A (column-major) by one shared [32, 16] B (row-major)
/// let p = GemmProblem::new(8, (64, 16, 32))
///     .a(Layout::col_major(64).batched(64 * 32))
///     .b(Layout::row_major(16))
///     .c(Layout::row_major(16).batched(64 * 16));
/// assert_eq!(p.lengths(), Ok((8 * 64 * 32, 32 * 16, 8 * 64 * 16)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmProblem {
    /// Products in the batch.
    pub batch: usize,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// A's storage.
    pub a: Layout,
    /// B's storage.
    pub b: Layout,
    /// C's storage.
    pub c: Layout,
    /// The product's scale.
    pub alpha: f32,
    /// C's scale (0: C is not read).
    pub beta: f32,
}

impl GemmProblem {
    /// `batch` products of `m × n × k`, every operand row-major and contiguous (batches one
    /// after another), `alpha = 1`, `beta = 0`.
    pub fn new(batch: usize, (m, n, k): (usize, usize, usize)) -> GemmProblem {
        GemmProblem {
            batch,
            m,
            n,
            k,
            a: Layout::row_major(k).batched(m * k),
            b: Layout::row_major(n).batched(k * n),
            c: Layout::row_major(n).batched(m * n),
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// With A stored so.
    pub fn a(self, a: Layout) -> GemmProblem {
        GemmProblem { a, ..self }
    }

    /// With B stored so.
    pub fn b(self, b: Layout) -> GemmProblem {
        GemmProblem { b, ..self }
    }

    /// With C stored so.
    pub fn c(self, c: Layout) -> GemmProblem {
        GemmProblem { c, ..self }
    }

    /// With these scales.
    pub fn scales(self, alpha: f32, beta: f32) -> GemmProblem {
        GemmProblem {
            alpha,
            beta,
            ..self
        }
    }

    /// The elements each buffer must hold at least, `(a, b, c)`, or why the problem is not
    /// one (a dimension below 1, a leading dimension shorter than its rows, products of C
    /// that overlap).
    pub fn lengths(&self) -> std::result::Result<(usize, usize, usize), String> {
        let GemmProblem { batch, m, n, k, .. } = *self;
        for (name, v) in [("batch", batch), ("m", m), ("n", n), ("k", k)] {
            if v == 0 {
                return Err(format!("{name} = 0: every dimension must be at least 1"));
            }
        }
        let need = |name: &str, l: &Layout, r: usize, c: usize| {
            let (rows, cols) = l.stored(r, c);
            if l.ld < cols {
                return Err(format!(
                    "{name}'s leading dimension {} is shorter than its stored rows of {cols} \
                     ({:?}, {r} × {c})",
                    l.ld, l.order
                ));
            }
            let one = (rows - 1)
                .checked_mul(l.ld)
                .and_then(|x| x.checked_add(cols))
                .ok_or_else(|| format!("{name} overflows the address space"))?;
            let count = if l.batch_stride == 0 { 1 } else { batch };
            (count - 1)
                .checked_mul(l.batch_stride)
                .and_then(|x| x.checked_add(one))
                .ok_or_else(|| format!("{name} overflows the address space"))
        };
        let a = need("A", &self.a, m, k)?;
        let b = need("B", &self.b, k, n)?;
        let c = need("C", &self.c, m, n)?;
        let (rows, cols) = self.c.stored(m, n);
        let one_c = (rows - 1) * self.c.ld + cols;
        if batch > 1 && self.c.batch_stride < one_c {
            return Err(format!(
                "C's batch stride {} is shorter than one product's {one_c} elements: the \
                 products would overwrite each other",
                self.c.batch_stride
            ));
        }
        Ok((a, b, c))
    }

    /// The same product with a row-major C: a column-major C is the transposed product
    /// (`Cᵀ = Bᵀ · Aᵀ`) into a row-major `Cᵀ`, A and B swapped.
    pub fn with_row_major_c(self) -> GemmProblem {
        match self.c.order {
            Order::RowMajor => self,
            Order::ColMajor => GemmProblem {
                m: self.n,
                n: self.m,
                a: self.b.transposed(),
                b: self.a.transposed(),
                c: self.c.transposed(),
                ..self
            },
        }
    }
}

/// The kernel's arguments but the buffers and scales, checked, for a row-major C.
#[derive(Clone, Copy, Debug)]
struct Launch {
    p: GemmProblem,
    dims: [i32; 4],
    form: i32,
    /// `(lda, stride_a, a_batches, ldb, stride_b, b_batches, ldc, stride_c)`.
    strides: [i32; 8],
    /// The copies of A and B (of the row-major-C problem) into workspaces TMA can read,
    /// where they are staged.
    stage: [Option<Stage>; 2],
}

/// One operand's staging copy ([`super::StageCopy`]): its matrices as stored and the
/// workspace's rows.
#[derive(Clone, Copy, Debug)]
struct Stage {
    /// Matrices (the batch, or 1 for a shared operand).
    count: i32,
    /// Rows and columns as stored.
    rows: i32,
    cols: i32,
    /// The source's leading dimension and batch stride.
    ld: i32,
    step: i32,
    /// The workspace's leading dimension ([`super::staged_ld`]).
    ld_out: i32,
}

impl Stage {
    /// Elements of the workspace.
    fn len(&self) -> usize {
        self.count as usize * self.rows as usize * self.ld_out as usize
    }

    /// The copy's arguments from `src` into `dst`.
    fn args<S, D>(&self, src: S, dst: D) -> (i32, i32, i32, S, i32, i32, D) {
        (
            self.count, self.rows, self.cols, src, self.ld, self.step, dst,
        )
    }
}

/// The kernel's argument tuple of a checked problem.
type Args<B, C> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    B,
    i32,
    i32,
    i32,
    B,
    i32,
    i32,
    i32,
    C,
    i32,
    i32,
    f32,
    f32,
);

impl Launch {
    /// The kernel's A and B of the caller's `a` and `b` (a column-major C swaps them).
    fn operands<B>(&self, caller: &GemmProblem, (a, b): (B, B)) -> (B, B) {
        if caller.c.order == Order::ColMajor {
            (b, a)
        } else {
            (a, b)
        }
    }

    /// The kernel's arguments on its operands `a` and `b` ([`Launch::operands`], or their
    /// staged copies) and `c`.
    fn args<B, C>(&self, (a, b): (B, B), c: C) -> Args<B, C> {
        let [batch, m, n, k] = self.dims;
        let [lda, sa, na, ldb, sb, nb, ldc, sc] = self.strides;
        let (alpha, beta) = (self.p.alpha, self.p.beta);
        (
            batch, m, n, k, self.form, a, lda, sa, na, b, ldb, sb, nb, c, ldc, sc, alpha, beta,
        )
    }
}

/// Checks `p` against buffers of `lens` elements `(a, b, c)` of `elem` bytes, and gives the
/// kernel's arguments.
fn prepare(
    p: &GemmProblem,
    lens: (usize, usize, usize),
    elem: usize,
    staging: bool,
) -> Result<Launch> {
    let bad = |message: String| Error::Shape {
        kernel: KERNEL,
        message,
    };
    let (la, lb, lc) = p.lengths().map_err(bad)?;
    for (name, len, needed) in [("a", lens.0, la), ("b", lens.1, lb), ("c", lens.2, lc)] {
        if len < needed {
            return Err(bad(format!(
                "`{name}` has {len} elements; the problem needs at least {needed}"
            )));
        }
    }
    let p = p.with_row_major_c();
    // TMA reads and writes rows that start on 16-byte boundaries; an operand whose rows do
    // not is loaded by the kernel's threads (C: stored from registers)
    let tma = |ld: usize, step: usize| [ld, step].iter().all(|v| (v * elem).is_multiple_of(16));
    let int = |name: &str, v: usize| dim(KERNEL, name, v, 0);
    let dims = [
        dim(KERNEL, "batch", p.batch, 1)?,
        dim(KERNEL, "m", p.m, 1)?,
        dim(KERNEL, "n", p.n, 1)?,
        dim(KERNEL, "k", p.k, 1)?,
    ];
    // one product: any valid stride for C's view (TMA takes no zero stride)
    let c_stride = if p.batch == 1 {
        p.m * p.c.ld
    } else {
        p.c.batch_stride
    };
    // an operand of batch stride 0 is one matrix every product shares: a view of one, with
    // any valid stride (TMA takes no zero stride)
    let operand = |l: &Layout, rows: usize| {
        if l.batch_stride == 0 || p.batch == 1 {
            (rows * l.ld, 1)
        } else {
            (l.batch_stride, p.batch)
        }
    };
    // an operand TMA cannot read is staged into a workspace it can (or loaded by the
    // kernel's threads, without staging)
    let plan =
        |l: &Layout, (r, c): (usize, usize)| -> Result<(usize, usize, usize, Option<Stage>)> {
            let (rows, cols) = l.stored(r, c);
            let (step, count) = operand(l, rows);
            if !staging || tma(l.ld, step) {
                return Ok((l.ld, step, count, None));
            }
            let ld_out = super::staged_ld(cols);
            let stage = Stage {
                count: int("batches", count)?,
                rows: int("rows", rows)?,
                cols: int("cols", cols)?,
                ld: int("ld", l.ld)?,
                step: int("batch stride", step)?,
                ld_out: int("staged leading dimension", ld_out)?,
            };
            elements(
                KERNEL,
                stage.count as usize * stage.rows as usize,
                stage.ld_out as usize,
            )?;
            Ok((ld_out, rows * ld_out, count, Some(stage)))
        };
    let (lda, a_step, a_count, stage_a) = plan(&p.a, (p.m, p.k))?;
    let (ldb, b_step, b_count, stage_b) = plan(&p.b, (p.k, p.n))?;
    let strides = [
        int("lda", lda)?,
        int("stride_a", a_step)?,
        int("a_batches", a_count)?,
        int("ldb", ldb)?,
        int("stride_b", b_step)?,
        int("b_batches", b_count)?,
        int("ldc", p.c.ld)?,
        int("stride_c", c_stride)?,
    ];
    let form = Form {
        a_col_major: p.a.order == Order::ColMajor,
        b_col_major: p.b.order == Order::ColMajor,
        scaled: !(p.alpha == 1.0 && p.beta == 0.0),
        // and rows of whole 16-byte granules: a TMA store writes past the view's last column
        // to the end of its granule (measured on the H200: the padding of rows of 180
        // elements in rows 184 apart was overwritten)
        c_tma: tma(p.c.ld, c_stride) && (p.n * elem).is_multiple_of(16),
        a_tma: tma(lda, a_step),
        b_tma: tma(ldb, b_step),
    };
    Ok(Launch {
        p,
        dims,
        form: form.bits(),
        strides,
        stage: [stage_a, stage_b],
    })
}

/// The compile-time constants `(n, k, form)` of the kernel that problem `p` runs in elements
/// of `elem_bytes` bytes (with operands TMA cannot read staged, or not): each distinct triple
/// is its own specialization, so a caller that will run many problems can compile them
/// ahead, in parallel (`tilus::build(&kernel, &consts)` fills the cache the launches read).
///
/// ```
/// use tilus_kernels::gemm::general::{specialization, Form, GemmProblem, Layout};
/// let p = GemmProblem::new(1, (100, 200, 300)).a(Layout::col_major(100));
/// let [n, k, form] = specialization(&p, 2, true)?;
/// assert_eq!((n, k), (200, 300));
/// assert!(Form::from_bits(form as i32).a_col_major);
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub fn specialization(p: &GemmProblem, elem_bytes: usize, staging: bool) -> Result<[i64; 3]> {
    let (la, lb, lc) = p.lengths().map_err(|message| Error::Shape {
        kernel: KERNEL,
        message,
    })?;
    let l = prepare(p, (la, lb, lc), elem_bytes, staging)?;
    Ok([l.dims[2] as i64, l.dims[3] as i64, l.form as i64])
}

/// The general GEMM on device buffers of `T` (f16 or bf16), [`MatmulGeneral`] autotuned per
/// shape and form on first use (or one fixed configuration).
///
/// ```no_run
/// use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let gemm = GemmGeneral::<half::f16>::new(&device)?;
/// let (m, n, k) = (4096, 4096, 4096);
/// let s = device.stream();
/// let a = s.clone_htod(&vec![half::f16::ONE; m * k])?;
/// let b = s.clone_htod(&vec![half::f16::ONE; k * n])?;
/// let mut c = s.alloc_zeros::<half::f16>(m * n)?;
/// // C = A · B, A column-major, B row-major
/// let p = GemmProblem::new(1, (m, n, k)).a(Layout::col_major(m));
/// gemm.run(s, &p, &a, &b, &mut c)?;
/// # Ok(()) }
/// ```
pub struct GemmGeneral<T: Matmuls> {
    kernel: FixedOrTuned<T::General>,
    stage: tilus::Jit<T::Stage>,
    /// Stage operands TMA cannot read (else the kernel's threads load them).
    staging: bool,
    /// The staged copies of A and B, grown on demand.
    work: std::sync::Mutex<[Option<CudaSlice<T>>; 2]>,
}

impl<T: Matmuls> GemmGeneral<T> {
    /// Autotuned per shape and form (nothing is compiled until a problem is first run).
    pub fn new(device: &Device) -> Result<GemmGeneral<T>> {
        use tilus::tune::Tunable;
        Ok(GemmGeneral::with(
            FixedOrTuned::Tuned(T::General::autotuned(device)?),
            device,
        ))
    }

    /// One configuration for every problem.
    pub fn fixed(config: MatmulGeneral, device: &Device) -> GemmGeneral<T> {
        GemmGeneral::with(
            FixedOrTuned::Fixed(tilus::Jit::new(T::general(config), device)),
            device,
        )
    }

    fn with(kernel: FixedOrTuned<T::General>, device: &Device) -> GemmGeneral<T> {
        GemmGeneral {
            kernel,
            stage: tilus::Jit::new(T::stage(), device),
            staging: true,
            work: std::sync::Mutex::new([None, None]),
        }
    }

    /// The same, with operands TMA cannot read loaded by the kernel's threads instead of
    /// staged (no workspace, no copy; slower where the product is compute-bound).
    pub fn without_staging(self) -> GemmGeneral<T> {
        GemmGeneral {
            staging: false,
            ..self
        }
    }

    /// Compiles and loads the kernels problem `p` will run (with a fixed configuration; an
    /// autotuned one is chosen at its first run), so that its first run does not wait for
    /// them. Callable from several threads at once: a caller with many problems prepares
    /// their specializations in parallel.
    pub fn warm(&self, p: &GemmProblem) -> Result<()> {
        let [n, k, form] = specialization(p, std::mem::size_of::<T>(), self.staging)?;
        if let FixedOrTuned::Fixed(jit) = &self.kernel {
            jit.specialize(&[n, k, form])?;
        }
        let (la, lb, lc) = p.lengths().map_err(|message| Error::Shape {
            kernel: KERNEL,
            message,
        })?;
        let l = prepare(p, (la, lb, lc), std::mem::size_of::<T>(), self.staging)?;
        if l.stage.iter().any(Option::is_some) {
            self.stage.specialize(&[])?;
        }
        Ok(())
    }

    /// Runs problem `p` on device buffers (each at least as long as [`GemmProblem::lengths`]
    /// says); nothing is launched when the problem or the buffers do not fit. Operands whose
    /// rows TMA cannot read are first copied into workspaces it can (kept for the next
    /// call), unless [`GemmGeneral::without_staging`].
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        p: &GemmProblem,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
    ) -> Result<()> {
        let l = prepare(
            p,
            (a.len(), b.len(), c.len()),
            std::mem::size_of::<T>(),
            self.staging,
        )?;
        let ops = l.operands(p, (a, b));
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner());
        for (i, stage) in l.stage.iter().enumerate() {
            let Some(stage) = stage else { continue };
            if work[i].as_ref().is_none_or(|w| w.len() < stage.len()) {
                let w = crate::host::device_zeros(
                    stream,
                    stage.len(),
                    &format!("the staged operand of {} elements", stage.len()),
                )?;
                work[i] = Some(w);
            }
        }
        let [wa, wb] = &mut *work;
        for (stage, src, w) in [
            (&l.stage[0], ops.0, &mut *wa),
            (&l.stage[1], ops.1, &mut *wb),
        ] {
            if let (Some(stage), Some(w)) = (stage, w.as_mut()) {
                self.stage.launch(stream, stage.args(src, w))?;
            }
        }
        let a = if l.stage[0].is_some() {
            wa.as_ref().unwrap_or(ops.0)
        } else {
            ops.0
        };
        let b = if l.stage[1].is_some() {
            wb.as_ref().unwrap_or(ops.1)
        } else {
            ops.1
        };
        self.kernel.launch(stream, l.args((a, b), c))?;
        Ok(())
    }

    /// Runs problem `p` with configuration `config` on the CPU interpreter, on host slices,
    /// staging operands TMA cannot read as [`GemmGeneral::run`] does.
    pub fn interpret(
        config: &MatmulGeneral,
        p: &GemmProblem,
        a: &[T],
        b: &[T],
        c: &mut [T],
    ) -> Result<()> {
        Self::interpret_with(config, true, p, (a, b), c)
    }

    /// [`GemmGeneral::interpret`] with such operands loaded by the kernel's threads
    /// ([`GemmGeneral::without_staging`]).
    pub fn interpret_without_staging(
        config: &MatmulGeneral,
        p: &GemmProblem,
        a: &[T],
        b: &[T],
        c: &mut [T],
    ) -> Result<()> {
        Self::interpret_with(config, false, p, (a, b), c)
    }

    fn interpret_with(
        config: &MatmulGeneral,
        staging: bool,
        p: &GemmProblem,
        (a, b): (&[T], &[T]),
        c: &mut [T],
    ) -> Result<()> {
        let l = prepare(
            p,
            (a.len(), b.len(), c.len()),
            std::mem::size_of::<T>(),
            staging,
        )?;
        let ops = l.operands(p, (a, b));
        let mut staged: [Vec<T>; 2] = [vec![], vec![]];
        for (i, src) in [ops.0, ops.1].into_iter().enumerate() {
            if let Some(stage) = &l.stage[i] {
                staged[i] = vec![T::NAN; stage.len()];
                tilus::interpret(&T::stage(), stage.args(src, &mut staged[i][..]))?;
            }
        }
        let a = if l.stage[0].is_some() {
            &staged[0][..]
        } else {
            ops.0
        };
        let b = if l.stage[1].is_some() {
            &staged[1][..]
        } else {
            ops.1
        };
        tilus::interpret(&T::general(config.clone()), l.args((a, b), c))?;
        Ok(())
    }
}
