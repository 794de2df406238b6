//! Problem sizes: named dimensions, and one parser with one rule for every command that takes
//! a size. Each dimension is a positive integer that fits the kernels' `i32` arguments; anything
//! else is an error that names the bad part.

use crate::{Error, Result};
use std::fmt;

/// A problem size: one value per named dimension (`m`, `n`, `k` for a matmul; `rows`, `cols`
/// for a copy), each in `1..=i32::MAX`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Size {
    names: &'static [&'static str],
    values: Vec<i32>,
}

/// At most this many characters of a user's text are quoted back in a message.
const QUOTE: usize = 40;

/// The user's text, shortened for a message.
pub(crate) fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE {
        format!("`{text}`")
    } else {
        let head: String = text.chars().take(QUOTE).collect();
        format!("`{head}...`")
    }
}

/// One dimension by the rule: a positive integer that fits in `i32`. `name` is what the
/// message calls it (`m`, `M`, `--max`).
pub fn parse_dim(name: &str, text: &str) -> Result<i32> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::Usage(format!(
            "{name} is empty; expected a positive integer"
        )));
    }
    let digits = t.strip_prefix('+').unwrap_or(t);
    let negative = t.starts_with('-');
    let body = t.strip_prefix('-').unwrap_or(digits);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Usage(format!(
            "{name} = {} is not an integer",
            quote(t)
        )));
    }
    if negative {
        return Err(Error::Usage(format!(
            "{name} = {} is not positive",
            quote(t)
        )));
    }
    match body.parse::<u128>() {
        Ok(0) => Err(Error::Usage(format!("{name} = 0 is not positive"))),
        Ok(v) if v <= i32::MAX as u128 => Ok(v as i32),
        _ => Err(Error::Usage(format!(
            "{name} = {} does not fit the kernel's i32 arguments (at most {})",
            quote(body),
            i32::MAX
        ))),
    }
}

impl Size {
    /// A size from values, checked by the rule.
    pub fn new(names: &'static [&'static str], values: &[i64]) -> Result<Size> {
        if values.len() != names.len() {
            return Err(Error::Usage(format!(
                "a size {} has {} dimensions, got {}",
                Size::form(names),
                names.len(),
                values.len()
            )));
        }
        let values = names
            .iter()
            .zip(values)
            .map(|(n, &v)| parse_dim(n, &v.to_string()))
            .collect::<Result<_>>()?;
        Ok(Size { names, values })
    }

    /// Parses `MxNxK` (as many parts as `names`), e.g. `256x256x256`.
    pub fn parse(names: &'static [&'static str], text: &str) -> Result<Size> {
        let form = Size::form(names);
        let t = text.trim();
        if t.is_empty() {
            return Err(Error::Usage(format!(
                "the size is empty; expected {form} ({})",
                names.join(", ")
            )));
        }
        let parts: Vec<&str> = t.split(['x', 'X']).collect();
        if parts.len() != names.len() {
            return Err(Error::Usage(format!(
                "size {}: expected {form}, {} positive integers separated by `x`, got {} part{}",
                quote(t),
                names.len(),
                parts.len(),
                if parts.len() == 1 { "" } else { "s" }
            )));
        }
        let values = names
            .iter()
            .zip(&parts)
            .map(|(n, p)| parse_dim(n, p))
            .collect::<Result<_>>()
            .map_err(|e| Error::Usage(format!("size {}: {e}", quote(t))))?;
        Ok(Size { names, values })
    }

    /// Parses a comma-separated list of sizes (`4096x4096x4096,8192x8192x8192`).
    pub fn parse_list(names: &'static [&'static str], text: &str) -> Result<Vec<Size>> {
        if text.trim().is_empty() {
            return Err(Error::Usage(format!(
                "the list of sizes is empty; expected {} (comma-separated)",
                Size::form(names)
            )));
        }
        text.split(',').map(|s| Size::parse(names, s)).collect()
    }

    /// How a size of these dimensions is written: `MxNxK`.
    pub fn form(names: &[&str]) -> String {
        names
            .iter()
            .map(|n| n.to_uppercase())
            .collect::<Vec<_>>()
            .join("x")
    }

    /// The names of the dimensions.
    pub fn names(&self) -> &'static [&'static str] {
        self.names
    }

    /// The values, in the order of the names.
    pub fn values(&self) -> &[i32] {
        &self.values
    }

    /// The values as `N` host sizes (`let [m, n, k] = size.dims()?`); an error when the size
    /// has another number of dimensions.
    pub fn dims<const N: usize>(&self) -> Result<[usize; N]> {
        let v: Vec<usize> = self.values.iter().map(|&x| x as usize).collect();
        v.try_into().map_err(|_| {
            Error::Usage(format!(
                "size {self} has {} dimensions; this kernel takes {N}",
                self.values.len()
            ))
        })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.values.iter().map(|v| v.to_string()).collect();
        f.write_str(&parts.join("x"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MNK: &[&str] = &["m", "n", "k"];

    fn err(text: &str) -> String {
        Size::parse(MNK, text).unwrap_err().to_string()
    }

    #[test]
    fn sizes_parse_and_print() {
        let s = Size::parse(MNK, "256x128X64").unwrap();
        assert_eq!(s.values(), &[256, 128, 64]);
        assert_eq!(s.to_string(), "256x128x64");
        assert_eq!(s.dims::<3>().unwrap(), [256, 128, 64]);
        assert!(s.dims::<2>().is_err());
        let max = format!("{0}x{0}x{0}", i32::MAX);
        assert!(Size::parse(MNK, &max).is_ok());
    }

    #[test]
    fn every_bad_part_is_named() {
        assert!(err("").contains("empty"), "{}", err(""));
        assert!(err("abc").contains("got 1 part"), "{}", err("abc"));
        assert!(err("1x2").contains("expected MxNxK"), "{}", err("1x2"));
        assert!(err("1x2x3x4").contains("got 4 parts"));
        assert!(err("99999999999x256x256").contains("m = `99999999999` does not fit"));
        assert!(err("2147483648x1x1").contains("does not fit"));
        assert!(err("-5x8x8").contains("m = `-5` is not positive"));
        assert!(err("8x0x8").contains("n = 0 is not positive"));
        assert!(err("8x8xq").contains("k = `q` is not an integer"));
        assert!(err("8x8x").contains("k is empty"));
        assert!(err("8x8x1.5").contains("not an integer"));
        let long = "1x".repeat(10_000);
        assert!(err(&long).len() < 200, "long input is not quoted in full");
        assert!(Size::parse_list(MNK, "").is_err());
        assert_eq!(Size::parse_list(MNK, "1x1x8,2x2x16").unwrap().len(), 2);
        assert!(Size::parse_list(MNK, "1x1x8,").is_err());
        assert!(Size::new(MNK, &[1, 2]).is_err());
        assert!(Size::new(MNK, &[1, 2, i64::MAX]).is_err());
    }

    #[test]
    fn one_dimension_by_the_rule() {
        assert_eq!(parse_dim("M", " 42 ").unwrap(), 42);
        assert_eq!(parse_dim("M", "+42").unwrap(), 42);
        assert!(parse_dim("M", "-1").is_err());
        assert!(parse_dim("M", "0").is_err());
        assert!(parse_dim("M", "abc").is_err());
        assert!(parse_dim("M", "").is_err());
        assert!(parse_dim("M", "2147483648").is_err());
        assert!(parse_dim("M", &"9".repeat(100)).is_err());
    }
}
