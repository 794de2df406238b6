//! `tilus cache`: what the on-disk cache holds.

use crate::out::{outln, CliError, CliResult};
use tilus::compile::cache::{self, ProgramEntry};
use tilus::tune::table::{self, TableFile};

fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `tilus cache ls`.
pub fn ls() -> CliResult<()> {
    outln!("cache: {}", cache::cache_root().display());
    let programs = cache::list_programs();
    outln!("\n{} programs", programs.len());
    for p in &programs {
        let name = file_name(&p.dir);
        match &p.meta {
            Some(m) => outln!(
                "  {name:<40} regs {:>3}  spills {:>4}  nvrtc {:>5.2}s  {:>9}",
                m.report.registers,
                m.report.spill_stores,
                m.compile_seconds,
                size(p.bytes)
            ),
            None => outln!(
                "  {name:<40} incomplete or corrupt (rebuilt on next use)  {:>9}",
                size(p.bytes)
            ),
        }
    }
    let tables = table::list();
    outln!("\n{} dispatch tables", tables.len());
    for (path, t) in &tables {
        outln!(
            "  {:<40} {} decisions  ({})",
            file_name(path),
            t.entries.len(),
            t.script
        );
    }
    Ok(())
}

/// One thing `cache show` can show.
enum Found {
    Program(ProgramEntry),
    Table(std::path::PathBuf, TableFile),
}

impl Found {
    fn name(&self) -> String {
        match self {
            Found::Program(p) => file_name(&p.dir),
            Found::Table(path, _) => file_name(path),
        }
    }
}

fn show_program(p: ProgramEntry) -> CliResult<()> {
    outln!("{}", p.dir.display());
    match p.meta {
        Some(m) => {
            outln!(
                "kernel {}  key {}\nnvrtc {}  arch {}  options {}",
                m.kernel,
                m.key,
                m.nvrtc,
                m.arch,
                m.options.join(" ")
            );
            outln!(
                "registers {}  spill stores {}  spill loads {}  stack {}  compiled in {:.3}s",
                m.report.registers,
                m.report.spill_stores,
                m.report.spill_loads,
                m.report.stack_frame,
                m.compile_seconds
            );
        }
        None => outln!("incomplete or corrupt entry"),
    }
    outln!("source: {}", p.dir.join("source.cu").display());
    Ok(())
}

fn show_table(path: &std::path::Path, t: &TableFile) -> CliResult<()> {
    outln!("{}\nscript {}\nspace {}", path.display(), t.script, t.space);
    for (key, e) in &t.entries {
        let chosen: Vec<String> = e.chosen.iter().map(|(n, v)| format!("{n}={v}")).collect();
        outln!("\n{key}\n  chosen: {}", chosen.join(" "));
        for c in &e.candidates {
            match c.latency_ms {
                Some(ms) => outln!("  {:<36} {:<9} {ms:.4} ms", c.config, c.status),
                None => outln!(
                    "  {:<36} {:<9} {}",
                    c.config,
                    c.status,
                    c.reason.clone().unwrap_or_default()
                ),
            }
        }
    }
    Ok(())
}

/// At most this many matches are listed when a name is ambiguous.
const LISTED: usize = 20;

/// `tilus cache show NAME`: a program entry or a dispatch table, by its full name or a prefix
/// (a table also by the end of its script's name). An exact name wins; a prefix must match
/// one thing only; an empty name is an error.
pub fn show(name: &str) -> CliResult<()> {
    if name.trim().is_empty() {
        return Err(CliError::Usage(
            "the entry name is empty; `tilus cache ls` lists the names".into(),
        ));
    }
    let mut found: Vec<Found> = cache::list_programs()
        .into_iter()
        .filter(|p| file_name(&p.dir).starts_with(name))
        .map(Found::Program)
        .collect();
    found.extend(
        table::list()
            .into_iter()
            .filter(|(path, t)| file_name(path).starts_with(name) || t.script.ends_with(name))
            .map(|(path, t)| Found::Table(path, t)),
    );
    if let Some(i) = found.iter().position(|f| f.name() == name) {
        found = vec![found.swap_remove(i)];
    }
    match found.len() {
        0 => Err(CliError::Failed(format!(
            "nothing in {} matches `{name}`",
            cache::cache_root().display()
        ))),
        1 => match found.pop() {
            Some(Found::Program(p)) => show_program(p),
            Some(Found::Table(path, t)) => show_table(&path, &t),
            None => Ok(()),
        },
        n => {
            let mut names: Vec<String> = found.iter().take(LISTED).map(Found::name).collect();
            if n > LISTED {
                names.push(format!("... and {} more", n - LISTED));
            }
            Err(CliError::Failed(format!(
                "`{name}` matches {n} entries; give more of the name:\n  {}",
                names.join("\n  ")
            )))
        }
    }
}

/// `tilus cache clean`.
pub fn clean() -> CliResult<()> {
    let freed = cache::clean().map_err(|e| {
        CliError::Failed(format!(
            "cannot clean {}: {e}",
            cache::cache_root().display()
        ))
    })?;
    outln!(
        "removed {} from {}",
        size(freed),
        cache::cache_root().display()
    );
    Ok(())
}
