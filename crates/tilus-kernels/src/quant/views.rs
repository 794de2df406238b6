//! What both quantized kernels share: their arguments, the views over them, and the
//! dequantization of a tile of W.

use half::f16;
use tilus::lowp::LowpElement;
use tilus::prelude::*;

/// The arguments of both kernels: `m`, `n` (runtime); `k` (a compile-time constant: a layer's
/// width, the packed rows' pitch, whose bytes the vectors must not split); `a [m, k]` f16; `w`
/// the packed `[n, k]` codes; scales and zero points `[n, groups]` f16 (the zero points only
/// read for unsigned types); `c [m, n]` f16.
pub type QuantArgs = (
    i32,
    i32,
    Const<i32>,
    Ptr<f16>,
    Ptr<u8>,
    Ptr<f16>,
    Ptr<f16>,
    PtrMut<f16>,
);

/// The arguments' names.
pub(crate) const ARG_NAMES: &[&str] = &["m", "n", "k", "a", "w", "scales", "zeros", "c"];

/// The views over the arguments.
pub(crate) struct QuantViews<T> {
    pub a: GlobalTensor<f16>,
    pub w: GlobalTensor<T>,
    pub scales: GlobalTensor<f16>,
    /// Only for unsigned types (the others pass a buffer that is never viewed).
    pub zeros: Option<GlobalTensor<f16>>,
    pub c: GlobalTensor<f16>,
    /// Elements of a row of W that share a scale (0: the whole row).
    pub group: i32,
}

impl<T: Element + LowpElement> QuantViews<T> {
    /// The views of a kernel for groups of `group` (0: per channel).
    pub fn new(k: &mut Kernel, (m, n, kk, a, w, s, z, c): Handles<QuantArgs>, group: i32) -> Self {
        let width = kk.as_const().unwrap_or(1).max(1);
        let groups = if group > 0 {
            (width + group as i64 - 1) / group as i64
        } else {
            1
        } as i32;
        let unsigned = matches!(<T as LowpElement>::DTYPE, tilus::ir::DType::UInt(_));
        QuantViews {
            a: k.global_view::<f16>(a, [m, kk]),
            w: k.global_view_packed::<T>(w, [n, kk]),
            scales: k.global_view::<f16>(s, [n, Val::constant(groups)]),
            zeros: unsigned.then(|| k.global_view::<f16>(z, [n, Val::constant(groups)])),
            c: k.global_view::<f16>(c, [m, n]),
            group,
        }
    }

    /// The `[rows, cols]` tile of W at `(n0, k0)` dequantized, `(q - z) · s` rounded to f16 as
    /// every path (and cuBLAS on the dequantized matrix) multiplies it; the tile lies in one
    /// group along K.
    pub fn dequantized(
        &self,
        k: &mut Kernel,
        at: (Val, Val),
        shape: [i32; 2],
    ) -> RegisterTensor<f16> {
        let raw = self.load(k, at, shape);
        raw.dequantized(k)
    }

    /// The codes of the `[rows, cols]` tile of W at `(n0, k0)` and their scales (and zero
    /// points), loaded but not yet converted: a kernel issues several such loads before it
    /// uses the first, to keep more bytes in flight. The tile lies in one group along K.
    pub fn load(&self, k: &mut Kernel, (n0, k0): (Val, Val), [rows, cols]: [i32; 2]) -> RawTile<T> {
        let g = if self.group > 0 {
            k.let_i32(k0 / self.group)
        } else {
            k.let_i32(0)
        };
        RawTile {
            codes: k.load_global(&self.w, (n0, k0), [rows, cols]),
            scale: k.load_global(&self.scales, (n0, g), [rows, 1]),
            zero: self
                .zeros
                .as_ref()
                .map(|gz| k.load_global(gz, (n0, g), [rows, 1])),
        }
    }
}

impl<T: Element + LowpElement> QuantViews<T> {
    /// A tile of codes `codes` (`[rows, cols]`, from elsewhere than W's view: a shared
    /// stage) of W at `(n0, k0)` with its scales (and zero points) loaded; the tile lies in
    /// one group along K.
    pub fn with_codes(
        &self,
        k: &mut Kernel,
        codes: RegisterTensor<T>,
        (n0, k0): (Val, Val),
        rows: i32,
    ) -> RawTile<T> {
        let g = if self.group > 0 {
            k.let_i32(k0 / self.group)
        } else {
            k.let_i32(0)
        };
        RawTile {
            codes,
            scale: k.load_global(&self.scales, (n0, g), [rows, 1]),
            zero: self
                .zeros
                .as_ref()
                .map(|gz| k.load_global(gz, (n0, g), [rows, 1])),
        }
    }
}

/// A tile of W as loaded by [`QuantViews::load`].
pub(crate) struct RawTile<T> {
    codes: RegisterTensor<T>,
    scale: RegisterTensor<f16>,
    zero: Option<RegisterTensor<f16>>,
}

impl<T: Element + LowpElement> RawTile<T> {
    /// The tile dequantized: `(q - z) · s` rounded to f16.
    pub fn dequantized(&self, k: &mut Kernel) -> RegisterTensor<f16> {
        let (codes, scale) = (&self.codes, &self.scale);
        match &self.zero {
            Some(zero) => k.compute(
                ((codes.cast::<f32>() - zero.cast::<f32>()) * scale.cast::<f32>()).cast::<f16>(),
            ),
            // (every code is an f16 value and the product is rounded once either way: the
            // code generator takes the f16 pairs)
            None => k.compute(codes.cast::<f16>() * scale),
        }
    }
}
