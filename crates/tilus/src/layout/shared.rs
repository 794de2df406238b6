//! Shared-memory layouts: row-major strides plus an optional XOR swizzle of address bits.
//!
//! The swizzles are the ones the TMA engine applies (32, 64 and 128 bytes): within each span
//! of `8 × 16 B` chunks, the 16-byte chunk index is XORed with the 128-byte row index. One
//! function, [`SharedLayout::byte_offset`], gives the address of an element for TMA, ldmatrix,
//! WGMMA descriptors and the interpreter alike, so they can never disagree.

use std::fmt;

/// A TMA-compatible swizzle mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Swizzle {
    /// No swizzle.
    None,
    /// 32-byte swizzle: 16-byte chunk bit 4 ^= bit 7.
    B32,
    /// 64-byte swizzle: bits 4..5 ^= bits 7..8.
    B64,
    /// 128-byte swizzle: bits 4..6 ^= bits 7..9.
    B128,
}

impl Swizzle {
    /// The span in bytes: a TMA box's inner dimension may not exceed it.
    pub fn span_bytes(self) -> u32 {
        match self {
            Swizzle::None => u32::MAX,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// Mask of the 16-byte chunk bits that get XORed.
    pub fn mask(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 1,
            Swizzle::B64 => 3,
            Swizzle::B128 => 7,
        }
    }

    /// Alignment the buffer needs so that address-based swizzling matches the pattern.
    pub fn alignment(self) -> u32 {
        match self {
            Swizzle::None => 128,
            Swizzle::B32 => 256,
            Swizzle::B64 => 512,
            Swizzle::B128 => 1024,
        }
    }

    /// Applies the swizzle to a byte offset from a suitably aligned base.
    pub fn apply(self, byte_offset: u32) -> u32 {
        byte_offset ^ (((byte_offset >> 7) & self.mask()) << 4)
    }

    /// The widest swizzle whose span a row of `row_bytes` fills exactly (or None).
    pub fn widest_for_row(row_bytes: u32) -> Swizzle {
        match row_bytes {
            b if b % 128 == 0 && b == 128 => Swizzle::B128,
            64 => Swizzle::B64,
            32 => Swizzle::B32,
            _ => Swizzle::None,
        }
    }

    /// The name used in printed IR.
    pub fn name(self) -> &'static str {
        match self {
            Swizzle::None => "none",
            Swizzle::B32 => "32B",
            Swizzle::B64 => "64B",
            Swizzle::B128 => "128B",
        }
    }
}

/// A row-major shared-memory layout with an optional swizzle. A *staged* tile (one whose
/// leading dimension is indexed at runtime, `at`) may pad its stages: each stage is then laid
/// out as a tile of its own, `stage_stride` bytes after the previous one, so that every stage
/// starts at the alignment its swizzle needs (the hardware swizzles by address bits).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SharedLayout {
    /// Extents, outermost first; the last dimension is contiguous.
    pub shape: Vec<i64>,
    /// Bytes per element.
    pub elem_bytes: u32,
    /// The swizzle.
    pub swizzle: Swizzle,
    /// Bytes from one entry of the leading dimension (a stage) to the next when the stages
    /// are padded; `None`: row-major throughout, stages contiguous.
    pub stage_stride: Option<u32>,
    /// Columns per column block: the innermost dimension is stored in blocks of this many
    /// elements (one swizzle span), each block holding every row of the tile (of a stage)
    /// before the next block starts. An MN-major WGMMA operand (`[K, M]` as stored, M
    /// contiguous) wider than one span is laid out so: the tensor cores read one span of M
    /// per 8 rows of K, and each block is a TMA box of its own. `None`: plain rows.
    pub col_block: Option<i64>,
    /// Rows between two column blocks when the layout is that of some rows of a tile in
    /// column blocks (`rows()` of it: fewer rows than the blocks hold); `None`: the
    /// layout's own rows.
    pub block_rows: Option<i64>,
}

impl SharedLayout {
    /// Row-major, no swizzle.
    pub fn row_major(shape: &[i64], elem_bytes: u32) -> SharedLayout {
        SharedLayout {
            shape: shape.to_vec(),
            elem_bytes,
            swizzle: Swizzle::None,
            stage_stride: None,
            col_block: None,
            block_rows: None,
        }
    }

    /// Row-major with the widest TMA swizzle whose span equals the row length in bytes.
    pub fn swizzled_for_tma(shape: &[i64], elem_bytes: u32) -> SharedLayout {
        let row_bytes = (*shape.last().unwrap_or(&1) as u32) * elem_bytes;
        SharedLayout {
            shape: shape.to_vec(),
            elem_bytes,
            swizzle: Swizzle::widest_for_row(row_bytes),
            stage_stride: None,
            col_block: None,
            block_rows: None,
        }
    }

    /// The layout of an MN-major WGMMA operand: rows of `128 / elem_bytes` columns with the
    /// 128-byte swizzle, wider rows split into column blocks of that many columns
    /// ([`SharedLayout::col_block`]); rows of 64 or 32 bytes take the swizzle they fill, as
    /// [`SharedLayout::swizzled_for_tma`].
    pub fn column_blocked(shape: &[i64], elem_bytes: u32) -> SharedLayout {
        let row_bytes = (*shape.last().unwrap_or(&1) as u32) * elem_bytes;
        let span = Swizzle::B128.span_bytes();
        if row_bytes <= span || !row_bytes.is_multiple_of(span) || shape.len() < 2 {
            return SharedLayout::swizzled_for_tma(shape, elem_bytes);
        }
        SharedLayout {
            shape: shape.to_vec(),
            elem_bytes,
            swizzle: Swizzle::B128,
            stage_stride: None,
            col_block: Some((span / elem_bytes) as i64),
            block_rows: None,
        }
    }

    /// Columns of one row as one contiguous run: the column block's, or the whole row's.
    pub fn row_span(&self) -> i64 {
        self.col_block
            .unwrap_or_else(|| *self.shape.last().unwrap_or(&1))
    }

    /// A staged tile: stages along the leading dimension, each laid out row-major with
    /// `swizzle` and starting at a multiple of `align` bytes (padded only when a stage's bytes
    /// are not a multiple of it).
    pub fn staged(shape: &[i64], elem_bytes: u32, swizzle: Swizzle, align: u32) -> SharedLayout {
        let mut l = SharedLayout {
            shape: shape.to_vec(),
            elem_bytes,
            swizzle,
            stage_stride: None,
            col_block: None,
            block_rows: None,
        };
        let natural = l.stage_bytes();
        let padded = natural.div_ceil(align.max(1)).saturating_mul(align.max(1));
        if padded != natural {
            l.stage_stride = Some(padded);
        }
        l
    }

    /// The layout of one stage (one entry of the leading dimension), relative to the stage's
    /// first byte: the remaining dimensions with the same swizzle.
    pub fn stage_layout(&self) -> SharedLayout {
        SharedLayout {
            shape: self.shape.get(1..).unwrap_or_default().to_vec(),
            elem_bytes: self.elem_bytes,
            swizzle: self.swizzle,
            stage_stride: None,
            col_block: self.col_block,
            block_rows: self.block_rows,
        }
    }

    /// Bytes from one stage to the next: the padded stride, or the bytes of one stage
    /// (saturating: absurd shapes do not wrap to small sizes).
    pub fn stage_bytes(&self) -> u32 {
        self.stage_stride.unwrap_or_else(|| {
            let elems = self
                .shape
                .get(1..)
                .unwrap_or_default()
                .iter()
                .fold(1u64, |a, &d| a.saturating_mul(d.max(0) as u64));
            u32::try_from(elems.saturating_mul(self.elem_bytes as u64)).unwrap_or(u32::MAX)
        })
    }

    /// Bytes the tile occupies (its stages' padding included).
    pub fn nbytes(&self) -> u32 {
        match (
            self.stage_stride,
            self.col_block,
            self.block_rows,
            self.shape.as_slice(),
        ) {
            (Some(stride), ..) => (self.shape[0] as u32).saturating_mul(stride),
            // some rows of a tile in column blocks: from the first block's first row to the
            // last block's last
            (None, Some(cb), Some(block_rows), [rows, cols]) => {
                let blocks = cols / cb;
                (((blocks - 1) * block_rows + rows) * cb) as u32 * self.elem_bytes
            }
            _ => self.shape.iter().product::<i64>() as u32 * self.elem_bytes,
        }
    }

    /// Bytes from a tile's (or stage's) first byte to that of its row `row`: the row's
    /// run in the first column block for a tile in column blocks, the whole rows before it
    /// otherwise.
    pub fn row_offset_bytes(&self, row: i64) -> i64 {
        row * self.row_span() * self.elem_bytes as i64
    }

    /// The address of the element at `coords`, from the (aligned) base of the buffer: the one
    /// address function of the layout, run on numbers (the interpreter, tests) or on C
    /// expressions (the emitters of TMA, ldmatrix, shared loads and stores), so they can never
    /// disagree.
    pub fn address<A: AddressArith>(&self, coords: Vec<A>) -> A {
        self.address_with(coords, self.swizzle)
    }

    /// The address of the element at `coords` before the swizzle: where a shared-memory
    /// matrix descriptor starts a sub-tile (the hardware applies the swizzle itself, from the
    /// address bits).
    pub fn unswizzled_address<A: AddressArith>(&self, coords: Vec<A>) -> A {
        self.address_with(coords, Swizzle::None)
    }

    fn address_with<A: AddressArith>(&self, mut coords: Vec<A>, swizzle: Swizzle) -> A {
        let rank = self.shape.len();
        // column blocks: column c of row r is column c % cb of row r in block c / cb, the
        // blocks `rows × cb` elements apart after the rows of one stage
        let block = match (self.col_block, rank >= 2) {
            (Some(cb), true) => {
                let c = coords.pop().expect("rank >= 2");
                let rows = self.block_rows.unwrap_or(self.shape[rank - 2]);
                let (blk, col) = c.div_rem(cb);
                coords.push(col);
                Some(blk.scaled(rows * cb))
            }
            _ => None,
        };
        let mut terms: Vec<A> = coords
            .into_iter()
            .enumerate()
            .map(|(d, c)| match self.stage_stride {
                // a padded stage stride is a multiple of the 16-byte alignment, hence of the
                // element size; stages start at their swizzle's alignment, so swizzling the
                // whole offset swizzles the offset within the stage
                Some(stride) if d == 0 => c.scaled((stride / self.elem_bytes) as i64),
                // within a row, the run of one column block
                _ if d + 1 == rank => c.scaled(1),
                _ if d + 2 == rank => c.scaled(self.row_span()),
                _ => c.scaled(self.shape[d + 1..rank].iter().product()),
            })
            .collect();
        terms.extend(block);
        A::sum(terms).to_bytes(self.elem_bytes).swizzled(swizzle)
    }

    /// The address of the element with row-major index `linear` (the second half of
    /// [`SharedLayout::address`]) in a layout without padded stages.
    pub fn element_address<A: AddressArith>(&self, linear: A) -> A {
        match self.col_block {
            // back to coordinates, innermost first, then through the blocks
            Some(_) => {
                let mut coords = vec![];
                let mut rest = linear;
                for &extent in self.shape.iter().skip(1).rev() {
                    let (up, c) = rest.div_rem(extent);
                    coords.push(c);
                    rest = up;
                }
                coords.push(rest);
                coords.reverse();
                self.address(coords)
            }
            None => linear.to_bytes(self.elem_bytes).swizzled(self.swizzle),
        }
    }

    /// Byte offset of the element at `coords` from the (aligned) base of the buffer.
    pub fn byte_offset(&self, coords: &[i64]) -> u32 {
        self.address(coords.to_vec()) as u32
    }

    /// Byte offset of the element with row-major index `linear`.
    pub fn linear_byte_offset(&self, linear: i64) -> u32 {
        match self.stage_stride {
            Some(stride) => {
                let per_stage: i64 = self.shape[1..].iter().product();
                let (stage, within) = (linear / per_stage.max(1), linear % per_stage.max(1));
                stage as u32 * stride + self.stage_layout().linear_byte_offset(within)
            }
            None => self.element_address(linear) as u32,
        }
    }
}

/// The arithmetic [`SharedLayout::address`] runs on.
pub trait AddressArith: Sized {
    /// `self * k` (element units).
    fn scaled(self, k: i64) -> Self;
    /// The sum of terms.
    fn sum(terms: Vec<Self>) -> Self;
    /// `(self / k, self % k)` (element units, `k > 0`, `self` not negative).
    fn div_rem(self, k: i64) -> (Self, Self);
    /// An element index to a byte offset.
    fn to_bytes(self, elem_bytes: u32) -> Self;
    /// The swizzle of a byte offset.
    fn swizzled(self, sw: Swizzle) -> Self;
}

impl AddressArith for i64 {
    fn scaled(self, k: i64) -> i64 {
        self * k
    }
    fn sum(terms: Vec<i64>) -> i64 {
        terms.into_iter().sum()
    }
    fn div_rem(self, k: i64) -> (i64, i64) {
        (self / k, self % k)
    }
    fn to_bytes(self, elem_bytes: u32) -> i64 {
        self * elem_bytes as i64
    }
    fn swizzled(self, sw: Swizzle) -> i64 {
        sw.apply(self as u32) as i64
    }
}

impl fmt::Display for SharedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|x| x.to_string()).collect();
        write!(
            f,
            "row_major([{}], swizzle={}",
            dims.join(", "),
            self.swizzle.name()
        )?;
        if let Some(stride) = self.stage_stride {
            write!(f, ", stage_stride={stride}")?;
        }
        if let Some(cb) = self.col_block {
            write!(f, ", col_block={cb}")?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swizzle_128_permutes_chunks_within_each_row_of_eight() {
        let l = SharedLayout::swizzled_for_tma(&[64, 64], 2);
        assert_eq!(l.swizzle, Swizzle::B128);
        // row r, chunk c (8 halves each) lands at chunk c ^ (r % 8) of row r.
        for r in 0..64 {
            for c in 0..8 {
                let off = l.byte_offset(&[r, c * 8]);
                assert_eq!(off, (r as u32) * 128 + (((c as u32) ^ (r as u32 % 8)) * 16));
            }
        }
    }

    #[test]
    fn swizzle_64_uses_row_pairs() {
        let l = SharedLayout::swizzled_for_tma(&[16, 32], 2);
        assert_eq!(l.swizzle, Swizzle::B64);
        // 64-byte rows: bits 7..8 of the offset are (row / 2) % 4.
        assert_eq!(l.byte_offset(&[2, 0]), 128 + 16);
        assert_eq!(l.byte_offset(&[3, 8]), 192);
    }

    #[test]
    fn staged_layouts_repeat_the_stage_layout_at_the_stage_stride() {
        // [3, 4, 64] f16 with 128-byte rows: a stage is 512 bytes, padded to 1024
        let l = SharedLayout::staged(&[3, 4, 64], 2, Swizzle::B128, 1024);
        assert_eq!(l.stage_stride, Some(1024));
        assert_eq!(l.stage_bytes(), 1024);
        assert_eq!(l.nbytes(), 3 * 1024);
        let stage = l.stage_layout();
        assert_eq!(stage.shape, vec![4, 64]);
        let mut seen = std::collections::HashSet::new();
        for s in 0..3 {
            for r in 0..4 {
                for c in 0..64 {
                    let off = l.byte_offset(&[s, r, c]);
                    assert_eq!(off, s as u32 * 1024 + stage.byte_offset(&[r, c]));
                    let lin = (s * 4 + r) * 64 + c;
                    assert_eq!(l.linear_byte_offset(lin), off);
                    assert!(seen.insert(off));
                }
            }
        }
        // stages that fill their alignment are not padded: the plain row-major layout
        let l = SharedLayout::staged(&[2, 8, 64], 2, Swizzle::B128, 1024);
        assert_eq!(l, SharedLayout::swizzled_for_tma(&[2, 8, 64], 2));
        assert_eq!(l.stage_bytes(), 1024);
        assert!(format!(
            "{}",
            SharedLayout::staged(&[2, 4, 64], 2, Swizzle::B128, 1024)
        )
        .contains("stage_stride=1024"));
    }

    #[test]
    fn swizzle_is_a_permutation_of_the_tile() {
        for (cols, sw) in [(16, Swizzle::B32), (32, Swizzle::B64), (64, Swizzle::B128)] {
            let l = SharedLayout::swizzled_for_tma(&[32, cols], 2);
            assert_eq!(l.swizzle, sw);
            let mut seen = std::collections::HashSet::new();
            for r in 0..32 {
                for c in 0..cols {
                    let off = l.byte_offset(&[r, c]);
                    assert!(off < l.nbytes());
                    assert!(seen.insert(off));
                }
            }
        }
    }
}
