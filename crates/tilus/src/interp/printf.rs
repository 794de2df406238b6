//! The interpreter's `printf`: the conversions the formats of `ir/inst/debug.rs` use
//! (`%d`, `%u`, `%lld`, `%llu`, `%g` with a precision, `%s`, a minimum width, `%%`), giving
//! the text the C library gives device `printf` on the GPU's host, so that a program prints
//! the same on both.

/// A `printf` argument.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg {
    /// `%d`, `%lld`.
    Int(i64),
    /// `%u`, `%llu`.
    UInt(u64),
    /// `%g` (floats are passed as doubles).
    Float(f64),
    /// `%s`.
    Str(String),
}

/// `format` with its conversions replaced by `args`, in order. A conversion without an
/// argument prints nothing (the formats are built with their arguments, so it does not
/// happen).
pub(crate) fn sprintf(format: &str, args: &[Arg]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width = 0usize;
        let mut precision: Option<usize> = None;
        while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
            width = width * 10 + d as usize;
            chars.next();
        }
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = 0usize;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                p = p * 10 + d as usize;
                chars.next();
            }
            precision = Some(p);
        }
        while chars.peek() == Some(&'l') {
            chars.next();
        }
        let text = match chars.next() {
            Some('%') => "%".to_string(),
            Some('d' | 'u' | 'g' | 's') => match args.next() {
                Some(Arg::Int(v)) => v.to_string(),
                Some(Arg::UInt(v)) => v.to_string(),
                Some(Arg::Float(v)) => format_g(*v, precision.unwrap_or(6)),
                Some(Arg::Str(s)) => s.clone(),
                None => String::new(),
            },
            Some(other) => format!("%{other}"),
            None => "%".to_string(),
        };
        let pad = width.saturating_sub(text.chars().count());
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(&text);
    }
    out
}

/// C's `%.<precision>g`: `%e` or `%f` style, whichever the exponent calls for, with trailing
/// zeros removed; `nan` for every NaN, `inf` and `-inf`.
pub(crate) fn format_g(x: f64, precision: usize) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let p = precision.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // the exponent of the value rounded to `p` significant digits
    let sci = format!("{:.*e}", p - 1, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i64 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        strip(&format!("{:.*}", (p as i64 - 1 - exp) as usize, x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_c() {
        // values checked against glibc's printf("%.6g")
        for (x, want) in [
            (0.5, "0.5"),
            (1.0 / 3.0, "0.333333"),
            (-2.0 / 3.0, "-0.666667"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (999999.5, "1e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (12345.25, "12345.2"),
            (12345.75, "12345.8"),
            (3.4028234663852886e38, "3.40282e+38"),
            (-0.0, "-0"),
            (1e-45, "1e-45"),
            (65504.0, "65504"),
        ] {
            assert_eq!(format_g(x, 6), want, "{x}");
        }
        assert_eq!(format_g(f64::NAN, 6), "nan");
        assert_eq!(format_g(-f64::NAN, 6), "nan");
        assert_eq!(format_g(f64::NEG_INFINITY, 6), "-inf");
        assert_eq!(format_g(2.5, 0), "2");
    }

    #[test]
    fn conversions_and_widths() {
        let s = sprintf(
            "%s|%6d|%6u|%9.6g|%5s|%lld|%llu|%%|%d",
            &[
                Arg::Str("a".into()),
                Arg::Int(-42),
                Arg::UInt(7),
                Arg::Float(0.25),
                Arg::Str("true".into()),
                Arg::Int(-(1 << 40)),
                Arg::UInt(u64::MAX),
                Arg::Int(3),
            ],
        );
        assert_eq!(
            s,
            "a|   -42|     7|     0.25| true|-1099511627776|18446744073709551615|%|3"
        );
        // a value wider than its column is not cut
        assert_eq!(sprintf("%3d", &[Arg::Int(123456)]), "123456");
    }
}
