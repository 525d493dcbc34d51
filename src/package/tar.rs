//! Tar archives read entry by entry from a stream ([`Reader`]): each
//! header block checked and read, with the extension entries before it
//! (GNU long names, pax headers) applied, and the data's bytes counted
//! against a budget. The library's one reader of tar archives: the
//! package check ([`is_header`]), the scanners' walk of a package's tar,
//! its `md5sums` and a `docker save` archive's index, and prune's rewrite
//! of a package's tar (which writes the blocks read out again) all use
//! it.
//!
//! | offset | size | field (POSIX ustar and GNU headers) |
//! |---|---|---|
//! | 0 | 100 | name |
//! | 124 | 12 | size: octal digits, or base-256 when byte 0 has bit 7 set (GNU) |
//! | 148 | 8 | checksum: octal sum of the 512 bytes, this field counted as spaces |
//! | 156 | 1 | type flag: `0`/NUL file, `1` hard link, `2` symbolic link, `5` directory, `7` contiguous file; `L`/`K` GNU long name/link, `x`/`g` pax headers, `S` GNU sparse file |
//! | 157 | 100 | link name |
//! | 257 | 8 | magic: `ustar\0` + `00` (POSIX), `ustar  \0` (GNU) |
//! | 345 | 155 | POSIX: name prefix; GNU: times, then the sparse map (`S`: extended when byte 482 is set) |
//!
//! Every entry is its header block, then its data padded to a multiple of
//! 512 bytes. The archive ends with zero blocks, GNU tar padding it to a
//! multiple of its record (20 blocks). Source: POSIX.1-2017 `pax`
//! (ustar interchange format) and the GNU tar manual's "Basic Tar Format".
//!
//! A GNU long name (`L`) or a pax `path` before an entry gives its path; a
//! pax `size` its data's size. Those extension entries are kept with the
//! entry ([`Header::extensions`]), as they were read, for a writer to
//! write them out again before its header; [`Header::size_in_pax`] says a
//! pax header gave the size.
//!
//! Without the `files` feature only [`is_header`] is used (prune, which
//! reads and rewrites packages, needs it).
#![cfg_attr(not(feature = "files"), allow(dead_code))]

use std::io::{self, Read};

/// A tar block's size.
pub(crate) const BLOCK: usize = 512;

/// GNU tar's record: 20 blocks, the multiple it pads an archive to.
pub(crate) const RECORD: u64 = 20 * BLOCK as u64;

/// The most bytes of a long name or pax header read into memory.
const MAX_EXTENSION: u64 = 1 << 20;

/// Where the size field lies in a header.
pub(crate) const SIZE: std::ops::Range<usize> = 124..136;

/// Where the checksum field lies in a header.
pub(crate) const CHECKSUM: std::ops::Range<usize> = 148..156;

/// Why a tar archive could not be read (or, for a writer of what is
/// read, written).
#[derive(Debug)]
pub(crate) enum Fault {
    /// The archive could not be read (its compressed stream is damaged).
    Read(io::Error),
    /// The rewritten archive could not be written.
    Write(io::Error),
    /// The archive's structure is damaged: what, and where.
    Damaged(String),
    /// Reading on would inflate more than the budget's bytes: how many
    /// there were.
    Budget(u64),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Read(e) | Fault::Write(e) => write!(f, "{e}"),
            Fault::Damaged(why) => f.write_str(why),
            Fault::Budget(n) => write!(
                f,
                "it inflates to more than the {n} bytes of the decompression budget \
                 (--max-uncompressed)"
            ),
        }
    }
}

/// One entry of a tar archive, as its header (and the extension entries
/// before it) describe it.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    /// The extension entries before it (GNU long names, pax headers), as
    /// they were read: written before its header.
    pub(crate) extensions: Vec<u8>,
    /// The header block.
    pub(crate) block: [u8; BLOCK],
    /// For a GNU sparse file, the extension blocks of its sparse map.
    pub(crate) sparse_map: Vec<[u8; BLOCK]>,
    /// The path: a long name's or a pax header's, else the header's own;
    /// its leading `./` and `/` removed (as `md5sums` gives paths).
    pub(crate) path: Vec<u8>,
    /// The link name (hard and symbolic links), likewise.
    pub(crate) link: Vec<u8>,
    /// Whether the path, as the archive gives it (from a long name, a pax
    /// header or the header itself), is absolute.
    pub(crate) path_absolute: bool,
    /// Whether the link name, as the archive gives it, is absolute.
    pub(crate) link_absolute: bool,
    /// Bytes of data that follow the header (before padding).
    pub(crate) size: u64,
    /// Whether a pax header gave the size.
    pub(crate) size_in_pax: bool,
    /// Whether the header block holds the whole path and link name: no
    /// long name or link, no pax `path` or `linkpath`, no POSIX prefix
    /// (a writer may then rename the entry in the block alone).
    pub(crate) named_in_block: bool,
}

impl Header {
    /// The type flag.
    pub(crate) fn kind(&self) -> u8 {
        self.block[156]
    }

    /// Whether it is a regular file stored whole (not sparse).
    pub(crate) fn is_file(&self) -> bool {
        matches!(self.kind(), b'0' | 0 | b'7')
    }

    /// Whether it is a hard link to an earlier member ([`Header::link`]).
    pub(crate) fn is_hard_link(&self) -> bool {
        self.kind() == b'1'
    }

    /// Whether it is a GNU sparse file: its data is the file's non-zero
    /// runs, not the file.
    pub(crate) fn is_sparse(&self) -> bool {
        self.kind() == b'S'
    }

    /// The path, for messages.
    pub(crate) fn path_lossy(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }
}

/// A tar archive read from `input` entry by entry, reading no more than
/// `limit` bytes of it.
///
/// [`Reader::next`] reads up to the next entry (its extension entries
/// and header) and takes its data's bytes, padded, from the budget; its
/// data is then there to read ([`Reader::body`]), to skip
/// ([`Reader::skip_body`]) or to hand on ([`Reader::copy_body`]). Right
/// after `next`, [`Reader::read`] is where the entry's data starts in the
/// archive. At the end of the archive `next` returns `None`, and
/// [`Reader::take_end`] says how it ended. Every byte read counts against
/// the budget; past it, [`Fault::Budget`].
pub(crate) struct Reader<R> {
    input: R,
    /// Bytes read from `input`.
    read: u64,
    /// The most bytes `input` may give.
    limit: u64,
    /// Bytes of the current entry's data not read yet.
    left: u64,
    /// Bytes of padding after them.
    padding: u64,
    /// How the archive ended, once it has.
    end: Option<End>,
}

/// How a tar archive ended ([`Reader::take_end`]).
#[derive(Debug)]
pub(crate) struct End {
    /// Extension entries that came before no entry, as they were read.
    pub(crate) extensions: Vec<u8>,
    /// Whether a zero block ended it (read already): what follows it is
    /// the caller's to read ([`Reader::read_some`]); else the archive ran
    /// out after its last entry.
    pub(crate) zero_block: bool,
}

/// `n` rounded up to whole blocks.
pub(crate) fn padded(n: u64) -> Option<u64> {
    n.checked_next_multiple_of(BLOCK as u64)
}

impl<R: Read> Reader<R> {
    /// A reader of the archive `input` gives, reading no more than
    /// `limit` bytes of it.
    pub(crate) fn new(input: R, limit: u64) -> Reader<R> {
        Reader {
            input,
            read: 0,
            limit,
            left: 0,
            padding: 0,
            end: None,
        }
    }

    /// Bytes read of the archive so far.
    pub(crate) fn read(&self) -> u64 {
        self.read
    }

    /// Bytes of the current entry's data not read yet.
    pub(crate) fn left(&self) -> u64 {
        self.left
    }

    /// How the archive ended, once [`Reader::next`] returned `None`.
    pub(crate) fn take_end(&mut self) -> Option<End> {
        self.end.take()
    }

    /// Checks that `n` more bytes stay within the budget.
    fn spend(&self, n: u64) -> Result<(), Fault> {
        match self.read.checked_add(n) {
            Some(total) if total <= self.limit => Ok(()),
            _ => Err(Fault::Budget(self.limit)),
        }
    }

    /// Reads exactly `buf.len()` bytes; `Ok(false)` when the archive ends
    /// before the first of them.
    fn fill(&mut self, buf: &mut [u8], what: &str) -> Result<bool, Fault> {
        self.spend(buf.len() as u64)?;
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => {
                    return Err(Fault::Damaged(format!(
                        "it ends inside {what} at offset {:#x}",
                        self.read + got as u64
                    )));
                }
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Read(e)),
            }
        }
        self.read += buf.len() as u64;
        Ok(true)
    }

    /// Reads exactly `buf.len()` bytes of `what`; the archive ending
    /// before them is damage.
    pub(crate) fn fill_all(&mut self, buf: &mut [u8], what: &str) -> Result<(), Fault> {
        match self.fill(buf, what)? {
            true => Ok(()),
            false => Err(Fault::Damaged(format!(
                "it ends before {what} at offset {:#x}",
                self.read
            ))),
        }
    }

    /// Reads `n` bytes of `what` from the archive, handing each piece to
    /// `to`.
    fn pass(
        &mut self,
        mut n: u64,
        what: &str,
        to: &mut dyn FnMut(&[u8]) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let mut buf = vec![0u8; usize::try_from(n).unwrap_or(usize::MAX).min(256 << 10)];
        while n > 0 {
            let k = usize::try_from(n).unwrap_or(usize::MAX).min(buf.len());
            self.fill_all(&mut buf[..k], what)?;
            to(&buf[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Reads up to the next member, past what is left of the one before:
    /// extension entries (GNU long names, pax headers) are kept with it
    /// ([`Header::extensions`]) and applied to it. At the end of the
    /// archive returns `None`, and [`Reader::take_end`] says how it ended.
    pub(crate) fn next(&mut self) -> Result<Option<Header>, Fault> {
        self.skip_body()?;
        let (mut long_name, mut long_link) = (None, None);
        let mut pax = Pax::default();
        let mut extensions = Vec::new();
        loop {
            let offset = self.read;
            let mut block = [0u8; BLOCK];
            if !self.fill(&mut block, "a header")? {
                // No end-of-archive blocks: GNU tar and the tar crate read
                // such an archive to its last member too.
                self.end = Some(End {
                    extensions,
                    zero_block: false,
                });
                return Ok(None);
            }
            if block.iter().all(|&b| b == 0) {
                self.end = Some(End {
                    extensions,
                    zero_block: true,
                });
                return Ok(None);
            }
            if !checksum_matches(&block) {
                return Err(Fault::Damaged(format!(
                    "the header at offset {offset:#x} does not match its checksum"
                )));
            }
            let size = field_size(&block).ok_or_else(|| {
                Fault::Damaged(format!(
                    "the header at offset {offset:#x} has no valid size"
                ))
            })?;
            let kind = block[156];
            if matches!(kind, b'L' | b'K' | b'x' | b'g') {
                if size > MAX_EXTENSION {
                    return Err(Fault::Damaged(format!(
                        "the extension header at offset {offset:#x} holds {size} bytes, more than \
                         the {MAX_EXTENSION} read"
                    )));
                }
                let whole = padded(size).unwrap_or(u64::MAX);
                let mut data = vec![0u8; usize::try_from(whole).unwrap_or(0)];
                self.fill_all(&mut data, "an extension header's data")?;
                extensions.extend_from_slice(&block);
                extensions.extend_from_slice(&data);
                data.truncate(usize::try_from(size).unwrap_or(0));
                let pax_fault = |why: PaxError| {
                    let name = String::from_utf8_lossy(&ustar_name(&block)).into_owned();
                    Fault::Damaged(format!(
                        "the pax header '{name}' at offset {offset:#x}: {why}"
                    ))
                };
                match kind {
                    b'L' => long_name = Some(c_string(&data).to_vec()),
                    b'K' => long_link = Some(c_string(&data).to_vec()),
                    b'x' => pax.read(&data).map_err(pax_fault)?,
                    // Global pax headers are left to whoever unpacks, but
                    // read as tar reads them: one tar refuses would be
                    // written out again as it is.
                    _ => Pax::default().read(&data).map_err(pax_fault)?,
                }
                continue;
            }
            let sparse_map = match kind {
                b'S' => self.sparse_map(&block)?,
                _ => Vec::new(),
            };
            let named_in_block = long_name.is_none()
                && long_link.is_none()
                && pax.path.is_none()
                && pax.link.is_none()
                && !has_prefix(&block);
            let name = long_name.or(pax.path).unwrap_or_else(|| ustar_name(&block));
            let link = long_link
                .or(pax.link)
                .unwrap_or_else(|| c_string(&block[157..257]).to_vec());
            let size = pax.size.unwrap_or(size);
            let whole = padded(size).ok_or_else(|| {
                Fault::Damaged(format!(
                    "the header at offset {offset:#x} gives a size of {size} bytes"
                ))
            })?;
            self.spend(whole)?;
            (self.left, self.padding) = (size, whole - size);
            return Ok(Some(Header {
                extensions,
                block,
                sparse_map,
                path: normalized(&name).to_vec(),
                link: normalized(&link).to_vec(),
                path_absolute: name.first() == Some(&b'/'),
                link_absolute: link.first() == Some(&b'/'),
                size,
                size_in_pax: pax.size.is_some(),
                named_in_block,
            }));
        }
    }

    /// The extension blocks of the GNU sparse file whose header is
    /// `block`, read.
    fn sparse_map(&mut self, block: &[u8; BLOCK]) -> Result<Vec<[u8; BLOCK]>, Fault> {
        let mut map = Vec::new();
        let mut extended = block[482] != 0;
        while extended {
            let mut ext = [0u8; BLOCK];
            self.fill_all(&mut ext, "a sparse map")?;
            extended = ext[504] != 0;
            map.push(ext);
        }
        Ok(map)
    }

    /// The current entry's data not read yet, to read.
    pub(crate) fn body(&mut self) -> Body<'_, R> {
        Body {
            input: &mut self.input,
            read: &mut self.read,
            left: &mut self.left,
        }
    }

    /// Hands the current entry's data not read yet, and its padding, to
    /// `to` as they are.
    pub(crate) fn copy_body(
        &mut self,
        to: &mut dyn FnMut(&[u8]) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let n = std::mem::take(&mut self.left) + std::mem::take(&mut self.padding);
        self.pass(n, "a member's data", to)
    }

    /// Reads the current entry's data not read yet, and its padding,
    /// without keeping them.
    pub(crate) fn skip_body(&mut self) -> Result<(), Fault> {
        let n = std::mem::take(&mut self.left) + std::mem::take(&mut self.padding);
        self.pass(n, "a member's data", &mut |_| Ok(()))
    }

    /// Reads what the archive gives next into `buf`, within the budget;
    /// 0 at its end.
    pub(crate) fn read_some(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        loop {
            match self.input.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Fault::Read(e)),
                Ok(n) => {
                    self.read += n as u64;
                    if self.read > self.limit {
                        return Err(Fault::Budget(self.limit));
                    }
                    return Ok(n);
                }
            }
        }
    }
}

/// A member's data being read ([`Reader::body`]).
pub(crate) struct Body<'a, R> {
    input: &'a mut R,
    read: &'a mut u64,
    left: &'a mut u64,
}

impl<R: Read> Read for Body<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = usize::try_from(*self.left)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        if k == 0 {
            // Not asked of the decoder: zstd's fails a read into nothing.
            return Ok(0);
        }
        let n = self.input.read(&mut buf[..k])?;
        *self.left -= n as u64;
        *self.read += n as u64;
        Ok(n)
    }
}

/// The pax records of an extended header that name the next member.
#[derive(Default)]
struct Pax {
    path: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    size: Option<u64>,
}

impl Pax {
    /// Reads the records (`LEN KEY=VALUE\n`, LEN counting the whole
    /// record) of `data` as GNU tar, which `dpkg-deb` runs, reads them: a
    /// NUL where a record would start ends them; a record whose length is
    /// missing, not followed by a blank or past the data, that has no `=`
    /// or does not end in a newline, or whose `size` is not a decimal
    /// number, is an error: which record, where, and why.
    fn read(&mut self, data: &[u8]) -> Result<(), PaxError> {
        let (mut at, mut k) = (0, 0);
        loop {
            k += 1;
            let rest = &data[at..];
            let blank = |b: &u8| *b == b' ' || *b == b'\t';
            let lead = rest.iter().take_while(|b| blank(b)).count();
            if rest.get(lead).is_none_or(|&b| b == 0) {
                return Ok(());
            }
            let bad = |why| PaxError {
                record: k,
                at,
                len: data.len(),
                why,
            };
            let digits = rest[lead..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 {
                return Err(bad("has no length"));
            }
            let len = std::str::from_utf8(&rest[lead..lead + digits])
                .ok()
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&n| n <= rest.len())
                .ok_or_else(|| bad("gives a length past the header's data"))?;
            let key_at = lead
                + digits
                + rest[lead + digits..]
                    .iter()
                    .take_while(|b| blank(b))
                    .count();
            if key_at == lead + digits {
                return Err(bad("has no blank after its length"));
            }
            // GNU tar looks for the `=` as a C string, up to a NUL.
            let eq = rest[..len]
                .get(key_at..)
                .and_then(|r| r.iter().take_while(|&&b| b != 0).position(|&b| b == b'='))
                .map(|p| key_at + p)
                .ok_or_else(|| bad("has no '=' within its length"))?;
            if rest[len - 1] != b'\n' {
                return Err(bad("does not end in a newline"));
            }
            let (key, value) = (&rest[key_at..eq], &rest[eq + 1..len - 1]);
            match key {
                b"path" => self.path = Some(value.to_vec()),
                b"linkpath" => self.link = Some(value.to_vec()),
                b"size" => {
                    let n = std::str::from_utf8(value)
                        .ok()
                        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| bad("gives a size that is not a decimal number"))?;
                    self.size = Some(n);
                }
                _ => {}
            }
            at += len;
        }
    }
}

/// Why a pax header's records cannot be read: which record, where, and
/// why.
#[derive(Debug)]
struct PaxError {
    /// The record, counted from 1.
    record: usize,
    /// Where it starts in the header's data.
    at: usize,
    /// The size of the header's data.
    len: usize,
    /// What is wrong with it.
    why: &'static str,
}

impl std::fmt::Display for PaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let PaxError {
            record,
            at,
            len,
            why,
        } = self;
        write!(f, "record {record} (at byte {at} of {len}) {why}")
    }
}

/// `bytes` up to their first NUL.
fn c_string(bytes: &[u8]) -> &[u8] {
    bytes
        .iter()
        .position(|&b| b == 0)
        .map_or(bytes, |n| &bytes[..n])
}

/// `path` without its leading `./` and `/`, as `md5sums` names files.
pub(crate) fn normalized(mut path: &[u8]) -> &[u8] {
    loop {
        if let Some(rest) = path.strip_prefix(b"./") {
            path = rest;
        } else if let Some(rest) = path.strip_prefix(b"/") {
            path = rest;
        } else {
            return path;
        }
    }
}

/// Whether the POSIX header `block` puts a prefix before its name.
fn has_prefix(block: &[u8; BLOCK]) -> bool {
    &block[257..263] == b"ustar\0" && !c_string(&block[345..500]).is_empty()
}

/// A header's own path: the name, after the prefix in a POSIX header.
fn ustar_name(block: &[u8; BLOCK]) -> Vec<u8> {
    let name = c_string(&block[..100]);
    let prefix = c_string(&block[345..500]);
    // GNU headers keep times where POSIX ones keep the prefix.
    if has_prefix(block) {
        let mut p = prefix.to_vec();
        p.push(b'/');
        p.extend_from_slice(name);
        return p;
    }
    name.to_vec()
}

/// The value of a numeric field: octal digits (leading spaces, then up to
/// a NUL or space), or GNU base-256 (byte 0 `0x80`, big-endian); `None`
/// for anything else or a value past 2^64.
fn number(field: &[u8]) -> Option<u64> {
    if field.first() == Some(&0x80) {
        let rest = &field[1..];
        let cut = rest.len().saturating_sub(8);
        if rest[..cut].iter().any(|&b| b != 0) {
            return None;
        }
        return Some(rest[cut..].iter().fold(0, |n, &b| (n << 8) | u64::from(b)));
    }
    let digits: &[u8] = {
        let start = field.iter().position(|&b| b != b' ').unwrap_or(field.len());
        let f = &field[start..];
        let end = f
            .iter()
            .position(|&b| b == 0 || b == b' ')
            .unwrap_or(f.len());
        &f[..end]
    };
    if digits.is_empty() {
        return Some(0);
    }
    let text = std::str::from_utf8(digits).ok()?;
    u64::from_str_radix(text, 8).ok()
}

/// A header's size field.
fn field_size(block: &[u8; BLOCK]) -> Option<u64> {
    number(&block[SIZE])
}

/// Where the octal digits of `field` lie, after its leading spaces.
pub(crate) fn digits(field: &[u8]) -> std::ops::Range<usize> {
    let start = field.iter().position(|&b| b != b' ').unwrap_or(field.len());
    let len = field[start..]
        .iter()
        .position(|b| !(b'0'..=b'7').contains(b))
        .unwrap_or(field.len() - start);
    start..start + len
}

/// Writes `n` in octal into `field[range]`, zero-padded; `false` if it
/// does not fit.
fn put_octal(field: &mut [u8], range: std::ops::Range<usize>, n: u64) -> bool {
    let text = format!("{n:0width$o}", width = range.len());
    if range.is_empty() || text.len() > range.len() {
        return false;
    }
    field[range].copy_from_slice(text.as_bytes());
    true
}

/// Sets the size field of `block` to `n`, in the field's own form where
/// it fits (as many octal digits, the same terminator), else as GNU tar
/// writes it: 11 octal digits and a NUL, or base-256 past 8 GiB.
pub(crate) fn set_size(block: &mut [u8; BLOCK], n: u64) {
    let field = &mut block[SIZE];
    let range = digits(field);
    if field[0] & 0x80 == 0 && put_octal(field, range, n) {
        return;
    }
    if n < 1 << 33 {
        field.copy_from_slice(format!("{n:011o}\0").as_bytes());
    } else {
        field.fill(0);
        field[0] = 0x80;
        field[4..].copy_from_slice(&n.to_be_bytes());
    }
}

/// The sum of `block`'s bytes, the checksum field counted as spaces.
fn sum(block: &[u8; BLOCK]) -> (u64, i64) {
    block
        .iter()
        .enumerate()
        .map(|(i, &b)| if CHECKSUM.contains(&i) { b' ' } else { b })
        .fold((0, 0), |(u, s), b| {
            // Old tars summed the bytes as signed chars.
            (u + u64::from(b), s + i64::from(b.cast_signed()))
        })
}

/// Whether `block`'s checksum field matches its bytes (summed unsigned,
/// or signed as some old tars did).
fn checksum_matches(block: &[u8; BLOCK]) -> bool {
    let Some(stored) = number(&block[CHECKSUM]) else {
        return false;
    };
    let (unsigned, signed) = sum(block);
    stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed)
}

/// Whether `block` (at least 512 bytes) is a tar header: POSIX `ustar` or
/// GNU magic, and a header checksum that adds up. Stricter than the
/// reader's own check: the field must hold octal digits alone (NULs and
/// spaces around them), and the bytes summed unsigned.
pub(crate) fn is_header(block: &[u8]) -> bool {
    let Some(block) = block.first_chunk::<BLOCK>() else {
        return false;
    };
    if &block[257..262] != b"ustar" {
        return false;
    }
    let stored = std::str::from_utf8(&block[CHECKSUM])
        .ok()
        .map(|s| s.trim_matches(|c: char| c == '\0' || c == ' '))
        .and_then(|s| u32::from_str_radix(s, 8).ok());
    // The checksum counts its own field as eight spaces.
    let (unsigned, _) = sum(block);
    stored.map(u64::from) == Some(unsigned)
}

/// Sets `block`'s checksum field to match its bytes, in the field's own
/// form where it fits (GNU tar writes six digits, a NUL and a space).
pub(crate) fn set_checksum(block: &mut [u8; BLOCK]) {
    let (n, _) = sum(block);
    let field = &mut block[CHECKSUM];
    let range = digits(field);
    if range.len() >= 6 && put_octal(field, range, n) {
        return;
    }
    field.copy_from_slice(format!("{n:06o}\0 ").as_bytes());
}

#[cfg(feature = "files")]
pub(crate) mod fan;
#[cfg(feature = "files")]
pub(crate) mod walk;

#[cfg(test)]
pub(crate) mod tests;
