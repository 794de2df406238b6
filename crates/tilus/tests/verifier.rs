//! The verifier, rule by rule: one small, deliberately broken script per rule. Each test
//! checks that tracing + `compile_program` returns `Error::Script`, that a diagnostic carries
//! the rule's key phrase, and that it points at the offending builder call in this file.
//!
//! The offending call is written as `at(line!(), call)`, on one line, so that the test knows
//! the line the diagnostic must name. Rules that the typed builder API makes impossible to
//! break (dtype mismatches, pinned layouts) are reached by editing the traced `Program`
//! before running the passes; the locations are still the builder calls'.
//!
//! A test that fails states what the library should do and does not yet (a wrong location,
//! a missing rule); `#[ignore = "BUG: ..."]` marks scripts on which the library panics.

// `at(line!(), k.sync())` passes the unit result of the marked call on purpose.
#![allow(clippy::unit_arg)]

use std::cell::Cell;
use std::fmt;
use std::hash::{Hash, Hasher};

use tilus::ir::{DType, Program};
use tilus::lang::ArgList;
use tilus::layout::{SharedLayout, Swizzle};
use tilus::prelude::*;
use tilus::{Diagnostic, Error};

thread_local! {
    /// Line of the offending call, recorded while the body is traced.
    static LINE: Cell<u32> = const { Cell::new(0) };
    /// Line of a second call that a message refers to.
    static NOTE: Cell<u32> = const { Cell::new(0) };
}

/// Marks `call` (written on the same line) as the one the diagnostic must point at.
fn at<T>(line: u32, call: T) -> T {
    LINE.with(|l| l.set(line));
    call
}

/// Marks `call` (written on the same line) as one the diagnostic's message must mention.
fn note<T>(line: u32, call: T) -> T {
    NOTE.with(|l| l.set(line));
    call
}

fn marked() -> u32 {
    LINE.with(|l| l.get())
}

fn noted() -> u32 {
    NOTE.with(|l| l.get())
}

/// A script whose body is a plain function; `A` is its argument list.
struct Body<A: ArgList>(fn(&mut Kernel, Handles<A>));

impl<A: ArgList> Clone for Body<A> {
    fn clone(&self) -> Self {
        Body(self.0)
    }
}

impl<A: ArgList> fmt::Debug for Body<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Body")
    }
}

impl<A: ArgList> Hash for Body<A> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.0 as usize).hash(state)
    }
}

impl<A: ArgList + 'static> Script for Body<A> {
    type Args = A;
    fn body(&self, k: &mut Kernel, args: Handles<A>) {
        (self.0)(k, args)
    }
}

/// Traces `body`, lets `edit` change the program, and runs every pass.
fn compile_with<A: ArgList + 'static>(
    body: fn(&mut Kernel, Handles<A>),
    consts: &[i64],
    edit: fn(&mut Program),
) -> tilus::Result<Program> {
    LINE.with(|l| l.set(0));
    NOTE.with(|l| l.set(0));
    let mut program = tilus::trace(&Body::<A>(body), consts)?;
    edit(&mut program);
    tilus::passes::compile_program(program).map(|(p, _)| p)
}

/// Traces `body` and runs every pass.
fn compile<A: ArgList + 'static>(
    body: fn(&mut Kernel, Handles<A>),
    consts: &[i64],
) -> tilus::Result<Program> {
    compile_with::<A>(body, consts, |_| {})
}

/// The diagnostics of a script that must not compile.
#[track_caller]
fn diagnostics(r: tilus::Result<Program>) -> Vec<Diagnostic> {
    match r {
        Err(Error::Script(d)) => d,
        Err(e) => panic!("expected Error::Script, got another error: {e}"),
        Ok(p) => panic!(
            "expected Error::Script, but the script compiled:\n{}",
            tilus::ir::print_program(&p)
        ),
    }
}

/// The diagnostic that contains `phrase`; it must point at the marked line of this file.
#[track_caller]
fn find(d: &[Diagnostic], phrase: &str) -> Diagnostic {
    let Some(hit) = d.iter().find(|d| d.message.contains(phrase)) else {
        panic!("no diagnostic contains {phrase:?}; got {d:#?}");
    };
    let line = marked();
    assert_ne!(line, 0, "the test did not mark the offending call");
    assert!(
        hit.loc.file.ends_with("verifier.rs"),
        "diagnostic points at {}, not at this file: {hit}",
        hit.loc
    );
    assert_eq!(
        hit.loc.line, line,
        "diagnostic points at line {}, the offending call is on line {line}: {hit}",
        hit.loc.line
    );
    hit.clone()
}

/// Exactly one diagnostic, containing `phrase`, at the marked line.
#[track_caller]
fn expect_one(r: tilus::Result<Program>, phrase: &str) -> Diagnostic {
    let d = diagnostics(r);
    assert_eq!(d.len(), 1, "expected exactly one diagnostic, got {d:#?}");
    find(&d, phrase)
}

/// A diagnostic (among others) containing `phrase`, at the marked line.
#[track_caller]
fn expect(r: tilus::Result<Program>, phrase: &str) -> Diagnostic {
    find(&diagnostics(r), phrase)
}

/// `file:line:` of the noted call, as messages print locations.
fn noted_loc() -> String {
    let line = noted();
    assert_ne!(line, 0, "the test did not note the referenced call");
    format!("verifier.rs:{line}:")
}

type OutF32 = (PtrMut<f32>,);
type InF16 = (Ptr<f16>,);

/// A `[4096, 4096]` f16 view, its TMA-friendly `[64, 64]` tile and one barrier.
fn tma_setup(k: &mut Kernel, a: PtrVal<f16>) -> (GlobalTensor<f16>, SharedTensor<f16>, Barriers) {
    let g = k.global_view(a, [4096, 4096]);
    let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
    let b = k.mbarrier().alloc([1]);
    (g, s, b)
}

// ------------------------------------------------------------------------------------------
// Baselines: the patterns the broken scripts start from compile cleanly.
// ------------------------------------------------------------------------------------------

type MatmulArgs = (i32, Const<i32>, Const<i32>, Ptr<f16>, Ptr<f16>, PtrMut<f16>);

/// The seed's v0 body, with 64x128x64 tiles.
fn matmul_body(k: &mut Kernel, (m, n, kk, a, b, c): Handles<MatmulArgs>) {
    k.blocks([cdiv(m, 64), cdiv(n, 128)]);
    k.warps(4);
    let om = k.let_i32(64 * k.block_idx().x);
    let on = k.let_i32(128 * k.block_idx().y);
    let ga = k.global_view(a, [m, kk]);
    let gb = k.global_view(b, [n, kk]);
    let sa: SharedTensor<f16> = k.shared_tensor([64, 64]);
    let sb: SharedTensor<f16> = k.shared_tensor([128, 64]);
    let acc: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
    let bar = k.mbarrier().alloc([1]);
    let phase = k.var_u32(0u32);
    k.for_range(0, kk, 64, |k, ok| {
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [om, ok], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [on, ok], bar[0]);
            k.mbarrier().wait(bar[0], phase);
        });
        k.sync();
        let ra = k.load_shared(&sa);
        let rb = k.load_shared(&sb);
        k.dot(&ra, &rb.transpose(), &acc, &acc);
        k.sync();
        k.assign(phase, phase ^ 1);
    });
    let h: RegisterTensor<f16> = k.cast(&acc);
    let gc = k.global_view(c, [m, n]);
    k.store_global(&gc, &h, [om, on]);
}

#[test]
fn the_baselines_compile() {
    compile::<MatmulArgs>(matmul_body, &[4096, 4096]).unwrap();
    compile::<OutF32>(
        |k, (o,)| {
            k.blocks([4]);
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let g = k.global_view(o, [128]);
            k.store_global(&g, &r, [32 * k.block_idx().x]);
        },
        &[],
    )
    .unwrap();
}

#[test]
fn wrong_number_of_constants_is_an_argument_error() {
    let r = tilus::trace(&Body::<MatmulArgs>(matmul_body), &[4096]);
    match r {
        Err(Error::Argument { message, .. }) => {
            assert!(
                message.contains("2 compile-time constant arguments, 1 values"),
                "{message}"
            )
        }
        other => panic!("expected Error::Argument, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------
// Launch configuration, loops, thread groups, sync, scalar variables.
// ------------------------------------------------------------------------------------------

#[test]
fn sync_inside_a_thread_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.single_warp(1, |k| {
                at(line!(), k.sync());
            });
        },
        &[],
    );
    expect_one(
        r,
        "sync() inside a thread group would wait for threads that never arrive",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.for_range(0, 4, 1, |k, _| {
                k.single_thread(|k| {
                    at(line!(), k.sync());
                });
            });
        },
        &[],
    );
    expect_one(r, "sync() inside a thread group");
}

#[test]
fn thread_group_outside_its_enclosing_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            at(line!(), k.thread_group(96, 64, |_| {}));
        },
        &[],
    );
    expect_one(
        r,
        "threads 96..160 are not inside the enclosing group of 128 threads",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            at(line!(), k.single_warp(4, |_| {}));
        },
        &[],
    );
    expect_one(r, "single_warp: threads 128..160 are not inside");

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.single_warp(0, |k| {
                at(line!(), k.thread_group(16, 32, |_| {}));
            });
        },
        &[],
    );
    expect_one(
        r,
        "threads 16..48 are not inside the enclosing group of 32 threads",
    );
}

#[test]
fn empty_thread_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            at(line!(), k.thread_group(0, 0, |_| {}));
        },
        &[],
    );
    expect_one(r, "thread_group: a thread group needs at least one thread");
}

/// The builder cannot check a group opened before `warps` is set; the verifier does.
#[test]
fn thread_group_larger_than_the_block_declared_later() {
    let r = compile::<OutF32>(
        |k, _| {
            at(line!(), k.thread_group(0, 256, |_| {}));
            k.warps(4);
        },
        &[],
    );
    expect_one(
        r,
        "thread group 0..256 does not fit in the enclosing group of 128 threads",
    );
}

#[test]
fn warp_group_not_aligned_to_four_warps() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(8);
            at(line!(), k.warp_group(2, |_| {}));
        },
        &[],
    );
    expect_one(
        r,
        "warp_group must start at a warp index divisible by 4, got 2",
    );
}

#[test]
fn warps_out_of_range() {
    for n in [0u32, 33] {
        let r = match n {
            0 => compile::<OutF32>(
                |k, _| {
                    at(line!(), k.warps(0));
                },
                &[],
            ),
            _ => compile::<OutF32>(
                |k, _| {
                    at(line!(), k.warps(33));
                },
                &[],
            ),
        };
        // The rejected call also leaves the warps unset, which is reported too.
        let d = expect(r, "warps must be between 1 and 32 (1024 threads)");
        assert!(d.message.contains(&format!("got {n}")), "{d}");
    }
}

#[test]
fn warps_set_inside_a_loop_or_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.for_range(0, 4, 1, |k, _| {
                at(line!(), k.warps(4));
            });
        },
        &[],
    );
    expect_one(r, "warps must be set at the top of the body");

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.single_warp(0, |k| {
                at(line!(), k.warps(2));
            });
        },
        &[],
    );
    expect_one(r, "warps must be set at the top of the body");
}

/// There is no offending call to point at: the diagnostic points at the body's first
/// statement.
#[test]
fn warps_never_set() {
    let d = diagnostics(compile::<OutF32>(
        |k, (o,)| {
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let g = k.global_view(o, [32]);
            k.store_global(&g, &r, [0]);
        },
        &[],
    ));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(
        d[0].message
            .contains("never sets the number of warps: call `k.warps(n)`")
            && d[0].loc.file.ends_with("verifier.rs"),
        "{}",
        d[0]
    );
}

#[test]
fn blocks_with_too_many_or_no_dimensions() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.blocks([1, 2, 3, 4]));
        },
        &[],
    );
    expect_one(r, "blocks takes 1 to 3 dimensions, got 4");

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.blocks([0i32; 0]));
        },
        &[],
    );
    expect_one(r, "blocks takes 1 to 3 dimensions, got 0");
}

#[test]
fn blocks_depending_on_the_block_index() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _ = k.let_i32(0);
            at(line!(), k.blocks([k.block_idx().x]));
        },
        &[],
    );
    expect_one(r, "blocks[0] may not depend on the block index");
}

#[test]
fn blocks_using_a_kernel_variable() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let v = k.let_i32(8);
            at(line!(), k.blocks([Scalar::from(1), v.into()]));
        },
        &[],
    );
    expect_one(
        r,
        "blocks[1] may only use arguments and constants, not `v0`",
    );
}

#[test]
fn for_range_with_a_step_that_is_not_positive() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.for_range(0, 64, 0, |_, _| {}));
        },
        &[],
    );
    expect_one(r, "for_range needs a positive step, got 0");

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.for_range(64, 0, -8, |_, _| {}));
        },
        &[],
    );
    expect_one(r, "for_range needs a positive step, got -8");
}

#[test]
fn assign_to_an_immutable_variable() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let v = k.let_i32(0);
            at(line!(), k.assign(v, 1));
        },
        &[],
    );
    expect_one(
        r,
        "`v0` is not mutable: declare it with var_i32/var_u32 to assign it",
    );

    // a loop index
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            k.for_range(0, 8, 1, |k, i| {
                at(line!(), k.assign(i, 0));
            });
        },
        &[],
    );
    expect_one(r, "`i0` is not mutable");

    // a runtime argument
    let r = compile::<(i32,)>(
        |k, (n,)| {
            k.warps(1);
            at(line!(), k.assign(n, 0));
        },
        &[],
    );
    expect_one(r, "`arg0` is not mutable");
}

#[test]
fn assign_to_a_constant() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.assign(Val::constant(3), 1));
        },
        &[],
    );
    expect_one(
        r,
        "assign needs a variable declared with var_i32/var_u32, not a constant",
    );

    let r = compile::<(Const<i32>,)>(
        |k, (n,)| {
            k.warps(1);
            at(line!(), k.assign(n, 1));
        },
        &[64],
    );
    expect_one(r, "not a constant");
}

// ------------------------------------------------------------------------------------------
// Global views, shared and register tiles, loads, stores, casts.
// ------------------------------------------------------------------------------------------

#[test]
fn tile_dimensions_that_are_not_positive() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _: SharedTensor<f16> = at(line!(), k.shared_tensor([0, 16]));
        },
        &[],
    );
    expect_one(
        r,
        "shared_tensor: every dimension must be positive, got [0, 16]",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _: RegisterTensor<f32> = at(line!(), k.register_tensor([8, -1], None::<f64>));
        },
        &[],
    );
    expect_one(
        r,
        "register_tensor: every dimension must be positive, got [8, -1]",
    );
}

#[test]
fn register_tensor_without_dimensions() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _: RegisterTensor<f32> = at(line!(), k.register_tensor([], None::<f64>));
        },
        &[],
    );
    expect_one(r, "register_tensor: a tile needs at least one dimension");
}

/// `register_tensor` rejects a shape without dimensions; `shared_tensor` accepts it, and only
/// a later use of the tile fails.
#[test]
fn shared_tensor_without_dimensions() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _: SharedTensor<f32> = at(line!(), k.shared_tensor([0i32; 0]));
        },
        &[],
    );
    expect_one(r, "shared_tensor: a tile needs at least one dimension");
}

#[test]
fn global_view_rank() {
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            at(line!(), k.global_view(o, [0i32; 0]));
        },
        &[],
    );
    expect_one(r, "global_view needs 1 to 5 dimensions, got 0");

    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            at(line!(), k.global_view(o, [2; 6]));
        },
        &[],
    );
    expect_one(r, "global_view needs 1 to 5 dimensions, got 6");
}

#[test]
fn global_view_extent_that_is_not_positive() {
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            at(line!(), k.global_view(o, [16, 0]));
        },
        &[],
    );
    expect_one(r, "global_view: dimension 1 is 0; it must be positive");

    let r = compile::<(Const<i32>, PtrMut<f32>)>(
        |k, (n, o)| {
            k.warps(1);
            at(line!(), k.global_view(o, [n]));
        },
        &[-5],
    );
    expect_one(r, "global_view: dimension 0 is -5; it must be positive");
}

/// `global_view<T>` takes a `PtrVal<T>`, so the builder cannot mismatch them; edit the IR.
#[test]
fn global_view_of_another_element_type() {
    let r = compile_with::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            at(line!(), k.global_view(o, [32]));
        },
        &[],
        |p| p.globals[0].dtype = DType::F16,
    );
    expect_one(r, "global_view<f16> over a pointer to");
}

#[test]
fn shared_tensor_inside_a_thread_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.single_warp(0, |k| {
                let _: SharedTensor<f16> = at(line!(), k.shared_tensor([16, 16]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "shared_tensor must run in the whole block, outside thread groups",
    );
}

#[test]
fn use_after_free_shared() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
            note(line!(), k.free_shared(&s));
            at(line!(), k.load_shared(&s));
        },
        &[],
    );
    let d = expect_one(
        r,
        "load_shared uses shared tensor `s0` after free_shared at",
    );
    assert!(d.message.contains(&noted_loc()), "{d}");

    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let (g, s, b) = tma_setup(k, a);
            note(line!(), k.free_shared(&s));
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
    );
    let d = expect_one(
        r,
        "tma.global_to_shared uses shared tensor `s0` after free_shared",
    );
    assert!(d.message.contains(&noted_loc()), "{d}");
}

#[test]
fn double_free_shared() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
            note(line!(), k.free_shared(&s));
            at(line!(), k.free_shared(&s));
        },
        &[],
    );
    let d = expect_one(r, "free_shared(`s0`): already freed at");
    assert!(d.message.contains(&noted_loc()), "{d}");
}

#[test]
fn free_shared_in_another_loop_than_the_allocation() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
            k.for_range(0, 4, 1, |k, _| {
                at(line!(), k.free_shared(&s));
            });
        },
        &[],
    );
    expect_one(
        r,
        "free_shared(`s0`) must be in the same loop as its allocation",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let mut s: Option<SharedTensor<f32>> = None;
            k.for_range(0, 4, 1, |k, _| {
                s = Some(k.shared_tensor([16, 16]));
            });
            at(line!(), k.free_shared(&s.unwrap()));
        },
        &[],
    );
    // the tile also no longer exists after its loop: both rules speak
    let d = diagnostics(r);
    find(&d, "must be in the same loop as its allocation");
    find(
        &d,
        "is used outside the loop or thread group that declares it",
    );
}

/// Two sibling loops have the same depth, but a tile allocated in one and freed in the other
/// is freed on every iteration of the second.
#[test]
fn free_shared_in_a_sibling_loop() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let mut s: Option<SharedTensor<f32>> = None;
            k.for_range(0, 4, 1, |k, _| {
                s = Some(k.shared_tensor([16, 16]));
            });
            let s = s.unwrap();
            k.for_range(0, 4, 1, |k, _| {
                at(line!(), k.free_shared(&s));
            });
        },
        &[],
    );
    let d = diagnostics(r);
    find(&d, "must be in the same loop as its allocation");
    find(
        &d,
        "is used outside the loop or thread group that declares it",
    );
}

#[test]
fn free_shared_inside_a_thread_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
            k.single_warp(0, |k| {
                at(line!(), k.free_shared(&s));
            });
        },
        &[],
    );
    expect_one(
        r,
        "free_shared must run in the whole block, outside thread groups",
    );
}

/// `load_shared` returns a tile of the shared tile's type; edit the IR.
#[test]
fn load_shared_into_another_element_type() {
    let r = compile_with::<OutF32>(
        |k, _| {
            k.warps(1);
            let s: SharedTensor<f16> = k.shared_tensor([16, 16]);
            at(line!(), k.load_shared(&s));
        },
        &[],
        |p| p.registers[0].dtype = DType::F32,
    );
    expect_one(r, "load_shared: f16 tile into a f32 register tensor");
}

#[test]
fn store_global_through_a_read_only_pointer() {
    let r = compile::<(Ptr<f32>,)>(
        |k, (o,)| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let g = k.global_view(o, [32]);
            at(line!(), k.store_global(&g, &r, [0]));
        },
        &[],
    );
    expect_one(
        r,
        "store_global writes through `arg0`, a read-only Ptr; declare it PtrMut",
    );
}

/// `store_global<T>` takes a view and a tile of the same `T`; edit the IR.
#[test]
fn store_global_of_another_element_type() {
    let r = compile_with::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let g = k.global_view(o, [32]);
            at(line!(), k.store_global(&g, &r, [0]));
        },
        &[],
        |p| p.registers[0].dtype = DType::F16,
    );
    expect_one(r, "store_global: a f16 tile into a f32 view; cast it first");
}

#[test]
fn store_global_rank_mismatch() {
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let g = k.global_view(o, [32, 32]);
            at(line!(), k.store_global(&g, &r, [0, 0]));
        },
        &[],
    );
    expect_one(
        r,
        "store_global: view `g0` has 2 dimensions, the tile 1 and the offsets 2",
    );

    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([8, 32], 1.0);
            let g = k.global_view(o, [32, 32]);
            at(line!(), k.store_global(&g, &r, [0]));
        },
        &[],
    );
    expect_one(r, "the tile 2 and the offsets 1");
}

#[test]
fn register_tensor_used_in_another_thread_group() {
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(4);
            let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
            let g = k.global_view(o, [32, 32]);
            k.single_warp(1, |k| {
                at(line!(), k.store_global(&g, &r, [0, 0]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "store_global: register tensor `r0` belongs to a group of 128 threads but is used in a group of 32",
    );

    // declared inside a group, used outside it
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(4);
            let mut r: Option<RegisterTensor<f32>> = None;
            k.single_warp(0, |k| r = Some(k.register_tensor([32], 1.0)));
            let g = k.global_view(o, [32]);
            at(line!(), k.store_global(&g, &r.unwrap(), [0]));
        },
        &[],
    );
    expect(
        r,
        "belongs to a group of 32 threads but is used in a group of 128",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
            k.warp_group(0, |k| {
                k.single_warp(2, |k| {
                    let _: RegisterTensor<f16> = at(line!(), k.cast(&r));
                });
            });
        },
        &[],
    );
    expect_one(
        r,
        "cast: register tensor `r0` belongs to a group of 128 threads",
    );
}

/// `cast` creates its output with the source's shape; edit the IR.
#[test]
fn cast_between_different_shapes() {
    let r = compile_with::<OutF32>(
        |k, _| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
            let _: RegisterTensor<f16> = at(line!(), k.cast(&r));
        },
        &[],
        |p| p.registers[1].shape = vec![32, 16],
    );
    expect_one(r, "cast: shapes differ ([32, 32] -> [32, 16])");
}

// ------------------------------------------------------------------------------------------
// mbarriers.
// ------------------------------------------------------------------------------------------

#[test]
fn mbarrier_alloc_inside_a_loop_or_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            k.for_range(0, 4, 1, |k, _| {
                at(line!(), k.mbarrier().alloc([1]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "mbarrier.alloc must run once in the whole block: outside loops and thread groups",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().alloc([1]));
            });
        },
        &[],
    );
    expect_one(r, "mbarrier.alloc must run once in the whole block");
}

#[test]
fn mbarrier_alloc_counts() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.mbarrier().alloc([1, 0]));
        },
        &[],
    );
    expect_one(
        r,
        "mbarrier.alloc: every count must be between 1 and 2^20 - 1, got [1, 0]",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.mbarrier().alloc([1 << 20]));
        },
        &[],
    );
    expect_one(
        r,
        "every count must be between 1 and 2^20 - 1, got [1048576]",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.mbarrier().alloc([]));
        },
        &[],
    );
    expect_one(r, "every count must be between 1 and 2^20 - 1, got []");
}

#[test]
fn more_threads_arrive_than_the_barrier_counts() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let b = k.mbarrier().alloc([1]);
            at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], 0));
        },
        &[],
    );
    expect_one(
        r,
        "mbarrier.arrive_and_expect_tx: 128 threads arrive on `bar0[0]`, which expects 1 arrival per phase; \
         wrap it in single_thread() or raise the count",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let b = k.mbarrier().alloc([128, 16]);
            k.single_warp(3, |k| {
                at(line!(), k.mbarrier().arrive(b[1]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "mbarrier.arrive: 32 threads arrive on `bar0[1]`, which expects 16 arrivals per phase",
    );
}

/// The arrival count is only checked for constant indices; with a variable index every
/// barrier of the array expects one arrival, so 128 arrivals are wrong whichever it is.
#[test]
fn more_threads_arrive_than_the_barrier_counts_at_a_variable_index() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let b = k.mbarrier().alloc([1, 1]);
            k.for_range(0, 2, 1, |k, i| {
                at(line!(), k.mbarrier().arrive(b.at(i)));
            });
        },
        &[],
    );
    expect_one(r, "128 threads arrive on `bar0");
}

#[test]
fn transaction_bytes_out_of_range() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], 1 << 20));
            });
        },
        &[],
    );
    // No copy delivers the bytes either, which is reported at the same call.
    expect(
        r,
        "arrive_and_expect_tx: 1048576 bytes is outside the barrier's transaction range",
    );
}

#[test]
fn transaction_bytes_that_do_not_match_the_copies() {
    // declares one tile, copies two
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(4);
            let (g, s, b) = tma_setup(k, a);
            let s2: SharedTensor<f16> = k.shared_tensor([64, 64]);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes()));
                k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
                k.tma().global_to_shared(&g, &s2, [0, 64], b[0]);
                k.mbarrier().wait(b[0], 0u32);
            });
        },
        &[],
    );
    expect_one(
        r,
        "arrive_and_expect_tx declares 8192 bytes on `bar0[0]`, but the TMA copies issued on it before \
         the wait deliver 16384 bytes; the wait would return early or fault",
    );

    // declares two tiles, copies one
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(4);
            let (g, s, b) = tma_setup(k, a);
            k.single_thread(|k| {
                let n = 2 * s.nbytes();
                at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], n));
                k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
                k.mbarrier().wait(b[0], 0u32);
            });
        },
        &[],
    );
    expect_one(
        r,
        "declares 16384 bytes on `bar0[0]`, but the TMA copies issued on it before the wait deliver \
         8192 bytes; the wait would never return",
    );
}

#[test]
fn barrier_index_out_of_range() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let b = k.mbarrier().alloc([1, 1]);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().wait(b.at(Val::constant(2)), 0u32));
            });
        },
        &[],
    );
    expect_one(
        r,
        "barrier index 2 or higher is out of range: `bar0` has 2 barrier(s)",
    );

    let r = compile::<(Const<i32>,)>(
        |k, (i,)| {
            k.warps(1);
            let b = k.mbarrier().alloc([1, 1]);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().arrive(b.at(i)));
            });
        },
        &[-1],
    );
    expect_one(
        r,
        "barrier index -1 is out of range: `bar0` has 2 barrier(s)",
    );
}

/// `Barriers` is indexed with `[]` as well as `at`; an index past the end panics in
/// `Index::index` instead of producing the diagnostic.
#[test]
fn barrier_index_out_of_range_with_brackets() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let b = k.mbarrier().alloc([1, 1]);
            k.single_thread(|k| {
                at(line!(), k.mbarrier().arrive(b[2]));
            });
        },
        &[],
    );
    expect_one(r, "barrier index 2 or higher is out of range");
}

// ------------------------------------------------------------------------------------------
// TMA.
// ------------------------------------------------------------------------------------------

#[test]
fn tma_outside_single_thread() {
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(4);
            let (g, s, b) = tma_setup(k, a);
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        },
        &[],
    );
    expect_one(
        r,
        "tma.global_to_shared runs in a group of 128 threads: each of them would issue its own; \
         wrap it in single_thread()",
    );

    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(4);
            let (g, s, b) = tma_setup(k, a);
            k.single_warp(0, |k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
    );
    expect_one(r, "tma.global_to_shared runs in a group of 32 threads");
}

#[test]
fn tma_box_dimension_over_256() {
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let g = k.global_view(a, [4096, 4096]);
            let s: SharedTensor<f16> = k.shared_tensor([512, 8]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "tma.global_to_shared: tile `s0` is 512 long in dimension 0; a TMA box allows at most 256",
    );
}

#[test]
fn tma_rows_that_are_not_a_multiple_of_16_bytes() {
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let g = k.global_view(a, [4096, 4096]);
            let s: SharedTensor<f16> = k.shared_tensor([64, 4]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "tma.global_to_shared: the tile's rows are 8 bytes; TMA needs a multiple of 16",
    );
}

#[test]
fn tma_global_stride_that_is_not_a_multiple_of_16_bytes() {
    let r = compile::<(i32, Const<i32>, Ptr<f16>)>(
        |k, (m, kk, a)| {
            k.warps(1);
            let g = k.global_view(a, [m, kk]);
            let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[4095],
    );
    expect_one(
        r,
        "tma.global_to_shared: view `g0` has a stride of 8190 bytes in dimension 0; TMA needs strides \
         that are multiples of 16 bytes (pad rows to a multiple of 8 elements)",
    );

    // 3-D: only the stride of dimension 1 (4095 elements) is misaligned
    let r = compile::<(Const<i32>, Ptr<f16>)>(
        |k, (n, a)| {
            k.warps(1);
            let g = k.global_view(a, [Scalar::from(8), 64.into(), n.into()]);
            let s: SharedTensor<f16> = k.shared_tensor([1, 16, 64]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0, 0], b[0]));
            });
        },
        &[4095],
    );
    expect_one(r, "has a stride of 8190 bytes in dimension 1");

    // an odd extent outside the innermost dimension is fine: 4095 * 64 * 2 bytes
    let r = compile::<(Const<i32>, Ptr<f16>)>(
        |k, (n, a)| {
            k.warps(1);
            let g = k.global_view(a, [Scalar::from(8), n.into(), 64.into()]);
            let s: SharedTensor<f16> = k.shared_tensor([1, 16, 64]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                k.tma().global_to_shared(&g, &s, [0, 0, 0], b[0]);
            });
        },
        &[4095],
    );
    r.expect("strides of 4095*64*2 and 64*2 bytes are multiples of 16");
}

#[test]
fn tma_rank_mismatch() {
    let r = compile::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let g = k.global_view(a, [4096, 4096]);
            let s: SharedTensor<f16> = k.shared_tensor([64]);
            let b = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
    );
    expect_one(
        r,
        "tma.global_to_shared: view `g0` has 2 dimensions, tile `s0` 1 and the offsets 2",
    );
}

/// `global_to_shared<T>` takes a view and a tile of the same `T`; edit the IR.
#[test]
fn tma_between_element_types() {
    let r = compile_with::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let (g, s, b) = tma_setup(k, a);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
        |p| p.shareds[0].dtype = DType::BF16,
    );
    expect_one(r, "tma.global_to_shared: f16 view into a bf16 tile");
}

/// Shared layouts cannot be pinned from the builder and inference always picks a swizzle
/// whose span the rows fit, so this rule is only reachable by editing the IR.
#[test]
fn tma_rows_wider_than_the_swizzle_span() {
    let r = compile_with::<InF16>(
        |k, (a,)| {
            k.warps(1);
            let (g, s, b) = tma_setup(k, a);
            k.single_thread(|k| {
                at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
            });
        },
        &[],
        |p| {
            p.shareds[0].layout = Some(SharedLayout {
                shape: vec![64, 64],
                elem_bytes: 2,
                swizzle: Swizzle::B64,
            })
        },
    );
    expect_one(
        r,
        "tma.global_to_shared: tile `s0` has 128-byte rows, wider than its 64B swizzle allows",
    );
}

// ------------------------------------------------------------------------------------------
// Tensor-core products.
// ------------------------------------------------------------------------------------------

#[test]
fn dot_shape_mismatch() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([16, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(
        r,
        "dot: shapes do not agree: a [64, 32] @ b [16, 128] + c [64, 128] -> out [64, 128]",
    );

    // the output's shape differs from the accumulator's
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            let o: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            at(line!(), k.dot(&a, &b, &c, &o));
        },
        &[],
    );
    expect_one(r, "dot: shapes do not agree");

    // a transposed view has the swapped shape
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b.transpose(), &c, &c));
        },
        &[],
    );
    expect_one(r, "a [64, 32] @ b [128, 32] + c [64, 128]");
}

#[test]
fn dot_of_tiles_that_are_not_2d() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([2, 64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([2, 32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([2, 64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(r, "dot takes 2-D tiles");
}

#[test]
fn dot_operand_types() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f32> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f32> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(
        r,
        "dot: operands must both be f16 or both bf16, got f32 and f32",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<i32> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<i32> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<i32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    let d = diagnostics(r);
    find(
        &d,
        "dot: operands must both be f16 or both bf16, got i32 and i32",
    );
    find(
        &d,
        "dot: mma.sync accumulates in f32; c and out are i32 and i32",
    );
    assert_eq!(d.len(), 2, "{d:#?}");

    // the operands' types differ (only reachable by editing the IR)
    let r = compile_with::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
        |p| p.registers[1].dtype = DType::BF16,
    );
    expect_one(r, "got f16 and bf16");
}

#[test]
fn dot_accumulator_type() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f16> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(
        r,
        "dot: mma.sync accumulates in f32; c and out are f16 and f16",
    );

    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<bf16> = k.register_tensor([64, 32], 0.0);
            let b: RegisterTensor<bf16> = k.register_tensor([32, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            let o: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            k.dot(&a, &b, &c, &o);
        },
        &[],
    );
    r.expect("bf16 operands with an f32 accumulator are fine");
}

#[test]
fn dot_that_cannot_be_tiled_over_the_warps() {
    // N = 8 cannot be split over the 4 warps that M = 16 leaves
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([16, 16], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([16, 8], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([16, 8], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(
        r,
        "dot: [16, 16] x [16, 8] cannot be cut into m16n8k16 tiles over 4 warps",
    );

    // K = 8 is not a multiple of 16
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 8], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([8, 128], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c));
        },
        &[],
    );
    expect_one(
        r,
        "dot: [64, 8] x [8, 128] cannot be cut into m16n8k16 tiles over 4 warps",
    );
}

#[test]
fn dot_in_a_group_that_is_not_whole_warps() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            k.thread_group(0, 16, |k| {
                let a: RegisterTensor<f16> = k.register_tensor([16, 16], 0.0);
                let b: RegisterTensor<f16> = k.register_tensor([16, 8], 0.0);
                let c: RegisterTensor<f32> = k.register_tensor([16, 8], 0.0);
                at(line!(), k.dot(&a, &b, &c, &c));
            });
        },
        &[],
    );
    expect_one(
        r,
        "dot runs on whole warps; the current group has 16 threads",
    );
}

#[test]
fn dot_operand_from_another_thread_group() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(8);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            k.warp_group(4, |k| {
                let b: RegisterTensor<f16> = k.register_tensor([32, 64], 0.0);
                let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
                at(line!(), k.dot(&a, &b, &c, &c));
            });
        },
        &[],
    );
    expect_one(
        r,
        "dot operand a: register tensor `r0` belongs to a group of 256 threads but is used in a group of 128",
    );
}

#[test]
fn dot_into_a_transposed_view() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            at(line!(), k.dot(&a, &b, &c, &c.transpose()));
        },
        &[],
    );
    expect_one(r, "dot: the output must not be a transposed view");
}

/// One tile, two products that need it laid out differently.
#[test]
fn conflicting_layouts_from_two_dots() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 32], 0.0);
            let b1: RegisterTensor<f16> = k.register_tensor([32, 128], 0.0);
            let c1: RegisterTensor<f32> = k.register_tensor([64, 128], 0.0);
            let b2: RegisterTensor<f16> = k.register_tensor([32, 16], 0.0);
            let c2: RegisterTensor<f32> = k.register_tensor([64, 16], 0.0);
            note(line!(), k.dot(&a, &b1, &c1, &c1));
            at(line!(), k.dot(&a, &b2, &c2, &c2));
        },
        &[],
    );
    let d = expect_one(r, "register tensor `r0` needs layout");
    assert!(
        d.message
            .contains("for dot operand a here, but dot operand a at"),
        "{d}"
    );
    assert!(d.message.contains(&noted_loc()), "{d}");
    assert!(
        d.message.contains("layout conversion is not supported yet"),
        "{d}"
    );
}

/// Back-to-back products: the f32 accumulator cast to f16 is not in the A-operand layout.
#[test]
fn conflicting_layouts_through_a_cast() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let b: RegisterTensor<f16> = k.register_tensor([64, 64], 0.0);
            let c: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            k.dot(&a, &b, &c, &c);
            let h: RegisterTensor<f16> = at(line!(), k.cast(&c));
            let c2: RegisterTensor<f32> = k.register_tensor([64, 64], 0.0);
            note(line!(), k.dot(&h, &b, &c2, &c2));
        },
        &[],
    );
    let d = expect_one(r, "for cast here, but dot operand a at");
    assert!(d.message.contains(&noted_loc()), "{d}");
}

// ------------------------------------------------------------------------------------------
// Resources: shared memory and registers (checked after layouts and the plan).
// ------------------------------------------------------------------------------------------

#[test]
fn shared_memory_over_227_kb() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let _: SharedTensor<f16> = k.shared_tensor([64, 64]);
            let _: SharedTensor<f32> = at(line!(), k.shared_tensor([256, 256]));
        },
        &[],
    );
    let d = expect_one(r, "more than the 232448 a block can have");
    assert!(d.message.contains("`s1` 262144 B"), "{d}");

    // two tiles that fit alone but are alive together
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: SharedTensor<f16> = k.shared_tensor([256, 200]);
            let b: SharedTensor<f16> = at(line!(), k.shared_tensor([256, 256]));
            k.free_shared(&a);
            k.free_shared(&b);
        },
        &[],
    );
    expect_one(r, "more than the 232448 a block can have");

    // the same tiles, one after the other, fit
    compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let a: SharedTensor<f16> = k.shared_tensor([256, 200]);
            k.free_shared(&a);
            let b: SharedTensor<f16> = k.shared_tensor([256, 256]);
            k.free_shared(&b);
        },
        &[],
    )
    .expect("tiles that are never alive together share their bytes");
}

/// A single plain (non-TMA) tile of exactly 227 KB is the most a block can have.
#[test]
fn shared_memory_of_exactly_227_kb() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let _: SharedTensor<f32> = k.shared_tensor([227 * 1024 / 4]);
        },
        &[],
    );
    let p = r.expect("227 KB of plain shared memory fits in a block");
    assert!(p.smem_bytes <= tilus::passes::MAX_SHARED_BYTES);
}

/// The byte count of a huge tile overflows `u32` in the builder.
#[test]
fn shared_tile_whose_size_overflows_u32() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let _: SharedTensor<f32> = at(line!(), k.shared_tensor([32768, 32768]));
        },
        &[],
    );
    expect_one(r, "more than the 232448 a block can have");
}

/// 2^32 elements of 2 bytes wrap to a tile of 0 bytes, which then "fits".
#[test]
fn shared_tile_whose_size_wraps_to_zero() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let _: SharedTensor<f16> = at(line!(), k.shared_tensor([65536, 65536]));
        },
        &[],
    );
    expect_one(r, "more than the 232448 a block can have");
}

/// Two 2 GiB tiles: the planner's offsets overflow `u32`.
#[test]
fn shared_tiles_whose_offsets_overflow_u32() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            let _: SharedTensor<f32> = k.shared_tensor([16384, 32768]);
            let _: SharedTensor<f32> = at(line!(), k.shared_tensor([16384, 32768]));
        },
        &[],
    );
    expect(r, "a block can have");
}

#[test]
fn registers_over_255_per_thread() {
    // The seed's 128x256 f32 accumulator over 4 warps: 256 registers for it alone.
    let r = compile::<(Ptr<f16>, Ptr<f16>)>(
        |k, (pa, pb)| {
            k.warps(4);
            let ga = k.global_view(pa, [4096, 4096]);
            let gb = k.global_view(pb, [4096, 4096]);
            let sa: SharedTensor<f16> = k.shared_tensor([128, 64]);
            let sb: SharedTensor<f16> = k.shared_tensor([256, 64]);
            let acc: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
            let bar = k.mbarrier().alloc([1]);
            k.for_range(0, 4096, 64, |k, ok| {
                k.single_thread(|k| {
                    k.mbarrier()
                        .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
                    k.tma()
                        .global_to_shared(&ga, &sa, [Scalar::from(0), ok.into()], bar[0]);
                    k.tma()
                        .global_to_shared(&gb, &sb, [Scalar::from(0), ok.into()], bar[0]);
                    k.mbarrier().wait(bar[0], 0u32);
                });
                k.sync();
                let a = k.load_shared(&sa);
                let b = k.load_shared(&sb);
                k.dot(&a, &b.transpose(), &acc, &acc);
                k.sync();
            });
        },
        &[],
    );
    let d = expect_one(r, "registers per thread");
    assert!(d.message.contains("`r0` 256"), "{d}");
    assert!(
        d.message
            .contains("more than the 255 a thread can have; use a smaller tile or more warps"),
        "{d}"
    );

    // the same accumulator alone, without the operands
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(4);
            let acc: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
            let g = k.global_view(o, [128, 256]);
            k.store_global(&g, &acc, [0, 0]);
        },
        &[],
    );
    expect_one(
        r,
        "the register tiles alive together need 256 registers per thread",
    );
}

/// The diagnostic should point at a tile that makes the difference, not at the first tile
/// that happens to be alive.
#[test]
fn registers_over_255_points_at_the_large_tile() {
    let r = compile::<OutF32>(
        |k, (o,)| {
            k.warps(4);
            let small: RegisterTensor<f32> = k.register_tensor([128], 0.0);
            let big: RegisterTensor<f32> = at(line!(), k.register_tensor([128, 256], 0.0));
            let g = k.global_view(o, [128, 256]);
            k.store_global(&g, &big, [0, 0]);
            let g1 = k.global_view(o, [128]);
            k.store_global(&g1, &small, [0]);
        },
        &[],
    );
    expect_one(
        r,
        "the register tiles alive together need 257 registers per thread",
    );
}

/// The register count of a huge tile overflows `u32` in the register check.
#[test]
fn register_tile_whose_size_overflows_u32() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let _: RegisterTensor<f32> = at(line!(), k.register_tensor([65536, 65536], 0.0));
        },
        &[],
    );
    expect_one(r, "registers per thread");
}

// ------------------------------------------------------------------------------------------
// Builder corner cases that must be diagnostics, not panics.
// ------------------------------------------------------------------------------------------

/// `transpose` of a 1-D tile is documented as swapping the last two dimensions; `cast` then
/// computes `rank - 2` and underflows.
#[test]
fn cast_of_a_transposed_1d_tile() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
            let _: RegisterTensor<f16> = at(line!(), k.cast(&r.transpose()));
        },
        &[],
    );
    expect(r, "transpose");
}

/// `warp * 32` overflows before the group is checked.
#[test]
fn single_warp_with_a_huge_index() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            at(line!(), k.single_warp(200_000_000, |_| {}));
        },
        &[],
    );
    expect_one(r, "are not inside the enclosing group of 128 threads");
}

#[test]
fn warps_set_twice() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(4);
            at(line!(), k.warps(2));
        },
        &[],
    );
    expect_one(r, "the number of warps is already set at");
}

#[test]
fn min_blocks_per_sm_out_of_range() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            at(line!(), k.min_blocks_per_sm(0));
        },
        &[],
    );
    expect_one(r, "min_blocks_per_sm must be between 1 and 32, got 0");
}

#[test]
fn cast_between_unsupported_types() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let t: RegisterTensor<i32> = k.register_tensor([32], 1.0);
            let _h: RegisterTensor<f16> = at(line!(), k.cast(&t));
        },
        &[],
    );
    expect_one(r, "cast from i32 to f16 is not supported; go through f32");
}

#[test]
fn store_shared_shape_and_dtype_mismatch() {
    let r = compile::<OutF32>(
        |k, _| {
            k.warps(1);
            let s = k.shared_tensor::<f32>([32, 8]);
            let t: RegisterTensor<f32> = k.register_tensor([32, 4], 1.0);
            at(line!(), k.store_shared(&s, &t));
        },
        &[],
    );
    expect_one(
        r,
        "store_shared: the register tile is [32, 4], the shared tile [32, 8]",
    );
}
