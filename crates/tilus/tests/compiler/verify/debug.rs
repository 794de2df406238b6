//! Printing: one value per placeholder, integers only; register tiles printed by the whole
//! block, under conditions the whole block agrees on, with room for their scratch tile.

use super::OutF32;
use crate::common::{at, check, note};
use tilus::prelude::*;

#[test]
fn printf_with_more_values_than_placeholders() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let i = k.let_i32(3);
        at(line!(), k.printf("i = {}", (i, i)));
    })
    .fails_once("printf: the text has 1 placeholder (`{}`) but 2 values were given");
}

#[test]
fn printf_with_fewer_values_than_placeholders() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.printf("{} and {}", ()));
    })
    .fails_once("printf: the text has 2 placeholders (`{}`) but 0 values were given");

    // braces written twice are text, not placeholders
    check::<OutF32>(|k, _| {
        k.warps(1);
        k.printf("{{}} is not a placeholder", ());
    })
    .compiles("`{{}}` prints `{}`");
}

#[test]
fn printf_with_a_placeholder_it_does_not_support() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let i = k.let_i32(3);
        at(line!(), k.printf("i = {:x}", (i,)));
    })
    .fails_once("printf: only `{}` placeholders are supported");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.printf("a lone } brace", ()));
    })
    .fails_once("printf: an unmatched `}`");
}

#[test]
fn print_tensor_of_a_register_tile_inside_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.single_warp(1, |k| {
            let r = k.register_tensor::<f32>([4, 32], 1.0);
            at(line!(), k.print_tensor(&r));
        });
    })
    .fails_once("print_tensor must run in the whole block, outside thread groups");

    // a shared tile prints from the group's first thread, anywhere
    check::<OutF32>(|k, _| {
        k.warps(4);
        let s = k.shared_tensor::<f32>([4, 32]);
        k.single_warp(1, |k| k.print_tensor(&s));
    })
    .compiles("shared tiles print from one thread");
}

/// Threads that skip the condition would never reach the block barriers around the scratch.
#[test]
fn print_tensor_of_a_register_tile_under_a_divergent_condition() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let r = k.register_tensor::<f32>([4, 32], 1.0);
        let flag = k.var_i32(0);
        k.single_thread(|k| k.assign(flag, 1));
        #[rustfmt::skip]
        note(line!(), k.if_(flag.eq_(1), |k| {
            at(line!(), k.print_tensor(&r));
        }));
    })
    .fails_once_noting("print_tensor waits for every thread of the block, inside the if at");

    // a condition on the block index is the same in every thread: one block prints
    check::<OutF32>(|k, _| {
        k.blocks([4]);
        k.warps(4);
        let r = k.register_tensor::<f32>([4, 32], 1.0);
        let b = k.block_idx().x;
        k.if_(b.eq_(2), |k| k.print_tensor(&r));
    })
    .compiles("the block index is uniform");
}

#[test]
fn print_tensor_of_a_transposed_1d_tile() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let r = k.register_tensor::<f32>([32], 1.0);
        at(line!(), k.print_tensor(&r.transpose()));
    })
    .fails_once("print_tensor: `r0` has 1 dimension(s); transpose() needs at least 2");
}

/// The scratch tile of a register tile takes the tile's bytes in shared memory.
#[test]
fn print_tensor_of_a_register_tile_larger_than_shared_memory() {
    let d = check::<OutF32>(|k, _| {
        k.warps(32);
        k.name_next("big");
        let r = k.register_tensor::<f16>([256, 512], 1.0);
        at(line!(), k.print_tensor(&r));
    })
    .fails_once("more than the 232448 a block can have");
    assert!(d.message.contains("`big_print` 262144 B"), "{d}");
}

/// `assume` takes `x % c == 0` of integer arguments only: a local value, another form and a
/// divisor that says nothing are diagnostics at the call.
#[test]
fn assumptions_the_launch_cannot_check() {
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        let twice = k.let_i32(n * 2);
        at(line!(), k.assume((twice % 4).eq_(0)));
    })
    .fails_once("assume: `v0` is not an integer argument of the kernel");
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        at(line!(), k.assume(n.lt(100)));
    })
    .fails_once("assume: the condition must be `x % c == 0`");
    check::<(i32, PtrMut<f32>)>(|k, (n, _)| {
        k.warps(1);
        let one = std::hint::black_box(1);
        at(line!(), k.assume((n % one).eq_(0)));
    })
    .fails_once("assume: a multiple of 1 says nothing");
}
