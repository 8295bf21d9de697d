//! `job.output`: a page of a job's stdout or stderr file, as UTF-8 text when
//! it is text (a page never splits a character) and base64 otherwise.

use base64::Engine as _;
use serde_json::{json, Value};
use std::io::{Read, Seek, SeekFrom};

use super::args::OutputArgs;
use crate::error::OpError;
use crate::jobs::output::{io, open_stream};
use crate::jobs::store::Store;

/// Largest page.
pub const MAX_LIMIT: u64 = 1 << 20;

/// Read a page of a job's stream. A stream the supervisor cut at the
/// output cap says so: `limit_reached` and `truncated_at` (the byte where
/// output stopped; every byte before it is the program's).
pub fn run(store: &Store, args: &OutputArgs) -> Result<Value, OpError> {
    let (stream, offset) = (args.stream, args.offset);
    let job = store.resolve(&args.id)?;
    let limit = args.limit.clamp(1, MAX_LIMIT);
    let path = store.job_dir(&job.id).join(stream.name());
    let (total, mut bytes) = match open_stream(&path) {
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
        "stream": stream.name(),
        "offset": offset,
        "next_offset": next,
        "total_bytes": total,
        "eof": next >= total && job.status().terminal(),
        "encoding": encoding,
        "data": data,
        "limit_reached": job.truncated(stream),
        "truncated_at": job.output_limit_bytes.filter(|_| job.truncated(stream)),
    }))
}
