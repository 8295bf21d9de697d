//! Reading libproc's answer to "which pids are in process group G"
//! (`proc_listpgrppids`), apart from the call itself so that the reading is
//! tested on every platform, not only on a Mac.
//!
//! Two facts of Apple's wrapper (xnu, `libsyscall/wrappers/libproc/libproc.c`)
//! decide how the answer is read:
//! - it returns a **count of pids**: the kernel answers in bytes and the
//!   wrapper divides by `sizeof(int)` before returning, so dividing again
//!   would see a group of one to three processes as empty;
//! - it returns **0, never -1, when the kernel call fails** (the inner
//!   `proc_listpids` maps -1 to 0). A 0 therefore cannot tell "no members"
//!   from "could not list". The caller has just seen the group exist
//!   (`kill(-pgid, 0)`), so 0 means "cannot tell" and counts as alive: a
//!   caller waiting for the group to end polls again, and the next `kill`
//!   probe says whether it is gone.
//!
//! The kernel lists zombies too; the caller's liveness test rules them out.

/// Whether the `listed` pids at the start of `pids` (as returned by
/// `proc_listpgrppids`) include one that `live` accepts; `true` when the
/// listing gave nothing (see the module comment).
pub fn any_live(listed: i32, pids: &[i32], live: impl Fn(i32) -> bool) -> bool {
    let Ok(count) = usize::try_from(listed) else { return true };
    if count == 0 {
        return true;
    }
    pids[..count.min(pids.len())].iter().any(|&pid| pid > 0 && live(pid))
}

#[cfg(test)]
mod tests {
    use super::any_live;

    fn live_set(live: &'static [i32]) -> impl Fn(i32) -> bool {
        move |pid| live.contains(&pid)
    }

    #[test]
    fn the_answer_is_a_count_of_pids_not_bytes() {
        // One live member: the wrapper returns 1 (a byte count would be 4).
        assert!(
            any_live(1, &[501, 0, 0, 0], live_set(&[501])),
            "a group of one live process is alive"
        );
        assert!(
            any_live(3, &[501, 502, 503, 0], live_set(&[503])),
            "the third of three members counts"
        );
        assert!(
            any_live(5, &[1, 2, 3, 4, 505, 0, 0, 0], live_set(&[505])),
            "the fifth of five members counts"
        );
    }

    #[test]
    fn only_the_listed_pids_are_read() {
        assert!(
            !any_live(2, &[501, 502, 503], live_set(&[503])),
            "a stale pid past the count is not a member"
        );
        assert!(
            any_live(99, &[501, 502], live_set(&[502])),
            "a count beyond the buffer is clamped to it"
        );
    }

    #[test]
    fn a_group_of_dead_members_is_not_alive_and_an_empty_answer_cannot_tell() {
        assert!(!any_live(2, &[501, 502], live_set(&[])), "listed but none live (zombies): gone");
        assert!(!any_live(1, &[0], live_set(&[0])), "pid 0 is never a member");
        assert!(any_live(0, &[0; 4], live_set(&[])), "0 is also the failure answer: cannot tell");
        assert!(any_live(-1, &[0; 4], live_set(&[])), "a negative answer cannot tell either");
    }

    #[test]
    fn read_with_the_real_liveness_test_a_killed_member_stops_counting() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let live = |p: i32| super::super::start_time(p as i64).is_some();
        assert!(any_live(1, &[pid], live));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!any_live(1, &[pid], live), "a reaped member is not alive");
    }
}
