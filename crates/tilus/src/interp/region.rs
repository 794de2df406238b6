//! Where shared accesses lie in the block's region: the bytes of a tile or of one stage of it,
//! and a view's elements placed there. Data only, at the bottom of the interpreter's layers, so
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
