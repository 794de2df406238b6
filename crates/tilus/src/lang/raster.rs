//! Tile rasterization: which output tile a block of a 1-D grid computes. Blocks run roughly
//! in index order; walking the tiles row by row, consecutive blocks share a row of A but
//! each brings a different column of B into L2. Grouped (super-tile) order walks `group`
//! tile rows at a time, column by column, so that the blocks running together share both
//! their A rows and their B columns.

use super::{Kernel, Scalar, Val};

impl Kernel {
    /// The tile `(row, column)` block `linear` of a 1-D grid of `tiles_m · tiles_n` blocks
    /// computes, in grouped order: tiles `0 .. group · tiles_n` cover the first `group` tile
    /// rows column by column (`(0, 0), (1, 0), .., (group - 1, 0), (0, 1), ..`), the next
    /// ones the following `group` rows, the last group as many rows as are left. `group = 1`
    /// is row-major order. Launch with `k.blocks([tiles_m * tiles_n])` and pass
    /// `k.block_idx().x`. A division by the last group's height happens once per block (by a
    /// constant elsewhere when the grid's width is one).
    #[track_caller]
    pub fn grouped_tile(
        &mut self,
        linear: impl Into<Scalar>,
        tiles_m: impl Into<Scalar>,
        tiles_n: impl Into<Scalar>,
        group: i32,
    ) -> (Val, Val) {
        let group = group.max(1);
        let (linear, tiles_m, tiles_n) = (linear.into(), tiles_m.into(), tiles_n.into());
        let per_group = self.let_i32(tiles_n * group);
        let first_row = self.let_i32(linear.clone() / per_group * group);
        let left = self.let_i32(tiles_m - first_row);
        // the last group may be shorter: min(group, rows left)
        let height = self.var_i32(group);
        self.if_(left.lt(group), |k| k.assign(height, left));
        let within = self.let_i32(linear % per_group);
        let row = self.let_i32(first_row + within % height);
        let col = self.let_i32(within / height);
        (row, col)
    }
}
