//! Blocks of packets converted on many workers and handed on in input order: the reader
//! cuts blocks, the workers convert whichever block is next, and one writer thread takes the
//! results in input order, holding those that finish early.

use std::io::{self, Read};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver};
use std::sync::{Condvar, Mutex};

use crate::blocks::{Block, Blocks};
use crate::TableError;

/// How far the writer has got, so the reader stays at most a window of blocks ahead of it
/// (memory stays bounded when one block is slow), and whether the conversion has failed.
struct Progress {
    written: Mutex<usize>,
    moved: Condvar,
    failed: AtomicBool,
}

impl Progress {
    /// Waits until block `seq` may be handed out; false once the conversion has failed.
    fn admit(&self, seq: usize, window: usize) -> bool {
        let mut written = self.written.lock().expect("not poisoned");
        while seq >= *written + window && !self.failed.load(Ordering::Relaxed) {
            written = self.moved.wait(written).expect("not poisoned");
        }
        !self.failed.load(Ordering::Relaxed)
    }

    fn advance(&self, to: usize) {
        *self.written.lock().expect("not poisoned") = to;
        self.moved.notify_all();
    }

    fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
        let _guard = self.written.lock().expect("not poisoned");
        self.moved.notify_all();
    }
}

/// Hands `first` and the rest of `blocks` to `threads` workers running `convert`, and their
/// results, in input order, to `append` on a thread of its own. The first failure (a block's
/// in input order, the writer's or the reader's) fails the whole.
pub(crate) fn run_blocks<R: Read, C: Send>(
    blocks: &mut Blocks<R>,
    first: Block,
    threads: usize,
    convert: &(dyn Fn(Block) -> Result<C, TableError> + Sync),
    append: impl FnMut(C) -> Result<(), TableError> + Send,
    mut progress: impl FnMut(usize),
) -> Result<(), TableError> {
    let threads = threads.max(1);
    let window = 2 * threads;
    let state = Progress {
        written: Mutex::new(0),
        moved: Condvar::new(),
        failed: AtomicBool::new(false),
    };
    let (job_tx, job_rx) = sync_channel::<Block>(threads);
    let job_rx = Mutex::new(job_rx);
    std::thread::scope(|s| -> Result<_, TableError> {
        let (done_tx, done_rx) = channel();
        for i in 0..threads {
            let (job_rx, done_tx) = (&job_rx, done_tx.clone());
            std::thread::Builder::new()
                .name(format!("table worker {i}"))
                .spawn_scoped(s, move || loop {
                    let job = job_rx.lock().expect("not poisoned").recv();
                    let Ok(block) = job else { break };
                    let seq = block.seq;
                    // A panic would leave a hole the writer waits on for ever: it becomes
                    // this block's error instead.
                    let converted = std::panic::catch_unwind(AssertUnwindSafe(|| convert(block)))
                        .unwrap_or_else(|_| {
                            Err(TableError::Io(io::Error::other("a table worker panicked")))
                        });
                    if done_tx.send((seq, converted)).is_err() {
                        break;
                    }
                })?;
        }
        drop(done_tx);
        let state = &state;
        let writer = std::thread::Builder::new()
            .name("table writer".into())
            .spawn_scoped(s, move || {
                let r = in_order(done_rx, append, state);
                if r.is_err() {
                    state.fail();
                }
                r
            })?;
        let mut next = Some(first);
        let read = loop {
            let Some(block) = next.take() else {
                break Ok(());
            };
            if !state.admit(block.seq, window) || job_tx.send(block).is_err() {
                break Ok(());
            }
            progress(blocks.base);
            match blocks.next_block() {
                Ok(b) => next = b,
                Err(e) => break Err(TableError::Io(e)),
            }
        };
        drop(job_tx);
        if read.is_err() {
            state.fail();
        }
        let written = writer.join().unwrap_or_else(|_| {
            Err(TableError::Io(io::Error::other(
                "the table writer thread panicked",
            )))
        });
        read?;
        let appended = written?;
        if appended != blocks.seq {
            return Err(TableError::Io(io::Error::other(format!(
                "{appended} of {} blocks came back from the table workers",
                blocks.seq
            ))));
        }
        Ok(())
    })
}

/// Passes the converted blocks to `append` in input order; returns how many it passed. The
/// first failed block (in input order) fails the conversion.
fn in_order<C>(
    done: Receiver<(usize, Result<C, TableError>)>,
    mut append: impl FnMut(C) -> Result<(), TableError>,
    state: &Progress,
) -> Result<usize, TableError> {
    let mut held = std::collections::BTreeMap::new();
    let mut next = 0usize;
    for (seq, converted) in done {
        held.insert(seq, converted);
        while let Some(c) = held.remove(&next) {
            append(c?)?;
            next += 1;
            state.advance(next);
        }
    }
    Ok(next)
}
