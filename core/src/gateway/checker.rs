//! Active health checks through the gateway's own clients: the check exercises the same session and connection
//! the calls use, so it sees what they would see (check the capability, not the process).

use std::sync::Weak;

use super::Gateway;
use crate::conn::CallOptions;
use crate::router::{CheckFuture, HealthChecker, Probe};

#[derive(Debug)]
pub(super) struct ClientChecker {
    /// Weak: the background task must not keep a dropped gateway alive.
    pub gateway: Weak<Gateway>,
}

impl HealthChecker for ClientChecker {
    fn check(&self, probe: &Probe) -> CheckFuture {
        let Some(gateway) = self.gateway.upgrade() else {
            return Box::pin(async { false });
        };
        let (_, client) = gateway.client(&probe.server, &probe.replica);
        let check = probe.check.clone();
        Box::pin(async move {
            match &check.tool {
                None => client.ping().await.is_ok(),
                Some(tool) => client
                    .call_tool(tool, check.arguments.clone(), CallOptions::default())
                    .await
                    .is_ok_and(|r| !r.is_error),
            }
        })
    }
}
