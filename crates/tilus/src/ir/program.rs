//! A whole kernel: parameters, declarations and the statement tree.

use super::{
    BarrierArrayDecl, BarrierArrayId, DType, Expr, GlobalDecl, GlobalId, RegId, RegView,
    RegisterDecl, SharedDecl, SharedId, Stmt, StmtId, TensorMapId, TensorMapSpec, VarDecl, VarId,
};

/// How a script argument reaches the kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A runtime scalar: passed at every launch, never recompiles.
    Scalar(DType),
    /// A compile-time constant: its value is baked into the program.
    Const(DType, i64),
    /// A device pointer to elements of a type; `mutable` if the kernel may write through it.
    Pointer {
        /// Element type.
        dtype: DType,
        /// Whether the kernel may write through it.
        mutable: bool,
    },
}

/// One argument of the script.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Param {
    /// The argument's name.
    pub name: String,
    /// How it is passed.
    pub kind: ParamKind,
    /// The variable that stands for it in the body (not for constants).
    pub var: Option<VarId>,
}

/// A kernel program. Built by `lang`, transformed by `passes`, read by `codegen`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    /// Kernel name (a C identifier).
    pub name: String,
    /// The script's arguments, in order.
    pub params: Vec<Param>,
    /// Scalar variables.
    pub vars: Vec<VarDecl>,
    /// Global views.
    pub globals: Vec<GlobalDecl>,
    /// Shared tiles.
    pub shareds: Vec<SharedDecl>,
    /// Register tiles.
    pub registers: Vec<RegisterDecl>,
    /// mbarrier arrays.
    pub barriers: Vec<BarrierArrayDecl>,
    /// Grid size per axis (x, y, z); expressions over runtime arguments and constants.
    pub grid: Vec<Expr>,
    /// Warps per block.
    pub warps: u32,
    /// The body.
    pub body: Vec<Stmt>,
    /// Dynamic shared memory the block needs, in bytes; set by the planner.
    pub smem_bytes: u32,
    /// Alignment the generated code gives the planned region's base (the largest alignment a
    /// tile needs; dynamic shared memory itself is only guaranteed 16 bytes); set by the planner.
    pub smem_align: u32,
    /// Where the grid was set (`blocks`), for diagnostics.
    pub grid_loc: Option<super::Loc>,
    /// Blocks per multiprocessor the register allocation must allow (`__launch_bounds__`'s
    /// second argument). `None`: the compiler searches for the most that fit without spills.
    pub min_blocks: Option<u32>,
    /// The TMA tensor maps the host encodes at launch; set by lowering (instructions refer to
    /// them by [`TensorMapId`]).
    pub tensor_maps: Vec<TensorMapSpec>,
    /// Statements traced so far (the next [`StmtId`]).
    pub stmt_count: u32,
    /// A persistent grid: the launch runs at most one block per multiprocessor along x
    /// (`persistent_blocks`).
    pub persistent: bool,
    /// Blocks per thread-block cluster along x, y, z (`cluster_blocks`; `[1, 1, 1]`: none).
    pub cluster: [u32; 3],
    /// Whether the script declared clusters (even of one block).
    pub clustered: bool,
    /// The kernel starts by waiting for the grid before it in the stream
    /// (`wait_for_prior_grid`: `griddepcontrol.wait`), so that it may be launched while that
    /// grid is still running (programmatic dependent launch).
    pub waits_for_prior_grid: bool,
    /// Every block starts by letting the grid after it in the stream, when that grid is its
    /// programmatic dependent, be scheduled (`launch_dependents_early`:
    /// `griddepcontrol.launch_dependents`).
    pub launches_dependents_early: bool,
    /// The L2 promotion of the kernel's tensor maps (`tma_l2_promotion`).
    pub l2_promotion: super::L2Promotion,
}

impl Program {
    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.warps * 32
    }

    /// Blocks per cluster.
    pub fn cluster_size(&self) -> u32 {
        self.cluster.iter().product()
    }

    /// A variable's declaration.
    pub fn var(&self, id: VarId) -> &VarDecl {
        &self.vars[id.0 as usize]
    }

    /// A global view's declaration.
    pub fn global(&self, id: GlobalId) -> &GlobalDecl {
        &self.globals[id.0 as usize]
    }

    /// A shared tile's declaration.
    pub fn shared(&self, id: SharedId) -> &SharedDecl {
        &self.shareds[id.0 as usize]
    }

    /// A register tile's declaration.
    pub fn register(&self, id: RegId) -> &RegisterDecl {
        &self.registers[id.0 as usize]
    }

    /// An mbarrier array's declaration.
    pub fn barrier(&self, id: BarrierArrayId) -> &BarrierArrayDecl {
        &self.barriers[id.0 as usize]
    }

    /// A tensor map chosen by lowering.
    pub fn tensor_map(&self, id: TensorMapId) -> &TensorMapSpec {
        &self.tensor_maps[id.0 as usize]
    }

    /// The shape of a register view (a transpose swaps the last two dimensions).
    pub fn view_shape(&self, v: &RegView) -> Vec<i64> {
        let s = &self.register(v.tensor).shape;
        v.perm(s.len()).iter().map(|&d| s[d]).collect()
    }

    /// The shape of a shared view as its instruction sees it (a stage drops the leading
    /// dimension, a transpose swaps the last two).
    pub fn sview_shape(&self, v: &super::SharedView) -> Vec<i64> {
        v.shape(&self.shared(v.tensor).shape)
    }

    /// A shared view as the printer and diagnostics write it (`sa`, `sa[s]`, `sb.T`).
    pub fn sview_name(&self, v: &super::SharedView) -> String {
        super::printer::Names { p: self }.sview(v)
    }

    /// The extents of the elements a shared view covers, as stored (no transpose).
    pub fn sview_stored_shape(&self, v: &super::SharedView) -> Vec<i64> {
        v.stored_shape(&self.shared(v.tensor).shape)
    }

    /// Bytes of the elements a shared view covers (what a TMA copy of it delivers).
    pub fn sview_nbytes(&self, v: &super::SharedView) -> u64 {
        let d = self.shared(v.tensor);
        self.sview_stored_shape(v)
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n.max(0) as u64))
            .and_then(|e| e.checked_mul(d.dtype.nbytes() as u64))
            .unwrap_or(u64::MAX)
    }

    /// The layout of the elements a shared view covers, relative to the view's first byte (a
    /// stage's layout for `at`); `None` before layouts are inferred.
    pub fn sview_layout(&self, v: &super::SharedView) -> Option<crate::layout::SharedLayout> {
        let l = self.shared(v.tensor).layout.as_ref()?;
        let mut l = match v.stage {
            Some(_) => l.stage_layout(),
            None => l.clone(),
        };
        // rows start at the swizzle's alignment (the verifier's rule): the same layout, fewer
        // rows (in column blocks as far apart as the whole tile's rows)
        if let (Some((_, len)), 2) = (v.rows, l.shape.len()) {
            if l.col_block.is_some() {
                l.block_rows = Some(l.block_rows.unwrap_or(l.shape[0]));
            }
            l.shape[0] = len;
        }
        Some(l)
    }

    /// Bytes from the first byte of a shared view's tile or stage to the view's first
    /// element (its first row, for `rows()`); 0 before layouts are inferred.
    pub fn sview_row_offset_bytes(&self, v: &super::SharedView) -> i64 {
        let d = self.shared(v.tensor);
        let Some(l) = d.layout.as_ref() else {
            return 0;
        };
        let l = match v.stage {
            Some(_) => l.stage_layout(),
            None => l.clone(),
        };
        match (v.rows, l.shape.len()) {
            (Some((start, _)), 2) => l.row_offset_bytes(start),
            _ => 0,
        }
    }

    /// A fresh statement identity.
    pub fn next_stmt_id(&mut self) -> StmtId {
        self.stmt_count += 1;
        StmtId(self.stmt_count - 1)
    }

    /// The parameter a variable stands for, if any.
    pub fn param_of(&self, var: VarId) -> Option<(usize, &Param)> {
        self.params
            .iter()
            .enumerate()
            .find(|(_, p)| p.var == Some(var))
    }

    /// Calls `f` on every statement, depth first, in program order.
    pub fn walk<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        fn go<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
            for s in stmts {
                f(s);
                for body in s.kind.bodies() {
                    go(body, f);
                }
            }
        }
        go(&self.body, f)
    }
}
