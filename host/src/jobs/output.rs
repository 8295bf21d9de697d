//! Reading a job's stdout and stderr files (the paged reader is
//! [`super::ops::output`]).

use std::io::Read;

use super::model::Stream;
use super::store::Store;
use crate::error::{ErrorCode, OpError};

/// Open a job's output file for reading, never through a symbolic link:
/// a link planted in a job directory cannot make `job.output` or
/// `job.result` read some other file.
pub fn open_stream(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

pub(crate) fn io(e: std::io::Error) -> OpError {
    OpError::new(ErrorCode::Internal, format!("cannot read job output: {e}"))
}

/// The first `bound` bytes of a job's stream (empty if there is none yet).
pub fn read_prefix(store: &Store, id: &str, stream: Stream, bound: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = open_stream(&store.job_dir(id).join(stream.name())) {
        let _ = f.take(bound as u64).read_to_end(&mut buf);
    }
    buf
}

/// The whole of a finished job's stream, bounded; `None` if over the bound.
pub fn read_all(
    store: &Store,
    id: &str,
    stream: Stream,
    bound: usize,
) -> Result<Option<Vec<u8>>, OpError> {
    let path = store.job_dir(id).join(stream.name());
    match open_stream(&path) {
        Ok(f) => {
            let mut buf = Vec::new();
            f.take(bound as u64 + 1).read_to_end(&mut buf).map_err(io)?;
            Ok((buf.len() <= bound).then_some(buf))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(Vec::new())),
        Err(e) => Err(io(e)),
    }
}
