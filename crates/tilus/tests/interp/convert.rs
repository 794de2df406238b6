//! Layout conversions: a loaded tile converted to an mma operand (through shared memory) and
//! an accumulator converted to the next product's operand (in registers, as `tilus ir` says),
//! against the host on random inputs.

use crate::common::inputs::{fresh_seed, random_f16, random_f32};
use crate::common::interp::run;
use crate::common::scripts::convert::{ChainedProducts, ConvertedOperand};

/// The planned program as `tilus ir` prints it.
fn ir<S: tilus::Script>(s: &S) -> String {
    let traced = tilus::trace(s, &[]).unwrap();
    tilus::ir::print_program(&tilus::passes::compile_program(traced).unwrap().0)
}

fn close(got: &[f32], want: &[f32], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-3 * w.abs().max(1.0),
            "{what} [{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn a_loaded_tile_converted_to_an_mma_operand_goes_through_shared_memory() {
    for s in ConvertedOperand::both_forms() {
        let ir = ir(&s);
        assert!(
            ir.contains("convert_layout(") && ir.contains("through shared"),
            "{ir}"
        );
        let (m, n, k) = (s.m as usize, s.n as usize, 16 * s.k16 as usize);
        let (a, b) = (random_f16(m * k, 5), random_f16(n * k, 6));
        let mut c = vec![f32::NAN; m * n];
        run(&s, (&a[..], &b[..], &mut c[..])).unwrap();
        close(&c, &s.expected(&a, &b), &format!("{s:?}"));
    }
}

#[test]
fn a_cast_whose_source_and_result_are_laid_out_apart_converts_its_source() {
    use crate::common::scripts::convert::CastOperand;
    for s in ConvertedOperand::FORMS.map(CastOperand) {
        let ir = ir(&s);
        assert!(
            ir.contains("convert_layout(") && ir.contains("through shared"),
            "{ir}"
        );
        let (m, n, k) = (s.0.m as usize, s.0.n as usize, 16 * s.0.k16 as usize);
        let (a, b) = (
            random_f32(m * k, fresh_seed()),
            random_f16(n * k, fresh_seed()),
        );
        let mut c = vec![f32::NAN; m * n];
        run(&s, (&a[..], &b[..], &mut c[..])).unwrap();
        close(&c, &s.expected(&a, &b), &format!("{s:?}"));
    }
}

#[test]
fn an_accumulator_converted_to_the_next_products_operand_stays_in_registers() {
    for (d, implicit) in [8, 16, 64]
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
    {
        let s = ChainedProducts { d, implicit };
        let ir = ir(&s);
        // left implicit, the operand is the cast's result in the fragment layout (the
        // accumulator's is the same mapping) or a conversion in registers
        assert!(
            (implicit || ir.contains("convert_layout(")) && !ir.contains("through shared"),
            "{ir}"
        );
        let (q, kt, v) = (
            random_f16(256, 1),
            random_f16(256, 2),
            random_f16(16 * d as usize, 3),
        );
        let mut o = vec![f32::NAN; 16 * d as usize];
        run(&s, (&q[..], &kt[..], &v[..], &mut o[..])).unwrap();
        close(&o, &s.expected(&q, &kt, &v), &format!("{s:?}"));
    }
}

#[test]
fn repeats_take_each_element_from_its_source() {
    use crate::common::inputs::random_f32;
    use crate::common::scripts::convert::Repeats;
    for s in Repeats::FORMS {
        let (r, c) = (s.rows as usize, s.cols as usize);
        let (x, sc) = (random_f32(r * c, 8), random_f32(r * c / 8, 9));
        let (mut t, mut i, mut p) = (
            vec![f32::NAN; 3 * r * c],
            vec![f32::NAN; 2 * r * c],
            vec![f32::NAN; r * c],
        );
        run(&s, (&x[..], &sc[..], &mut t[..], &mut i[..], &mut p[..])).unwrap();
        let (wt, wi, wp) = s.expected(&x, &sc);
        assert_eq!(t, wt, "{s:?} repeat");
        assert_eq!(i, wi, "{s:?} repeat_interleave");
        assert_eq!(p, wp, "{s:?} scales");
        let text = ir(&s);
        assert!(
            text.contains("repeat(") && text.contains("repeat_interleave("),
            "{text}"
        );
    }
}

#[test]
fn a_wgmma_accumulator_converted_to_the_next_wgmmas_register_operand_stays_in_registers() {
    use crate::common::scripts::convert::ChainedWgmma;
    for (d, implicit) in [16, 64].into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let s = ChainedWgmma { d, implicit };
        let ir = ir(&s);
        // left implicit, the operand is the cast's result in the fragment layout (the
        // accumulator's is the same mapping) or a conversion in registers
        assert!(
            (implicit || ir.contains("convert_layout(")) && !ir.contains("through shared"),
            "{ir}"
        );
        let (keys, head) = (ChainedWgmma::KEYS, ChainedWgmma::HEAD);
        let (q, kt, v) = (
            random_f16(64 * head, fresh_seed()),
            random_f16(keys * head, fresh_seed()),
            random_f16(keys * d as usize, fresh_seed()),
        );
        let mut o = vec![f32::NAN; 64 * d as usize];
        run(&s, (&q[..], &kt[..], &v[..], &mut o[..])).unwrap();
        close(&o, &s.expected(&q, &kt, &v), &format!("{s:?}"));
    }
}

#[test]
fn operands_of_an_expression_in_other_layouts_meet_through_an_inserted_conversion() {
    use crate::common::scripts::convert::ImplicitConvert;
    {
        let s = ImplicitConvert;
        let ir = ir(&s);
        assert!(
            ir.contains("convert_layout(") && ir.contains("through shared"),
            "{ir}"
        );
        let (x, y) = (
            random_f32(1024, fresh_seed()),
            random_f32(1024, fresh_seed()),
        );
        let mut out = vec![f32::NAN; 1024];
        run(&s, (&x[..], &y[..], &mut out[..])).unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&out),
            bits(&ImplicitConvert::expected(&x, &y)),
            "{s:?}"
        );
    }
}
