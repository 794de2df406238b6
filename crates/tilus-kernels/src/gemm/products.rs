//! One consumer warp group's main loop over a [`Pipeline`]'s stages with one WGMMA group in
//! flight (the series' v4 loop), shared by split-K and the series' steps.

use tilus::prelude::*;

/// One consumer warp group's main loop over `steps` steps of `pipe` (unrolled by `unroll`),
/// one product in flight: step `i` waits for its stage, multiplies the stage's `sa · sbᵀ`
/// into `acc`, and frees step `i - 1`'s stage once its product is done; after the loop every
/// product is complete. Shared with split-K.
///
/// ```
/// // the tutorial's v4 is a whole kernel on it, run here on the interpreter
/// use hopper_matmul::v4::MatmulPipelined;
/// let (m, n, k) = (256, 256, 128);
/// let (a, b) = (vec![half::f16::ONE; m * k], vec![half::f16::ONE; n * k]);
/// let mut c = vec![half::f16::NAN; m * n];
/// tilus::interpret(&MatmulPipelined::default(), (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(128.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
pub fn products_one_in_flight<T: tilus::lang::Element>(
    k: &mut Kernel,
    pipe: &Pipeline,
    (sa, sb): (&SharedTensor<T>, &SharedTensor<T>),
    steps: impl Into<Scalar>,
    unroll: u32,
    acc: &RegisterTensor<f32>,
) {
    k.for_range_unrolled(0, steps, 1, unroll, |k, i| {
        let slot = pipe.consumer_acquire(k, i);
        k.wgmma().fence();
        let (a, b) = (sa.at(slot.stage()), sb.at(slot.stage()));
        k.wgmma().mma(&a, &b.transpose(), acc);
        k.wgmma().commit_group();
        k.wgmma().wait_group(1);
        // this step's stage is still read by the product in flight: it is freed by the next
        // step, as `consumer_release_step(i)` there
        drop(slot);
        pipe.consumer_release_step(k, i - 1);
    });
    k.wgmma().wait_group(0);
}
