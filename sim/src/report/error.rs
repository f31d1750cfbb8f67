//! The one error type of the report writers; every variant names the file that could not be written.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write CSV {}: {source}", path.display())]
    Csv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("cannot write JSON {}: {source}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot draw {}: {message}", path.display())]
    Plot { path: PathBuf, message: String },
    #[error("cannot encode PNG {}: {source}", path.display())]
    Png {
        path: PathBuf,
        #[source]
        source: png::EncodingError,
    },
}

impl ReportError {
    /// The file (or directory) that could not be written.
    pub fn path(&self) -> &Path {
        match self {
            ReportError::Io { path, .. }
            | ReportError::Csv { path, .. }
            | ReportError::Json { path, .. }
            | ReportError::Plot { path, .. }
            | ReportError::Png { path, .. } => path,
        }
    }
}
