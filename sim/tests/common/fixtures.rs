//! The TOML the tests write, built instead of copied: a scenario ([`ScenarioToml`]) and a gateway config
//! ([`GatewayToml`]). Each builder writes its tables in the order they are added, every table after a blank line, so
//! that a test can still point at a line of what it wrote (`file:line:column` errors).

use std::fmt::Write as _;

/// `latency = { dist = "fixed", ms = MS }`: a tool's latency that does not vary.
pub fn fixed(ms: u32) -> String {
    format!("latency = {{ dist = \"fixed\", ms = {ms} }}")
}

/// A scenario file: its top-level keys, then its tables in the order they were added.
#[derive(Debug, Clone)]
pub struct ScenarioToml {
    head: String,
    tables: String,
}

/// A scenario named `name` that runs for `duration` (`"6s"`).
pub fn scenario(name: &str, duration: &str) -> ScenarioToml {
    ScenarioToml { head: format!("name = {name:?}\nduration = {duration:?}\n"), tables: String::new() }
}

impl ScenarioToml {
    /// `seed = SEED`.
    pub fn seed(mut self, seed: u64) -> Self {
        let _ = writeln!(self.head, "seed = {seed}");
        self
    }

    /// A table as written (`"[gateway]\nformula = \"round_robin\""`), or several.
    pub fn table(mut self, text: &str) -> Self {
        if !text.trim().is_empty() {
            let _ = write!(self.tables, "\n{}\n", text.trim_matches('\n'));
        }
        self
    }

    /// A table `header` with `keys`, one a line.
    fn keyed(self, header: &str, keys: &[&str]) -> Self {
        let text = std::iter::once(header).chain(keys.iter().copied()).collect::<Vec<_>>().join("\n");
        self.table(&text)
    }

    /// `[[servers]]` named `name`, with more `keys` (`"replicas = 2"`). Its tools follow with [`Self::tool`].
    pub fn server(self, name: &str, keys: &[&str]) -> Self {
        let name = format!("name = {name:?}");
        self.keyed("[[servers]]", &[&[name.as_str()], keys].concat())
    }

    /// `[[servers.tools]]` of the last server: `name` with `keys` (`&fixed(5)`, `"reply = \"ok\""`).
    pub fn tool(self, name: &str, keys: &[&str]) -> Self {
        let name = format!("name = {name:?}");
        self.keyed("[[servers.tools]]", &[&[name.as_str()], keys].concat())
    }

    /// `[load]`, an open loop offering `rate` calls a second, with more `keys` (`"hosts = 2"`).
    pub fn open(self, rate: f64, keys: &[&str]) -> Self {
        let rate = format!("rate = {rate:?}");
        self.keyed("[load]", &[&["mode = \"open\"", rate.as_str()], keys].concat())
    }

    /// `[load]`, a closed loop of `sessions` agents, each thinking `think_time` between calls.
    pub fn closed(self, sessions: u32, think_time: &str) -> Self {
        let (sessions, think) = (format!("sessions = {sessions}"), format!("think_time = {think_time:?}"));
        self.keyed("[load]", &["mode = \"closed\"", sessions.as_str(), think.as_str()])
    }

    /// `[[load.mix]]`: calls to `tool`, on `server` when it names one.
    pub fn mix(self, server: Option<&str>, tool: &str) -> Self {
        let server = server.map(|s| format!("server = {s:?}"));
        let tool = format!("tool = {tool:?}");
        self.keyed("[[load.mix]]", &[server.as_deref(), Some(tool.as_str())].into_iter().flatten().collect::<Vec<_>>())
    }

    /// The file's text.
    pub fn build(&self) -> String {
        format!("{}{}", self.head, self.tables)
    }
}

/// A gateway config file: `[listen]` on a free loopback port, then its tables in the order they were added.
#[derive(Debug, Clone)]
pub struct GatewayToml {
    text: String,
}

/// A gateway listening for agents on a free loopback port.
pub fn gateway() -> GatewayToml {
    GatewayToml { text: "[listen]\nhttp = \"127.0.0.1:0\"\n".to_owned() }
}

impl GatewayToml {
    /// `listen.ready`: `all` or `any`.
    pub fn ready(mut self, rule: &str) -> Self {
        self.text.push_str(&format!("ready = {rule:?}\n"));
        self
    }

    /// `listen.drain`: how long a stop waits for the calls in flight.
    pub fn drain(mut self, drain: &str) -> Self {
        let _ = writeln!(self.text, "drain = {drain:?}");
        self
    }

    /// `[[servers]]` named `name` with one replica reached over NDJSON TCP at `addr`.
    pub fn tcp(self, name: &str, addr: &str) -> Self {
        self.server(name, "tcp", addr)
    }

    /// `[[servers]]` named `name` with one replica reached over Streamable HTTP at `url`.
    pub fn http(self, name: &str, url: &str) -> Self {
        self.server(name, "http", url)
    }

    fn server(self, name: &str, transport: &str, at: &str) -> Self {
        self.table(&format!("[[servers]]\nname = {name:?}\n[[servers.replicas]]\n{transport} = {at:?}"))
    }

    /// The admin API on a free loopback port, its token read from the environment variable `token_env`.
    pub fn admin(self, token_env: &str) -> Self {
        self.table(&format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken_env = {token_env:?}"))
    }

    /// A table as written (`"[gateway.breaker]\nopen = \"30s\""`), or several.
    pub fn table(mut self, text: &str) -> Self {
        if !text.trim().is_empty() {
            let _ = write!(self.text, "\n{}\n", text.trim_matches('\n'));
        }
        self
    }

    /// The file's text.
    pub fn build(&self) -> String {
        self.text.clone()
    }
}
