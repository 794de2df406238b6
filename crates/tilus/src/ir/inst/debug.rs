//! The debugging family: text a kernel prints, a line or a tile at a time. The generated code
//! calls device `printf`; the interpreter writes to its output (`interp::Options::output`).
//! Both print the same text for the same program and data because the text is described once,
//! here, as C `printf` formats: the generated code passes them to `printf`, and the interpreter
//! formats them with its own implementation of the few conversions they use (`interp/debug.rs`).
//!
//! A tile prints as a header (name, element type, shape, block index) and its elements in
//! row-major order, NumPy's way: one bracket per dimension, one line per row of the last
//! dimension, rows longer than [`LINE_ELEMS`] elements continued on the next lines, a blank
//! line between the 2-D slices of a 3-D tile.

use super::facts::{Access, Effect, Facts, Memory, ThreadScope};
use crate::ir::printer::Names;
use crate::ir::{DType, Expr, Program, RegView, SharedId, SharedView};

/// Elements of a tile printed on one line (a `printf` takes at most 32 arguments).
pub const LINE_ELEMS: i64 = 16;

/// Printing from the kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DebugInst {
    /// Prints one line from the first thread of the current thread group: the literal
    /// `pieces` with the values of `args` between them (`pieces.len() == args.len() + 1`).
    Printf {
        /// The text around the values, as written (the script's `{{` and `}}` already
        /// unescaped).
        pieces: Vec<String>,
        /// Integer or boolean scalars.
        args: Vec<Expr>,
    },
    /// Prints a register tile: every thread of the block stores its elements into `scratch`
    /// (a row-major tile of the view's shape, alive for this instruction only), then thread 0
    /// prints it; block barriers before, between and after.
    PrintRegister {
        /// The tile, possibly transposed.
        src: RegView,
        /// The shared tile the elements meet in.
        scratch: SharedId,
    },
    /// Prints a shared tile from the first thread of the current thread group (as it is:
    /// other threads' stores are seen only after a `sync`).
    PrintShared {
        /// The tile, possibly transposed.
        src: SharedView,
    },
    /// The script's promise that integer argument `var` is a multiple of `divisor`: lowering
    /// uses it (vector widths along strides made of it), the launch and the interpreter check
    /// it before anything runs, and the generated code tells the CUDA compiler
    /// (`__builtin_assume`).
    Assume {
        /// The argument's variable.
        var: crate::ir::VarId,
        /// What divides it (positive).
        divisor: i64,
    },
}

impl DebugInst {
    /// The instruction's name as users write it.
    pub fn name(&self) -> &'static str {
        match self {
            DebugInst::Printf { .. } => "printf",
            DebugInst::PrintRegister { .. } | DebugInst::PrintShared { .. } => "print_tensor",
            DebugInst::Assume { .. } => "assume",
        }
    }

    /// What the instruction reads, writes and needs (see [`Facts`]).
    pub fn facts<'a>(&'a self, _p: &'a Program) -> Facts<'a> {
        match self {
            DebugInst::Printf { args, .. } => Facts::default().reads(args),
            DebugInst::PrintRegister { src, scratch } => {
                // the elements of all threads meet in shared memory behind block barriers
                let mut f = Facts::scoped(ThreadScope::Block)
                    .effect(Effect::now(Memory::Register(src.tensor), Access::Read));
                for access in [
                    Access::Declare,
                    Access::Write,
                    Access::Read,
                    Access::Release,
                ] {
                    f = f.effect(Effect::now(Memory::Shared(*scratch), access));
                }
                f
            }
            DebugInst::PrintShared { src } => {
                Facts::default().effect(Effect::shared(src, Access::Read))
            }
            DebugInst::Assume { .. } => Facts::default(),
        }
    }

    /// The instruction as the IR printer shows it.
    pub(crate) fn describe(&self, n: &Names) -> String {
        match self {
            DebugInst::Printf { pieces, args } => {
                let mut text = String::new();
                for (i, piece) in pieces.iter().enumerate() {
                    text.push_str(&piece.replace('{', "{{").replace('}', "}}"));
                    if i < args.len() {
                        text.push_str("{}");
                    }
                }
                let values: Vec<String> = args.iter().map(|a| format!(", {}", n.e(a))).collect();
                format!("printf({text:?}{})", values.concat())
            }
            DebugInst::PrintRegister { src, scratch } => format!(
                "print_tensor({}) scratch={}",
                n.view(src),
                n.p.shared(*scratch).name
            ),
            DebugInst::PrintShared { src } => format!("print_tensor({})", n.sview(src)),
            DebugInst::Assume { var, divisor } => {
                format!("assume({} % {divisor} == 0)", n.p.var(*var).name)
            }
        }
    }
}

/// `%` written so that `printf` prints it.
fn escape_percent(s: &str) -> String {
    s.replace('%', "%%")
}

/// The `printf` conversion of a scalar of type `t` (booleans are passed as the strings `true`
/// and `false`).
pub(crate) fn scalar_conversion(t: DType) -> &'static str {
    match t {
        DType::Bool => "%s",
        DType::I32 | DType::Int(_) => "%d",
        DType::U32 | DType::UInt(_) => "%u",
        DType::I64 => "%lld",
        DType::U64 => "%llu",
        // floats are not scalars of scripts; the verifier rejects them
        DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. } => "%.6g",
    }
}

/// The `printf` format of a `printf` instruction: its text with a conversion for each value,
/// and a newline.
pub(crate) fn printf_format(pieces: &[String], args: &[Expr]) -> String {
    let mut f = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        f.push_str(&escape_percent(piece));
        if let Some(a) = args.get(i) {
            f.push_str(scalar_conversion(a.dtype()));
        }
    }
    f.push('\n');
    f
}

/// The `printf` conversion of one element of a tile of type `t`, right-aligned in a column
/// wide enough for most values: floats with six significant digits (NaN printed as `nan`
/// whatever its sign bit), booleans passed as `true` and `false`.
pub(crate) fn element_conversion(t: DType) -> &'static str {
    match t {
        DType::F16 | DType::BF16 | DType::F32 | DType::Float { .. } => "%9.6g",
        DType::I32 | DType::Int(_) => "%6d",
        DType::U32 | DType::UInt(_) => "%6u",
        DType::I64 => "%6lld",
        DType::U64 => "%6llu",
        DType::Bool => "%5s",
    }
}

/// The `printf` format of a tile's header line; its arguments are the block index (x, y, z).
pub(crate) fn header_format(name: &str, dtype: DType, shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!(
        "{}: {dtype}[{}], block (%d, %d, %d)\n",
        escape_percent(name),
        dims.join(", ")
    )
}

/// The `printf` format of one line of a tile with `elems` elements: the indentation, the
/// opening brackets, the elements separated by spaces, the closing brackets, a newline, and
/// the blank lines that end a slice (four strings around the elements, see [`row_marks`]).
pub(crate) fn line_format(elems: usize, t: DType) -> String {
    let conv = vec![element_conversion(t); elems];
    format!("%s%s{}%s\n%s", conv.join(" "))
}

/// What surrounds row `row` (in row-major order) of a tile of shape `shape` (rank ≥ 1):
/// the brackets that open before it, those that close after it, and the blank lines after
/// it (between slices, none after the last row), as NumPy prints nested arrays. The
/// generated code computes the same (`codegen/debug.rs`).
pub(crate) fn row_marks(shape: &[i64], row: i64) -> (usize, usize, usize) {
    let lead = &shape[..shape.len().saturating_sub(1)];
    let rows: i64 = lead.iter().product();
    let (mut open, mut close) = (1, 1);
    let (mut zeros, mut lasts) = (true, true);
    let mut q = row;
    for &d in lead.iter().rev() {
        let i = q % d.max(1);
        q /= d.max(1);
        zeros = zeros && i == 0;
        lasts = lasts && i == d - 1;
        open += zeros as usize;
        close += lasts as usize;
    }
    let blank = if row + 1 < rows { close - 1 } else { 0 };
    (open, close, blank)
}

/// The name a tile prints with: `.T` marks a transposed view.
pub(crate) fn view_name(name: &str, transposed: bool) -> String {
    if transposed {
        format!("{name}.T")
    } else {
        name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_open_and_close_numpy_brackets() {
        // [2, 2, 3]: rows (0,0) (0,1) (1,0) (1,1)
        let s = [2, 2, 3];
        assert_eq!(row_marks(&s, 0), (3, 1, 0));
        assert_eq!(row_marks(&s, 1), (1, 2, 1));
        assert_eq!(row_marks(&s, 2), (2, 1, 0));
        assert_eq!(row_marks(&s, 3), (1, 3, 0));
        assert_eq!(row_marks(&[5], 0), (1, 1, 0));
        assert_eq!(row_marks(&[1, 4], 0), (2, 2, 0));
    }

    #[test]
    fn formats_escape_percent_signs() {
        let f = printf_format(&["100% of ".into(), " is %d".into()], &[Expr::i32(3)]);
        assert_eq!(f, "100%% of %d is %%d\n");
        assert_eq!(
            header_format("a%b", DType::F16, &[2, 3]),
            "a%%b: f16[2, 3], block (%d, %d, %d)\n"
        );
    }
}
