//! An input's bytes held in a buffer that slides along it: what [`StreamDecoder`] and
//! [`PacketReader`] read through, so that memory stays bounded whatever the input's size.
//!
//! [`StreamDecoder`]: crate::StreamDecoder
//! [`PacketReader`]: crate::PacketReader

use std::io::{self, Read};

pub(crate) struct Held<R> {
    input: R,
    pub(crate) buf: Vec<u8>,
    /// The unread bytes are `buf[pos..end]`; `base` is the input offset of `buf[0]`.
    pub(crate) pos: usize,
    pub(crate) end: usize,
    pub(crate) base: usize,
    /// The input has ended: `buf[..end]` holds its last byte.
    pub(crate) eof: bool,
}

impl<R: Read> Held<R> {
    pub(crate) fn new(input: R) -> Self {
        Held {
            input,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Input offset of the first unread byte.
    pub(crate) fn position(&self) -> usize {
        self.base + self.pos
    }

    /// Unread bytes held.
    pub(crate) fn held(&self) -> usize {
        self.end - self.pos
    }

    /// Moves the unread bytes to the front of the buffer.
    fn slide(&mut self) {
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos;
        self.end -= self.pos;
        self.pos = 0;
    }

    /// Reads until `need` unread bytes are held or the input ends, into a buffer of at least
    /// `chunk` bytes: each read takes what the input has (a pipe is not waited on for a whole
    /// chunk).
    pub(crate) fn hold(&mut self, need: usize, chunk: usize) -> io::Result<()> {
        if self.held() >= need || self.eof {
            return Ok(());
        }
        self.slide();
        let size = need.max(chunk);
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        while self.end < need {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Unless `want` unread bytes are held: reads until `2 * want` are, or the input ends.
    /// The buffer grows as the bytes arrive, not zero-filled up front: that cost a small
    /// file megabytes of page faults and memset.
    pub(crate) fn fill(&mut self, want: usize) -> io::Result<()> {
        if self.eof || self.held() >= want {
            return Ok(());
        }
        self.slide();
        self.buf.truncate(self.end);
        let more = (2 * want - self.end) as u64;
        let got = (&mut self.input).take(more).read_to_end(&mut self.buf)?;
        self.eof = (got as u64) < more;
        self.end = self.buf.len();
        Ok(())
    }
}
