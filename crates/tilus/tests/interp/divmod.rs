//! `fast_divisor`: division by a launch-wide divisor through the host's multiplier and shift,
//! against Rust's integer division, and the launch's check of the divisor.

use crate::common::interp::run;
use crate::common::scripts::FastDivide;
use tilus::Error;

#[test]
fn fast_divmod_matches_integer_division() {
    for (d, base, stride) in FastDivide::CASES {
        let mut out = vec![-1i32; FastDivide::BLOCKS as usize * 2];
        run(&FastDivide, (d, base, stride, &mut out[..])).unwrap();
        assert_eq!(out, FastDivide::reference((d, base, stride)), "d = {d}");
    }
}

#[test]
fn a_launch_with_a_divisor_below_one_is_refused() {
    let mut out = vec![-1i32; FastDivide::BLOCKS as usize * 2];
    let err = run(&FastDivide, (-5, 0, 1, &mut out[..])).unwrap_err();
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
