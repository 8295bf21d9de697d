//! Fault injection for the end-to-end tests, compiled into debug builds
//! only (a release build reads no such variable). Each hook makes one
//! failure that is otherwise hard to cause on purpose as root happen on
//! cue, so the supervisor's handling of it can be attacked by a test.
//!
//! - `VERBGATE_TEST_FAIL_AFTER_SPAWN=1`: the supervisor's first store write
//!   after starting the program fails (as a full disk or a locked store
//!   would).
//! - `VERBGATE_TEST_CAPTURE_READ_ERROR=stdout|stderr`: reading that stream
//!   from the program fails (as an I/O error would).

/// Whether the store write that records a started program should fail.
pub fn fail_after_spawn() -> bool {
    cfg!(debug_assertions)
        && std::env::var_os("VERBGATE_TEST_FAIL_AFTER_SPAWN").is_some_and(|v| v == "1")
}

/// Whether reading `stream` from the program should fail.
pub fn capture_read_error(stream: &str) -> bool {
    cfg!(debug_assertions)
        && std::env::var("VERBGATE_TEST_CAPTURE_READ_ERROR").is_ok_and(|v| v == stream)
}
