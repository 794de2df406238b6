//! What the host must do to launch a program: grid, block, shared memory and the kernel's
//! parameter list (including tensor maps to encode). Produced by `passes::lower`, consumed by
//! `runtime`, which knows nothing about scripts.

use super::{DType, Expr, GlobalId, VarId};
use crate::layout::Swizzle;

/// Index of a tensor map in [`crate::ir::Program::tensor_maps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorMapId(pub u32);

/// A host-side argument value, after extraction from the typed tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostValue {
    /// A scalar (runtime or constant).
    Int(i64),
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
            HostValue::Ptr { .. } => None,
        }
    }
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
    /// The global view's extents, outermost first (row-major, contiguous innermost).
    pub global_shape: Vec<Expr>,
    /// The box (the shared tile's shape), outermost first.
    pub box_shape: Vec<u32>,
    /// The shared tile's swizzle.
    pub swizzle: Swizzle,
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
}

/// What the kernel requires of a pointer argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PointerRule {
    /// Position in the script's arguments.
    pub arg: usize,
    /// Required alignment of the address in bytes.
    pub align: u32,
    /// Elements the buffer must hold at least (the product of the largest view's extents).
    pub min_elems: Expr,
    /// Bytes per element of the views over this buffer.
    pub elem_bytes: u32,
    /// Why the alignment is needed (for error messages).
    pub why: String,
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
}

impl LaunchPlan {
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
