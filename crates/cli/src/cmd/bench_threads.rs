//! `bench decode --threads N`: the file's packets decoded by N threads, each pinned to a core
//! of its own with its own decoder, the threads living for all passes and starting each one
//! together; the pass timed from its start to the last thread's end.
//!
//! By default the work is cut into jobs (runs of packets of about [`JOB_BYTES`], or whole
//! channels with `--by-channel`) that the threads take from a shared counter as they finish
//! the last, so a core that runs slower (a busy neighbour on a shared host, a hyperthread
//! sibling at work) takes fewer jobs instead of holding back the pass: measured on a 16-vCPU
//! VM whose CPUs ran a decoder at anything from 357 to 831 ns per message, equal shares made
//! every pass wait for the slowest CPU. `--static` keeps equal shares, one per thread, as a
//! feed handler's fixed channel-to-thread split would.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use anyhow::{bail, Result};

use super::bench::Work;

use crate::out::outln;

/// About this many bytes of packets per job: tens to hundreds of microseconds of decoding, so
/// taking a job (one shared cache line) costs nothing beside it, and the threads' last jobs
/// end within that much of each other.
pub const JOB_BYTES: usize = 64 << 10;

/// What the threads decode: the jobs, and how many threads share them.
pub struct Jobs<'a> {
    pub list: Vec<Vec<&'a [u8]>>,
    pub threads: usize,
    /// Threads take jobs as they finish (else thread i decodes job i, and only it).
    pub dynamic: bool,
}

impl<'a> Jobs<'a> {
    /// One job of all the packets, for one thread.
    pub fn one(packets: &[&'a [u8]]) -> Self {
        Jobs {
            list: vec![packets.to_vec()],
            threads: 1,
            dynamic: false,
        }
    }

    /// The packets cut for `threads` threads: runs of about [`JOB_BYTES`] (at least eight
    /// per thread on a small file) taken as the threads finish, or (`fixed`) one equal run
    /// per thread.
    pub fn runs(packets: &[&'a [u8]], threads: usize, fixed: bool) -> Self {
        if threads <= 1 {
            return Jobs::one(packets);
        }
        if fixed {
            let list: Vec<_> = shares(packets, threads)
                .into_iter()
                .map(<[_]>::to_vec)
                .collect();
            let threads = list.len();
            return Jobs {
                list,
                threads,
                dynamic: false,
            };
        }
        let total: usize = packets.iter().map(|p| p.len()).sum();
        let job_bytes = JOB_BYTES.min(total / (8 * threads)).max(1);
        let mut list = Vec::new();
        let mut job: Vec<&[u8]> = Vec::new();
        let mut bytes = 0;
        for &p in packets {
            job.push(p);
            bytes += p.len();
            if bytes >= job_bytes {
                list.push(std::mem::take(&mut job));
                bytes = 0;
            }
        }
        if !job.is_empty() {
            list.push(job);
        }
        Jobs {
            threads: threads.min(list.len()),
            list,
            dynamic: true,
        }
    }

    /// The packets grouped by channel (the 2 bytes after a 4-byte sequence number), the
    /// busiest channel first: taken as the threads finish, or (`fixed`) dealt out before,
    /// each to the thread with the fewest packets so far. Also the number of channels.
    pub fn channels(packets: &[&'a [u8]], threads: usize, fixed: bool) -> Result<(Self, usize)> {
        let mut channels: BTreeMap<u16, Vec<&'a [u8]>> = Default::default();
        for (i, p) in packets.iter().enumerate() {
            let Some(c) = p.get(4..6) else {
                bail!(
                    "packet {i} has {} bytes: too short for a channel number (--by-channel \
                     reads it after a 4-byte sequence number)",
                    p.len()
                );
            };
            channels
                .entry(u16::from_le_bytes([c[0], c[1]]))
                .or_default()
                .push(p);
        }
        let n = channels.len();
        let mut channels: Vec<Vec<&[u8]>> = channels.into_values().collect();
        channels.sort_by_key(|c| std::cmp::Reverse(c.len()));
        let threads = threads.min(n).max(1);
        if !fixed {
            let jobs = Jobs {
                list: channels,
                threads,
                dynamic: threads > 1,
            };
            return Ok((jobs, n));
        }
        let packets: Vec<u64> = channels.iter().map(|c| c.len() as u64).collect();
        let mut list: Vec<Vec<&[u8]>> = vec![Vec::new(); threads];
        for (c, t) in channels
            .into_iter()
            .zip(crate::deal::least_loaded(&packets, threads))
        {
            list[t].extend(c);
        }
        let jobs = Jobs {
            list,
            threads,
            dynamic: false,
        };
        Ok((jobs, n))
    }

    /// The packets of the jobs, job by job.
    pub fn sizes(&self) -> String {
        let sizes: Vec<String> = self.list.iter().map(|j| j.len().to_string()).collect();
        sizes.join(", ")
    }
}

/// `items` in `n` equal runs (the last shorter).
pub fn shares<T>(items: &[T], n: usize) -> Vec<&[T]> {
    let per = items.len().div_ceil(n).max(1);
    items.chunks(per).collect()
}

/// One decoding thread's part in a threaded run.
struct Busy {
    /// Messages decoded over all passes.
    messages: u64,
    /// Its fastest pass, seconds.
    fastest: f64,
    /// Jobs taken over all passes.
    jobs: usize,
    /// The CPU it was pinned to.
    cpu: Option<usize>,
}

/// Times `passes` passes of the jobs on their threads; returns each pass's wall time.
pub fn time_decode(
    w: &Work,
    jobs: &Jobs,
    passes: usize,
    expect: u64,
    generated: bool,
    pin: bool,
) -> Result<Vec<f64>> {
    if jobs.threads == 1 {
        let mut dec = w.timed(generated);
        return (0..passes)
            .map(|_| {
                let t = Instant::now();
                for job in &jobs.list {
                    w.run(&mut dec, job)?;
                }
                Ok(t.elapsed().as_secs_f64())
            })
            .collect();
    }
    let n = jobs.threads;
    let (start, end) = (Barrier::new(n + 1), Barrier::new(n + 1));
    let next = AtomicUsize::new(0);
    let (threads, times) = std::thread::scope(|s| -> Result<(Vec<Busy>, Vec<f64>)> {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (start, end, next) = (&start, &end, &next);
                s.spawn(move || -> Result<Busy> {
                    let cpu = if pin {
                        fastfeed_net::affinity::pin_current_thread(i)
                            .map_err(|e| eprintln!("warning: thread {i} not pinned to a core: {e}"))
                            .ok()
                    } else {
                        None
                    };
                    // Each thread makes its own decoder: decoders side by side in one
                    // allocation would share cache lines, and their writes would bounce
                    // those lines between the cores.
                    let mut dec = w.timed(generated);
                    let mut busy = Busy {
                        messages: 0,
                        fastest: f64::INFINITY,
                        jobs: 0,
                        cpu,
                    };
                    let mut failed = None;
                    for _ in 0..passes {
                        start.wait();
                        let t = Instant::now();
                        // Without the counter, thread i decodes job i once.
                        let mut mine = Some(i);
                        // An error ends no pass early: the barriers need every thread.
                        while failed.is_none() {
                            let j = if jobs.dynamic {
                                next.fetch_add(1, Ordering::Relaxed)
                            } else {
                                match mine.take() {
                                    Some(j) => j,
                                    None => break,
                                }
                            };
                            let Some(job) = jobs.list.get(j) else { break };
                            match w.run(&mut dec, job) {
                                Ok(m) => busy.messages += m,
                                Err(e) => failed = Some(e),
                            }
                            busy.jobs += 1;
                        }
                        busy.fastest = busy.fastest.min(t.elapsed().as_secs_f64());
                        end.wait();
                    }
                    match failed {
                        Some(e) => Err(e),
                        None => Ok(busy),
                    }
                })
            })
            .collect();
        let times = (0..passes)
            .map(|_| {
                // Every thread is past the last pass's end barrier: none is taking jobs.
                next.store(0, Ordering::Relaxed);
                let t = Instant::now();
                start.wait();
                end.wait();
                t.elapsed().as_secs_f64()
            })
            .collect();
        let threads = handles
            .into_iter()
            .map(|h| h.join().expect("decode thread"))
            .collect::<Result<_>>()?;
        Ok((threads, times))
    })?;
    let total: u64 = threads.iter().map(|t| t.messages).sum();
    if total != expect * passes as u64 {
        bail!(
            "decoded {total} messages in {passes} passes, expected {expect} each: are the \
             packets independent?"
        );
    }
    report(&threads, &times, passes)?;
    Ok(times)
}

/// Where a threaded pass's wall time goes: the threads' own fastest passes beside the
/// fastest wall time, and how the jobs fell. Threads all slower than one thread alone
/// point at a shared resource (memory, a core's sibling); a wall well above the slowest
/// thread at the passes' start and end; uneven jobs at cores of uneven speed.
fn report(threads: &[Busy], times: &[f64], passes: usize) -> Result<()> {
    let ms: Vec<f64> = threads.iter().map(|t| t.fastest * 1e3).collect();
    let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
    let (slow, slowest) =
        ms.iter()
            .copied()
            .enumerate()
            .fold((0, 0.0), |a, (i, v)| if v > a.1 { (i, v) } else { a });
    let fastest = ms.iter().copied().fold(f64::INFINITY, f64::min);
    let wall = times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3;
    let cpu = |t: &Busy| t.cpu.map_or(String::new(), |c| format!(" on CPU {c}"));
    outln!(
        "threads' own fastest pass, ms: fastest {fastest:.2}  mean {mean:.2}  slowest \
         {slowest:.2} (thread {slow}{}); fastest wall {wall:.2}",
        cpu(&threads[slow])
    );
    let per_pass = |t: &Busy| t.jobs as f64 / passes.max(1) as f64;
    if let (Some(few), Some(most)) = (
        threads.iter().min_by_key(|t| t.jobs),
        threads.iter().max_by_key(|t| t.jobs),
    ) {
        outln!(
            "jobs per pass: fewest {:.1}{}  most {:.1}{}",
            per_pass(few),
            cpu(few),
            per_pass(most),
            cpu(most)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cut_the_packets_in_order_into_jobs_of_about_job_bytes() {
        let packet = vec![0u8; 1000];
        let packets: Vec<&[u8]> = vec![&packet[..]; 4000];
        let jobs = Jobs::runs(&packets, 4, false);
        assert!(jobs.dynamic);
        assert_eq!(jobs.threads, 4);
        // 66 packets reach 64 KiB: sixty full jobs and the rest.
        let sizes: Vec<usize> = jobs.list.iter().map(Vec::len).collect();
        assert_eq!(sizes.len(), 61);
        assert!(
            sizes[..60].iter().all(|&n| n == 66) && sizes[60] == 40,
            "{sizes:?}"
        );
        // A small file: about eight jobs per thread (7 packets reach 200,000 / 32 bytes).
        let small = Jobs::runs(&packets[..200], 4, false);
        assert_eq!(small.list.len(), 29);
        assert_eq!(small.list.iter().map(Vec::len).sum::<usize>(), 200);
        let fixed = Jobs::runs(&packets[..200], 4, true);
        assert!(!fixed.dynamic);
        let sizes: Vec<usize> = fixed.list.iter().map(Vec::len).collect();
        assert_eq!(sizes, [50, 50, 50, 50]);
        // Never more threads than jobs, and one thread gets everything as one job.
        assert_eq!(Jobs::runs(&packets[..3], 8, false).threads, 3);
        assert_eq!(Jobs::runs(&packets, 1, false).list.len(), 1);
        assert_eq!(Jobs::one(&packets).list[0].len(), 4000);
    }

    #[test]
    fn channels_are_whole_jobs_the_busiest_first() {
        let p = |seq: u8, ch: u8| vec![seq, 0, 0, 0, ch, 0, 0xC0];
        let raw: Vec<Vec<u8>> = vec![p(1, 2), p(1, 1), p(2, 1), p(3, 1), p(2, 2), p(1, 3)];
        let packets: Vec<&[u8]> = raw.iter().map(Vec::as_slice).collect();
        let (jobs, n) = Jobs::channels(&packets, 2, false).unwrap();
        assert_eq!((n, jobs.threads, jobs.dynamic), (3, 2, true));
        assert_eq!(jobs.sizes(), "3, 2, 1");
        // Channel 1's packets stay in their order.
        assert_eq!(jobs.list[0], [&raw[1][..], &raw[2][..], &raw[3][..]]);
        let (fixed, _) = Jobs::channels(&packets, 2, true).unwrap();
        assert_eq!(fixed.sizes(), "3, 3");
        assert!(Jobs::channels(&[&[1u8, 2][..]], 2, false).is_err());
    }
}
