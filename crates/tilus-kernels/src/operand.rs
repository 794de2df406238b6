//! The 16-bit element types the kernels take (f16 and bf16, both accumulated in f32), and what
//! a host API needs of one: its name, a NaN to poison outputs with, and exact conversions to
//! and from f64 for references and inputs.

use half::{bf16, f16};
use std::fmt::Debug;
use tilus::cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use tilus::lang::Element;

/// An element type of the kernels' operands: f16 or bf16.
///
/// ```
/// use tilus_kernels::Operand;
/// assert_eq!(<half::bf16 as Operand>::NAME, "bf16");
/// assert_eq!(<half::f16 as Operand>::from_f64(0.1).to_f64(), 0.0999755859375); // nearest f16
/// ```
pub trait Operand:
    Element + DeviceRepr + ValidAsZeroBits + tilus::interp::Pod + Debug + Default + Unpin
{
    /// Its name in kernel names, tables and recorded results (`f16`, `bf16`).
    const NAME: &'static str;
    /// Not a number (what unwritten outputs are poisoned with).
    const NAN: Self;
    /// The nearest value to `x`.
    fn from_f64(x: f64) -> Self;
    /// The value as f64 (exact).
    fn to_f64(self) -> f64;
    /// Its 16 bits (for device memsets of the type's values).
    fn to_bits(self) -> u16;
}

impl Operand for f16 {
    const NAME: &'static str = "f16";
    const NAN: f16 = f16::NAN;
    fn from_f64(x: f64) -> f16 {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn to_bits(self) -> u16 {
        f16::to_bits(self)
    }
}

impl Operand for bf16 {
    const NAME: &'static str = "bf16";
    const NAN: bf16 = bf16::NAN;
    fn from_f64(x: f64) -> bf16 {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn to_bits(self) -> u16 {
        bf16::to_bits(self)
    }
}
