//! The ptxas resource report: registers, spills, stack and shared memory, read from the
//! `--ptxas-options=-v` lines of the NVRTC log.

use serde::{Deserialize, Serialize};

/// Resources of a compiled kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceReport {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes spilled to local memory (stores).
    pub spill_stores: u32,
    /// Bytes reloaded from local memory.
    pub spill_loads: u32,
    /// Stack frame in bytes.
    pub stack_frame: u32,
    /// Static shared memory in bytes (the planned region is dynamic and reported separately).
    pub static_shared: u32,
    /// Whether ptxas serialized the kernel's wgmmas (its C7510-C7515 notes: registers written
    /// under a product in flight, a wait count it cannot prove, or too few registers), the
    /// first ptxas note naming why: each product then waits for the one before, as slow as a
    /// spill and silent in every other column.
    #[serde(default)]
    pub serialized_wgmma: Option<String>,
    /// Bytes of machine code (the cubin's `.text` section of the kernel; 16 per SASS
    /// instruction): a kernel whose warps run far more code than the instruction cache holds
    /// stalls for instructions (ncu's `no_instruction`). 0 when unknown.
    #[serde(default)]
    pub code_bytes: u32,
}

/// The size of kernel `name`'s machine code in `cubin` (an ELF file: the `.text.<name>`
/// section), if the file has it.
pub fn code_bytes(cubin: &[u8], name: &str) -> Option<u32> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(cubin).ok()?;
    let section = file.section_by_name(&format!(".text.{name}"))?;
    u32::try_from(section.size()).ok()
}

fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let i = line.find(suffix)?;
    line[..i]
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|s| !s.is_empty())?
        .parse()
        .ok()
}

impl ResourceReport {
    /// Parses the log of one kernel's compilation.
    pub fn parse(log: &str) -> ResourceReport {
        let mut r = ResourceReport::default();
        for line in log.lines() {
            if let Some(v) = number_before(line, " registers") {
                r.registers = v;
            }
            if let Some(v) = number_before(line, " bytes stack frame") {
                r.stack_frame = v;
            }
            if let Some(v) = number_before(line, " bytes spill stores") {
                r.spill_stores = v;
            }
            if let Some(v) = number_before(line, " bytes spill loads") {
                r.spill_loads = v;
            }
            if let Some(v) = number_before(line, " bytes smem") {
                r.static_shared = v;
            }
            if r.serialized_wgmma.is_none()
                && line.contains("wgmma.mma_async instructions are serialized")
            {
                let why = line.split_once("serialized").map_or(line, |(_, why)| why);
                r.serialized_wgmma = Some(why.trim().trim_end_matches('.').to_string());
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_ptxas_lines() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
                   ptxas info    : Function properties for k\n    \
                   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 168 registers, used 1 barriers, 16 bytes smem, 400 bytes cmem[0]\n";
        let r = ResourceReport::parse(log);
        assert_eq!(
            r,
            ResourceReport {
                registers: 168,
                spill_stores: 4,
                spill_loads: 12,
                stack_frame: 8,
                static_shared: 16,
                serialized_wgmma: None,
                code_bytes: 0,
            }
        );
    }

    #[test]
    fn a_file_that_is_not_a_cubin_has_no_code_size() {
        assert_eq!(code_bytes(b"not an ELF file", "k"), None);
        assert_eq!(code_bytes(&[], "k"), None);
    }

    #[test]
    fn reads_that_ptxas_serialized_the_wgmmas() {
        let log =
            "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions \
                   are serialized due to the presence of Extern calls in the function 'k'.\n\
                   ptxas info    : Used 96 registers\n";
        let r = ResourceReport::parse(log);
        assert_eq!(r.registers, 96);
        assert_eq!(
            r.serialized_wgmma.as_deref(),
            Some("due to the presence of Extern calls in the function 'k'")
        );
        assert_eq!(
            ResourceReport::parse("ptxas info    : Used 96 registers\n").serialized_wgmma,
            None
        );
    }
}
