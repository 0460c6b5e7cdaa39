//! Each job on a CPU of its own, for runs whose connections are processes.
//!
//! A request to an outside store is a round trip over a pipe: crashsim's
//! job thread writes and sleeps, the store's process wakes, answers and
//! sleeps, and the thread wakes again. When the two sit on different CPUs
//! every wake-up is an inter-processor interrupt, which costs more than the
//! request's work on a virtual machine (docs/performance.md: `--mode
//! process` and the Python example some 1.2× faster pinned, on this
//! project's 2-core VM). A job's thread, and so the fork server and every
//! process it starts (they inherit the mask), are kept on one CPU; the
//! jobs on different ones.
//!
//! Only the scheduling changes: a seed's trace is the same pinned or not.
//! It is done only where it cannot crowd anyone: when there are no more jobs
//! than CPUs this process may use, and the CPUs it may use are all its own
//! to use (no CPU quota narrower than its affinity mask, as in a container
//! limited with `--cpus`). `CRASHSIM_NO_PIN=1` turns it off.

/// The variable that turns pinning off.
pub const ENV_NO_PIN: &str = "CRASHSIM_NO_PIN";

/// The CPUs to pin `threads` jobs to, one each, or `None` to leave the
/// scheduler free.
pub fn cpus_for(threads: usize) -> Option<Vec<usize>> {
    if std::env::var_os(ENV_NO_PIN).is_some_and(|value| !value.is_empty() && value != "0") {
        return None;
    }
    let allowed = allowed_cpus();
    let usable = std::thread::available_parallelism().map_or(0, usize::from);
    (threads > 0 && threads <= allowed.len() && usable == allowed.len()).then(|| allowed[..threads].to_vec())
}

/// The CPUs this process may run on (its affinity mask), in order; none
/// where there is no affinity mask to read (macOS): nothing is pinned.
#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Elsewhere than Linux, threads are left to the scheduler.
#[cfg(not(target_os = "linux"))]
pub fn pin_this_thread(_cpu: usize) {}

/// The CPUs this process may run on (its affinity mask), in order.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a cpu_set_t of the size passed; 0 is this thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET only reads the set, within its size.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect()
}

/// Keeps the calling thread, and every process it starts from now on, on
/// `cpu`. A refusal leaves the thread where it was: only speed is at stake.
#[cfg(target_os = "linux")]
pub fn pin_this_thread(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET adds one CPU
    // below CPU_SETSIZE (`cpu` came from the process's own mask).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t; 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn never_more_jobs_pinned_than_cpus_and_each_on_its_own() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty(), "this process may run somewhere");
        assert_eq!(cpus_for(allowed.len() + 1), None);
        assert_eq!(cpus_for(0), None);
        if let Some(cpus) = cpus_for(allowed.len()) {
            assert_eq!(cpus, allowed);
        }
    }

    #[test]
    fn a_pinned_thread_runs_where_it_was_put_and_its_children_inherit_it() {
        let allowed = allowed_cpus();
        let cpu = *allowed.last().expect("a CPU");
        let (mine, child) = std::thread::spawn(move || {
            pin_this_thread(cpu);
            let child = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg("grep Cpus_allowed_list /proc/self/status")
                .output()
                .expect("sh runs");
            (allowed_cpus(), String::from_utf8_lossy(&child.stdout).into_owned())
        })
        .join()
        .expect("the thread ends");
        assert_eq!(mine, vec![cpu]);
        assert_eq!(
            child.split_whitespace().last(),
            Some(cpu.to_string().as_str()),
            "{child}"
        );
    }
}
