//! Tiles seen with other shapes (`reshape`, `squeeze`, `unsqueeze`, `slice`): shapes that do
//! not agree (when the script is traced), layouts that cannot be seen with the new shape
//! without moving data between threads (once layouts are inferred), and results whose layout
//! was fixed otherwise.

use super::OutF32;
use crate::common::{at, check, note};
use half::f16;

#[test]
fn a_reshape_to_another_number_of_elements() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.reshape(&x, [3, 32]));
    })
    .fails_once("reshape: a [4, 32] tile has 128 elements, [3, 32] has 96");
}

#[test]
fn squeezing_a_dimension_that_is_not_1() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.squeeze(&x, 0));
    })
    .fails_once("squeeze: dimension 0 of a [4, 32] tile is 4, not 1");
}

#[test]
fn unsqueezing_past_the_last_dimension() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.unsqueeze(&x, 3));
    })
    .fails_once("unsqueeze: a tile of 2 dimension(s) takes a new dimension at 0..=2, not 3");
}

#[test]
fn a_slice_outside_the_dimension() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.slice(&x, 0, 3, 2));
    })
    .fails_once("slice: 3..5 is not a non-empty range inside 0..4 (dimension 0 of a [4, 32] tile)");
}

#[test]
fn a_slice_that_only_some_threads_hold() {
    // x is stored first, which gives it 4 consecutive columns per thread over 8 threads; the
    // range 0..16 is held by 4 of those threads; the message names the store that gave the
    // layout
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let g = k.global_view(o, [4, 32]);
        note(line!(), k.store_global(&g, &x, [0, 0]));
        let _ = at(line!(), k.slice(&x, 1, 0, 16));
    })
    .fails_once_noting(
        "which cannot be seen as [4, 16] without moving data between threads: dimension 1 is \
         spread over threads in a factor of 8; the range 0..16 would keep only some of those \
         threads; a slice keeps, in every thread, some of its own registers, so it needs every \
         thread to hold elements of 0..16: dimension 1 in each thread's local elements",
    );
}

#[test]
fn a_slice_gives_an_unconstrained_source_a_layout_it_can_keep() {
    // the default layout (threads along the 32 columns) cannot keep columns 8..24; nothing
    // else constrains x, so the slice gives it the columns in 4 blocks of 8 per thread
    let p = check::<OutF32>(|k, (o,)| {
        k.blocks([1]);
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let part = k.slice(&x, 1, 8, 16);
        let g = k.global_view(o, [4, 16]);
        k.store_global(&g, &part, [0, 0]);
    })
    .compiles("the slice chooses its source's layout");
    let l = p.registers[0].layout.as_ref().unwrap().to_string();
    assert_eq!(l, "layout([4, 32], threads=[d0:4, d1:8], locals=[d1:4])");
}

#[test]
fn a_slice_that_cuts_a_threads_elements_apart() {
    // 4 warps over [8, 32]: rows are 2 locals (4 rows apart) over 4 threads
    check::<OutF32>(|k, _| {
        k.warps(4);
        let x = k.register_tensor::<f32>([8, 32], 1.0);
        let _ = at(line!(), k.slice(&x, 0, 2, 4));
    })
    .fails_once("the range 2..6 of dimension 0 cuts a factor of 2 of its elements apart");
}

#[test]
fn a_reshape_that_cuts_a_factor_apart() {
    // 6 rows of locals over 32 threads: rows of 48 would cut the locals' stride of 32
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([6, 32], 1.0);
        let _ = at(line!(), k.reshape(&x, [4, 48]));
    })
    .fails_once("each thread's local elements run along dimension 0 of [6, 32] in a factor of 6");
}

#[test]
fn a_result_whose_layout_was_pinned_otherwise() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.slice(&x, 0, 0, 2));
    })
    .edit(|p| {
        p.registers[1].layout = Some(tilus::layout::RegisterLayout::spatial(&[2, 16]).compose(
            &tilus::layout::RegisterLayout::local(&[1, 2]),
        ))
    })
    .fails_once("register tensor `r1` needs layout layout([2, 32], threads=[d1:32], locals=[d0:2]) for slice here");
}

#[test]
fn an_edited_slice_whose_shapes_disagree() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let _ = at(line!(), k.slice(&x, 0, 0, 2));
    })
    .edit(|p| p.registers[1].shape = vec![2, 16])
    .fails("slice: a [4, 32] tile does not give the [2, 16] tile it defines");
}

#[test]
fn views_that_fit_their_layouts_compile() {
    check::<OutF32>(|k, (o,)| {
        k.blocks([1]);
        k.warps(4);
        let x = k.register_tensor::<f32>([8, 32], 1.0);
        let rows = k.slice(&x, 0, 4, 4);
        let flat = k.reshape(&rows, [128]);
        let g = k.global_view(o, [128]);
        k.store_global(&g, &flat, [0]);
    })
    .compiles("rows 4..8 are the second local of every thread");
}

#[test]
fn squeezing_the_only_dimension() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([1], 1.0);
        let _ = at(line!(), k.squeeze(&x, 0));
    })
    .fails_once("squeeze: a tile keeps at least one dimension");
}

#[test]
fn a_reshape_whose_result_a_dot_fixes_that_its_source_cannot_give() {
    // the mma accumulator of [16, 24] holds its three 8-column tiles in each thread's locals:
    // rows of 16 would cut that factor of 3; the message names the dot that fixed the layout
    check::<OutF32>(|k, _| {
        k.warps(1);
        let a = k.register_tensor::<f16>([16, 16], 1.0);
        let b = k.register_tensor::<f16>([16, 24], 1.0);
        let x = k.register_tensor::<f32>([24, 16], 0.0);
        let c = at(line!(), k.reshape(&x, [16, 24]));
        let d = k.register_tensor::<f32>([16, 24], None::<f64>);
        note(line!(), k.dot(&a, &b, &c, &d));
    })
    .fails_once_noting(
        "reshape: `r3` needs layout layout([16, 24], threads=[d0:8, d1:4], locals=[d1:3, d0:2, \
         d1:2]) (from dot accumulator c at ",
    );
}

/// A conversion whose threads exchange elements meets in shared memory behind block
/// barriers: in a thread group it is refused.
#[test]
fn a_conversion_through_shared_memory_in_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        k.warp_group(4, |k| {
            let a = k.register_tensor::<f16>([64, 16], 0.0);
            let b = k.register_tensor::<f16>([16, 64], 0.0);
            let c = k.register_tensor::<f32>([64, 64], 0.0);
            let t = k.compute(a + 1.0);
            let t2 = at(line!(), k.convert_layout(&t));
            k.dot(&t2, &b, &c, &c);
        });
    })
    .fails_once("convert_layout: the threads of");
}

/// `annotate_layout` with another shape, or with more threads than the group has.
#[test]
fn an_annotated_layout_of_another_shape_or_too_many_threads() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 32], 1.0);
        let l = tilus::layout::RegisterLayout::spatial(&[32, 1])
            .compose(&tilus::layout::RegisterLayout::local(&[1, 4]));
        at(line!(), k.annotate_layout(&x, l));
    })
    .fails_once("annotate_layout: a layout of shape [32, 4] for `r0`, a [4, 32] tile");
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([64, 4], 1.0);
        let l = tilus::layout::RegisterLayout::spatial(&[64, 1])
            .compose(&tilus::layout::RegisterLayout::local(&[1, 4]));
        at(line!(), k.annotate_layout(&x, l));
    })
    .fails_once("does not spread `r0` over its 32 threads");
}

/// A tile annotated one way and used as a `dot` operand, which needs another: the
/// conflict names the annotation.
#[test]
fn an_annotated_layout_that_a_dot_cannot_use() {
    check::<OutF32>(|k, _| {
        k.warps(2);
        k.thread_group(0, 32, |k| {
            let a = k.register_tensor::<f16>([16, 16], 0.0);
            let b = k.register_tensor::<f16>([16, 8], 0.0);
            let c = k.register_tensor::<f32>([16, 8], 0.0);
            let rows = tilus::layout::RegisterLayout::spatial(&[16, 2])
                .compose(&tilus::layout::RegisterLayout::local(&[1, 8]));
            note(line!(), k.annotate_layout(&a, rows));
            at(line!(), k.dot(&a, &b, &c, &c));
        });
    })
    .fails_once_noting("but annotate_layout at");
}

/// The same annotation in the whole block: the dot gets a converted copy.
#[test]
fn an_annotated_layout_reaches_a_dot_through_a_conversion() {
    let p = check::<OutF32>(|k, _| {
        k.warps(1);
        let a = k.register_tensor::<f16>([16, 16], 0.0);
        let b = k.register_tensor::<f16>([16, 8], 0.0);
        let c = k.register_tensor::<f32>([16, 8], 0.0);
        let rows = tilus::layout::RegisterLayout::spatial(&[16, 2])
            .compose(&tilus::layout::RegisterLayout::local(&[1, 8]));
        k.annotate_layout(&a, rows);
        k.dot(&a, &b, &c, &c);
    })
    .compiles("the dot's operand is converted");
    let ir = tilus::ir::print_program(&p);
    assert!(ir.contains("convert_layout(r0)"), "{ir}");
}

#[test]
fn unpacking_elements_whose_width_does_not_divide_the_words() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let w = k.register_tensor::<u32>([4, 32], 0.0);
        let _ = at(line!(), k.unpack::<tilus::lowp::Int<3>>(&w));
    })
    .fails_once("unpack: i3 elements from u32 words; unpack takes words of u8, i8, u32 or i32");
}

#[test]
fn unpacking_floats_or_into_a_word_type() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let w = k.register_tensor::<f32>([4, 32], 0.0);
        let _ = at(line!(), k.unpack::<tilus::lowp::I4>(&w));
    })
    .fails_once("unpack: i4 elements from f32 words");
    check::<OutF32>(|k, _| {
        k.warps(1);
        let w = k.register_tensor::<u32>([4, 32], 0.0);
        let _ = at(line!(), k.unpack::<i32>(&w));
    })
    .fails_once("unpack: i32 elements from u32 words");
}

#[test]
fn packing_into_words_a_thread_cannot_fill() {
    // 1024 two-bit elements over 128 threads: 8 each, half a u32 word
    check::<OutF32>(|k, _| {
        k.warps(4);
        let x = k.register_tensor::<f32>([16, 64], 0.0);
        let c = k.cast::<tilus::lowp::U2>(&x);
        let _ = at(line!(), k.pack::<u32>(&c));
    })
    .fails_once("each thread must hold its elements of the innermost dimension 16 at a time");
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([4, 64], 0.0);
        let _ = at(line!(), k.pack::<u32>(&x));
    })
    .fails_once("pack: f32 elements into u32 words");
}

/// A packed global view whose rows are not whole bytes, and a tile whose threads would share
/// bytes: the verifier names the width the threads need.
#[test]
fn packed_accesses_that_would_split_bytes() {
    check::<(tilus::lang::Ptr<u8>,)>(|k, (w,)| {
        k.warps(1);
        let g = k.global_view_packed_strided::<tilus::lowp::I4>(w, [4, 63], (63, 1));
        let _ = at(line!(), k.load_global(&g, [0, 0], [4, 64]));
    })
    .fails_once("load_global: i4 elements are packed (4 bits each), so each thread must move whole bytes: at least 2 consecutive elements");
    check::<(tilus::lang::Ptr<u8>,)>(|k, (w,)| {
        k.warps(1);
        let _ = at(line!(), k.global_view_packed::<f32>(w, [4, 64]));
    })
    .fails_once("global_view_packed<f32>: not a low-precision type");
}

/// Shared tiles of elements narrower than a byte are refused with a message, even where an
/// instruction that counts bytes (a TMA copy) uses them: no panic, one diagnostic.
#[test]
fn a_shared_tile_of_packed_elements_is_refused_with_a_message() {
    check::<(tilus::lang::Ptr<u8>,)>(|k, (w,)| {
        k.warps(1);
        let g = k.global_view_packed::<tilus::lowp::I4>(w, [64, 128]);
        let s = at(line!(), k.shared_tensor::<tilus::lowp::I4>([64, 128]));
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], 4096);
            k.tma().global_to_shared(&g, &s, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
    })
    .fails(
        "shared_tensor<i4>: shared tiles of elements narrower than a byte are not supported yet",
    );
}

#[test]
fn a_relabelling_whose_layouts_give_threads_other_numbers_of_registers() {
    use tilus::layout::RegisterLayout;
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([32, 4], 1.0);
        let rows = RegisterLayout::spatial(&[32, 1]).compose(&RegisterLayout::local(&[1, 4]));
        let half = RegisterLayout::spatial(&[1, 16]).compose(&RegisterLayout::local(&[8, 1]));
        let _ = at(line!(), k.relabel(&x, rows, half));
    })
    .fails_once("relabel: layout([32, 4], threads=[d0:32], locals=[d1:4]) and layout([8, 16], threads=[d1:16], locals=[d0:8]) must give the same threads (at most the tile's 32) the same number of registers (32 and 16 threads, 4 and 8 registers each)");
}

#[test]
fn a_relabelling_whose_source_layout_is_not_its_tiles() {
    use tilus::layout::RegisterLayout;
    check::<OutF32>(|k, _| {
        k.warps(1);
        let x = k.register_tensor::<f32>([32, 4], 1.0);
        // a layout of 32 threads and 4 registers each, but of a [16, 8] tile
        let other = RegisterLayout::spatial(&[16, 2]).compose(&RegisterLayout::local(&[1, 4]));
        let to = RegisterLayout::spatial(&[1, 32]).compose(&RegisterLayout::local(&[4, 1]));
        let _ = at(line!(), k.relabel(&x, other, to));
    })
    .fails_once("relabel: a [32, 4] tile does not give the [4, 32] tile it defines");
}

#[test]
fn a_relabelled_tile_compiles() {
    use tilus::layout::RegisterLayout;
    check::<OutF32>(|k, (o,)| {
        k.blocks([1]);
        k.warps(1);
        let x = k.register_tensor::<f32>([32, 4], 1.0);
        let rows = RegisterLayout::spatial(&[32, 1]).compose(&RegisterLayout::local(&[1, 4]));
        let cols = RegisterLayout::spatial(&[1, 32]).compose(&RegisterLayout::local(&[4, 1]));
        let y = k.relabel(&x, rows, cols);
        let g = k.global_view(o, [4, 32]);
        k.store_global(&g, &y, [0, 0]);
    })
    .compiles("a row per thread seen as a column per thread");
}
