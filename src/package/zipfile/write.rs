//! A zip archive written anew for one output: each member as its
//! [`Fate`] says, in the archive's order.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};

use super::error::Error;
use super::read::{Zip, ZipFile};
pub(crate) use crate::package::{Fate, New};

/// How the members replaced are compressed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// With the method of the member they replace where the zip crate
    /// writes it (stored, deflate, bzip2); deflated where it only reads
    /// it (LZMA, deflate64).
    AsItWas,
    /// Stored, as conda stores every member of a `.conda`.
    Stored,
}

/// Writes the archive `zip` to `file` for one output, members in their
/// order: each member as `fates` says (a member it does not name is
/// kept), and a member named in `texts` (a RECORD whose rows changed)
/// with those bytes. A member replaced keeps its name, time, external
/// attributes and host system ([`same_header`]), compressed as `method`
/// says.
pub(crate) fn write(
    zip: &mut Zip<'_>,
    fates: &BTreeMap<usize, Fate>,
    texts: &BTreeMap<usize, Vec<u8>>,
    method: Method,
    file: &File,
) -> Result<(), Error> {
    write_adding(zip, fates, texts, method, &[], file)
}

/// A member an output gains: its name, its bytes, and the index of the
/// member whose header fields (time, mode, host system, method) it is
/// written with.
pub(crate) struct Added<'b> {
    /// Its name.
    pub(crate) name: String,
    /// Its bytes.
    pub(crate) bytes: &'b [u8],
    /// The member whose header fields it takes.
    pub(crate) like: usize,
}

/// [`write`], then each member of `added`, in its order, after the
/// archive's own.
pub(crate) fn write_adding(
    zip: &mut Zip<'_>,
    fates: &BTreeMap<usize, Fate>,
    texts: &BTreeMap<usize, Vec<u8>>,
    method: Method,
    added: &[Added<'_>],
    file: &File,
) -> Result<(), Error> {
    let mut zout = ::zip::ZipWriter::new(file);
    for i in 0..zip.len() {
        let f = zip.by_index_raw(i)?;
        let text = texts.get(&i);
        let new = match (fates.get(&i), text) {
            (Some(Fate::Removed), _) => continue,
            (Some(Fate::Replaced(n)), _) => Some((n.size, Some(n.as_ref()), None)),
            (_, Some(t)) => Some((t.len() as u64, None, Some(t.as_slice()))),
            (Some(Fate::Kept) | None, None) => None,
        };
        let Some((size, new, text)) = new else {
            zout.raw_copy_file(f)?;
            continue;
        };
        let opts = same_header(&f)
            .compression_method(compression(&f, method))
            .large_file(size >= u64::from(u32::MAX));
        let name = f.name()?.into_owned();
        drop(f);
        zout.start_file(name, opts)?;
        match (new, text) {
            (Some(n), _) => n.copy_to(&mut zout).map_err(Error::Write)?,
            (None, Some(t)) => zout.write_all(t).map_err(Error::Write)?,
            (None, None) => {}
        }
    }
    for a in added {
        let f = zip.by_index_raw(a.like)?;
        let opts = same_header(&f)
            .compression_method(compression(&f, method))
            .large_file(a.bytes.len() as u64 >= u64::from(u32::MAX));
        drop(f);
        zout.start_file(a.name.as_str(), opts)?;
        zout.write_all(a.bytes).map_err(Error::Write)?;
    }
    zout.finish()?;
    Ok(())
}

/// The method a member replacing `f` is written with.
fn compression(f: &ZipFile<'_, '_>, method: Method) -> ::zip::CompressionMethod {
    use ::zip::CompressionMethod as M;
    match (method, f.compression()) {
        (Method::Stored, _) => M::Stored,
        (Method::AsItWas, m @ (M::Stored | M::Deflated | M::Bzip2)) => m,
        (Method::AsItWas, _) => M::Deflated,
    }
}

/// The options that write a member rewritten with the header fields of
/// `f`, the member it replaces: its date and time, its external attributes
/// (the mode, or a Windows member's DOS attributes) and its host system
/// (in "version made by"). A date the zip crate cannot read (before 1980,
/// a day 0) is written as 1980-01-01, and a host system it does not know
/// as 255.
pub(super) fn same_header<R: Read>(
    f: &::zip::read::ZipFile<'_, R>,
) -> ::zip::write::SimpleFileOptions {
    let opts = ::zip::write::SimpleFileOptions::default()
        .system(f.system())
        .external_attributes(f.external_attributes());
    match f.last_modified() {
        Some(t) => opts.last_modified_time(t),
        None => opts,
    }
}
