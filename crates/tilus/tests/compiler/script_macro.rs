//! `#[tilus::script]`: declarations take the script's own names, and recorded source lines
//! stay on the script's lines.

use tilus::prelude::*;

#[derive(Clone, Debug, Hash)]
struct Named {
    block: i32,
}

#[tilus::script]
impl Script for Named {
    type Args = (i32, i32, Ptr<f16>, PtrMut<f32>);

    fn body(&self, k: &mut Kernel, (m_size, n_size, a_ptr, out_ptr): Handles<Self::Args>) {
        k.blocks([cdiv(m_size, self.block)]);
        k.warps(4);
        let offset_m = k.let_i32(self.block * k.block_idx().x);
        let offset_n = k.let_i32(0);
        let phase: Val = k.var_u32(0u32);
        let ga = k.global_view::<f16>(a_ptr, [m_size, n_size]);
        let sa = k.shared_tensor::<f16>([self.block, 16]);
        let acc = k.register_tensor::<f32>([self.block, 16], 0.0);
        // a reduction of an expression: the name is the reduction's, not its operand's
        let row_sums = k.sum(acc * 2.0, 1, true);
        let _ = row_sums;
        // a chain over several lines (kept so by rustfmt::skip)
        #[rustfmt::skip]
        let tma_bar = k
            .mbarrier()
            .alloc([1]);
        k.for_range(0, m_size, 16, |k, offset_k| {
            k.single_thread(|k| {
                k.mbarrier().arrive_and_expect_tx(tma_bar[0], sa.nbytes());
                k.tma()
                    .global_to_shared(&ga, &sa, [offset_m, offset_k], tma_bar[0]);
                k.mbarrier().wait(tma_bar[0], phase);
            });
            k.sync();
            k.for_range(0, 2, 1, |k, stage| {
                let doubled = k.let_i32(stage * 2);
                let _ = doubled;
            });
            let mut tile = k.load_shared(&sa);
            tile = tile.transpose().transpose();
            let widened = k.cast::<f32>(&tile);
            let _ = widened;
            k.assign(phase, phase ^ 1);
        });
        let gc = k.global_view::<f32>(out_ptr, [m_size, n_size]);
        k.store_global(&gc, &acc, [offset_m, offset_n]);
    }
}

/// The same kernel, shorter, without the attribute.
#[derive(Clone, Debug, Hash)]
struct Plain;

impl Script for Plain {
    type Args = (i32, PtrMut<f32>);

    fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
        k.blocks([cdiv(n, 32)]);
        k.warps(1);
        let offset = k.let_i32(32 * k.block_idx().x);
        let sa = k.shared_tensor::<f16>([32]);
        let acc = k.register_tensor::<f32>([32], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.for_range(0, n, 32, |k, i| {
            let _ = (sa, bar, i);
            let t = k.load_shared(&sa);
            let _ = t;
        });
        let g = k.global_view::<f32>(out, [n]);
        k.store_global(&g, &acc, [offset]);
    }
}

/// Argument names: the user's `fn arg_names` wins; `_` becomes `argN`.
#[derive(Clone, Debug, Hash)]
struct Args<const OWN: bool>;

#[tilus::script]
impl Script for Args<true> {
    type Args = (i32, PtrMut<f32>);

    fn arg_names() -> &'static [&'static str] {
        &["rows", "dst"]
    }

    fn body(&self, k: &mut Kernel, (n, _out): Handles<Self::Args>) {
        k.blocks([n]);
        k.warps(1);
    }
}

#[tilus::script]
impl Script for Args<false> {
    type Args = (i32, PtrMut<f32>, i32);

    fn body(&self, kern: &mut Kernel, (n, _, r#cols): Handles<Self::Args>) {
        kern.blocks([n, cols]);
        kern.warps(1);
        let tile = kern.register_tensor::<f32>([32], 1.0);
        let _ = tile;
    }
}

fn ir<S: Script>(s: &S) -> String {
    match tilus::trace(s, &[]) {
        Ok(p) => tilus::ir::print_program(&p),
        Err(e) => panic!("tracing failed: {e}"),
    }
}

/// The 1-based line of this file's code holding `needle` (exactly once; quoted occurrences,
/// as in the tests, do not count).
fn line_of(needle: &str) -> u32 {
    let src = include_str!("script_macro.rs");
    let quoted = format!("\"{needle}");
    let hits: Vec<usize> = src
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle) && !l.contains(&quoted))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(hits.len(), 1, "`{needle}` must occur once in this file");
    hits[0] as u32
}

/// The printed IR line that contains `needle` (exactly once).
fn ir_line<'a>(ir: &'a str, needle: &str) -> &'a str {
    let hits: Vec<&str> = ir.lines().filter(|l| l.contains(needle)).collect();
    assert_eq!(hits.len(), 1, "`{needle}` must occur once in\n{ir}");
    hits[0]
}

#[test]
fn declarations_take_the_users_names() {
    let ir = ir(&Named { block: 64 });
    for want in [
        "kernel named(m_size: i32, n_size: i32, a_ptr: *f16, out_ptr: *mut f32)",
        "let offset_m: i32 = ",
        "var phase: u32 = 0u",
        "ga = global_view<f16>(a_ptr, [m_size, n_size])",
        "sa = shared_tensor<f16>[64, 16]",
        "acc = register_tensor<f32>[64, 16]",
        "row_sums = sum(",
        "tma_bar = mbarrier.alloc(counts=[1])",
        "for offset_k in range(0, m_size, 16) {",
        "tma.global_to_shared(ga -> sa, offsets=[offset_m, offset_k], tma_bar[0])",
        "mbarrier.wait(tma_bar[0], phase=phase)",
        "for stage in range(0, 2, 1) {",
        "let doubled: i32 = (stage * 2)",
        "tile = load_shared(sa)",
        "widened = cast<f32>(tile)",
        "phase = (phase ^ 1u)",
        "gc = global_view<f32>(out_ptr, [m_size, n_size])",
        "let offset_n: i32 = 0",
        "store_global(gc, acc, offsets=[offset_m, offset_n])",
    ] {
        assert!(ir.contains(want), "missing `{want}` in\n{ir}");
    }
}

#[test]
fn recorded_lines_are_the_users_lines() {
    let ir = ir(&Named { block: 64 });
    for (in_ir, in_source) in [
        ("let offset_m", "let offset_m = k.let_i32("),
        ("var phase", "let phase: Val = k.var_u32("),
        ("ga = global_view", "let ga = k.global_view"),
        (
            "sa = shared_tensor",
            "let sa = k.shared_tensor::<f16>([self.block",
        ),
        (
            "acc = register_tensor",
            "let acc = k.register_tensor::<f32>([self.block",
        ),
        // a chain spanning lines reports the line of its last call, as without the macro
        ("tma_bar = mbarrier.alloc", "    .alloc([1]);"),
        ("for offset_k", "k.for_range(0, m_size, 16, |k, offset_k|"),
        ("for stage", "k.for_range(0, 2, 1, |k, stage|"),
        ("let doubled", "let doubled = k.let_i32("),
        ("tile = load_shared", "let mut tile = k.load_shared("),
        ("widened = cast", "let widened = k.cast::<f32>("),
        ("store_global(gc", "k.store_global(&gc, &acc"),
    ] {
        let want = format!("# script_macro.rs:{}", line_of(in_source));
        let got = ir_line(&ir, in_ir);
        assert!(got.ends_with(&want), "`{got}` should end with `{want}`");
    }
}

#[test]
fn without_the_attribute_names_are_generated() {
    let ir = ir(&Plain);
    for want in [
        "kernel plain(arg0: i32, arg1: *mut f32)",
        "let v0: i32 = ",
        "s0 = shared_tensor<f16>[32]",
        "r0 = register_tensor<f32>[32]",
        "bar0 = mbarrier.alloc(counts=[1])",
        "for i0 in range(0, arg0, 32) {",
        "r1 = load_shared(s0)",
        "g0 = global_view<f32>(arg1, [arg0])",
        "store_global(g0, r0, offsets=[v0])",
    ] {
        assert!(ir.contains(want), "missing `{want}` in\n{ir}");
    }
    let line = format!(
        "# script_macro.rs:{}",
        line_of("let t = k.load_shared(&sa);")
    );
    assert!(ir_line(&ir, "r1 = load_shared").ends_with(&line));
}

#[test]
fn argument_names() {
    let own = ir(&Args::<true>);
    assert!(
        own.contains("kernel args(rows: i32, dst: *mut f32)"),
        "{own}"
    );
    let derived = ir(&Args::<false>);
    assert!(
        derived.contains("kernel args(n: i32, arg1: *mut f32, cols: i32)"),
        "{derived}"
    );
    // the kernel parameter may have any name
    assert!(
        derived.contains("tile = register_tensor<f32>[32]"),
        "{derived}"
    );
}
