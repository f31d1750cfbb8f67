//! A live run's *middle*: the gateway the agents call, when it is not the in-process one (`mcpstorm live --middle
//! NAME`). A middle is a process the harness starts, one per gateway node of the run (by default one per load host),
//! from a *middle file*:
//!
//! ```toml
//! [middle]
//! command = "{{program}} -p {{scratch}} -c {{config}} -g 'daemon off;'"   # run by `sh -c`, a template
//! config_template = "nginx.conf.tmpl"   # rendered into the scratch directory as nginx.conf, `{{config}}` above
//! path = "/{{server}}/mcp"              # where the agents reach each server (default "/mcp": one federated path)
//! program = "nginx"                     # default: the command's first word; missing, the middle is skipped
//! ```
//!
//! Every template ([`template`]) gets the replicas' URLs (the live fake servers, each behind its relay to this node,
//! so the faults reach the middle as they reach a gateway), the port to listen on and a scratch directory (see
//! [`Context`]). The agents then speak MCP Streamable HTTP to the middle, through a relay per load host, so a crash
//! or partition of `gateway-N` reaches it too.
//!
//! Why a file of its own and not a `[middle]` table in the scenario: the scenario is the workload and its faults,
//! which `compare --live --middles` runs unchanged through each middle; the middle is the system under test. A
//! scenario with a `[middle]` table would also stop being a simulator scenario (the simulator cannot run a foreign
//! process), and its schema, `validate` and byte-identical reports would have to learn a key only live runs read.
//!
//! Shipped: `mcpstorm` (this binary's `mcpstorm gateway`, with the scenario's `[gateway]` and `[client]` tables, as
//! `--through-gateway` runs it) and the middle files in `middles/` of the repository, built into the binary.

pub mod measure;
pub mod process;
pub mod template;
pub mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use mcpstorm_fake::Transport;

use crate::scenario::{Dur, Scenario};

/// A shipped middle: its name, its middle file, and the files its templates name (name, text).
type Shipped = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

/// The shipped middles besides `mcpstorm`.
const SHIPPED: &[Shipped] = &[
    (
        "nginx",
        include_str!("../../../../middles/nginx.toml"),
        &[("nginx.conf.tmpl", include_str!("../../../../middles/nginx.conf.tmpl"))],
    ),
    ("fastmcp", include_str!("../../../../middles/fastmcp.toml"), FASTMCP_FILES),
    ("fastmcp_shared", include_str!("../../../../middles/fastmcp_shared.toml"), FASTMCP_FILES),
];

/// The FastMCP proxy's files, shared by its two modes.
const FASTMCP_FILES: &[(&str, &str)] = &[
    ("fastmcp.json.tmpl", include_str!("../../../../middles/fastmcp.json.tmpl")),
    ("fastmcp_proxy.py", include_str!("../../../../middles/fastmcp_proxy.py")),
];

/// The name of the middle that is this binary's gateway.
pub const MCPSTORM: &str = "mcpstorm";

/// How long a middle may take to listen, unless its file says otherwise.
pub const READY_WITHIN: Duration = Duration::from_secs(3);

/// The names `--middle` takes besides a file.
pub fn shipped_names() -> Vec<&'static str> {
    std::iter::once(MCPSTORM).chain(SHIPPED.iter().map(|(name, ..)| *name)).collect()
}

#[derive(Debug, thiserror::Error)]
pub enum MiddleError {
    #[error("unknown middle `{0}`: a shipped one ({shipped}) or a middle file (.toml)", shipped = shipped_names().join(", "))]
    Unknown(String),
    #[error("{0}")]
    File(String),
    #[error("{file}:{source}")]
    Template { file: String, source: template::TemplateError },
    /// The middle's program is not installed: the middle is skipped.
    #[error("middle `{middle}` skipped: its program `{program}` is not installed{how}")]
    Missing { middle: String, program: String, how: String },
}

impl MiddleError {
    /// Bad input (exit 2), as opposed to a middle this machine lacks.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, MiddleError::Missing { .. })
    }
}

/// A middle file's `[middle]` table (see the module's docs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MiddleTable {
    /// The command line (a template), run by `sh -c` in the scratch directory.
    pub command: String,
    /// The config file's template, relative to the middle file: rendered into the scratch directory under its name
    /// less `.tmpl`, which `{{config}}` names.
    #[serde(default)]
    pub config_template: Option<String>,
    /// More templates rendered beside it (a script the command runs), under their names less `.tmpl`.
    #[serde(default)]
    pub files: Vec<String>,
    /// Where the agents reach a server on the middle (a template with `{{server}}`): one path for every server (a
    /// gateway that federates them) or a path per server (a plain reverse proxy).
    #[serde(default = "default_path")]
    pub path: String,
    /// The program the command runs: looked up on `PATH` and in the `sbin` directories; the command's first word
    /// by default.
    #[serde(default)]
    pub program: Option<String>,
    /// An environment variable that, when set, names the program instead.
    #[serde(default)]
    pub program_env: Option<String>,
    /// How to install the program, for the message that skips the middle without it.
    #[serde(default)]
    pub install: Option<String>,
    /// How long the middle may take to listen after it starts (default 3 s).
    #[serde(default)]
    pub ready_within: Option<Dur>,
    /// A command (a template) that must succeed for the middle to run here, e.g. that its Python has its package:
    /// failing, the middle is skipped as a missing program is.
    #[serde(default)]
    pub check: Option<String>,
    /// More values every template sees, by name (`{{mode}}`): two middles can share their templates.
    #[serde(default)]
    pub vars: std::collections::BTreeMap<String, String>,
}

fn default_path() -> String {
    "/mcp".to_owned()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MiddleFile {
    middle: MiddleTable,
}

/// What runs in the middle of a live run.
#[derive(Debug, Clone)]
pub enum Middle {
    /// `mcpstorm gateway` processes of this binary, with the scenario's `[gateway]` and `[client]` tables.
    Mcpstorm,
    /// Any other process, from its middle file.
    Process(Box<ProcessMiddle>),
}

/// A middle run from a middle file, its templates read and its program found.
#[derive(Debug, Clone)]
pub struct ProcessMiddle {
    pub name: String,
    pub table: MiddleTable,
    /// The program, found.
    pub program: PathBuf,
    /// Each template to render into the scratch directory: (file name written, template text). The config first.
    pub templates: Vec<(String, String)>,
}

impl Middle {
    /// `--middle NAME`: a shipped middle, or a middle file. Err when unknown, malformed, or (`Missing`) when its
    /// program is not on this machine.
    pub fn named(name: &str) -> Result<Middle, MiddleError> {
        if name == MCPSTORM {
            return Ok(Middle::Mcpstorm);
        }
        if let Some((_, text, files)) = SHIPPED.iter().find(|(n, ..)| *n == name) {
            let read = |f: &str| {
                files
                    .iter()
                    .find(|(n, _)| *n == f)
                    .map(|(_, t)| (*t).to_owned())
                    .ok_or_else(|| MiddleError::File(format!("shipped middle {name}: no file {f}")))
            };
            return ProcessMiddle::parse(name, &format!("middles/{name}.toml"), text, &read)
                .map(|m| Middle::Process(Box::new(m)));
        }
        let path = Path::new(name);
        if path.extension().is_none_or(|e| e != "toml") {
            return Err(MiddleError::Unknown(name.to_owned()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| MiddleError::File(format!("{name}: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let read = |f: &str| {
            let at = dir.join(f);
            std::fs::read_to_string(&at).map_err(|e| MiddleError::File(format!("{name}: {}: {e}", at.display())))
        };
        let stem = path.file_stem().map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned());
        ProcessMiddle::parse(&stem, name, &text, &read).map(|m| Middle::Process(Box::new(m)))
    }

    /// Its name, as tables and reports say it.
    pub fn name(&self) -> &str {
        match self {
            Middle::Mcpstorm => MCPSTORM,
            Middle::Process(p) => &p.name,
        }
    }

    /// Whether it is this binary's gateway, whose internals (breakers, degraded kinds) the report may read.
    pub fn is_mcpstorm(&self) -> bool {
        matches!(self, Middle::Mcpstorm)
    }

    /// How long the run waits for it to listen before its time begins.
    pub fn ready_within(&self) -> Duration {
        match self {
            Middle::Mcpstorm => READY_WITHIN,
            Middle::Process(p) => p.table.ready_within.map_or(READY_WITHIN, |d| d.0),
        }
    }
}

impl ProcessMiddle {
    fn parse(
        name: &str,
        file: &str,
        text: &str,
        read: &dyn Fn(&str) -> Result<String, MiddleError>,
    ) -> Result<ProcessMiddle, MiddleError> {
        let parsed: MiddleFile = toml::from_str(text).map_err(|e| MiddleError::File(toml_error(file, text, &e)))?;
        let table = parsed.middle;
        let mut templates = Vec::new();
        for f in table.config_template.iter().chain(&table.files) {
            let written = f.rsplit('/').next().unwrap_or(f);
            let written = written.strip_suffix(".tmpl").unwrap_or(written).to_owned();
            templates.push((written, read(f)?));
        }
        let middle = ProcessMiddle { name: name.to_owned(), program: PathBuf::new(), table, templates };
        // Every template rendered once against a sample context: a bad name is an error now, not mid-run.
        let sample = middle.context(&Context::sample());
        middle.render_all(&sample, file)?;
        let program = middle.wanted_program();
        let how = middle.table.install.as_ref().map_or_else(String::new, |how| format!(" (install it: {how})"));
        let missing = |program: String| MiddleError::Missing { middle: name.to_owned(), program, how: how.clone() };
        let found = find_program(&program).ok_or_else(|| missing(program.clone()))?;
        let middle = ProcessMiddle { program: found, ..middle };
        if let Some(check) = &middle.table.check {
            let ctx = Context { exe: std::env::current_exe().unwrap_or_default(), ..Context::sample() };
            let check = template::render(check, &middle.context(&ctx))
                .map_err(|source| MiddleError::Template { file: format!("{file}: check"), source })?;
            let ran = std::process::Command::new("sh").args(["-c", &check]).output();
            if !ran.is_ok_and(|o| o.status.success()) {
                return Err(missing(format!("{} (`{check}` failed)", middle.program.display())));
            }
        }
        Ok(middle)
    }

    /// The program asked for: its environment variable's value, `program`, or the command's first word.
    fn wanted_program(&self) -> String {
        if let Some(value) = self.table.program_env.as_ref().and_then(std::env::var_os) {
            return value.to_string_lossy().into_owned();
        }
        let first = match &self.table.program {
            Some(p) => p.clone(),
            None => self.table.command.split_whitespace().next().unwrap_or_default().to_owned(),
        };
        // A templated program (`{{exe}}`, this binary): what it renders to.
        let ctx = Context { exe: std::env::current_exe().unwrap_or_default(), ..Context::sample() };
        template::render(&first, &self.context(&ctx)).unwrap_or(first)
    }

    /// The context every template of this middle sees for `ctx`.
    pub fn context(&self, ctx: &Context) -> Value {
        let servers: Vec<Value> = ctx
            .servers
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let replicas: Vec<Value> = s
                    .replicas
                    .iter()
                    .enumerate()
                    .map(|(r, addr)| {
                        json!({"url": format!("http://{addr}/mcp"), "address": addr, "host": "127.0.0.1",
                               "port": addr.rsplit(':').next().unwrap_or_default(), "index": r,
                               "first": r == 0, "last": r + 1 == s.replicas.len()})
                    })
                    .collect();
                json!({"name": s.name, "first": i == 0, "last": i + 1 == ctx.servers.len(), "replicas": replicas})
            })
            .collect();
        let config = self.templates.first().map(|(name, _)| ctx.scratch.join(name));
        let mut context = json!({
            "listen": format!("127.0.0.1:{}", ctx.port),
            "host": "127.0.0.1",
            "port": ctx.port,
            "scratch": ctx.scratch.display().to_string(),
            "config": config.map_or_else(String::new, |c| c.display().to_string()),
            "program": self.program.display().to_string(),
            "exe": ctx.exe.display().to_string(),
            "node": ctx.node,
            "servers": servers,
        });
        if let Some(map) = context.as_object_mut() {
            for (name, value) in &self.table.vars {
                map.insert(name.clone(), Value::String(value.clone()));
            }
        }
        context
    }

    /// Every template and the command rendered against `context`: (file name, text) for each file, and the command.
    pub fn render_all(&self, context: &Value, file: &str) -> Result<(Vec<(String, String)>, String), MiddleError> {
        let mut files = Vec::new();
        for (written, text) in &self.templates {
            let source = template::render(text, context)
                .map_err(|source| MiddleError::Template { file: format!("{file}: {written}.tmpl"), source })?;
            files.push((written.clone(), source));
        }
        let command = template::render(&self.table.command, context)
            .map_err(|source| MiddleError::Template { file: format!("{file}: command"), source })?;
        Ok((files, command))
    }

    /// Where the agents reach each server, by name: `None` when every server is at one path (the middle federates).
    pub fn paths(&self, servers: &[String]) -> Result<Option<Vec<(String, String)>>, MiddleError> {
        let mut paths = Vec::new();
        for server in servers {
            let path = template::render(&self.table.path, &json!({"server": server}))
                .map_err(|source| MiddleError::Template { file: format!("middle {}: path", self.name), source })?;
            paths.push((server.clone(), path));
        }
        // Per server when the path names the server (two names give two paths), however many servers there are.
        let path = |server: &str| template::render(&self.table.path, &json!({"server": server})).ok();
        Ok(if path("a") == path("b") { None } else { Some(paths) })
    }

    /// The single path of a middle that federates.
    pub fn federated_path(&self) -> String {
        template::render(&self.table.path, &json!({"server": ""})).unwrap_or_else(|_| default_path())
    }
}

/// `scenario` as a run through a middle runs it: one gateway node per load host unless it has its own (each an
/// instance of the middle), and every replica serving Streamable HTTP, the transport every middle speaks (nginx
/// proxies HTTP, not newline-delimited JSON), so that every middle is measured on the same wire.
pub fn scenario_for(scenario: &Scenario) -> Scenario {
    let mut s = scenario.clone();
    if s.nodes.count == 0 {
        s.nodes.count = s.load.hosts;
    }
    for server in &mut s.servers {
        server.transport = Transport::Http;
    }
    s
}

/// `host:port` of a replica's URL (`http://host:port/mcp`).
pub fn address_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// What one instance of a middle is started with.
#[derive(Debug, Clone)]
pub struct Context {
    /// The gateway node it stands for (`gateway-0`, ...).
    pub node: String,
    pub port: u16,
    pub scratch: PathBuf,
    /// This binary (`{{exe}}`: a middle that is `mcpstorm gateway` given as a template).
    pub exe: PathBuf,
    /// Each server and where this node reaches each of its replicas (`127.0.0.1:PORT`, its relay).
    pub servers: Vec<ServerAt>,
}

#[derive(Debug, Clone)]
pub struct ServerAt {
    pub name: String,
    pub replicas: Vec<String>,
}

impl Context {
    fn sample() -> Context {
        Context {
            node: "gateway-0".into(),
            port: 1,
            scratch: PathBuf::from("/tmp/scratch"),
            exe: PathBuf::from("mcpstorm"),
            servers: vec![ServerAt { name: "api".into(), replicas: vec!["127.0.0.1:2".into()] }],
        }
    }
}

/// `program` if it names a file, else the first directory of `PATH` (then the `sbin` directories, which an
/// ordinary user's `PATH` lacks and Debian's nginx lives in) that holds it.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return path.is_file().then_some(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A TOML error at `file:line:column`.
fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{file}:{line}:{column}: {}", e.message())
        }
        None => format!("{file}: {}", e.message()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpstorm-middle-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }

    #[test]
    fn an_unknown_name_and_bad_files_are_bad_input_naming_where() {
        let e = Middle::named("envoy").unwrap_err();
        assert!(e.is_bad_input() && e.to_string().contains("mcpstorm, nginx"), "{e}");
        let dir = scratch("bad");
        let file = write(&dir, "m.toml", "[middle]\ncommand = \"sh\"\nport = 3\n");
        let e = Middle::named(&file.to_string_lossy()).unwrap_err();
        assert!(e.is_bad_input() && e.to_string().contains("m.toml:3:1"), "{e}");
        write(&dir, "t.tmpl", "listen {{listne}};\n");
        let file = write(&dir, "t.toml", "[middle]\ncommand = \"sh -c {{config}}\"\nconfig_template = \"t.tmpl\"\n");
        let e = Middle::named(&file.to_string_lossy()).unwrap_err();
        assert!(e.is_bad_input() && e.to_string().contains("t.toml: t.tmpl:1:8: no `listne` here"), "{e}");
        let file =
            write(&dir, "gone.toml", "[middle]\ncommand = \"no-such-middle-program-here --x\"\ninstall = \"x\"\n");
        let e = Middle::named(&file.to_string_lossy()).unwrap_err();
        assert!(!e.is_bad_input() && e.to_string().contains("`no-such-middle-program-here`"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_middle_file_renders_its_config_command_and_paths() {
        let dir = scratch("good");
        write(&dir, "p.conf.tmpl", "{{#servers}}{{name}}:{{#replicas}} {{url}}{{/replicas}}\n{{/servers}}");
        let file = write(
            &dir,
            "p.toml",
            "[middle]\ncommand = \"sh -c 'cat {{config}}' {{listen}}\"\nconfig_template = \"p.conf.tmpl\"\n\
             path = \"/{{server}}/mcp\"\n",
        );
        let Middle::Process(m) = Middle::named(&file.to_string_lossy()).expect("a middle") else { panic!("a process") };
        assert_eq!(m.name, "p");
        let ctx = Context {
            servers: vec![
                ServerAt { name: "db".into(), replicas: vec!["127.0.0.1:7".into(), "127.0.0.1:8".into()] },
                ServerAt { name: "api".into(), replicas: vec!["127.0.0.1:9".into()] },
            ],
            ..Context::sample()
        };
        let (files, command) = m.render_all(&m.context(&ctx), "p.toml").expect("renders");
        assert_eq!(
            files,
            [(
                "p.conf".to_owned(),
                "db: http://127.0.0.1:7/mcp http://127.0.0.1:8/mcp\napi: http://127.0.0.1:9/mcp\n".to_owned()
            )]
        );
        assert_eq!(command, "sh -c 'cat /tmp/scratch/p.conf' 127.0.0.1:1");
        let paths = m.paths(&["db".into(), "api".into()]).expect("paths").expect("one per server");
        assert_eq!(paths[1], ("api".to_owned(), "/api/mcp".to_owned()));
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The shipped middles' templates, rendered for two servers (not through `named`: this machine may lack their
    /// programs, and the templates are what is tested).
    fn shipped(name: &str) -> (Vec<(String, String)>, String) {
        let Some((_, text, files)) = SHIPPED.iter().find(|(n, ..)| *n == name) else { panic!("{name} ships") };
        let read = |f: &str| files.iter().find(|(n, _)| *n == f).map(|(_, t)| (*t).to_owned()).expect("its file");
        let parsed: MiddleFile = toml::from_str(text).expect("parses");
        let table = parsed.middle;
        let templates = table.config_template.iter().chain(&table.files).map(|f| (f.replace(".tmpl", ""), read(f)));
        let m = ProcessMiddle {
            name: name.into(),
            program: PathBuf::from("/usr/bin/x"),
            templates: templates.collect(),
            table,
        };
        let ctx = Context {
            servers: vec![
                ServerAt { name: "api".into(), replicas: vec!["127.0.0.1:2".into(), "127.0.0.1:3".into()] },
                ServerAt { name: "db".into(), replicas: vec!["127.0.0.1:4".into()] },
            ],
            ..Context::sample()
        };
        m.render_all(&m.context(&ctx), name).expect("renders")
    }

    #[test]
    fn the_shipped_middles_render() {
        let (files, command) = shipped("nginx");
        assert!(files[0].1.contains("upstream api {\n        server 127.0.0.1:2;\n        server 127.0.0.1:3;"));
        assert!(files[0].1.contains("location /db/ {\n            proxy_pass http://db/;"), "{}", files[0].1);
        assert!(command.starts_with("/usr/bin/x -p /tmp/scratch "), "{command}");
        for (name, mode) in [("fastmcp", "per_call"), ("fastmcp_shared", "shared")] {
            let (files, command) = shipped(name);
            let config: Value = serde_json::from_str(&files[0].1).expect("the config is JSON");
            assert_eq!(config["mode"], mode);
            assert_eq!(config["servers"][0]["urls"][1], "http://127.0.0.1:3/mcp", "{config}");
            assert_eq!(config["servers"][1]["name"], "db");
            assert_eq!(files[1].0, "fastmcp_proxy.py");
            assert_eq!(command, "/usr/bin/x /tmp/scratch/fastmcp_proxy.py /tmp/scratch/fastmcp.json");
        }
    }
}
