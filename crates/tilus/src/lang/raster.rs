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
    /// `k.block_idx().x` (or a persistent loop's tile index: `linear` may be any index
    /// `0 <= linear < tiles_m · tiles_n`).
    ///
    /// When the host can compute `tiles_m` and `tiles_n` (from runtime arguments and
    /// constants), the two runtime divisions (by the tiles of a group, and by the rows of a
    /// shorter last group) go through [`Kernel::fast_divisor`]; the divisions by `group` are
    /// by a constant.
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
        let per_group = self.divisor_if_host(tiles_n * group);
        // the rows of the last group (`group` when the groups come out even: that group is
        // then a whole one, which the branch below sends the constant way)
        let last_rows = self.divisor_if_host((tiles_m.clone() - 1) % group + 1);
        let (group_idx, within) = per_group.divmod(self, linear);
        let first_row = self.name_next("first_row").let_i32(group_idx * group);
        let left = self.name_next("rows_left").let_i32(tiles_m - first_row);
        let row = self.name_next("tile_row").var_i32(first_row);
        let col = self.name_next("tile_col").var_i32(0);
        self.if_else(
            left.ge(group),
            |k| {
                k.assign(row, first_row + within % group);
                k.assign(col, within / group);
            },
            |k| {
                let (q, r) = last_rows.divmod(k, within);
                k.assign(row, first_row + r);
                k.assign(col, q);
            },
        );
        (row, col)
    }
}
