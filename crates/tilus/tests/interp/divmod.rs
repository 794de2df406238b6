//! `fast_divisor`: division by a launch-wide divisor through the host's multiplier and shift,
//! against Rust's integer division, and the launch's check of the divisor.

use crate::common::interp::interpret;
use tilus::prelude::*;
use tilus::Error;

/// Block `b` divides `base + b · stride` by `cdiv(d, 3)` (a `let` of an argument: the host
/// sees through it) and writes quotient and remainder.
type Divide = (i32, i32, i32, i32, PtrMut<i32>);

fn divide(k: &mut Kernel, (d, base, stride, blocks, out): Handles<Divide>) {
    k.blocks([blocks]);
    k.warps(1);
    let divisor = k.let_i32(cdiv(d, 3));
    let fd = k.fast_divisor(divisor);
    let g = k.global_view::<i32>(out, [blocks * 2]);
    let b = k.let_i32(k.block_idx().x);
    let (q, r) = fd.divmod(k, base + b * stride);
    k.single_thread(|k| {
        k.atomic_exchange_scalar(&g, [b * 2], q);
        k.atomic_exchange_scalar(&g, [b * 2 + 1], r);
    });
}

#[test]
fn fast_divmod_matches_integer_division() {
    let blocks = 64i32;
    let cases = [
        (1, 0, 1),
        (3, 5, 1),
        (20, 1000, 977),
        (384, 0, 12_345_679),
        (196_611, 7, 33_554_393),
        (i32::MAX - 2, i32::MAX - 64 * 30_000_000, 30_000_000),
        (1_000_000, i32::MAX - 63, 1),
    ];
    for (d, base, stride) in cases {
        let mut out = vec![-1i32; blocks as usize * 2];
        interpret::<Divide>(divide, (d, base, stride, blocks, &mut out[..])).unwrap();
        let divisor = (d + 2) / 3;
        for b in 0..blocks {
            let n = base as i64 + b as i64 * stride as i64;
            let (q, r) = (out[b as usize * 2], out[b as usize * 2 + 1]);
            assert_eq!(
                (q as i64, r as i64),
                (n / divisor as i64, n % divisor as i64),
                "{n} divided by {divisor}"
            );
        }
    }
}

#[test]
fn a_launch_with_a_divisor_below_one_is_refused() {
    let mut out = [-1i32; 8];
    let err = interpret::<Divide>(divide, (-5, 0, 1, 4, &mut out[..])).unwrap_err();
    match err {
        Error::Argument { message, .. } => {
            assert!(
                message.contains("a fast divisor must be between 1 and"),
                "{message}"
            )
        }
        e => panic!("expected an argument error, got {e}"),
    }
    assert!(out.iter().all(|&v| v == -1), "nothing ran");
}
