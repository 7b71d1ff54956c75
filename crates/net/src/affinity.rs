//! Threads kept on cores: a feed handler's receive and decode threads each on a core of its
//! own, so the scheduler does not move them (and their data out of that core's cache).

/// The cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Pins the calling thread to core `core` (modulo the cores there are). Returns the core, or
/// the OS error (a container may forbid it; the thread then runs where the scheduler puts it).
pub fn pin_current_thread(core: usize) -> std::io::Result<usize> {
    let core = core % cores();
    let mut set = rustix::thread::CpuSet::new();
    set.set(core);
    rustix::thread::sched_setaffinity(None, &set)?;
    Ok(core)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_its_core() {
        let last = cores() - 1;
        let got = std::thread::spawn(move || {
            let core = pin_current_thread(last).expect("pinning");
            let set = rustix::thread::sched_getaffinity(None).expect("affinity");
            (core, set.count(), set.is_set(last))
        })
        .join()
        .unwrap();
        assert_eq!(got, (last, 1, true));
    }
}
