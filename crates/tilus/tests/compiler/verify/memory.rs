//! Global views, shared and register tiles, `free_shared`, loads and stores.

use super::{tma_setup, InF16, OutF32};
use crate::common::scripts::{self, OnesTimesB};
use crate::common::{at, build, check, note};
use tilus::ir::DType;
use tilus::prelude::*;
use tilus::Error;

#[test]
fn tile_dimensions_that_are_not_positive() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let _: SharedTensor<f16> = at(line!(), k.shared_tensor([0, 16]));
    })
    .fails_once("shared_tensor: every dimension must be positive, got [0, 16]");

    check::<OutF32>(|k, _| {
        k.warps(1);
        let _: RegisterTensor<f32> = at(line!(), k.register_tensor([8, -1], None::<f64>));
    })
    .fails_once("register_tensor: every dimension must be positive, got [8, -1]");
}

#[test]
fn register_tensor_without_dimensions() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let _: RegisterTensor<f32> = at(line!(), k.register_tensor([], None::<f64>));
    })
    .fails_once("register_tensor: a tile needs at least one dimension");
}

/// `register_tensor` rejects a shape without dimensions; `shared_tensor` accepts it, and only
/// a later use of the tile fails.
#[test]
fn shared_tensor_without_dimensions() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let _: SharedTensor<f32> = at(line!(), k.shared_tensor([0i32; 0]));
    })
    .fails_once("shared_tensor: a tile needs at least one dimension");
}

#[test]
fn global_view_rank() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view(o, [0i32; 0]));
    })
    .fails_once("global_view needs 1 to 5 dimensions, got 0");

    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view(o, [2; 6]));
    })
    .fails_once("global_view needs 1 to 5 dimensions, got 6");
}

#[test]
fn global_view_extent_that_is_not_positive() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view(o, [16, 0]));
    })
    .fails_once("global_view: dimension 1 is 0; it must be positive");

    check::<(Const<i32>, PtrMut<f32>)>(|k, (n, o)| {
        k.warps(1);
        at(line!(), k.global_view(o, [n]));
    })
    .consts(&[-5])
    .fails_once("global_view: dimension 0 is -5; it must be positive");
}

/// `global_view<T>` takes a `PtrVal<T>`, so the builder cannot mismatch them; edit the IR.
#[test]
fn global_view_of_another_element_type() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view(o, [32]));
    })
    .edit(|p| p.globals[0].dtype = DType::F16)
    .fails_once("global_view<f16> over a pointer to");
}

#[test]
fn shared_tensor_inside_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        k.single_warp(0, |k| {
            let _: SharedTensor<f16> = at(line!(), k.shared_tensor([16, 16]));
        });
    })
    .fails_once("shared_tensor must run in the whole block, outside thread groups");
}

#[test]
fn use_after_free_shared() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        note(line!(), k.free_shared(&s));
        at(line!(), k.load_shared(&s));
    })
    .fails_once_noting("load_shared uses shared tensor `s0` after free_shared at");

    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let (g, s, b) = tma_setup(k, a);
        note(line!(), k.free_shared(&s));
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once_noting("tma.global_to_shared uses shared tensor `s0` after free_shared");
}

#[test]
fn double_free_shared() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        note(line!(), k.free_shared(&s));
        at(line!(), k.free_shared(&s));
    })
    .fails_once_noting("free_shared(`s0`): already freed at");
}

#[test]
fn free_shared_in_another_loop_than_the_allocation() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        k.for_range(0, 4, 1, |k, _| {
            at(line!(), k.free_shared(&s));
        });
    })
    .fails_once("free_shared(`s0`) must be in the same loop as its allocation");

    let d = check::<OutF32>(|k, _| {
        k.warps(1);
        let mut s: Option<SharedTensor<f32>> = None;
        k.for_range(0, 4, 1, |k, _| {
            s = Some(k.shared_tensor([16, 16]));
        });
        at(line!(), k.free_shared(&s.unwrap()));
    })
    // the tile also no longer exists after its loop: both rules speak
    .diagnostics();
    d.find("must be in the same loop as its allocation");
    d.find("is used outside the loop or thread group that declares it");
}

/// Two sibling loops have the same depth, but a tile allocated in one and freed in the other
/// is freed on every iteration of the second.
#[test]
fn free_shared_in_a_sibling_loop() {
    let d = check::<OutF32>(|k, _| {
        k.warps(1);
        let mut s: Option<SharedTensor<f32>> = None;
        k.for_range(0, 4, 1, |k, _| {
            s = Some(k.shared_tensor([16, 16]));
        });
        let s = s.unwrap();
        k.for_range(0, 4, 1, |k, _| {
            at(line!(), k.free_shared(&s));
        });
    })
    .diagnostics();
    d.find("must be in the same loop as its allocation");
    d.find("is used outside the loop or thread group that declares it");
}

#[test]
fn free_shared_inside_a_thread_group() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let s: SharedTensor<f32> = k.shared_tensor([16, 16]);
        k.single_warp(0, |k| {
            at(line!(), k.free_shared(&s));
        });
    })
    .fails_once("free_shared must run in the whole block, outside thread groups");
}

/// `load_shared` returns a tile of the shared tile's type; edit the IR.
#[test]
fn load_shared_into_another_element_type() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s: SharedTensor<f16> = k.shared_tensor([16, 16]);
        at(line!(), k.load_shared(&s));
    })
    .edit(|p| p.registers[0].dtype = DType::F32)
    .fails_once("load_shared: f16 tile into a f32 register tensor");
}

#[test]
fn store_global_through_a_read_only_pointer() {
    check::<(Ptr<f32>,)>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        at(line!(), k.store_global(&g, &r, [0]));
    })
    .fails_once("store_global writes through `arg0`, a read-only Ptr; declare it PtrMut");
}

/// `store_global<T>` takes a view and a tile of the same `T`; edit the IR.
#[test]
fn store_global_of_another_element_type() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        at(line!(), k.store_global(&g, &r, [0]));
    })
    .edit(|p| p.registers[0].dtype = DType::F16)
    .fails_once("store_global: a f16 tile into a f32 view; cast it first");
}

#[test]
fn store_global_rank_mismatch() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32, 32]);
        at(line!(), k.store_global(&g, &r, [0, 0]));
    })
    .fails_once("store_global: view `g0` has 2 dimensions, the tile 1 and the offsets 2");

    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([8, 32], 1.0);
        let g = k.global_view(o, [32, 32]);
        at(line!(), k.store_global(&g, &r, [0]));
    })
    .fails_once("the tile 2 and the offsets 1");
}

#[test]
fn register_tensor_used_in_another_thread_group() {
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
        let g = k.global_view(o, [32, 32]);
        k.single_warp(1, |k| {
            at(line!(), k.store_global(&g, &r, [0, 0]));
        });
    })
    .fails_once(
        "store_global: register tensor `r0` belongs to a group of 128 threads but is used in a \
         group of 32",
    );

    // declared inside a group, used outside it
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let mut r: Option<RegisterTensor<f32>> = None;
        k.single_warp(0, |k| r = Some(k.register_tensor([32], 1.0)));
        let g = k.global_view(o, [32]);
        at(line!(), k.store_global(&g, &r.unwrap(), [0]));
    })
    .fails("belongs to a group of 32 threads but is used in a group of 128");

    check::<OutF32>(|k, _| {
        k.warps(4);
        let r: RegisterTensor<f32> = k.register_tensor([32, 32], 1.0);
        k.warp_group(0, |k| {
            k.single_warp(2, |k| {
                let _: RegisterTensor<f16> = at(line!(), k.cast(&r));
            });
        });
    })
    .fails_once("cast: register tensor `r0` belongs to a group of 128 threads");
}

#[test]
fn store_shared_shape_and_dtype_mismatch() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([32, 8]);
        let t: RegisterTensor<f32> = k.register_tensor([32, 4], 1.0);
        at(line!(), k.store_shared(&s, &t));
    })
    .fails_once("store_shared: the register tile is [32, 4], the shared tile [32, 8]");
}

// ------------------------------------------------------------------------------------------
// The proxy fence: ordinary shared-memory stores must be published to the async proxy
// (`fence_proxy_async`) before a wgmma reads them.
// ------------------------------------------------------------------------------------------

#[test]
fn a_wgmma_reading_unfenced_stores_is_a_diagnostic() {
    let p = tilus::trace(&OnesTimesB { fence: 0 }, &[]).unwrap();
    let Err(Error::Script(d)) = tilus::passes::compile_program(p) else {
        panic!("expected a diagnostic")
    };
    assert!(
        d[0].message.contains("written by store_shared at")
            && d[0].message.contains("fence_proxy_async"),
        "{d:?}"
    );
    assert!(d[0].loc.file == scripts::FILE);
    let p = tilus::trace(&OnesTimesB { fence: 1 }, &[]).unwrap();
    assert!(tilus::passes::compile_program(p).is_ok());
    let c = build(&OnesTimesB { fence: 1 }, &[]);
    assert!(
        c.source.contains("fence.proxy.async.shared::cta") && c.source.contains("st.shared.u16")
    );
}

#[test]
fn allocating_a_tile_is_not_an_ordinary_store() {
    // a wgmma (async proxy) reading a tile nothing wrote with ordinary stores needs no fence;
    // found by the fuzzer: the allocation itself was taken for a write
    let p = check::<InF16>(|k, (a,)| {
        k.warps(4);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        let _ = a;
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
    })
    .compiles("nothing was stored into the tiles");
    assert!(!p.shareds.is_empty());
}

// ------------------------------------------------------------------------------------------
// Stages of staged tiles (`sa.at(s)`).
// ------------------------------------------------------------------------------------------

#[test]
fn a_constant_stage_outside_the_stages() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let sa = k.shared_tensor::<f32>([2, 8, 32]);
        let _ = at(line!(), k.load_shared(&sa.at(2)));
    })
    .fails_once("load_shared: stage 2 of `s0`, which has 2 stages (its leading dimension)");
}

#[test]
fn a_stage_of_a_tile_without_another_dimension() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([4]);
        let _ = at(line!(), k.load_shared(&s.at(0)));
    })
    .fails_once("load_shared: `s0` has 1 dimension(s); at() takes one stage of the leading");
}

#[test]
fn a_stage_of_a_stage() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 2, 8, 32]);
        let _ = at(line!(), k.load_shared(&s.at(0).at(1)));
    })
    .fails_once("load_shared: at() of a stage: a view indexes the leading dimension once");
}

// Rows of tiles and stages (`s.at(i).rows(start, len)`).

#[test]
fn rows_past_the_end_of_a_stage() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let _ = at(line!(), k.load_shared(&s.at(0).rows(8, 16)));
    })
    .fails_once("load_shared: rows 8 .. 24 of `s0`, which has 16 rows");
}

#[test]
fn rows_that_start_inside_a_swizzle_pattern() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        // rows of 128 bytes: row 4 starts 512 bytes in, in the middle of a 1024-byte pattern
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let _ = at(line!(), k.load_shared(&s.at(1).rows(4, 8)));
    })
    .fails_once("load_shared: rows of `s0` from row 4 start 512 bytes into the tile, not a multiple of 1024");
}

#[test]
fn rows_of_a_tile_with_three_dimensions() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let _ = at(line!(), k.load_shared(&s.rows(0, 1)));
    })
    .fails_once("load_shared: rows() takes rows of a two-dimensional tile or stage; `s0` has 3");
}

#[test]
fn rows_of_rows_and_rows_of_a_transposed_view() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let _ = at(line!(), k.load_shared(&s.at(0).rows(0, 16).rows(0, 8)));
    })
    .fails_once("load_shared: rows() of rows: a view takes rows once");
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let r = k.register_tensor::<f32>([8, 16], 1.0);
        at(line!(), k.store_shared(&s.at(0).transpose().rows(0, 8), &r));
    })
    .fails("rows() of a transposed view: take the rows first, then transpose()");
}

#[test]
fn rows_that_start_with_the_swizzle_pattern_pass() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let r = k.register_tensor::<f32>([8, 32], 1.0);
        k.store_shared(&s.at(1).rows(8, 8), &r);
    })
    .compiles("rows 8 .. 16 of a stage of 128-byte rows start 1024 bytes in");
}

#[test]
fn freeing_one_stage() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 8, 32]);
        at(line!(), k.free_shared(&s.at(1)));
    })
    .fails_once("free_shared takes the shared tile itself, not one stage of it");
}

#[test]
fn storing_a_tile_into_a_stage_of_another_shape() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 16, 32]);
        let r = k.register_tensor::<f32>([8, 32], 1.0);
        let i = k.let_i32(1);
        at(line!(), k.store_shared(&s.at(i), &r));
    })
    .fails_once("store_shared: the register tile is [8, 32], the shared tile [16, 32]");
}

#[test]
fn a_stage_index_that_is_not_an_integer() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let s = k.shared_tensor::<f32>([2, 8, 32]);
        let _ = at(line!(), k.load_shared(&s.at(0)));
    })
    .edit(|p| {
        for st in &mut p.body {
            if let tilus::ir::StmtKind::Inst(tilus::ir::Inst::Memory(
                tilus::ir::MemoryInst::LoadShared { src, .. },
            )) = &mut st.kind
            {
                src.stage = Some(tilus::ir::Expr::Float(1f64.to_bits(), DType::F32));
            }
        }
    })
    .fails_once("a f32 scalar where an integer is needed (an offset, index or count)");
}

#[test]
fn stages_read_and_written_by_a_runtime_index_compile() {
    check::<OutF32>(|k, (o,)| {
        k.blocks([1]);
        k.warps(1);
        let s = k.shared_tensor::<f32>([3, 8, 32]);
        let g = k.global_view(o, [8, 32]);
        k.for_range(0, 3, 1, |k, i| {
            let r = k.register_tensor::<f32>([8, 32], 1.0);
            k.store_shared(&s.at(i), &r);
            let back = k.load_shared(&s.at(i));
            k.store_global(&g, &back, [0, 0]);
        });
    })
    .compiles("a loop over the stages of a tile");
}

// ------------------------------------------------------------------------------------------
// Global memory through registers: strided views, `load_global`, atomics.
// ------------------------------------------------------------------------------------------

#[test]
fn global_view_strided_needs_a_stride_per_dimension() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view_strided(o, [16, 16], [16]));
    })
    .fails_once("global_view_strided: 2 extents but 1 strides; give one stride per dimension");
}

#[test]
fn global_view_strided_with_a_negative_stride() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        at(line!(), k.global_view_strided(o, [16, 16], (-16, 1)));
    })
    .fails_once("global_view_strided: stride 0 is -16; strides must not be negative");
}

#[test]
fn load_global_rank_mismatch() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [64, 64]);
        let _: RegisterTensor<f16> = at(line!(), k.load_global(&g, [0, 0], [64]));
    })
    .fails_once("load_global: view `g0` has 2 dimensions, the tile 1 and the offsets 2");
}

/// `load_global<T>` returns a tile of the view's `T`; edit the IR.
#[test]
fn load_global_into_another_element_type() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [64, 64]);
        let _: RegisterTensor<f16> = at(line!(), k.load_global(&g, [0, 0], [16, 16]));
    })
    .edit(|p| p.registers[0].dtype = DType::F32)
    .fails_once("load_global: a f16 view into a f32 register tensor");
}

#[test]
fn load_global_tile_dimensions_that_are_not_positive() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [64, 64]);
        let _: RegisterTensor<f16> = at(line!(), k.load_global(&g, [0, 0], [16, 0]));
    })
    .fails_once("load_global: every dimension must be positive, got [16, 0]");
}

/// The box's last index is 32-bit arithmetic of the generated code, checked like a store's.
#[test]
fn load_global_offsets_past_32_bits() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [64, 64]);
        let _: RegisterTensor<f16> = at(line!(), k.load_global(&g, [0, i32::MAX - 8], [16, 16]));
    })
    .fails("the last index `2147483639` + 15 in dimension 1 of `g0` reaches 2147483654");
}

#[test]
fn atomics_through_a_read_only_pointer() {
    check::<(Ptr<f32>,)>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        at(line!(), k.atomic_add(&g, &r, [0]));
    })
    .fails_once("atomic_add writes through `arg0`, a read-only Ptr; declare it PtrMut");

    check::<(Ptr<i32>,)>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [32]);
        k.single_thread(|k| {
            at(line!(), k.atomic_cas_scalar(&g, [0], 0, 1));
        });
    })
    .fails_once("atomic_cas_scalar writes through `arg0`, a read-only Ptr; declare it PtrMut");
}

#[test]
fn atomics_on_unsupported_element_types() {
    check::<(PtrMut<f16>,)>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f16> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        at(line!(), k.atomic_max(&g, &r, [0]));
    })
    .fails_once(
        "atomic_max on a f16 view is not supported: it takes f32, i32, u32; atomics on 16-bit \
         floats only add (cast to f32 for the others)",
    );

    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [32]);
        k.single_thread(|k| {
            at(line!(), k.atomic_add_scalar(&g, [0], 1));
        });
    })
    .fails_once(
        "atomic_add_scalar on a f32 view is not supported: it takes i32, u32; use the tile form \
         for other types",
    );
}

#[test]
fn atomic_rank_and_shape_mismatches() {
    check::<OutF32>(|k, (o,)| {
        k.warps(1);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32, 32]);
        at(line!(), k.atomic_add(&g, &r, [0, 0]));
    })
    .fails_once("atomic_add: view `g0` has 2 dimensions, the tile 1 and the offsets 2");

    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let v: RegisterTensor<f32> = k.register_tensor([16, 32], 1.0);
        let c: RegisterTensor<f32> = k.register_tensor([32, 16], 1.0);
        let g = k.global_view(o, [32, 32]);
        let _ = at(line!(), k.atomic_cas(&g, &c, &v, [0, 0]));
    })
    .fails("atomic_cas: the compared tile is f32 [32, 16], the values f32 [16, 32]");

    check::<(PtrMut<i32>,)>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [32, 32]);
        k.single_thread(|k| {
            at(line!(), k.atomic_exchange_scalar(&g, [0], 1));
        });
    })
    .fails_once("atomic_exchange_scalar: view `g0` has 2 dimensions, the index 1");
}

/// Old values reach the thread that updated the element; a tile whose layout gives an element
/// to several threads would leave the other copies without them.
#[test]
fn atomic_exchange_of_a_replicated_tile() {
    check::<OutF32>(|k, (o,)| {
        k.warps(4);
        let r: RegisterTensor<f32> = k.register_tensor([32], 1.0);
        let g = k.global_view(o, [32]);
        let _ = at(line!(), k.atomic_exchange(&g, &r, [0]));
    })
    .fails_once(
        "atomic_exchange: the layout of `r0` (layout([32], threads=[rep:4, d0:32], locals=[])) \
         gives some elements to several of the group's 128 threads",
    );
}

#[test]
fn scalar_atomics_run_on_one_thread() {
    check::<(PtrMut<u32>,)>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [4]);
        at(line!(), k.atomic_add_scalar(&g, [0], 1u32));
    })
    .fails_once(
        "atomic_add_scalar runs in a group of 32 threads: each of them would issue its own; wrap \
         it in single_thread()",
    );
}

#[test]
fn a_scalar_read_of_a_16_bit_view() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4]);
        at(line!(), k.load_global_scalar(&g, [0]));
    })
    .fails_once(
        "load_global_scalar on a f16 view is not supported: it takes i32, u32 and f32 views \
         (load a tile with `load_global` for other types)",
    );
}

#[test]
fn a_scalar_read_with_too_few_coordinates() {
    check::<(Ptr<i32>,)>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view(a, [4, 4]);
        at(line!(), k.load_global_scalar(&g, [1]));
    })
    .fails_once("load_global_scalar: view `g0` has 2 dimensions, the index 1");
}

/// The old value of a scalar atomic is a variable of the thread group that ran it.
#[test]
fn the_old_value_of_a_scalar_atomic_outside_its_group() {
    check::<(PtrMut<i32>,)>(|k, (o,)| {
        k.warps(1);
        let g = k.global_view(o, [4]);
        let mut old = None;
        k.single_thread(|k| old = Some(note(line!(), k.atomic_add_scalar(&g, [0], 1))));
        at(line!(), k.let_i32(old.unwrap() + 1));
    })
    .fails_once_noting("`old0` is used outside the loop or thread group that declares it");
}

#[test]
fn tma_through_a_view_that_is_not_contiguous_innermost() {
    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view_strided(a, [64, 64], (1, 64));
        let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails(
        "tma.global_to_shared: view `g0` has an innermost stride of 64; TMA needs the innermost \
         dimension contiguous (stride 1)",
    );

    check::<InF16>(|k, (a,)| {
        k.warps(1);
        let g = k.global_view_strided(a, [64, 64], (68, 1));
        let s: SharedTensor<f16> = k.shared_tensor([64, 64]);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.tma().global_to_shared(&g, &s, [0, 0], b[0]));
        });
    })
    .fails_once("tma.global_to_shared: view `g0` has a stride of 136 bytes in dimension 0");
}

#[test]
fn load_global_and_atomics_compile() {
    check::<(i32, Ptr<f32>, PtrMut<f32>)>(|k, (m, a, o)| {
        k.warps(4);
        let g = k.global_view_strided(a, [m, Val::constant(64)], (m, 1));
        let t = k.load_global(&g, [0, 0], [32, 64]);
        let out = k.global_view(o, [m, Val::constant(64)]);
        k.atomic_add(&out, &t, [0, 0]);
        let _ = k.atomic_exchange(&out, &t, [0, 0]);
    })
    .compiles("a strided load and two atomics");
}

/// A scatter takes one `i32` coordinate per dimension of the view, and stores 32-bit elements.
#[test]
fn scatters_with_the_wrong_coordinates() {
    check::<(PtrMut<f32>,)>(|k, (out,)| {
        k.warps(1);
        let g = k.global_view(out, [64, 64]);
        let t = k.register_tensor::<f32>([32], 1.0);
        let i = k.arange([32], 0);
        at(line!(), k.store_global_at(&g, &t, (i,)));
    })
    .fails_once("store_global_at: 1 index tile(s) for a view of 2 dimension(s)");
    check::<(PtrMut<f16>,)>(|k, (out,)| {
        k.warps(1);
        let g = k.global_view(out, [64]);
        let t = k.register_tensor::<f16>([32], 1.0);
        let i = k.arange([32], 0);
        at(line!(), k.store_global_at(&g, &t, (i,)));
    })
    .fails_once("store_global_at: f16 elements; scatters store 32-bit elements");
}
