//! Writing the compressed bundle (CCOB) of a bundle layout to a file, for
//! both bundler front ends, in memory that does not grow with the bundle.
//!
//! On one thread with zstd (LLVM's bytes): LLVM makes one `ZSTD_compress2`
//! call on the whole uncompressed bundle, and so do we, on the same bytes
//! in one buffer, which is the only way to get the same frame (zstd's
//! streaming calls copy their input into a window buffer of their own,
//! and past 128 MiB they find other matches; a stable input buffer, the
//! streaming mode that would not, is one the zstd-safe crate refuses to
//! set, as its safe API cannot keep the buffer borrowed between calls).
//! So the uncompressed bundle is written to an unlinked temporary file
//! beside the output (entries copied file to file), mapped, and compressed
//! straight into the output's temporary file, mapped as long as zstd's
//! bound (its blocks reserved first, so that a full disk is an error, not
//! a SIGBUS) and cut to the CCOB's size afterwards. `ZSTD_compress2` says
//! nothing of its progress until it returns, so a helper thread gives back
//! the resident pages of both mappings every 50 ms
//! ([`Input::with_mapped_output`]): memory is what zstd touched in that
//! time (its window only where it reads it) and its tables, not the
//! bundle. The hash is computed on a third thread from the temporary file
//! with positional reads, never through the mapping.
//!
//! With worker threads, or zlib, the pieces are compressed where they lie
//! ([`ccob::compress_pieces`]), each stretch of a mapped input given back
//! once it is compressed and hashed.
//!
//! An output that cannot be mapped or seeked (standard output, a device, a
//! FIFO) gets the CCOB through a temporary file in the system's temporary
//! directory, copied out at the end.
//!
//! Reading, a CCOB holding a binary bundle is unbundled as a stream
//! ([`streamable`], [`stream_input`], [`stream_to_files`]): the bundle
//! header first, then the contents once, each wanted entry written to its
//! file as it comes, the files renamed into place by the caller once the
//! stream has ended well.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::path::Path;

use crate::bundle::binary::Record;
use crate::bundle::ccob::{
    self, BundleHasher, Ccob, CompressOptions, CompressReport, Method, ReadOptions, StreamEnd,
    Streamed, Wanted,
};
use crate::bundle::{Format, SNIFF_LEN, ops};
use crate::files::{Input, Noting, Output, copy_file_range_all};
use crate::layout::Layout;

/// Why [`write_ccob`] failed.
#[derive(Debug)]
pub enum Failure {
    /// The compressor refused or failed (LLVM's message, where it has
    /// one, through [`ccob::llvm_message`]).
    Ccob(crate::Error),
    /// A file (named) could not be created, read or written.
    File(String, io::Error),
}

/// The I/O error inside a library error, if that is what it is.
fn io_error(e: &crate::Error) -> Option<io::Error> {
    let crate::ErrorKind::Io(io) = e.kind() else {
        return None;
    };
    Some(match io.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(io.kind(), io.to_string()),
    })
}

/// A library error while writing `path`: the file's when it is an I/O
/// error, the compressor's otherwise.
fn failed_writing(path: &str, e: crate::Error) -> Failure {
    match io_error(&e) {
        Some(io) => Failure::File(path.to_string(), io),
        None => Failure::Ccob(e),
    }
}

/// Writes the CCOB of `layout` (payload `i` being all of `inputs[i]`,
/// named `names[i]`) to `out_path`, atomically, and returns what LLVM's
/// verbose mode reports.
pub fn write_ccob(
    out_path: &str,
    layout: &Layout,
    inputs: &[Input],
    names: &[String],
    opts: &CompressOptions,
) -> Result<CompressReport, Failure> {
    let file = |p: &str| {
        let p = p.to_string();
        move |e| Failure::File(p, e)
    };
    // What cannot be written at all fails first, as in LLVM, which
    // compresses before it creates the output.
    let bound = ccob::compressed_bound(layout.size, opts).map_err(Failure::Ccob)?;
    let mut out = Output::create(Path::new(out_path)).map_err(file(out_path))?;
    let mapped = out.temp_file().is_some();
    // The system's temporary directory serves outputs that are not files
    // (messages name the output and that directory).
    let spool_dir = std::env::temp_dir();
    let spooled = format!("{out_path}' through '{}", spool_dir.display());
    let spool = || tempfile::tempfile_in(&spool_dir).map_err(file(&spooled));
    let report = if opts.method == Method::ZSTD && opts.threads == 0 {
        // The uncompressed bundle goes beside the output (a file with no
        // name in its directory, through the output's handle on it), and
        // errors name the output, whose disk it fills.
        let bundle = match out.scratch_file() {
            Some(f) => write_bundle(f.map_err(file(out_path))?, out_path, layout, inputs, names)?,
            None => write_bundle(spool()?, &spooled, layout, inputs, names)?,
        };
        match out.temp_file() {
            Some(f) => compress_to(&bundle, f, bound, opts, out_path)?,
            None => {
                let spool = spool()?;
                let report = compress_to(&bundle, &spool, bound, opts, &spooled)?;
                copy_out(&spool, &mut out).map_err(file(out_path))?;
                report
            }
        }
    } else {
        let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
        let pieces = ops::pieces(layout, &views).ok_or_else(|| {
            Failure::File(
                out_path.to_string(),
                io::Error::other("internal error: the layout refers to a missing input"),
            )
        })?;
        let release = |s: &[u8]| inputs.iter().for_each(|i| i.release(s));
        if mapped {
            ccob::compress_pieces(&pieces, opts, &mut out, &release)
                .map_err(|e| failed_writing(out_path, e))?
        } else {
            let mut spool = spool()?;
            let report = ccob::compress_pieces(&pieces, opts, &mut spool, &release)
                .map_err(|e| failed_writing(&spooled, e))?;
            copy_out(&spool, &mut out).map_err(file(out_path))?;
            report
        }
    };
    out.commit().map_err(file(out_path))?;
    Ok(report)
}

/// Writes the uncompressed bundle of `layout` to `file` (new, unlinked;
/// named `shown` in messages: the output it serves) and maps it. Entries
/// from files are copied file to file; smaller ones, written from their
/// mappings, are given back at once.
fn write_bundle(
    file: File,
    shown: &str,
    layout: &Layout,
    inputs: &[Input],
    names: &[String],
) -> Result<Input, Failure> {
    let failed = |e: io::Error| Failure::File(shown.to_string(), e);
    let mut tmp = io::BufWriter::with_capacity(1 << 16, file);
    // An entry that cannot be copied fails with its own name; the loop's
    // own writes, with the temporary file's.
    let mut entry_failed = None;
    let written = layout.write_each(&mut tmp, |tmp, i| {
        let (Some(input), Some(name)) = (inputs.get(i), names.get(i)) else {
            return Err(io::Error::other(
                "internal error: the layout refers to a missing input",
            ));
        };
        let bytes = input.bytes();
        let copied = match (input.file(), input.file_offset(bytes)) {
            (Some(src), Some(off)) => tmp
                .flush()
                .and_then(|()| copy_file_range_all(src, off, bytes.len() as u64, tmp.get_mut())),
            _ => {
                let r = tmp.write_all(bytes);
                input.release(bytes);
                r
            }
        };
        // The input or the temporary file: the message tells which.
        copied.map_err(|e| {
            entry_failed = Some(Failure::File(
                format!("{name}' -> '{shown}"),
                io::Error::new(e.kind(), format!("copying the entry: {e}")),
            ));
            e
        })
    });
    if let Err(e) = written {
        return Err(entry_failed.unwrap_or_else(|| failed(e)));
    }
    let tmp = tmp
        .into_inner()
        .map_err(|e| Failure::File(shown.to_string(), e.into_error()))?;
    Input::from_temp_file(tmp).map_err(|e| Failure::File(shown.to_string(), e))
}

/// Compresses the mapped uncompressed `bundle` into `out` (a file named
/// `shown` in messages), LLVM's one zstd call from buffer to buffer, both
/// mapped, `out` made `bound` bytes long for it and cut to the CCOB after.
fn compress_to(
    bundle: &Input,
    out: &File,
    bound: u64,
    opts: &CompressOptions,
    shown: &str,
) -> Result<CompressReport, Failure> {
    let file = |e| Failure::File(shown.to_string(), e);
    out.set_len(bound).map_err(file)?;
    // A write through the mapping that finds the disk full is a SIGBUS,
    // not an error: the blocks are reserved first. A file system without
    // fallocate is written anyway (tmpfs and the usual disk ones have it).
    match rustix::fs::fallocate(out, rustix::fs::FallocateFlags::empty(), 0, bound) {
        Err(e) if e != rustix::io::Errno::OPNOTSUPP => return Err(file(e.into())),
        _ => {}
    }
    let hash = || hash_file(bundle);
    let report = bundle
        .with_mapped_output(out, bound, |data, buf| {
            ccob::compress_into(data, opts, buf, hash)
        })
        .map_err(file)?
        .map_err(|e| failed_writing(shown, e))?;
    let total = report.header.total_size.unwrap_or(bound);
    out.set_len(total).map_err(file)?;
    Ok(report)
}

/// The stored hash of `bundle`, read from its file with positional reads
/// (its mapping stays untouched), or from its bytes when it has no file.
fn hash_file(bundle: &Input) -> crate::Result<u64> {
    let mut hasher = BundleHasher::new();
    let Some(mut r) = bundle.reader(bundle.bytes()) else {
        hasher.update(bundle.bytes());
        return Ok(hasher.finish());
    };
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finish())
}

/// Copies all of the file `spool` to `out`.
fn copy_out(mut spool: &File, out: &mut Output) -> io::Result<()> {
    spool.seek(SeekFrom::Start(0))?;
    io::copy(&mut spool, out)?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Unbundling as a stream

/// A CCOB that can be unbundled as a stream: it holds a binary bundle
/// whose header reads well.
pub struct Streamable<'a> {
    /// The CCOB.
    pub c: Ccob<'a>,
    /// The bundle's records, in file order.
    pub records: Vec<Record>,
}

/// `data` as a [`Streamable`] CCOB, decompressing only its first bytes;
/// `None` when it is anything else: not what LLVM takes for a CCOB, a
/// declared size over `max_uncompressed` or that the payload cannot hold,
/// contents that `format` (given their first bytes) does not take for a
/// binary bundle, or a bundle header that does not read. The whole-buffer
/// path then reports what is wrong, in LLVM's order.
pub fn streamable(
    data: &[u8],
    max_uncompressed: u64,
    format: impl FnOnce(&[u8]) -> Option<Format>,
) -> Option<Streamable<'_>> {
    if !ccob::llvm_treats_as_compressed(data) {
        return None;
    }
    let c = Ccob::parse_whole(data).ok()?;
    if c.header.uncompressed_size > max_uncompressed {
        return None;
    }
    c.check_declared_size().ok()?;
    let prefix = c.decompress_prefix(SNIFF_LEN).ok()?;
    if format(&prefix) != Some(Format::Binary) {
        return None;
    }
    let records = c.bundle_records().ok()??;
    Some(Streamable { c, records })
}

/// Streams `c` (the CCOB of `input`) into `wanted` on `threads` threads
/// (see [`Ccob::stream_parallel`]), reading the compressed bytes from the
/// file rather than its mapping where possible, so that they do not stay
/// resident.
pub fn stream_input(
    c: &Ccob<'_>,
    input: &Input,
    wanted: &mut [Wanted<'_>],
    opts: &ReadOptions,
    end: StreamEnd,
    threads: u32,
) -> crate::Result<Streamed> {
    match input.reader(c.payload) {
        Some(r) => c.stream_parallel(r, wanted, opts, end, threads),
        None => c.stream_parallel(io::Cursor::new(c.payload), wanted, opts, end, threads),
    }
}

/// Why [`stream_to_files`] failed.
#[derive(Debug)]
pub enum StreamFailure<E> {
    /// File `k` of the plan could not be created.
    Create(usize, io::Error),
    /// Writing to file `k` failed (the first such failure, which stopped
    /// the stream).
    Write(usize, io::Error),
    /// The stream failed.
    Stream(E),
}

/// Creates the files of `plan` (path, and the bytes of the contents it
/// gets: `None` for an empty file), in order, then calls `stream` with
/// the wanted ranges writing into them. The files are returned with what
/// `stream` returned, not committed: the caller renames them into place
/// once it has checked the stream.
pub fn stream_to_files<P: AsRef<Path>, T, E>(
    plan: &[(P, Option<Range<u64>>)],
    stream: impl FnOnce(&mut [Wanted<'_>]) -> Result<T, E>,
) -> Result<(T, Vec<Output>), StreamFailure<E>> {
    let mut outs = Vec::with_capacity(plan.len());
    for (k, (path, _)) in plan.iter().enumerate() {
        outs.push(Output::create(path.as_ref()).map_err(|e| StreamFailure::Create(k, e))?);
    }
    let mut errors: Vec<Option<io::Error>> = Vec::new();
    errors.resize_with(outs.len(), || None);
    let mut sinks: Vec<Noting<'_>> = outs
        .iter_mut()
        .zip(&mut errors)
        .map(|(o, e)| Noting::new(o, e))
        .collect();
    let mut wanted: Vec<Wanted<'_>> = sinks
        .iter_mut()
        .zip(plan)
        .filter_map(|(s, (_, r))| {
            Some(Wanted {
                range: r.clone()?,
                out: s,
            })
        })
        .collect();
    let streamed = stream(&mut wanted);
    drop(wanted);
    drop(sinks);
    if let Some((k, e)) = errors
        .iter_mut()
        .enumerate()
        .find_map(|(k, e)| e.take().map(|e| (k, e)))
    {
        return Err(StreamFailure::Write(k, e));
    }
    Ok((streamed.map_err(StreamFailure::Stream)?, outs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::ccob::{ReadOptions, decompress};

    /// A bundle layout over two inputs made in memory (no file to copy
    /// from) and one mapped from a file of over 1 MiB (copied file to
    /// file), with alignment padding between them.
    fn setup(dir: &Path) -> (Layout, Vec<Input>, Vec<String>) {
        let big: Vec<u8> = (0..3_000_000u32)
            .map(|i| (i % 251).to_le_bytes()[0] ^ (i >> 13).to_le_bytes()[0])
            .collect();
        let path = dir.join("big.bin");
        std::fs::write(&path, &big).unwrap();
        let inputs = vec![
            Input::from_vec(b"host code".to_vec()),
            Input::from_vec(vec![7; 5000]),
            Input::open(path.to_str().unwrap()).unwrap(),
        ];
        let names = vec!["h".to_string(), "small".to_string(), "big".to_string()];
        let ids: Vec<(String, u64)> = [
            "host-x86_64-unknown-linux-gnu-",
            "hip-amdgcn-amd-amdhsa--gfx90a",
            "hip-amdgcn-amd-amdhsa--gfx906",
        ]
        .iter()
        .zip(&inputs)
        .map(|(id, i)| (id.to_string(), i.bytes().len() as u64))
        .collect();
        let layout = crate::bundle::layout(crate::bundle::Format::Binary, &ids, 4096).unwrap();
        (layout, inputs, names)
    }

    #[test]
    fn writes_the_bytes_of_the_whole_bundle_compressed_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let (layout, inputs, names) = setup(dir.path());
        let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
        for threads in [0, 2] {
            let opts = CompressOptions {
                threads,
                ..CompressOptions::default()
            };
            let out = dir.path().join(format!("out{threads}.ccob"));
            let out = out.to_str().unwrap();
            let report = write_ccob(out, &layout, &inputs, &names, &opts).unwrap();
            let written = std::fs::read(out).unwrap();
            assert_eq!(report.header.total_size, Some(written.len() as u64));
            let (whole, r) = ops::compress_layout(&layout, &views, &opts).unwrap();
            let back = decompress(&written, &ReadOptions::default()).unwrap();
            let mut bundle = Vec::new();
            layout.write_to(&mut bundle, &views).unwrap();
            assert_eq!(back.data, bundle);
            assert_eq!(report.header.hash, r.header.hash);
            if threads == 0 {
                // LLVM's one call: the same bytes as in memory.
                assert_eq!(written, whole);
            }
        }
    }

    #[test]
    fn failures_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (layout, inputs, names) = setup(dir.path());
        let out = dir.path().join("no/such/dir/out.ccob");
        let out = out.to_str().unwrap();
        match write_ccob(out, &layout, &inputs, &names, &CompressOptions::default()) {
            Err(Failure::File(path, e)) => {
                assert_eq!(path, out);
                assert_eq!(e.kind(), io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        let v4 = CompressOptions {
            version: 4,
            ..CompressOptions::default()
        };
        let out = dir.path().join("v4.ccob");
        assert!(matches!(
            write_ccob(out.to_str().unwrap(), &layout, &inputs, &names, &v4),
            Err(Failure::Ccob(_))
        ));
        assert!(!out.exists());
    }

    #[test]
    fn binary_bundles_stream_into_files() {
        let dir = tempfile::tempdir().unwrap();
        let (layout, inputs, _) = setup(dir.path());
        let views: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
        let (ccob, _) = ops::compress_layout(&layout, &views, &CompressOptions::default()).unwrap();
        let text = |_: &[u8]| Some(Format::Text("//"));
        assert!(streamable(&ccob, u64::MAX, text).is_none());
        assert!(streamable(&ccob, 1000, Format::detect).is_none());
        let s = streamable(&ccob, u64::MAX, Format::detect).unwrap();
        assert_eq!(s.records.len(), 3);
        let input = Input::from_vec(ccob.clone());
        // Each entry to its file, and one empty file.
        let mut plan: Vec<(std::path::PathBuf, Option<Range<u64>>)> = s
            .records
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let range = r.offset..r.offset + r.size;
                (dir.path().join(format!("entry{k}")), Some(range))
            })
            .collect();
        plan.push((dir.path().join("empty"), None));
        let opts = ReadOptions::default();
        let (streamed, outs) = stream_to_files(&plan, |w| {
            stream_input(&s.c, &input, w, &opts, StreamEnd::Whole, 1)
        })
        .unwrap();
        assert_eq!(streamed.hash_matches(), Some(true));
        assert!(
            !plan[0].0.exists(),
            "not renamed into place before the commit"
        );
        for o in outs {
            o.commit().unwrap();
        }
        for (k, r) in s.records.iter().enumerate() {
            let i = [
                "host",
                "hip-amdgcn-amd-amdhsa--gfx90a",
                "hip-amdgcn-amd-amdhsa--gfx906",
            ]
            .iter()
            .position(|id| r.id.starts_with(id.as_bytes()))
            .unwrap();
            assert!(
                std::fs::read(&plan[k].0).unwrap() == inputs[i].bytes(),
                "{k}"
            );
        }
        assert_eq!(std::fs::read(&plan[3].0).unwrap(), b"");
        // A file that cannot be created is named by its place in the plan.
        let bad = [
            (dir.path().join("ok"), None),
            (dir.path().join("no/such/dir"), None),
        ];
        match stream_to_files(&bad, |_| Ok::<(), ()>(())) {
            Err(StreamFailure::Create(1, e)) => assert_eq!(e.kind(), io::ErrorKind::NotFound),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}
