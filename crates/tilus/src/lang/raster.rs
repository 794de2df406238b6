//! Tile rasterization: which output tile a block of a 1-D grid computes. Blocks run roughly
//! in index order; walking the tiles row by row, consecutive blocks share a row of A but
//! each brings a different column of B into L2. Grouped (super-tile) order walks `group`
//! tile rows at a time, column by column, so that the blocks running together share both
//! their A rows and their B columns; Hilbert order walks squares of tiles along a Hilbert
//! curve, close together at every scale up to the square.

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

impl Kernel {
    /// The tile `(row, column)` of index `linear` in Hilbert order (fast.cu's schedule; as
    /// [`Kernel::grouped_tile`], `0 <= linear < tiles_m · tiles_n`): the grid is cut into bands
    /// of `side` tile rows and each band into squares of `side × side` tiles, walked band by
    /// band, square by square; a whole square is walked along a Hilbert curve (each step to a
    /// neighbouring tile, every quarter of it finished before the next), so that the blocks
    /// running together touch few rows of A and columns of B at every scale up to the square.
    /// What is not a whole square — the right end of a band, the last band when the rows do
    /// not come out even — is walked column by column. `side` is a power of two (a constant);
    /// 1 is row-major order.
    #[track_caller]
    pub fn hilbert_tile(
        &mut self,
        linear: impl Into<Scalar>,
        tiles_m: impl Into<Scalar>,
        tiles_n: impl Into<Scalar>,
        side: i32,
    ) -> (Val, Val) {
        let side = if side > 0 && side & (side - 1) == 0 {
            side
        } else {
            self.error(
                crate::ir::Loc::caller(),
                format!("hilbert_tile: the side of a square is a power of two, not {side}"),
            );
            1
        };
        let (linear, tiles_m, tiles_n) = (linear.into(), tiles_m.into(), tiles_n.into());
        let linear = self.name_next("linear").let_i32(linear);
        let band_tiles = self.name_next("band_tiles").let_i32(tiles_n.clone() * side);
        let full_bands = self.name_next("full_bands").let_i32(tiles_m.clone() / side);
        // the band, its first tile and its rows (fewer in a last band that is not whole)
        let band = self.name_next("band").var_i32(full_bands);
        self.if_(linear.lt(full_bands * band_tiles), |k| {
            k.assign(band, linear / band_tiles)
        });
        let rows = self.name_next("band_rows").var_i32(side);
        self.if_(band.ge(full_bands), |k| {
            k.assign(rows, tiles_m - full_bands * side)
        });
        let within = self
            .name_next("in_band")
            .let_i32(linear - band * band_tiles);
        // the square (or the band's last, narrower piece) and the index in it
        let piece = self.name_next("piece").let_i32(within / (rows * side));
        let cols = self.name_next("piece_cols").let_i32(tiles_n - piece * side);
        let at = self
            .name_next("in_piece")
            .let_i32(within - piece * rows * side);
        let row = self.name_next("tile_row").var_i32(0);
        let col = self.name_next("tile_col").var_i32(0);
        self.if_else(
            rows.eq_(side).and(cols.ge(side)),
            |k| {
                let (r, c) = hilbert_point(k, at, side);
                k.assign(row, band * side + r);
                k.assign(col, piece * side + c);
            },
            |k| {
                k.assign(row, band * side + at % rows);
                k.assign(col, piece * side + at / rows);
            },
        );
        (row, col)
    }
}

/// The point `(row, column)` at distance `d` along the Hilbert curve of a `side × side`
/// square (`side` a power of two): one level per bit pair of `d`, from the smallest quarter
/// up, rotating the point found so far into the quarter's orientation.
fn hilbert_point(k: &mut Kernel, d: Val, side: i32) -> (Val, Val) {
    let x = k.name_next("hx").var_i32(0);
    let y = k.name_next("hy").var_i32(0);
    let t = k.name_next("ht").var_i32(d);
    let mut s = 1;
    while s < side {
        let rx = k.name_next("rx").let_i32(t / 2 % 2);
        let ry = k.name_next("ry").let_i32((t + rx) % 2);
        k.if_(ry.eq_(0), |k| {
            k.if_(rx.eq_(1), |k| {
                k.assign(x, Scalar::from(s - 1) - x);
                k.assign(y, Scalar::from(s - 1) - y);
            });
            let old = k.name_next("hswap").let_i32(x);
            k.assign(x, y);
            k.assign(y, old);
        });
        k.assign(x, x + rx * s);
        k.assign(y, y + ry * s);
        k.assign(t, t / 4);
        s *= 2;
    }
    // x runs along the columns, y along the rows
    (y, x)
}
