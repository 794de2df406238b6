//! Printing as `codegen/debug.rs` emits it: the same formats (`ir/inst/debug.rs`) formatted
//! by the interpreter's `printf`, into the block's text (`Block::printed`), which the run
//! hands to `Options::output` block by block, in block order. A `printf` and a shared tile
//! print from the first thread of the current group; a register tile is stored by the whole
//! block into its scratch tile and printed from there, as on the GPU.

use super::printf::{sprintf, Arg};
use super::state::{bits_to_f32, bits_to_int, read_bits, Block, Fail, R};
use super::task::{value, State, Step, Task};
use crate::error::Fault;
use crate::ir::debug::LINE_ELEMS;
use crate::ir::debug::{header_format, line_format, printf_format, row_marks, view_name};
use crate::ir::{DType, DebugInst, Expr, Loc, SharedView};

pub(crate) fn exec(b: &mut Block<'_, '_>, task: &mut Task<'_>, i: &DebugInst, loc: Loc) -> R<Step> {
    // the first thread of the group prints, when it is here
    let first = task.threads.contains(&task.base());
    match i {
        // checked with the arguments before the first block runs
        DebugInst::Assume { .. } => {}
        DebugInst::Printf { pieces, args } => {
            if first {
                let vals = args
                    .iter()
                    .map(|a| scalar_arg(b, task, a, loc))
                    .collect::<R<Vec<_>>>()?;
                let text = sprintf(&printf_format(pieces, args), &vals);
                b.printed.push_str(&text);
            }
        }
        DebugInst::PrintShared { src } => {
            if first {
                let name = view_name(&b.program().shared(src.tensor).name, src.transposed);
                print_tile(b, task, src, &name, loc)?;
            }
        }
        DebugInst::PrintRegister { src, scratch } => {
            // every thread's elements meet in the scratch tile: the whole block
            if task.threads.len() < b.prep.block_threads as usize {
                return Ok(Step::Wait(State::Converge {
                    collective: true,
                    loc,
                }));
            }
            let view = SharedView::plain(*scratch);
            super::memory::store_shared(b, task, &view, src, loc)?;
            let d = b.program().register(src.tensor);
            let name = view_name(&d.name, src.transposed);
            print_tile(b, task, &view, &name, loc)?;
        }
    }
    Ok(Step::Next)
}

/// A scalar's value as the argument its `printf` conversion takes.
fn scalar_arg(b: &Block<'_, '_>, task: &Task<'_>, a: &Expr, loc: Loc) -> R<Arg> {
    let t = a.dtype();
    if t.is_float() {
        let x = super::task::float_value(b, task, a, loc)?;
        return Ok(Arg::Float(x));
    }
    let v = value(b, task, a, loc)?;
    Ok(match t {
        DType::Bool => Arg::Str(if v != 0 { "true" } else { "false" }.into()),
        DType::U32 => Arg::UInt(v as u32 as u64),
        DType::U64 => Arg::UInt(v as u64),
        _ => Arg::Int(v),
    })
}

/// The element at `bits` as the argument its `printf` conversion takes.
fn element_arg(bits: u64, t: DType) -> Arg {
    match t {
        DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. } => {
            Arg::Float(bits_to_f32(bits, t) as f64)
        }
        DType::Bool => Arg::Str(
            if bits_to_int(bits, t) != 0 {
                "true"
            } else {
                "false"
            }
            .into(),
        ),
        DType::U32 | DType::U64 | DType::UInt(_) => Arg::UInt(bits_to_int(bits, t) as u64),
        DType::I32 | DType::I64 | DType::Int(_) => Arg::Int(bits_to_int(bits, t)),
    }
}

/// Prints the shared tile seen through `src` as it is in shared memory now: its header, then
/// its rows, [`LINE_ELEMS`] elements per line.
fn print_tile(
    b: &mut Block<'_, '_>,
    task: &Task<'_>,
    src: &SharedView,
    name: &str,
    loc: Loc,
) -> R<()> {
    let p = b.program();
    let d = p.shared(src.tensor);
    // the tile, or the stage the task's index names (checked against the stages)
    let placed = super::views::place(b, task, src, "print_tensor", loc)?;
    let (off, layout) = (placed.range.0, &placed.layout);
    let (dtype, eb) = (d.dtype, d.dtype.nbytes() as usize);
    let mut shape = placed.shape.clone();
    let swap = src.transposed && shape.len() == 2;
    if swap {
        shape.swap(0, 1);
    }
    let n = shape.len();
    let (rows, cols): (i64, i64) = (shape[..n - 1].iter().product(), shape[n - 1]);
    let bidx: Vec<Arg> = b.bidx.iter().map(|&v| Arg::Int(v)).collect();
    let mut text = sprintf(&header_format(name, dtype, &shape), &bidx);
    let marks = |s: &str, count: usize| s.repeat(count);
    for row in 0..rows {
        let (open, close, blank) = row_marks(&shape, row);
        // the row's leading coordinates
        let mut lead = vec![0i64; n - 1];
        let mut q = row;
        for k in (0..n - 1).rev() {
            lead[k] = q % shape[k];
            q /= shape[k];
        }
        let mut col0 = 0;
        while col0 < cols {
            let count = LINE_ELEMS.min(cols - col0);
            let (first, last) = (col0 == 0, col0 + count >= cols);
            let mut args = vec![
                Arg::Str(marks(" ", if first { n - open } else { n })),
                Arg::Str(marks("[", if first { open } else { 0 })),
            ];
            for j in 0..count {
                let mut c = lead.clone();
                c.push(col0 + j);
                if swap {
                    c.swap(0, 1);
                }
                let at = off as usize + layout.byte_offset(&c) as usize;
                if at + eb > b.smem.len() {
                    return Err(Fail::new(
                        Fault::SharedOutOfBounds,
                        loc,
                        format!(
                            "print_tensor: element {c:?} of `{}` falls outside the block's shared memory",
                            d.name
                        ),
                    ));
                }
                args.push(element_arg(read_bits(&b.smem, at, dtype), dtype));
            }
            args.push(Arg::Str(marks("]", if last { close } else { 0 })));
            args.push(Arg::Str(marks("\n", if last { blank } else { 0 })));
            text.push_str(&sprintf(&line_format(count as usize, dtype), &args));
            col0 += count;
        }
    }
    b.printed.push_str(&text);
    Ok(())
}
