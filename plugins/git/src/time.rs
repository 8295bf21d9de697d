//! Converting git's strict ISO 8601 (`%aI`: `2024-01-02T03:04:05+02:00`) to
//! RFC 3339 UTC (`2024-01-02T01:04:05Z`), with no date library: the civil
//! calendar arithmetic below is exact for the proleptic Gregorian calendar.

/// Days since 1970-01-01 for a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// The civil date for days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Seconds since the epoch for strict ISO 8601 with an offset.
pub fn parse_iso8601(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) =
        (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    let offset = match &s[19..] {
        "Z" => 0,
        tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) && &tz[3..4] == ":" => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            sign * (tz[1..3].parse::<i64>().ok()? * 3600 + tz[4..6].parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset)
}

/// RFC 3339 UTC for seconds since the epoch.
pub fn rfc3339_utc(secs: i64) -> String {
    let days = secs.div_euclid(86400);
    let rem = secs.rem_euclid(86400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Convert git's `%aI` to RFC 3339 UTC; unparseable input is passed through
/// unchanged rather than invented.
pub fn to_utc(s: &str) -> String {
    parse_iso8601(s).map(rfc3339_utc).unwrap_or_else(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_offsets_to_utc() {
        assert_eq!(to_utc("2024-01-02T03:04:05+02:00"), "2024-01-02T01:04:05Z");
        assert_eq!(to_utc("2024-01-01T23:30:00-01:00"), "2024-01-02T00:30:00Z");
        assert_eq!(to_utc("2000-03-01T00:00:00+00:00"), "2000-03-01T00:00:00Z");
        assert_eq!(to_utc("2024-03-01T00:30:00+01:00"), "2024-02-29T23:30:00Z");
        assert_eq!(to_utc("1970-01-01T00:00:00Z"), "1970-01-01T00:00:00Z");
        assert_eq!(parse_iso8601("2009-02-13T23:31:30+00:00"), Some(1234567890));
        assert_eq!(to_utc("garbage"), "garbage");
    }
}
