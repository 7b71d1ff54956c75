//! Ctrl-C (SIGINT) and SIGTERM: the handler only sets a flag, which the long-running loops
//! (publish, subscribe, demo) check, so they stop with a partial report instead of dying
//! mid-way. A second signal ends the process at once, for a loop that does not check.
//! Also the other small calls to the OS the commands make through libc.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Set once SIGINT or SIGTERM arrived.
pub static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The exit status of a command stopped by a signal: 128 + its number (130 for Ctrl-C).
pub fn exit_code() -> std::process::ExitCode {
    std::process::ExitCode::from(128 + SIGNAL.load(Ordering::Relaxed).clamp(1, 127) as u8)
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: atomics and _exit.
    if STOP.swap(true, Ordering::Relaxed) {
        // SAFETY: _exit is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(128 + sig) };
    }
    SIGNAL.store(sig, Ordering::Relaxed);
}

/// Installs the handler for SIGINT and SIGTERM.
pub fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler touches only atomics (and _exit), which is allowed in a signal
        // handler; the cast is libc's documented way to pass a handler to signal().
        unsafe {
            libc::signal(
                sig,
                on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Asks a child process to stop as Ctrl-C would, so it prints its partial report.
pub fn interrupt(child: &std::process::Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: kill() with a child's pid has no memory effects; a child already gone gives
    // ESRCH (or, reaped, cannot be signalled: the caller only signals unreaped children).
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
}

/// Gives the calling thread a lower priority (nice 10): a helper thread (the subscriber's
/// dump writer) then runs when the receiving thread leaves a core free, instead of taking
/// the core it needs to keep up. Best effort: without permission nothing changes.
pub fn lower_this_threads_priority() {
    // SAFETY: setpriority has no memory effects; on Linux, who = 0 with PRIO_PROCESS is the
    // calling thread (nice values are per thread).
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}
