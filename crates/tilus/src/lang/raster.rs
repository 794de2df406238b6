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
    /// `k.block_idx().x`. Divisions are by compile-time constants (the group's width when
    /// `tiles_n` is one, the group's height) except in a last, shorter group, which divides
    /// by its height once per block.
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
        let per_group = self.name_next("per_group").let_i32(tiles_n * group);
        let first_row = self
            .name_next("first_row")
            .let_i32(linear.clone() / per_group * group);
        let left = self.name_next("rows_left").let_i32(tiles_m - first_row);
        let within = self.name_next("within").let_i32(linear % per_group);
        let row = self.name_next("tile_row").var_i32(first_row);
        let col = self.name_next("tile_col").var_i32(0);
        // a whole group divides by the constant `group` (a multiply and a shift); only the
        // last group, when shorter, divides by the rows it has left
        self.if_else(
            left.ge(group),
            |k| {
                k.assign(row, first_row + within % group);
                k.assign(col, within / group);
            },
            |k| {
                k.assign(row, first_row + within % left);
                k.assign(col, within / left);
            },
        );
        (row, col)
    }
}
