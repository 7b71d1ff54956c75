//! Reports to standard output that end quietly when the reader has gone: `fastfeed bench ...
//! | head` must not panic, as `println!` does on a closed pipe. [`outln!`] returns the write's
//! error to the command, and `main` takes a broken pipe as the end of the output.

use std::io::{self, Write};

/// `println!` that returns its write error (`?` in a function returning `anyhow::Result`).
macro_rules! outln {
    () => {
        $crate::out::line(format_args!(""))?
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))?
    };
}
pub(crate) use outln;

/// `print!` that returns its write error, as [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::text(format_args!($($arg)*))?
    };
}
pub(crate) use out;

/// Writes one line to standard output.
pub fn line(args: std::fmt::Arguments) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_fmt(args)?;
    out.write_all(b"\n")
}

/// Writes to standard output.
pub fn text(args: std::fmt::Arguments) -> io::Result<()> {
    io::stdout().lock().write_fmt(args)
}

/// Whether `e` is, or was caused by, a write to a pipe whose reader has gone.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}
