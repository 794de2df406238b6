//! Emitters for copies by threads: each thread walks its vectors of the box (the instruction's
//! layout) and issues one `cp.async` per vector — `.cg` (L2 only) for 16 bytes, `.ca` for 4
//! and 8 — with the number of bytes inside the view as the source size, so that the hardware
//! fills the rest of the vector with zeros. Copies of fewer than 4 bytes (16-bit elements the
//! alignment leaves one at a time) are ordinary loads and stores. `commit_group` and
//! `wait_group` are one instruction each.

use super::memory::{global_stride_text, open_first_copy, smem_address};
use super::{Emitter, Helper};
use crate::ir::CpAsyncInst;

pub(super) fn emit(e: &mut Emitter, i: &CpAsyncInst) {
    match i {
        CpAsyncInst::Copy {
            src,
            dst,
            offsets,
            vector,
            ..
        } => {
            let l = i.layout(e.p).expect("a copy has a layout");
            let width = i64::from(vector.expect("vector widths are chosen by lowering"));
            let g = e.p.global(*src);
            let elem = i64::from(g.dtype.nbytes());
            let bytes = width * elem;
            let ptr = e.p.var(g.ptr).name.clone();
            let shape: Vec<String> = g.shape.iter().map(|s| e.expr(s)).collect();
            let strides: Vec<String> = g.strides.iter().map(|s| global_stride_text(e, s)).collect();
            let rank = shape.len();
            let (tt, lt, ls) = (l.thread_terms(), l.local_terms(), l.local_size());
            let threads = e.tid().threads as i64;
            let tid = e.tid().name.clone();
            e.open("");
            let first = open_first_copy(e, &l);
            for (d, terms) in tt.iter().enumerate() {
                let t = e.terms(terms, &tid, threads);
                e.line(format!("const i32 tilus_t{d} = {t};"));
            }
            e.line("#pragma unroll");
            e.open(format!("for (int l = 0; l < {ls}; l += {width})"));
            let mut inside = vec![];
            let mut addr = vec![];
            let mut tile = vec![];
            for d in 0..rank {
                e.line(format!(
                    "const i32 tilus_x{d} = tilus_t{d} + {};",
                    e.terms(&lt[d], "l", ls)
                ));
                e.line(format!(
                    "const i32 tilus_c{d} = {} + tilus_x{d};",
                    e.expr(&offsets[d])
                ));
                tile.push(format!("tilus_x{d}"));
                if d + 1 < rank {
                    inside.push(format!("(u32)(tilus_c{d}) < (u32)({})", shape[d]));
                }
                match strides[d].as_str() {
                    "0" => {}
                    "1" => addr.push(format!("tilus_c{d}")),
                    s => addr.push(format!("(i64)tilus_c{d} * {s}")),
                }
            }
            let last = rank - 1;
            let n = &shape[last];
            // elements of the vector inside the view: the vector starts at a multiple of its
            // width (lowering checked the offset), so it is cut at its end only
            inside.push(format!("(u32)(tilus_c{last}) < (u32)({n})"));
            let count = format!(
                "({}) ? min((i32)({n}) - tilus_c{last}, {width}) : 0",
                inside.join(" && ")
            );
            e.line(format!("const i32 tilus_in = {count};"));
            let place = if addr.is_empty() {
                ptr.clone()
            } else {
                format!("{ptr} + {}", addr.join(" + "))
            };
            // outside the view nothing is read: the view's first element stands in
            e.line(format!(
                "const void* tilus_src = tilus_in > 0 ? (const void*)({place}) : (const void*)({ptr});"
            ));
            let to = smem_address(e, dst, &tile);
            if bytes >= 4 {
                e.use_helper(Helper::CpAsync(CpAsyncHelper::Copy(bytes as u8)));
                e.line(format!(
                    "tilus_cp_async_{bytes}({to}, tilus_src, (u32)tilus_in * {elem}u);"
                ));
            } else {
                // a 16-bit element alone: an ordinary copy, zero outside the view
                e.use_helper(Helper::Memory(super::memory::MemoryHelper::StShared));
                e.line(format!(
                    "tilus_st_shared_u16({to}, tilus_in > 0 ? *(const u16*)tilus_src : (u16)0);"
                ));
            }
            e.close();
            if first {
                e.close();
            }
            e.close();
        }
        CpAsyncInst::Commit => {
            e.use_helper(Helper::CpAsync(CpAsyncHelper::Commit));
            e.line("tilus_cp_async_commit_group();");
        }
        CpAsyncInst::Wait { pending } => {
            e.line(format!(
                "asm volatile(\"cp.async.wait_group {pending};\" ::: \"memory\");"
            ));
        }
    }
}

/// Helper functions of this family's generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum CpAsyncHelper {
    /// `cp.async` of 4, 8 or 16 bytes, zero-filled beyond the source size.
    Copy(u8),
    /// `cp.async.commit_group`.
    Commit,
}

/// The C++ text of a helper.
pub(crate) fn helper_text(h: CpAsyncHelper) -> String {
    match h {
        CpAsyncHelper::Copy(bytes) => {
            // 16 bytes may bypass L1 (.cg); smaller copies go through it (.ca)
            let cache = if bytes == 16 { "cg" } else { "ca" };
            format!(
                r#"// Copies {bytes} bytes from global to shared memory asynchronously; bytes past `src_bytes` are zeros.
static __device__ __forceinline__ void tilus_cp_async_{bytes}(u32 dst, const void* src, u32 src_bytes) {{
  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {bytes}, %2;" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}}
"#
            )
        }
        CpAsyncHelper::Commit => r#"// Closes this thread's group of cp.async copies.
static __device__ __forceinline__ void tilus_cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
"#
        .into(),
    }
}
