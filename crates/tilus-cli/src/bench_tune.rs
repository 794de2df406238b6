//! `tilus bench tune` and `tilus bench launch`: the host-side costs of the autotuned matmuls.
//!
//! `tune --version vN` (v0 by default; any matmul version of the registry, each of which has
//! an autotuned constructor, [`tilus_bench::registry::MatmulVersion::tuned`]) times first
//! calls, each in a new process running `bench first-call` against one fresh cache directory:
//!
//! - cold first call: compile every candidate of the version's space and benchmark the
//!   survivors, with an empty cache directory;
//! - warm first call in a new process: everything cached (no NVRTC run, no benchmarking);
//! - CUDA context creation, reported separately (it is paid by any CUDA program).
//!
//! `launch` (v0 only: it rebuilds v0's kernel parameters by hand) times the steady-state host
//! time per launch through the public API, tensor maps included, beside a raw cudarc launch of
//! the same cubin with arguments prepared once.

use crate::out::{out, outln, CliError, CliResult};
use hopper_matmul::v0::MatmulTma;
use std::time::Instant;
use tilus::cudarc::driver::{DevicePtr, LaunchConfig};
use tilus::cudarc::nvrtc::Ptx;
use tilus::ir::KernelParam;
use tilus::runtime::Device;
use tilus::tune::{Autotuned, TuneOptions};
use tilus_bench::harness::Problem;
use tilus_bench::registry::{Entry, TunedFn};
use tilus_bench::size::Size;
use tilus_bench::workloads::matmul::DIMS;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn driver(e: impl std::fmt::Debug) -> CliError {
    CliError::Failed(format!("{e:?}"))
}

/// A matmul size by the one rule, whose host buffers this machine can hold.
fn size(text: &str) -> CliResult<(usize, usize, usize)> {
    let [m, n, k] = Size::parse(DIMS, text)?.dims()?;
    Problem::ensure_host(m, n, k)?;
    Ok((m, n, k))
}

/// The registry's entry of a matmul version, its name and its autotuned constructor; an
/// unknown name is a usage error that lists the versions.
fn version(name: &str) -> CliResult<(&'static Entry, &'static str, TunedFn)> {
    let e = crate::kernels().matmul_version(name)?;
    match &e.matmul {
        Some(mv) => {
            let (v, tuned) = (mv.version, mv.tuned);
            Ok((e, v, tuned))
        }
        None => Err(CliError::Failed(format!(
            "{} is not a matmul version",
            e.name
        ))),
    }
}

/// Opens the device and runs the first (tuning or dispatching) call of the autotuned version:
/// building it, choosing its configuration for the problem (compiling and benchmarking the
/// candidates when the cache has no decision), the launch and the synchronization. Prints the
/// timings in a line the parent can read.
pub fn first_call(size_text: &str, label: &str, version_name: &str) -> CliResult<()> {
    let (m, n, k) = size(size_text)?;
    let (_, v, tuned) = version(version_name)?;
    let t = Instant::now();
    let device = Device::open(0)?;
    let context_ms = ms(t);
    let stream = device.stream().clone();
    let mut p = Problem::new(&stream, m, n, k, 1)?;
    stream.synchronize().map_err(driver)?;
    let t = Instant::now();
    let kernel = tuned(&device)?;
    kernel.launch(&stream, &mut p)?;
    stream.synchronize().map_err(driver)?;
    let first_ms = ms(t);
    outln!("RESULT {label} context_ms={context_ms:.1} first_call_ms={first_ms:.1} version={v}");
    if let Some(table) = kernel.table_path() {
        outln!("table: {}", table.display());
    }
    Ok(())
}

/// Cold (fresh cache) and warm (new process, same cache) first calls of one version.
pub fn tune(size_text: &str, version_name: &str) -> CliResult<bool> {
    let (m, n, k) = size(size_text)?;
    let (e, v, _) = version(version_name)?;
    // no GPU: say so here, not as the first child's failure
    Device::open(0)?;
    let dir = std::env::temp_dir().join(format!("tilus-bench-tune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let exe = std::env::current_exe().map_err(CliError::failed)?;
    let arg = format!("{m}x{n}x{k}");
    let run = |label: &str| -> CliResult<String> {
        let out = std::process::Command::new(&exe)
            .args(["bench", "first-call", "--size", &arg, "--label", label])
            .args(["--version", v])
            .env("TILUS_CACHE_DIR", &dir)
            .output()
            .map_err(CliError::failed)?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            // the child already said `error: ...`; say it once
            let err = String::from_utf8_lossy(&out.stderr);
            let err = err.trim().strip_prefix("error: ").unwrap_or(err.trim());
            return Err(CliError::Failed(format!(
                "{label} run failed ({}): {}{err}",
                out.status, text
            )));
        }
        Ok(text)
    };
    outln!(
        "{v} ({}) at {arg}: first calls over its {} configurations, in new processes",
        e.name,
        (e.space)().len()
    );
    let runs = (|| -> CliResult<[String; 3]> { Ok([run("cold")?, run("warm")?, run("warm")?]) })();
    let _ = std::fs::remove_dir_all(&dir);
    let [cold, warm, warm2] = runs?;
    out!("{cold}{warm}{warm2}");
    Ok(true)
}

/// Host time per launch: the public API against a raw cudarc launch of the same cubin.
pub fn launch(size_text: &str, launches: usize) -> CliResult<bool> {
    let (m, n, k) = size(size_text)?;
    if launches == 0 {
        return Err(CliError::Usage("--launches must be at least 1".into()));
    }
    let device = Device::open(0)?;
    let stream = device.stream().clone();
    let mut p = Problem::new(&stream, m, n, k, 2)?;
    let tuned: Autotuned<MatmulTma> = Autotuned::with_options(
        &device,
        TuneOptions {
            progress: Some(false),
            ..Default::default()
        },
    )?;
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    tuned.launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut p.c))?;
    stream.synchronize().map_err(driver)?;
    let batch = launches.min(20);
    let time_api = |p: &mut Problem| -> CliResult<f64> {
        let mut total = 0.0;
        for _ in 0..launches / batch {
            let t = Instant::now();
            for _ in 0..batch {
                tuned.launch(&stream, (mi, ni, ki, &p.a, &p.b, &mut p.c))?;
            }
            total += t.elapsed().as_secs_f64();
            stream.synchronize().map_err(driver)?;
        }
        Ok(total / (launches / batch * batch) as f64 * 1e6)
    };
    // the same cubin through cudarc, arguments prepared once
    let values = <<MatmulTma as tilus::Script>::Args as tilus::lang::ArgList>::host_values(
        &(mi, ni, ki, &p.a, &p.b, &mut p.c),
        &stream,
    );
    let chosen = tuned.choose(&stream, &values)?;
    let compiled = tilus::build(&chosen.config, &[n as i64, k as i64])?;
    let module = device
        .context()
        .load_module(Ptx::from_binary(compiled.cubin.clone()))
        .map_err(driver)?;
    let func = module
        .load_function(&compiled.plan.kernel_name)
        .map_err(driver)?;
    let mut maps = vec![];
    for prm in &compiled.plan.params {
        if let KernelParam::TensorMap(spec) = prm {
            let (ptr, rows) = if spec.ptr_arg == 3 {
                (p.a.device_ptr(&stream).0, m)
            } else {
                (p.b.device_ptr(&stream).0, n)
            };
            maps.push(tilus::runtime::tensor_map::encode(
                spec,
                "raw",
                ptr,
                &[rows as i64, k as i64],
                &[k as i64, 1],
            )?);
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
        .map_err(driver)?;
    }
    // Parameters prepared once: the floor of what any launch path can cost.
    let (mut pa, mut pb, mut pc) = (
        p.a.device_ptr(&stream).0,
        p.b.device_ptr(&stream).0,
        p.c.device_ptr(&stream).0,
    );
    let mut mv = mi;
    let [map_a, map_b] = maps.as_mut_slice() else {
        return Err(CliError::Failed(format!(
            "v0 was expected to use two tensor maps, its plan has {}",
            maps.len()
        )));
    };
    let mut params: Vec<*mut std::ffi::c_void> = vec![
        &mut mv as *mut i32 as *mut _,
        &mut pa as *mut u64 as *mut _,
        &mut pb as *mut u64 as *mut _,
        &mut pc as *mut u64 as *mut _,
        map_a as *mut _ as *mut _,
        map_b as *mut _ as *mut _,
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
            .map_err(driver)?;
        }
        raw_total += t.elapsed().as_secs_f64();
        stream.synchronize().map_err(driver)?;
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
        let chosen = tuned.choose(&stream, &values)?;
        chosen.kernel.dry_run(&values)?;
    }
    let own_us = t.elapsed().as_secs_f64() / launches as f64 * 1e6;
    outln!(
        "launch overhead at {m}x{n}x{k} ({} blocks), {launches} launches in batches of {batch}: \
         tilus Autotuned::launch {api_us:.2} us/launch, raw cuLaunchKernel {raw_us:.2} us/launch, \
         tilus host work without the driver call {own_us:.2} us/launch",
        cfg.grid_dim.0 * cfg.grid_dim.1
    );
    Ok(true)
}
