//! What `/readyz` and the admin API say of every configured replica: whether a session with it worked (`ready`),
//! it has not been reached yet (`connecting`), or its last attempt failed (`failed`, with the error). The listing of
//! each server is the probe: it tries the replicas in order until one answers, so a replica after the one that
//! answered stays `connecting` until a call or a later listing reaches it.
//!
//! Whether one dead server keeps the node out of a load balancer is `[listen] ready`: `all` (the default) asks
//! every server to be listed, so a node that cannot reach a configured server takes no traffic and a rollout with a
//! broken upstream stalls instead of spreading; `any` asks for one, for fleets that prefer some tools to none. A
//! server listed once keeps its listing when it dies later, so a running node stays ready either way.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::config::UpstreamSpec;

/// One replica as the node last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaStatus {
    pub replica: String,
    /// `ready`, `connecting` or `failed`.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Every configured replica's status, by replica id.
#[derive(Debug, Default)]
pub struct Replicas(Mutex<BTreeMap<String, ReplicaStatus>>);

impl Replicas {
    /// Every replica of `servers`, `connecting`.
    pub fn of(servers: &[UpstreamSpec]) -> Replicas {
        let all = servers.iter().flat_map(|s| (0..s.replicas.len()).map(|i| s.replica_id(i)));
        let table =
            all.map(|r| (r.clone(), ReplicaStatus { replica: r, state: "connecting", last_error: None })).collect();
        Replicas(Mutex::new(table))
    }

    fn set(&self, replica: &str, state: &'static str, error: Option<String>) {
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(status) = table.get_mut(replica) {
            status.state = state;
            if error.is_some() {
                status.last_error = error;
            }
        }
    }

    /// A session with `replica` worked (its last error, if any, is kept for the record).
    pub fn ready(&self, replica: &str) {
        self.set(replica, "ready", None);
    }

    pub fn failed(&self, replica: &str, error: String) {
        self.set(replica, "failed", Some(error));
    }

    /// The replicas of `server`, in order.
    pub fn of_server(&self, server: &str) -> Vec<ReplicaStatus> {
        let table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        table.values().filter(|s| crate::state::server_of(&s.replica) == server).cloned().collect()
    }

    /// Every replica, by id.
    pub fn all(&self) -> Vec<ReplicaStatus> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }
}
