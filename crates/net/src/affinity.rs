//! Threads kept on cores: a feed handler's receive and decode threads each on a core of its
//! own, so the scheduler does not move them (and their data out of that core's cache).
//!
//! Threads are dealt to the CPUs this process may use, one per physical core first: two
//! hyperthreads of one core share its execution units, so a second decoding thread there
//! adds a fraction of a core, and N threads on N/2 cores would look like poor scaling.

use std::sync::OnceLock;

/// The cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// Pins the calling thread to the `nth` CPU of [`order`] (modulo the CPUs there are).
/// Returns the CPU's number, or the OS error (a container may forbid it; the thread then
/// runs where the scheduler puts it).
pub fn pin_current_thread(nth: usize) -> std::io::Result<usize> {
    let order = order();
    let cpu = order[nth % order.len()];
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)?;
    Ok(cpu)
}

/// Makes the calling thread a background helper of a pinned one (a recording's writer):
/// free to run on any CPU of [`order`], since it would otherwise share its starter's one CPU,
/// and at the lowest priority (nice 19), so that where every core is busy with the feed it
/// runs in their idle time rather than taking slices from the threads that read it.
pub fn background_current_thread() -> std::io::Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    for &cpu in order() {
        set.set(cpu);
    }
    let placed = rustix::thread::sched_setaffinity(None, &set);
    // Linux gives each thread its own nice value: this one only. Tried even where the
    // affinity was refused (a container may forbid it).
    let me = rustix::thread::gettid();
    let niced = rustix::process::setpriority_process(Some(me), 19);
    placed.and(niced)?;
    Ok(())
}

/// The CPUs this process may use, as read on the first call (before any thread is pinned),
/// one per physical core first, then their second hyperthreads, and so on.
pub fn order() -> &'static [usize] {
    static ORDER: OnceLock<Vec<usize>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let allowed: Vec<usize> = match rustix::thread::sched_getaffinity(None) {
            Ok(set) => (0..rustix::thread::CpuSet::MAX_CPU)
                .filter(|&c| set.is_set(c))
                .collect(),
            Err(_) => Vec::new(),
        };
        if allowed.is_empty() {
            return (0..cores()).collect();
        }
        spread(&allowed, physical_core)
    })
}

/// The physical core of CPU `cpu` (package, core) from sysfs; `None` where it is not there.
fn physical_core(cpu: usize) -> Option<(u32, u32)> {
    let read = |what: &str| -> Option<u32> {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some((read("physical_package_id")?, read("core_id")?))
}

/// `cpus` ordered by their rank among the CPUs of their physical core (first hyperthreads,
/// then second ones), then by number. A CPU of unknown topology counts as a core of its own.
fn spread(cpus: &[usize], core_of: impl Fn(usize) -> Option<(u32, u32)>) -> Vec<usize> {
    let mut seen: std::collections::HashMap<(u32, u32), usize> = Default::default();
    let mut ranked: Vec<(usize, usize)> = cpus
        .iter()
        .map(|&cpu| {
            let rank = core_of(cpu).map_or(0, |core| {
                let n = seen.entry(core).or_default();
                *n += 1;
                *n - 1
            });
            (rank, cpu)
        })
        .collect();
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, cpu)| cpu).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_runs_on_its_cpu() {
        let last = cores() - 1;
        let got = std::thread::spawn(move || {
            let cpu = pin_current_thread(last).expect("pinning");
            let set = rustix::thread::sched_getaffinity(None).expect("affinity");
            (set.count(), set.is_set(cpu), order().contains(&cpu))
        })
        .join()
        .unwrap();
        assert_eq!(got, (1, true, true));
    }

    #[test]
    fn hyperthread_siblings_come_after_every_core() {
        // Linux numbers a 4-core, 8-thread CPU either 0-3 then their siblings 4-7, or
        // siblings side by side (0,1 on core 0): both give one thread per core first.
        let apart = |c: usize| Some((0, (c % 4) as u32));
        assert_eq!(
            spread(&[0, 1, 2, 3, 4, 5, 6, 7], apart),
            [0, 1, 2, 3, 4, 5, 6, 7]
        );
        let paired = |c: usize| Some((0, (c / 2) as u32));
        assert_eq!(
            spread(&[0, 1, 2, 3, 4, 5, 6, 7], paired),
            [0, 2, 4, 6, 1, 3, 5, 7]
        );
        // Two packages: core ids repeat per package and are still different cores.
        let sockets = |c: usize| Some(((c / 2) as u32, 0));
        assert_eq!(spread(&[0, 1, 2, 3], sockets), [0, 2, 1, 3]);
        // Only the CPUs the process may use, and unknown topology as cores of their own.
        assert_eq!(spread(&[3, 5, 9], |_| None), [3, 5, 9]);
    }

    #[test]
    fn the_order_holds_every_allowed_cpu_once() {
        let mut o = order().to_vec();
        assert!(!o.is_empty());
        o.sort_unstable();
        o.dedup();
        assert_eq!(o.len(), order().len());
    }
}
