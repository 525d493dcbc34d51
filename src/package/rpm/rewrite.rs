//! One read of an RPM's payload that decides what each file becomes
//! ([`Decide`], the seam every package rewrite shares: kept, removed, or
//! replaced by new bytes, [`Fate`]), the new payload written (`newc`
//! cpio, compressed with the package's own method at the level its
//! `PAYLOADFLAGS` names), and the headers made true of it
//! ([`super::retag`]): the result is the package's new lead and headers
//! ([`Rewritten::head`]), the new payload having gone to the caller's
//! scratch file.
//!
//! The read goes entry by entry, in the payload's order: the caller may
//! decide an entry by its name alone, unread ([`Decide::by_name`]: left
//! out or kept; a file is replaced only once read, its old bytes checked
//! against its digest first); a regular file's first bytes go to
//! [`Decide::wants`], and a file wanted is read whole
//! ([`Decide::inflate`]) and decided ([`Decide::decide`]); everything else
//! is copied as it is. The answers give a fate per output, as for every
//! format, so that one read could feed several; this writer writes only
//! the first output (output 0) for now, and a fate for any other is not
//! looked at. A payload in rpm's stripped form (`07070X`, for packages
//! with files of 4 GiB or more) is written in that form again: each entry
//! names its file by its index into the main header's file list, path,
//! mode and size coming from there ([`FileList`]), and the index written
//! is the file's index in the new list, the files removed before it left
//! out. rpm writes a stripped payload in the list's order (a hard-linked
//! file's other names just before the one that carries its data); a
//! removal that would renumber an entry already written (a payload out of
//! that order) is refused by name.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Seek, Write};

use super::Package;
pub(crate) use super::error::{Error, Failed};
use super::filelist::FileList;
use super::retag::{self, Changes, Files, Hasher, hex};
use crate::package::compression::encode::Encoder;
use crate::package::compression::{Compression, decoder};
use crate::package::{self, Decide, Fate, Held};

/// Main header tag: the compressor's level (`9` for gzip).
const PAYLOADFLAGS: u32 = 1126;

/// The longest entry name read (rpm's paths are far shorter).
const MAX_NAME: u64 = 1 << 16;

/// A file of the payload as the read hands it to [`Decide`].
pub(crate) struct Member<'m> {
    /// Its path without the leading `./` (`usr/lib64/libx.so`).
    pub(crate) path: &'m str,
    /// The size of its data in the payload.
    pub(crate) size: u64,
    /// Whether it is a regular file.
    pub(crate) regular: bool,
    /// Whether it is a directory.
    pub(crate) directory: bool,
}

/// An RPM's payload as its [`rewrite`] hands its files to [`Decide`].
pub(crate) struct Rpm;

impl package::Format for Rpm {
    type Member<'m> = Member<'m>;
}

/// A rewritten package's lead and headers, to be followed by the payload
/// written to the scratch file.
pub(crate) struct Rewritten {
    /// The lead, the signature header (padded) and the main header.
    pub(crate) head: Vec<u8>,
    /// The signatures removed, by name ("RSA header signature").
    pub(crate) unsigned: Vec<&'static str>,
}

/// A reader that counts what it gives and refuses to give more than
/// `left`.
struct Counted<R> {
    r: R,
    at: u64,
    left: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.r.read(buf)?;
        if k as u64 > self.left {
            return Err(io::Error::other(
                "it inflates past the decompression budget",
            ));
        }
        self.left -= k as u64;
        self.at += k as u64;
        Ok(k)
    }
}

/// A writer that counts and hashes what passes.
struct Tee<W> {
    out: W,
    n: u64,
    hash: Hasher,
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let k = self.out.write(buf)?;
        self.hash.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The encoder of `c` at `level` into `out`, on `threads` threads.
fn encoder<W: Write>(c: Compression, level: u32, out: W, threads: u32) -> io::Result<Encoder<W>> {
    match c {
        Compression::None => Ok(Encoder::None(out)),
        Compression::Gzip => Encoder::gzip(out, level.clamp(1, 9)),
        Compression::Xz => Encoder::xz(out, level.min(9), threads, 0),
        Compression::Lzma => Encoder::lzma(out, level.min(9)),
        Compression::Bzip2 => Ok(Encoder::bzip2(out, level)),
        // rpm names neither as a payload compressor: Package::read refuses them.
        Compression::Lz4 | Compression::Lzip => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("rpm writes no {}-compressed payload", c.name()),
        )),
        Compression::Zstd => {
            let workers = if threads > 1 { threads } else { 0 };
            Encoder::zstd(
                out,
                i32::try_from(level.clamp(1, 22)).unwrap_or(19),
                workers,
            )
        }
    }
}

/// The level `PAYLOADFLAGS` names (its leading digits), or the method's
/// usual one.
fn level(flags: Option<&[u8]>, c: Compression) -> u32 {
    let digits: String = flags
        .unwrap_or_default()
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .map(|&b| char::from(b))
        .collect();
    digits.parse().unwrap_or(match c {
        Compression::Zstd => 19,
        Compression::Xz | Compression::Lzma => 6,
        _ => 9,
    })
}

/// What the walk of the payload found.
#[derive(Default)]
struct Walked {
    /// The new size and digest of each file replaced, by index.
    rewritten: BTreeMap<usize, (u64, String)>,
    /// The files removed.
    removed: BTreeSet<usize>,
    /// The highest file index a stripped entry was written with, in the
    /// old file list.
    stripped_max: Option<usize>,
}

impl Walked {
    /// Notes that file `f` is removed; refused where a stripped entry of
    /// a later file was already written with an index that counted `f`.
    fn remove(&mut self, f: usize) -> Result<(), Error> {
        if self.stripped_max.is_some_and(|m| m > f) {
            return Err(Error::Refused(format!(
                "its payload, in rpm's stripped cpio form, holds file {f} after file {}: \
                 removing it would renumber an entry already written",
                self.stripped_max.unwrap_or_default()
            )));
        }
        self.removed.insert(f);
        Ok(())
    }

    /// The index file `f` has in the new file list: the files removed
    /// before it left out.
    fn new_index(&self, f: usize) -> usize {
        f - self.removed.range(..f).count()
    }
}

/// Rewrites the RPM `bytes` as `d` decides, its payload compressed into
/// `scratch` (nothing written in a dry run: `None`) on `threads` threads,
/// reading at most `limit` bytes of uncompressed payload. `None` when
/// nothing changes (the package stays as it is, signatures and all).
pub(crate) fn rewrite<D: Decide<Rpm>, S: Read + Write + Seek>(
    bytes: &[u8],
    d: &mut D,
    scratch: Option<&mut S>,
    (threads, limit): (u32, u64),
) -> Result<Option<Rewritten>, Failed<D::Error>> {
    let p = Package::read(bytes).map_err(Error::Damaged)?;
    let files = Files::of(&p.main)?;
    let list = FileList::of(&p.main);
    let method = p.compression.name();
    let inflate = |e: io::Error| Error::Damaged(format!("its {method} payload: {e}"));
    let reader = decoder(p.payload, p.compression).map_err(inflate)?;
    let mut input = Counted {
        r: reader,
        at: 0,
        left: limit,
    };
    let level = level(
        p.main.string(PAYLOADFLAGS).map_err(Error::Damaged)?,
        p.compression,
    );
    let mut scratch = scratch;
    let mut sink = io::sink();
    let dest: &mut dyn Write = match scratch.as_deref_mut() {
        Some(s) => {
            s.rewind().map_err(Error::Write)?;
            s
        }
        None => &mut sink,
    };
    let Some((walked, (digest, alt), (archive_len, payload_len))) = payload(
        &mut input,
        dest,
        (&files, &list),
        d,
        (p.compression, level, threads),
    )?
    else {
        return Ok(None);
    };
    let c = Changes {
        rewritten: &walked.rewritten,
        removed: &walked.removed,
        size_delta: size_delta(&walked, &files),
        payload: (digest, alt, archive_len),
    };
    let (main, mut unsigned) = retag::main(&p.main, &files, &c)?;
    let main = main.to_bytes().map_err(Error::Refused)?;
    let Some(scratch) = scratch else {
        unsigned.extend(retag::signatures_of(&p.sig)?);
        return Ok(Some(Rewritten {
            head: Vec::new(),
            unsigned,
        }));
    };
    let mut md5 = retag::Algo::Md5.hasher();
    md5.update(&main);
    scratch.rewind().map_err(Error::Write)?;
    let mut hashing = Tee {
        out: io::sink(),
        n: 0,
        hash: md5,
    };
    io::copy(scratch, &mut hashing).map_err(Error::Write)?;
    let (sig, more) = retag::signature(
        &p.sig,
        &main,
        (payload_len, archive_len),
        &hashing.hash.finish(),
    )?;
    unsigned.extend(more);
    let mut head = bytes[..super::LEAD_LEN].to_vec();
    head.extend(sig.to_bytes().map_err(Error::Refused)?);
    head.resize(head.len().next_multiple_of(8), 0);
    head.extend(main);
    Ok(Some(Rewritten { head, unsigned }))
}

/// What a walk found, the new payload's digests (compressed,
/// uncompressed) and sizes (uncompressed, compressed).
type Found = (Walked, (String, String), (u64, u64));

/// Walks the payload `input` as `d` decides into `dest`, compressed by
/// `c` at `level` on `threads` threads; what the walk found and the new
/// payload's digests and sizes, or `None` when nothing changes.
fn payload<R: Read, D: Decide<Rpm>>(
    input: &mut Counted<R>,
    dest: &mut dyn Write,
    (files, list): (&Files, &Result<FileList, String>),
    d: &mut D,
    (c, level, threads): (Compression, u32, u32),
) -> Result<Option<Found>, Failed<D::Error>> {
    let compressed = Tee {
        out: io::BufWriter::with_capacity(1 << 20, dest),
        n: 0,
        hash: files.payload_algo.hasher(),
    };
    let enc = encoder(c, level, compressed, threads).map_err(Error::Write)?;
    let mut out = Tee {
        out: enc,
        n: 0,
        hash: files.payload_algo.hasher(),
    };
    let walked = walk(input, &mut out, (files, list), d)?;
    if walked.rewritten.is_empty() && walked.removed.is_empty() {
        return Ok(None);
    }
    let walked = with_links(walked, files)?;
    let Tee {
        out: enc,
        n: archive_len,
        hash,
    } = out;
    let alt = hex(&hash.finish());
    let compressed = enc.finish().map_err(Error::Write)?;
    let payload_len = compressed.n;
    let digest = hex(&compressed.hash.finish());
    compressed
        .out
        .into_inner()
        .map_err(|e| Error::Write(e.into_error()))?;
    Ok(Some((walked, (digest, alt), (archive_len, payload_len))))
}

/// The installed size gained (below zero: lost): each rewritten file's
/// change and each removed regular file's size, a hard-linked file's
/// once.
fn size_delta(w: &Walked, files: &Files) -> i128 {
    let mut seen = BTreeSet::new();
    let mut delta = 0i128;
    for (&f, &(size, _)) in &w.rewritten {
        if seen.insert(files.group(f)) {
            delta += i128::from(size) - i128::from(files.sizes[f]);
        }
    }
    for &f in &w.removed {
        if files.regular(f) && seen.insert(files.group(f)) {
            delta -= i128::from(files.sizes[f]);
        }
    }
    delta
}

/// `w` with each rewritten file's hard links given its new size and
/// digest; a removed file whose hard links stay is refused.
fn with_links(mut w: Walked, files: &Files) -> Result<Walked, Error> {
    for &f in &w.removed {
        if let Some(&stays) = files.group(f).iter().find(|g| !w.removed.contains(g)) {
            return Err(Error::Refused(format!(
                "file {f} of its header would be removed, but it is hard-linked to file {stays}, \
                 which stays: prune removes a hard-linked file only with all its names"
            )));
        }
    }
    let links: Vec<(usize, (u64, String))> = w
        .rewritten
        .iter()
        .flat_map(|(&f, new)| files.group(f).into_iter().map(move |g| (g, new.clone())))
        .collect();
    w.rewritten.extend(links);
    Ok(w)
}

/// How an entry's header was written: `newc`'s 110 bytes, or rpm's
/// stripped form, which gives only the file's index in the main header's
/// list.
enum Head {
    Newc([u8; 110]),
    Stripped(usize),
}

/// One entry's header as read: its form, the fields that matter, its
/// name (a stripped entry's path, from the file list).
struct Entry {
    head: Head,
    mode: u64,
    size: u64,
    name: Vec<u8>,
}

/// The eight hex digits of field `i` (after the magic) of `raw`.
fn field(raw: &[u8], i: usize) -> Option<u64> {
    let digits = raw.get(6 + 8 * i..14 + 8 * i)?;
    u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// Reads the next entry's header and name from `r` (aligned); a stripped
/// entry's path, mode and size come from `list`.
fn entry<R: Read>(r: &mut Counted<R>, list: &Result<FileList, String>) -> Result<Entry, Error> {
    let bad = |what: String| Error::Damaged(format!("its payload: {what}"));
    skip(r, r.at.next_multiple_of(4) - r.at)?;
    let at = r.at;
    let mut raw = [0u8; 110];
    r.read_exact(&mut raw[..14])
        .map_err(|e| bad(format!("no whole cpio entry at offset {at} ({e})")))?;
    match &raw[..6] {
        b"070701" => {}
        b"07070X" => {
            let fx = field(&raw, 0)
                .ok_or_else(|| bad(format!("the entry at offset {at} names no file by number")))?;
            let list = list.as_ref().map_err(|e| bad(e.clone()))?;
            let f = list.get(fx).map_err(bad)?;
            return Ok(Entry {
                head: Head::Stripped(usize::try_from(fx).unwrap_or(usize::MAX)),
                mode: f.mode,
                size: f.size,
                name: f.path.clone().into_bytes(),
            });
        }
        _ => return Err(bad(format!("no cpio entry at offset {at}"))),
    }
    r.read_exact(&mut raw[14..])
        .map_err(|e| bad(format!("no whole cpio entry at offset {at} ({e})")))?;
    let fields: Option<Vec<u64>> = (0..13).map(|i| field(&raw, i)).collect();
    let fields = fields.ok_or_else(|| {
        bad(format!(
            "the entry at offset {at} holds a field that is no number"
        ))
    })?;
    let (mode, size, name_size) = (fields[1], fields[6], fields[11]);
    if name_size == 0 || name_size > MAX_NAME {
        return Err(bad(format!(
            "the entry at offset {at} gives its name {name_size} bytes"
        )));
    }
    let mut name = vec![0u8; usize::try_from(name_size).unwrap_or(0)];
    r.read_exact(&mut name)
        .map_err(|e| bad(format!("the entry at offset {at} is cut short ({e})")))?;
    if name.last() == Some(&0) {
        name.pop();
    }
    Ok(Entry {
        head: Head::Newc(raw),
        mode,
        size,
        name,
    })
}

/// Skips `n` bytes of `r`.
fn skip<R: Read>(r: &mut Counted<R>, n: u64) -> Result<(), Error> {
    let got = io::copy(&mut (&mut *r).take(n), &mut io::sink())
        .map_err(|e| Error::Damaged(format!("its payload: {e}")))?;
    if got < n {
        return Err(Error::Damaged(format!(
            "its payload ends at offset {}, inside an entry",
            r.at
        )));
    }
    Ok(())
}

/// Writes zeros to `out` up to a multiple of four bytes.
fn pad<W: Write>(out: &mut Tee<W>) -> Result<(), Error> {
    let n = usize::try_from(out.n.next_multiple_of(4) - out.n).unwrap_or(0);
    out.write_all(&[0; 3][..n]).map_err(Error::Write)
}

/// Writes the entry `e` with its data size set to `size` (a stripped
/// entry: with its file's index in the new list, its size being the
/// header's), noting in `w` the stripped entries written.
fn write_entry<W: Write>(
    out: &mut Tee<W>,
    e: &Entry,
    size: u64,
    w: &mut Walked,
) -> Result<(), Error> {
    let raw = match &e.head {
        Head::Newc(raw) => raw,
        Head::Stripped(f) => {
            w.stripped_max = w.stripped_max.max(Some(*f));
            let fx = format!("07070X{:08x}", w.new_index(*f));
            out.write_all(fx.as_bytes()).map_err(Error::Write)?;
            return pad(out);
        }
    };
    let mut raw = *raw;
    let field = format!("{size:08x}");
    if field.len() > 8 {
        return Err(Error::Refused(format!(
            "a file of {size} bytes is too large for a newc cpio entry"
        )));
    }
    raw[54..62].copy_from_slice(field.as_bytes());
    out.write_all(&raw).map_err(Error::Write)?;
    out.write_all(&e.name).map_err(Error::Write)?;
    out.write_all(&[0]).map_err(Error::Write)?;
    pad(out)
}

/// The fate of output 0 in an answer (`None`, or no fate: kept): the one
/// output this writer writes.
fn first(fates: Option<Vec<Fate>>) -> Fate {
    fates
        .and_then(|v| v.into_iter().next())
        .unwrap_or(Fate::Kept)
}

/// Walks the payload `r` into `out` as `d` decides, up to its trailer,
/// then copies what follows it.
fn walk<R: Read, W: Write, D: Decide<Rpm>>(
    r: &mut Counted<R>,
    out: &mut Tee<W>,
    (files, list): (&Files, &Result<FileList, String>),
    d: &mut D,
) -> Result<Walked, Failed<D::Error>> {
    let mut w = Walked::default();
    let mut seen = BTreeSet::new();
    loop {
        let e = entry(r, list)?;
        skip(r, r.at.next_multiple_of(4) - r.at)?;
        if matches!(e.head, Head::Newc(_)) && e.name == b"TRAILER!!!" {
            write_entry(out, &e, e.size, &mut w)?;
            io::copy(r, out).map_err(|err| Error::Damaged(format!("its payload: {err}")))?;
            return Ok(w);
        }
        let name = String::from_utf8_lossy(&e.name).into_owned();
        let f = match e.head {
            Head::Stripped(f) => Some(f),
            Head::Newc(_) => files.find(&e.name),
        };
        let f = f.ok_or_else(|| {
            Error::Damaged(format!(
                "its payload holds '{name}', which its header does not list"
            ))
        })?;
        if !seen.insert(f) {
            return Err(Error::Damaged(format!("its payload holds '{name}' twice")).into());
        }
        let m = Member {
            path: name.trim_start_matches("./").trim_start_matches('/'),
            size: e.size,
            regular: e.mode & 0o170_000 == 0o100_000,
            directory: e.mode & 0o170_000 == 0o040_000,
        };
        match d
            .by_name(&m)
            .map_err(Failed::Caller)?
            .map(|v| first(Some(v)))
        {
            None => member(r, out, (&e, &m, f), files, d, &mut w)?,
            Some(Fate::Removed) => {
                skip(r, e.size)?;
                w.remove(f)?;
            }
            Some(Fate::Kept) => copy(r, out, (&e, &m), &[], &mut w)?,
            Some(Fate::Replaced(_)) => {
                return Err(Error::Refused(format!(
                    "its file '{}' would be replaced by its name alone, unread: a file is \
                     replaced only once read (its old bytes checked against its digest)",
                    m.path
                ))
                .into());
            }
        }
    }
}

/// Writes the entry `e` (the file `m`), whose first bytes `head` were
/// read from `r`, as it is: the rest of its data copied from `r`.
fn copy<R: Read, W: Write>(
    r: &mut Counted<R>,
    out: &mut Tee<W>,
    (e, m): (&Entry, &Member<'_>),
    head: &[u8],
    w: &mut Walked,
) -> Result<(), Error> {
    let cut = |err: io::Error| Error::Damaged(format!("its payload, in '{}': {err}", m.path));
    write_entry(out, e, e.size, w)?;
    out.write_all(head).map_err(Error::Write)?;
    let rest = e.size - head.len() as u64;
    let got = io::copy(&mut (&mut *r).take(rest), out).map_err(cut)?;
    if got < rest {
        return Err(cut(io::ErrorKind::UnexpectedEof.into()));
    }
    skip(r, r.at.next_multiple_of(4) - r.at)?;
    pad(out)
}

/// Reads the data of the entry `e` (the file `m`, index `f`) from `r`
/// and writes the entry to `out` as `d` decides, noting in `w` what
/// became of it.
fn member<R: Read, W: Write, D: Decide<Rpm>>(
    r: &mut Counted<R>,
    out: &mut Tee<W>,
    (e, m, f): (&Entry, &Member<'_>, usize),
    files: &Files,
    d: &mut D,
    w: &mut Walked,
) -> Result<(), Failed<D::Error>> {
    let cut = |err: io::Error| Error::Damaged(format!("its payload, in '{}': {err}", m.path));
    let mut head = Vec::with_capacity(D::REACH);
    let reach = if m.regular { D::REACH as u64 } else { 0 };
    (&mut *r)
        .take(e.size.min(reach))
        .read_to_end(&mut head)
        .map_err(cut)?;
    if head.len() as u64 != e.size.min(reach) {
        return Err(cut(io::ErrorKind::UnexpectedEof.into()).into());
    }
    if !m.regular || !d.wants(m, &head) {
        return copy(r, out, (e, m), &head, w).map_err(Failed::from);
    }
    let mut body = (&mut *r).take(e.size - head.len() as u64);
    let bytes = d.inflate(m, &head, &mut body).map_err(Failed::Caller)?;
    if body.limit() > 0 {
        return Err(cut(io::ErrorKind::UnexpectedEof.into()).into());
    }
    skip(r, r.at.next_multiple_of(4) - r.at)?;
    match first(d.decide(m, Held::Read(&bytes)).map_err(Failed::Caller)?) {
        Fate::Kept => {
            write_entry(out, e, e.size, w)?;
            d.write(&bytes, out).map_err(Error::Write)?;
        }
        Fate::Removed => {
            w.remove(f)?;
            return Ok(());
        }
        Fate::Replaced(new) => {
            files.check_digest(f, m.path, bytes.as_ref())?;
            let size = new.size;
            write_entry(out, e, size, w)?;
            let mut file = Tee {
                out: &mut *out,
                n: 0,
                hash: files.algo.hasher(),
            };
            new.copy_to(&mut file).map_err(Error::Write)?;
            let (n, digest) = (file.n, hex(&file.hash.finish()));
            if n != size {
                return Err(Error::Write(io::Error::other(format!(
                    "the new '{}' came to {n} bytes, not the {size} announced",
                    m.path
                )))
                .into());
            }
            w.rewritten.insert(f, (size, digest));
        }
    }
    pad(out).map_err(Failed::from)
}
