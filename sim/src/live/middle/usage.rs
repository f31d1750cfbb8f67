//! What a middle cost this machine, measured from outside it: the CPU time (from the moment the run's time begins:
//! starting up is not serving calls) and the peak resident memory of its
//! process groups (each instance runs in a group of its own, so a proxy's workers and a script's children count),
//! read from Linux's `/proc` by a sampling thread. No middle is asked for its own figures.
//!
//! CPU: each process's user and system time (`/proc/PID/stat`) is kept at its highest reading, so a process that
//! exits (a crash kills the group) keeps what it had used at the last sample before it: at most one [`PERIOD`] of
//! its time is missed. Memory: the groups' summed `VmRSS` (`/proc/PID/status`) at each sample, its peak kept.
//! Off Linux, or where `/proc` cannot be read, both stay zero and the report says `not measured`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;

/// How often the groups are read.
pub const PERIOD: Duration = Duration::from_millis(200);

/// Clock ticks per second of `/proc`'s CPU times (Linux's `USER_HZ`, 100 on every architecture it runs on).
const TICKS_PER_SECOND: f64 = 100.0;

/// The figures, as the report gives them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct MiddleCost {
    /// User and system CPU time of every process of the middle's groups, in seconds.
    pub cpu_seconds: f64,
    /// The most resident memory its groups held at once, in bytes.
    pub peak_rss_bytes: u64,
    /// Whether `/proc` was read at all.
    pub measured: bool,
}

#[derive(Debug, Default)]
struct State {
    /// Process groups watched (each instance's leader's pid).
    groups: Vec<u32>,
    /// Each process's highest CPU reading, in ticks.
    ticks: BTreeMap<u32, u64>,
    peak_rss_kb: u64,
    measured: bool,
    /// The ticks already used when the run's time began ([`Usage::begin`]): starting up is not serving calls.
    before: u64,
}

/// The watched groups and their figures, shared with the sampling thread.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl Usage {
    /// Starts the sampling thread; it stops when [`Usage::finish`] is called.
    pub fn start() -> Usage {
        let usage = Usage::default();
        let sampler = usage.clone();
        let spawned = std::thread::Builder::new().name("middle-usage".into()).spawn(move || {
            while !sampler.stop.load(Ordering::Relaxed) {
                sampler.sample();
                std::thread::sleep(PERIOD);
            }
        });
        if spawned.is_err() {
            tracing::warn!("no thread to sample the middle's CPU and memory: not measured");
        }
        usage
    }

    /// Counts process group `pgid` from now on.
    pub fn watch(&self, pgid: u32) {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).groups.push(pgid);
    }

    /// Reads every process of the watched groups once.
    pub fn sample(&self) {
        let groups = self.state.lock().unwrap_or_else(PoisonError::into_inner).groups.clone();
        if groups.is_empty() {
            return;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else { return };
        let mut readings = Vec::new();
        let mut rss_kb = 0;
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let Some((group, ticks)) = group_and_ticks(&stat) else { continue };
            if !groups.contains(&group) {
                continue;
            }
            readings.push((pid, ticks));
            rss_kb += std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| rss(&s)).unwrap_or(0);
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.measured = true;
        for (pid, ticks) in readings {
            let kept = state.ticks.entry(pid).or_default();
            *kept = (*kept).max(ticks);
        }
        state.peak_rss_kb = state.peak_rss_kb.max(rss_kb);
    }

    /// The run's time begins: the CPU time used so far (a Python middle's imports, a gateway's first listing) is
    /// left out of the figure.
    pub fn begin(&self) {
        self.sample();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.before = state.ticks.values().sum();
    }

    /// Stops the sampling thread (after one last sample) and gives the figures.
    pub fn finish(&self) -> MiddleCost {
        self.sample();
        self.stop.store(true, Ordering::Relaxed);
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let ticks: u64 = state.ticks.values().sum();
        super::super::host_load::record_ticks(ticks);
        MiddleCost {
            cpu_seconds: ticks.saturating_sub(state.before) as f64 / TICKS_PER_SECOND,
            peak_rss_bytes: state.peak_rss_kb * 1024,
            measured: state.measured,
        }
    }
}

/// A `/proc/PID/stat` line's process group (field 5) and user + system time (fields 14 and 15), counted from the
/// last `)` (the command name may hold spaces and parentheses).
fn group_and_ticks(stat: &str) -> Option<(u32, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let group = fields.get(2)?.parse().ok()?;
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((group, user + system))
}

/// `VmRSS:` of a `/proc/PID/status`, in kB.
fn rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_line_gives_the_group_and_the_cpu_time() {
        let line = "4242 (nginx: worker (x)) S 4240 4240 4240 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 3 0 123 456 78";
        assert_eq!(group_and_ticks(line), Some((4240, 42)));
        assert_eq!(group_and_ticks("4242 (x) S 1"), None);
        assert_eq!(rss("Name:\tnginx\nVmHWM:\t  9000 kB\nVmRSS:\t  8123 kB\n"), Some(8123));
    }

    /// A busy shell in a group of its own is measured, and keeps its time once killed.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_group_is_measured_and_keeps_its_time_once_gone() {
        use std::os::unix::process::CommandExt;
        let mut busy = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .process_group(0)
            .spawn()
            .expect("sh starts");
        let usage = Usage::start();
        usage.watch(busy.id());
        std::thread::sleep(Duration::from_millis(1_500));
        usage.sample();
        let _ = busy.kill();
        let _ = busy.wait();
        let cost = usage.finish();
        assert!(cost.measured);
        // It burned at least a tenth of a second of CPU in 1.5 s, however busy the machine running the tests is.
        assert!(cost.cpu_seconds >= 0.1, "{cost:?}");
        assert!(cost.peak_rss_bytes > 0, "{cost:?}");
    }
}
