//! Shared views as the interpreter resolves them: a tile, or one stage of a staged tile at the
//! index the task computes (`at`). The generated code does not check that index: a stage
//! outside the tile's leading dimension would read or write another stage's or another tile's
//! bytes, so here it is a fault.

use super::region::{Placed, Span};
use super::state::{Block, Fail, R};
use super::task::{value, Task};
use crate::error::Fault;
use crate::ir::{Expr, Loc, SharedId, SharedView};
use crate::layout::SharedLayout;

/// The stage a view's index names in a task, checked against the tile's stages.
fn stage_of(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    t: SharedId,
    stage: &Expr,
    what: &str,
    loc: Loc,
) -> R<i64> {
    let d = b.program().shared(t);
    let i = value(b, task, stage, loc)?;
    let stages = d.shape.first().copied().unwrap_or(0);
    if i < 0 || i >= stages {
        return Err(Fail::new(
            Fault::SharedOutOfBounds,
            loc,
            format!(
                "{what} uses stage {i} of shared tensor `{}`, which has {stages} stages (its \
                 leading dimension): on the GPU it would touch bytes outside the tile's stages",
                d.name
            ),
        ));
    }
    Ok(i)
}

/// The bytes a shared effect touches: the tile's, or those of the stage `stage` names.
pub(crate) fn bytes(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    t: SharedId,
    stage: Option<&Expr>,
    what: &str,
    loc: Loc,
) -> R<Span> {
    let whole = b.tile_range(t);
    let Some(stage) = stage else {
        return Ok(Span {
            range: whole,
            stage: None,
        });
    };
    let i = stage_of(b, task, t, stage, what, loc)?;
    let l = layout_of(b, t, loc)?;
    let start = whole.0 + i as u64 * l.stage_bytes() as u64;
    Ok(Span {
        range: (start, start + l.stage_layout().nbytes() as u64),
        stage: Some(i),
    })
}

fn layout_of<'p>(b: &Block<'_, 'p>, t: SharedId, loc: Loc) -> R<&'p SharedLayout> {
    let d = b.program().shared(t);
    d.layout.as_ref().ok_or_else(|| {
        Fail::new(
            Fault::Invalid,
            loc,
            format!("shared tensor `{}` has no layout", d.name),
        )
    })
}

/// Resolves a view in a task, for `what` at `loc`.
pub(crate) fn place(
    b: &Block<'_, '_>,
    task: &Task<'_>,
    v: &SharedView,
    what: &str,
    loc: Loc,
) -> R<Placed> {
    let p = b.program();
    let Span { range, stage } = bytes(b, task, v.tensor, v.stage.as_ref(), what, loc)?;
    layout_of(b, v.tensor, loc)?;
    let layout = p.sview_layout(v).expect("the tile's layout was just found");
    // rows of a tile or stage: from their first byte, as many bytes as they hold
    let start = range.0 + p.sview_row_offset_bytes(v) as u64;
    let range = match v.rows {
        Some(_) => (start, start + layout.nbytes() as u64),
        None => range,
    };
    Ok(Placed {
        tensor: v.tensor,
        stage,
        range,
        layout,
        shape: p.sview_stored_shape(v),
    })
}

/// How messages name a placed view: `sa`, or `sa[1]`.
pub(crate) fn label(b: &Block<'_, '_>, t: SharedId, stage: Option<i64>) -> String {
    let name = &b.program().shared(t).name;
    match stage {
        Some(i) => format!("{name}[{i}]"),
        None => name.clone(),
    }
}
