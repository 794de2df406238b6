//! Ordinary shared-memory stores must be published to the async proxy (`fence_proxy_async`)
//! before a wgmma reads them: a missing fence is a compile-time diagnostic where the program
//! shows it, and an interpreter fault where only the threads at run time do (a fence run by
//! other threads than the writers). With the fence, the product is right on the interpreter and
//! on the GPU.

use half::f16;
use tilus::prelude::*;
use tilus::Error;

/// `C[64, 64] = ones[64, 64] · Bᵀ`: A is written by threads (store_shared), B arrives by TMA.
#[derive(Clone, Debug, Hash)]
struct OnesTimesB {
    /// 0: no fence; 1: every writer fences; 2: only threads that did not write fence.
    fence: u8,
}

impl Script for OnesTimesB {
    type Args = (Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (b_ptr, c_ptr): Handles<Self::Args>) {
        k.warps(4);
        let gb = k.global_view::<f16>(b_ptr, [64, 64]);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([64, 64]);
        let acc = k.register_tensor::<f32>([64, 64], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], sb.nbytes());
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        if self.fence == 2 {
            // the first half of the block writes A; the other half fences (wrongly)
            k.thread_group(0, 64, |k| {
                let ones = k.register_tensor::<f16>([64, 64], 1.0);
                k.store_shared(&sa, &ones);
            });
            k.thread_group(64, 64, |k| k.fence_proxy_async());
        } else {
            let ones = k.register_tensor::<f16>([64, 64], 1.0);
            k.store_shared(&sa, &ones);
            if self.fence == 1 {
                k.fence_proxy_async();
            }
        }
        k.sync();
        k.mbarrier().wait(bar[0], 0u32);
        k.wgmma().fence();
        k.wgmma().mma(&sa, &sb.transpose(), &acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(0);
        let gc = k.global_view::<f32>(c_ptr, [64, 64]);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

fn inputs() -> Vec<f16> {
    (0..64 * 64)
        .map(|i| f16::from_f32(((i * 37 % 101) as f32 - 50.0) / 256.0))
        .collect()
}

fn expected(b: &[f16]) -> Vec<f32> {
    let mut c = vec![0f32; 64 * 64];
    for i in 0..64 {
        for j in 0..64 {
            c[i * 64 + j] = (0..64).map(|x| b[j * 64 + x].to_f32()).sum();
        }
    }
    c
}

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
    assert!(d[0].loc.file.ends_with("proxy_fence.rs"));
    let p = tilus::trace(&OnesTimesB { fence: 1 }, &[]).unwrap();
    assert!(tilus::passes::compile_program(p).is_ok());
    let c = tilus::build(&OnesTimesB { fence: 1 }, &[]).unwrap();
    assert!(
        c.source.contains("fence.proxy.async.shared::cta") && c.source.contains("st.shared.u16")
    );
}

#[test]
fn the_interpreter_catches_a_fence_run_by_the_wrong_threads() {
    let b = inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    let err = tilus::interpret(&OnesTimesB { fence: 2 }, (&b[..], &mut c[..])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("fence_proxy_async") && text.contains("proxy_fence.rs"),
        "{text}"
    );
}

#[test]
fn with_the_fence_the_interpreter_computes_the_product() {
    let b = inputs();
    let mut c = vec![f32::NAN; 64 * 64];
    tilus::interpret(&OnesTimesB { fence: 1 }, (&b[..], &mut c[..])).unwrap();
    let want = expected(&b);
    for (i, (x, y)) in c.iter().zip(&want).enumerate() {
        assert!((x - y).abs() <= 1e-4, "{i}: {x} vs {y}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn with_the_fence_the_gpu_computes_the_product() {
    let device = tilus::runtime::Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let b = inputs();
    let db = stream.clone_htod(&b).unwrap();
    let mut dc = stream.clone_htod(&vec![f32::NAN; 64 * 64]).unwrap();
    tilus::Jit::new(OnesTimesB { fence: 1 }, &device)
        .launch(stream, (&db, &mut dc))
        .unwrap();
    let c = stream.clone_dtoh(&dc).unwrap();
    let want = expected(&b);
    for (i, (x, y)) in c.iter().zip(&want).enumerate() {
        assert!((x - y).abs() <= 1e-4, "{i}: {x} vs {y}");
    }
}
