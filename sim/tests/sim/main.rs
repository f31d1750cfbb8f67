//! The simulator through the real `mcpstorm sim` and `mcpstorm compare` commands, and its report writers:
//! byte-identical runs (`determinism`), the call history (`calls`), paired comparisons (`compare`), the HTML report
//! (`html`), gateway profiles (`profiles`), resilience (`resilience`), routing (`routing`), the report files
//! (`report`), the simulator against a live run (`fidelity`), replays of recorded traffic (`replay`), swarm testing
//! (`swarm`), breaker sync through Redis (`sync`) and gateway nodes as hosts of their own (`nodes`); and the live
//! twin, `mcpstorm live` (`live`).

#[path = "../common/mod.rs"]
mod common;

mod calls;
mod compare;
mod determinism;
mod fidelity;
mod html;
mod http;
mod live;
mod middles;
mod nodes;
mod profiles;
mod replay;
mod report;
mod resilience;
mod routing;
mod swarm;
mod sync;
mod tokens;
mod traces;
