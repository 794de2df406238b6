//! The `Script` trait: a kernel template whose fields are compile-time hyperparameters.

use super::{ArgList, Handles, Kernel};
use std::fmt::Debug;
use std::hash::Hash;

/// A kernel template. The implementing type's fields are compile-time hyperparameters (tile
/// sizes and the like); [`Script::body`] builds the kernel from tile-level instructions.
///
/// The body runs once per specialization (a new set of hyperparameters or of `Const`
/// argument values), on the host, to trace the program; it never runs on the GPU.
pub trait Script: Clone + Debug + Hash + Send + Sync + 'static {
    /// The argument list, e.g. `(i32, Const<i32>, Ptr<f16>, PtrMut<f16>)`.
    type Args: ArgList;

    /// Argument names for generated code and error messages (default: `arg0`, `arg1`, ...).
    fn arg_names() -> &'static [&'static str] {
        &[]
    }

    /// The kernel's name: by default the type's name in snake case.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        let base = full.split('<').next().unwrap_or(full);
        snake_case(base.rsplit("::").next().unwrap_or(base))
    }

    /// Builds the kernel.
    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>);
}

/// `MatmulTma` → `matmul_tma`.
pub fn snake_case(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else if c.is_alphanumeric() {
            out.push(*c);
        } else {
            out.push('_');
        }
    }
    out
}

/// A script behind a trait object, for tools that handle many scripts by name (the CLI).
pub trait DynScript: Send + Sync {
    /// The kernel's name.
    fn kernel_name(&self) -> String;
    /// The hyperparameters, as `name=value` pairs separated by spaces.
    fn config(&self) -> String;
    /// Names of the compile-time constant arguments, in order.
    fn const_names(&self) -> Vec<String>;
    /// Traces the script for the given constant values.
    fn trace(&self, consts: &[i64]) -> crate::Result<crate::ir::Program>;
}

impl<S: Script> DynScript for S {
    fn kernel_name(&self) -> String {
        self.name()
    }

    fn config(&self) -> String {
        config_string(&format!("{self:?}"))
    }

    fn const_names(&self) -> Vec<String> {
        let names = crate::arg_names::<S>();
        S::Args::const_positions()
            .into_iter()
            .map(|i| names[i].clone())
            .collect()
    }

    fn trace(&self, consts: &[i64]) -> crate::Result<crate::ir::Program> {
        crate::lang::trace(self, consts)
    }
}

/// `MatmulTma { block_m: 64, block_n: 128 }` → `block_m=64 block_n=128`.
pub fn config_string(debug: &str) -> String {
    match (debug.find('{'), debug.rfind('}')) {
        (Some(a), Some(b)) if a < b => debug[a + 1..b].trim().replace(": ", "=").replace(", ", " "),
        _ => debug.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn snake_case_names() {
        assert_eq!(super::snake_case("MatmulTma"), "matmul_tma");
        assert_eq!(super::snake_case("MatmulTMA"), "matmul_tma");
        assert_eq!(super::snake_case("V0Kernel"), "v0_kernel");
    }
}
