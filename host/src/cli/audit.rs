//! `verbgate audit`: read the audit trail — every op, its caller, the
//! policy's decision and who made it, what ran and how it ended — and
//! `verbgate audit prune` to apply its retention now, and `verbgate audit
//! export` to hand it to a SIEM as JSON Lines.

use anyhow::{bail, Context as _, Result};
use std::process::ExitCode;
use std::time::Duration;

use super::global::GlobalArgs;
use crate::audit::{AuditStore, Filter, Record};
use crate::config::Config;

/// `verbgate audit [list options] | prune`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    command: Option<AuditCommand>,
    #[command(flatten)]
    rows: RowFilter,
    /// At most this many rows (the newest).
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Keep printing new rows as they are written (Ctrl-C stops).
    #[arg(long)]
    follow: bool,
}

#[derive(Debug, clap::Subcommand)]
enum AuditCommand {
    /// Remove rows older than audit.retain_days or beyond the newest
    /// audit.retain_rows.
    Prune {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write every row (or those after --after-id) to stdout as JSON Lines,
    /// oldest first, in the stable `verbgate.audit/1` shape (docs/policy.md).
    Export(ExportArgs),
}

/// Which rows, for both the listing and the export.
#[derive(Debug, clap::Args)]
struct RowFilter {
    /// Only ops since this long ago (`30s`, `15m`, `2h`, `7d`) or this
    /// RFC 3339-like UTC time (`2026-12-03T10:00:00Z`) or Unix ms.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only ops whose verb matches (`git.*`, `cargo.test`).
    #[arg(long, value_name = "PATTERN")]
    verb: Option<String>,
    /// Only ops that ended so (`ok`, or an error code like `policy_denied`).
    #[arg(long, value_name = "CODE")]
    outcome: Option<String>,
}

impl RowFilter {
    /// The store's filter for these flags, from `after_id`, `limit` rows
    /// at a time (the oldest first when `oldest`).
    fn filter(self, after_id: Option<i64>, limit: usize, oldest: bool) -> Result<Filter> {
        let now = crate::jobs::process::now_ms();
        let since_ms = self.since.as_deref().map(|s| parse_since(s, now)).transpose()?;
        Ok(Filter { since_ms, verb: self.verb, outcome: self.outcome, after_id, limit, oldest })
    }
}

/// `verbgate audit export`.
#[derive(Debug, clap::Args)]
struct ExportArgs {
    /// The output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Only rows with an id above this: the last id a previous export
    /// wrote, to continue where it stopped.
    #[arg(long, value_name = "ID", default_value_t = 0)]
    after_id: u64,
    #[command(flatten)]
    rows: RowFilter,
    /// Print the JSON Schema of a line instead of rows.
    #[arg(long)]
    schema: bool,
}

/// Export formats.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    /// One JSON object per line.
    Jsonl,
}

/// A `started` row younger than this is an op still running (its end
/// comes later); an older one is an op whose end was never recorded.
const STILL_RUNNING_MS: i64 = 24 * 3_600_000;

/// Rows read from the store at a time while exporting.
const EXPORT_PAGE: usize = 1000;

/// Run `verbgate audit`.
pub async fn run(g: &GlobalArgs, a: AuditArgs) -> Result<ExitCode> {
    let config = Config::load(&g.overrides())?;
    let store = AuditStore::open(&config.state_dir())?;
    if let Some(AuditCommand::Export(e)) = a.command {
        return export(&store, e);
    }
    if let Some(AuditCommand::Prune { json }) = a.command {
        let report = store.prune(
            config.audit.retain_days,
            config.audit.retain_rows,
            crate::jobs::process::now_ms(),
        )?;
        if json {
            super::global::print_json(&serde_json::to_value(report)?);
        } else {
            println!(
                "pruned {} row(s) older than {} days and {} beyond the newest {} (audit.retain_days, audit.retain_rows)",
                report.expired, config.audit.retain_days, report.over_count, config.audit.retain_rows
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut filter = a.rows.filter(None, a.limit.max(1), false)?;
    if !a.json {
        println!(
            "{:<24} {:<6} {:<14} {:<18} {:<6} {:<22} {:<20} {:>7}  run",
            "time (UTC)", "via", "caller", "verb", "policy", "decided by", "outcome", "ms"
        );
    }
    loop {
        let rows = store.query(&filter)?;
        for r in &rows {
            match r {
                Ok(r) => print_row(r, a.json),
                Err(u) => print_unreadable(u, a.json),
            }
        }
        if !a.follow {
            return Ok(ExitCode::SUCCESS);
        }
        filter.after_id = Some(match rows.last() {
            Some(Ok(r)) => r.id,
            Some(Err(u)) => u.id,
            None => filter.after_id.map_or_else(|| store.last_id(), Ok)?,
        });
        filter.limit = usize::MAX;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `verbgate audit export`: every matching row, oldest first, a page at a
/// time (memory stays bounded on a trail of millions of rows); where it
/// ended goes to stderr, so a collector can continue with `--after-id`.
fn export(store: &AuditStore, e: ExportArgs) -> Result<ExitCode> {
    use crate::audit::export::{self, ExportLine};
    use std::io::Write as _;
    let Format::Jsonl = e.format;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if e.schema {
        writeln!(out, "{}", serde_json::to_string_pretty(&export::schema())?)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let after_id = i64::try_from(e.after_id)
        .map_err(|_| anyhow::anyhow!("--after-id {}: no row id is that large", e.after_id))?;
    let mut filter = e.rows.filter(Some(after_id), EXPORT_PAGE, true)?;
    let (mut count, mut last) = (0usize, None);
    // Ops still running when the export starts: their rows get their end
    // later, so the continuation must not pass them — found apart from the
    // pages, because `--outcome` leaves them out of those (a row left
    // `started` a day ago is a crashed op, and final).
    let now = crate::jobs::process::now_ms();
    let pattern = filter.verb.as_ref().map(|p| vec![p.clone()]);
    let running = store
        .started_after(after_id, now.saturating_sub(STILL_RUNNING_MS))?
        .into_iter()
        .find(|(_, verb)| crate::registry::fence::allowed(verb, pattern.as_deref()))
        .map(|(id, _)| id);
    loop {
        let rows = store.query(&filter)?;
        let Some(end) = rows.last() else { break };
        filter.after_id = Some(match end {
            Ok(r) => r.id,
            Err(u) => u.id,
        });
        for row in &rows {
            let line = match row {
                Ok(r) => ExportLine::from(r),
                Err(u) => ExportLine::from(u),
            };
            let written = serde_json::to_writer(&mut out, &line)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            match written {
                Ok(()) => {}
                // The reader went away (`| head`): stop, as other tools do.
                Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                    return Ok(ExitCode::SUCCESS)
                }
                Err(err) => return Err(err.into()),
            }
        }
        count += rows.len();
        last = filter.after_id;
        if rows.len() < EXPORT_PAGE {
            break;
        }
    }
    match out.flush() {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        r => r?,
    }
    let running = running.filter(|first| last.is_some_and(|l| *first <= l));
    match (last, running) {
        (Some(id), None) => eprintln!("exported {count} row(s), the last id {id}: continue with --after-id {id}"),
        (Some(id), Some(first)) => eprintln!(
            "exported {count} row(s), the last id {id}; row {first} and later ones include ops still running: continue with --after-id {} to get them again with their end (keep the last line per id)",
            first - 1
        ),
        (None, _) => eprintln!("exported 0 rows: none after id {} matches", e.after_id),
    }
    Ok(ExitCode::SUCCESS)
}

/// Longest cell of the table (bytes shown); the `run` column gets
/// [`RUN_CELL_BYTES`]. A longer text is cut, saying how much is missing.
const CELL_BYTES: usize = 64;

/// Longest `run` cell: the program and argv (and any read-back).
const RUN_CELL_BYTES: usize = 1024;

/// One table cell: the text with every control, bidi and invisible
/// character visibly escaped and cut at `max` (see [`crate::text`]). Every
/// text the table shows goes through here: an op name, a token name, a
/// program path or argv word may have been chosen by a caller, a plugin or
/// a repository, and printed raw, an `ESC [` sequence in one rewrites the
/// rows above it on the operator's screen.
fn cell(text: &str, max: usize) -> String {
    crate::text::escape(text, max)
}

fn print_row(r: &Record, json: bool) {
    if json {
        // Exact: JSON escapes every control character, and a reader that
        // shows the values is the reader's to escape.
        println!("{}", serde_json::to_string(r).unwrap_or_default());
        return;
    }
    println!("{}", table_row(r));
}

/// A row whose closed-set column holds something this verbgate never
/// writes: said, not guessed at, and the rows around it still shown.
fn print_unreadable(u: &crate::audit::Unreadable, json: bool) {
    if json {
        println!("{}", serde_json::to_string(u).unwrap_or_default());
        return;
    }
    println!(
        "row {} ({}): cannot be shown: {}",
        u.id,
        cell(&u.verb, CELL_BYTES),
        cell(&u.why, RUN_CELL_BYTES)
    );
}

/// One line of the table.
fn table_row(r: &Record) -> String {
    let run = match (&r.program, &r.argv) {
        (Some(p), Some(argv)) => match &r.read_back {
            Some(then) => format!("{p} {argv} then {then}"),
            None => format!("{p} {argv}"),
        },
        _ => r.job_id.clone().map(|j| format!("job {j}")).unwrap_or_default(),
    };
    let decided = match (&r.decided_by, &r.answer) {
        (Some(by), Some(answer)) => format!("{by}:{}", answer.as_str()),
        (Some(by), None) => by.clone(),
        _ => "-".into(),
    };
    format!(
        "{:<24} {:<6} {:<14} {:<18} {:<6} {:<22} {:<20} {:>7}  {}{}",
        utc(r.time_ms),
        cell(r.transport.as_str(), CELL_BYTES),
        cell(&r.caller, CELL_BYTES),
        cell(&r.verb, CELL_BYTES),
        cell(r.decision.map_or("-", |d| d.as_str()), CELL_BYTES),
        cell(&decided, CELL_BYTES),
        cell(r.outcome.as_str(), CELL_BYTES),
        r.duration_ms,
        if r.dry_run { "(dry run) " } else { "" },
        cell(&run, RUN_CELL_BYTES)
    )
}

use crate::audit::export::utc;

/// `--since`: a duration ago, a UTC time or date, or Unix ms.
fn parse_since(s: &str, now_ms: i64) -> Result<i64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).map(|i| s.split_at(i));
    if let Some((n, unit)) = split.filter(|(n, _)| !n.is_empty()) {
        let per = match unit {
            "s" => Some(1_000),
            "m" => Some(60_000),
            "h" => Some(3_600_000),
            "d" => Some(86_400_000),
            _ => None,
        };
        if let Some(per) = per {
            let n: i64 = n.parse().context("--since: the number is too large")?;
            return Ok(now_ms.saturating_sub(n.saturating_mul(per)));
        }
    }
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) {
        return s.parse().context("--since: the number is too large");
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp_millis()));
    }
    bail!("--since {s:?}: give a duration (30s, 15m, 2h, 7d), a UTC time (2026-12-03T10:00:00Z), a date (2026-12-03) or Unix ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_durations_times_and_ms() {
        assert_eq!(parse_since("15m", 1_000_000).unwrap(), 100_000);
        assert_eq!(parse_since("2d", 200_000_000).unwrap(), 200_000_000 - 172_800_000);
        assert_eq!(parse_since("1764756000000", 0).unwrap(), 1_764_756_000_000);
        assert_eq!(parse_since("2026-12-03T10:00:00Z", 0).unwrap(), 1_796_292_000_000);
        assert_eq!(parse_since("2026-12-03", 0).unwrap(), 1_796_256_000_000);
        assert_eq!(utc(1_796_292_000_123), "2026-12-03T10:00:00.123Z");
        for bad in ["yesterday", "10x", "2026-13-01", ""] {
            assert!(parse_since(bad, 0).unwrap_err().to_string().contains("--since"), "{bad}");
        }
    }

    #[test]
    fn every_text_in_a_row_is_escaped_and_bounded() {
        let hostile = "\u{1b}[1A\u{1b}[2K\rfake\u{202e}\u{200b}\u{9b}";
        let r = Record {
            caller: hostile.into(),
            verb: hostile.into(),
            decided_by: Some(hostile.into()),
            program: Some(format!("/bin/{hostile}")),
            argv: Some(format!("[\"{}\"]", "a".repeat(5000))),
            read_back: Some(hostile.into()),
            ..Record::default()
        };
        let line = table_row(&r);
        assert!(!line.chars().any(crate::text::hidden), "{line:?}");
        // caller, verb, decided_by and the program: the closed-set columns cannot hold it.
        assert_eq!(
            line.matches(r"\u{1b}[1A\u{1b}[2K\rfake\u{202e}\u{200b}\u{9b}").count(),
            4,
            "{line}"
        );
        assert!(line.len() < 8 * CELL_BYTES + RUN_CELL_BYTES + 200, "{} bytes", line.len());
        assert!(line.ends_with("bytes not shown)"), "the run cell is cut and says so: {line}");
        let long = Record { verb: "v".repeat(200), ..Record::default() };
        assert!(table_row(&long).contains(&format!("{}…(+136 bytes not shown)", "v".repeat(64))));
    }
}
