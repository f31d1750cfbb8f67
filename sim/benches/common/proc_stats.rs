//! A process's CPU time and memory, read from Linux's `/proc` (zero where it is unavailable). Shared by the benches.

// Each bench includes this module and uses its own subset of it.
#![allow(dead_code)]

/// Linux reports CPU times in `/proc/<pid>/stat` in USER_HZ ticks, 100 per second on every mainstream platform.
const TICKS_PER_SEC: f64 = 100.0;

/// A field of `/proc/self/status` in kB: `VmRSS` (now) or `VmHWM` (the peak).
pub fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds of a process (`self` or a pid), from `/proc/<pid>/stat`.
pub fn cpu_secs(pid: &str) -> f64 {
    let (user, system) = cpu_split(pid);
    user + system
}

/// User and system CPU seconds of a process (`self` or a pid), apart: system time on loopback is the TCP stack's.
pub fn cpu_split(pid: &str) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name (field 2) may contain spaces; fields after its closing parenthesis start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime is field 14, stime field 15: indices 11 and 12 after field 2.
    (ticks(11) as f64 / TICKS_PER_SEC, ticks(12) as f64 / TICKS_PER_SEC)
}
