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

/// Where a spool's file goes on in a new part every so many bytes, or where its writer cuts
/// it ([`Spool::cut`]): a recording split so that no file grows without end, or one file an
/// hour. Each later part begins with `header`.
pub struct Split {
    /// Bytes a part holds before the next begins (it ends after the chunk that reaches it);
    /// `u64::MAX` for parts that only [`Spool::cut`] ends.
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
    /// `chunk` begins a new part.
    starts_part: bool,
    /// A cut that waits for a free chunk: the chunk being filled ends its part.
    cut_pending: bool,
    size: SpoolSize,
    /// Chunks made so far (at most `size.chunks`).
    made: usize,
    /// Chunks to the thread, each with whether it begins a new part.
    full: Option<SyncSender<(bool, Vec<u8>)>>,
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
        let (full, chunks_in) = mpsc::sync_channel::<(bool, Vec<u8>)>(chunks);
        let (give_back, empty) = mpsc::sync_channel::<Vec<u8>>(chunks);
        let thread = std::thread::Builder::new()
            .name("spool".into())
            .spawn(move || {
                start();
                let (mut part, mut in_part, mut fresh) = (1, 0, true);
                for (starts_part, mut chunk) in chunks_in {
                    // A new part only when the current one holds something and there is
                    // something to put in the next (a chunk handed over is never empty).
                    let next = |s: &Split| (starts_part && !fresh) || in_part >= s.bytes;
                    if let Some(s) = split.as_mut().filter(|s| next(s)) {
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
                    fresh = false;
                    chunk.clear();
                    // The spool may be gone already; the chunk then goes too.
                    let _ = give_back.send(chunk);
                }
                synced(&file)
            })?;
        Ok(Spool {
            chunk: Vec::with_capacity(size.chunk),
            starts_part: false,
            cut_pending: false,
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
        // The chunk handed over begins a part if it was to; the next one if a cut waited.
        let starts =
            std::mem::replace(&mut self.starts_part, std::mem::take(&mut self.cut_pending));
        match self
            .full
            .as_ref()
            .expect("open until finished")
            .try_send((starts, chunk))
        {
            Ok(()) => Ok(true),
            // Its capacity is the number of chunks, so only a dead thread refuses one.
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => Err(self.failed()),
        }
    }

    /// What is written from now on goes to a new part (with a [`Split`]; without one, it
    /// goes on in the same file). Where every chunk waits for the disk the cut comes at the
    /// next chunk handed over, so it may land a few writes late, never in a write.
    pub fn cut(&mut self) -> io::Result<()> {
        if self.chunk.is_empty() {
            self.starts_part = true;
            return Ok(());
        }
        self.cut_pending = true;
        self.hand_over().map(|_| ())
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
                if full.send((self.starts_part, chunk)).is_err() {
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
        // A cut that waited: now, if a chunk is free (else into this one, cut later).
        if self.cut_pending && !self.hand_over()? && self.chunk.len() + buf.len() <= self.size.chunk
        {
            self.chunk.extend_from_slice(buf);
            return Ok(buf.len());
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

    #[test]
    fn a_cut_begins_a_part_at_the_next_write_and_never_an_empty_one() {
        let path = scratch("cut");
        // Chunks enough never to wait for the disk: a cut then lands where it is asked.
        let size = SpoolSize {
            chunk: 100,
            chunks: 64,
        };
        let base = path.clone();
        let part = move |n: u32| base.with_extension(format!("{n}"));
        let split = Split {
            bytes: u64::MAX,
            header: b"HEAD".to_vec(),
            path: Box::new(part.clone()),
            opened: Box::new(|_: &Path| {}),
        };
        let mut s = Spool::create(&path, size, Some(split), || {}).unwrap();
        // Parts of 3, 25 (over chunks), 1 and 2 records; cuts twice in a row, and before the
        // first write, make no empty part.
        s.cut().unwrap();
        let mut want: Vec<Vec<u8>> = Vec::new();
        let mut n = 0u8;
        for (k, records) in [3, 25, 1, 2].into_iter().enumerate() {
            if k > 0 {
                s.cut().unwrap();
            }
            if k == 2 {
                s.cut().unwrap();
            }
            let mut bytes = if k > 0 { b"HEAD".to_vec() } else { Vec::new() };
            for _ in 0..records {
                write_waiting(&mut s, &[n; 10]);
                bytes.extend_from_slice(&[n; 10]);
                n += 1;
            }
            want.push(bytes);
        }
        s.cut().unwrap();
        s.finish().unwrap();
        let parts: Vec<PathBuf> = std::iter::once(path.clone())
            .chain((2..=4).map(&part))
            .collect();
        for (p, want) in parts.iter().zip(&want) {
            assert_eq!(&std::fs::read(p).unwrap(), want, "{}", p.display());
            std::fs::remove_file(p).ok();
        }
        assert!(!part(5).exists());
    }
}
