//! One instance of a middle ([`super::ProcessMiddle`]): its templates rendered into a scratch directory of its own,
//! its command run by `sh -c` in a process group of its own (a proxy's workers are its children: a crash kills them
//! all, and the CPU and memory figures count them), and what it last said on stdout and stderr, to say why it did
//! not start or why it died.

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::TcpStream;

use super::super::endpoint::Service;
use super::usage::Usage;
use super::{Context, ProcessMiddle};

/// Lines of its output kept, to say why it did not start or died.
const KEPT_LINES: usize = 20;

/// How long a middle that exited is given for its output to be read to the end.
const LAST_WORDS: Duration = Duration::from_millis(500);

type Lines = Arc<Mutex<VecDeque<String>>>;

/// A running middle instance. Killed, with its process group, when dropped; its scratch directory is removed.
#[derive(Debug)]
pub struct MiddleProcess {
    name: String,
    command: String,
    scratch: PathBuf,
    addr: SocketAddr,
    child: Option<Child>,
    lines: Lines,
    /// The threads reading its stdout and stderr: they end at its exit, once they have kept what it said last.
    /// Threads, not tasks: [`MiddleProcess::died`] waits for them from inside the runtime, and a task woken on
    /// the waiting worker could not run until the wait ended.
    readers: Vec<JoinHandle<()>>,
    usage: Usage,
}

impl MiddleProcess {
    /// Renders `middle`'s files for `ctx`, starts it and waits until its port accepts connections, up to the
    /// middle's `ready_within`. Its process group is counted in `usage`.
    pub async fn launch(middle: &ProcessMiddle, ctx: &Context, usage: Usage) -> io::Result<MiddleProcess> {
        std::fs::create_dir_all(&ctx.scratch)?;
        let (files, command) = middle
            .render_all(&middle.context(ctx), &format!("middle {}", middle.name))
            .map_err(|e| io::Error::other(e.to_string()))?;
        for (name, text) in files {
            std::fs::write(ctx.scratch.join(name), text)?;
        }
        let mut process = MiddleProcess {
            name: format!("{} ({})", middle.name, ctx.node),
            command,
            scratch: ctx.scratch.clone(),
            addr: SocketAddr::from(([127, 0, 0, 1], ctx.port)),
            child: None,
            lines: Lines::default(),
            readers: Vec::new(),
            usage,
        };
        process.spawn()?;
        let within = middle.table.ready_within.map_or(super::READY_WITHIN, |d| d.0);
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if TcpStream::connect(process.addr).await.is_ok() {
                return Ok(process);
            }
            if let Some(died) = process.died() {
                return Err(process.failed(&died));
            }
            if tokio::time::Instant::now() >= deadline {
                let what = format!("did not listen on {} within {} s", process.addr, within.as_secs_f64());
                return Err(process.failed(&what));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Where the agents reach it.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn spawn(&mut self) -> io::Result<()> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {}", self.command))
            .current_dir(&self.scratch)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        self.usage.watch(child.id());
        self.readers.clear();
        if let Some(out) = child.stdout.take() {
            self.readers.push(keep(out, self.lines.clone(), self.name.clone()));
        }
        if let Some(err) = child.stderr.take() {
            self.readers.push(keep(err, self.lines.clone(), self.name.clone()));
        }
        self.child = Some(child);
        Ok(())
    }

    /// How it ended, if it has (not by [`Service::stop`]), once its last words are read (up to [`LAST_WORDS`]:
    /// a process it left behind may hold its output open).
    pub fn died(&mut self) -> Option<String> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        let mut waited = Duration::ZERO;
        while waited < LAST_WORDS && !self.readers.iter().all(JoinHandle::is_finished) {
            // Blocks this worker a moment, once: the run is failing with this message.
            std::thread::sleep(Duration::from_millis(10));
            waited += Duration::from_millis(10);
        }
        Some(format!("exited ({status})"))
    }

    /// Why it failed (`what`), with what it last said; stops it.
    pub fn failed(&mut self, what: &str) -> io::Error {
        self.stop();
        io::Error::other(format!("middle {} {what}: {}", self.name, self.said()))
    }

    /// Its last lines of output, `|`-separated, or a note that it said nothing.
    pub fn said(&self) -> String {
        let kept = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.is_empty() {
            return format!("it said nothing (command: {})", self.command);
        }
        kept.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

/// Keeps the newest lines of `stream` in `lines`, on a thread of its own that ends at the stream's end.
fn keep(stream: impl Read + Send + 'static, lines: Lines, name: String) -> JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            tracing::debug!(middle = %name, "{line}");
            let mut kept = lines.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() == KEPT_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    })
}

/// Kills process group `pgid` (the middle and every process it started), by the shell's `kill`: SIGKILL to the
/// leader alone would leave a proxy's workers holding its port.
fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("sh")
        .args(["-c", &format!("kill -KILL -{pgid} 2>/dev/null")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

impl Service for MiddleProcess {
    /// A restart: the same command on the same port, not awaited (its callers' connections are refused until it
    /// listens, as with any process that restarts).
    fn start(&mut self) -> io::Result<SocketAddr> {
        self.spawn()?;
        Ok(self.addr)
    }

    /// A crash: the process group is killed (SIGKILL), with whatever it had in flight.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Its CPU time up to now is the middle's (and the run's own, not another process's).
            self.usage.sample();
            kill_group(child.id());
            let _ = child.kill();
            // Reaped at once (SIGKILL cannot be ignored), so no zombie outlives the run.
            let _ = child.wait();
        }
    }

    fn is_up(&self) -> bool {
        self.child.is_some()
    }

    fn died(&mut self) -> Option<String> {
        let died = MiddleProcess::died(self)?;
        Some(format!("middle {} {died}: {}", self.name, self.said()))
    }
}

impl Drop for MiddleProcess {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}
