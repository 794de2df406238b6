//! Tiles whose width does not divide among the threads (`[rows, 1000]` over 128 threads): a
//! masked layout pads each row to whole vectors for every thread and leaves the rest of the
//! last vector unused. Run by the interpreter (`interp/widths.rs`) and the GPU
//! (`runtime/gpu.rs`) against the same host reference, compiled by the compile tests
//! (`compiler/codegen.rs`).

use tilus::prelude::*;

/// Per row of `x` (`[rows, cols]`, f32, at row [`AnyWidth::ROW0`] of a view a row longer and
/// [`AnyWidth::EXTRA`] columns wider than the tile, so that the padding lies over real data),
/// `y = x · w` (`w` `[cols]`, broadcast over the rows) stored into the first `cols` columns
/// of a view as much wider (the columns past the tile must stay as they were), and the
/// row's sum of `y`, largest and smallest `x` (the reductions take the masked-off registers
/// as their identities: `x` is negative and its extra columns large, so a zero or a value
/// read there would change the largest).
#[derive(Clone, Copy, Debug, Hash)]
pub struct AnyWidth {
    pub rows: i32,
    pub cols: i32,
    pub warps: u32,
}

impl AnyWidth {
    /// The forms every test runs: 1000 columns over 128 threads (the newcomer's case), an odd
    /// width over one warp, a prime width over 8 warps with rows across warps.
    pub const FORMS: [AnyWidth; 3] = [
        AnyWidth {
            rows: 4,
            cols: 1000,
            warps: 4,
        },
        AnyWidth {
            rows: 2,
            cols: 77,
            warps: 1,
        },
        AnyWidth {
            rows: 16,
            cols: 997,
            warps: 8,
        },
    ];

    /// The first row of the tile in `x`'s view.
    pub const ROW0: i32 = 1;
    /// Columns of the `x` and `y` views past the tile's.
    pub const EXTRA: i32 = 16;

    /// Columns of the `x` and `y` views.
    pub fn width(&self) -> usize {
        (self.cols + Self::EXTRA) as usize
    }

    /// Elements of `x`'s view: the tile's rows after [`AnyWidth::ROW0`] rows, and one more.
    pub fn x_len(&self) -> usize {
        (self.rows + Self::ROW0 + 1) as usize * self.width()
    }

    /// Elements of `y`'s view.
    pub fn y_len(&self) -> usize {
        self.rows as usize * self.width()
    }

    /// The host's `y` (its view, from `y0`, the view before the launch) and per row
    /// `(sum of y, max of x, min of x)`.
    pub fn expected(&self, x: &[f32], w: &[f32], y0: &[f32]) -> (Vec<f32>, Vec<[f32; 3]>) {
        let (r, c, r0) = (self.rows as usize, self.cols as usize, Self::ROW0 as usize);
        let wd = self.width();
        let mut y = y0.to_vec();
        let mut stats = vec![];
        for i in 0..r {
            let row = &x[(r0 + i) * wd..(r0 + i) * wd + c];
            for j in 0..c {
                y[i * wd + j] = row[j] * w[j];
            }
            let sum: f64 = y[i * wd..i * wd + c].iter().map(|&v| f64::from(v)).sum();
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let min = row.iter().copied().fold(f32::INFINITY, f32::min);
            stats.push([sum as f32, max, min]);
        }
        (y, stats)
    }
}

impl AnyWidth {
    /// Fresh inputs: `x` negative with large values in its columns past the tile (reading
    /// one into a reduction, or counting a masked-off register as 0, changes the largest),
    /// `w`, and `y`'s view before the launch.
    pub fn inputs(&self) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        use crate::common::inputs::{fresh_seed, random_f32};
        let width = self.width();
        let x = random_f32(self.x_len(), fresh_seed())
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                if i % width >= self.cols as usize {
                    1.0e6
                } else {
                    -v.abs() - 0.5
                }
            })
            .collect();
        let w = random_f32(self.cols as usize, fresh_seed());
        let y0 = random_f32(self.y_len(), fresh_seed());
        (x, w, y0)
    }

    /// Checks a run's `y` and `stats` against the host: `y` bit for bit (the columns past the
    /// tile unchanged), the sums to 1e-4, the largest and smallest exactly.
    pub fn check(&self, (x, w, y0): (&[f32], &[f32], &[f32]), y: &[f32], stats: &[f32]) {
        let r = self.rows as usize;
        let (want, want_stats) = self.expected(x, w, y0);
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(y), bits(&want), "{self:?}");
        for (i, &[sum, max, min]) in want_stats.iter().enumerate() {
            assert!(
                (stats[i] - sum).abs() <= 1e-4 * sum.abs().max(1.0),
                "{self:?} row {i}: sum {} vs {sum}",
                stats[i]
            );
            assert_eq!(stats[r + i], max, "{self:?} row {i}: max");
            assert_eq!(stats[2 * r + i], min, "{self:?} row {i}: min");
        }
    }
}

impl Script for AnyWidth {
    type Args = (Ptr<f32>, Ptr<f32>, PtrMut<f32>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (x, w, y, stats): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([1]);
        k.warps(self.warps);
        let width = cols + AnyWidth::EXTRA;
        let gx = k.global_view(x, [rows + AnyWidth::ROW0 + 1, width]);
        let gw = k.global_view(w, [cols]);
        let gy = k.global_view(y, [rows, width]);
        let gs = k.global_view(stats, [3, rows]);
        let tx = k.load_global(&gx, [AnyWidth::ROW0, 0], [rows, cols]);
        let tw = k.load_global(&gw, [0], [cols]);
        let ty = k.compute(tx * tw);
        k.store_global(&gy, &ty, [0, 0]);
        let sum = k.sum(ty, 1, true);
        let max = k.max(tx, 1, true);
        let min = k.min(tx, 1, true);
        // the three per-row results as rows of `stats`
        k.store_global(&gs, &sum.transpose(), [0, 0]);
        k.store_global(&gs, &max.transpose(), [1, 0]);
        k.store_global(&gs, &min.transpose(), [2, 0]);
    }
}
