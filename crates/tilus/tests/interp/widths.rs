//! Widths that do not divide among the threads: masked layouts, on the interpreter against
//! the host (`common/scripts/widths.rs`).

use crate::common::interp::run;
use crate::common::scripts::widths::AnyWidth;

/// The planned program.
fn compiled<S: tilus::Script>(s: &S) -> tilus::ir::Program {
    let traced = tilus::trace(s, &[]).unwrap();
    tilus::passes::compile_program(traced).unwrap().0
}

#[test]
fn a_width_that_does_not_divide_gets_a_masked_layout_and_exact_results() {
    for s in AnyWidth::FORMS {
        let (r, c) = (s.rows as usize, s.cols as usize);
        let (x, w, y0) = s.inputs();
        let mut y = y0.clone();
        let mut stats = vec![f32::NAN; 3 * r];
        run(&s, (&x[..], &w[..], &mut y[..], &mut stats[..])).unwrap();
        s.check((&x, &w, &y0), &y, &stats);
        // x's registers: masked, a few vectors a thread, not whole rows
        let program = compiled(&s);
        let lx = program.registers[0].layout.clone().expect("laid out");
        let threads = 32 * s.warps as usize;
        assert!(lx.is_masked(), "{s:?}: {lx}");
        assert!(
            lx.local_size() as usize <= 2 * (r * c).div_ceil(threads).next_power_of_two(),
            "{s:?}: {lx}"
        );
    }
}
