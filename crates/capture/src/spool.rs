//! A file written by a thread of its own: the writer fills a chunk in memory and hands it
//! over whole, so a slow disk (a page-cache flush, a full device) never stalls the thread
//! that receives the feed. The chunks in flight are bounded: when the disk is that far
//! behind, a write is refused ([`io::ErrorKind::WouldBlock`]) and the caller counts what it
//! could not keep, rather than waiting or growing without bound.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::thread::JoinHandle;

/// How a spool hands its bytes to its thread.
#[derive(Debug, Clone, Copy)]
pub struct SpoolSize {
    /// Bytes a chunk holds before it is handed over.
    pub chunk: usize,
    /// Chunks at most, the one being filled included: the memory bound, and how far the
    /// disk may fall behind.
    pub chunks: usize,
}

impl SpoolSize {
    /// `bytes` in all, in 16 chunks (of at least 4 KiB).
    pub fn total(bytes: usize) -> SpoolSize {
        SpoolSize {
            chunk: (bytes / 16).max(4096),
            chunks: 16,
        }
    }
}

impl Default for SpoolSize {
    /// 16 chunks of 1 MiB: a second of a busy feed's datagrams can wait for the disk.
    fn default() -> Self {
        SpoolSize {
            chunk: 1 << 20,
            chunks: 16,
        }
    }
}

/// Where a spool's file goes on in a new part every so many bytes (a recording split so that
/// no file grows without end): each later part begins with `header`.
pub struct Split {
    /// Bytes a part holds before the next begins (it ends after the chunk that reaches it).
    pub bytes: u64,
    /// What each later part begins with (a pcap's file header).
    pub header: Vec<u8>,
    /// Part `n`'s path (the first is the spool's own path; `n` counts from 2).
    pub path: Box<dyn Fn(u32) -> PathBuf + Send>,
    /// Told of each new part once it is open, on the spool's thread.
    pub opened: Box<dyn FnMut(&Path) + Send>,
}

/// Bytes for a file, written by a thread of its own. Each `write` takes its whole buffer or
/// nothing, so a record written in one call is never cut.
pub struct Spool {
    chunk: Vec<u8>,
    size: SpoolSize,
    /// Chunks made so far (at most `size.chunks`).
    made: usize,
    full: Option<SyncSender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Spool {
    /// Creates `path` and the thread that writes to it (going on in parts, with `split`);
    /// `start` runs first on that thread (to place it on a CPU, say).
    pub fn create(
        path: &Path,
        size: SpoolSize,
        mut split: Option<Split>,
        start: impl FnOnce() + Send + 'static,
    ) -> io::Result<Spool> {
        let mut file = File::create(path)?;
        let chunks = size.chunks.max(2);
        let (full, chunks_in) = mpsc::sync_channel::<Vec<u8>>(chunks);
        let (give_back, empty) = mpsc::sync_channel::<Vec<u8>>(chunks);
        let thread = std::thread::Builder::new()
            .name("spool".into())
            .spawn(move || {
                start();
                let (mut part, mut in_part) = (1, 0);
                for mut chunk in chunks_in {
                    // A new part only when there is something to put in it.
                    if let Some(s) = split.as_mut().filter(|s| in_part >= s.bytes) {
                        synced(&file)?;
                        part += 1;
                        let path = (s.path)(part);
                        file = File::create(&path)?;
                        file.write_all(&s.header)?;
                        in_part = s.header.len() as u64;
                        (s.opened)(&path);
                    }
                    file.write_all(&chunk)?;
                    in_part += chunk.len() as u64;
                    chunk.clear();
                    // The spool may be gone already; the chunk then goes too.
                    let _ = give_back.send(chunk);
                }
                synced(&file)
            })?;
        Ok(Spool {
            chunk: Vec::with_capacity(size.chunk),
            size: SpoolSize { chunks, ..size },
            made: 1,
            full: Some(full),
            empty,
            thread: Some(thread),
        })
    }

    /// Hands the chunk over if a fresh one is at hand; false if the disk holds every chunk.
    fn hand_over(&mut self) -> io::Result<bool> {
        let next = match self.empty.try_recv() {
            Ok(c) => c,
            Err(TryRecvError::Empty) if self.made < self.size.chunks => {
                self.made += 1;
                Vec::with_capacity(self.size.chunk)
            }
            Err(TryRecvError::Empty) => return Ok(false),
            Err(TryRecvError::Disconnected) => return Err(self.failed()),
        };
        let chunk = std::mem::replace(&mut self.chunk, next);
        match self
            .full
            .as_ref()
            .expect("open until finished")
            .try_send(chunk)
        {
            Ok(()) => Ok(true),
            // Its capacity is the number of chunks, so only a dead thread refuses one.
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(self.failed()),
        }
    }

    /// The writing thread has ended early: its error.
    fn failed(&mut self) -> io::Error {
        self.full = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(Err(e))) => e,
            _ => io::Error::other("the spool's thread ended"),
        }
    }

    /// Hands over what is left, waits for the thread to write it and sync the file.
    pub fn finish(mut self) -> io::Result<()> {
        if !self.chunk.is_empty() {
            let chunk = std::mem::take(&mut self.chunk);
            if let Some(full) = &self.full {
                // Blocking: the end of a recording may wait for its disk.
                if full.send(chunk).is_err() {
                    return Err(self.failed());
                }
            }
        }
        self.full = None;
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the spool's thread panicked")),
            None => Err(io::Error::other("the spool's thread ended")),
        }
    }
}

/// The file's data on disk; a pipe or a terminal has nothing to sync.
fn synced(file: &File) -> io::Result<()> {
    match file.sync_data() {
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(()),
        r => r,
    }
}

impl Write for Spool {
    /// All of `buf`, or nothing: [`io::ErrorKind::WouldBlock`] when every chunk waits for
    /// the disk; the thread's own error once it has failed.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.full.is_none() {
            return Err(io::Error::other("the spool has failed"));
        }
        if self.chunk.len() + buf.len() > self.size.chunk
            && !self.chunk.is_empty()
            && !self.hand_over()?
        {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.chunk.extend_from_slice(buf);
        Ok(buf.len())
    }

    /// Nothing to do: the thread writes each chunk as it comes; [`Spool::finish`] ends it.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        // Unfinished: the thread writes what it has and ends.
        self.full = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rec` written whole, waiting while the disk is behind.
    fn write_waiting(s: &mut Spool, rec: &[u8]) {
        loop {
            match s.write(rec) {
                Ok(n) => break assert_eq!(n, rec.len()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("fastfeed-spool-{}-{name}", std::process::id()))
    }

    #[test]
    fn every_write_reaches_the_file_in_order() {
        let path = scratch("order");
        let size = SpoolSize {
            chunk: 100,
            chunks: 3,
        };
        let mut s = Spool::create(&path, size, None, || {}).unwrap();
        let mut want = Vec::new();
        for i in 0..2_000u32 {
            let rec = i.to_le_bytes().repeat(1 + i as usize % 7);
            // A disk behind is waited for here: every record must land.
            write_waiting(&mut s, &rec);
            want.extend_from_slice(&rec);
        }
        s.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_disk_behind_refuses_whole_writes_and_what_was_taken_lands() {
        let path = scratch("behind");
        let (go, wait) = mpsc::channel::<()>();
        let size = SpoolSize {
            chunk: 64,
            chunks: 2,
        };
        // The thread waits before writing anything: the disk as slow as can be.
        let mut s = Spool::create(&path, size, None, move || wait.recv().unwrap()).unwrap();
        let (mut taken, mut refused) = (Vec::new(), 0);
        for i in 0..40u8 {
            let rec = [i; 20];
            match s.write(&rec) {
                Ok(20) => taken.extend_from_slice(&rec),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        // One chunk of three records handed over, another filled; then nothing: bounded.
        assert_eq!(
            taken.len(),
            20 * 6,
            "taken {} refused {refused}",
            taken.len()
        );
        assert_eq!(refused, 34);
        go.send(()).unwrap();
        s.finish().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), taken);
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_failing_disk_is_an_error_not_a_hang() {
        if !Path::new("/dev/full").exists() {
            return;
        }
        let size = SpoolSize {
            chunk: 16,
            chunks: 2,
        };
        let mut s = Spool::create(Path::new("/dev/full"), size, None, || {}).unwrap();
        let mut error = None;
        for _ in 0..10_000 {
            if let Err(e) = s.write(&[1u8; 10]) {
                if e.kind() != io::ErrorKind::WouldBlock {
                    error = Some(e);
                    break;
                }
                std::thread::yield_now();
            }
        }
        let e = error.expect("the full device's error comes back to the writer");
        assert_eq!(e.raw_os_error(), Some(28), "{e}"); // ENOSPC
        assert!(s.finish().is_err());
    }

    #[test]
    fn a_split_spool_goes_on_in_parts_each_begun_with_the_header() {
        let path = scratch("split");
        let size = SpoolSize {
            chunk: 100,
            chunks: 4,
        };
        let base = path.clone();
        let part = move |n: u32| base.with_extension(format!("{n}"));
        let opened = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = opened.clone();
        let split = Split {
            bytes: 250,
            header: b"HEAD".to_vec(),
            path: Box::new(part.clone()),
            opened: Box::new(move |p: &Path| seen.lock().unwrap().push(p.to_path_buf())),
        };
        let mut s = Spool::create(&path, size, Some(split), || {}).unwrap();
        let mut want = Vec::new();
        for i in 0..100u8 {
            let rec = [i; 10];
            write_waiting(&mut s, &rec);
            want.extend_from_slice(&rec);
        }
        s.finish().unwrap();
        // 1,000 bytes in chunks of 100: a part ends after the chunk that passes 250 bytes
        // (the header counted): three chunks, then 4 + 300, then 4 + 300, then one left.
        let parts: Vec<PathBuf> = std::iter::once(path.clone())
            .chain((2..=4).map(&part))
            .collect();
        assert_eq!(*opened.lock().unwrap(), parts[1..]);
        let mut got = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let bytes = std::fs::read(p).unwrap();
            if i > 0 {
                assert_eq!(&bytes[..4], b"HEAD");
            }
            got.extend_from_slice(if i > 0 { &bytes[4..] } else { &bytes });
            std::fs::remove_file(p).ok();
        }
        assert_eq!(got, want);
        assert!(!part(5).exists());
    }
}
