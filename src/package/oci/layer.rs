//! A layer's blob as a stream: its method by its media type
//! ([`method`]: plain, gzip or zstd), read and decompressed on a thread of
//! its own with the blob's size and SHA-256 and the tar's (the diff_id)
//! counted on the way ([`stream`]), and a tar compressed again with the
//! method's level ([`pack`]: gzip at 6, zstd at 3, as the tools that
//! write layers do).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use sha2::{Digest as _, Sha256};

use super::{Desc, hex};
use crate::package::compression::encode::Encoder;
use crate::package::compression::gzip;

/// The gzip level a layer is written at: Go's `compress/gzip` default,
/// which Docker, containerd, BuildKit and umoci write layers with.
pub(crate) const GZIP_LEVEL: u32 = 6;

/// The zstd level a layer is written at: zstd's default, which
/// containerd, BuildKit and podman write `+zstd` layers with.
pub(crate) const ZSTD_LEVEL: i32 = 3;

/// How a layer's tar is compressed, by its media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Not compressed.
    Plain,
    /// gzip.
    Gzip,
    /// zstd.
    Zstd,
}

/// The method of a layer of media type `mt`; `None` when it is not a
/// layer this rewrite reads.
pub(crate) fn method(mt: &str) -> Option<Method> {
    let base = [
        "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.oci.image.layer.nondistributable.v1.tar",
    ];
    for b in base {
        if let Some(rest) = mt.strip_prefix(b) {
            return match rest {
                "" => Some(Method::Plain),
                "+gzip" => Some(Method::Gzip),
                "+zstd" => Some(Method::Zstd),
                _ => None,
            };
        }
    }
    match mt {
        "application/vnd.docker.image.rootfs.diff.tar" => Some(Method::Plain),
        "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => Some(Method::Gzip),
        _ => None,
    }
}

/// How the layer `bytes` (a `docker save` archive's member, which has no
/// media type) is compressed, told from its first bytes; `None` when it
/// is no tar. An empty layer's zeros are a plain tar.
pub(crate) fn method_of_bytes(bytes: &[u8]) -> Option<Method> {
    use crate::package::{Compression, Kind};
    match crate::package::detect(bytes) {
        Some(Kind::Tar(Compression::None)) => Some(Method::Plain),
        Some(Kind::Tar(Compression::Gzip) | Kind::Compressed(Compression::Gzip)) => {
            Some(Method::Gzip)
        }
        Some(Kind::Tar(Compression::Zstd) | Kind::Compressed(Compression::Zstd)) => {
            Some(Method::Zstd)
        }
        _ if bytes.iter().all(|&b| b == 0) => Some(Method::Plain),
        _ => None,
    }
}

/// Whether a layer of media type `mt` may be left out of a layout (it is
/// fetched from elsewhere).
pub(crate) fn is_foreign(mt: &str) -> bool {
    mt.contains("nondistributable") || mt.contains(".foreign.")
}

/// The first annotation of `d` that describes byte offsets inside its
/// blob (an eStargz or zstd:chunked table of contents), which a rewrite
/// would make false.
pub(crate) fn offsets_annotation(d: &Desc) -> Option<&str> {
    let prefixes = [
        "containerd.io/snapshot/stargz/",
        "io.containers.estargz.",
        "io.github.containers.zstd-chunked.",
    ];
    d.annotations
        .keys()
        .find(|k| prefixes.iter().any(|p| k.starts_with(p)))
        .map(String::as_str)
}

/// A SHA-256 and a count of what passed through.
#[derive(Default)]
pub(crate) struct Tally {
    /// The SHA-256 so far.
    pub(crate) sha: Sha256,
    /// The bytes so far.
    pub(crate) n: u64,
}

impl Tally {
    /// The SHA-256 as a digest (`sha256:…`).
    pub(crate) fn digest(self) -> String {
        format!("sha256:{}", hex(&self.sha.finalize()))
    }
}

/// A reader that tallies what it gives.
pub(crate) struct Tap<'t, R> {
    /// What is read.
    pub(crate) inner: R,
    /// What it gave.
    pub(crate) tally: &'t mut Tally,
}

impl<R: Read> Read for Tap<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tally.sha.update(&buf[..n]);
        self.tally.n += n as u64;
        Ok(n)
    }
}

/// A writer that tallies what it takes.
pub(crate) struct Sink<'t, W> {
    /// Where it goes.
    pub(crate) inner: W,
    /// What it took.
    pub(crate) tally: &'t mut Tally,
}

impl<W: Write> Write for Sink<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.tally.sha.update(&buf[..n]);
        self.tally.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Bytes of the decompressed layer handed from the reading thread to the
/// walk at a time.
const CHUNK: usize = 1 << 20;

/// Chunks on their way to the walk at most.
const DEPTH: usize = 4;

/// A chunk of the decompressed layer, or the error that ended it.
type Chunk = io::Result<Vec<u8>>;

/// What the reading thread found.
pub(crate) struct Decoded {
    /// What was read of the blob.
    pub(crate) packed: Tally,
    /// Whether its decoder could start.
    pub(crate) opened: io::Result<()>,
    /// Reading what follows the compressed stream (or what the walk left
    /// of it) to the end of the blob.
    pub(crate) rest: io::Result<u64>,
}

impl Decoded {
    /// What is wrong with the blob read against its descriptor `d`: its
    /// size or its digest, said as a refusal says it.
    pub(crate) fn wrong(&self, d: &Desc) -> Option<String> {
        if self.packed.n != d.size {
            return Some(format!(
                "'size' says {}, the blob is {} bytes",
                d.size, self.packed.n
            ));
        }
        let sha = format!("sha256:{}", hex(&self.packed.sha.clone().finalize()));
        (sha != d.digest)
            .then(|| format!("'digest' says {}, the blob's SHA-256 is {sha}", d.digest))
    }
}

/// Reads the blob `src`, compressed with `m`, and hands its tar to
/// `walk` as it streams: what the reading thread found (`Err` when it
/// failed), what `walk` gave, and the tally of the tar it read (its
/// diff_id).
///
/// Two threads share the work: one reads the blob, hashes it and
/// decompresses it, handing the tar on in chunks of [`CHUNK`] bytes,
/// [`DEPTH`] at most in flight; the caller's hashes the tar and walks
/// it. Once `walk` returns, the chunks are dropped: a reader still at
/// work stops, and reads the blob to its end (which counts toward its
/// digest).
pub(crate) fn stream<S: Read + Send, T>(
    src: S,
    m: Method,
    walk: impl FnOnce(&mut dyn Read) -> T,
) -> (Result<Decoded, ()>, T, Tally) {
    let mut old = Tally::default();
    let (to_walk, chunks) = sync_channel(DEPTH);
    let (back, spent) = channel();
    let (decoded, walked) = std::thread::scope(|s| {
        let reader = s.spawn(move || decode(src, m, &to_walk, &spent));
        let mut input = Chunks {
            from: chunks,
            back,
            now: Vec::new(),
            at: 0,
            tally: &mut old,
        };
        let walked = walk(&mut input);
        drop(input);
        (reader.join().map_err(|_| ()), walked)
    });
    (decoded, walked, old)
}

/// Reads the blob `src`, decompressed with `m`, into `to` a chunk at a
/// time (reusing the buffers `spent` gives back) until its end, an error
/// (sent on) or the walk's hanging up; then reads the blob to its end,
/// which counts toward its digest too.
fn decode<S: Read>(
    src: S,
    m: Method,
    to: &SyncSender<Chunk>,
    spent: &Receiver<Vec<u8>>,
) -> Decoded {
    let mut d = Decoded {
        packed: Tally::default(),
        opened: Ok(()),
        rest: Ok(0),
    };
    let tap = Tap {
        inner: src,
        tally: &mut d.packed,
    };
    let mut buffered = BufReader::with_capacity(1 << 20, tap);
    d.opened = {
        let decoder: io::Result<Box<dyn Read + '_>> = match m {
            Method::Plain => Ok(Box::new(&mut buffered)),
            Method::Gzip => Ok(Box::new(flate2::bufread::MultiGzDecoder::new(
                &mut buffered,
            ))),
            Method::Zstd => zstd::stream::read::Decoder::with_buffer(&mut buffered)
                .map(|z| Box::new(z) as Box<dyn Read + '_>),
        };
        decoder.map(|mut z| pump(&mut z, to, spent))
    };
    d.rest = io::copy(&mut buffered, &mut io::sink());
    drop(buffered);
    d
}

/// Sends what `z` gives to `to` a chunk at a time (in the buffers
/// `spent` gives back, or new ones) until its end, an error (sent on) or
/// the walk's hanging up.
fn pump(z: &mut dyn Read, to: &SyncSender<Chunk>, spent: &Receiver<Vec<u8>>) {
    loop {
        let mut buf = spent.try_recv().unwrap_or_default();
        buf.resize(CHUNK, 0);
        let n = match fill(z, &mut buf) {
            Ok(n) => n,
            Err(e) => {
                let _ = to.send(Err(e));
                return;
            }
        };
        buf.truncate(n);
        if n == 0 || to.send(Ok(buf)).is_err() || n < CHUNK {
            return;
        }
    }
}

/// Reads into `buf` until it is full or `r` ends: the bytes read.
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The decompressed layer as the walk reads it: the chunks the reading
/// thread sends, each hashed as it comes (the layer's diff_id) and its
/// buffer given back once read.
struct Chunks<'t> {
    from: Receiver<Chunk>,
    back: Sender<Vec<u8>>,
    now: Vec<u8>,
    at: usize,
    tally: &'t mut Tally,
}

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.now.len() {
            let Ok(next) = self.from.recv() else {
                return Ok(0);
            };
            let next = next?;
            self.tally.sha.update(&next);
            self.tally.n += next.len() as u64;
            let used = std::mem::replace(&mut self.now, next);
            self.at = 0;
            // The reader may have stopped: the buffer is then dropped.
            let _ = self.back.send(used);
        }
        let k = buf.len().min(self.now.len() - self.at);
        buf[..k].copy_from_slice(&self.now[self.at..self.at + k]);
        self.at += k;
        Ok(k)
    }
}

/// Compresses the tar `tar` with `m` into `out`: the blob's SHA-256 (hex)
/// and size.
pub(crate) fn pack(
    tar: &mut File,
    m: Method,
    out: &File,
    threads: u32,
) -> io::Result<(String, u64)> {
    let mut tally = Tally::default();
    let sink = Sink {
        inner: BufWriter::with_capacity(1 << 20, out),
        tally: &mut tally,
    };
    let mut input = BufReader::with_capacity(1 << 20, tar);
    let mut sink = match m {
        Method::Plain => {
            let mut s = sink;
            io::copy(&mut input, &mut s)?;
            s
        }
        Method::Gzip => {
            let mut s = sink;
            gzip::compress(&mut input, &mut s, GZIP_LEVEL, threads)?;
            s
        }
        Method::Zstd => {
            let mut e = Encoder::zstd(sink, ZSTD_LEVEL, threads.max(1))?;
            io::copy(&mut input, &mut e)?;
            e.finish()?
        }
    };
    sink.flush()?;
    drop(sink);
    Ok((hex(&tally.sha.finalize()), tally.n))
}
