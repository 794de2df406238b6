//! Arguments are checked before anything reaches the GPU: buffer sizes, the 16-byte row
//! strides TMA needs, null pointers, an output overlapping an input; an empty problem launches
//! nothing. Each failure names the argument and the rule.

use tilus::lang::HostValue;
use tilus::prelude::*;
use tilus::runtime::{Device, LoadedKernel};
use tilus::Error;

/// Copies an `[m, n]` f16 matrix through shared memory (TMA) to an f16 output.
#[derive(Clone, Debug, Hash)]
struct Copy;

impl Script for Copy {
    type Args = (i32, i32, Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "src", "dst"]
    }
    fn body(&self, k: &mut Kernel, (m, n, src, dst): Handles<Self::Args>) {
        k.blocks([cdiv(m, 16), cdiv(n, 64)]);
        k.warps(1);
        let om = k.let_i32(16 * k.block_idx().x);
        let on = k.let_i32(64 * k.block_idx().y);
        let g = k.global_view::<f16>(src, [m, n]);
        let s = k.shared_tensor::<f16>([16, 64]);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier().arrive_and_expect_tx(bar[0], s.nbytes());
            k.tma().global_to_shared(&g, &s, [om, on], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let r = k.load_shared(&s);
        let out = k.global_view::<f16>(dst, [m, n]);
        k.store_global(&out, &r, [om, on]);
    }
}

fn arg_error(r: tilus::Result<()>) -> (String, String) {
    match r {
        Err(Error::Argument { arg, message }) => (arg, message),
        other => panic!("expected an argument error, got {other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_arguments_are_errors_and_nothing_is_launched() {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let jit = tilus::Jit::new(Copy, &device);
    let src = stream.clone_htod(&vec![f16::ONE; 64 * 64]).unwrap();
    let mut dst = stream.clone_htod(&vec![f16::ZERO; 64 * 64]).unwrap();

    // the source holds 64x64 elements; 128x64 would read past its end
    let (arg, msg) = arg_error(jit.launch(stream, (128, 64, &src, &mut dst)));
    assert_eq!(arg, "src");
    assert!(
        msg.contains("the buffer holds 4096 elements, the kernel reads 8192"),
        "{msg}"
    );

    // rows of 60 halves are 120 bytes: not a multiple of 16, TMA cannot stride them
    let (arg, msg) = arg_error(jit.launch(stream, (64, 60, &src, &mut dst)));
    assert_eq!(arg, "src");
    assert!(
        msg.contains("not a multiple of 16")
            && msg.contains("pad the rows to a multiple of 8 elements"),
        "{msg}"
    );

    // nothing was written by the rejected launches
    let got = stream.clone_dtoh(&dst).unwrap();
    assert!(got.iter().all(|x| *x == f16::ZERO));

    // an empty problem launches nothing and succeeds
    jit.launch(stream, (0, 64, &src, &mut dst)).unwrap();
    // a correct one works
    jit.launch(stream, (64, 64, &src, &mut dst)).unwrap();
    assert!(stream
        .clone_dtoh(&dst)
        .unwrap()
        .iter()
        .all(|x| *x == f16::ONE));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn raw_arguments_that_overlap_or_are_null_are_errors() {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let compiled = tilus::build(&Copy, &[]).unwrap();
    let kernel = LoadedKernel::load(&device, &compiled, tilus::arg_names::<Copy>()).unwrap();
    let buf = stream.clone_htod(&vec![f16::ONE; 2 * 64 * 64]).unwrap();
    let base = {
        use tilus::cudarc::driver::DevicePtr;
        buf.device_ptr(stream).0
    };
    let bytes = 64 * 64 * 2;
    // dst starts in the middle of src
    let vals = [
        HostValue::Int(64),
        HostValue::Int(64),
        HostValue::Ptr { ptr: base, bytes },
        HostValue::Ptr {
            ptr: base + 4096,
            bytes,
        },
    ];
    let (arg, msg) = arg_error(kernel.launch(stream, &vals));
    assert_eq!(arg, "dst");
    assert!(msg.contains("overlaps `src`"), "{msg}");
    let vals = [
        HostValue::Int(64),
        HostValue::Int(64),
        HostValue::Ptr { ptr: 0, bytes },
        HostValue::Ptr { ptr: base, bytes },
    ];
    let (arg, msg) = arg_error(kernel.launch(stream, &vals));
    assert_eq!((arg.as_str(), msg.as_str()), ("src", "null device pointer"));
    let vals = [
        HostValue::Int(64),
        HostValue::Int(64),
        HostValue::Ptr {
            ptr: base + 8,
            bytes,
        },
        HostValue::Ptr {
            ptr: base + bytes as u64,
            bytes,
        },
    ];
    let (arg, msg) = arg_error(kernel.launch(stream, &vals));
    assert_eq!(arg, "src");
    assert!(msg.contains("is not 16-byte aligned"), "{msg}");
}
