//! Host buffers that may be large. Sizes are multiplied out with overflow checks and compared
//! with what this machine can give before anything is allocated, and the allocation itself is
//! fallible: a size that is too large is an error, never an abort of the process.

use std::fmt;

/// Memory kept free for the work around the buffers (the interpreter's per-batch writes, the
/// report, the allocator's own books).
const MARGIN: u128 = 256 << 20;

/// A host allocation that cannot be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// More than this machine can give (or more than an address space holds).
    #[error("{what} needs {} of host memory, but only {} is available ({limit})", bytes(*.needed), bytes(*.available as u128))]
    TooLarge {
        /// What was to be allocated (`hopper_matmul_v0 at 65536x65536x8`).
        what: String,
        /// Bytes it needs.
        needed: u128,
        /// Bytes available.
        available: u64,
        /// Which limit applies.
        limit: &'static str,
    },
    /// The allocator refused (a limit this module could not see).
    #[error("{what}: the allocator refused {}", bytes(*.needed))]
    Refused {
        /// What was to be allocated.
        what: String,
        /// Bytes asked for.
        needed: u128,
    },
}

/// `17179869184` → `16.0 GiB`.
pub fn bytes(b: u128) -> impl fmt::Display {
    struct B(u128);
    impl fmt::Display for B {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.0 < 1024 {
                return write!(f, "{} bytes", self.0);
            }
            let mut v = self.0 as f64 / 1024.0;
            for unit in ["KiB", "MiB", "GiB", "TiB", "PiB"] {
                if v < 1024.0 {
                    return write!(f, "{v:.1} {unit}");
                }
                v /= 1024.0;
            }
            write!(f, "{v:.1} EiB")
        }
    }
    B(b)
}

/// The value of a `Name:   1234 kB` line of a `/proc` file, in bytes.
fn proc_kib(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The soft address-space limit (`ulimit -v`) in bytes, when there is one.
fn address_space_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// What the memory limit of this process's control group leaves (cgroup v2, then v1), when
/// there is a limit.
fn cgroup_room() -> Option<u64> {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let (limit, used) = match read("/sys/fs/cgroup/memory.max") {
        Some(limit) => (limit, read("/sys/fs/cgroup/memory.current").unwrap_or(0)),
        None => (
            read("/sys/fs/cgroup/memory/memory.limit_in_bytes")?,
            read("/sys/fs/cgroup/memory/memory.usage_in_bytes").unwrap_or(0),
        ),
    };
    // "no limit" reads as `max` (v2, not a number) or as a value near 2^63 (v1)
    (limit < 1 << 62).then(|| limit.saturating_sub(used))
}

/// Host memory this process can still take, and which limit that is: the smallest of what the
/// system reports available (free swap included), what the control group's memory limit
/// leaves and what the address-space limit leaves. `None` where none is knowable (not Linux).
pub fn available() -> Option<(u64, &'static str)> {
    let mut best: Option<(u64, &'static str)> = None;
    let mut consider = |v: u64, limit: &'static str| {
        if best.is_none_or(|(b, _)| v < b) {
            best = Some((v, limit));
        }
    };
    if let Ok(info) = std::fs::read_to_string("/proc/meminfo") {
        if let Some(avail) = proc_kib(&info, "MemAvailable:") {
            let swap = proc_kib(&info, "SwapFree:").unwrap_or(0);
            consider(avail.saturating_add(swap), "the system's available memory");
        }
    }
    if let Some(room) = cgroup_room() {
        consider(room, "what the control group's memory limit leaves");
    }
    if let Some(limit) = address_space_limit() {
        let used = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| proc_kib(&s, "VmSize:"))
            .unwrap_or(0);
        consider(
            limit.saturating_sub(used),
            "what the address-space limit `ulimit -v` leaves",
        );
    }
    best
}

/// Checks that `needed` bytes can be allocated for `what`, before allocating any of it.
pub fn ensure(what: &str, needed: u128) -> Result<(), AllocError> {
    if needed > isize::MAX as u128 {
        return Err(AllocError::TooLarge {
            what: what.into(),
            needed,
            available: isize::MAX as u64,
            limit: "the most one address space holds",
        });
    }
    if let Some((available, limit)) = available() {
        if needed + MARGIN > available as u128 {
            return Err(AllocError::TooLarge {
                what: what.into(),
                needed,
                available,
                limit,
            });
        }
    }
    Ok(())
}

/// The number of elements of a buffer with these dimensions, when it fits in `usize`.
pub fn elements(what: &str, dims: &[usize]) -> Result<usize, AllocError> {
    let n = dims.iter().map(|&d| d as u128).product::<u128>();
    usize::try_from(n).map_err(|_| AllocError::TooLarge {
        what: what.into(),
        needed: n,
        available: usize::MAX as u64,
        limit: "the most elements one buffer indexes",
    })
}

/// `len` copies of `value`, allocated fallibly (`try_reserve_exact`).
pub fn try_vec<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>, AllocError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| AllocError::Refused {
        what: what.into(),
        needed: len as u128 * std::mem::size_of::<T>() as u128,
    })?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_beyond_an_address_space_are_errors() {
        let e = ensure("a test", u128::MAX).unwrap_err();
        assert!(e.to_string().contains("a test needs"), "{e}");
        assert!(elements("x", &[usize::MAX, 2]).is_err());
        assert_eq!(elements("x", &[3, 4]).unwrap(), 12);
    }

    #[test]
    fn refused_allocations_are_errors() {
        let e = try_vec("a huge buffer", usize::MAX / 2, 0u64).unwrap_err();
        assert!(matches!(e, AllocError::Refused { .. }), "{e}");
        assert_eq!(try_vec("three", 3, 7u8).unwrap(), vec![7, 7, 7]);
    }

    #[test]
    fn proc_lines_parse() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:    1000 kB\n";
        assert_eq!(proc_kib(text, "MemAvailable:"), Some(1024 * 1000));
        assert_eq!(proc_kib(text, "SwapFree:"), None);
        assert_eq!(bytes(16 << 30).to_string(), "16.0 GiB");
        assert_eq!(bytes(12).to_string(), "12 bytes");
        assert_eq!(bytes(3 << 60).to_string(), "3.0 EiB");
    }
}
