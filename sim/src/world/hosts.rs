//! Host naming: one turmoil host per server replica, a few load-generator hosts.

/// The host of replica `replica` of `server`.
pub fn server_host(server: &str, replica: usize) -> String {
    format!("{server}-{replica}")
}

pub fn load_host(index: usize) -> String {
    format!("load-{index}")
}
