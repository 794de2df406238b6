//! Where shared accesses lie in the block's region: the bytes of a tile or of one stage of it,
//! and a view's elements placed there, and whether two byte ranges overlap. Data only, at the
//! bottom of the interpreter's layers, so
//! that the block's state (what an operation in flight touches, the copies it carries) can name
//! them; `views.rs` computes them from a view and a task.

use crate::ir::SharedId;
use crate::layout::SharedLayout;

/// The elements a shared view covers, placed in the block's region.
#[derive(Clone, Debug)]
pub(crate) struct Placed {
    /// The tile.
    pub tensor: SharedId,
    /// The stage, for a view of one stage.
    pub stage: Option<i64>,
    /// The bytes of the covered elements in the region: the tile's, or the stage's.
    pub range: (u64, u64),
    /// Where the covered elements lie, from `range.0`.
    pub layout: SharedLayout,
    /// The covered elements' extents, as stored.
    pub shape: Vec<i64>,
}

/// The bytes a shared access touches in the region (the tile's, or one stage's), and the
/// stage, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    /// Byte range in the region.
    pub range: (u64, u64),
    /// The stage, for an access to one stage.
    pub stage: Option<i64>,
}

/// Whether two byte ranges `[start, end)` share a byte (an empty range shares none): the one
/// test behind every overlap the interpreter reports (tiles, barriers, copies in flight,
/// unpublished stores).
pub(crate) fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.1 && b.0 < a.1 && a.0 < a.1 && b.0 < b.1
}

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn ranges_that_share_one_byte_at_either_edge_overlap() {
        assert!(overlaps((0, 8), (7, 16)));
        assert!(overlaps((7, 16), (0, 8)));
        assert!(overlaps((8, 9), (0, 9)));
        assert!(overlaps((0, 9), (8, 9)));
        assert!(overlaps((4, 5), (4, 5)));
        // one inside the other
        assert!(overlaps((0, 100), (40, 41)));
    }

    #[test]
    fn ranges_that_only_touch_or_are_empty_do_not() {
        assert!(!overlaps((0, 8), (8, 16)));
        assert!(!overlaps((8, 16), (0, 8)));
        assert!(!overlaps((4, 4), (0, 8)));
        assert!(!overlaps((0, 8), (4, 4)));
        assert!(!overlaps((0, 0), (0, 0)));
    }
}
