//! A replay's arrivals (`[load] mode = "replay"`): the trace's logical calls (read with the scenario, see
//! `scenario::trace`), each at its recorded offset divided by `load.speed`, dealt to the load hosts round-robin in
//! the order they start (call `i` to host `i mod hosts`), so every host's share follows the trace's shape.
//!
//! The traffic loop sends each at its time as the open loop does, its latency measured from that intended time.

use std::time::Duration;

use crate::scenario::Load;

/// Load host `host_index`'s arrivals, earliest first: (offset from the load's start, `[[load.mix]]` entry). Calls
/// whose scaled offset no duration can hold (a speed near 0) are left out: they would come after any run's end.
pub(super) fn schedule(load: &Load, host_index: usize) -> Result<Vec<(Duration, usize)>, String> {
    let trace =
        load.replay.as_ref().ok_or("load.mode = \"replay\" without its trace: load the scenario from its file")?;
    let speed = load.speed();
    let hosts = load.hosts.max(1);
    Ok(trace
        .calls
        .iter()
        .skip(host_index)
        .step_by(hosts)
        .map_while(|call| Some((scaled(call.offset, speed)?, call.entry)))
        .collect())
}

/// `offset / speed`; exact at speed 1 (the per-second counts of a replay then equal the trace's).
fn scaled(offset: Duration, speed: f64) -> Option<Duration> {
    if speed == 1.0 { Some(offset) } else { Duration::try_from_secs_f64(offset.as_secs_f64() / speed).ok() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_scales_and_one_is_exact() {
        let d = Duration::from_micros(2_000_001);
        assert_eq!(scaled(d, 1.0), Some(d));
        assert_eq!(scaled(Duration::from_secs(3), 2.0), Some(Duration::from_millis(1500)));
        assert_eq!(scaled(Duration::from_secs(3), 1e-300), None);
    }
}
