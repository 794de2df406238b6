//! The seed's v0 matmul (`common::scripts::SeedMatmul`) on the interpreter, with the bugs the
//! tests plant, and with the planned program edited by hand.

use crate::common::inputs::matmul_inputs;
use crate::common::interp::run;
use crate::common::scripts::SeedMatmul;
use crate::common::{cache_dir, clear_marks};
use half::f16;
use tilus::interp::InterpValue;

/// Runs the seed's matmul with `bugs` at `m x n x k` on [`matmul_inputs`].
pub fn run_matmul(bugs: SeedMatmul, m: usize, n: usize, k: usize) -> tilus::Result<Vec<f16>> {
    let (a, b) = matmul_inputs(m, n, k);
    let mut c = vec![f16::NAN; m * n];
    run(&bugs, (m as i32, n as i32, k as i32, &a, &b, &mut c))?;
    Ok(c)
}

/// Plans the seed's matmul (64x128x64, one block), lets `edit` move things, and interprets
/// it.
pub fn run_edited(edit: fn(&mut tilus::ir::Program)) -> tilus::Result<tilus::interp::Report> {
    cache_dir();
    clear_marks();
    let (m, n, k) = (64usize, 128usize, 64usize);
    let program = tilus::trace(&SeedMatmul::default(), &[n as i64, k as i64])?;
    let (mut program, plan) = tilus::passes::compile_program(program)?;
    edit(&mut program);
    let (a, b) = matmul_inputs(m, n, k);
    let mut c = vec![f16::NAN; m * n];
    let mut args = vec![
        InterpValue::Int(m as i64),
        InterpValue::Int(n as i64),
        InterpValue::Int(k as i64),
        InterpValue::buffer(&a),
        InterpValue::buffer(&b),
        InterpValue::buffer_mut(&mut c),
    ];
    tilus::interp::run_program(&program, &plan, &mut args, &Default::default())
}
