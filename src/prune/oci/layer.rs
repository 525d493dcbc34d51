//! One layer of an image rewritten as it streams: its blob read through
//! the decoder its media type names (its size and SHA-256 checked on the
//! way), its tar walked entry by entry ([`Walk`]) into an uncompressed
//! scratch file, and, when an entry changed, that tar compressed again
//! with the layer's own method into a new blob.
//!
//! An entry is rewritten only when the container sees it ([`Shadow`]:
//! the layers above read first): a library pruned as if named alone, a
//! per-GPU file whose GPU the rules drop left out. An entry that a layer
//! above hides is copied as it is, unless a layer above had the same
//! path removed, which would bring it to light: then it goes too. Every
//! other entry is copied block for block, metadata and order kept.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek as _, SeekFrom, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use sha2::{Digest as _, Sha256};

use super::super::Selection;
use super::super::budget::inflate;
use super::super::member::{Became, Member, write_pruned};
use super::super::path::{PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile};
use super::records::{Down, Fate, Found, MAX_RECORD, Sum};
use crate::package::compression::encode::Encoder;
use crate::package::compression::gzip;
use crate::package::oci::{Desc, Seen, Shadow, hex, normal};
use crate::package::tar::walk::{Fault, Header, Walk};

/// Files smaller than this hold no container worth reading.
const MIN_SIZE: u64 = 64;

/// The gzip level a layer is written at: Go's `compress/gzip` default,
/// which Docker, containerd, BuildKit and umoci write layers with.
pub(super) const GZIP_LEVEL: u32 = 6;

/// The zstd level a layer is written at: zstd's default, which
/// containerd, BuildKit and podman write `+zstd` layers with.
pub(super) const ZSTD_LEVEL: i32 = 3;

/// How a layer's tar is compressed, by its media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Plain,
    Gzip,
    Zstd,
}

/// The method of a layer of media type `mt`; `None` when it is not a
/// layer this rewrite reads.
pub(super) fn method(mt: &str) -> Option<Method> {
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

/// Whether a layer of media type `mt` may be left out of a layout (it is
/// fetched from elsewhere).
pub(super) fn is_foreign(mt: &str) -> bool {
    mt.contains("nondistributable") || mt.contains(".foreign.")
}

/// The first annotation of `d` that describes byte offsets inside its
/// blob (an eStargz or zstd:chunked table of contents), which a rewrite
/// would make false.
pub(super) fn offsets_annotation(d: &Desc) -> Option<&str> {
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

/// What the rewrite of one layer works with.
pub(super) struct LayerCx<'a> {
    pub(super) sel: &'a Selection,
    pub(super) opts: &'a PathOptions,
    /// The layout.
    pub(super) input: &'a Path,
    /// The image's name for its files (`LAYOUT` or `LAYOUT:NAME`).
    pub(super) name: String,
    /// The layer, for messages (`sha256:… manifest: layers[1] (sha256:…)`).
    pub(super) place: String,
}

impl LayerCx<'_> {
    /// `'LAYOUT': PLACE: WHY`.
    pub(super) fn said(&self, why: &str) -> PathError {
        let shown = crate::files::shown(self.input).into_owned();
        PathError::said(
            PathErrorKind::Content,
            self.input,
            &shown,
            format!("{}: {why}", self.place),
        )
    }

    fn fault(&self, f: Fault) -> PathError {
        match f {
            Fault::Write(e) => PathError::io(PathErrorKind::Write, self.input, e),
            Fault::Read(e) => self.said(&format!("cannot be read as a tar archive: {e}")),
            Fault::Damaged(why) => self.said(&why),
            Fault::Budget(n) => self.said(&format!(
                "inflates to more than the {n} bytes left of the decompression budget \
                 (--max-uncompressed sets it)"
            )),
        }
    }
}

/// What the walk of one layer did.
#[derive(Default)]
pub(super) struct Walked {
    /// Whether an entry changed.
    pub(super) changed: bool,
    /// Paths removed (normalized): files, their hard links, directories.
    pub(super) gone: BTreeSet<String>,
    /// Files of the layer left as they were, prune refusing them.
    pub(super) refused: Vec<String>,
    /// The device code of every file.
    pub(super) all: Pruning,
    /// The files it changed and the records it holds, for the records.
    pub(super) records: Found,
}

/// A SHA-256 and a count of what passed through.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) sha: Sha256,
    pub(super) n: u64,
}

/// A reader that tallies what it gives.
pub(super) struct Tap<'t, R> {
    pub(super) inner: R,
    pub(super) tally: &'t mut Tally,
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
pub(super) struct Sink<'t, W> {
    pub(super) inner: W,
    pub(super) tally: &'t mut Tally,
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

/// A layer rewritten: its new tar, uncompressed, and its new diff_id.
pub(super) struct Rewritten {
    pub(super) walked: Walked,
    /// The SHA-256 of the old uncompressed tar.
    pub(super) old_diff: String,
    /// The SHA-256 of the new one.
    pub(super) new_diff: String,
    /// The new tar (`None` in a dry run).
    pub(super) tar: Option<File>,
}

/// What the layers above the one being rewritten did: what they hide
/// ([`Shadow`]), and the paths they lost to the prune.
#[derive(Default)]
pub(super) struct Above {
    pub(super) shadow: Shadow,
    pub(super) removed: BTreeSet<String>,
    /// What the records below need to know of the layers above.
    pub(super) records: Down,
}

/// Walks the layer whose blob `src` gives (compressed with `m`) into
/// the first of `scratch` (none in a dry run), the layers above it in
/// `above`; the second takes the tar again when records in it change
/// ([`super::records`]).
/// Checks the blob against `expect`'s size and digest, when there is one.
///
/// Two threads share the work: one reads the blob, hashes it and
/// decompresses it ([`decode`]), handing the tar on in chunks of
/// [`CHUNK`] bytes, [`DEPTH`] at most in flight; the caller's hashes the
/// tar (the diff_id) and walks it.
#[allow(clippy::too_many_arguments)]
pub(super) fn rewrite<S: Read + Send>(
    cx: &LayerCx<'_>,
    src: S,
    expect: Option<&Desc>,
    m: Method,
    scratch: Option<(File, File)>,
    above: &mut Above,
    rep: &mut PathReport,
    budget: &mut u64,
) -> Result<Rewritten, PathError> {
    let (mut old, mut new) = (Tally::default(), Tally::default());
    let (to_walk, chunks) = sync_channel(DEPTH);
    let (back, spent) = channel();
    let (decoded, walked, flushed) = std::thread::scope(|s| {
        let reader = s.spawn(move || decode(src, m, &to_walk, &spent));
        let input = Chunks {
            from: chunks,
            back,
            now: Vec::new(),
            at: 0,
            tally: &mut old,
        };
        let out: Box<dyn Write> = match &scratch {
            Some((f, _)) => Box::new(BufWriter::with_capacity(1 << 20, f)),
            None => Box::new(io::sink()),
        };
        let out = Sink {
            inner: out,
            tally: &mut new,
        };
        let mut walk = Walk::new(input, out, *budget);
        let walked = walk_layer(cx, &mut walk, above, rep);
        *budget = budget.saturating_sub(walk.read());
        // The chunks dropped with the walk: a reader still at work stops.
        let flushed = walk.into_inner().flush();
        (reader.join(), walked, flushed)
    });
    let decoded = decoded.map_err(|_| cx.said("its reading thread failed"))?;
    decoded
        .opened
        .map_err(|e| cx.said(&format!("cannot be read: {e}")))?;
    // A blob that is not the one its descriptor names is the first
    // thing wrong with it.
    if let Some(d) = expect.filter(|_| decoded.rest.is_ok()) {
        check_blob(cx, d, &decoded.packed)?;
    }
    let mut walked = walked?;
    flushed.map_err(|e| PathError::io(PathErrorKind::Write, cx.input, e))?;
    (decoded.rest).map_err(|e| cx.said(&format!("cannot be read: {e}")))?;
    let mut new_diff = format!("sha256:{}", hex(&new.sha.finalize()));
    let said = |why: &str| cx.said(why);
    let fault = |f| cx.fault(f);
    let rcx = super::records::Cx {
        opts: cx.opts,
        input: cx.input,
        name: &cx.name,
        said: &said,
        fault: &fault,
    };
    let records = super::records::settle(&rcx, &walked.records, &mut above.records, rep)?;
    walked.changed |= !records.is_empty();
    let tar = match scratch {
        Some((mut f, again)) if !records.is_empty() => {
            let (f, diff) = super::records::replace(&rcx, &mut f, again, &records)?;
            new_diff = diff;
            Some(f)
        }
        Some((mut f, _)) => {
            f.seek(SeekFrom::Start(0))
                .map_err(|e| PathError::io(PathErrorKind::Io, cx.input, e))?;
            Some(f)
        }
        None => None,
    };
    Ok(Rewritten {
        walked,
        old_diff: format!("sha256:{}", hex(&old.sha.finalize())),
        new_diff,
        tar,
    })
}

/// Bytes of the decompressed layer handed from the reading thread to the
/// walk at a time.
const CHUNK: usize = 1 << 20;

/// Chunks on their way to the walk at most.
const DEPTH: usize = 4;

/// A chunk of the decompressed layer, or the error that ended it.
type Chunk = io::Result<Vec<u8>>;

/// What the reading thread found.
struct Decoded {
    /// What was read of the blob.
    packed: Tally,
    /// Whether its decoder could start.
    opened: io::Result<()>,
    /// Reading what follows the compressed stream (or what the walk left
    /// of it) to the end of the blob.
    rest: io::Result<u64>,
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

/// Checks what was read of the blob against its descriptor `d`.
fn check_blob(cx: &LayerCx<'_>, d: &Desc, packed: &Tally) -> Result<(), PathError> {
    if packed.n != d.size {
        return Err(cx.said(&format!(
            "'size' says {}, the blob is {} bytes",
            d.size, packed.n
        )));
    }
    let sha = format!("sha256:{}", hex(&packed.sha.clone().finalize()));
    if sha != d.digest {
        return Err(cx.said(&format!(
            "'digest' says {}, the blob's SHA-256 is {sha}",
            d.digest
        )));
    }
    Ok(())
}

/// Walks the layer: see the module's documentation.
fn walk_layer<R: Read, W: Write>(
    cx: &LayerCx<'_>,
    walk: &mut Walk<R, W>,
    above: &mut Above,
    rep: &mut PathReport,
) -> Result<Walked, PathError> {
    let fault = |f| cx.fault(f);
    let mut w = Walked::default();
    let Above {
        shadow, removed, ..
    } = above;
    while let Some(h) = walk.next().map_err(fault)? {
        let path = normal(&h.path_lossy()).map_err(|e| cx.said(&e.to_string()))?;
        if h.is_hard_link() {
            let to =
                normal(&String::from_utf8_lossy(&h.link)).map_err(|e| cx.said(&e.to_string()))?;
            shadow.entry(path.clone(), false);
            if w.gone.contains(&to) {
                w.records.fates.insert(path.clone(), Fate::Removed(None));
                w.gone.insert(path);
                w.changed = true;
                continue;
            }
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        let dir = h.kind() == b'5';
        let mut seen = shadow.entry(path.clone(), dir);
        let base = path.rsplit('/').next().unwrap_or_default();
        if seen == Seen::Hidden && !base.starts_with(".wh.") && removed.contains(&path) {
            // Its cover was removed above: it would come to light.
            seen = Seen::Visible;
        }
        if seen == Seen::Hidden {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        if h.is_file() && super::records::is_kept(&path) {
            hold(cx, walk, &h, path, &mut w)?;
            continue;
        }
        if by_name(cx, walk, &h, &path, &mut w, rep)? {
            w.records.fates.insert(path.clone(), Fate::Removed(None));
            removed.insert(path);
            continue;
        }
        if !h.is_file() {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        file(cx, walk, &h, &path, &mut w, rep)?;
        if w.gone.contains(&path) {
            removed.insert(path);
        }
    }
    Ok(w)
}

/// The regular file `h` (at `path`), visible: pruned, removed or copied.
fn file<R: Read, W: Write>(
    cx: &LayerCx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    path: &str,
    w: &mut Walked,
    rep: &mut PathReport,
) -> Result<(), PathError> {
    let fault = |f| cx.fault(f);
    let head = super::super::file::read_head(&mut walk.body(), h.size)
        .map_err(|e| cx.said(&format!("the data of '{path}' is cut short: {e}")))?;
    let readable = match h.size < MIN_SIZE {
        true => None,
        false => super::super::file::readable(&head),
    };
    let Some(kind) = readable else {
        walk.copy_header(h).map_err(fault)?;
        walk.out()
            .write_all(&head)
            .map_err(|e| fault(Fault::Write(e)))?;
        return walk.pass_body().map_err(fault);
    };
    let full = format!("{}!/{path}", cx.name);
    let file = inflate(cx.input, &full, &head, &mut walk.body(), h.size)?;
    walk.skip_body().map_err(fault)?;
    let step = Member::new(cx.sel, cx.opts, cx.input, &full);
    let found = (&mut w.refused, &mut w.all);
    let new = match step.prune(walk, h, (&file, kind), found, rep, &fault)? {
        Became::AsItWas => return Ok(()),
        Became::Removed => {
            let old = Sum::of(file.bytes());
            w.records
                .fates
                .insert(path.to_string(), Fate::Removed(Some(old)));
            w.gone.insert(path.to_string());
            w.changed = true;
            return Ok(());
        }
        Became::Rewritten(new) => new,
    };
    w.changed = true;
    let old = Sum::of(file.bytes());
    walk.write_header(h, new.size()).map_err(fault)?;
    let mut tally = Tally::default();
    let mut out = Sink {
        inner: walk.out(),
        tally: &mut tally,
    };
    write_pruned(&new, &file, &mut out).map_err(|e| fault(Fault::Write(e)))?;
    let sum = Sum {
        size: tally.n,
        sha: tally.sha.finalize().into(),
    };
    w.records
        .fates
        .insert(path.to_string(), Fate::Rewritten(old, sum));
    walk.pad(new.size()).map_err(fault)
}

/// The visible record `h` (at `path`): copied as it is, and held (up to
/// [`MAX_RECORD`] bytes) to be brought up to date once the layer is
/// walked.
fn hold<R: Read, W: Write>(
    cx: &LayerCx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    path: String,
    w: &mut Walked,
) -> Result<(), PathError> {
    let fault = |f| cx.fault(f);
    if h.size > MAX_RECORD {
        w.records.too_big.push((path, h.size));
        return walk.copy(h).map_err(fault);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(h.size).unwrap_or(0));
    walk.body()
        .read_to_end(&mut bytes)
        .map_err(|e| cx.said(&format!("the data of '{path}' cannot be read: {e}")))?;
    walk.copy_header(h).map_err(fault)?;
    walk.out()
        .write_all(&bytes)
        .map_err(|e| fault(Fault::Write(e)))?;
    walk.pass_body().map_err(fault)?;
    w.records.held.push((path, bytes));
    Ok(())
}

/// When the visible entry `h` (at `path`) is a library's per-GPU file
/// or directory whose GPU the rules drop, leaves it out unread and says
/// so.
fn by_name<R: Read, W: Write>(
    cx: &LayerCx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    path: &str,
    w: &mut Walked,
    rep: &mut PathReport,
) -> Result<bool, PathError> {
    let directory = h.kind() == b'5';
    if cx.opts.keep_files || !(h.is_file() || directory) {
        return Ok(false);
    }
    let Some(c) = super::super::companion::dropped(cx.sel.by(), path) else {
        return Ok(false);
    };
    walk.skip_body().map_err(|f| cx.fault(f))?;
    if !directory {
        let full = format!("{}!/{path}", cx.name);
        rep.removed.push(RemovedFile::by_name(full, h.size, &c));
        rep.freed += h.size;
    }
    w.gone.insert(path.to_string());
    w.changed = true;
    Ok(true)
}

/// Compresses the tar `tar` with `m` into `out`: the blob's SHA-256 (hex)
/// and size.
pub(super) fn pack(
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
