//! `tilus cache`: what the on-disk cache holds.

use tilus::compile::cache;
use tilus::tune::table;

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// `tilus cache ls`.
pub fn ls() {
    println!("cache: {}", cache::cache_root().display());
    let programs = cache::list_programs();
    println!("\n{} programs", programs.len());
    for p in &programs {
        let name = p
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match &p.meta {
            Some(m) => println!(
                "  {name:<40} regs {:>3}  spills {:>4}  nvrtc {:>5.2}s  {:>9}",
                m.report.registers,
                m.report.spill_stores,
                m.compile_seconds,
                size(p.bytes)
            ),
            None => println!(
                "  {name:<40} incomplete or corrupt (rebuilt on next use)  {:>9}",
                size(p.bytes)
            ),
        }
    }
    let tables = table::list();
    println!("\n{} dispatch tables", tables.len());
    for (path, t) in &tables {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("  {name:<40} {} decisions  ({})", t.entries.len(), t.script);
    }
}

/// `tilus cache show NAME`: a program entry (by directory name or prefix) or a dispatch table.
pub fn show(name: &str) -> Result<(), String> {
    for p in cache::list_programs() {
        let dir = p
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if dir.starts_with(name) {
            println!("{}", p.dir.display());
            match p.meta {
                Some(m) => {
                    println!(
                        "kernel {}  key {}\nnvrtc {}  arch {}  options {}",
                        m.kernel,
                        m.key,
                        m.nvrtc,
                        m.arch,
                        m.options.join(" ")
                    );
                    println!(
                        "registers {}  spill stores {}  spill loads {}  stack {}  compiled in {:.3}s",
                        m.report.registers, m.report.spill_stores, m.report.spill_loads, m.report.stack_frame, m.compile_seconds
                    );
                }
                None => println!("incomplete or corrupt entry"),
            }
            println!("source: {}", p.dir.join("source.cu").display());
            return Ok(());
        }
    }
    for (path, t) in table::list() {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file.starts_with(name) || t.script.ends_with(name) {
            println!("{}\nscript {}\nspace {}", path.display(), t.script, t.space);
            for (key, e) in &t.entries {
                let chosen: Vec<String> =
                    e.chosen.iter().map(|(n, v)| format!("{n}={v}")).collect();
                println!("\n{key}\n  chosen: {}", chosen.join(" "));
                for c in &e.candidates {
                    match c.latency_ms {
                        Some(ms) => println!("  {:<36} {:<9} {ms:.4} ms", c.config, c.status),
                        None => println!(
                            "  {:<36} {:<9} {}",
                            c.config,
                            c.status,
                            c.reason.clone().unwrap_or_default()
                        ),
                    }
                }
            }
            return Ok(());
        }
    }
    Err(format!(
        "nothing in {} matches `{name}`",
        cache::cache_root().display()
    ))
}

/// `tilus cache clean`.
pub fn clean() -> Result<(), String> {
    let freed = cache::clean().map_err(|e| e.to_string())?;
    println!(
        "removed {} from {}",
        size(freed),
        cache::cache_root().display()
    );
    Ok(())
}
