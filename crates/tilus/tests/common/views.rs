//! Register tiles seen with other shapes (`reshape`, `squeeze`, `unsqueeze`, `slice`), in a
//! script that several binaries run: the interpreter and the GPU against a CPU reference,
//! NVRTC.

use tilus::prelude::*;

/// Views of an `[8, 32]` tile (one warp: threads along the 32 columns, 8 rows of locals),
/// loaded from `src` through TMA and shared memory, each stored to its own output:
/// `reshape(x, [4, 64])`, `slice(x, 0, 2, 4)` (rows 2..6), `squeeze(unsqueeze(x, 0), 0)`
/// stored as `unsqueeze(.., 1)` (`[8, 1, 32]`), and `slice(x.transpose(), 1, 3, 3)` (rows
/// 3..6, transposed: `[32, 3]`).
pub struct ShapeViews<T>(pub std::marker::PhantomData<T>);

impl<T> ShapeViews<T> {
    /// The script.
    pub fn new() -> ShapeViews<T> {
        ShapeViews(std::marker::PhantomData)
    }
}

impl<T> Clone for ShapeViews<T> {
    fn clone(&self) -> Self {
        ShapeViews::new()
    }
}

impl<T> std::fmt::Debug for ShapeViews<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShapeViews<{}>", std::any::type_name::<T>())
    }
}

// by hand: the element marker carries no data (and f16 has no Hash)
impl<T> std::hash::Hash for ShapeViews<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::any::type_name::<T>().hash(h);
    }
}

/// Rows and columns of the source.
pub const ROWS: usize = 8;
/// Columns of the source.
pub const COLS: usize = 32;

/// The CPU reference of each output, from the source `x` (row-major `[8, 32]`).
pub fn expected<T: Copy>(x: &[T]) -> [Vec<T>; 4] {
    let at = |r: usize, c: usize| x[r * COLS + c];
    let reshaped = x.to_vec();
    let rows: Vec<T> = (2..6)
        .flat_map(|r| (0..COLS).map(move |c| at(r, c)))
        .collect();
    let unsqueezed = x.to_vec();
    let transposed: Vec<T> = (0..COLS)
        .flat_map(|c| (3..6).map(move |r| at(r, c)))
        .collect();
    [reshaped, rows, unsqueezed, transposed]
}

impl<T: tilus::lang::Element + std::fmt::Debug> Script for ShapeViews<T> {
    type Args = (Ptr<T>, PtrMut<T>, PtrMut<T>, PtrMut<T>, PtrMut<T>);
    fn arg_names() -> &'static [&'static str] {
        &["src", "reshaped", "rows", "unsqueezed", "transposed"]
    }
    fn body(&self, k: &mut Kernel, (src, o0, o1, o2, o3): Handles<Self::Args>) {
        let (r, c) = (ROWS as i32, COLS as i32);
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view::<T>(src, [r, c]);
        let s = k.shared_tensor::<T>([r, c]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let x = k.load_shared(&s);

        let reshaped = k.reshape(&x, [r / 2, 2 * c]);
        let out = k.global_view::<T>(o0, [r / 2, 2 * c]);
        k.store_global(&out, &reshaped, [0, 0]);

        let rows = k.slice(&x, 0, 2, 4);
        let out = k.global_view::<T>(o1, [4, c]);
        k.store_global(&out, &rows, [0, 0]);

        let lifted = k.unsqueeze(&x, 0);
        let back = k.squeeze(&lifted, 0);
        let middle = k.unsqueeze(&back, 1);
        let out = k.global_view::<T>(o2, [r, 1, c]);
        k.store_global(&out, &middle, [0, 0, 0]);

        let t = k.slice(&x.transpose(), 1, 3, 3);
        let out = k.global_view::<T>(o3, [c, 3]);
        k.store_global(&out, &t, [0, 0]);
    }
}

/// Views of a tensor-core product, whose layout (the mma accumulator fragment: each thread
/// holds two rows 8 apart and, per 8-column tile, two neighbouring columns) interleaves
/// threads and local elements in both dimensions. `d = a @ b^T` (`[16, 16]` f16 inputs, `a`
/// `[M, K]`, `b` `[N, K]`, f32 accumulation), then `slice(d, 1, 8, 8)` (the second column
/// tile), `slice(d, 0, 8, 8)` (rows 8..16), `reshape(d, [4, 64])` (the row threads split over
/// both new dimensions) and `squeeze(unsqueeze(slice(d.transpose(), 0, 0, 8), 0), 0)` (columns
/// 0..8, transposed: `[8, 16]`).
#[derive(Clone, Debug, Hash)]
pub struct DotViews;

/// The side of the product's square tiles.
pub const DOT: usize = 16;

/// Random operands whose products and sums are exact in f32 (integers in `-4..=4`), `[16,
/// 16]` each, from `seed`.
pub fn dot_inputs(seed: u64) -> (Vec<half::f16>, Vec<half::f16>) {
    let ints = |s| {
        super::inputs::random_f32(DOT * DOT, s)
            .iter()
            .map(|v| half::f16::from_f32((v * 4.0).round()))
            .collect::<Vec<_>>()
    };
    (ints(seed), ints(seed ^ 0x5A5A))
}

/// The CPU reference of each output of [`DotViews`].
pub fn dot_expected(a: &[half::f16], b: &[half::f16]) -> [Vec<f32>; 4] {
    let d = |m: usize, n: usize| -> f32 {
        (0..DOT)
            .map(|k| a[m * DOT + k].to_f32() * b[n * DOT + k].to_f32())
            .sum()
    };
    let cols: Vec<f32> = (0..DOT)
        .flat_map(|m| (8..16).map(move |n| (m, n)))
        .map(|(m, n)| d(m, n))
        .collect();
    let rows: Vec<f32> = (8..16)
        .flat_map(|m| (0..DOT).map(move |n| (m, n)))
        .map(|(m, n)| d(m, n))
        .collect();
    let flat: Vec<f32> = (0..DOT * DOT).map(|i| d(i / DOT, i % DOT)).collect();
    let transposed: Vec<f32> = (0..8)
        .flat_map(|n| (0..DOT).map(move |m| (m, n)))
        .map(|(m, n)| d(m, n))
        .collect();
    [cols, rows, flat, transposed]
}

impl Script for DotViews {
    type Args = (
        Ptr<half::f16>,
        Ptr<half::f16>,
        PtrMut<f32>,
        PtrMut<f32>,
        PtrMut<f32>,
        PtrMut<f32>,
    );
    fn arg_names() -> &'static [&'static str] {
        &["a", "b", "cols", "rows", "flat", "transposed"]
    }
    fn body(&self, k: &mut Kernel, (a, b, o0, o1, o2, o3): Handles<Self::Args>) {
        let n = DOT as i32;
        k.blocks([1]);
        k.warps(1);
        let ga = k.global_view::<half::f16>(a, [n, n]);
        let gb = k.global_view::<half::f16>(b, [n, n]);
        let sa = k.shared_tensor::<half::f16>([n, n]);
        let sb = k.shared_tensor::<half::f16>([n, n]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [0, 0], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let ra = k.load_shared(&sa);
        let rb = k.load_shared(&sb);
        let zero = k.register_tensor::<f32>([n, n], 0.0);
        let d = k.register_tensor::<f32>([n, n], None::<f64>);
        k.dot(&ra, &rb.transpose(), &zero, &d);

        let cols = k.slice(&d, 1, 8, 8);
        let out = k.global_view::<f32>(o0, [n, 8]);
        k.store_global(&out, &cols, [0, 0]);

        let rows = k.slice(&d, 0, 8, 8);
        let out = k.global_view::<f32>(o1, [8, n]);
        k.store_global(&out, &rows, [0, 0]);

        let flat = k.reshape(&d, [4, 64]);
        let out = k.global_view::<f32>(o2, [4, 64]);
        k.store_global(&out, &flat, [0, 0]);

        let t = k.slice(&d.transpose(), 0, 0, 8);
        let lifted = k.unsqueeze(&t, 0);
        let back = k.squeeze(&lifted, 0);
        let out = k.global_view::<f32>(o3, [8, n]);
        k.store_global(&out, &back, [0, 0]);
    }
}

/// The shape family with global loads and arithmetic: a `[16, 64]` f32 tile loaded with
/// `load_global` (a vectorized layout: 4 consecutive columns per thread, rows 8 apart in each
/// thread's registers), 4 warps; `slice(x, 0, 8, 8) * 2` stored to `twice`, and the row sums of
/// `reshape(x, [2, 512])` (a reduction across the 4 warps) stored to `sums`.
#[derive(Clone, Debug, Hash)]
pub struct LoadedViews;

/// Rows and columns of [`LoadedViews`]'s input.
pub const LOADED: (usize, usize) = (16, 64);

/// The CPU reference of [`LoadedViews`]: `(twice, sums)`. Inputs of small integers keep every
/// sum exact in any order.
pub fn loaded_expected(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (rows, cols) = LOADED;
    let twice = x[8 * cols..].iter().map(|v| v * 2.0).collect();
    let half = rows / 2 * cols;
    let sums = vec![x[..half].iter().sum(), x[half..].iter().sum()];
    (twice, sums)
}

impl Script for LoadedViews {
    type Args = (Ptr<f32>, PtrMut<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["src", "twice", "sums"]
    }
    fn body(&self, k: &mut Kernel, (src, twice, sums): Handles<Self::Args>) {
        let (rows, cols) = (LOADED.0 as i32, LOADED.1 as i32);
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view::<f32>(src, [rows, cols]);
        let x = k.load_global(&g, [0, 0], [rows, cols]);
        let part = k.slice(&x, 0, 8, 8);
        let doubled = k.compute(part * 2.0);
        let out = k.global_view::<f32>(twice, [8, cols]);
        k.store_global(&out, &doubled, [0, 0]);
        let halves = k.reshape(&x, [2, rows / 2 * cols]);
        let s = k.sum(halves, 1, false);
        let out = k.global_view::<f32>(sums, [2]);
        k.store_global(&out, &s, [0]);
    }
}

/// A column slice of a tile nothing else constrains: `slice(x, 1, 8, 16)` of an `[8, 32]` f32
/// tile (one warp, loaded through TMA and shared memory), which the default layout (the
/// threads along the 32 columns) cannot keep, so the slice asks for a layout with the columns
/// in blocks of 8 in each thread's registers.
#[derive(Clone, Debug, Hash)]
pub struct ColumnSlice;

/// The CPU reference of [`ColumnSlice`] (`x` row-major `[8, 32]`): columns 8..24.
pub fn column_slice_expected(x: &[f32]) -> Vec<f32> {
    (0..ROWS)
        .flat_map(|r| x[r * COLS + 8..r * COLS + 24].to_vec())
        .collect()
}

impl Script for ColumnSlice {
    type Args = (Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (src, dst): Handles<Self::Args>) {
        let (r, c) = (ROWS as i32, COLS as i32);
        k.blocks([1]);
        k.warps(1);
        let g = k.global_view::<f32>(src, [r, c]);
        let s = k.shared_tensor::<f32>([r, c]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let x = k.load_shared(&s);
        let part = k.slice(&x, 1, 8, 16);
        let out = k.global_view::<f32>(dst, [r, 16]);
        k.store_global(&out, &part, [0, 0]);
    }
}

/// A `[64, 8]` tile loaded a row per thread (two warps), relabelled as an `[8, 64]` tile a
/// column per thread: thread `t`'s row is column `t` of the result, which is stored. A
/// transpose without data moving, the result of the relabelling the stored tile checks.
/// `threads`: the threads the relabelled layout spreads over (64 is right; another count is
/// the verifier's to refuse).
#[derive(Clone, Debug, Hash)]
pub struct Relabelled {
    /// Threads of the relabelled layout.
    pub threads: i64,
}

/// Rows of [`Relabelled`]'s source (a thread each).
pub const RELABEL_ROWS: usize = 64;
/// Columns of [`Relabelled`]'s source (a thread's registers).
pub const RELABEL_COLS: usize = 8;

impl Script for Relabelled {
    type Args = (Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["x", "y"]
    }
    fn body(&self, k: &mut Kernel, (x, y): Handles<Self::Args>) {
        use tilus::layout::RegisterLayout;
        let (r, c) = (RELABEL_ROWS as i64, RELABEL_COLS as i64);
        k.blocks([1]);
        k.warps(2);
        let gx = k.global_view::<f16>(x, [r as i32, c as i32]);
        let gy = k.global_view::<f16>(y, [c as i32, r as i32]);
        let t = k.load_global(&gx, [0, 0], [r as i32, c as i32]);
        let rows = RegisterLayout::spatial(&[r, 1]).compose(&RegisterLayout::local(&[1, c]));
        let n = self.threads;
        let cols =
            RegisterLayout::spatial(&[1, n]).compose(&RegisterLayout::local(&[c * r / n, 1]));
        let seen = k.relabel(&t, rows, cols);
        k.store_global(&gy, &seen, [0, 0]);
    }
}
