//! Procedural macros of Tilus for Rust. Use them through the `tilus` crate
//! (`tilus::script` and `tilus::Tunable`, or both from `tilus::prelude`), not directly.
//!
//! - [`macro@script`] lets a script's generated CUDA use the script's own variable names: a
//!   Rust method cannot know the name of the `let` its result is bound to, so without help the
//!   kernel builder invents names (`s0`, `r1`, `v2`).
//! - [`macro@Tunable`] declares a script's autotuning search space next to its fields, as the
//!   seed's stacked `@tilus.autotune(...)` decorators do, instead of a hand-written
//!   `impl Tunable` that must be kept in sync with the struct.

#![warn(missing_docs)]

use proc_macro::TokenStream;

mod expand;
mod tunable;

/// Names a script's kernel variables, tensors, barriers, loop variables and arguments after
/// the script's own Rust bindings.
///
/// Apply it to an `impl Script for T { ... }` block. The generated IR and CUDA then read
/// `sa`, `offset_m`, `acc` where they would otherwise read `s0`, `v1`, `r2`, which makes the
/// generated code, its comments and every diagnostic match the script.
///
/// # Why
///
/// A Rust method cannot know the name of the `let` its result is bound to, so the kernel
/// builder can only invent names, unless the script calls `k.name_next("sa")` right before
/// each declaring call. This attribute writes those calls for you, from the names you already
/// wrote.
///
/// # What it rewrites
///
/// In `fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>)` (the kernel
/// parameter may have any name: below it is `k`):
///
/// - `let NAME = k.method(...);`, with `NAME` a plain identifier (possibly `mut`, possibly
///   with a type annotation) and an initializer that is a method call, or a chain of them
///   (`k.mbarrier().alloc([1])`, `k.cast::<f16>(&acc)`), on the kernel, becomes
///   `let NAME = { k.name_next("NAME"); k.method(...) };`.
/// - An expression statement `k.for_range(start, end, step, |k, IDENT| { ... });` gets
///   `k.name_next("IDENT");` right before it, so the loop variable is named `IDENT`.
/// - If the impl does not define `fn arg_names`, one is added that returns the names of the
///   body's argument tuple, `&["a", "b", "c"]` (`argN` for `_` or any other pattern that is
///   not an identifier; names after a `..` are left to the default).
///
/// The rewrite applies in nested blocks and closure bodies too. Closures that receive the
/// kernel must name it like the body's parameter (`|k, offset_k| ...`), as is the
/// convention. Nothing else changes: a `let` bound to anything but a method call on the
/// kernel (a tuple pattern, `_`, a function call, a macro) keeps a generated name, and the
/// user's tokens keep their spans, so the file and line recorded by the `#[track_caller]`
/// instruction methods (shown as `# file.rs:LINE` in the printed IR and as comments in the
/// CUDA) are still the script's own lines.
///
/// A `let` whose method declares nothing (say `let bi = k.block_idx();`) leaves its name
/// pending, and the next declaration that is not itself named by the macro receives it.
///
/// # Example
///
/// ```
/// use tilus::prelude::*;
///
/// #[derive(Clone, Debug, Hash)]
/// struct Fill {
///     block: i32,
/// }
///
/// #[tilus::script]
/// impl Script for Fill {
///     type Args = (i32, PtrMut<f32>);
///
///     fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
///         k.blocks([cdiv(n, self.block)]);
///         k.warps(1);
///         let offset = k.let_i32(self.block * k.block_idx().x);
///         let ones = k.register_tensor::<f32>([self.block], 1.0);
///         let dst = k.global_view::<f32>(out, [n]);
///         k.store_global(&dst, &ones, [offset]);
///     }
/// }
///
/// let ir = tilus::ir::print_program(&tilus::trace(&Fill { block: 32 }, &[]).unwrap());
/// assert!(ir.contains("kernel fill(n: i32, out: *mut f32)"));
/// assert!(ir.contains("let offset: i32 = "));
/// assert!(ir.contains("ones = register_tensor<f32>[32]"));
/// assert!(ir.contains("store_global(dst, ones, offsets=[offset])"));
/// ```
///
/// # Errors
///
/// The attribute takes no arguments. It reports a compile error, at the offending tokens,
/// when it is not applied to a trait impl, when the impl has no `fn body`, or when the
/// body's kernel parameter is neither a plain identifier nor `_`.
#[proc_macro_attribute]
pub fn script(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::script(attr.into(), item.into()).into()
}

/// Derives `tilus::tune::Tunable` (the autotuning search space) from `#[tune(...)]` attributes
/// on a script's struct.
///
/// # Why
///
/// The seed declares a kernel's search space with stacked decorators,
/// `@tilus.autotune("block_m, block_n", [(64, 128), ...])`. Written by hand in Rust, the same
/// space is a `Space` builder plus a `from_binding` that reads every field back by name: two
/// places that must agree with the struct and with each other. The derive writes both from one
/// declaration on the struct, and checks the declaration at compile time.
///
/// # Syntax
///
/// Each `#[tune(...)]` attribute is one axis of the space:
///
/// - `#[tune(name = [v1, v2, ...])]`: one field and the values it takes;
/// - `#[tune(a, b = [(a1, b1), (a2, b2), ...])]`: several fields bound together, one tuple
///   per choice (as long as the list of names).
///
/// Values are integer literals (`64`, `-1`), or `true`/`false` for `bool` fields (stored in
/// the space as 1 and 0). The space is the Cartesian product of the attributes in their
/// order, so the first attribute varies slowest in `Space::bindings`. Every named field must
/// be covered by exactly one attribute.
///
/// # What it generates
///
/// `impl ::tilus::tune::Tunable for T`, with
///
/// - `fn space()`: `Space::new().axis(&[names], vec![tuples])` for each attribute, in order;
/// - `fn from_binding(binding)`: the struct, each field read from `binding` by name and
///   converted with `TryFrom<i64>` (`bool` fields from 0 or 1). It returns an error naming
///   the field and the value when a value does not fit the field's type or a name is missing
///   from the binding; names in the binding that are not fields are ignored.
///
/// `Tunable` requires `Script`, so the struct must also implement `Script`.
///
/// # Example
///
/// ```
/// // the prelude has both the derive and the trait
/// use tilus::prelude::*;
///
/// #[derive(Clone, Debug, PartialEq, Hash, Tunable)]
/// #[tune(block_m, block_n = [(64, 128), (128, 128)])]
/// #[tune(block_k = [16, 32, 64])]
/// struct Tile {
///     block_m: i32,
///     block_n: i32,
///     block_k: i32,
/// }
///
/// impl Script for Tile {
///     type Args = (PtrMut<f32>,);
///     fn body(&self, k: &mut Kernel, _: Handles<Self::Args>) {
///         k.blocks([1]);
///         k.warps(1);
///     }
/// }
///
/// let points = Tile::space().bindings();
/// assert_eq!(points.len(), 6);
/// assert_eq!(points[0].to_string(), "block_m=64 block_n=128 block_k=16");
/// assert_eq!(
///     Tile::from_binding(&points[5]),
///     Ok(Tile { block_m: 128, block_n: 128, block_k: 64 })
/// );
/// ```
///
/// # Errors
///
/// Compile errors, at the offending tokens: a name bound by two attributes (or twice in one),
/// a name that is not a field, an empty list, a tuple of the wrong length (or a tuple for a
/// single name), a field that no attribute covers, a value that is not an integer literal or
/// `true`/`false`, a value out of range of a primitive field type (`300` for a `u8`,
/// `true` for an `i32`, `1` for a `bool`), a `#[tune]` on a field, and the derive on an enum,
/// a union, a tuple struct or a generic struct.
#[proc_macro_derive(Tunable, attributes(tune))]
pub fn derive_tunable(input: TokenStream) -> TokenStream {
    tunable::tunable(input.into()).into()
}
