//! What an instruction does, in terms every pass understands: the memory it reads and writes
//! (and through which proxy, and when the effect is complete), the barriers it arrives on or
//! waits for, the asynchronous groups it commits or waits on, the scalars it reads and the
//! threads it must run on.
//!
//! Each instruction states its facts in its family's file (`Inst::facts`). The scoping rule,
//! liveness, the shared-memory plan, the proxy-fence rule, the hazard checks of the verifier
//! and the interpreter are written once over these facts, so an instruction that states them
//! needs no edit anywhere else to be scoped, planned and checked.

use crate::ir::{BarrierArrayId, BarrierRef, Expr, GlobalId, RegId, SharedId, SharedView, VarId};

/// The memory an effect touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Memory {
    /// A register tile.
    Register(RegId),
    /// A shared tile.
    Shared(SharedId),
    /// A global view.
    Global(GlobalId),
}

/// How an effect touches its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Brings the value into existence: a register tile is defined (and written), a shared tile
    /// allocated, a global view declared.
    Declare,
    /// Reads it.
    Read,
    /// Writes it (every element the instruction covers).
    Write,
    /// Reads and writes it (an accumulator).
    Update,
    /// Ends its life: its bytes may be reused afterwards.
    Release,
}

impl Access {
    /// Whether the effect reads the memory.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::Update)
    }

    /// Whether the effect writes the memory.
    pub fn writes(self) -> bool {
        matches!(self, Access::Declare | Access::Write | Access::Update)
    }
}

/// Which path to memory an effect takes. Shared memory written through the generic proxy
/// (ordinary stores) is invisible to the async proxy (TMA, wgmma) until a proxy fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// Ordinary loads and stores of threads.
    Generic,
    /// The copy engine (TMA) and the tensor cores reading through descriptors (wgmma).
    Async,
}

/// Kinds of asynchronous groups: operations are committed into groups and waited for with
/// `wait_group(n)` (at most `n` groups still running afterwards).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AsyncGroup {
    /// `wgmma.commit_group` / `wgmma.wait_group`: per warp group.
    Wgmma,
    /// `cp.async.bulk.commit_group` / `cp.async.bulk.wait_group`: per thread (TMA stores).
    Bulk,
    /// `cp.async.commit_group` / `cp.async.wait_group`: per thread (copies into shared memory
    /// by threads).
    CpAsync,
}

impl AsyncGroup {
    /// How the namespace's wait is written (for messages).
    pub fn wait_name(self) -> &'static str {
        match self {
            AsyncGroup::Wgmma => "wgmma.wait_group(..)",
            AsyncGroup::Bulk => "tma.wait_group(..)",
            AsyncGroup::CpAsync => "copy_async_wait_group(..)",
        }
    }

    /// How the namespace's commit is written (for messages).
    pub fn commit_name(self) -> &'static str {
        match self {
            AsyncGroup::Wgmma => "wgmma.commit_group()",
            AsyncGroup::Bulk => "tma.commit_group()",
            AsyncGroup::CpAsync => "copy_async_commit_group()",
        }
    }
}

/// When an effect is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Completion<'a> {
    /// When the instruction returns.
    Now,
    /// When a wait on this barrier observes the phase the bytes were delivered in (TMA loads).
    Barrier(&'a BarrierRef),
    /// When a `wait_group` of this kind covers the group the instruction was committed in.
    Group(AsyncGroup),
}

/// The part of a global view an instruction touches: a box at `offsets` with `extent`
/// elements per dimension (outermost first). Index arithmetic in the generated code reaches
/// `offsets[d] + extent[d] - 1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Region<'a> {
    /// Position of the box's first element.
    pub offsets: &'a [Expr],
    /// The box's shape (the tile's, as the instruction sees it).
    pub extent: Vec<i64>,
}

/// One effect of an instruction on memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Effect<'a> {
    /// What it touches.
    pub memory: Memory,
    /// How.
    pub access: Access,
    /// Through which proxy.
    pub proxy: Proxy,
    /// When it is complete.
    pub completes: Completion<'a>,
    /// For global memory: the box touched.
    pub region: Option<Region<'a>>,
    /// For a shared tile seen at one stage (`at`): the index of the stage along its leading
    /// dimension, the only part touched; `None`: the whole tile.
    pub stage: Option<&'a Expr>,
    /// For a two-dimensional register tile: the columns touched, `(start, len)` (a slice's,
    /// a wgmma's window of its accumulator), so that work in flight on some columns does not
    /// conflict with uses of others; `None`: the whole tile.
    pub columns: Option<(i64, i64)>,
    /// The operand's role, for messages (`operand a`, `accumulator`); empty when the
    /// instruction's name says enough.
    pub role: &'static str,
}

impl<'a> Effect<'a> {
    /// An ordinary effect that is complete when the instruction returns.
    pub fn now(memory: Memory, access: Access) -> Effect<'a> {
        Effect {
            memory,
            access,
            proxy: Proxy::Generic,
            completes: Completion::Now,
            region: None,
            stage: None,
            columns: None,
            role: "",
        }
    }

    /// An effect of the async proxy, complete at `completes`.
    pub fn asynchronous(memory: Memory, access: Access, completes: Completion<'a>) -> Effect<'a> {
        Effect {
            memory,
            access,
            proxy: Proxy::Async,
            completes,
            region: None,
            stage: None,
            columns: None,
            role: "",
        }
    }

    /// An ordinary effect on a shared view (its tile, at its stage), complete now.
    pub fn shared(view: &'a SharedView, access: Access) -> Effect<'a> {
        Effect {
            stage: view.stage.as_ref(),
            ..Effect::now(Memory::Shared(view.tensor), access)
        }
    }

    /// An effect of the async proxy on a shared view, complete at `completes`.
    pub fn shared_async(
        view: &'a SharedView,
        access: Access,
        completes: Completion<'a>,
    ) -> Effect<'a> {
        Effect {
            stage: view.stage.as_ref(),
            ..Effect::asynchronous(Memory::Shared(view.tensor), access, completes)
        }
    }

    /// The same effect on the box `region` of a global view.
    pub fn on(mut self, region: Region<'a>) -> Effect<'a> {
        self.region = Some(region);
        self
    }

    /// The same effect on columns `start .. start + len` of a two-dimensional register tile
    /// only (`None`: all of them).
    pub fn on_columns(mut self, columns: Option<(i64, i64)>) -> Effect<'a> {
        self.columns = columns;
        self
    }

    /// The same effect, naming the operand's role for messages.
    pub fn role(mut self, role: &'static str) -> Effect<'a> {
        self.role = role;
        self
    }
}

/// Whether two column ranges of one register tile (`None`: all columns) share a column.
pub fn columns_overlap(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> bool {
    match (a, b) {
        (Some((s, n)), Some((t, m))) => s < t.saturating_add(m) && t < s.saturating_add(n),
        _ => true,
    }
}

/// What an instruction does to an mbarrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierEffect<'a> {
    /// Allocates and initializes an array of barriers.
    Init(BarrierArrayId),
    /// Each executing thread arrives `count` times; with `expect_tx`, it also raises the phase's
    /// expected transaction bytes.
    Arrive {
        /// The barrier.
        bar: &'a BarrierRef,
        /// Arrivals per executing thread.
        count: u32,
        /// Bytes the phase expects from asynchronous copies.
        expect_tx: Option<&'a Expr>,
    },
    /// The async proxy delivers `bytes` on the barrier's transaction count when the copy lands.
    CompleteTx {
        /// The barrier.
        bar: &'a BarrierRef,
        /// Bytes delivered.
        bytes: u64,
    },
    /// Blocks until the phase with parity `phase` has completed.
    Wait {
        /// The barrier.
        bar: &'a BarrierRef,
        /// Parity of the phase.
        phase: &'a Expr,
    },
}

impl<'a> BarrierEffect<'a> {
    /// The barrier acted on (not for `Init`, which acts on a whole array).
    pub fn barrier(&self) -> Option<&'a BarrierRef> {
        match *self {
            BarrierEffect::Init(_) => None,
            BarrierEffect::Arrive { bar, .. }
            | BarrierEffect::CompleteTx { bar, .. }
            | BarrierEffect::Wait { bar, .. } => Some(bar),
        }
    }
}

/// Ordering an instruction imposes between the generic and the async proxy, or on an
/// asynchronous group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ordering {
    /// The executing threads' earlier generic writes to shared memory become visible to the
    /// async proxy.
    ProxyFence,
    /// Orders register accesses before the next asynchronous group operation (`wgmma.fence`).
    RegisterFence(AsyncGroup),
    /// Closes the group of operations issued since the last commit.
    Commit(AsyncGroup),
    /// Waits until at most `pending` committed groups are still running; with `reads_only`, the
    /// wait covers only the operations' reads of their sources (their writes may still be in
    /// flight).
    Wait {
        /// Which kind of group.
        group: AsyncGroup,
        /// Groups that may still be running afterwards.
        pending: u32,
        /// Whether only the reads are waited for.
        reads_only: bool,
    },
}

/// The threads an instruction must run on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ThreadScope {
    /// Any group of threads (each thread does its part).
    #[default]
    Any,
    /// Exactly one thread (`single_thread`): every thread would issue its own operation.
    OneThread,
    /// One thread, or one whole converged warp of which one elected lane (`elect.sync`)
    /// issues the operation, once: a producer warp issues its copies without narrowing to a
    /// thread.
    OneOrWarp,
    /// Whole warps.
    Warps,
    /// A warp group: 4 consecutive warps starting at a warp index divisible by 4.
    WarpGroup,
    /// One or more whole warp groups.
    WarpGroups,
    /// The whole block, outside thread groups.
    Block,
    /// The whole block, once: outside thread groups and loops.
    BlockOnce,
}

/// Everything an instruction states about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Facts<'a> {
    /// Effects on memory, in operand order.
    pub effects: Vec<Effect<'a>>,
    /// Effects on mbarriers.
    pub barriers: Vec<BarrierEffect<'a>>,
    /// Ordering it imposes.
    pub ordering: Option<Ordering>,
    /// Scalar expressions it reads (offsets, byte counts, phases, barrier indices, fill values).
    pub scalars: Vec<&'a Expr>,
    /// Scalar variables it defines (the old value of a scalar atomic): immutable, alive from
    /// the instruction to the end of the enclosing loop or thread group, as a `let`'s.
    pub defines: Vec<VarId>,
    /// The threads it must run on.
    pub scope: ThreadScope,
}

impl<'a> Facts<'a> {
    /// Facts with this scope and nothing else yet.
    pub fn scoped(scope: ThreadScope) -> Facts<'a> {
        Facts {
            scope,
            ..Facts::default()
        }
    }

    /// Adds an effect; the index of its stage, if any, is a scalar the instruction reads.
    pub fn effect(mut self, e: Effect<'a>) -> Facts<'a> {
        if let Some(stage) = e.stage {
            self.scalars.push(stage);
        }
        self.effects.push(e);
        self
    }

    /// Adds a barrier effect; the barrier's index is a scalar the instruction reads.
    pub fn barrier(mut self, b: BarrierEffect<'a>) -> Facts<'a> {
        if let Some(r) = b.barrier() {
            self.scalars.push(&r.index);
        }
        self.barriers.push(b);
        self
    }

    /// Adds scalars the instruction reads.
    pub fn reads(mut self, scalars: impl IntoIterator<Item = &'a Expr>) -> Facts<'a> {
        self.scalars.extend(scalars);
        self
    }

    /// Adds a scalar variable the instruction defines.
    pub fn defines(mut self, v: VarId) -> Facts<'a> {
        self.defines.push(v);
        self
    }

    /// Sets the ordering.
    pub fn orders(mut self, o: Ordering) -> Facts<'a> {
        self.ordering = Some(o);
        self
    }

    /// The register tiles the instruction touches, in operand order, each once.
    pub fn registers(&self) -> Vec<RegId> {
        let mut out = vec![];
        for e in &self.effects {
            if let Memory::Register(r) = e.memory {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
        out
    }

    /// The shared tiles the instruction touches through the async proxy.
    pub fn async_shared(&self) -> impl Iterator<Item = SharedId> + '_ {
        self.effects.iter().filter_map(|e| match e.memory {
            Memory::Shared(s) if e.proxy == Proxy::Async => Some(s),
            _ => None,
        })
    }
}
