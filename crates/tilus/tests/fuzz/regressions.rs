//! Programs the generator found (minimized), and extreme sizes it reaches only rarely: each
//! is replayed on every run, whatever the random cases are.

use crate::model::{ops, plain, Case, Dt, Op, Sc, BAR0, T};
use crate::ops::arith::Arith;
use crate::ops::control::{Control, Group, LetKind, To};
use crate::ops::mbarrier::{Bytes, Mbarrier};
use crate::ops::memory::{Init, Memory};
use crate::ops::mma::Mma;
use crate::ops::registers::Registers;
use crate::ops::tma::Tma;
use crate::ops::wgmma::{WgA, Wgmma};
use crate::replay::Fuzz;
use crate::run::Stage;
use crate::shrink::{no_panic, show};

/// Traces, compiles and emits `ops` (constants 64, 64): no panic, and how far it got.
fn stage(ops: Vec<Op>) -> Stage {
    no_panic(Case {
        ops,
        consts: vec![64, 64],
        edits: vec![],
    })
}

/// A thread group before `warps`: the builder cannot check its bounds yet, and the verifier
/// added `begin + count` in u32 (overflow).
#[test]
fn thread_group_past_u32_before_warps() {
    let ops = ops![
        Control::Group(Group::Threads(32, u32::MAX), vec![]),
        Control::Warps(4),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// `set_max_registers` in a thread group that reaches past u32 (before `warps`): the register
/// rule added the group's first thread and count in u32 (overflow).
#[test]
fn register_request_in_a_group_past_u32() {
    let ops = ops![
        Control::Group(
            Group::Threads(128, u32::MAX),
            vec![Registers::SetMax(24).into()]
        ),
        Control::Warps(4),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// A register tile of more than 2^63 elements overflowed the element count of its layout
/// (`RegisterLayout::local_size`) in the register check.
#[test]
fn tiles_of_more_than_2_pow_63_elements() {
    let h = i32::MAX;
    for dt in [Dt::F16, Dt::F32] {
        let ops = ops![
            Control::Warps(4),
            Memory::Register(dt, vec![h, h, h, h], Init::Zero)
        ];
        assert_eq!(stage(ops), Stage::CompileFailed);
        let ops = ops![
            Control::Warps(4),
            Memory::Shared(dt, vec![h, h, h]),
            Memory::LoadShared(plain(0)),
        ];
        assert_eq!(stage(ops), Stage::CompileFailed);
        let ops = ops![
            Control::Warps(1),
            Memory::Register(dt, vec![h; 3], Init::Zero),
            Arith::Cast(plain(0), Dt::F16),
            Memory::GlobalView(1, vec![Sc::Lit(h); 3]),
            Memory::StoreGlobal(0, plain(0), vec![Sc::Lit(0); 3]),
        ];
        assert_eq!(stage(ops), Stage::CompileFailed);
    }
}

/// The strides of a TMA source view whose extents multiply past i64 overflowed in the
/// verifier.
#[test]
fn tma_from_a_view_whose_strides_overflow() {
    let ops = ops![
        Control::Warps(4),
        Memory::GlobalView(0, vec![Sc::Lit(i32::MAX); 5]),
        Memory::Shared(Dt::F16, vec![64; 5]),
        Mbarrier::Alloc(vec![1]),
        Tma::GlobalToShared(0, plain(0), vec![Sc::Lit(i32::MAX); 5], BAR0),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// A shared tile of more than 2^64 bytes counts as `u64::MAX` bytes; placing anything after
/// it overflowed the planner's offsets.
#[test]
fn shared_planning_after_a_tile_too_large_to_count() {
    let ops = ops![
        Control::Warps(4),
        Memory::Shared(Dt::F16, vec![1 << 16, 1 << 20, 1 << 30]),
        Mbarrier::Alloc(vec![1]),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
    let ops = ops![
        Control::Warps(4),
        Memory::Shared(Dt::F32, vec![i32::MAX; 3]),
        Memory::Shared(Dt::F32, vec![i32::MAX; 3]),
        Memory::Shared(Dt::F16, vec![64, 64]),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}

/// Tiles just under 2^31 elements and views with extents near `i32::MAX` reach every pass.
#[test]
fn extreme_sizes_never_panic() {
    let (h, max) = (1 << 15, Sc::Lit(i32::MAX));
    let cases = vec![
        ops![Memory::Register(Dt::F32, vec![h, h], Init::Zero)],
        ops![Memory::Register(Dt::F32, vec![1 << 30], Init::Zero)],
        ops![Memory::Register(Dt::F32, vec![1 << 10; 3], Init::Zero)],
        vec![Op::from(Memory::Shared(Dt::F32, vec![h, h])); 3],
        ops![
            Memory::Shared(Dt::F32, vec![h, h]),
            Memory::LoadShared(plain(0))
        ],
        ops![
            Memory::Register(Dt::F32, vec![h, h], Init::Zero),
            Arith::Cast(plain(0), Dt::F16),
        ],
        ops![
            Memory::GlobalView(5, vec![max.clone(); 2]),
            Memory::Register(Dt::F32, vec![h, h], Init::Zero),
            Memory::StoreGlobal(0, plain(0), vec![max.clone(); 2]),
        ],
        ops![
            Memory::GlobalView(5, vec![max.clone(); 5]),
            Memory::Register(Dt::F32, vec![4; 5], Init::Zero),
            Memory::StoreGlobal(0, plain(0), vec![max.clone(); 5]),
        ],
        ops![
            Memory::Shared(Dt::F16, vec![h, h]),
            Memory::Shared(Dt::F16, vec![h, h]),
            Memory::Register(Dt::F32, vec![h, h], Init::Zero),
            Control::Group(
                Group::FourWarps(0),
                ops![Wgmma::Mma(
                    WgA::Shared(plain(1)),
                    T {
                        idx: 0,
                        transposed: true,
                    },
                    plain(0),
                )],
            ),
        ],
        ops![
            Memory::GlobalView(0, vec![max.clone(); 3]),
            Memory::Shared(Dt::F16, vec![64; 3]),
            Mbarrier::Alloc(vec![1]),
            Control::Group(
                Group::SingleThread,
                ops![
                    Mbarrier::ExpectTx(BAR0, Bytes::Nbytes(vec![0])),
                    Tma::GlobalToShared(0, plain(0), vec![max.clone(); 3], BAR0),
                ],
            ),
            Mbarrier::Wait(BAR0, Sc::Lit(0)),
        ],
    ];
    // each is too large for a block (registers, shared memory) or a view (offsets past i32):
    // a compile error, never a panic and never CUDA
    for (i, ops) in cases.into_iter().enumerate() {
        let mut all = ops![Control::Warps(4)];
        all.extend(ops);
        assert_eq!(stage(all), Stage::CompileFailed, "case {i}");
    }
}

/// Not a panic but a hang: layout inference compared the two layouts that a `dot` asks of a
/// tile used as both operands element by element (`RegisterLayout::same_mapping`), which for
/// a 2^30-element tile took 15 s and for larger ones (2-D tiles may have up to 2^62 elements)
/// never ended. Such tiles need more registers than a thread has, which the register check
/// reports; inference no longer compares their layouts.
///
/// What is asserted is the work done, not the time taken: where the layouts are compared, the
/// two operands' layouts differ and one operand is converted for the product (the `[64, 64]`
/// tile: `tilus ir` shows the conversion); for the huge tiles neither a conversion nor a
/// conflict appears, so no comparison ran: the register budget is the reason (or, for
/// `[2^31 - 1, 2^31 - 1]`, the dot's shape, checked before inference). Were the comparison
/// back, the first huge tile (2^30 elements) would report the conflict after its 15 s and
/// fail here, before the larger ones that would never end.
#[test]
fn conflicting_layouts_of_huge_tiles_are_never_compared() {
    let dot_of_itself = |h: i32| {
        ops![
            Control::Warps(4),
            Memory::Register(Dt::F16, vec![h, h], Init::Zero),
            Memory::Register(Dt::F32, vec![h, h], Init::Zero),
            // the f16 tile is both operands
            Mma::Dot(plain(1), plain(0), plain(0), plain(0)),
        ]
    };
    // the compile's diagnostics (after checking that it fails without a panic)
    let diagnostics = |h: i32| -> Vec<String> {
        assert_eq!(stage(dot_of_itself(h)), Stage::CompileFailed, "[{h}, {h}]");
        let program = tilus::trace(&Fuzz(dot_of_itself(h)), &[64, 64]).expect("it traces");
        match tilus::passes::compile_program(program) {
            Err(tilus::Error::Script(d)) => d.into_iter().map(|d| d.message).collect(),
            other => panic!("[{h}, {h}]: {:?}", other.map(|_| ())),
        }
    };
    let compared = |messages: &[String]| {
        messages
            .iter()
            .any(|m| m.contains("needs layout") || m.contains("convert_layout"))
    };
    // a tile that fits: its layouts are compared, they differ, and b gets a converted copy
    let small = tilus::trace(&Fuzz(dot_of_itself(64)), &[64, 64]).expect("it traces");
    let small = tilus::passes::compile_program(small).expect("it compiles");
    let ir = tilus::ir::print_program(&small.0);
    assert!(ir.contains("convert_layout(r0)"), "{ir}");
    for h in [1 << 15, 1 << 20, i32::MAX] {
        let messages = diagnostics(h);
        assert!(!compared(&messages), "[{h}, {h}]: {messages:?}");
        let reason = if h == i32::MAX {
            "cannot be cut into m16n8k16 tiles"
        } else {
            "registers per thread"
        };
        assert!(
            messages.iter().any(|m| m.contains(reason)),
            "[{h}, {h}]: {messages:?}"
        );
    }
}

/// Not a panic, but programs that would compile into CUDA that NVRTC rejects: a scalar or a
/// register tile used after the loop or thread group that declared it must be a diagnostic
/// (the emitted code would name a variable that is out of scope there).
#[test]
fn values_used_outside_their_scope_are_diagnosed() {
    let after_loop = |body: Vec<Op>, then: Vec<Op>| {
        let mut ops = ops![
            Control::Warps(4),
            Control::For(Sc::Lit(0), Sc::Lit(4), Sc::Lit(1), None, body),
        ];
        ops.extend(then);
        ops
    };
    let cases = vec![
        // the loop index after its loop
        after_loop(vec![], ops![Control::Let(LetKind::LetI32, Sc::Val(0))]),
        // a variable declared in a loop, assigned after it
        after_loop(
            ops![Control::Let(LetKind::VarI32, Sc::Lit(0))],
            ops![Control::Assign(To::Mutable(0), Sc::Lit(1))],
        ),
        // a register tile declared in a loop, stored after it
        after_loop(
            ops![Memory::Register(Dt::F32, vec![4], Init::One)],
            ops![
                Memory::GlobalView(5, vec![Sc::Lit(4)]),
                Memory::StoreGlobal(0, plain(0), vec![Sc::Lit(0)]),
            ],
        ),
        // a scalar declared in a thread group, read after it
        ops![
            Control::Warps(4),
            Control::Group(
                Group::SingleThread,
                ops![Control::Let(LetKind::LetI32, Sc::Lit(3))],
            ),
            Control::Let(LetKind::LetI32, Sc::Val(0)),
        ],
    ];
    for ops in cases {
        let shown = show(&Case {
            ops: ops.clone(),
            consts: vec![],
            edits: vec![],
        });
        assert_eq!(stage(ops), Stage::CompileFailed, "{shown}");
    }
}

/// Reshapes and slices of tiles of more than 2^63 elements: the element counts of a reshape
/// overflowed when the script was traced; huge slices and reshapes that do fit must not build
/// a table of every register before the register check rejects them.
#[test]
fn shape_views_of_tiles_of_more_than_2_pow_63_elements() {
    use crate::ops::shape::Shape;
    let h = i32::MAX;
    let ops = ops![
        Control::Warps(1),
        Memory::Register(Dt::F16, vec![], Init::None),
        Shape::Reshape(plain(0), vec![h, h, 4096]),
    ];
    assert_eq!(stage(ops), Stage::TraceFailed);
    let ops = ops![
        Control::Warps(1),
        Memory::Register(Dt::F32, vec![h, h, h], Init::Zero),
        Shape::Reshape(plain(0), vec![h, h, h]),
        Shape::Reshape(plain(0), vec![h, h, 4096]),
    ];
    assert_eq!(stage(ops), Stage::TraceFailed);
    let ops = ops![
        Control::Warps(1),
        Memory::Register(Dt::F32, vec![1 << 20, 1 << 20, 64], Init::Zero),
        Shape::Slice(plain(0), 0, 0, 1 << 19),
        Shape::Reshape(plain(0), vec![1 << 19, 1 << 26]),
    ];
    assert_eq!(stage(ops), Stage::CompileFailed);
}
