//! Capturing a job's output: the supervisor reads the program's stdout and
//! stderr pipes itself and copies them into the job's files, so it can
//! count. Each stream keeps at most its cap; the first byte past it is
//! reported ([`Event::LimitReached`]) and everything after is read and
//! dropped, so the program never blocks on a full pipe while it is being
//! stopped. A failure to read or store output is reported
//! ([`Event::CaptureFailed`]), never taken for the end of the output.

use std::io::{Read, Write};
use std::process::ExitStatus;
use std::sync::mpsc::Sender;

use super::model::Stream;
use super::testhook;

/// What the supervisor hears about while a job runs.
#[derive(Debug)]
pub enum Event {
    /// The program exited (its wait status, and when, epoch ms).
    Exited(std::io::Result<ExitStatus>, i64),
    /// A stream went past the cap; the cap's worth was kept.
    LimitReached(Stream),
    /// Reading or storing a stream failed; the message says which and where.
    CaptureFailed(String),
    /// A stream reached its end (every writer closed it).
    Drained,
}

/// Copy `src` into `dst`, at most `cap` bytes, reporting on `tx`.
pub fn pump(mut src: impl Read, mut dst: impl Write, stream: Stream, cap: u64, tx: Sender<Event>) {
    let mut buf = vec![0u8; 64 << 10];
    let mut kept = 0u64;
    let mut dropping = false;
    loop {
        let read = if testhook::capture_read_error(stream.name()) {
            Err(std::io::Error::other("injected by VERBGATE_TEST_CAPTURE_READ_ERROR"))
        } else {
            src.read(&mut buf)
        };
        let n = match read {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Event::CaptureFailed(format!(
                    "reading the program's {} failed after {kept} bytes: {e}",
                    stream.name()
                )));
                // Dropping the pipe makes a program that keeps writing get
                // EPIPE instead of blocking; the supervisor stops it.
                return;
            }
        };
        if dropping {
            continue;
        }
        let room = cap - kept;
        let take = (n as u64).min(room) as usize;
        if let Err(e) = dst.write_all(&buf[..take]) {
            let _ = tx.send(Event::CaptureFailed(format!(
                "storing the program's {} failed after {kept} bytes: {e}",
                stream.name()
            )));
            dropping = true;
            continue;
        }
        kept += take as u64;
        if n as u64 > room {
            dropping = true;
            let _ = tx.send(Event::LimitReached(stream));
        }
    }
    if let Err(e) = dst.flush() {
        let _ = tx.send(Event::CaptureFailed(format!(
            "storing the program's {} failed: {e}",
            stream.name()
        )));
    }
    let _ = tx.send(Event::Drained);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_keeps_exactly_its_cap_and_says_so() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut out = Vec::new();
        pump(&[7u8; 1000][..], &mut out, Stream::Stdout, 300, tx.clone());
        assert_eq!(out.len(), 300);
        assert!(matches!(rx.recv().unwrap(), Event::LimitReached(Stream::Stdout)));
        assert!(matches!(rx.recv().unwrap(), Event::Drained));
        // Exactly the cap is not past it.
        let mut out = Vec::new();
        pump(&[7u8; 300][..], &mut out, Stream::Stderr, 300, tx);
        assert_eq!(out.len(), 300);
        assert!(matches!(rx.recv().unwrap(), Event::Drained));
    }

    #[test]
    fn a_failed_write_is_reported_not_taken_for_the_end() {
        let (tx, rx) = std::sync::mpsc::channel();
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        pump(&[1u8; 10][..], full, Stream::Stdout, 100, tx);
        match rx.recv().unwrap() {
            Event::CaptureFailed(msg) => {
                assert!(msg.contains("storing the program's stdout failed after 0 bytes"), "{msg}")
            }
            other => panic!("{other:?}"),
        }
    }
}
