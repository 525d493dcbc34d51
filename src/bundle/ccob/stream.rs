//! Reading a CCOB's contents as a stream: only as far as needed (the
//! bundle header, to list a bomb without inflating it; the end of a version
//! 1 zlib stream), or chunk by chunk into writers, in constant memory
//! ([`Ccob::stream_to`]).

use std::io::{Read, Seek, SeekFrom, Write};

use md5::{Digest, Md5};

use super::Fault;
use super::header::*;
use super::raw::*;
use super::read::{Ccob, HashCheck, ReadOptions};
use crate::bytes::le;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, usize_from};

/// The largest bundle header [`Ccob::bundle_records`] decompresses.
pub const MAX_BUNDLE_HEADER: u64 = 1 << 20;

fn stream_error(what: &'static str, e: &std::io::Error) -> Error {
    ErrorKind::Decompress {
        what,
        detail: e.to_string(),
    }
    .into()
}

impl Ccob<'_> {
    /// The records of the binary bundle this CCOB holds, in file order,
    /// decompressing only as far as the bundle header (at most
    /// 1 MiB of it); `None` when the contents are not
    /// a binary bundle. The stored hash is not checked.
    pub fn bundle_records(&self) -> Result<Option<Vec<crate::bundle::binary::Record>>> {
        use crate::bundle::binary::{Prefix, read_prefix};
        use std::io::Read;
        let total = self.header.uncompressed_size;
        let (what, mut dec): (&'static str, Box<dyn Read + '_>) =
            if self.header.method == Method::ZSTD {
                let d = zstd::stream::read::Decoder::with_buffer(self.payload)
                    .map_err(|e| stream_error("zstd data", &e))?;
                ("zstd data", Box::new(d))
            } else {
                (
                    "zlib data",
                    Box::new(flate2::read::ZlibDecoder::new(self.payload)),
                )
            };
        let mut buf = Vec::new();
        let mut want = 32u64.min(total);
        loop {
            let have = len64(&buf);
            if want > have {
                (&mut dec)
                    .take(want - have)
                    .read_to_end(&mut buf)
                    .map_err(|e| stream_error(what, &e))?;
            }
            match read_prefix(&buf, total)? {
                Prefix::Records(r) => return Ok(Some(r)),
                Prefix::NotBinary => return Ok(None),
                Prefix::Need(n) => {
                    if len64(&buf) < want || n > total {
                        return Err(Error::invalid(
                            "compressed bundle",
                            format!(
                                "the contents end after {} bytes, inside the bundle header",
                                buf.len()
                            ),
                        ));
                    }
                    if n > MAX_BUNDLE_HEADER {
                        return Err(ErrorKind::LimitExceeded {
                            what: "bundle header in a compressed bundle".into(),
                            limit: MAX_BUNDLE_HEADER,
                        }
                        .into());
                    }
                    want = n
                        .max(want.saturating_mul(2))
                        .min(total)
                        .min(MAX_BUNDLE_HEADER);
                }
            }
        }
    }

    /// For a version 1 zlib CCOB, which has no total size: ends the payload
    /// (and the CCOB) where its zlib stream ends, inflating into a scratch
    /// buffer and producing at most `limit` bytes. Other CCOBs are left as
    /// they are.
    pub(crate) fn end_v1_zlib_stream(&mut self, limit: u64) -> Result<()> {
        if self.header.version != 1 || self.header.method != Method::ZLIB {
            return Ok(());
        }
        let mut z = flate2::Decompress::new(true);
        let mut scratch = vec![0u8; 64 << 10];
        loop {
            let rest = self
                .payload
                .get(usize_from(z.total_in())..)
                .unwrap_or_default();
            let before = (z.total_in(), z.total_out());
            let status = z
                .decompress(rest, &mut scratch, flate2::FlushDecompress::None)
                .map_err(|e| ErrorKind::Decompress {
                    what: "zlib data",
                    detail: e.to_string(),
                })?;
            if status == flate2::Status::StreamEnd {
                let n = z.total_in();
                self.payload = &self.payload[..usize_from(n)];
                self.size = self.header.size() + n;
                return Ok(());
            }
            if z.total_out() > limit {
                return Err(ErrorKind::LimitExceeded {
                    what: "zlib data".into(),
                    limit,
                }
                .into());
            }
            if (z.total_in(), z.total_out()) == before {
                return Err(ErrorKind::Decompress {
                    what: "zlib data",
                    detail: "the stream ends early".into(),
                }
                .into());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Streaming the contents to writers

/// How far [`Ccob::stream_to`] decompresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamEnd {
    /// Stop after the last wanted byte when the hash is not wanted and the
    /// payload is zstd frames whose content sizes (in their headers) add up
    /// to the declared size; otherwise to the end.
    #[default]
    LastWanted,
    /// Always to the end, so that every error in the payload is found.
    Whole,
}

/// One wanted range of a CCOB's contents (or of other decompressed data
/// the scanner streams) and where it goes.
pub struct Wanted<'w> {
    /// The bytes of the uncompressed bundle to write.
    pub range: std::ops::Range<u64>,
    /// Where they go.
    pub out: &'w mut dyn Write,
}

/// What [`Ccob::stream_to`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streamed {
    /// The CCOB's header.
    pub header: Header,
    /// Size of the compressed data.
    pub compressed_size: u64,
    /// Bytes decompressed (the declared size when it went to the end).
    pub decompressed: u64,
    /// The truncated MD5 of the contents, unless [`HashCheck::Skip`].
    pub computed_hash: Option<u64>,
}

impl Streamed {
    /// Whether the stored hash matches, if it was computed.
    pub fn hash_matches(&self) -> Option<bool> {
        self.computed_hash.map(|h| h == self.header.hash)
    }
}

/// Bytes decompressed at a time.
const CHUNK: usize = 2 << 20;

/// Largest declared size for which a failing stream's fault is named by
/// LLVM's whole-buffer call (see `Ccob::name_fault`): 256 MiB.
pub const NAME_FAULT_IN_MEMORY: u64 = 256 << 20;

/// Chunks in flight while another thread hashes them.
const CHUNKS_HASHED: usize = 4;

/// The sum of the content sizes the zstd frames of a payload of `len`
/// bytes (read from `r`, whose positions count from the payload's start)
/// declare in their headers, if every frame declares one and they end
/// exactly at the end of the payload; skippable frames count 0. Only the
/// frame and block headers are read (RFC 8878 §3.1), nothing is decoded,
/// and a damaged header gives `None`.
pub(super) fn zstd_frames_content_size<R: Read + Seek>(r: &mut R, len: u64) -> Option<u64> {
    let mut sum = 0u64;
    walk_zstd_frames(r, len, &mut |f| {
        sum = sum.checked_add(f.size)?;
        Some(())
    })?;
    Some(sum)
}

/// One zstd frame of a payload, from its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameSpan {
    /// Where it starts in the payload.
    pub(super) at: u64,
    /// Its compressed bytes (header, blocks and checksum).
    pub(super) len: u64,
    /// The content size its header declares.
    pub(super) size: u64,
}

/// Walks the zstd frames of a payload of `len` bytes (read from `r`,
/// positions counting from the payload's start), handing each frame
/// (skippable frames left out) to `each`, which stops the walk with
/// `None`. `Some` only if every frame declares its content size and the
/// frames end exactly at the end of a non-empty payload. Only the frame
/// and block headers are read (RFC 8878 §3.1), nothing is decoded.
pub(super) fn walk_zstd_frames<R: Read + Seek>(
    r: &mut R,
    len: u64,
    each: &mut dyn FnMut(FrameSpan) -> Option<()>,
) -> Option<()> {
    const FRAME_MAGIC: u32 = 0xFD2F_B528;
    const SKIPPABLE_MAGIC: u32 = 0x184D_2A50; // the low 4 bits vary
    let mut read_at = |at: u64, buf: &mut [u8]| -> Option<()> {
        r.seek(SeekFrom::Start(at)).ok()?;
        r.read_exact(buf).ok()
    };
    let mut at = 0u64;
    while at < len {
        let mut word = [0u8; 4];
        read_at(at, &mut word)?;
        let magic = le::<u32>(word);
        if magic & !0xF == SKIPPABLE_MAGIC {
            read_at(at + 4, &mut word)?;
            at = at.checked_add(8 + u64::from(le::<u32>(word)))?;
            continue;
        }
        if magic != FRAME_MAGIC {
            return None;
        }
        // The frame header descriptor: content size flag (bits 7-6),
        // single segment (5), reserved (3), checksum (2), dictionary ID
        // size (1-0).
        let mut fhd = [0u8; 1];
        read_at(at + 4, &mut fhd)?;
        let fhd = fhd[0];
        if fhd & 0x08 != 0 {
            return None;
        }
        let single = fhd & 0x20 != 0;
        let window_descriptor = u64::from(!single);
        let dict_id = [0u64, 1, 2, 4][usize::from(fhd & 3)];
        let fcs_size: usize = match fhd >> 6 {
            0 if single => 1,
            0 => return None, // no content size
            1 => 2,
            2 => 4,
            _ => 8,
        };
        let fcs_at = at + 5 + window_descriptor + dict_id;
        let mut fcs = [0u8; 8];
        read_at(fcs_at, &mut fcs[..fcs_size])?;
        let mut size = le::<u64>(fcs);
        if fcs_size == 2 {
            size += 256;
        }
        // Blocks: a 3-byte header (last flag, type, size), then the body
        // (raw and compressed: size bytes; RLE: one byte).
        let mut block = fcs_at + fcs_size as u64;
        loop {
            let mut bh = [0u8; 4];
            read_at(block, &mut bh[..3])?;
            let h = le::<u32>(bh);
            let body = match (h >> 1) & 3 {
                0 | 2 => u64::from(h >> 3),
                1 => 1,
                _ => return None,
            };
            block = block.checked_add(3 + body)?;
            if h & 1 != 0 {
                break;
            }
        }
        if fhd & 0x04 != 0 {
            block += 4; // the checksum
        }
        if block > len {
            return None;
        }
        each(FrameSpan {
            at,
            len: block - at,
            size,
        })?;
        at = block;
    }
    (at == len && len > 0).then_some(())
}

/// The end of the last non-empty wanted range (0 if none).
pub(super) fn last_wanted(wanted: &[Wanted<'_>]) -> u64 {
    wanted
        .iter()
        .filter(|w| !w.range.is_empty())
        .map(|w| w.range.end)
        .max()
        .unwrap_or(0)
}

/// Writes the parts of `chunk`, the bytes of the contents from offset
/// `at` on, that the `wanted` ranges take, each to its writer.
pub(crate) fn write_wanted(
    wanted: &mut [Wanted<'_>],
    at: u64,
    chunk: &[u8],
) -> std::io::Result<()> {
    let end = at + len64(chunk);
    for w in wanted.iter_mut() {
        let from = w.range.start.max(at);
        let to = w.range.end.min(end);
        if from < to {
            w.out
                .write_all(&chunk[usize_from(from - at)..usize_from(to - at)])?;
        }
    }
    Ok(())
}

/// Why the stream stopped short of a clean end.
pub(super) enum Irregular {
    /// The decoder failed (or the data ended early, or went on too long):
    /// the whole-buffer decoder then names the fault as LLVM would.
    Data(String),
    /// Writing an output failed.
    Write(std::io::Error),
}

impl Ccob<'_> {
    /// Decompresses the contents as a stream and writes each [`Wanted`]
    /// range to its writer as the bytes come (ranges may overlap, and come
    /// in any order). Memory stays at the decoder's window (zstd: the
    /// frame's, 128 MiB for LLVM's; zlib: 32 KiB) plus a few fixed buffers,
    /// whatever the size.
    ///
    /// With `end` = [`StreamEnd::LastWanted`] and [`HashCheck::Skip`],
    /// decompression stops after the last wanted byte when the zstd frame
    /// headers confirm the declared size; bytes after it are not checked
    /// (LLVM would find a corrupt block there). Otherwise every byte is
    /// decompressed (and hashed, on another thread, when asked), and the
    /// result must be exactly the declared size, as in [`Ccob::decompress`].
    ///
    /// Errors are those of [`Ccob::decompress`], with the same
    /// [`Fault::llvm_message`]: when the stream fails, the payload is
    /// decompressed again the whole-buffer way (within `opts.limits`) to
    /// name the fault as LLVM does. Some bytes may have been written when
    /// an error is returned; the caller discards its outputs.
    pub fn stream_to(
        &self,
        wanted: &mut [Wanted<'_>],
        opts: &ReadOptions,
        end: StreamEnd,
    ) -> Result<Streamed> {
        self.stream_from(std::io::Cursor::new(self.payload), wanted, opts, end)
    }

    /// [`Ccob::stream_to`] reading the compressed data from `payload`
    /// instead of the slice: the same bytes (say, read from the file whose
    /// mapping the CCOB was parsed from, so that the pages read need not
    /// stay in memory), positions counting from the payload's start. Only
    /// the payload's length is read. The slice itself is read again only to
    /// name a fault.
    pub fn stream_from<R: Read + Seek>(
        &self,
        payload: R,
        wanted: &mut [Wanted<'_>],
        opts: &ReadOptions,
        end: StreamEnd,
    ) -> Result<Streamed> {
        self.check_stream(wanted, opts)?;
        self.stream_serial(payload, wanted, opts, end, true)
    }

    /// What every stream checks first: the declared size against the
    /// limit and against what the payload can produce, the wanted ranges
    /// against the declared size.
    pub(super) fn check_stream(&self, wanted: &[Wanted<'_>], opts: &ReadOptions) -> Result<()> {
        let declared = self.header.uncompressed_size;
        let limit = opts.limits.max_uncompressed();
        if declared > limit {
            return Err(Fault::TooLarge { declared, limit }.at(0));
        }
        self.check_declared_size()?;
        if let Some(w) = wanted.iter().find(|w| w.range.end > declared) {
            return Err(Error::invalid(
                "wanted range",
                format!(
                    "{}..{} is past the end of the {declared} bytes the compressed bundle holds",
                    w.range.start, w.range.end
                ),
            ));
        }
        Ok(())
    }

    /// The stream on this thread, the MD5 (when asked for) on another one
    /// if `hash_thread`, else on this one too. [`Ccob::check_stream`] has
    /// passed.
    pub(super) fn stream_serial<R: Read + Seek>(
        &self,
        mut payload: R,
        wanted: &mut [Wanted<'_>],
        opts: &ReadOptions,
        end: StreamEnd,
        hash_thread: bool,
    ) -> Result<Streamed> {
        let h = self.header;
        let declared = h.uncompressed_size;
        let last = last_wanted(wanted);
        let stop = (opts.hash == HashCheck::Skip
            && end == StreamEnd::LastWanted
            && h.method == Method::ZSTD
            && zstd_frames_content_size(&mut payload, len64(self.payload)) == Some(declared))
        .then_some(last);
        if payload.seek(SeekFrom::Start(0)).is_err() {
            return Err(self.name_fault(opts, "cannot read the compressed data".into()));
        }
        let payload = payload.take(len64(self.payload));
        let run = if opts.hash == HashCheck::Skip {
            self.pump(payload, wanted, stop, &mut |b, _| b)
                .map(|n| (n, None))
        } else if hash_thread {
            pump_hashing(self, payload, wanted)
        } else {
            let mut md5 = Md5::new();
            let run = self.pump(payload, wanted, None, &mut |b, n| {
                md5.update(&b[..n]);
                b
            });
            run.map(|n| (n, Some(truncated(md5))))
        };
        self.end_stream(opts, run)
    }

    /// The outcome of a stream that ran: errors named, the hash checked.
    pub(super) fn end_stream(
        &self,
        opts: &ReadOptions,
        run: Result<(u64, Option<u64>), Irregular>,
    ) -> Result<Streamed> {
        let h = self.header;
        let (decompressed, computed_hash) = match run {
            Ok(r) => r,
            Err(Irregular::Write(e)) => return Err(e.into()),
            Err(Irregular::Data(detail)) => return Err(self.name_fault(opts, detail)),
        };
        if opts.hash == HashCheck::Enforce && computed_hash != Some(h.hash) {
            return Err(Fault::HashMismatch {
                stored: h.hash,
                computed: computed_hash.unwrap_or_default(),
            }
            .at(0));
        }
        Ok(Streamed {
            header: h,
            compressed_size: len64(self.payload),
            decompressed,
            computed_hash,
        })
    }

    /// The fault LLVM's whole-buffer call reports for a payload whose
    /// stream failed with `detail`: that call is made again, into a buffer
    /// of the declared size, when the declared size is at most
    /// [`NAME_FAULT_IN_MEMORY`]; a larger one is named from the stream
    /// (`detail`), so that a failing stream never needs its contents in
    /// memory.
    pub(super) fn name_fault(&self, opts: &ReadOptions, detail: String) -> Error {
        let lenient = ReadOptions {
            hash: HashCheck::Skip,
            ..*opts
        };
        let limit = opts.limits.max_uncompressed().min(NAME_FAULT_IN_MEMORY);
        let whole = (self.header.uncompressed_size <= limit)
            .then(|| super::read::decompress_ccob(self, &lenient, limit));
        match whole {
            Some(Err(f)) => f.at(0),
            // Too large to decode whole, or the one-shot decoder took what
            // the stream refused: the stream's own words.
            None | Some(Ok(_)) => Fault::Decompress {
                method: self.header.method,
                llvm: detail.clone(),
                detail,
            }
            .at(0),
        }
    }

    /// Decodes into chunks, writes the wanted parts of each and hands it to
    /// `seen`; stops after byte `stop` if given, else checks the end.
    /// Returns the bytes decoded.
    fn pump<R: Read>(
        &self,
        payload: R,
        wanted: &mut [Wanted<'_>],
        stop: Option<u64>,
        seen: &mut dyn FnMut(Vec<u8>, usize) -> Vec<u8>,
    ) -> Result<u64, Irregular> {
        let declared = self.header.uncompressed_size;
        let mut buf = vec![0u8; CHUNK];
        // zstd: frames one after another, with any window LLVM's one-shot
        // call accepts (no frame at all is no data, as for that call).
        // zlib: one stream, which must end, and end the payload.
        let mut zlib_dec = None;
        let mut zstd_dec;
        let mut nothing = std::io::empty();
        let dec: &mut dyn Read = if self.header.method == Method::ZLIB {
            check_zlib_start(self.payload, declared)?;
            zlib_dec.insert(ZlibStream::new(payload))
        } else if self.payload.is_empty() {
            &mut nothing
        } else {
            let data = |e: std::io::Error| Irregular::Data(e.to_string());
            zstd_dec = zstd::stream::read::Decoder::new(payload).map_err(data)?;
            zstd_dec.window_log_max(31).map_err(data)?;
            &mut zstd_dec
        };
        // One byte past the declared size is read to catch data that
        // inflates further.
        let goal = stop.unwrap_or(declared.saturating_add(1));
        let mut at = 0u64;
        while at < goal {
            let room = usize::try_from(goal - at).unwrap_or(usize::MAX).min(CHUNK);
            let n = fill(dec, &mut buf[..room]).map_err(|e| Irregular::Data(e.to_string()))?;
            if n == 0 {
                break;
            }
            let end = at + len64(&buf[..n]);
            if end > declared {
                return Err(Irregular::Data("more data than declared".into()));
            }
            write_wanted(wanted, at, &buf[..n]).map_err(Irregular::Write)?;
            buf = seen(buf, n);
            if buf.len() < CHUNK {
                buf.resize(CHUNK, 0);
            }
            at = end;
        }
        match stop {
            Some(s) if at == s => {}
            Some(_) => return Err(Irregular::Data("the data ends early".into())),
            None if at != declared => return Err(Irregular::Data("size mismatch".into())),
            None => {
                if zlib_dec.is_some_and(|d| !d.ended || d.z.total_in() != len64(self.payload)) {
                    return Err(Irregular::Data("bytes after the zlib stream".into()));
                }
            }
        }
        Ok(at)
    }
}

/// [`Ccob::pump`] to the end, hashing the chunks on another thread.
fn pump_hashing<R: Read>(
    ccob: &Ccob<'_>,
    payload: R,
    wanted: &mut [Wanted<'_>],
) -> Result<(u64, Option<u64>), Irregular> {
    use std::sync::mpsc;
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(CHUNKS_HASHED);
        let (empty_tx, empty_rx) = mpsc::sync_channel::<Vec<u8>>(CHUNKS_HASHED);
        let hasher = scope.spawn(move || {
            let mut md5 = Md5::new();
            for (chunk, n) in full_rx {
                md5.update(&chunk[..n]);
                // The pump may have stopped; then the buffer is dropped.
                let _ = empty_tx.try_send(chunk);
            }
            truncated(md5)
        });
        let mut spare = CHUNKS_HASHED;
        let mut seen = |chunk: Vec<u8>, n: usize| -> Vec<u8> {
            if full_tx.send((chunk, n)).is_err() {
                return Vec::new();
            }
            if spare > 0 {
                spare -= 1;
                return vec![0; CHUNK];
            }
            empty_rx.recv().unwrap_or_default()
        };
        let n = ccob.pump(payload, wanted, None, &mut seen);
        drop(full_tx);
        let hash = hasher
            .join()
            .map_err(|_| Irregular::Data("the hashing thread failed".into()))?;
        n.map(|n| (n, Some(hash)))
    })
}

/// Checks the start of a zlib stream as zlib's `uncompress` (LLVM's call)
/// reads it: its first 32 KiB of output decoded into a buffer that does
/// not wrap, so that a match reaching back before the first byte ("invalid
/// distance too far back") is an error. The streaming decoder keeps a
/// wrapping 32 KiB window and would read such a match as zeros; past the
/// first 32 KiB no match can reach back that far.
fn check_zlib_start(payload: &[u8], declared: u64) -> Result<(), Irregular> {
    const WINDOW: u64 = 32 << 10;
    // One match more than the window: whatever starts inside it is checked.
    let room = declared.min(WINDOW + 258);
    let mut out = Vec::with_capacity(usize_from(room));
    flate2::Decompress::new(true)
        .decompress_vec(payload, &mut out, flate2::FlushDecompress::Finish)
        .map(|_| ())
        .map_err(|e| Irregular::Data(format!("corrupt data ({e})")))
}

/// A zlib stream as a reader, which fails when its input ends before the
/// stream does (and records whether it ended).
struct ZlibStream<R> {
    input: std::io::BufReader<R>,
    z: flate2::Decompress,
    ended: bool,
}

impl<R: Read> ZlibStream<R> {
    fn new(input: R) -> Self {
        ZlibStream {
            input: std::io::BufReader::with_capacity(64 << 10, input),
            z: flate2::Decompress::new(true),
            ended: false,
        }
    }
}

impl<R: Read> Read for ZlibStream<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::BufRead;
        while !self.ended && !buf.is_empty() {
            let input = self.input.fill_buf()?;
            let (in0, out0) = (self.z.total_in(), self.z.total_out());
            let status = self
                .z
                .decompress(input, buf, flate2::FlushDecompress::None)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            let used = usize::try_from(self.z.total_in() - in0).unwrap_or(usize::MAX);
            let made = usize::try_from(self.z.total_out() - out0).unwrap_or(usize::MAX);
            let at_end = input.is_empty();
            self.input.consume(used);
            self.ended = status == flate2::Status::StreamEnd;
            if made > 0 {
                return Ok(made);
            }
            if at_end && !self.ended {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if used == 0 && !self.ended {
                // Input and room, and no progress: never loop on it.
                return Err(std::io::ErrorKind::InvalidData.into());
            }
        }
        Ok(0)
    }
}

/// Reads into `buf` until it is full or the reader ends; the bytes read.
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
