//! Arithmetic: every case of `common::arith` (elementwise IEEE operations, transcendental
//! functions, row and column reductions broadcast back, softmax, integers, 16-bit floats,
//! booleans) on tile shapes whose reductions stay in lanes, cross warps, or replicate, against
//! its CPU reference on random inputs that are not a multiple of the tile.

use crate::common::arith::{input, max_rel_diff, reference, ArithCase, ArithTile, SHAPES};
use crate::common::interp::run;

#[test]
fn every_case_matches_its_reference_on_every_shape() {
    for (rows, cols, warps) in SHAPES {
        for case in ArithCase::ALL {
            // one partial tile in each direction
            let (m, n) = (3 * rows as usize - 1, 2 * cols as usize + 4);
            let x = input(m, n, (rows * 1000 + cols) as u64);
            let mut out = vec![f32::NAN; m * n];
            let script = ArithTile::new(case, (rows, cols, warps));
            run(&script, (m as i32, n as i32, &x[..], &mut out[..]))
                .unwrap_or_else(|e| panic!("{case:?} on {rows}x{cols}, {warps} warps: {e}"));
            let want = reference(case, &x, m, n, rows as usize, cols as usize);
            let d = max_rel_diff(&out, &want);
            assert!(
                d <= case.tolerance(),
                "{case:?} on {rows}x{cols}, {warps} warps: relative difference {d}"
            );
        }
    }
}
