//! Copies by threads (`copy_async`): a box of a view with any row pitch and offset into a
//! shared tile, and a ring of stages that sums rows while the next chunks are in flight. The
//! interpreter (`interp/copy_async.rs`), NVRTC and the GPU run the same scripts. Marked calls:
//! `copy`, `read`, `wait`.

use half::f16;
use tilus::prelude::*;

use crate::common::mark;

/// The planted bugs of [`CopyBox`].
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum CopyBug {
    /// Warp 0 reads the tile before any wait.
    ReadBeforeWait,
    /// Every thread waits for its own copies, but no `sync` follows before warp 0 reads them all.
    NoSync,
    /// The kernel ends with the copy in flight (nothing reads the tile).
    NeverWaited,
    /// Warp 0 overwrites the tile with ordinary stores while the copy is in flight.
    StoreWhileInFlight,
    /// Not a bug: the same box copied twice before one wait (both land the same bytes).
    CopyTwice,
}

/// Copies the `[rows, cols]` box at `at` of a `[view.0, view.1]` f16 view whose rows are
/// `pitch` elements apart into a shared tile with `copy_async` (every thread of `warps` warps
/// copies its part), then warp 0 writes the tile out through registers: the view's elements,
/// zeros outside it.
#[derive(Clone, Debug, Hash)]
pub struct CopyBox {
    pub rows: i32,
    pub cols: i32,
    pub view: (i32, i32),
    pub pitch: i32,
    pub at: (i32, i32),
    pub warps: i32,
    pub bug: Option<CopyBug>,
}

impl CopyBox {
    /// Boxes inside and across the view's edges, pitches of 16-byte rows and of 2-byte ones
    /// (vectors of 16, 8, 4 and 2 bytes), one to four warps.
    pub const CASES: [CopyBox; 6] = [
        CopyBox::new(32, 64, (32, 64), 64, (0, 0), 4),
        CopyBox::new(16, 64, (40, 1000), 1000, (8, 936), 2),
        CopyBox::new(16, 32, (40, 1001), 1001, (30, 3), 4),
        CopyBox::new(8, 48, (20, 100), 102, (16, 62), 1),
        CopyBox::new(24, 40, (24, 36), 36, (-4, 0), 3),
        CopyBox::new(4, 16, (3, 10), 12, (1, -8), 1),
    ];

    /// The box without planted bugs.
    pub const fn new(
        rows: i32,
        cols: i32,
        view: (i32, i32),
        pitch: i32,
        at: (i32, i32),
        warps: i32,
    ) -> CopyBox {
        CopyBox {
            rows,
            cols,
            view,
            pitch,
            at,
            warps,
            bug: None,
        }
    }

    /// Elements of the source buffer.
    pub fn src_len(&self) -> usize {
        ((self.view.0 - 1) * self.pitch + self.view.1) as usize
    }

    /// The CPU reference.
    pub fn expected(&self, src: &[f16]) -> Vec<f16> {
        let mut out = vec![f16::ZERO; (self.rows * self.cols) as usize];
        for r in 0..self.rows {
            for c in 0..self.cols {
                let (gr, gc) = (self.at.0 + r, self.at.1 + c);
                if (0..self.view.0).contains(&gr) && (0..self.view.1).contains(&gc) {
                    out[(r * self.cols + c) as usize] = src[(gr * self.pitch + gc) as usize];
                }
            }
        }
        out
    }
}

impl Script for CopyBox {
    type Args = (Ptr<f16>, PtrMut<f16>);
    fn arg_names() -> &'static [&'static str] {
        &["src", "out"]
    }
    fn body(&self, k: &mut Kernel, (src, out): Handles<Self::Args>) {
        let (rows, cols) = (self.rows, self.cols);
        k.blocks([1]);
        k.warps(self.warps as u32);
        let g = k.global_view_strided(src, [self.view.0, self.view.1], [self.pitch, 1]);
        let o = k.global_view(out, [rows, cols]);
        let s = k.shared_tensor::<f16>([rows, cols]);
        let at = [self.at.0, self.at.1];
        mark("copy", line!(), k.copy_async(&g, at, &s));
        let write_out = |k: &mut Kernel| {
            k.single_warp(0, |k| {
                let t = mark("read", line!(), k.load_shared(&s));
                k.store_global(&o, &t, [0, 0]);
            })
        };
        match self.bug {
            None => {
                k.copy_async_wait_all();
                k.sync();
                write_out(k);
            }
            Some(CopyBug::ReadBeforeWait) => {
                write_out(k);
                k.copy_async_wait_all();
            }
            Some(CopyBug::NoSync) => {
                mark("wait", line!(), k.copy_async_wait_all());
                write_out(k);
            }
            Some(CopyBug::NeverWaited) => {}
            Some(CopyBug::StoreWhileInFlight) => {
                k.single_warp(0, |k| {
                    let zeros = k.register_tensor::<f16>([rows, cols], 0.0);
                    mark("store", line!(), k.store_shared(&s, &zeros));
                });
                k.copy_async_wait_all();
            }
            Some(CopyBug::CopyTwice) => {
                k.copy_async(&g, at, &s);
                k.copy_async_wait_all();
                k.sync();
                write_out(k);
            }
        }
    }
}

/// The planted bugs of [`RingRowSums`].
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum RingBug {
    /// The loop waits for one group too few (`stages - 1` left running, not `stages - 2`).
    WaitOneShort,
    /// No `sync` between the wait and the reads of the stage.
    NoSync,
}

/// Sums each row of a `[ROWS, k_size]` f32 matrix, `CHUNK` columns at a time, through a
/// `stages`-stage ring of shared tiles filled with `copy_async`: `stages - 1` chunks are in
/// flight while one is added up. Chunks past `k_size` arrive as zeros. One block of 4 warps.
#[derive(Clone, Debug, Hash)]
pub struct RingRowSums {
    pub stages: i32,
    pub bug: Option<RingBug>,
}

impl RingRowSums {
    /// Rows of the matrix.
    pub const ROWS: i32 = 16;
    /// Columns per chunk.
    pub const CHUNK: i32 = 32;

    /// The ring without planted bugs.
    pub const fn new(stages: i32) -> RingRowSums {
        RingRowSums { stages, bug: None }
    }

    /// The CPU reference in f64 (the kernel adds in another order: compare with a tolerance).
    pub fn expected(x: &[f32], k_size: usize) -> Vec<f64> {
        x.chunks(k_size)
            .map(|row| row.iter().map(|&v| f64::from(v)).sum())
            .collect()
    }
}

impl Script for RingRowSums {
    type Args = (i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["k_size", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (k_size, x, out): Handles<Self::Args>) {
        let (rows, chunk, stages) = (Self::ROWS, Self::CHUNK, self.stages);
        k.blocks([1]);
        k.warps(4);
        let g = k.global_view::<f32>(x, [Scalar::from(rows), k_size.into()]);
        let o = k.global_view::<f32>(out, [rows]);
        let ring = k.shared_tensor::<f32>([stages, rows, chunk]);
        let acc = k.register_tensor::<f32>([rows, chunk], 0.0);
        for s in 0..stages - 1 {
            k.copy_async(&g, [0, s * chunk], &ring.at(s));
            k.copy_async_commit_group();
        }
        let chunks = cdiv(k_size, chunk);
        let pending = match self.bug {
            Some(RingBug::WaitOneShort) => stages - 1,
            _ => stages - 2,
        };
        k.for_range(0, chunks, 1, |k, i| {
            k.copy_async_wait_group(pending as u32);
            if self.bug != Some(RingBug::NoSync) {
                k.sync();
            }
            let next = i + (stages - 1);
            let (fill, use_) = (k.let_i32(next.clone() % stages), k.let_i32(i % stages));
            k.copy_async(&g, [Scalar::from(0), next * chunk], &ring.at(fill));
            k.copy_async_commit_group();
            let t = mark("read", line!(), k.load_shared(&ring.at(use_)));
            k.assign_tile(&acc, acc + t);
        });
        k.copy_async_wait_all();
        let sums = k.sum(acc, 1, false);
        k.store_global(&o, &sums, [0]);
    }
}
