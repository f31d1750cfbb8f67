//! How much of this machine's CPU a live run did not have: what other processes used while it ran, and what the
//! hypervisor took from the machine (steal). A live run keeps real time only while it gets the CPU it asks for. The
//! simulator charges no CPU, so on a busy host every hop of a live call is slower than the scenario says, and a
//! closed loop serves fewer calls (docs/fidelity.md, "A busy host", gives `smoke`'s counts beside busy loops). A
//! fidelity verdict reads this to tell a simulator that is wrong from a host that was busy
//! (`fidelity::Comparison::outcome`).
//!
//! Read from Linux's `/proc`: the machine's CPU time by kind (`/proc/stat`, all CPUs), this process's own CPU time
//! (`/proc/self/stat`), and the CPU time of the child processes a live run starts (its gateway nodes), which each
//! node reports here just before it is killed ([`record_child`]): a killed child is not waited for at once, so its
//! time would otherwise be counted as another process's. Off Linux, or when `/proc` cannot be read, there is no
//! reading and nothing is judged by it.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// CPU ticks of this run's child processes, reported by each as it stops.
static CHILDREN: AtomicU64 = AtomicU64::new(0);

/// Shares of all the machine's CPU time over a stretch of wall time (0.5: half of every CPU).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HostLoad {
    /// Used by processes other than this one and its children (user, nice and system time).
    pub others: f64,
    /// Taken by the hypervisor for other machines.
    pub steal: f64,
}

impl HostLoad {
    /// What the run did not have: the two shares together.
    pub fn taken(&self) -> f64 {
        self.others + self.steal
    }
}

/// One reading of the counters, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    /// User, nice and system time of every process.
    busy: u64,
    steal: u64,
    /// Every kind of time, idle included: all CPUs' wall time.
    total: u64,
    /// This process's user and system time, and its stopped children's.
    ours: u64,
}

impl CpuSample {
    /// Now, or `None` where `/proc` cannot be read.
    pub fn now() -> Option<CpuSample> {
        let (busy, steal, total) = machine(&std::fs::read_to_string("/proc/stat").ok()?)?;
        let own = process_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
        Some(CpuSample { busy, steal, total, ours: own + CHILDREN.load(Ordering::Relaxed) })
    }

    /// The load between `self` and `later`; `None` when no CPU time passed between them.
    pub fn load_until(&self, later: &CpuSample) -> Option<HostLoad> {
        let total = later.total.checked_sub(self.total).filter(|&t| t > 0)? as f64;
        let busy = later.busy.saturating_sub(self.busy);
        let ours = later.ours.saturating_sub(self.ours);
        Some(HostLoad {
            others: busy.saturating_sub(ours) as f64 / total,
            steal: later.steal.saturating_sub(self.steal) as f64 / total,
        })
    }
}

/// Counts child process `pid`'s CPU time as this run's, read just before it is stopped.
pub fn record_child(pid: u32) {
    if let Some(ticks) = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|t| process_ticks(&t)) {
        CHILDREN.fetch_add(ticks, Ordering::Relaxed);
    }
}

/// Counts `ticks` of CPU time of this run's children (a middle's process groups, measured by their sampler) as
/// this run's.
pub fn record_ticks(ticks: u64) {
    CHILDREN.fetch_add(ticks, Ordering::Relaxed);
}

/// `/proc/stat`'s first line (`cpu  user nice system idle iowait irq softirq steal guest guest_nice`): (user + nice +
/// system, steal, the sum of the first eight). Guest time is already inside user and nice.
fn machine(text: &str) -> Option<(u64, u64, u64)> {
    let mut fields = text.lines().next()?.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = fields.take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
    let [user, nice, system, _idle, _iowait, _irq, _softirq, steal] = v[..] else {
        return None;
    };
    Some((user + nice + system, steal, v.iter().sum()))
}

/// A `/proc/PID/stat` line's user + system time (fields 14 and 15). The command name (field 2) may hold spaces
/// and parentheses, so fields are counted from the last `)`.
fn process_ticks(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_line_gives_busy_steal_and_all_time() {
        let stat = "cpu  100 5 20 800 10 1 4 60 7 0\ncpu0 50 2 10 400 5 0 2 30 0 0\nintr 1 2\n";
        assert_eq!(machine(stat), Some((125, 60, 1000)));
        assert_eq!(machine("cpu0 1 2 3 4 5 6 7 8\n"), None, "not the all-CPU line");
        assert_eq!(machine("cpu  1 2 3\n"), None, "too few fields");
        assert_eq!(machine("cpu  1 2 x 4 5 6 7 8\n"), None);
    }

    #[test]
    fn a_process_line_counts_from_its_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 37 5 0 0 20 0 3 0 123 456 78";
        assert_eq!(process_ticks(line), Some(42));
        assert_eq!(process_ticks("4242 (x) S 1 2"), None);
    }

    #[test]
    fn the_load_is_a_share_of_all_cpu_time_and_our_own_time_is_not_others() {
        let a = CpuSample { busy: 1_000, steal: 10, total: 10_000, ours: 300 };
        let b = CpuSample { busy: 1_600, steal: 30, total: 11_000, ours: 500 };
        let load = a.load_until(&b).expect("time passed");
        assert!((load.others - 0.4).abs() < 1e-9, "{load:?}");
        assert!((load.steal - 0.02).abs() < 1e-9, "{load:?}");
        assert!((load.taken() - 0.42).abs() < 1e-9);
        assert_eq!(a.load_until(&a), None, "no time passed");
    }

    /// A real busy process beside this one is counted as another's load, and once it reports itself as a child of
    /// this run, its time is ours.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_process_beside_us_is_others_load_until_it_is_recorded_as_our_child() {
        let mut busy = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("sh starts");
        let before = CpuSample::now().expect("/proc is readable");
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let after = CpuSample::now().expect("/proc is readable");
        let children = CHILDREN.load(Ordering::Relaxed);
        record_child(busy.id());
        let recorded = CHILDREN.load(Ordering::Relaxed) - children;
        let _ = busy.kill();
        let _ = busy.wait();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let load = before.load_until(&after).expect("time passed");
        // The loop had at least a third of one CPU for 1.5 s, however busy the machine running the tests is.
        assert!(load.others >= 0.33 / cpus, "{load:?} on {cpus} CPUs");
        // And it burned at least half a second of CPU (ticks are 1/100 s on Linux).
        assert!(recorded >= 50, "recorded {recorded} ticks");
    }
}
