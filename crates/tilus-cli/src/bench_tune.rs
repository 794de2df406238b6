//! `tilus bench tune` and `tilus bench launch`: the host-side costs of the autotuned v0.
//!
//! - cold first call: compile every candidate of the space and benchmark the survivors, with
//!   an empty cache directory;
//! - warm first call in a new process: everything cached (no NVRTC run, no benchmarking);
//! - CUDA context creation, reported separately (it is paid by any CUDA program);
//! - steady-state host time per launch through the public API, tensor maps included, beside a
//!   raw cudarc launch of the same cubin with arguments prepared once.

use hopper_matmul::harness::Problem;
use hopper_matmul::v0::MatmulTma;
use std::time::Instant;
use tilus::cudarc::driver::{DevicePtr, LaunchConfig};
use tilus::cudarc::nvrtc::Ptx;
use tilus::ir::KernelParam;
use tilus::runtime::Device;
use tilus::tune::{Autotuned, Tunable, TuneOptions};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Opens the device and runs the first (tuning or dispatching) call; prints the timings in a
/// line the parent can read.
pub fn first_call(size: (usize, usize, usize), label: &str) -> Result<(), String> {
    let t = Instant::now();
    let device = Device::open(0).map_err(|e| e.to_string())?;
    let context_ms = ms(t);
    let stream = device.stream().clone();
    let (m, n, k) = size;
    let mut p = Problem::new(&stream, m, n, k, 1).map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| format!("{e:?}"))?;
    let t = Instant::now();
    let tuned: Autotuned<MatmulTma> = MatmulTma::autotuned(&device).map_err(|e| e.to_string())?;
    tuned
        .launch(
            &stream,
            (m as i32, n as i32, k as i32, &p.a, &p.b, &mut p.c),
        )
        .map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| format!("{e:?}"))?;
    let first_ms = ms(t);
    let values = vec![
        tilus::lang::HostValue::Int(m as i64),
        tilus::lang::HostValue::Int(n as i64),
        tilus::lang::HostValue::Int(k as i64),
    ];
    let _ = values;
    println!("RESULT {label} context_ms={context_ms:.1} first_call_ms={first_ms:.1}");
    println!("table: {}", tuned.table_path().display());
    Ok(())
}

/// Cold (fresh cache) and warm (new process, same cache) first calls.
pub fn tune(size: (usize, usize, usize)) -> Result<bool, String> {
    let dir = std::env::temp_dir().join(format!("tilus-bench-tune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let arg = format!("{}x{}x{}", size.0, size.1, size.2);
    let run = |label: &str| -> Result<String, String> {
        let out = std::process::Command::new(&exe)
            .args(["bench", "first-call", "--size", &arg, "--label", label])
            .env("TILUS_CACHE_DIR", &dir)
            .output()
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            return Err(format!(
                "{label} run failed: {}{}",
                text,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(text)
    };
    let cold = run("cold")?;
    let warm = run("warm")?;
    let warm2 = run("warm")?;
    print!("{cold}{warm}{warm2}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(true)
}

/// Host time per launch: the public API against a raw cudarc launch of the same cubin.
pub fn launch(size: (usize, usize, usize), launches: usize) -> Result<bool, String> {
    let device = Device::open(0).map_err(|e| e.to_string())?;
    let stream = device.stream().clone();
    let (m, n, k) = size;
    let mut p = Problem::new(&stream, m, n, k, 2).map_err(|e| e.to_string())?;
    let tuned: Autotuned<MatmulTma> = Autotuned::with_options(
        &device,
        TuneOptions {
            progress: Some(false),
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    tuned
        .launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut p.c))
        .map_err(|e| e.to_string())?;
    stream.synchronize().map_err(|e| format!("{e:?}"))?;
    let batch = 20;
    let time_api = |p: &mut Problem| -> Result<f64, String> {
        let mut total = 0.0;
        for _ in 0..launches / batch {
            let t = Instant::now();
            for _ in 0..batch {
                tuned
                    .launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut p.c))
                    .map_err(|e| e.to_string())?;
            }
            total += t.elapsed().as_secs_f64();
            stream.synchronize().map_err(|e| format!("{e:?}"))?;
        }
        Ok(total / (launches / batch * batch) as f64 * 1e6)
    };
    // the same cubin through cudarc, arguments prepared once
    let values = <<MatmulTma as tilus::Script>::Args as tilus::lang::ArgList>::host_values(
        &(mi, ni, ki, &p.a, &p.b, &mut p.c),
        &stream,
    );
    let chosen = tuned.choose(&stream, &values).map_err(|e| e.to_string())?;
    let compiled =
        tilus::build(&chosen.config, &[n as i64, k as i64]).map_err(|e| e.to_string())?;
    let module = device
        .context()
        .load_module(Ptx::from_binary(compiled.cubin.clone()))
        .map_err(|e| format!("{e:?}"))?;
    let func = module
        .load_function(&compiled.plan.kernel_name)
        .map_err(|e| format!("{e:?}"))?;
    let mut maps = vec![];
    for prm in &compiled.plan.params {
        if let KernelParam::TensorMap(spec) = prm {
            let (ptr, rows) = if spec.ptr_arg == 3 {
                (p.a.device_ptr(&stream).0, m)
            } else {
                (p.b.device_ptr(&stream).0, n)
            };
            maps.push(
                tilus::runtime::tensor_map::encode(spec, "raw", ptr, &[rows as i64, k as i64])
                    .map_err(|e| e.to_string())?,
            );
        }
    }
    let cfg = LaunchConfig {
        grid_dim: (
            m.div_ceil(chosen.config.block_m as usize) as u32,
            n.div_ceil(chosen.config.block_n as usize) as u32,
            1,
        ),
        block_dim: (128, 1, 1),
        shared_mem_bytes: compiled.plan.smem_bytes,
    };
    if compiled.plan.smem_bytes > 48 * 1024 {
        func.set_attribute(
            tilus::cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            compiled.plan.smem_bytes as i32,
        )
        .map_err(|e| format!("{e:?}"))?;
    }
    // Parameters prepared once: the floor of what any launch path can cost.
    let (mut pa, mut pb, mut pc) = (
        p.a.device_ptr(&stream).0,
        p.b.device_ptr(&stream).0,
        p.c.device_ptr(&stream).0,
    );
    let mut mv = mi;
    let mut params: Vec<*mut std::ffi::c_void> = vec![
        &mut mv as *mut i32 as *mut _,
        &mut pa as *mut u64 as *mut _,
        &mut pb as *mut u64 as *mut _,
        &mut pc as *mut u64 as *mut _,
        &mut maps[0] as *mut _ as *mut _,
        &mut maps[1] as *mut _ as *mut _,
    ];
    let mut raw_total = 0.0;
    for _ in 0..launches / batch {
        let t = Instant::now();
        for _ in 0..batch {
            // SAFETY: `params` points at live values matching the kernel's signature (m, a, b,
            // c, two tensor maps); the buffers hold the problem and the maps describe them.
            unsafe {
                tilus::cudarc::driver::result::launch_kernel(
                    func.cu_function(),
                    cfg.grid_dim,
                    cfg.block_dim,
                    cfg.shared_mem_bytes,
                    stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(|e| format!("{e:?}"))?;
        }
        raw_total += t.elapsed().as_secs_f64();
        stream.synchronize().map_err(|e| format!("{e:?}"))?;
    }
    let raw_us = raw_total / (launches / batch * batch) as f64 * 1e6;
    let api_us = time_api(&mut p)?;
    // The library's own host work: argument extraction, dispatch, checks, tensor maps and the
    // parameter list, everything but the driver call.
    let t = Instant::now();
    for _ in 0..launches {
        let values = <<MatmulTma as tilus::Script>::Args as tilus::lang::ArgList>::host_values(
            &(mi, ni, ki, &p.a, &p.b, &mut p.c),
            &stream,
        );
        let chosen = tuned.choose(&stream, &values).map_err(|e| e.to_string())?;
        chosen.kernel.dry_run(&values).map_err(|e| e.to_string())?;
    }
    let own_us = t.elapsed().as_secs_f64() / launches as f64 * 1e6;
    println!(
        "launch overhead at {m}x{n}x{k} ({} blocks), {launches} launches in batches of {batch}: \
         tilus Autotuned::launch {api_us:.2} us/launch, raw cuLaunchKernel {raw_us:.2} us/launch, \
         tilus host work without the driver call {own_us:.2} us/launch",
        cfg.grid_dim.0 * cfg.grid_dim.1
    );
    Ok(true)
}
