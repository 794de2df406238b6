//! Warp-group products (`wgmma`): warp-group scope, K-major operands, shapes and dtypes, the
//! accumulator read before the wait that covers it. The script is [`OneTile`], whose
//! diagnostics point at `common/scripts.rs`.

use crate::common::diagnostics_of;
use crate::common::scripts::{OneTile, FILE};
use half::f16;

fn has(d: &[tilus::Diagnostic], phrase: &str) -> bool {
    d.iter()
        .any(|d| d.message.contains(phrase) && d.loc.file == FILE)
}

#[test]
fn f16_accumulation_is_accepted_with_f16_inputs() {
    assert!(diagnostics_of(&OneTile::<f16>::new(64, 128, 64), &[]).is_empty());
}

#[test]
fn a_valid_tile_checks_clean() {
    assert!(diagnostics_of(&OneTile::<f32>::new(64, 128, 64), &[]).is_empty());
    assert!(diagnostics_of(
        &OneTile {
            a_in_registers: true,
            ..OneTile::<f32>::new(128, 64, 32)
        },
        &[]
    )
    .is_empty());
}

#[test]
fn wgmma_outside_a_warp_group_is_an_error() {
    let d = diagnostics_of(
        &OneTile {
            warps: 8,
            ..OneTile::<f32>::new(64, 128, 64)
        },
        &[],
    );
    assert!(has(&d, "runs on a warp group"), "{d:#?}");
}

#[test]
fn b_must_be_k_major() {
    let d = diagnostics_of(
        &OneTile {
            b_transposed: false,
            n: 64,
            ..OneTile::<f32>::new(64, 64, 64)
        },
        &[],
    );
    assert!(has(&d, "operand b must be K-major"), "{d:#?}");
}

#[test]
fn reading_the_accumulator_before_its_wait_is_an_error() {
    let d = diagnostics_of(
        &OneTile {
            read_early: true,
            ..OneTile::<f32>::new(64, 128, 64)
        },
        &[],
    );
    assert!(has(&d, "is used while the wgmma at"), "{d:#?}");
    assert_eq!(d.len(), 1, "only the early read: {d:#?}");
}

#[test]
fn shapes_the_instruction_cannot_cover_are_errors() {
    // M = 32 is not a multiple of 64
    let d = diagnostics_of(&OneTile::<f32>::new(32, 128, 64), &[]);
    assert!(has(&d, "must be a positive multiple of 64"), "{d:#?}");
    // 256-byte rows fit no swizzle
    let d = diagnostics_of(&OneTile::<f32>::new(64, 64, 128), &[]);
    assert!(
        d.iter()
            .any(|d| d.message.contains("K-major rows of 32, 64 or 128 bytes")),
        "{d:#?}"
    );
}
