//! The call history's file (`[history]`): every replica client keeps its `ServerCallRecord`s in a bounded ring in
//! memory (the core's `CallHistory`); once a second a task appends the ones not yet written as JSON lines, so no
//! call ever waits on the disk. When the file reaches `max_bytes` it is renamed `FILE.1` (older ones shifting up to
//! `FILE.<keep>`, the oldest deleted) and a new one begun. A ring that overflowed between two writes leaves a line
//! saying how many records were lost, so a gap is never silent.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use mcpstorm_core::CancelToken;
use serde_json::json;

use super::federation::Federation;
use crate::config::HistorySpec;

/// Records each replica client holds between two writes: a second of calls at a busy gateway.
pub const RING: usize = 20_000;

/// How often the records are written.
const EVERY: Duration = Duration::from_secs(1);

/// The rotating file.
#[derive(Debug)]
pub struct HistoryFile {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: Option<File>,
    size: u64,
}

impl HistoryFile {
    pub fn new(spec: &HistorySpec) -> Self {
        HistoryFile { path: PathBuf::from(&spec.file), max_bytes: spec.max_bytes, keep: spec.keep, file: None, size: 0 }
    }

    /// Appends `lines` (each ending in a newline), rotating first when they would take the file past its size.
    pub fn append(&mut self, lines: &[String]) -> std::io::Result<()> {
        for line in lines {
            if self.size > 0 && self.size + line.len() as u64 > self.max_bytes {
                self.rotate()?;
            }
            let file = match &mut self.file {
                Some(f) => f,
                None => self.open()?,
            };
            file.write_all(line.as_bytes())?;
            self.size += line.len() as u64;
        }
        if let Some(f) = &mut self.file {
            f.flush()?;
        }
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<&mut File> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(&self.path)?;
        self.size = file.metadata()?.len();
        Ok(self.file.insert(file))
    }

    fn rotated(&self, n: usize) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        self.file = None;
        if self.keep == 0 {
            fs::remove_file(&self.path).or_else(ignore_missing)?;
        } else {
            fs::remove_file(self.rotated(self.keep)).or_else(ignore_missing)?;
            for n in (1..self.keep).rev() {
                fs::rename(self.rotated(n), self.rotated(n + 1)).or_else(ignore_missing)?;
            }
            fs::rename(&self.path, self.rotated(1)).or_else(ignore_missing)?;
        }
        self.size = 0;
        Ok(())
    }
}

fn ignore_missing(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }
}

/// Writes every replica's new records once a second until `stop`, then once more.
pub async fn run(federation: std::sync::Arc<Federation>, mut file: HistoryFile, stop: CancelToken) {
    // Replica → the `seq` of the next record to write.
    let mut next: BTreeMap<String, u64> = BTreeMap::new();
    let mut failing = false;
    loop {
        let stopping = tokio::select! {
            biased;
            () = stop.cancelled() => true,
            () = tokio::time::sleep(EVERY) => false,
        };
        let lines = collect(&federation, &mut next);
        match file.append(&lines) {
            Ok(()) => failing = false,
            // One line per outage, not one per second.
            Err(e) if !failing => {
                failing = true;
                tracing::error!(path = %file.path.display(), error = %e, "cannot write the call history");
            }
            Err(_) => {}
        }
        if stopping {
            return;
        }
    }
}

/// The JSON lines of every record not yet written, replica by replica.
fn collect(federation: &Federation, next: &mut BTreeMap<String, u64>) -> Vec<String> {
    let mut lines = Vec::new();
    for server in federation.servers() {
        for i in 0..server.replicas.len() {
            let replica = server.replica_id(i);
            let (_, client) = federation.gateway().client(&server.name, &replica);
            let from = next.get(&replica).copied().unwrap_or(0);
            let read = client.history(|h| {
                let oldest = h.records().next().map_or(h.total(), |r| r.seq);
                let new: Vec<String> = h.records().filter(|r| r.seq >= from).filter_map(line).collect();
                (oldest.saturating_sub(from), new, h.total())
            });
            let Some((lost, new, total)) = read else { continue };
            if lost > 0 {
                lines.push(format!("{}\n", json!({ "replica": replica, "lost_records": lost })));
            }
            lines.extend(new);
            next.insert(replica, total);
        }
    }
    lines
}

fn line(record: &mcpstorm_core::history::ServerCallRecord) -> Option<String> {
    serde_json::to_string(record).ok().map(|mut l| {
        l.push('\n');
        l
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_rotates_at_its_size_and_keeps_the_newest() {
        let dir = std::env::temp_dir().join(format!("mcpstorm-history-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let spec = HistorySpec { file: dir.join("calls.jsonl").display().to_string(), max_bytes: 100, keep: 2 };
        let mut file = HistoryFile::new(&spec);
        let line = |n: usize| format!("{{\"n\": {n:040}}}\n"); // 50 bytes
        for n in 0..7 {
            file.append(&[line(n)]).expect("append");
        }
        let read = |p: PathBuf| fs::read_to_string(p).unwrap_or_default();
        // Two lines per file: 6 and the current; 4, 5 in .1; 2, 3 in .2; 0 and 1 deleted.
        assert_eq!(read(dir.join("calls.jsonl")), line(6));
        assert_eq!(read(dir.join("calls.jsonl.1")), format!("{}{}", line(4), line(5)));
        assert_eq!(read(dir.join("calls.jsonl.2")), format!("{}{}", line(2), line(3)));
        assert!(!dir.join("calls.jsonl.3").exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
