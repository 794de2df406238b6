//! The intermediate representation: plain data, printable, hashable, comparable.
//!
//! `lang` builds it, `passes` transform it, `codegen` (and later `interp`) read it. Besides the
//! layout value types, it depends on nothing else in the crate.

mod divisor;
mod dtype;
mod expr;
mod inst;
mod launch;
mod loc;
pub mod philox;
mod printer;
mod program;
mod stmt;
mod tensor;

pub use divisor::{fast_divide, fast_divisor_bits, MAX_FAST_DIVISOR};
pub use dtype::{DType, FloatFormat};
pub use expr::{wrap_to, BinOp, Expr, ExprPrinter, VarDecl, VarId, VarKind, Workspace};
pub use inst::facts;
pub use inst::{
    b_mn_major, launch_registers, sets_max_registers, ArithInst, AtomicOp, BinaryOp, CpAsyncInst,
    DebugInst, Facts, Inst, MbarrierInst, MemoryInst, MmaInst, RandomKind, ReduceOp, RegistersInst,
    Repeat, ReshapeOp, ScanOp, ShapeInst, TileExpr, TmaInst, UnaryOp, WgmmaA, WgmmaInst,
    WgmmaTarget,
};
pub(crate) use inst::{debug, reduce_crosses_warps, reduce_locals, registers, subsets};
pub use launch::{
    Bound, HostValue, IndexGuard, KernelParam, L2Promotion, LaunchPlan, PointerRule, TensorMapId,
    TensorMapSpec,
};
pub use loc::Loc;
pub use printer::{describe_stmt, print_program};
pub use program::{Param, ParamKind, Program};
pub use stmt::{GroupCopies, GroupKind, GroupSync, Stmt, StmtId, StmtKind, SyncScope, Vote};
pub use tensor::{
    BarrierArrayDecl, BarrierArrayId, BarrierRef, GlobalDecl, GlobalId, RegId, RegView,
    RegisterDecl, SharedDecl, SharedId, SharedView,
};
