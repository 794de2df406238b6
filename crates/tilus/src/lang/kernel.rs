//! The kernel builder: scalar variables, loops, conditionals, thread groups and the launch
//! configuration.
//! Instruction families add their methods in the files beside this one.

use super::{Scalar, Val};
use crate::ir::{
    DType, Expr, GroupCopies, GroupKind, Loc, Param, ParamKind, Program, Stmt, StmtKind, SyncScope,
    VarDecl, VarId, VarKind,
};
use crate::Diagnostic;
use std::collections::{HashMap, HashSet};

/// `blockIdx` as scalars.
#[derive(Clone, Debug)]
pub struct BlockIdx {
    /// `blockIdx.x`.
    pub x: Scalar,
    /// `blockIdx.y`.
    pub y: Scalar,
    /// `blockIdx.z`.
    pub z: Scalar,
}

/// Builds a kernel while a script's body runs. Every instruction method is
/// `#[track_caller]`: the program remembers the user's file and line for diagnostics and for
/// comments in the generated CUDA.
pub struct Kernel {
    pub(crate) prog: Program,
    /// Open statement lists; the last one receives new statements.
    blocks: Vec<Vec<Stmt>>,
    /// Thread counts of the open thread groups (the block first).
    pub(crate) groups: Vec<u32>,
    /// The first thread in the block of each open thread group (the block's is 0; `None`
    /// inside `thread_groups`, where it is known at run time only).
    group_firsts: Vec<Option<u32>>,
    /// The hardware barrier of each thread group that synchronizes on its own, by (first
    /// thread, threads): 1, 2, .. in order of first use.
    group_barriers: Vec<(u32, u32)>,
    pub(crate) diags: Vec<Diagnostic>,
    next_name: Option<String>,
    counters: HashMap<&'static str, u32>,
    used_names: HashSet<String>,
    warps_loc: Option<Loc>,
    /// The definitions of immutable `let`s, so that host-side expressions (fast divisors) can
    /// see through them to the arguments.
    pub(crate) let_values: HashMap<VarId, Expr>,
}

/// Words a name in generated CUDA may not be: C++ keywords and the names generated code
/// defines itself.
const RESERVED: &[&str] = &[
    "alignas",
    "alignof",
    "asm",
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "constexpr",
    "continue",
    "default",
    "delete",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "namespace",
    "new",
    "operator",
    "private",
    "public",
    "register",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "true",
    "typedef",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "while",
    "u8",
    "u16",
    "u32",
    "u64",
    "i32",
    "i64",
    "half",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "CUtensorMap",
    "l",
    "w",
    "g",
    "ki",
    "mi",
    "ni",
    "v",
];

/// Turns a user-supplied name into a C identifier that cannot clash with generated code.
fn c_identifier(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if RESERVED.contains(&s.as_str()) || s.starts_with("tilus_") || s.starts_with("__") {
        s.push('_');
    }
    s
}

impl Kernel {
    pub(crate) fn new(name: String) -> Kernel {
        Kernel {
            prog: Program {
                name,
                params: vec![],
                vars: vec![],
                globals: vec![],
                shareds: vec![],
                registers: vec![],
                barriers: vec![],
                grid: vec![Expr::i32(1); 3],
                warps: 0,
                body: vec![],
                smem_bytes: 0,
                smem_align: 16,
                grid_loc: None,
                min_blocks: None,
                tensor_maps: vec![],
                stmt_count: 0,
                persistent: false,
                waits_for_prior_grid: false,
                launches_dependents_early: false,
                cluster: [1, 1, 1],
                clustered: false,
                l2_promotion: Default::default(),
            },
            blocks: vec![vec![]],
            groups: vec![0],
            group_firsts: vec![Some(0)],
            group_barriers: vec![],
            diags: vec![],
            next_name: None,
            counters: HashMap::new(),
            used_names: HashSet::new(),
            let_values: HashMap::new(),
            warps_loc: None,
        }
    }

    pub(crate) fn finish(mut self) -> (Program, Vec<Diagnostic>) {
        if self.prog.warps == 0 && self.warps_loc.is_none() {
            // No call site to blame: point at the body's first statement.
            let loc = self.blocks.first().and_then(|b| b.first()).map(|s| s.loc);
            self.diags.push(Diagnostic {
                loc: loc.unwrap_or(Loc { file: "<script>", line: 0, col: 0 }),
                message: "the script never sets the number of warps: call `k.warps(n)` at the top of the body"
                    .into(),
            });
        }
        if self.prog.grid_loc.is_none() {
            // One block is a choice a script states; a forgotten grid would launch one block
            // and compute one tile of the output. Blamed on the top of the body: the call that
            // sets the warps, else the first statement.
            let loc = self
                .warps_loc
                .or_else(|| self.blocks.first().and_then(|b| b.first()).map(|s| s.loc));
            self.diags.push(Diagnostic {
                loc: loc.unwrap_or(Loc {
                    file: "<script>",
                    line: 0,
                    col: 0,
                }),
                message:
                    "the script never sets the grid: call `k.blocks([..])` at the top of the body \
                          (`k.blocks([1])` for a single block)"
                        .into(),
            });
        }
        self.prog.body = self.blocks.pop().unwrap_or_default();
        (self.prog, self.diags)
    }

    /// Gives the next declared variable or tensor this name (in IR and generated CUDA).
    /// Without it, names are generated from the kind (`s0`, `r1`, `v2`, ...).
    pub fn name_next(&mut self, name: &str) -> &mut Self {
        self.next_name = Some(name.to_string());
        self
    }

    /// Runs `f` (which declares helpers of the instruction being built) with the name given
    /// by [`Kernel::name_next`] set aside, so that the name goes to what the instruction
    /// itself declares afterwards, not to its first helper.
    pub(crate) fn without_pending_name<R>(&mut self, f: impl FnOnce(&mut Kernel) -> R) -> R {
        let pending = self.next_name.take();
        let r = f(self);
        self.next_name = pending;
        r
    }

    /// A unique C identifier for a new declaration: the name given by [`Kernel::name_next`]
    /// (made a valid identifier, and unique by a numeric suffix), else `prefix` and a counter.
    pub(crate) fn fresh_name(&mut self, prefix: &'static str) -> String {
        let base = match self.next_name.take() {
            Some(n) => c_identifier(&n),
            None => {
                let c = self.counters.entry(prefix).or_insert(0);
                *c += 1;
                format!("{prefix}{}", *c - 1)
            }
        };
        let mut name = base.clone();
        let mut i = 1;
        while !self.used_names.insert(name.clone()) {
            name = format!("{base}_{i}");
            i += 1;
        }
        name
    }

    pub(crate) fn push(&mut self, kind: StmtKind, loc: Loc) {
        // A name given for a call that declared nothing must not attach to a later declaration.
        self.next_name = None;
        let id = self.prog.next_stmt_id();
        self.blocks
            .last_mut()
            .expect("an open block")
            .push(Stmt { kind, loc, id });
    }

    /// Reports hyperparameters the script cannot take (a size outside what its body can
    /// trace, a combination it does not build): tracing fails with `message` at the
    /// caller's line, as for the language's own errors, and the autotuner drops the point.
    /// A body that refuses should return without tracing the rest.
    #[track_caller]
    pub fn refuse_config(&mut self, message: impl Into<String>) {
        self.error(Loc::caller(), message);
    }

    pub(crate) fn error(&mut self, loc: Loc, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            loc,
            message: message.into(),
        });
    }

    pub(crate) fn new_var(&mut self, name: String, dtype: DType, kind: VarKind) -> VarId {
        let id = VarId(self.prog.vars.len() as u32);
        self.prog.vars.push(VarDecl {
            name,
            dtype,
            pointee: None,
            kind,
        });
        id
    }

    pub(crate) fn declare_param(&mut self, name: &str, index: usize, kind: ParamKind) -> Val {
        self.next_name = Some(name.to_string());
        let name = &self.fresh_name("arg");
        let (var, val) = match &kind {
            ParamKind::Const(t, v) => (None, Val(super::scalar::ValRepr::Const(*v, *t))),
            ParamKind::Scalar(t) => {
                let id = self.new_var(name.to_string(), *t, VarKind::Param(index));
                (Some(id), Val::var(id, *t))
            }
            ParamKind::Pointer { dtype, .. } => {
                let id = self.new_var(name.to_string(), DType::U64, VarKind::Param(index));
                self.prog.vars[id.0 as usize].pointee = Some(*dtype);
                (Some(id), Val::var(id, DType::U64))
            }
        };
        self.prog.params.push(Param {
            name: name.to_string(),
            kind,
            var,
        });
        val
    }

    /// Threads in the innermost open thread group.
    pub(crate) fn group_threads(&self) -> u32 {
        *self.groups.last().unwrap_or(&0)
    }

    /// Sets the grid: the number of blocks along x (and y, z).
    #[track_caller]
    pub fn blocks(&mut self, dims: impl super::Scalars) {
        self.blocks_at(dims.into_exprs(), Loc::caller());
    }

    /// [`Kernel::blocks`] at `loc`. The host computes the grid: `let`s of arguments are
    /// replaced by their definitions (what is left that it cannot compute, the verifier
    /// reports).
    pub(crate) fn blocks_at(&mut self, dims: Vec<Expr>, loc: Loc) {
        let dims: Vec<Expr> = dims
            .into_iter()
            .map(|d| self.host_expr(&d).unwrap_or(d))
            .collect();
        if dims.is_empty() || dims.len() > 3 {
            self.error(
                loc,
                format!("blocks takes 1 to 3 dimensions, got {}", dims.len()),
            );
            return;
        }
        for (i, d) in dims.into_iter().enumerate() {
            self.prog.grid[i] = d;
        }
        self.prog.grid_loc = Some(loc);
    }

    /// Sets the number of warps per block (threads = 32 × warps).
    #[track_caller]
    pub fn warps(&mut self, n: u32) {
        let loc = Loc::caller();
        if self.blocks.len() > 1 {
            self.error(
                loc,
                "warps must be set at the top of the body, outside loops, conditionals and thread groups",
            );
            return;
        }
        if let Some(at) = self.warps_loc {
            self.error(
                loc,
                format!("the number of warps is already set at {at}; set it once"),
            );
            return;
        }
        self.warps_loc = Some(loc);
        if !(1..=32).contains(&n) {
            self.error(
                loc,
                format!("warps must be between 1 and 32 (1024 threads), got {n}"),
            );
            return;
        }
        self.prog.warps = n;
        self.groups[0] = n * 32;
    }

    /// Asks the register allocator to leave room for `n` blocks per multiprocessor (registers
    /// per thread at most 65536 / (n × threads)). Without it, Tilus compiles for the most blocks
    /// that fit in shared memory and compile without spilling registers.
    #[track_caller]
    pub fn min_blocks_per_sm(&mut self, n: u32) {
        let loc = Loc::caller();
        if !(1..=32).contains(&n) {
            self.error(
                loc,
                format!("min_blocks_per_sm must be between 1 and 32, got {n}"),
            );
            return;
        }
        self.prog.min_blocks = Some(n);
    }

    /// Makes every thread wait, before anything else, until the grid launched before this one
    /// in the stream has completed and its memory writes are visible (`griddepcontrol.wait`).
    /// A kernel that reads another's output and declares it may then be launched while that
    /// kernel is still running (programmatic dependent launch, when the host asks for it:
    /// [`crate::runtime::programmatic_launch`]): its blocks are scheduled as the other's
    /// finish, and the launch's own latency is hidden under the other's last blocks. Launched
    /// the ordinary way, the wait returns at once.
    pub fn wait_for_prior_grid(&mut self) {
        self.prog.waits_for_prior_grid = true;
    }

    /// Lets the grid launched after this one in the stream, when it is this kernel's
    /// programmatic dependent (it declared [`Kernel::wait_for_prior_grid`] and the host
    /// launched it so), be scheduled as soon as every block of this grid has started
    /// (`griddepcontrol.launch_dependents` at each block's start) instead of once they have
    /// all finished: its blocks take the multiprocessors this grid leaves free and wait there,
    /// so that they start their work as soon as this grid's writes are visible. It changes no
    /// result (the dependent's wait still waits for this grid to complete) and costs nothing
    /// without such a dependent; it is meant for a kernel whose grid leaves room beside it (a
    /// dependent's blocks then take no multiprocessor this grid's blocks need).
    pub fn launch_dependents_early(&mut self) {
        self.prog.launches_dependents_early = true;
    }

    /// The block index, as scalars.
    pub fn block_idx(&self) -> BlockIdx {
        BlockIdx {
            x: Scalar(Expr::BlockIdx(0)),
            y: Scalar(Expr::BlockIdx(1)),
            z: Scalar(Expr::BlockIdx(2)),
        }
    }

    fn let_typed(&mut self, value: Scalar, dtype: DType, kind: VarKind, loc: Loc) -> Val {
        if value.0.dtype().is_float() && !dtype.is_float() {
            self.error(
                loc,
                format!(
                    "a {} value into a {dtype} variable: convert it explicitly with \
                     `.cast::<{dtype}>()` (which truncates toward zero)",
                    value.0.dtype()
                ),
            );
        }
        let name = self.fresh_name("v");
        let value = cast_to(value.0, dtype);
        let is_let = kind == VarKind::Let;
        let id = self.new_var(name, dtype, kind);
        if is_let {
            self.let_values.insert(id, value.clone());
        }
        self.push(StmtKind::Let { var: id, value }, loc);
        Val::var(id, dtype)
    }

    /// Declares an immutable `i32` computed once (e.g. a tile offset).
    #[track_caller]
    pub fn let_i32(&mut self, value: impl Into<Scalar>) -> Val {
        self.let_typed(value.into(), DType::I32, VarKind::Let, Loc::caller())
    }

    /// Declares an immutable `u32`.
    #[track_caller]
    pub fn let_u32(&mut self, value: impl Into<Scalar>) -> Val {
        self.let_typed(value.into(), DType::U32, VarKind::Let, Loc::caller())
    }

    /// Declares an immutable `f32` (computed in f32; integers convert to the nearest f32).
    #[track_caller]
    pub fn let_f32(&mut self, value: impl Into<Scalar>) -> Val {
        self.let_typed(value.into(), DType::F32, VarKind::Let, Loc::caller())
    }

    /// Declares a mutable `f32` variable.
    #[track_caller]
    pub fn var_f32(&mut self, init: impl Into<Scalar>) -> Val {
        self.let_typed(init.into(), DType::F32, VarKind::Mutable, Loc::caller())
    }

    /// Declares a mutable `i32` variable; change it with [`Kernel::assign`].
    #[track_caller]
    pub fn var_i32(&mut self, init: impl Into<Scalar>) -> Val {
        self.let_typed(init.into(), DType::I32, VarKind::Mutable, Loc::caller())
    }

    /// Declares a mutable `u32` variable (e.g. an mbarrier phase).
    #[track_caller]
    pub fn var_u32(&mut self, init: impl Into<Scalar>) -> Val {
        self.let_typed(init.into(), DType::U32, VarKind::Mutable, Loc::caller())
    }

    /// Assigns a mutable variable: `k.assign(phase, phase ^ 1)`.
    #[track_caller]
    pub fn assign(&mut self, var: Val, value: impl Into<Scalar>) {
        let loc = Loc::caller();
        let Some(id) = var.var_id() else {
            self.error(
                loc,
                "assign needs a variable declared with var_i32/var_u32, not a constant",
            );
            return;
        };
        let decl = &self.prog.vars[id.0 as usize];
        if decl.kind != VarKind::Mutable {
            let n = decl.name.clone();
            self.error(
                loc,
                format!("`{n}` is not mutable: declare it with var_i32/var_u32 to assign it"),
            );
            return;
        }
        let (value, dtype) = (value.into().0, decl.dtype);
        if value.dtype().is_float() && !dtype.is_float() {
            let msg = format!(
                "a {} value into the {dtype} variable `{}`: convert it explicitly with \
                 `.cast::<{dtype}>()`",
                value.dtype(),
                decl.name
            );
            self.error(loc, msg);
            return;
        }
        let value = cast_to(value, dtype);
        self.push(StmtKind::Assign { var: id, value }, loc);
    }

    /// A loop over `start, start + step, ...` below `end`. The closure builds the body and
    /// receives the induction variable.
    #[track_caller]
    pub fn for_range(
        &mut self,
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        body: impl FnOnce(&mut Kernel, Val),
    ) {
        let bounds = (start.into(), end.into(), step.into());
        self.for_range_at(bounds, None, body, Loc::caller());
    }

    /// [`Kernel::for_range`] whose generated code unrolls `unroll` iterations at a time
    /// (`#pragma unroll unroll`; 1 keeps the loop rolled). A hint to the CUDA compiler: what
    /// the loop computes does not change, and the interpreter runs it as any loop. Unrolling
    /// a ring's loop by its number of stages lets the compiler see each iteration's stage and
    /// phase as constants.
    #[track_caller]
    pub fn for_range_unrolled(
        &mut self,
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        unroll: u32,
        body: impl FnOnce(&mut Kernel, Val),
    ) {
        let loc = Loc::caller();
        if unroll == 0 {
            self.error(
                loc,
                "for_range_unrolled: unroll by at least 1 (1 keeps the loop rolled)",
            );
        }
        let bounds = (start.into(), end.into(), step.into());
        self.for_range_at(bounds, Some(unroll.max(1)), body, loc);
    }

    fn for_range_at(
        &mut self,
        (start, end, step): (Scalar, Scalar, Scalar),
        unroll: Option<u32>,
        body: impl FnOnce(&mut Kernel, Val),
        loc: Loc,
    ) {
        let (start, end, step) = (start.0, end.0, step.0);
        if let Some(s) = step.as_int() {
            if s <= 0 {
                self.error(loc, format!("for_range needs a positive step, got {s}"));
            }
        }
        let name = self.fresh_name("i");
        let var = self.new_var(name, DType::I32, VarKind::LoopIndex);
        self.blocks.push(vec![]);
        body(self, Val::var(var, DType::I32));
        let stmts = self.blocks.pop().unwrap_or_default();
        self.push(
            StmtKind::For {
                var,
                start,
                end,
                step,
                unroll,
                body: stmts,
            },
            loc,
        );
    }

    /// Runs the body in a block of its own, returning its statements.
    pub(crate) fn nested(&mut self, body: impl FnOnce(&mut Kernel)) -> Vec<Stmt> {
        self.blocks.push(vec![]);
        body(self);
        self.blocks.pop().unwrap_or_default()
    }

    /// `if cond { then }`: the body runs when the scalar condition holds (a comparison such
    /// as `i.lt(n)`, or an integer that is true when nonzero). Values declared in the body do
    /// not exist after it. Conditions are scalars, uniform over the threads that share their
    /// variables; `sync()` inside is allowed only when the condition is the same for the
    /// whole block (see the reference).
    #[track_caller]
    pub fn if_(&mut self, cond: impl Into<Scalar>, then: impl FnOnce(&mut Kernel)) {
        let loc = Loc::caller();
        let cond = cond.into().0;
        let then_body = self.nested(then);
        self.push(
            StmtKind::If {
                cond,
                then_body,
                else_body: vec![],
            },
            loc,
        );
    }

    /// `if cond { then } else { otherwise }` (see [`Kernel::if_`]).
    #[track_caller]
    pub fn if_else(
        &mut self,
        cond: impl Into<Scalar>,
        then: impl FnOnce(&mut Kernel),
        otherwise: impl FnOnce(&mut Kernel),
    ) {
        let loc = Loc::caller();
        let cond = cond.into().0;
        let then_body = self.nested(then);
        let else_body = self.nested(otherwise);
        self.push(
            StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            loc,
        );
    }

    /// `while cond { body }`. The condition is an expression over the script's variables,
    /// evaluated before every iteration, so it sees what the body assigns:
    ///
    /// ```
    /// use tilus::prelude::*;
    ///
    /// /// `out[p] = 1` for `p` the least power of two that is at least `n`.
    /// #[derive(Clone, Debug, Hash)]
    /// struct NextPowerOfTwo;
    ///
    /// impl Script for NextPowerOfTwo {
    ///     type Args = (i32, PtrMut<f32>);
    ///     fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
    ///         k.blocks([1]);
    ///         k.warps(1);
    ///         let p = k.var_i32(1);
    ///         k.while_(p.lt(n), |k| k.assign(p, p * 2));
    ///         let one = k.register_tensor::<f32>([1], 1.0);
    ///         let g = k.global_view::<f32>(out, [64]);
    ///         k.store_global(&g, &one, [p]);
    ///     }
    /// }
    ///
    /// let mut out = [0.0f32; 64];
    /// tilus::interpret(&NextPowerOfTwo, (10, &mut out[..])).unwrap();
    /// assert_eq!(out[16], 1.0);
    /// assert_eq!(out.iter().sum::<f32>(), 1.0);
    /// ```
    #[track_caller]
    pub fn while_(&mut self, cond: impl Into<Scalar>, body: impl FnOnce(&mut Kernel)) {
        let loc = Loc::caller();
        let cond = cond.into().0;
        let body = self.nested(body);
        self.push(StmtKind::While { cond, body }, loc);
    }

    pub(crate) fn group(
        &mut self,
        begin: u32,
        count: u32,
        kind: GroupKind,
        loc: Loc,
        body: impl FnOnce(&mut Kernel),
    ) {
        self.groups_of(begin, count, None, kind, loc, body)
    }

    /// A thread group, or with `copies` (their number and index variable) consecutive groups
    /// of `count` threads running the body once each.
    fn groups_of(
        &mut self,
        begin: u32,
        count: u32,
        copies: Option<GroupCopies>,
        kind: GroupKind,
        loc: Loc,
        body: impl FnOnce(&mut Kernel),
    ) {
        let parent = self.group_threads();
        let n = copies.map_or(1, |c| c.copies);
        let end = begin.saturating_add(count.saturating_mul(n));
        if count == 0 {
            self.error(
                loc,
                format!("{}: a thread group needs at least one thread", kind.name()),
            );
        } else if parent > 0 && end > parent {
            self.error(
                loc,
                format!(
                    "{}: threads {begin}..{end} are not inside the enclosing group of {parent} threads",
                    kind.name(),
                ),
            );
        }
        self.blocks.push(vec![]);
        self.groups.push(count);
        let first = self.group_firsts.last().copied().unwrap_or(Some(0));
        // inside copies the first thread differs from group to group: `None`
        let first = first.and_then(|f| copies.is_none().then(|| f.saturating_add(begin)));
        self.group_firsts.push(first);
        body(self);
        self.groups.pop();
        self.group_firsts.pop();
        let stmts = self.blocks.pop().unwrap_or_default();
        self.push(
            StmtKind::ThreadGroup {
                begin,
                count,
                kind,
                copies,
                body: stmts,
            },
            loc,
        );
    }

    /// Runs `body` once on each of `copies` consecutive groups of `count` threads from
    /// `begin` (threads `begin + g · count .. begin + (g + 1) · count` of the enclosing group
    /// are group `g`), each as its own thread group: `body` gets `g` as a runtime value. The
    /// generated code holds `body` once, where a loop of [`Kernel::thread_group`]s would
    /// trace (and NVRTC compile) one copy per group: warp-specialized kernels' consumer warp
    /// groups, which differ only in the rows they own, run one copy of their code.
    ///
    /// Inside, `sync_group()` is refused (each group would need its own named barrier).
    ///
    /// ```
    /// use tilus::prelude::*;
    ///
    /// /// Row `g` of `out` holds `10 g + 1`, written by thread group `g`.
    /// #[derive(Clone, Debug, Hash)]
    /// struct RowOfGroup;
    ///
    /// impl Script for RowOfGroup {
    ///     type Args = (PtrMut<i32>,);
    ///     fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
    ///         k.blocks([1]);
    ///         k.warps(4);
    ///         let g = k.global_view::<i32>(out, [2, 64]);
    ///         k.thread_groups(0, 64, 2, |k, index| {
    ///             let row = k.register_tensor::<i32>([1, 64], 1.0);
    ///             k.assign_tile(&row, row + index * 10);
    ///             k.store_global(&g, &row, [index, Val::constant(0)]);
    ///         });
    ///     }
    /// }
    ///
    /// let mut out = [0i32; 128];
    /// tilus::interpret(&RowOfGroup, (&mut out[..],)).unwrap();
    /// assert_eq!((out[0], out[63], out[64], out[127]), (1, 1, 11, 11));
    /// ```
    #[track_caller]
    pub fn thread_groups(
        &mut self,
        begin: u32,
        count: u32,
        copies: u32,
        body: impl FnOnce(&mut Kernel, Val),
    ) {
        let loc = Loc::caller();
        if copies == 0 {
            self.error(loc, "thread_groups: needs at least one group");
        }
        let name = self.fresh_name("group");
        let index = self.new_var(name, DType::I32, VarKind::GroupIndex);
        let copies = Some(GroupCopies { copies, index });
        let value = Val::var(index, DType::I32);
        self.groups_of(begin, count, copies, GroupKind::Copies, loc, |k| {
            body(k, value)
        })
    }

    /// Runs `body` on threads `begin .. begin + count` of the enclosing group only.
    #[track_caller]
    pub fn thread_group(&mut self, begin: u32, count: u32, body: impl FnOnce(&mut Kernel)) {
        self.group(begin, count, GroupKind::Threads, Loc::caller(), body)
    }

    /// Runs `body` on one thread of the enclosing group (chosen warp-uniformly).
    #[track_caller]
    pub fn single_thread(&mut self, body: impl FnOnce(&mut Kernel)) {
        self.group(0, 1, GroupKind::SingleThread, Loc::caller(), body)
    }

    /// Runs `body` on warp `warp` (32 threads) of the enclosing group.
    #[track_caller]
    pub fn single_warp(&mut self, warp: u32, body: impl FnOnce(&mut Kernel)) {
        self.group(
            warp.saturating_mul(32),
            32,
            GroupKind::SingleWarp,
            Loc::caller(),
            body,
        )
    }

    /// Runs `body` on the warp group (4 consecutive warps) starting at warp `first_warp`,
    /// which must be a multiple of 4.
    #[track_caller]
    pub fn warp_group(&mut self, first_warp: u32, body: impl FnOnce(&mut Kernel)) {
        let loc = Loc::caller();
        if !first_warp.is_multiple_of(4) {
            self.error(
                loc,
                format!("warp_group must start at a warp index divisible by 4, got {first_warp}"),
            );
        }
        self.group(
            first_warp.saturating_mul(32),
            128,
            GroupKind::WarpGroup,
            loc,
            body,
        )
    }

    /// Barrier for every thread of the block (`__syncthreads`).
    #[track_caller]
    pub fn sync(&mut self) {
        self.push(
            StmtKind::Sync {
                scope: SyncScope::Block,
                vote: None,
            },
            Loc::caller(),
        );
    }

    /// [`Kernel::sync`] that also votes: every thread of the block meets here, and each gets
    /// back whether `cond` held in any of them (`__syncthreads_or`). What one thread learned
    /// (inside `single_thread`, say, from an atomic) becomes the whole block's to branch on:
    /// the block that took the last ticket, and only it, goes on to merge the others' work.
    ///
    /// ```
    /// use tilus::prelude::*;
    ///
    /// #[derive(Clone, Debug, Hash)]
    /// struct AnyNegative;
    ///
    /// impl Script for AnyNegative {
    ///     type Args = (Ptr<i32>, PtrMut<i32>);
    ///     fn body(&self, k: &mut Kernel, (x, out): Handles<Self::Args>) {
    ///         k.blocks([1]);
    ///         k.warps(4);
    ///         let x = k.global_view::<i32>(x, [4]);
    ///         let out = k.global_view::<i32>(out, [128]);
    ///         // each warp reads its own element: the flag differs between warps
    ///         let negative = k.var_i32(0);
    ///         k.thread_groups(0, 32, 4, |k, w| {
    ///             let mine = k.load_global_scalar(&x, [w]);
    ///             k.if_(mine.lt(0), |k| k.assign(negative, 1));
    ///         });
    ///         let any = k.sync_any(negative.ne_(0));
    ///         let flag = k.register_tensor::<i32>([128], 0.0);
    ///         k.if_(any, |k| k.assign_tile(&flag, flag + 1));
    ///         k.store_global(&out, &flag, [0]);
    ///     }
    /// }
    ///
    /// let mut x = [5i32; 4];
    /// let mut out = [9i32; 128];
    /// tilus::interpret(&AnyNegative, (&x[..], &mut out[..])).unwrap();
    /// assert!(out.iter().all(|&v| v == 0));
    /// x[2] = -1;
    /// tilus::interpret(&AnyNegative, (&x[..], &mut out[..])).unwrap();
    /// assert!(out.iter().all(|&v| v == 1));
    /// ```
    #[track_caller]
    pub fn sync_any(&mut self, cond: impl Into<Scalar>) -> Val {
        let name = self.fresh_name("any");
        let out = self.new_var(name, DType::Bool, VarKind::Let);
        let cond = cond.into().0;
        if cond.dtype() != DType::Bool {
            self.error(
                Loc::caller(),
                format!(
                    "sync_any: the condition must be a comparison, not {}",
                    cond.dtype()
                ),
            );
        }
        self.push(
            StmtKind::Sync {
                scope: SyncScope::Block,
                vote: Some(crate::ir::Vote { cond, out }),
            },
            Loc::caller(),
        );
        Val::var(out, DType::Bool)
    }

    /// Barrier for the threads of the innermost thread group only (a named barrier,
    /// `bar.sync id, threads`): a warp group's threads meet while the block's other warps go
    /// on (a warp-specialized kernel's consumers before a TMA store of what they wrote). The
    /// group must be whole warps; each distinct group gets its own hardware barrier (15 at
    /// most).
    #[track_caller]
    pub fn sync_group(&mut self) {
        let loc = Loc::caller();
        if self.groups.len() < 2 {
            self.error(
                loc,
                "sync_group() outside thread groups: the whole block synchronizes with sync()",
            );
            return;
        }
        let threads = self.group_threads();
        let Some(first) = self.group_firsts.last().copied().unwrap_or(Some(0)) else {
            self.error(
                loc,
                "sync_group() inside thread_groups: each of the groups would need its own named \
                 barrier; write one thread_group per group to synchronize a group on its own",
            );
            return;
        };
        if !threads.is_multiple_of(32) || !first.is_multiple_of(32) {
            self.error(
                loc,
                format!(
                    "sync_group() needs a group of whole warps (a named barrier counts warps); \
                     this group has {threads} threads starting at thread {first}"
                ),
            );
            return;
        }
        let id = match self
            .group_barriers
            .iter()
            .position(|&g| g == (first, threads))
        {
            Some(i) => i,
            None => {
                self.group_barriers.push((first, threads));
                self.group_barriers.len() - 1
            }
        };
        if id >= 15 {
            self.error(
                loc,
                "sync_group(): more than 15 thread groups synchronize on their own; the \
                 hardware has 15 barriers besides the block's",
            );
            return;
        }
        let group = crate::ir::GroupSync {
            first,
            threads,
            barrier: id as u32 + 1,
        };
        self.push(
            StmtKind::Sync {
                scope: SyncScope::Group(group),
                vote: None,
            },
            loc,
        );
    }
}

fn cast_to(e: Expr, dtype: DType) -> Expr {
    match e {
        Expr::Int(v, _) if dtype.is_float() => Expr::Float((v as f64).to_bits(), dtype),
        Expr::Float(bits, _) if dtype.is_float() => Expr::Float(bits, dtype),
        Expr::Int(v, _) => Expr::Int(crate::ir::wrap_to(v, dtype), dtype),
        e if e.dtype() == dtype => e,
        e => Expr::Cast(dtype, Box::new(e)),
    }
}
