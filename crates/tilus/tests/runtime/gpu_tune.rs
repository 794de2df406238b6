//! The autotuner on the GPU: two processes tuning the same script into one cache end in one
//! consistent table with every program compiled once, and a space in which nothing works is an
//! error that lists every candidate and its reason.

use crate::common::child;
use std::path::PathBuf;
use tilus::cudarc::driver::CudaSlice;
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus::tune::{Binding, Space, Tunable};

/// `out[i] = block` for i < n: each configuration writes a different value, so the result shows
/// which one ran.
#[derive(Clone, Debug, Hash)]
struct Mark {
    block: i32,
    warps: u32,
}

impl Script for Mark {
    type Args = (i32, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (n, out): Handles<Self::Args>) {
        k.blocks([cdiv(n, self.block)]);
        k.warps(self.warps);
        let off = k.let_i32(self.block * k.block_idx().x);
        let t = k.register_tensor::<f32>([self.block], self.block as f64);
        let g = k.global_view::<f32>(out, [n]);
        k.store_global(&g, &t, [off]);
    }
}

impl Tunable for Mark {
    fn space() -> Space {
        Space::new()
            .values("block", &[64, 128, 256])
            .unwrap()
            .values("warps", &[1, 2])
            .unwrap()
    }
    fn from_binding(b: &Binding) -> Result<Mark, String> {
        Ok(Mark {
            block: b.get("block").ok_or("block")? as i32,
            warps: b.get("warps").ok_or("warps")? as u32,
        })
    }
}

/// Every candidate needs 1024+ registers a thread: nothing survives.
#[derive(Clone, Debug, Hash)]
struct Hopeless(Mark);

impl Script for Hopeless {
    type Args = (i32, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        k.blocks([1]);
        Mark {
            block: self.0.block,
            warps: 1,
        }
        .body(k, args)
    }
}

impl Tunable for Hopeless {
    fn space() -> Space {
        Space::new().values("block", &[32768, 65536]).unwrap()
    }
    fn from_binding(b: &Binding) -> Result<Hopeless, String> {
        Ok(Hopeless(Mark {
            block: b.get("block").ok_or("block")? as i32,
            warps: 1,
        }))
    }
}

fn run_once(device: &Device, n: usize) -> (Vec<f32>, String) {
    let stream = device.stream();
    let mut out: CudaSlice<f32> = stream.clone_htod(&vec![f32::NAN; n]).unwrap();
    let tuned = Mark::autotuned(device).unwrap();
    tuned.launch(stream, (n as i32, &mut out)).unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    (got, tuned.table_path().display().to_string())
}

/// Run as a child process by the test below.
#[test]
#[ignore = "needs a CUDA GPU"]
fn child_tune() {
    if !child::has_child_cache() {
        return;
    }
    let device = Device::open(0).expect("a Hopper GPU");
    let (got, _) = run_once(&device, 1000);
    let ok = got.iter().all(|&x| x == 64.0 || x == 128.0 || x == 256.0)
        && got.windows(2).all(|w| w[0] == w[1]);
    println!(
        "CHILD-RESULT ok={ok} nvrtc_runs={}",
        tilus::compile::nvrtc_runs()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_processes_tuning_at_once_agree_and_compile_each_program_once() {
    let dir: PathBuf = std::env::temp_dir().join(format!("tilus-tune-race-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let test = child::test_name(module_path!(), "child_tune");
    let children: Vec<_> = (0..2)
        .map(|_| {
            child::command(&test, Some(&dir))
                .arg("--include-ignored")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<String> = children
        .into_iter()
        .map(|c| String::from_utf8_lossy(&c.wait_with_output().unwrap().stdout).into_owned())
        .collect();
    assert!(
        outputs.iter().all(|o| o.contains("CHILD-RESULT ok=true")),
        "{outputs:?}"
    );
    let runs: usize = outputs
        .iter()
        .map(|o| {
            let tail = o.split("nvrtc_runs=").nth(1).unwrap_or("0");
            tail.split_whitespace()
                .next()
                .unwrap_or("0")
                .parse::<usize>()
                .unwrap_or(0)
        })
        .sum();
    assert_eq!(
        runs, 6,
        "six configurations, each compiled by exactly one of the two processes: {outputs:?}"
    );
    let tables: Vec<_> = std::fs::read_dir(dir.join("tuning"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(tables.len(), 1);
    let t = tilus::tune::table::read(&tables[0].path());
    assert_eq!(t.entries.len(), 1, "one key: {t:?}");
    let entry = t.entries.values().next().unwrap();
    assert_eq!(entry.candidates.len(), 6);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_space_where_nothing_works_is_an_error_naming_every_candidate() {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    let mut out: CudaSlice<f32> = stream.clone_htod(&[0f32; 64]).unwrap();
    let tuned = Hopeless::autotuned(&device).unwrap();
    let err = tuned.launch(stream, (64, &mut out)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, tilus::Error::Tuning { .. }), "{err}");
    assert!(
        text.contains("block=32768") && text.contains("block=65536"),
        "{text}"
    );
    assert!(text.contains("registers per thread"), "{text}");
}
