//! What the host must do to launch a program: grid, block, shared memory and the kernel's
//! parameter list (including tensor maps to encode). Produced by `passes::lower`, consumed by
//! `runtime`, which knows nothing about scripts.

use super::{DType, Expr, GlobalId, Loc, VarId};
use crate::layout::Swizzle;

/// Index of a tensor map in [`crate::ir::Program::tensor_maps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorMapId(pub u32);

/// A host-side argument value, after extraction from the typed tuple.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HostValue {
    /// An integer scalar (runtime or constant).
    Int(i64),
    /// A floating-point scalar (`f32`, `f16`, `bf16` arguments; exact in an `f64`).
    Float(f64),
    /// A device buffer: address and size in bytes.
    Ptr {
        /// Device address.
        ptr: u64,
        /// Size of the buffer in bytes.
        bytes: usize,
    },
}

impl HostValue {
    /// The integer value, for scalars.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            HostValue::Int(v) => Some(*v),
            HostValue::Float(_) | HostValue::Ptr { .. } => None,
        }
    }
}

/// How far an L2 miss of a TMA copy is widened when it fetches from memory (the tensor map's
/// L2 promotion): the rest of the wider line comes along for copies that read it next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum L2Promotion {
    /// The missed sectors only.
    None,
    /// To 64 bytes.
    B64,
    /// To 128 bytes.
    B128,
    /// To 256 bytes (the default).
    #[default]
    B256,
}

/// A TMA tensor map the host encodes at launch and passes as a `__grid_constant__` parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMapSpec {
    /// Parameter name in the generated code.
    pub name: String,
    /// The global view it describes.
    pub view: GlobalId,
    /// The pointer argument it describes.
    pub ptr_arg: usize,
    /// Element type.
    pub dtype: DType,
    /// The global view's extents, outermost first.
    pub global_shape: Vec<Expr>,
    /// The global view's strides in elements, outermost first (the innermost must be 1, the
    /// others multiples of 16 bytes: checked when encoding).
    pub global_strides: Vec<Expr>,
    /// The box (the shared tile's shape), outermost first.
    pub box_shape: Vec<u32>,
    /// The shared tile's swizzle.
    pub swizzle: Swizzle,
    /// Whether a TMA store writes through it: a store writes a row's last 16-byte granule
    /// whole, so the view's rows must be whole granules (measured on the H200: the elements
    /// after rows of 360 bytes were overwritten).
    pub stores: bool,
    /// The L2 promotion of its copies (the kernel's, `Kernel::tma_l2_promotion`).
    pub l2_promotion: L2Promotion,
}

impl TensorMapSpec {
    /// The rules TMA imposes on a view, for its extents and strides (in elements, outermost
    /// first): extents in 1..=2^32, the innermost stride 1, the others multiples of 16 bytes below
    /// 2^40, and for a map stores write through, rows of whole 16-byte granules. Returns the byte strides of the outer dimensions (outermost first), or a message. The
    /// runtime checks them before encoding, the interpreter before running.
    pub fn check_view(&self, dims: &[i64], strides: &[i64]) -> Result<Vec<u64>, String> {
        let elem = self.dtype.nbytes() as i64;
        if let Some(d) = dims.iter().find(|d| **d <= 0 || **d > (1i64 << 32)) {
            return Err(format!("a TMA view extent of {d} is outside 1..=2^32"));
        }
        let rank = dims.len();
        if strides.len() != rank {
            return Err(format!("{} strides for {rank} extents", strides.len()));
        }
        if let (true, Some(&inner)) = (self.stores, dims.last()) {
            if inner * elem % 16 != 0 {
                return Err(format!(
                    "a TMA store into a view whose rows are {} bytes ({inner} elements): TMA \
                     writes a row's last 16 bytes whole, past the view's last column; the rows \
                     must be a multiple of {} elements (or store from registers)",
                    inner * elem,
                    16 / elem
                ));
            }
        }
        if rank > 0 && strides[rank - 1] != 1 {
            return Err(format!(
                "the view's innermost stride is {}; TMA needs the innermost dimension contiguous \
                 (stride 1)",
                strides[rank - 1]
            ));
        }
        let mut out = vec![];
        for &s in &strides[..rank.saturating_sub(1)] {
            let bytes = s.checked_mul(elem).filter(|b| (1..1i64 << 40).contains(b));
            let Some(bytes) = bytes else {
                return Err(format!(
                    "a stride of {s} elements is outside what TMA allows (1 byte to 2^40 bytes)"
                ));
            };
            if bytes % 16 != 0 {
                return Err(format!(
                    "a row stride of {bytes} bytes is not a multiple of 16, which TMA requires; \
                     pad the rows to a multiple of {} elements",
                    16 / elem
                ));
            }
            out.push(bytes as u64);
        }
        Ok(out)
    }
}

/// One kernel parameter, in order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KernelParam {
    /// A runtime scalar argument.
    Scalar {
        /// Position in the script's arguments.
        arg: usize,
        /// Its type.
        dtype: DType,
    },
    /// A device pointer argument.
    Pointer {
        /// Position in the script's arguments.
        arg: usize,
    },
    /// A tensor map built from a pointer argument and runtime sizes.
    TensorMap(TensorMapSpec),
    /// The packed multiplier and shift of a divisor over runtime arguments (a `u64`), for the
    /// variable that stands for it.
    FastDivisor {
        /// The variable (of kind [`crate::ir::VarKind::FastDivisor`]).
        var: VarId,
        /// The divisor, over runtime arguments and constants.
        divisor: Expr,
    },
    /// The device pointer of a workspace the kernel owns (`global_tensor`): allocated zeroed
    /// by the host on first use (again when a launch needs more), kept between launches.
    Workspace {
        /// The pointer variable (of kind [`crate::ir::VarKind::Workspace`]).
        var: VarId,
        /// Its name, for messages.
        name: String,
        /// Bytes it must hold, over runtime arguments and constants.
        bytes: Expr,
        /// Whether the kernel leaves it zeroed (see [`crate::ir::Workspace::zeroed`]).
        zeroed: bool,
    },
}

/// What the kernel requires of a pointer argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PointerRule {
    /// Position in the script's arguments.
    pub arg: usize,
    /// Required alignment of the address in bytes.
    pub align: u32,
    /// Elements the buffer must hold at least (for the largest view over it: the product of
    /// a row-major view's extents, the largest offset plus one of a strided view's).
    pub min_elems: Expr,
    /// Runtime strides of views over the buffer, which must not be negative, each with what it
    /// is (for messages).
    pub nonnegative: Vec<(Expr, String)>,
    /// Bytes per element of the views over this buffer.
    pub elem_bytes: u32,
    /// Why the alignment is needed (for error messages).
    pub why: String,
}

/// A bound of an integer the kernel computes, as a function of its runtime arguments: host
/// arithmetic in 128 bits, exact for anything 64-bit arguments can produce.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// A constant.
    Int(i128),
    /// The value of the runtime argument at this position.
    Arg(usize),
    /// `a + b`.
    Add(Box<Bound>, Box<Bound>),
    /// `a - b`.
    Sub(Box<Bound>, Box<Bound>),
    /// `a * b`.
    Mul(Box<Bound>, Box<Bound>),
    /// `a / b`, truncating as C does.
    Div(Box<Bound>, Box<Bound>),
    /// The smaller of the two.
    Min(Box<Bound>, Box<Bound>),
    /// The larger of the two.
    Max(Box<Bound>, Box<Bound>),
}

impl Bound {
    /// The value, given the runtime arguments' values; `None` when an argument has none or a
    /// division has a zero divisor.
    pub fn eval(&self, arg: &dyn Fn(usize) -> Option<i64>) -> Option<i128> {
        let two = |a: &Bound, b: &Bound| Some((a.eval(arg)?, b.eval(arg)?));
        Some(match self {
            Bound::Int(v) => *v,
            Bound::Arg(i) => arg(*i)? as i128,
            Bound::Add(a, b) => two(a, b).map(|(x, y)| x.saturating_add(y))?,
            Bound::Sub(a, b) => two(a, b).map(|(x, y)| x.saturating_sub(y))?,
            Bound::Mul(a, b) => two(a, b).map(|(x, y)| x.saturating_mul(y))?,
            Bound::Div(a, b) => two(a, b).and_then(|(x, y)| x.checked_div(y))?,
            Bound::Min(a, b) => two(a, b).map(|(x, y)| x.min(y))?,
            Bound::Max(a, b) => two(a, b).map(|(x, y)| x.max(y))?,
        })
    }

    /// The runtime arguments the bound reads, each once, in order of appearance.
    pub fn args(&self, out: &mut Vec<usize>) {
        match self {
            Bound::Int(_) => {}
            Bound::Arg(i) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            Bound::Add(a, b)
            | Bound::Sub(a, b)
            | Bound::Mul(a, b)
            | Bound::Div(a, b)
            | Bound::Min(a, b)
            | Bound::Max(a, b) => {
                a.args(out);
                b.args(out);
            }
        }
    }
}

/// A 32-bit signed integer the kernel computes that must stay within `i32` for the arguments
/// of a launch (its C arithmetic would overflow, which is undefined): checked before every
/// launch, on the GPU and in the interpreter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexGuard {
    /// The value's bound (the largest value it can take, or the smallest).
    pub bound: Bound,
    /// Whether `bound` is the largest value (else the smallest).
    pub upper: bool,
    /// What the value is, as the script wrote it.
    pub what: String,
    /// Where.
    pub loc: Loc,
}

impl IndexGuard {
    /// `Err(value)` when the arguments take the value out of `i32` (or cannot be evaluated:
    /// `Err(None)`).
    pub fn check(&self, arg: &dyn Fn(usize) -> Option<i64>) -> Result<(), Option<i128>> {
        let v = self.bound.eval(arg).ok_or(None)?;
        let ok = if self.upper {
            v <= i32::MAX as i128
        } else {
            v >= i32::MIN as i128
        };
        if ok {
            Ok(())
        } else {
            Err(Some(v))
        }
    }
}

/// Everything the host needs to launch a compiled program.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LaunchPlan {
    /// The `extern "C"` kernel name.
    pub kernel_name: String,
    /// Grid extents (x, y, z) over runtime arguments.
    pub grid: [Expr; 3],
    /// Threads per block.
    pub block_threads: u32,
    /// Dynamic shared memory in bytes.
    pub smem_bytes: u32,
    /// Kernel parameters in order.
    pub params: Vec<KernelParam>,
    /// Checks on pointer arguments before launch.
    pub pointer_rules: Vec<PointerRule>,
    /// Which variable stands for which runtime argument.
    pub arg_vars: Vec<(VarId, usize)>,
    /// Pointer arguments, with whether the kernel may write through each.
    pub pointers: Vec<(usize, bool)>,
    /// The kernel's 32-bit integers that depend on runtime arguments, checked at launch.
    pub index_guards: Vec<IndexGuard>,
    /// `(argument, divisor, where)`: what the script assumed divides an integer argument
    /// (`k.assume`), checked at launch with the index guards.
    pub assumed: Vec<(usize, i64, Loc)>,
    /// A persistent grid: the launch caps the grid along x at the device's multiprocessors.
    pub persistent: bool,
    /// Blocks per cluster along x, y, z (`[1, 1, 1]`: no clusters): the grid must be a
    /// multiple of it, a persistent grid is rounded down to one.
    pub cluster: [u32; 3],
    /// The kernel waits for the grid before it ([`crate::ir::Program::waits_for_prior_grid`]), so it
    /// may be launched with programmatic stream serialization.
    pub waits_for_prior_grid: bool,
}

impl LaunchPlan {
    /// The grid a launch runs for the grid its expressions give, `multiprocessors` the
    /// device's (a persistent grid's cap), or why it cannot run: a persistent grid for `work`
    /// items is the fewest blocks that take as many rounds as one block per multiprocessor
    /// would (`ceil(work / rounds)`, rounds `ceil(work / cap)`, the cap rounded down to whole
    /// clusters): 512 tiles on 132 multiprocessors take four rounds either way, and 128
    /// blocks give every block four while 132 leave 16 of them a round idle (drawing power
    /// a card at its power cap takes from the others' clocks). Whole clusters, at least one;
    /// any other grid must be whole clusters.
    pub fn launched_grid(
        &self,
        mut grid: [u32; 3],
        multiprocessors: u32,
    ) -> Result<[u32; 3], String> {
        let cx = self.cluster[0].max(1);
        if self.persistent {
            let cap = (multiprocessors.max(1) / cx * cx).max(cx);
            let work = grid[0].max(1);
            let rounds = work.div_ceil(cap);
            let balanced = work.div_ceil(rounds).div_ceil(cx) * cx;
            grid[0] = balanced.min(cap).max(cx);
        }
        for (axis, (&g, &c)) in grid.iter().zip(&self.cluster).enumerate() {
            if c > 1 && g % c != 0 {
                return Err(format!(
                    "grid dimension {axis} would be {g} blocks, not a multiple of the cluster's {c}"
                ));
            }
        }
        Ok(grid)
    }
}

impl LaunchPlan {
    /// Checks the index guards for these arguments (`int(i)`: the integer value of argument
    /// `i`); the error is `(the arguments' names, what would overflow)`.
    pub fn check_index_guards(
        &self,
        int: &dyn Fn(usize) -> Option<i64>,
        arg_name: &dyn Fn(usize) -> String,
    ) -> Result<(), (String, String)> {
        for &(arg, divisor, loc) in &self.assumed {
            let v = int(arg);
            if v.is_none_or(|v| v % divisor != 0) {
                let value = v.map_or_else(|| "no value".to_string(), |v| v.to_string());
                return Err((
                    arg_name(arg),
                    format!(
                        "the script assumes `{}` is a multiple of {divisor} (assume at {loc}), \
                         and it is {value}: the kernel is compiled for such values only; pass \
                         one, or drop the assumption",
                        arg_name(arg)
                    ),
                ));
            }
        }
        for g in &self.index_guards {
            if let Err(v) = g.check(int) {
                let mut args = vec![];
                g.bound.args(&mut args);
                let values: Vec<String> = args
                    .iter()
                    .map(|&a| match int(a) {
                        Some(v) => format!("{} = {v}", arg_name(a)),
                        None => arg_name(a),
                    })
                    .collect();
                let names: Vec<String> = args.iter().map(|&a| arg_name(a)).collect();
                let reach = match v {
                    Some(v) => format!("reaches {v}"),
                    None => "cannot be evaluated".into(),
                };
                return Err((
                    names.join(", "),
                    format!(
                        "with {}, {} at {} {reach}, outside the 32-bit integers the kernel computes \
                         with; use smaller sizes (or split the problem)",
                        values.join(", "),
                        g.what,
                        g.loc
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Evaluates a host-side expression given the script's argument values (scalars as
    /// integers; pointers and constants are never read here).
    pub fn eval(&self, e: &Expr, args: &[i64]) -> Option<i64> {
        e.eval(&|v| {
            self.arg_vars
                .iter()
                .find(|(id, _)| *id == v)
                .map(|(_, i)| args[*i])
        })
    }

    /// The script arguments an expression reads, in order of appearance.
    pub fn args_of<'a>(&'a self, e: &Expr) -> impl Iterator<Item = usize> + 'a {
        let mut vars = vec![];
        e.vars(&mut vars);
        let mut args: Vec<usize> = vars
            .into_iter()
            .filter_map(|v| {
                self.arg_vars
                    .iter()
                    .find(|(id, _)| *id == v)
                    .map(|(_, a)| *a)
            })
            .collect();
        args.dedup();
        args.into_iter()
    }

    /// Like [`LaunchPlan::eval`], reading argument values through a function.
    pub fn eval_with(&self, e: &Expr, arg: &dyn Fn(usize) -> Option<i64>) -> Option<i64> {
        e.eval(&|v| {
            self.arg_vars
                .iter()
                .find(|(id, _)| *id == v)
                .and_then(|(_, i)| arg(*i))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(persistent: bool, cluster: [u32; 3]) -> LaunchPlan {
        LaunchPlan {
            kernel_name: "k".into(),
            grid: [Expr::i32(1), Expr::i32(1), Expr::i32(1)],
            block_threads: 128,
            smem_bytes: 0,
            params: vec![],
            pointer_rules: vec![],
            arg_vars: vec![],
            pointers: vec![],
            index_guards: vec![],
            assumed: vec![],
            persistent,
            cluster,
            waits_for_prior_grid: false,
        }
    }

    #[test]
    fn persistent_grids_are_capped_and_rounded_to_whole_clusters() {
        let p = plan(true, [2, 1, 1]);
        // 1056 items: eight rounds of 132
        assert_eq!(p.launched_grid([1056, 1, 1], 132), Ok([132, 1, 1]));
        assert_eq!(p.launched_grid([1040, 1, 1], 131), Ok([130, 1, 1]));
        // 1000 items take eight rounds on 132: 125 blocks do, rounded up to whole clusters
        assert_eq!(p.launched_grid([1000, 1, 1], 132), Ok([126, 1, 1]));
        // 512 tiles: four rounds, 128 blocks of four each (not 116 of four and 16 of three)
        assert_eq!(p.launched_grid([512, 1, 1], 132), Ok([128, 1, 1]));
        // fewer items than a cluster: one whole cluster (a block without an item idles)
        assert_eq!(p.launched_grid([1, 1, 1], 132), Ok([2, 1, 1]));
        let alone = plan(true, [1, 1, 1]);
        assert_eq!(alone.launched_grid([5, 1, 1], 132), Ok([5, 1, 1]));
        // nine items on the interpreter's four: three rounds, three blocks of three
        assert_eq!(alone.launched_grid([9, 1, 1], 4), Ok([3, 1, 1]));
        assert_eq!(alone.launched_grid([133, 1, 1], 132), Ok([67, 1, 1]));
    }

    #[test]
    fn other_grids_must_be_whole_clusters() {
        let p = plan(false, [2, 2, 1]);
        assert_eq!(p.launched_grid([4, 6, 1], 132), Ok([4, 6, 1]));
        let e = p.launched_grid([4, 5, 1], 132).unwrap_err();
        assert!(e.contains("grid dimension 1 would be 5 blocks"), "{e}");
        assert_eq!(
            plan(false, [1, 1, 1]).launched_grid([7, 3, 1], 132),
            Ok([7, 3, 1])
        );
    }
}
