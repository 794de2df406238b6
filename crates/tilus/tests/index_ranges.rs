//! 32-bit index arithmetic that cannot overflow: values that leave `i32` for constants alone
//! are errors when the script is traced; values that depend on runtime arguments are checked
//! before every launch (here on the interpreter; the GPU launch shares the check). And the
//! smaller front-door rules of the language: constants that do not fit their type, a grid
//! that is never set, offsets that mix variables and literals.

use tilus::interp::InterpValue;
use tilus::prelude::*;
use tilus::Error;

/// `dst[0..n) = 1` with `block` elements per block, and a loop up to `k` (a constant) by `step`
/// that does nothing but count.
#[derive(Clone, Debug, Hash)]
struct Fill {
    block: i32,
    step: i32,
}

impl Script for Fill {
    type Args = (i32, Const<i32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["n", "k", "dst"]
    }
    fn body(&self, k: &mut Kernel, (n, kk, dst): Handles<Self::Args>) {
        k.blocks([cdiv(n, self.block)]);
        k.warps(1);
        let bx = k.block_idx().x;
        let offset = k.let_i32(self.block * bx);
        let t = k.register_tensor::<f32>([self.block], 1.0);
        let g = k.global_view::<f32>(dst, [n]);
        k.for_range(0, kk, self.step, |_, _| {});
        k.store_global(&g, &t, (offset,));
    }
}

fn plan(consts: &[i64]) -> tilus::Result<(tilus::ir::Program, tilus::ir::LaunchPlan)> {
    let program = tilus::trace(
        &Fill {
            block: 32,
            step: 64,
        },
        consts,
    )?;
    tilus::passes::compile_program(program)
}

#[test]
fn a_loop_counter_that_passes_i32_max_for_a_constant_is_an_argument_error() {
    // the counter reaches k - 1 + 64 after the last iteration
    assert!(plan(&[(i32::MAX - 63) as i64]).is_ok());
    match plan(&[(i32::MAX - 62) as i64]) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "k");
            assert!(message.contains("k = 2147483585"), "{message}");
            assert!(
                message.contains("the counter `i0` of the loop"),
                "{message}"
            );
            assert!(message.contains("index_ranges.rs:"), "{message}");
        }
        other => panic!("expected an argument error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn runtime_sizes_are_checked_before_the_kernel_runs() {
    let (p, launch) = plan(&[64]).unwrap();
    assert!(!launch.index_guards.is_empty());
    let run = |n: i64, buf: &mut [f32]| {
        let mut args = vec![
            InterpValue::Int(n),
            InterpValue::Int(64),
            InterpValue::buffer_mut(buf),
        ];
        tilus::interp::run_program(&p, &launch, &mut args, &Default::default())
    };
    let mut small = vec![0.0f32; 100];
    run(100, &mut small).unwrap();
    assert!(small.iter().all(|&x| x == 1.0));
    // n + 31 in cdiv(n, 32) passes i32::MAX: named, and nothing runs
    let mut tiny = vec![0.0f32; 4];
    match run(i32::MAX as i64, &mut tiny) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "n");
            assert!(message.contains("n = 2147483647"), "{message}");
            assert!(message.contains("outside the 32-bit integers"), "{message}");
        }
        other => panic!("expected an argument error, got {other:?}"),
    }
    assert!(tiny.iter().all(|&x| x == 0.0), "nothing may have run");
    // the largest n whose arithmetic fits is accepted by the guards (the buffer check comes
    // next and says the buffer is too small)
    match run(i32::MAX as i64 - 31, &mut tiny) {
        Err(Error::Argument { message, .. }) => {
            assert!(message.contains("the buffer holds"), "{message}")
        }
        other => panic!("expected the buffer check, got {other:?}"),
    }
}

#[test]
fn a_constant_that_does_not_fit_its_type_is_an_argument_error() {
    match plan(&[99_999_999_999]) {
        Err(Error::Argument { arg, message }) => {
            assert_eq!(arg, "k");
            assert!(message.contains("99999999999 does not fit"), "{message}");
        }
        other => panic!("expected an argument error, got {:?}", other.map(|_| ())),
    }
}

/// A script whose own literals overflow: no argument to blame, so a script error at the line.
#[derive(Clone, Debug, Hash)]
struct Literal;

impl Script for Literal {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (dst,): Handles<Self::Args>) {
        k.blocks([1]);
        k.warps(1);
        let big = k.let_i32(i32::MAX);
        let line = line!() + 1;
        let over = k.let_i32(big * 2);
        LINE.with(|l| l.set(line));
        let t = k.register_tensor::<f32>([32], 1.0);
        let g = k.global_view::<f32>(dst, [32]);
        k.store_global(&g, &t, [over]);
    }
}

thread_local! {
    static LINE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

#[test]
fn literals_that_overflow_are_a_script_error_at_their_line() {
    let program = tilus::trace(&Literal, &[]).unwrap();
    match tilus::passes::compile_program(program) {
        Err(Error::Script(d)) => {
            let hit = d
                .iter()
                .find(|d| d.message.contains("reaches 4294967294"))
                .unwrap_or_else(|| panic!("{d:#?}"));
            assert_eq!(hit.loc.line, LINE.with(|l| l.get()), "{hit}");
        }
        other => panic!("expected a script error, got {:?}", other.map(|_| ())),
    }
}
