//! The index of each row's largest element (the first, where several are equal): one block
//! per band of `rows` rows, the row's `n` elements read into a `[rows, cols]` tile (`cols ≥
//! n`; the columns past `n` read −∞), the maximum by one reduction, and the smallest column
//! that holds it by another, over an index tile.
//!
//! ```
//! use first_kernels::row_argmax::RowArgmax;
//!
//! let s = RowArgmax { rows: 4, cols: 32, warps: 1 };
//! let x: Vec<f32> = (0..5 * 20).map(|i| ((i * 37) % 23) as f32).collect();
//! let mut out = vec![-1i32; 5];
//! tilus::interpret(&s, (5, 20, &x[..], &mut out[..])).unwrap();
//! assert_eq!(out, RowArgmax::reference(&x, 5, 20));
//! ```

use tilus::prelude::*;

/// A row argmax over `[rows, cols]` tiles and `warps` warps per block.
#[derive(Clone, Copy, Debug, Hash)]
pub struct RowArgmax {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl RowArgmax {
    /// The host's answer for `x` `[m, n]` row-major: the first index of each row's maximum.
    pub fn reference(x: &[f32], m: usize, n: usize) -> Vec<i32> {
        (0..m)
            .map(|i| {
                let row = &x[i * n..(i + 1) * n];
                let best = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                row.iter().position(|&v| v == best).map_or(0, |j| j as i32)
            })
            .collect()
    }
}

impl Script for RowArgmax {
    type Args = (i32, i32, Ptr<f32>, PtrMut<i32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (m, n, x, out): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([cdiv(m, rows)]);
        k.warps(self.warps);
        let gx = k.global_view(x, [m, n]);
        let go = k.global_view(out, [m, Val::constant(1)]);
        let first = k.let_i32(k.block_idx().x * rows);
        let t = k.load_global_or(&gx, (first, 0), [rows, cols], f64::NEG_INFINITY);
        let best = k.max(t, 1, true);
        let column = k.arange([1, cols], 1);
        let at = k.min(where_(t.eq_(best), column, i32::MAX), 1, true);
        k.store_global(&go, &at, (first, 0));
    }
}
