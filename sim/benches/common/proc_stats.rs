//! A process's CPU time and memory, read from Linux's `/proc` (zero where it is unavailable). Shared by the benches.

// Each bench includes this module and uses its own subset of it.
#![allow(dead_code)]

/// Linux reports CPU times in `/proc/<pid>/stat` in USER_HZ ticks, 100 per second on every mainstream platform.
const TICKS_PER_SEC: f64 = 100.0;

/// A field of `/proc/self/status` in kB: `VmRSS` (now) or `VmHWM` (the peak).
pub fn status_kb(field: &str) -> u64 {
    status_kb_of("self", field)
}

/// A field of `/proc/<pid>/status` (`self` or a pid) in kB.
pub fn status_kb_of(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
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
    let (_, user, system) = stat_fields(&stat);
    (user, system)
}

/// User and system CPU seconds of a process and all its descendants alive now, summed: nginx's master and its
/// workers. A process without children (the gateway) reads as [`cpu_split`] does, so both are measured alike.
pub fn cpu_split_tree(pid: &str) -> (f64, f64) {
    let Ok(root) = pid.parse::<u32>() else { return cpu_split(pid) };
    // Every process's (pid, ppid, user, system), from one pass over /proc.
    let mut all: Vec<(u32, u32, f64, f64)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let (ppid, user, system) = stat_fields(&stat);
        all.push((p, ppid, user, system));
    }
    let mut tree = vec![root];
    let mut total = (0.0, 0.0);
    // Breadth first from the root: a process joins the tree when its parent has.
    let mut i = 0;
    while let Some(&parent) = tree.get(i) {
        for &(p, ppid, user, system) in &all {
            if p == parent {
                total = (total.0 + user, total.1 + system);
            } else if ppid == parent && !tree.contains(&p) {
                tree.push(p);
            }
        }
        i += 1;
    }
    total
}

/// A `/proc/<pid>/stat` line's parent pid and its user and system CPU seconds.
fn stat_fields(stat: &str) -> (u32, f64, f64) {
    // The command name (field 2) may contain spaces; fields after its closing parenthesis start at field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // ppid is field 4, utime field 14, stime field 15: indices 1, 11 and 12 after field 2.
    (ticks(1) as u32, ticks(11) as f64 / TICKS_PER_SEC, ticks(12) as f64 / TICKS_PER_SEC)
}
