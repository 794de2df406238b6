//! What the family rules see of each pass: the verifier's [`Checker`] and [`Scope`], layout
//! inference's [`LayoutCx`], lowering's [`LowerCx`]. The drivers (`verify`, `infer_layout`,
//! `lower`) own the walk; the rules in `rules/` only read and fill these.

use crate::ir::{
    Expr, GlobalId, Loc, Program, RegId, RegView, SharedId, SharedView, TensorMapId, TensorMapSpec,
    VarId,
};
use crate::layout::{RegisterLayout, Swizzle};
use crate::Diagnostic;
use std::collections::HashMap;

/// Where an instruction runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scope {
    /// Threads of the innermost group.
    pub threads: u32,
    /// Whether the innermost group is the whole block.
    pub is_block: bool,
    /// Nesting depth of loops.
    pub loop_depth: usize,
    /// Identity of the innermost loop (0: none), so sibling loops are told apart.
    pub loop_id: usize,
    /// `single_thread` or a `thread_group` of one thread.
    pub single_thread: bool,
    /// The group's first thread in the block.
    pub base: u32,
    /// Identity of the innermost branch of an `if` (0: none; the two branches of one `if`
    /// differ), so that a tile is freed on the path that allocated it.
    pub branch_id: usize,
    /// The innermost `if` around the statement, if any.
    pub branch_loc: Option<Loc>,
    /// The innermost `if` or `while` whose condition may differ between the threads of the
    /// block: where, which construct (`if` or `while`), and a variable of the condition that
    /// makes it so.
    pub divergent: Option<(Loc, &'static str, VarId)>,
}

/// What the verifier's walk knows so far.
pub(crate) struct Checker<'p> {
    pub p: &'p Program,
    pub diags: Vec<Diagnostic>,
    /// Shared tiles allocated and not yet freed, with the loop and the branch of their
    /// allocation.
    pub live_shared: HashMap<SharedId, (usize, usize)>,
    /// Loops seen so far (for loop identities).
    pub loops: usize,
    /// Branches of `if`s seen so far (for branch identities).
    pub branches: usize,
    /// Shared tiles freed, with where.
    pub freed_shared: HashMap<SharedId, Loc>,
    /// Every `set_max_registers`, for the block's register budget.
    pub register_requests: Vec<RegisterRequest>,
}

/// A `set_max_registers` as the verifier's walk found it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RegisterRequest {
    /// The first thread of its warp groups in the block.
    pub first_thread: u32,
    /// How many threads run it.
    pub threads: u32,
    /// Registers per thread it asks for.
    pub registers: u32,
    /// Where it was written.
    pub loc: Loc,
}

impl<'p> Checker<'p> {
    pub fn new(p: &'p Program) -> Checker<'p> {
        Checker {
            p,
            diags: vec![],
            live_shared: HashMap::new(),
            loops: 0,
            branches: 0,
            freed_shared: HashMap::new(),
            register_requests: vec![],
        }
    }

    /// Reports a diagnostic at `loc`.
    pub fn err(&mut self, loc: Loc, message: impl Into<String>) {
        self.diags.push(Diagnostic {
            loc,
            message: message.into(),
        });
    }

    /// Reports a diagnostic once (rules that walk loops twice would see it twice).
    pub fn err_once(&mut self, loc: Loc, message: impl Into<String>) {
        let d = Diagnostic {
            loc,
            message: message.into(),
        };
        if !self.diags.contains(&d) {
            self.diags.push(d);
        }
    }

    /// The shape of a register view.
    pub fn view_shape(&self, v: &RegView) -> Vec<i64> {
        self.p.view_shape(v)
    }

    /// Reports a transposed view of a tile with fewer than two dimensions.
    pub fn check_view(&mut self, v: &RegView, what: &str, loc: Loc) {
        let d = self.p.register(v.tensor);
        if v.transposed && d.shape.len() < 2 {
            let msg = format!(
                "{what}: `{}` has {} dimension(s); transpose() needs at least 2",
                d.name,
                d.shape.len()
            );
            self.err(loc, msg);
        }
    }
}

/// Where rows of a shared tile may start, in bytes from its first: the alignment of the
/// widest swizzle (128-byte rows repeat their pattern every 1024 bytes), so that the rows are
/// laid out as a tile of their own.
pub const ROWS_ALIGN: i64 = 1024;

impl Checker<'_> {
    /// Reports a shared view that names no elements: a stage of a tile without a further
    /// dimension, a boolean stage index (a float one is the scalar rule's, in
    /// `verify/scalars.rs`), a constant outside the stages, a transpose of fewer than two
    /// dimensions.
    pub fn check_sview(&mut self, v: &SharedView, what: &str, loc: Loc) {
        let d = self.p.shared(v.tensor);
        if let Some(stage) = &v.stage {
            if d.shape.len() < 2 {
                let msg = format!(
                    "{what}: `{}` has {} dimension(s); at() takes one stage of the leading \
                     dimension and needs at least one more",
                    d.name,
                    d.shape.len()
                );
                self.err(loc, msg);
                return;
            }
            // a float index is the scalar rule's (`verify/scalars.rs`), as for every index
            if !stage.dtype().is_int() && !stage.dtype().is_float() {
                let msg = format!(
                    "{what}: the stage index of `{}` is {}, not an integer",
                    d.name,
                    stage.dtype()
                );
                self.err(loc, msg);
            }
            if let Some(i) = stage.as_int() {
                if i < 0 || i >= d.shape[0] {
                    let msg = format!(
                        "{what}: stage {i} of `{}`, which has {} stages (its leading dimension)",
                        d.name, d.shape[0]
                    );
                    self.err(loc, msg);
                }
            }
        }
        if let Some((start, len)) = v.rows {
            let tile = match v.stage {
                Some(_) => d.shape.get(1..).unwrap_or_default(),
                None => &d.shape[..],
            };
            let bytes_per_row = tile.get(1).copied().unwrap_or(0) * d.dtype.nbytes() as i64;
            // where the rows start: by the layout once known (a row of a tile in column
            // blocks starts within the first block)
            let start_bytes = match &d.layout {
                Some(_) => self.p.sview_row_offset_bytes(v),
                None => start * bytes_per_row,
            };
            let msg = if tile.len() != 2 {
                Some(format!(
                    "{what}: rows() takes rows of a two-dimensional tile or stage; `{}` has {} dimension(s) there",
                    d.name,
                    tile.len()
                ))
            } else if start < 0 || len < 1 || start + len > tile[0] {
                Some(format!(
                    "{what}: rows {start} .. {} of `{}`, which has {} rows",
                    start + len,
                    d.name,
                    tile[0]
                ))
            } else if start_bytes % ROWS_ALIGN != 0 {
                Some(format!(
                    "{what}: rows of `{}` from row {start} start {} bytes into the tile, not a multiple of {ROWS_ALIGN} (a swizzle's pattern repeats every {ROWS_ALIGN} bytes: the rows must start where it does)",
                    d.name,
                    start_bytes
                ))
            } else {
                None
            };
            if let Some(msg) = msg {
                self.err(loc, msg);
                return;
            }
        }
        if v.transposed && self.p.sview_stored_shape(v).len() < 2 {
            let msg = format!(
                "{what}: `{}` has fewer than 2 dimensions; transpose() needs at least 2",
                self.p.sview_name(v)
            );
            self.err(loc, msg);
        }
    }

    /// Once layouts are known, for a view the async proxy reads or writes: a stage must start
    /// at the alignment of its swizzle (the hardware swizzles by address bits), and a whole
    /// tile whose stages are padded is not one box or one matrix.
    pub fn check_async_sview(&mut self, v: &SharedView, what: &str, loc: Loc) {
        let d = self.p.shared(v.tensor);
        let Some(l) = &d.layout else { return };
        match &v.stage {
            Some(_) => {
                let align = l.swizzle.alignment();
                if l.stage_bytes() % align != 0 {
                    let msg = format!(
                        "{what}: the stages of `{}` are {} bytes apart, not a multiple of the {align} \
                         bytes its {} swizzle needs (the layout was pinned)",
                        d.name,
                        l.stage_bytes(),
                        l.swizzle.name()
                    );
                    self.err(loc, msg);
                }
            }
            None if l.stage_stride.is_some() => {
                let msg = format!(
                    "{what}: `{}` pads its stages to {} bytes (each aligned for its swizzle), so \
                     the whole tile is not contiguous; use one stage at a time (`at`)",
                    d.name,
                    l.stage_bytes()
                );
                self.err(loc, msg);
            }
            None => {}
        }
    }
}

/// What layout inference knows so far: the layout each register tile must have, who asked
/// for it and why.
pub(crate) struct LayoutCx<'p> {
    /// The program (its body is being walked separately).
    pub p: &'p Program,
    pub layouts: Vec<Option<(RegisterLayout, Loc, &'static str)>>,
    pub diags: Vec<Diagnostic>,
    /// Whether the last round changed a layout.
    pub changed: bool,
    /// Whether a preferred layout was granted in this round of preferences.
    pub preferred: bool,
    /// The tile whose preferences this round grants (the first tile, in declaration order,
    /// that is still open); `None` grants the first wish for any tile.
    pub prefer_target: Option<RegId>,
    /// The layouts tensor-core instructions want of their register operands, as seen through
    /// the operands' views, by the threads of the instruction's group: granted once every
    /// instruction has fixed its results' layouts ([`LayoutCx::settle_operands`]).
    pub operand_wishes: Vec<OperandWish>,
    /// Per register tile, whether it may get a masked layout (`infer_layout::fitted_layout`).
    pub maskable: Vec<bool>,
}

/// A register operand's wanted layout (see [`LayoutCx::operand_wishes`]).
pub(crate) struct OperandWish {
    pub view: RegView,
    /// As seen through `view`.
    pub layout: RegisterLayout,
    /// Threads of the instruction's group.
    pub group: u32,
    pub loc: Loc,
    pub why: &'static str,
}

impl LayoutCx<'_> {
    /// Requires register tile `t` to have layout `l`, for `why` at `loc`; a conflict with an
    /// earlier requirement is a diagnostic naming both.
    pub fn require(&mut self, t: RegId, l: RegisterLayout, loc: Loc, why: &'static str) {
        let decl = self.p.register(t);
        let slot = &mut self.layouts[t.0 as usize];
        match slot {
            None => {
                *slot = Some((l, loc, why));
                self.changed = true;
            }
            Some((have, at, what)) => {
                if crate::passes::exceeds_registers(have, decl.dtype) {
                    return;
                }
                if !have.same_mapping(&l) {
                    let msg = format!(
                        "register tensor `{}` needs layout {l} for {why} here, but {what} at {at} gave it {have}; \
                         convert it first (`let t2 = k.convert_layout(&{});` and use `t2` here: free where \
                         each thread holds its elements already, through shared memory otherwise)",
                        decl.name, decl.name
                    );
                    self.error(loc, msg);
                }
            }
        }
    }

    /// Asks for operand `view` (of an instruction run by `group` threads) to be laid out as
    /// `layout` (as seen through the view); settled by [`LayoutCx::settle_operands`].
    pub fn wish_operand(
        &mut self,
        view: RegView,
        layout: RegisterLayout,
        group: u32,
        loc: Loc,
        why: &'static str,
    ) {
        self.operand_wishes.push(OperandWish {
            view,
            layout,
            group,
            loc,
            why,
        });
    }

    /// Grants the operand wishes: an operand nothing else laid out gets the layout its
    /// instruction wants; one that another instruction laid out otherwise keeps that layout
    /// and is converted just before its use (`passes/convert_operands.rs`) where a
    /// conversion can be made there, and is a diagnostic naming both otherwise.
    pub fn settle_operands(&mut self) {
        for w in std::mem::take(&mut self.operand_wishes) {
            let need = w.view.layout_of(&w.layout);
            let decl = self.p.register(w.view.tensor);
            if let Some((have, _, _)) = &self.layouts[w.view.tensor.0 as usize] {
                let seen = w.view.layout_of(have);
                if !crate::passes::exceeds_registers(have, decl.dtype)
                    && !have.same_mapping(&need)
                    && crate::passes::convertible(&w.layout, &seen, w.group, self.p.threads())
                {
                    continue;
                }
            }
            self.require(w.view.tensor, need, w.loc, w.why);
        }
    }

    /// Grants `t` layout `l` if nothing gave it one and no other wish was granted in this
    /// round (see `Rules::prefer_layouts`).
    pub fn prefer(&mut self, t: RegId, l: RegisterLayout, loc: Loc, why: &'static str) {
        if self.preferred
            || self.layouts[t.0 as usize].is_some()
            || self.prefer_target.is_some_and(|target| target != t)
        {
            return;
        }
        self.preferred = true;
        self.require(t, l, loc, why);
    }

    /// The layout required of `t` so far.
    pub fn get(&self, t: RegId) -> Option<RegisterLayout> {
        self.layouts[t.0 as usize]
            .as_ref()
            .map(|(l, _, _)| l.clone())
    }

    /// Reports a diagnostic once.
    pub fn error(&mut self, loc: Loc, message: String) {
        let d = Diagnostic { loc, message };
        if !self.diags.contains(&d) {
            self.diags.push(d);
        }
    }
}

/// What lowering has decided so far: the tensor maps and the alignment each global view needs.
pub(crate) struct LowerCx<'p> {
    /// The program (its body is being walked separately).
    pub p: &'p Program,
    /// Tensor maps, in program order.
    pub tensor_maps: Vec<TensorMapSpec>,
    /// (view, bytes, why): alignments instructions need of a view's base address.
    pub alignments: Vec<(GlobalId, u32, String)>,
    /// For every variable, the largest power of two known to divide it.
    pub divisibility: Vec<i64>,
}

impl LowerCx<'_> {
    /// The tensor map for copies between view `view` and tiles like `tile` (a tile or one
    /// stage of one: the box is the elements it covers; one map per distinct view, box shape
    /// and swizzle; named after the view).
    pub fn tensor_map(&mut self, view: GlobalId, tile: &SharedView) -> TensorMapId {
        let p = self.p;
        let g = p.global(view);
        let layout = p.sview_layout(tile);
        let swizzle = layout.as_ref().map_or(Swizzle::None, |l| l.swizzle);
        // the box: leading dimensions of the view the tile leaves out are one element deep;
        // a tile in column blocks is copied one block at a time
        let stored = p.sview_stored_shape(tile);
        let mut box_shape: Vec<u32> = vec![1; g.shape.len().saturating_sub(stored.len())];
        box_shape.extend(stored.iter().map(|&d| d as u32));
        if let (Some(cb), Some(last)) = (layout.and_then(|l| l.col_block), box_shape.last_mut()) {
            *last = cb as u32;
        }
        let ptr_arg = p.param_of(g.ptr).map(|(i, _)| i).unwrap_or(0);
        if let Some(i) = self
            .tensor_maps
            .iter()
            .position(|m| m.view == view && m.box_shape == box_shape && m.swizzle == swizzle)
        {
            return TensorMapId(i as u32);
        }
        let same_view = self.tensor_maps.iter().filter(|m| m.view == view).count();
        let name = if same_view == 0 {
            format!("{}_tmap", g.name)
        } else {
            format!("{}_tmap{same_view}", g.name)
        };
        self.tensor_maps.push(TensorMapSpec {
            name,
            view,
            ptr_arg,
            dtype: g.dtype,
            global_shape: g.shape.clone(),
            global_strides: g.strides.clone(),
            box_shape,
            swizzle,
            stores: false,
            l2_promotion: p.l2_promotion,
        });
        TensorMapId(self.tensor_maps.len() as u32 - 1)
    }

    /// Records that `view`'s base address must be aligned to `bytes`, and why.
    pub fn require_alignment(&mut self, view: GlobalId, bytes: u32, why: String) {
        self.alignments.push((view, bytes, why));
    }

    /// The largest power of two known to divide `e`.
    pub fn divisibility(&self, e: &Expr) -> i64 {
        e.divisibility(&|v: VarId| self.divisibility[v.0 as usize])
    }
}
