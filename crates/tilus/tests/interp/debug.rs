//! Printing: the text `printf` and `print_tensor` give, captured from the interpreter
//! (`Output::Capture`) and compared exactly with what the format promises for known values;
//! which threads and blocks print; a print that reads a tile too early is caught like any
//! other read. The GPU prints the same text (`runtime/gpu.rs` compares them).

use crate::common::interp::expect_fault;
use crate::common::scripts::Printing;
use crate::common::{clear_marks, mark, Body};
use tilus::interp::{Fault, Options, Output};
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::InterpArgList;

/// Runs `body` on the interpreter and returns what it printed.
fn printed<A: InterpArgList + 'static>(
    body: fn(&mut Kernel, Handles<A>),
    args: tilus::InterpArgs<'_, A>,
) -> String {
    clear_marks();
    let opts = Options {
        output: Output::Capture,
        ..Default::default()
    };
    tilus::interpret_with(&Body::<A>(body), args, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .printed
}

/// A `[rows, cols]` tile of the view `g` (at the origin), copied by TMA into a shared tile and
/// from there into registers; the shared tile is named `s`, the register tile `x`.
fn load<T: Element>(
    k: &mut Kernel,
    g: &GlobalTensor<T>,
    rows: i32,
    cols: i32,
) -> (SharedTensor<T>, RegisterTensor<T>) {
    k.name_next("s");
    let s = k.shared_tensor::<T>([rows, cols]);
    let bar = k.mbarrier().alloc([1]);
    k.single_thread(|k| {
        k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
        k.tma().global_to_shared(g, &s, [0, 0], bar[0]);
    });
    k.mbarrier().wait(bar[0], 0u32);
    k.name_next("x");
    let x = k.load_shared(&s);
    (s, x)
}

#[test]
fn printf_prints_one_line_per_group_with_its_values() {
    let text = printed::<(i32, PtrMut<f32>)>(
        |k, (n, _)| {
            k.warps(4);
            k.printf("n = {}, n * 3 = {}, {{braces}} and 100%", (n, n * 3));
            k.printf("no values", ());
            let big = k.let_u32(4_000_000_000u32);
            k.for_range(0, 2, 1, |k, i| {
                k.printf("i = {}: i < 1 is {}, big {}", (i, i.lt(1), big))
            });
            k.single_warp(2, |k| k.printf("warp 2", ()));
            k.thread_group(64, 64, |k| k.printf("threads 64..128", ()));
        },
        (-7, &mut [0.0f32][..]),
    );
    assert_eq!(
        text,
        "n = -7, n * 3 = -21, {braces} and 100%\n\
         no values\n\
         i = 0: i < 1 is true, big 4000000000\n\
         i = 1: i < 1 is false, big 4000000000\n\
         warp 2\n\
         threads 64..128\n"
    );
}

/// Float scalars print with `%.6g`, the arguments (f32, f16, bf16) as they were passed and
/// expressions over them as the kernel computes them.
#[test]
fn printf_prints_float_scalars() {
    let text = printed::<(f32, f16, bf16, PtrMut<f32>)>(
        |k, (a, h, b, _)| {
            k.warps(1);
            let third = k.let_f32(a / 3.0);
            k.printf("a = {}, h = {}, b = {}, a/3 = {}", (a, h, b, third));
            k.printf("big {} tiny {} neg {}", (a * 1e30, a * 1e-30, -a));
        },
        (
            2.5f32,
            f16::from_f32(0.1),
            bf16::from_f32(-7.25),
            &mut [0.0f32][..],
        ),
    );
    assert_eq!(
        text,
        "a = 2.5, h = 0.0999756, b = -7.25, a/3 = 0.833333\n\
         big 2.5e+30 tiny 2.5e-30 neg -2.5\n"
    );
}

/// The values of the `[3, 4]` f32 tile the tile tests print: signs, fractions, magnitudes
/// that `%.6g` writes with an exponent, NaN, an infinity and a negative zero.
const VALUES: [f32; 12] = [
    1.0,
    -2.5,
    1.0 / 3.0,
    1234567.0,
    1e-7,
    f32::NAN,
    f32::NEG_INFINITY,
    -0.0,
    65504.0,
    0.1,
    100000.0,
    -3.75,
];

#[test]
fn print_tensor_shows_register_and_shared_tiles_row_major() {
    let text = printed::<(Ptr<f32>,)>(
        |k, (src,)| {
            k.warps(4);
            let g = k.global_view::<f32>(src, [3, 4]);
            let (s, x) = load(k, &g, 3, 4);
            k.print_tensor(&x);
            k.print_tensor(&x.transpose());
            k.print_tensor(&s);
        },
        // a Vec: its elements start on 16 bytes, as TMA needs of a source (a static array
        // need not)
        (&VALUES.to_vec()[..],),
    );
    let rows = "[[        1      -2.5  0.333333 1.23457e+06]\n \
                [    1e-07       nan      -inf        -0]\n \
                [    65504       0.1    100000     -3.75]]\n";
    let want = format!(
        "x: f32[3, 4], block (0, 0, 0)\n{rows}\
         x.T: f32[4, 3], block (0, 0, 0)\n\
         [[        1     1e-07     65504]\n \
         [     -2.5       nan       0.1]\n \
         [ 0.333333      -inf    100000]\n \
         [1.23457e+06        -0     -3.75]]\n\
         s: f32[3, 4], block (0, 0, 0)\n{rows}"
    );
    assert_eq!(text, want);
}

/// Values at a 16-byte aligned address, as TMA asks of a tile's source (a literal array has
/// its element's alignment only, wherever the compiler puts it).
#[repr(C, align(16))]
struct Aligned<T>(T);

#[test]
fn print_tensor_of_16_bit_floats_integers_and_booleans() {
    let floats = Aligned([0.1, 1.0 / 3.0, 65504.0, 70000.0, -1.5, 2.0, -0.0, 3e-5]);
    let ints = Aligned([0, -1, i32::MAX, i32::MIN, 7, 42, -100, 12345]);
    let text = printed::<(Ptr<f32>, Ptr<i32>)>(
        |k, (fsrc, isrc)| {
            k.warps(1);
            let g = k.global_view::<f32>(fsrc, [2, 4]);
            let (_, x) = load(k, &g, 2, 4);
            k.name_next("h");
            let h: RegisterTensor<f16> = k.cast(&x);
            k.print_tensor(&h);
            k.name_next("b");
            let b: RegisterTensor<bf16> = k.cast(&x);
            k.print_tensor(&b);
            let g = k.global_view::<i32>(isrc, [2, 4]);
            let (_, n) = load(k, &g, 2, 4);
            k.print_tensor(&n);
            k.name_next("positive");
            let p = k.compute(n.gt(0));
            k.print_tensor(&p);
        },
        (&floats.0[..], &ints.0[..]),
    );
    assert_eq!(
        text,
        "h: f16[2, 4], block (0, 0, 0)\n\
         [[0.0999756  0.333252     65504       inf]\n \
         [     -1.5         2        -0 2.99811e-05]]\n\
         b: bf16[2, 4], block (0, 0, 0)\n\
         [[ 0.100098  0.333984     65536     70144]\n \
         [     -1.5         2        -0 3.00407e-05]]\n\
         x_1: i32[2, 4], block (0, 0, 0)\n\
         [[     0     -1 2147483647 -2147483648]\n \
         [     7     42   -100  12345]]\n\
         positive: bool[2, 4], block (0, 0, 0)\n\
         [[false false  true false]\n \
         [ true  true false  true]]\n"
    );
}

#[test]
fn long_rows_continue_and_3d_tiles_separate_their_slices() {
    let text = printed::<(Ptr<f32>,)>(
        |k, (src,)| {
            k.warps(2);
            let g = k.global_view::<f32>(src, [2, 20]);
            let (_, x) = load(k, &g, 2, 20);
            k.print_tensor(&x);
            k.name_next("t");
            let t = k.register_tensor::<i32>([2, 2, 3], 5.0);
            k.print_tensor(&t);
        },
        (&(0..40).map(|i| i as f32).collect::<Vec<_>>()[..],),
    );
    let cols = |a: i32, b: i32| {
        (a..b)
            .map(|v| format!("{v:>9}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let want = format!(
        "x: f32[2, 20], block (0, 0, 0)\n\
         [[{}\n  {}]\n \
         [{}\n  {}]]\n\
         t: i32[2, 2, 3], block (0, 0, 0)\n\
         [[[     5      5      5]\n  \
         [     5      5      5]]\n\n \
         [[     5      5      5]\n  \
         [     5      5      5]]]\n",
        cols(0, 16),
        cols(16, 20),
        cols(20, 36),
        cols(36, 40)
    );
    assert_eq!(text, want);
}

/// Every block prints, block after block; a condition on the block index picks one.
#[test]
fn blocks_print_in_block_order_and_a_condition_picks_one() {
    let text = printed::<(PtrMut<f32>,)>(
        |k, _| {
            k.blocks([3]);
            k.warps(1);
            let b = k.block_idx().x;
            k.printf("block {}", (b.clone(),));
            k.name_next("t");
            let t = k.register_tensor::<i32>([1, 2], 3.0);
            k.if_(b.eq_(1), |k| k.print_tensor(&t));
        },
        (&mut [0.0f32][..],),
    );
    assert_eq!(
        text,
        "block 0\n\
         block 1\n\
         t: i32[1, 2], block (1, 0, 0)\n\
         [[     3      3]]\n\
         block 2\n"
    );
}

/// A shared tile printed while the TMA copy into it is in flight: the print reads the tile
/// before the wait, as any other read would.
#[test]
fn printing_a_tile_before_its_copy_lands_is_a_read_before_wait() {
    clear_marks();
    let r = tilus::interpret(
        &Body::<(Ptr<f32>,)>(|k, (src,)| {
            k.warps(1);
            let g = k.global_view::<f32>(src, [4, 4]);
            let s = k.shared_tensor::<f32>([4, 4]);
            let bar = k.mbarrier().alloc([1]);
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
                k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
            });
            mark("print", line!(), k.print_tensor(&s));
            k.mbarrier().wait(bar[0], 0u32);
        }),
        (&vec![0.0f32; 16][..],),
    );
    expect_fault(
        r,
        Fault::ReadBeforeWait,
        "print",
        &["print_tensor reads shared tensor"],
    );
}

/// The script the GPU test compares with the interpreter: block 1 alone prints, every tile
/// once, in program order, the line of warp 3 between its neighbours.
#[test]
fn the_printing_script_prints_block_1s_tiles_in_order() {
    clear_marks();
    let opts = Options {
        output: Output::Capture,
        ..Default::default()
    };
    let input = Printing::input();
    let text = tilus::interpret_with(&Printing, (5, &input[..]), &opts)
        .unwrap()
        .printed;
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with([' ', '[']) && !l.is_empty())
        .collect();
    assert_eq!(
        heads,
        [
            "printing {n = 5} in block 1: n > 3 is true, 100%",
            "n / 3 = 1.66667, -n / 3 = -1.66667",
            "s: f32[4, 20], block (1, 0, 0)",
            "s.T: f32[20, 4], block (1, 0, 0)",
            "x: f32[4, 20], block (1, 0, 0)",
            "warp 3 after x",
            "h.T: f16[20, 4], block (1, 0, 0)",
            "bf: bf16[4, 20], block (1, 0, 0)",
            "i: i32[4, 20], block (1, 0, 0)",
            "positive: bool[4, 20], block (1, 0, 0)",
            "sums: f32[4, 1], block (1, 0, 0)",
            "cube: i32[2, 2, 3], block (1, 0, 0)",
        ]
    );
}

/// One stage of a staged tile (`at`) prints as that stage: stage 1 of a `[3, 2, 4]` tile
/// whose stage `i` holds `i + 1`, beside the register tile loaded from the same stage.
#[test]
fn print_tensor_of_a_stage_shows_that_stage() {
    let text = printed::<(i32,)>(
        |k, (stage,)| {
            k.warps(1);
            k.name_next("s");
            let s = k.shared_tensor::<f32>([3, 2, 4]);
            k.for_range(0, 3, 1, |k, i| {
                let v = k.register_tensor::<f32>([2, 4], 0.0);
                let filled = k.compute(v + (i + 1));
                k.store_shared(&s.at(i), &filled);
            });
            k.sync();
            let i = k.let_i32(stage);
            k.print_tensor(&s.at(i));
            k.name_next("x");
            let x = k.load_shared(&s.at(i));
            k.print_tensor(&x);
        },
        (1,),
    );
    let row = "        2         2         2         2";
    let rows = format!("[[{row}]\n [{row}]]\n");
    let want =
        format!("s: f32[2, 4], block (0, 0, 0)\n{rows}x: f32[2, 4], block (0, 0, 0)\n{rows}");
    assert_eq!(text, want);
}
