//! Low-precision types on the interpreter: every code of the 8-bit types decoded from memory,
//! values encoded into them, and every type's round trip through registers, against the plain
//! references of `common/scripts/lowp.rs`.

use half::{bf16, f16};
use tilus::lowp::*;

use crate::common::interp::run;
use crate::common::scripts::lowp::{
    check_decoded, check_encoded, check_round_trip, encode_inputs, round_trip_inputs, DecodeCodes,
    EncodeValues, RoundTrip,
};

/// Runs [`DecodeCodes`] for each type and checks every code.
macro_rules! decode_all { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    let codes: Vec<$T> = (0..=255).map(<$T>::from_code).collect();
    let mut f = vec![f32::NAN; 256];
    let mut h = vec![f16::NAN; 256];
    let mut b = vec![bf16::NAN; 256];
    run(&DecodeCodes::<$T>::new(2), (&codes[..], &mut f[..], &mut h[..], &mut b[..])).unwrap();
    check_decoded(t, &f, &h, &b);
})*}}

#[test]
fn every_code_of_the_8_bit_types_decodes_as_the_reference_says() {
    decode_all!(F8E4M3, F8E5M2, I8, U8);
}

/// Runs [`EncodeValues`] for each type and checks every code.
macro_rules! encode_all { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    let (x, h) = encode_inputs(t);
    let n = x.len();
    let (mut cx, mut ch) = (vec![<$T>::from_code(0xa5); n], vec![<$T>::from_code(0xa5); n]);
    run(&EncodeValues::<$T>::new(n as i32, 4), (&x[..], &h[..], &mut cx[..], &mut ch[..])).unwrap();
    let codes = |v: &[$T]| v.iter().map(|c| c.code()).collect::<Vec<u8>>();
    check_encoded(t, (&x, &h), &codes(&cx), &codes(&ch));
})*}}

#[test]
fn f32_and_f16_values_encode_into_fp8_rounding_to_even_and_saturating() {
    encode_all!(F8E4M3, F8E5M2);
}

/// Runs [`RoundTrip`] for each type and checks every value.
macro_rules! round_trip { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    let x = round_trip_inputs(t);
    let n = x.len();
    let (mut y, mut z) = (vec![f32::NAN; n], vec![f32::NAN; n]);
    run(&RoundTrip::<$T>::new(n as i32, 4), (&x[..], &mut y[..], &mut z[..])).unwrap();
    check_round_trip(t, &x, &y, &z);
})*}}

#[test]
fn every_low_precision_type_round_trips_through_registers_as_the_reference_says() {
    crate::for_round_trip_types!(round_trip);
}

/// Runs [`PackedViews`] in each form for each type and checks every element and bit.
macro_rules! packed_views { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    for s in crate::common::scripts::lowp::packed_forms::<$T>(t.bits()) {
        let (w, x, out0) = s.inputs(t);
        let mut dec = vec![f32::NAN; (s.rows * s.cols) as usize];
        let mut out = out0.clone();
        run(&s, (&w[..], &mut dec[..], &x[..], &mut out[..])).unwrap();
        s.check(t, (&w, &x, &out0), &dec, &out);
    }
})*}}

#[test]
fn packed_views_load_and_store_every_element_and_leave_the_other_bits() {
    packed_views!(I4, U4, F4E2M1, F6E3M2, F6E2M3, Int<3>, F3E1M1, U2, Float<1, 2>, Int<1>, Int<5>, Float<4, 2>);
}

/// Runs [`UnpackWords`] for each type at two shapes and checks every element.
macro_rules! unpack_words { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    for (rows, cols, warps) in [(4, 256, 1), (16, 64, 4)] {
        let s = crate::common::scripts::lowp::UnpackWords::<$T>::new(rows, cols, warps);
        let (w32, w8) = s.inputs(t);
        let n = (rows * cols) as usize;
        let (mut y32, mut y8) = (vec![f32::NAN; n], vec![f32::NAN; n]);
        run(&s, (&w32[..], &w8[..], &mut y32[..], &mut y8[..])).unwrap();
        s.check(t, &w8, &y32, &y8);
    }
})*}}

#[test]
fn words_unpack_into_every_element_they_hold() {
    unpack_words!(I4, U4, F4E2M1, U2, I2, Int<1>, UInt<1>, Float<1, 2>);
}

/// Runs [`Fp8Tile`] for a pair of types at two shapes and checks every element.
macro_rules! fp8_tile { ($(($A:ty, $B:ty)),*) => {$({
    for (m, n, kk) in [(64, 64, 64), (128, 128, 128)] {
        let s = crate::common::scripts::lowp::Fp8Tile::<$A, $B>::new(m, n, kk);
        let (a, b) = s.inputs();
        let mut c = vec![f32::NAN; (m * n) as usize];
        run(&s, (&a[..], &b[..], &mut c[..])).unwrap();
        s.check(&a, &b, &c);
    }
})*}}

#[test]
fn fp8_tensor_core_products_agree_with_the_host() {
    fp8_tile!((F8E4M3, F8E4M3), (F8E5M2, F8E5M2), (F8E4M3, F8E5M2));
}

/// Runs [`PackWords`] for each type at two shapes and checks every word.
macro_rules! pack_words { ($($T:ty),*) => {$({
    let t = <$T as LowpElement>::DTYPE;
    // every thread holds whole u32 words' worth of elements: 32 of them, for 1-bit types
    for (rows, cols, warps) in [(4, 256, 1), (16, 256, 4)] {
        let s = crate::common::scripts::lowp::PackWords::<$T>::new(rows, cols, warps);
        let x = s.inputs(t);
        let n = (rows * cols) as usize * t.bits() as usize;
        let (mut w32, mut w8) = (vec![0xdead_beefu32; n / 32], vec![0xa5u8; n / 8]);
        run(&s, (&x[..], &mut w32[..], &mut w8[..])).unwrap();
        s.check(t, &x, &w32, &w8);
    }
})*}}

#[test]
fn elements_pack_into_the_words_the_host_packs() {
    pack_words!(I4, U4, F4E2M1, U2, I2, Int<1>, Float<1, 2>);
}

/// Every code of the 8-bit types dequantized in f16 ([`ScaledCodes`]), and packed of the
/// narrower ones: each rounded operation and each kept in f32 gives the bits of the exact
/// arithmetic's rounding.
#[test]
fn codes_scaled_in_f16_round_as_the_reference_says() {
    use crate::common::inputs::{fresh_seed, random_f32};
    use crate::common::scripts::lowp::{check_scaled_codes, scaled_codes_inputs, ScaledCodes};
    let random: Vec<f32> = random_f32(256, fresh_seed())
        .iter()
        .map(|x| x.abs())
        .collect();
    let (s, z) = scaled_codes_inputs(&random);
    macro_rules! each { ($($T:ty),*) => {$({
        let codes: Vec<$T> = (0..=255).map(<$T>::from_code).collect();
        let mut out = vec![f16::NAN; 3 * 256];
        run(&ScaledCodes::<$T>::new(), (&codes[..], &s[..], &z[..], &mut out[..])).unwrap();
        check_scaled_codes(<$T as LowpElement>::DTYPE, (&s, &z), &out);
    })*}}
    each!(F8E4M3, F8E5M2, I8, U8);
    // the types narrower than a byte, their codes packed: the small floats' codes become f16
    // by placing their bits (`codegen/lowp.rs`), the small integers' by the exponent trick
    use crate::common::scripts::lowp::{packed_codes, ScaledPackedCodes};
    macro_rules! packed { ($($T:ty),*) => {$({
        let codes = packed_codes::<$T>();
        let mut out = vec![f16::NAN; 3 * 256];
        run(&ScaledPackedCodes::<$T>::new(), (&codes[..], &s[..], &z[..], &mut out[..])).unwrap();
        check_scaled_codes(<$T as LowpElement>::DTYPE, (&s, &z), &out);
    })*}}
    packed!(F4E2M1, F6E3M2, F6E2M3, F3E1M1, I4, U4, I2, Int<3>);
}
