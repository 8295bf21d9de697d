//! Process facts on Linux, from `/proc`.

/// Field 22 of `/proc/<pid>/stat` (clock ticks since boot), `None` for a
/// missing or zombie process.
pub fn start_time(pid: i64) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses; the
    // fields we need come after its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    // `rest` starts at field 3 (state), so field 22 is index 19.
    fields.get(19)?.parse().ok()
}

/// `/proc/sys/kernel/random/boot_id`.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()
}

/// Whether `/proc` lists a process of group `pgid` that is not a zombie
/// (true when `/proc` cannot be read: then only `kill` can tell).
pub fn group_has_live_member(pgid: i64) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .any(|e| {
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { return false };
            let Some(close) = stat.rfind(')') else { return false };
            // After the command name: state, ppid, pgrp.
            let mut fields = stat[close + 1..].split_ascii_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|g| g.parse::<i64>().ok());
            group == Some(pgid) && !matches!(state, Some("Z" | "X"))
        })
}
