//! `SECS` on every tool's command line (`moot-render --deadline`, `moot-run --deadline` and
//! `--grace`): one grammar, so a value one tool takes is never refused by the next tool of the
//! same pipeline.
//!
//! The grammar is strict decimal, `600` or `12.5`: digits, then optionally a point and more
//! digits. No sign, no exponent, no `inf`, no `.5` or `5.`, no whitespace: a deadline is written
//! by hand or by a script, and anything past plain digits is more likely a mistake than intent.

use std::time::Duration;

/// Nanoseconds in a second: the finest step a [`Duration`] holds.
const NANOS: usize = 9;

/// Parses `SECS`; digits past the nanosecond are dropped. The error is the sentence clap shows
/// after `invalid value 'X' for '--flag <SECS>': `.
pub fn parse_seconds(value: &str) -> Result<Duration, String> {
    let bad = || format!("expected a number of seconds such as 600 or 12.5, got {value:?}");
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || value.ends_with('.') {
        return Err(bad());
    }
    let secs = whole.parse::<u64>().map_err(|_| bad())?;
    let nanos: String = fraction
        .chars()
        .chain(std::iter::repeat('0'))
        .take(NANOS)
        .collect();
    let nanos = nanos.parse::<u32>().map_err(|_| bad())?;
    Ok(Duration::new(secs, nanos))
}

/// [`parse_seconds`] in whole milliseconds (digits past the millisecond dropped), refused when
/// that does not fit a `u64`.
pub fn parse_millis(value: &str) -> Result<u64, String> {
    let duration = parse_seconds(value)?;
    u64::try_from(duration.as_millis())
        .map_err(|_| format!("expected a number of seconds such as 600 or 12.5, got {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_seconds_parse_exactly() {
        assert_eq!(parse_seconds("600"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_seconds("12.5"), Ok(Duration::from_millis(12_500)));
        assert_eq!(parse_seconds("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_seconds("0"), Ok(Duration::ZERO));
        assert_eq!(parse_seconds("007.000"), Ok(Duration::from_secs(7)));
        assert_eq!(
            parse_seconds("1.0000000019"),
            Ok(Duration::new(1, 1)),
            "digits past the nanosecond are dropped"
        );
        assert_eq!(
            parse_seconds(&u64::MAX.to_string()),
            Ok(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn milliseconds_drop_finer_digits_and_must_fit() {
        assert_eq!(parse_millis("600"), Ok(600_000));
        assert_eq!(parse_millis("12.5"), Ok(12_500));
        assert_eq!(parse_millis("0.0019"), Ok(1));
        assert_eq!(parse_millis("0"), Ok(0));
        assert_eq!(parse_millis("18446744073709551.615"), Ok(u64::MAX));
        assert!(parse_millis("18446744073709551.616").is_err());
        assert!(parse_millis("18446744073709552").is_err());
    }

    #[test]
    fn anything_but_plain_decimal_is_refused() {
        for bad in [
            "",
            "-1",
            "+1",
            "1.",
            ".5",
            ".",
            "1e3",
            "1e1",
            "1E1",
            "inf",
            "NaN",
            "1,5",
            " 1",
            "1 ",
            "0x10",
            "١",
            "1.2.3",
            "99999999999999999999",
        ] {
            assert_eq!(
                parse_seconds(bad),
                Err(format!(
                    "expected a number of seconds such as 600 or 12.5, got {bad:?}"
                )),
                "{bad:?}"
            );
        }
    }
}
