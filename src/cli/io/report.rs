//! Standard output for the commands' reports, written in blocks.

use std::io::{self, IsTerminal, Write};

/// Standard output for a command's report (tables, JSON, the files
/// written), locked for as long as it lives: in 64 KiB blocks when it is a
/// file or a pipe (standard output alone is line-buffered, and a JSON
/// document of 200,000 images written by serde_json took millions of
/// writes), line by line on a terminal, so that its lines keep their
/// places among the messages on standard error.
///
/// Call [`Write::flush`] at the end: dropped, it writes what is left but
/// cannot report an error (a full disk, a closed pipe).
pub struct Report {
    inner: Inner,
}

enum Inner {
    Blocks(io::BufWriter<io::StdoutLock<'static>>),
    Lines(io::StdoutLock<'static>),
}

impl Report {
    /// Locks standard output for a report.
    pub fn stdout() -> Report {
        let out = io::stdout();
        let inner = if out.is_terminal() {
            Inner::Lines(out.lock())
        } else {
            Inner::Blocks(io::BufWriter::with_capacity(1 << 16, out.lock()))
        };
        Report { inner }
    }
}

impl Write for Report {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.inner {
            Inner::Blocks(w) => w.write(buf),
            Inner::Lines(w) => w.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match &mut self.inner {
            Inner::Blocks(w) => w.write_all(buf),
            Inner::Lines(w) => w.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.inner {
            Inner::Blocks(w) => w.flush(),
            Inner::Lines(w) => w.flush(),
        }
    }
}
