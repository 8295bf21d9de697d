//! `job.output`: a page of a job's stdout or stderr file, as UTF-8 text when
//! it is text (a page never splits a character) and base64 otherwise.

use base64::Engine as _;
use serde_json::{json, Value};
use std::io::{Read, Seek, SeekFrom};

use super::store::Store;
use crate::error::{ErrorCode, OpError};

/// Largest page.
pub const MAX_LIMIT: u64 = 1 << 20;

/// Read a page of `stream` of job `id`.
pub fn read_page(store: &Store, id: &str, stream: &str, offset: u64, limit: u64) -> Result<Value, OpError> {
    let job = store.resolve(id)?;
    if stream != "stdout" && stream != "stderr" {
        return Err(OpError::new(ErrorCode::InvalidArgs, "stream must be stdout or stderr").with("param", "stream"));
    }
    let limit = limit.clamp(1, MAX_LIMIT);
    let path = store.job_dir(&job.id).join(stream);
    let (total, mut bytes) = match std::fs::File::open(&path) {
        Ok(mut f) => {
            let total = f.metadata().map(|m| m.len()).unwrap_or(0);
            let mut buf = Vec::new();
            if offset < total {
                f.seek(SeekFrom::Start(offset)).map_err(io)?;
                f.take(limit).read_to_end(&mut buf).map_err(io)?;
            }
            (total, buf)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (0, Vec::new()),
        Err(e) => return Err(io(e)),
    };
    let (encoding, data) = match std::str::from_utf8(&bytes) {
        Ok(s) => ("utf8", s.to_string()),
        // A page that ends inside a character: hand back whole characters
        // and let the next page start at the cut.
        Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => {
            bytes.truncate(e.valid_up_to());
            ("utf8", String::from_utf8(bytes.clone()).unwrap_or_default())
        }
        Err(_) => ("base64", base64::engine::general_purpose::STANDARD.encode(&bytes)),
    };
    let next = offset.min(total) + bytes.len() as u64;
    Ok(json!({
        "id": job.id,
        "stream": stream,
        "offset": offset,
        "next_offset": next,
        "total_bytes": total,
        "eof": next >= total && job.status.terminal(),
        "encoding": encoding,
        "data": data,
    }))
}

fn io(e: std::io::Error) -> OpError {
    OpError::new(ErrorCode::Internal, format!("cannot read job output: {e}"))
}

/// The first `bound` bytes of a job's stream (empty if there is none yet).
pub fn read_prefix(store: &Store, id: &str, stream: &str, bound: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Ok(f) = std::fs::File::open(store.job_dir(id).join(stream)) {
        let _ = f.take(bound as u64).read_to_end(&mut buf);
    }
    buf
}

/// The whole of a finished job's stream, bounded; `None` if over the bound.
pub fn read_all(store: &Store, id: &str, stream: &str, bound: usize) -> Result<Option<Vec<u8>>, OpError> {
    let path = store.job_dir(id).join(stream);
    match std::fs::File::open(&path) {
        Ok(f) => {
            let mut buf = Vec::new();
            f.take(bound as u64 + 1).read_to_end(&mut buf).map_err(io)?;
            Ok((buf.len() <= bound).then_some(buf))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(Vec::new())),
        Err(e) => Err(io(e)),
    }
}
