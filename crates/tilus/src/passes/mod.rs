//! Passes over a traced program: `Program → Program` plus diagnostics.
//!
//! The pipeline is [`verify`] (rules that need no layouts) → [`infer_layout`] →
//! [`plan_shared`] → [`verify::check_planned`] (rules that need layouts and offsets) →
//! [`lower`] (decisions for code generation and the host's launch plan), with [`ranges`]
//! (32-bit index arithmetic that cannot overflow) adding its guards to the plan. The drivers are
//! written once over what instructions state about themselves ([`crate::ir::Facts`]); each
//! family's own rules for every stage live in one file of `rules/`.

mod async_groups;
mod context;
mod convert_operands;
pub mod infer_layout;
pub mod lower;
pub mod plan_shared;
pub mod ranges;
mod rules;
pub mod verify;

use crate::ir::{LaunchPlan, Program};
use crate::Result;

/// Shared memory a block may use on sm_90, in bytes (227 KB).
pub const MAX_SHARED_BYTES: u32 = 227 * 1024;
/// Registers a thread may use.
pub const MAX_REGISTERS: u32 = 255;

/// Whether a layout of `dtype` elements keeps more per thread than its registers hold (the
/// register check rejects such a tile whatever else is asked of it; comparing it element by
/// element would take as long as the tile is large).
pub(crate) fn exceeds_registers(
    l: &crate::layout::RegisterLayout,
    dtype: crate::ir::DType,
) -> bool {
    let bits = (l.local_size().max(0) as u64).saturating_mul(u64::from(dtype.bits()));
    bits > u64::from(MAX_REGISTERS) * 32
}

/// Whether a tile laid out as `src` can be converted to `target` (both as seen through the
/// same view) by threads `group` of a block of `block` threads: in registers where each thread
/// holds its elements already, through shared memory (behind block barriers) only in the whole
/// block.
pub(crate) fn convertible(
    target: &crate::layout::RegisterLayout,
    src: &crate::layout::RegisterLayout,
    group: u32,
    block: u32,
) -> bool {
    target.shape() == src.shape() && (group == block || target.in_thread_locals(src).is_some())
}

/// Runs every pass: the result is a checked, laid-out, planned program and its launch plan.
pub fn compile_program(program: Program) -> Result<(Program, LaunchPlan)> {
    verify::check(&program)?;
    let guards = ranges::guards(&program)?;
    let program = infer_layout::run(program)?;
    let program = plan_shared::run(program)?;
    verify::check_planned(&program)?;
    let (program, mut plan) = lower::run(program);
    plan.index_guards = guards;
    Ok((program, plan))
}
