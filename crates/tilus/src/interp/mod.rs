//! The CPU interpreter: runs a *planned* program (the output of
//! [`crate::passes::compile_program`]) on the host, the way the generated CUDA runs on the
//! chip, so that kernels are tested without a GPU and asynchronous bugs become diagnostics that
//! name the user's file:line.
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Fill { block: i32 }
//!
//! impl Script for Fill {
//!     type Args = (i32, PtrMut<f32>);
//!     fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
//!         k.blocks([cdiv(n, self.block)]);
//!         k.warps(1);
//!         let offset = k.let_i32(self.block * k.block_idx().x);
//!         let ones = k.register_tensor::<f32>([self.block], Some(1.0));
//!         let g = k.global_view::<f32>(out, [n]);
//!         k.store_global(&g, &ones, [offset]);
//!     }
//! }
//!
//! let mut out = vec![0.0f32; 100];
//! tilus::interpret(&Fill { block: 32 }, (100, &mut out[..])).unwrap();
//! assert!(out.iter().all(|&x| x == 1.0));
//! ```
//!
//! # What it models
//!
//! - **Blocks** run independently (in parallel with rayon by default); their global writes are
//!   applied in block order when a batch of blocks is done.
//! - **Global memory**: a block reads the buffers as they were when its batch started, plus its
//!   own earlier writes and atomics in program order (a load after a store of the same
//!   element sees the store). Atomics combine with what the buffer holds when the block's
//!   writes are applied, so sums, minima and maxima across blocks are exact whatever the order.
//!   Within a block, atomics on one element apply in program order (within one instruction,
//!   in thread order), each element once, by the thread holding its first copy. A program
//!   whose atomics return old values (exchange, compare-and-swap, the scalar forms) runs its
//!   blocks one at a time in block order, so the old values are those of that sequential run
//!   (on the GPU, blocks may take them in any order).
//! - **Threads**: the threads of a block run as cooperatively scheduled *tasks*. Code that a
//!   group of threads runs together runs tile by tile for all of them: a register tile holds a
//!   value per (thread, local index), placed by its layout's thread and local terms (replicated
//!   threads hold copies). A `ThreadGroup` that covers part of a task splits it (warp
//!   specialization); tasks switch at blocking points (`mbarrier.wait`, `sync`) and merge when
//!   they meet again. A task's threads share their scalar variables, so the condition of an
//!   `if` or a `while` has one value per task: the task runs one branch, or one more
//!   iteration, as a whole. A task whose arrival completes a barrier phase lets the tasks it
//!   wakes run before it goes on, so that a stage freed too early is refilled while what
//!   still reads it is in flight.
//! - **Shared memory** is one byte array of `program.smem_bytes` bytes: tiles live at their
//!   planned offsets through [`crate::layout::SharedLayout`]'s swizzle, barriers keep their state
//!   in their 8 planned bytes. Nothing written reads as NaN.
//! - **TMA copies** are asynchronous: issuing records the copy; it lands (bytes, zeros outside
//!   the view, `complete_tx` on the barrier) only when no task can make progress otherwise.
//! - **mbarriers** count arrivals and transaction bytes per phase; `wait(bar, parity)` returns
//!   once the phase with that parity has completed.
//! - **`dot`** runs mma.sync m16n8k16 per warp from the lanes' registers, accumulating in f32;
//!   **`wgmma.mma`** is asynchronous per warp group: the product runs when a `wait_group`
//!   completes its committed group, reading shared operands through the tiles' layouts;
//!   **`cast`** rounds to nearest even; **`load_global`** and **`store_global`** access the
//!   elements the generated code's vectors and masks access, through the view's strides
//!   (elements outside the view read the fill value, or are skipped).
//!
//! # What it reports
//!
//! [`crate::Error::Interp`] with a [`Fault`] and diagnostics at the user's file:line: deadlocks
//! (who waits for which barrier and phase), transaction counts that can never be met or are
//! exceeded, reads of a TMA destination before the wait that covers the copy, wgmma
//! accumulators used and wgmma operands overwritten before their wait (by the threads that
//! issued the product, or by a producer whose consumers freed the stage too early: the notes
//! name the product and the consumers' arrivals since they issued it), live shared
//! buffers that overlap, out-of-bounds global accesses, warps that reach a warp-collective
//! instruction divided, `while` loops that never end, cross-block handshakes without their
//! release or acquire `fence_gpu` (a block that reads what another block stored before a
//! signal it saw: `publication.rs`), and races between warps on shared memory (an access of
//! bytes another warp wrote, or read, with no barrier ordering the two: `races.rs`).

mod args;
mod arithmetic;
mod barrier;
mod control;
mod cp_async;
mod debug;
mod hazards;
#[cfg(test)]
mod layers;
mod mbarrier;
mod memory;
mod mma;
mod printf;
mod publication;
mod races;
mod region;
mod sched;
mod shape;
mod state;
mod task;
mod tma;
mod views;
mod wgmma;

pub use crate::error::Fault;
/// Runs a script on the interpreter with its typed arguments (host slices for pointers):
/// [`crate::interpret`] under the name this module's readers look for.
pub use crate::jit::interpret as run;
/// [`run`] with [`Options`]: [`crate::interpret_with`].
pub use crate::jit::interpret_with as run_with;
pub use args::{HostBuffer, HostBufferMut, InterpValue, Pod};

use crate::ir::{KernelParam, LaunchPlan, ParamKind, Program};
use crate::{Error, Result};
use rayon::prelude::*;
use state::{Block, GlobalBuf, Prepared};

/// How to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Run blocks on rayon's thread pool (results do not depend on it: global writes are
    /// applied in block order).
    pub parallel: bool,
    /// Blocks per batch: a batch's writes become visible to later batches (a kernel must not
    /// read what other blocks write, as on the GPU).
    pub batch: usize,
    /// Iterations one `while` loop may run (each time it is entered) before the interpreter
    /// stops it with [`Fault::RunawayLoop`], so that a loop whose condition never becomes false
    /// ends a test instead of hanging it. 2^31 by default.
    pub max_loop_iterations: u64,
    /// Where the text of `printf` and `print_tensor` goes.
    pub output: Output,
    /// The multiprocessors of the modelled device: the most blocks a persistent grid runs
    /// (4 by default, so that a small problem gives each block several items).
    pub multiprocessors: u32,
    /// Runs the program as if its `fence_gpu` statement number `n` (counting from 0, in
    /// program order) were not there: a kernel's tests show that each of its fences is needed
    /// (the run then reports [`Fault::MissingReleaseFence`] or
    /// [`Fault::MissingAcquireFence`]). A number beyond the program's fences is an
    /// [`Error::Argument`] that says how many there are.
    pub without_fence: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            parallel: true,
            batch: 256,
            max_loop_iterations: state::MAX_LOOP_ITERATIONS,
            output: Output::Stdout,
            multiprocessors: 4,
            without_fence: None,
        }
    }
}

/// Where the interpreter puts what a kernel prints (`printf`, `print_tensor`). Each block's
/// text comes out whole, block after block in block order (x fastest), whether or not blocks
/// run in parallel; the text of a block that faults comes out before the error is returned.
/// The GPU prints the same text for each block, but in the order its blocks happen to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// The process's standard output, as device `printf` on the GPU.
    #[default]
    Stdout,
    /// [`Report::printed`], for tests to compare.
    Capture,
    /// Nowhere.
    Discard,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Blocks run.
    pub blocks: u64,
    /// Statements executed, summed over tasks and blocks.
    pub statements: u64,
    /// TMA copies issued.
    pub tma_copies: u64,
    /// Tensor-core instructions executed: mma.sync m16n8k16 per warp, wgmma m64nNk16 per warp
    /// group.
    pub mma_instructions: u64,
    /// The most tasks a block had at once (1 when no thread group split a block).
    pub max_tasks: usize,
    /// What the kernel printed, with [`Output::Capture`] (empty otherwise).
    pub printed: String,
}

/// Which backend runs a launch: the GPU or this interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Compile with NVRTC and launch on the GPU.
    Gpu,
    /// Run on the CPU with the interpreter.
    Interp,
}

impl Backend {
    /// The backend `TILUS_BACKEND` asks for: `interp` (or `interpreter`, `cpu`) or `gpu`
    /// (or `cuda`, or unset). Tools that can run either way use it so that CI without a GPU
    /// can select the interpreter.
    pub fn from_env() -> Result<Backend> {
        match std::env::var("TILUS_BACKEND") {
            Err(_) => Ok(Backend::Gpu),
            Ok(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "gpu" | "cuda" => Ok(Backend::Gpu),
                "interp" | "interpreter" | "cpu" => Ok(Backend::Interp),
                other => Err(Error::Argument {
                    arg: "TILUS_BACKEND".into(),
                    message: format!("`{other}` is not a backend; use `gpu` or `interp`"),
                }),
            },
        }
    }
}

fn arg_error(p: &Program, i: usize, message: String) -> Error {
    Error::Argument {
        arg: p
            .params
            .get(i)
            .map_or_else(|| format!("arg{i}"), |x| x.name.clone()),
        message,
    }
}

/// Checks the arguments' kinds and element types as a GPU launch would and returns the
/// integer value of each (0 for buffers).
fn check_args(p: &Program, args: &[InterpValue<'_>]) -> Result<Vec<i64>> {
    if args.len() != p.params.len() {
        return Err(Error::Argument {
            arg: "<arguments>".into(),
            message: format!(
                "`{}` takes {} arguments, {} were given",
                p.name,
                p.params.len(),
                args.len()
            ),
        });
    }
    let mut ints = vec![0i64; args.len()];
    for (i, (prm, v)) in p.params.iter().zip(args).enumerate() {
        match (&prm.kind, v) {
            (ParamKind::Scalar(t), InterpValue::Int(x)) if !t.is_float() => ints[i] = *x,
            // float scalars live in the environment as the bits of their f64 value, rounded
            // to their type as the kernel's parameter is
            (ParamKind::Scalar(t), InterpValue::Float(x)) if t.is_float() => {
                ints[i] = crate::interp::state::round_float(*x, *t).to_bits() as i64
            }
            (ParamKind::Const(_, c), InterpValue::Int(x)) => {
                if c != x {
                    return Err(arg_error(
                        p,
                        i,
                        format!("the program was specialized for {c}, but {x} was passed"),
                    ));
                }
                ints[i] = *x;
            }
            (ParamKind::Pointer { dtype, mutable }, v) => {
                let (have, is_mut) = match v {
                    InterpValue::Buffer(b) => (b.dtype(), false),
                    InterpValue::BufferMut(b) => (b.dtype(), true),
                    InterpValue::Int(_) | InterpValue::Float(_) => {
                        return Err(arg_error(p, i, "expected a host buffer".into()))
                    }
                };
                if have != *dtype {
                    return Err(arg_error(
                        p,
                        i,
                        format!("expected a buffer of {dtype}, got one of {have}"),
                    ));
                }
                if *mutable && !is_mut {
                    return Err(arg_error(
                        p,
                        i,
                        "the kernel may write this buffer: pass a mutable slice".into(),
                    ));
                }
            }
            (ParamKind::Scalar(t), _) if t.is_float() => {
                return Err(arg_error(p, i, format!("expected a {t} scalar")))
            }
            (_, _) => return Err(arg_error(p, i, "expected an integer".into())),
        }
    }
    Ok(ints)
}

/// The alignment the host allocator gives every buffer (glibc's malloc, and Rust's system
/// allocator through it): the interpreter checks alignments up to this one on host addresses.
const HOST_ALIGNMENT: u32 = 16;

/// Checks the buffers against the launch plan's rules (sizes, TMA view extents and strides),
/// as the GPU runtime does before a launch.
fn check_rules(
    p: &Program,
    plan: &LaunchPlan,
    args: &[InterpValue<'_>],
    ints: &[i64],
) -> Result<()> {
    let int = |i: usize| ints.get(i).copied();
    let eval = |e: &crate::ir::Expr, i: usize| {
        plan.eval_with(e, &int)
            .ok_or_else(|| arg_error(p, i, format!("cannot evaluate {e} on the host")))
    };
    for rule in &plan.pointer_rules {
        let (len, addr) = match &args[rule.arg] {
            InterpValue::Buffer(b) => (b.len(), b.bytes().as_ptr() as u64),
            InterpValue::BufferMut(b) => (b.len(), b.bytes().as_ptr() as u64),
            InterpValue::Int(_) | InterpValue::Float(_) => (0, 0),
        };
        // The host address stands for the device address: the allocator puts a buffer's first
        // element on a 16-byte boundary, as a device allocation would (at 256), and a
        // sub-slice is offset as the same device sub-slice would be; so a view that is not
        // aligned as the code assumes is refused as a launch refuses it, with its message.
        // (An empty buffer's address means nothing.)
        if len > 0 && rule.align <= HOST_ALIGNMENT && addr % u64::from(rule.align) != 0 {
            return Err(arg_error(
                p,
                rule.arg,
                format!(
                    "address 0x{addr:x} is not {}-byte aligned ({})",
                    rule.align, rule.why
                ),
            ));
        }
        for (stride, what) in &rule.nonnegative {
            let v = eval(stride, rule.arg)?;
            if v < 0 {
                return Err(arg_error(
                    p,
                    rule.arg,
                    format!("{what} is {v}; strides must not be negative"),
                ));
            }
        }
        let need = eval(&rule.min_elems, rule.arg)?;
        if rule.elem_bytes > 0 && (len as i64) < need {
            return Err(arg_error(
                p,
                rule.arg,
                format!("the buffer holds {len} elements, the kernel reads {need}"),
            ));
        }
    }
    for kp in &plan.params {
        if let KernelParam::FastDivisor { divisor, .. } = kp {
            let arg = plan.args_of(divisor).next().unwrap_or(0);
            let d = eval(divisor, arg)?;
            crate::ir::fast_divisor_bits(d)
                .map_err(|m| arg_error(p, arg, format!("the divisor {divisor} {m}")))?;
        }
        let KernelParam::TensorMap(spec) = kp else {
            continue;
        };
        let dims: Vec<i64> = spec
            .global_shape
            .iter()
            .map(|e| eval(e, spec.ptr_arg))
            .collect::<Result<_>>()?;
        let strides: Vec<i64> = spec
            .global_strides
            .iter()
            .map(|e| eval(e, spec.ptr_arg))
            .collect::<Result<_>>()?;
        spec.check_view(&dims, &strides)
            .map_err(|m| arg_error(p, spec.ptr_arg, m))?;
    }
    Ok(())
}

/// Interprets a planned program with untyped arguments, one per script argument (constants
/// included). Checks the arguments as a GPU launch would, runs every block, then writes the
/// outputs into the mutable buffers.
pub fn run_program(
    program: &Program,
    plan: &LaunchPlan,
    args: &mut [InterpValue<'_>],
    opts: &Options,
) -> Result<Report> {
    let p = program;
    let ints = check_args(p, args)?;
    let name = |i: usize| {
        p.params
            .get(i)
            .map_or_else(|| format!("arg{i}"), |x| x.name.clone())
    };
    plan.check_index_guards(&|i| ints.get(i).copied(), &name)
        .map_err(|(arg, message)| Error::Argument { arg, message })?;
    let mut grid = [1i64; 3];
    for (i, g) in plan.grid.iter().enumerate() {
        let v = plan
            .eval_with(g, &|a| ints.get(a).copied())
            .ok_or_else(|| Error::Argument {
                arg: "blocks".into(),
                message: format!("cannot evaluate {g} on the host"),
            })?;
        if v == 0 {
            // an empty problem (e.g. m = 0): nothing to run, as on the GPU
            return Ok(Report::default());
        }
        if v < 0 || v > if i == 0 { (1 << 31) - 1 } else { 65535 } {
            return Err(Error::Argument {
                arg: "blocks".into(),
                message: format!("grid dimension {i} would be {v}"),
            });
        }
        grid[i] = v;
    }
    let grid32 = grid.map(|g| g as u32);
    let launched = plan
        .launched_grid(grid32, opts.multiprocessors)
        .map_err(|message| Error::Argument {
            arg: "blocks".into(),
            message,
        })?;
    let grid = launched.map(i64::from);
    check_rules(p, plan, args, &ints)?;
    // the kernel's workspaces: fresh and zeroed, buffers after the arguments
    let mut workspaces = new_workspaces(p, plan, &ints)?;
    let mut all: Vec<InterpValue<'_>> = args.iter_mut().map(InterpValue::reborrow).collect();
    all.extend(
        workspaces
            .iter_mut()
            .map(|w| InterpValue::bytes_mut(w.dtype, &mut w.bytes[..])),
    );
    let args = &mut all[..];
    let mut prep = Prepared::new(p).map_err(|(loc, m)| Error::script(loc, m))?;
    prep.max_loop_iterations = opts.max_loop_iterations;
    if let Some(n) = opts.without_fence {
        prep.without_fence = Some(fence_statement(p, n)?);
    }
    // the record of who published what to whom, where one block can see another's writes
    let mut ledger = prep
        .sequential
        .then(|| publication::Ledger::new(args.len()));
    let total = grid[0]
        .checked_mul(grid[1])
        .and_then(|x| x.checked_mul(grid[2]))
        .ok_or_else(|| Error::Argument {
            arg: "blocks".into(),
            message: format!("the grid {grid:?} has too many blocks"),
        })? as u64;
    let mut report = Report::default();
    // old values of atomics depend on the order of blocks: one at a time, in block order
    let batch = if prep.sequential {
        1
    } else {
        opts.batch.max(1) as u64
    };
    // blocks run cluster by cluster (a cluster's blocks together), clusters in batches
    let cluster = plan.cluster.map(u64::from);
    let per_cluster = cluster.iter().product::<u64>().max(1);
    let clusters = total / per_cluster;
    let batch = batch.div_ceil(per_cluster).max(1);
    let mut start = 0u64;
    while start < clusters {
        let end = (start + batch).min(clusters);
        type BlockResult = (
            String,
            std::result::Result<
                (
                    Vec<state::GlobalWrite>,
                    Vec<publication::Event>,
                    state::Stats,
                ),
                Error,
            >,
        );
        let results: Vec<BlockResult> = {
            let views: Vec<Option<GlobalBuf<'_>>> = args
                .iter()
                .map(|v| match v {
                    InterpValue::Buffer(b) => Some(GlobalBuf { bytes: b.bytes() }),
                    InterpValue::BufferMut(b) => Some(GlobalBuf { bytes: b.bytes() }),
                    InterpValue::Int(_) | InterpValue::Float(_) => None,
                })
                .collect();
            let one = |id: u64| -> Vec<(u64, BlockResult)> {
                // the cluster's position in the grid of clusters, then its blocks, x fastest
                let per = [grid[0] as u64 / cluster[0], grid[1] as u64 / cluster[1]];
                let origin = [
                    id % per[0] * cluster[0],
                    id / per[0] % per[1] * cluster[1],
                    id / (per[0] * per[1]) * cluster[2],
                ];
                let mut members = vec![];
                for dz in 0..cluster[2] {
                    for dy in 0..cluster[1] {
                        for dx in 0..cluster[0] {
                            members.push([origin[0] + dx, origin[1] + dy, origin[2] + dz]);
                        }
                    }
                }
                let mut blocks: Vec<Block<'_, '_>> = members
                    .iter()
                    .map(|m| {
                        let at = m.map(|x| x as i64);
                        Block::new(&prep, &views, &ints, at, grid, ledger.as_ref())
                    })
                    .collect();
                let fault = if blocks.len() == 1 {
                    sched::run_block(&mut blocks[0]).err().map(|f| (0, f))
                } else {
                    sched::run_cluster(&mut blocks).err()
                };
                let mut fault = fault;
                members
                    .iter()
                    .zip(blocks)
                    .enumerate()
                    .map(|(i, (m, mut b))| {
                        let linear =
                            m[0] + m[1] * grid[0] as u64 + m[2] * (grid[0] * grid[1]) as u64;
                        let printed = std::mem::take(&mut b.printed);
                        let r = match fault.take_if(|(at, _)| *at == i) {
                            None => Ok((b.writes, b.publication.events, b.stats)),
                            Some((_, f)) => Err(Error::Interp {
                                kernel: p.name.clone(),
                                block: m.map(|x| x as u32),
                                fault: f.fault,
                                diagnostics: f.diags,
                            }),
                        };
                        (linear, (printed, r))
                    })
                    .collect()
            };
            let mut out: Vec<(u64, BlockResult)> = if opts.parallel && end - start > 1 {
                (start..end).into_par_iter().flat_map(one).collect()
            } else {
                (start..end).flat_map(one).collect()
            };
            // global writes apply in block order
            out.sort_by_key(|(linear, _)| *linear);
            out.into_iter().map(|(_, r)| r).collect()
        };
        for (printed, r) in results {
            emit(&printed, opts.output, &mut report);
            let (writes, events, stats) = r?;
            if let Some(ledger) = ledger.as_mut() {
                let lens: Vec<usize> = args.iter().map(arg_bytes).collect();
                ledger.apply(events, &writes, &lens);
            }
            for w in writes {
                if let Some(InterpValue::BufferMut(buf)) = args.get_mut(w.arg as usize) {
                    let n = w.nbytes as usize;
                    let bits = match w.op {
                        state::WriteOp::Store => w.bits,
                        state::WriteOp::Atomic { .. } | state::WriteOp::Bits { .. } => {
                            w.apply(state::read_n(buf.bytes_mut(), w.byte, n))
                        }
                    };
                    state::write_bits(buf.bytes_mut(), w.byte, bits, n);
                }
            }
            report.blocks += 1;
            report.statements += stats.statements;
            report.tma_copies += stats.tma_copies;
            report.mma_instructions += stats.mma;
            report.max_tasks = report.max_tasks.max(stats.max_tasks);
        }
        start = end;
    }
    drop(all);
    check_workspaces(p, &workspaces)?;
    Ok(report)
}

/// A workspace as the interpreter holds it for one run.
struct HeldWorkspace {
    bytes: Vec<u8>,
    dtype: crate::ir::DType,
    var: crate::ir::VarId,
}

/// The kernel's workspaces for one run, zeroed, sized by the launch plan.
fn new_workspaces(p: &Program, plan: &LaunchPlan, ints: &[i64]) -> Result<Vec<HeldWorkspace>> {
    let mut out = vec![];
    for kp in &plan.params {
        let KernelParam::Workspace {
            var, name, bytes, ..
        } = kp
        else {
            continue;
        };
        let n = plan
            .eval_with(bytes, &|a| ints.get(a).copied())
            .filter(|&n| (0..=1 << 34).contains(&n))
            .ok_or_else(|| Error::Argument {
                arg: format!("workspace `{name}`"),
                message: format!("it would hold {bytes} bytes, which the interpreter cannot give"),
            })?;
        out.push(HeldWorkspace {
            bytes: vec![0; n as usize],
            dtype: p.var(*var).pointee.unwrap_or(crate::ir::DType::U32),
            var: *var,
        });
    }
    Ok(out)
}

/// A workspace declared `zeroed` must be all zeros when the kernel ends.
fn check_workspaces(p: &Program, workspaces: &[HeldWorkspace]) -> Result<()> {
    for w in workspaces {
        let v = p.var(w.var);
        let crate::ir::VarKind::Workspace(decl) = &v.kind else {
            continue;
        };
        let Some(at) = w.bytes.iter().position(|&b| b != 0).filter(|_| decl.zeroed) else {
            continue;
        };
        let eb = v.pointee.map_or(1, |t| t.nbytes() as usize);
        let left = w.bytes.iter().filter(|&&b| b != 0).count();
        let message = format!(
            "global_tensor `{}` is declared zeroed, but the kernel ended with element {} not              zero ({left} nonzero byte(s) in all): the next launch would find them; reset what              the kernel sets before it ends (the block that reads a flag last sets it back to 0)",
            v.name,
            at / eb
        );
        return Err(Error::Interp {
            kernel: p.name.clone(),
            block: [0, 0, 0],
            fault: Fault::DirtyWorkspace,
            diagnostics: vec![crate::Diagnostic {
                loc: decl.loc,
                message,
            }],
        });
    }
    Ok(())
}

/// The size in bytes of a buffer argument (0 for scalars).
fn arg_bytes(v: &InterpValue<'_>) -> usize {
    match v {
        InterpValue::Buffer(b) => b.bytes().len(),
        InterpValue::BufferMut(b) => b.bytes().len(),
        InterpValue::Int(_) | InterpValue::Float(_) => 0,
    }
}

/// The id of the program's `fence_gpu` statement number `n`, in program order.
fn fence_statement(p: &Program, n: usize) -> Result<crate::ir::StmtId> {
    let mut fences = vec![];
    p.walk(&mut |s| {
        if let crate::ir::StmtKind::Inst(crate::ir::Inst::Memory(crate::ir::MemoryInst::FenceGpu)) =
            &s.kind
        {
            fences.push(s.id);
        }
    });
    fences.get(n).copied().ok_or_else(|| Error::Argument {
        arg: "without_fence".into(),
        message: format!(
            "`{}` has {} `fence_gpu` statements; fence {n} does not exist",
            p.name,
            fences.len()
        ),
    })
}

/// Hands a block's printed text to the output.
fn emit(text: &str, output: Output, report: &mut Report) {
    if text.is_empty() {
        return;
    }
    match output {
        Output::Stdout => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            // printing is for debugging: a closed standard output does not fail the run
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        Output::Capture => report.printed.push_str(text),
        Output::Discard => {}
    }
}
