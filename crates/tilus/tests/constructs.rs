//! Constructs beyond the v0 matmul, compiled with NVRTC (CPU) and run on the GPU (ignored
//! without one): TMA of f32 tiles without swizzle, the generic shared-to-register load, f32
//! stores, runtime loop bounds, nested thread groups with register tiles of their own, plain
//! arrivals counted by a barrier.

use tilus::cudarc::driver::CudaSlice;
use tilus::prelude::*;
use tilus::runtime::Device;

/// Copies an `[m, n]` f32 matrix through shared memory and registers, one tile per block.
#[derive(Clone, Debug, Hash)]
struct TileCopy {
    rows: i32,
    cols: i32,
}

impl Script for TileCopy {
    type Args = (i32, i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let g = k.global_view::<f32>(src, [m, n]);
        let s = k.shared_tensor::<f32>([self.rows, self.cols]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [om, on], bar[0]);
        });
        // every thread may wait on the phase itself
        k.mbarrier().wait(bar[0], 0u32);
        let r = k.load_shared(&s);
        let out = k.global_view::<f32>(dst, [m, n]);
        k.store_global(&out, &r, [om, on]);
    }
}

/// Nested thread groups: warp group 0 and warp group 1 each fill their own register tile and
/// store it to their own rows; inside, one warp and one thread arrive on a barrier whose count
/// is the number of arrivals, and the whole block waits for the phase.
#[derive(Clone, Debug, Hash)]
struct Groups;

impl Script for Groups {
    type Args = (PtrMut<f32>,);
    fn body(&self, k: &mut Kernel, (out,): Handles<Self::Args>) {
        k.warps(8);
        let g = k.global_view::<f32>(out, [2, 256]);
        // 32 arrivals from a warp of group 0 + 1 from a single thread of group 1
        let bar = k.mbarrier().alloc([33]);
        for wg in 0..2u32 {
            k.warp_group(4 * wg, |k| {
                let t = k.register_tensor::<f32>([1, 256], (wg + 1) as f64);
                k.store_global(&g, &t, [wg as i32, 0]);
                if wg == 0 {
                    k.single_warp(2, |k| k.mbarrier().arrive(bar[0]));
                } else {
                    k.thread_group(64, 32, |k| k.single_thread(|k| k.mbarrier().arrive(bar[0])));
                }
            });
        }
        k.mbarrier().wait(bar[0], 0u32);
    }
}

#[test]
fn tile_copy_compiles_with_the_generic_load_and_each_swizzle() {
    let src = tilus::emit(&TileCopy { rows: 16, cols: 32 }, &[]).unwrap();
    assert!(
        src.contains("tilus_ld_shared_u32("),
        "f32 tiles use the generic shared load"
    );
    assert!(
        !src.contains("ldmatrix.sync"),
        "ldmatrix is for 16-bit tiles"
    );
    assert!(
        src.contains("tilus_swizzle("),
        "128-byte rows take the 128B swizzle"
    );
    let wide = tilus::emit(&TileCopy { rows: 8, cols: 48 }, &[]).unwrap();
    assert!(
        !wide.contains("tilus_swizzle("),
        "192-byte rows are wider than any swizzle span"
    );
    for (rows, cols) in [(16, 32), (8, 48), (32, 16)] {
        let c = tilus::build(&TileCopy { rows, cols }, &[]).unwrap();
        assert_eq!(c.report.spill_stores, 0);
    }
}

#[test]
fn nested_groups_compile() {
    let src = tilus::emit(&Groups, &[]).unwrap();
    assert!(src.contains("mbarrier.arrive.shared::cta.b64"));
    assert!(src.matches("if (").count() >= 4, "{src}");
    tilus::build(&Groups, &[]).unwrap();
}

fn upload(device: &Device, v: &[f32]) -> CudaSlice<f32> {
    device.stream().clone_htod(v).unwrap()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tile_copy_is_exact_at_odd_shapes() {
    let device = Device::open(0).expect("a Hopper GPU");
    for (m, n, rows, cols) in [
        (100, 72, 16, 32),
        (33, 40, 32, 16),
        (64, 64, 64, 64),
        (20, 100, 8, 48),
    ] {
        let data: Vec<f32> = (0..m * n).map(|i| (i as f32).sin()).collect();
        let src = upload(&device, &data);
        let mut dst = upload(&device, &vec![f32::NAN; m * n]);
        let jit = tilus::Jit::new(TileCopy { rows, cols }, &device);
        jit.launch(device.stream(), (m as i32, n as i32, &src, &mut dst))
            .unwrap();
        let got = device.stream().clone_dtoh(&dst).unwrap();
        assert_eq!(got, data, "{m}x{n} with {rows}x{cols} tiles");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nested_groups_store_their_own_rows_and_arrive() {
    let device = Device::open(0).expect("a Hopper GPU");
    let mut out = upload(&device, &[f32::NAN; 512]);
    tilus::Jit::new(Groups, &device)
        .launch(device.stream(), (&mut out,))
        .unwrap();
    let got = device.stream().clone_dtoh(&out).unwrap();
    assert!(got[..256].iter().all(|&x| x == 1.0), "{:?}", &got[..8]);
    assert!(got[256..].iter().all(|&x| x == 2.0), "{:?}", &got[256..264]);
}
