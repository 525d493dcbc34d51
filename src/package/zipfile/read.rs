//! A zip archive opened for a rewrite over its bytes ([`Archive`]), and
//! the checks a member passes before it is trusted: stored bytes within
//! the file and matching their CRC-32 ([`stored`]), inflated bytes read to
//! their end and as many as declared ([`rest`]).

use std::io::Read;

use sha2::{Digest as _, Sha256};

use super::error::Error;
use crate::package::Hashing;
use crate::package::budget::Budget;

/// The zip crate's reader over an archive's bytes.
pub(crate) type Zip<'a> = ::zip::ZipArchive<std::io::Cursor<&'a [u8]>>;

/// A member of [`Zip`], read raw or inflating.
pub(crate) type ZipFile<'r, 'a> = ::zip::read::ZipFile<'r, std::io::Cursor<&'a [u8]>>;

/// What a member's bytes were found to be: their size and SHA-256.
pub(crate) type Seen = (u64, [u8; 32]);

/// A zip archive over its bytes, its central directory checked.
pub(crate) struct Archive<'a> {
    /// The archive's bytes.
    pub(crate) data: &'a [u8],
    /// The zip crate's reader over them.
    pub(crate) zip: Zip<'a>,
}

impl<'a> Archive<'a> {
    /// The archive `data`, refused when its central directory gives
    /// several entries one name (a reader sees one of them: what the others
    /// hold would be dropped unread, or kept as it is) or points several
    /// entries at the same bytes (a zip made to multiply what it holds:
    /// one member of a megabyte named a thousand times writes a gigabyte).
    /// Real wheels and conda packages do neither.
    pub(crate) fn open(data: &'a [u8]) -> Result<Archive<'a>, Error> {
        let mut zip = Zip::new(std::io::Cursor::new(data))?;
        check_directory(data, &mut zip)?;
        Ok(Archive { data, zip })
    }

    /// How many members the archive has.
    pub(crate) fn len(&self) -> usize {
        self.zip.len()
    }

    /// The first member whose name `signed` accepts, if any: a signature
    /// that a changed archive would no longer match.
    pub(crate) fn find(&self, signed: impl Fn(&str) -> bool) -> Option<String> {
        (0..self.zip.len())
            .filter_map(|i| self.zip.name_for_index(i).and_then(Result::ok))
            .find(|n| signed(n))
            .map(std::borrow::Cow::into_owned)
    }
}

/// Checks the central directory of `zip` (over `data`) as
/// [`Archive::open`] does.
pub(crate) fn check_directory(data: &[u8], zip: &mut Zip<'_>) -> Result<(), Error> {
    let dups = crate::package::duplicate_names(data, zip);
    if let Some(why) = crate::package::duplicates_said(&dups) {
        return Err(Error::Damaged(why));
    }
    if zip.has_overlapping_files()? {
        return Err(Error::Damaged(
            "its central directory points several entries at the same bytes (a zip made to \
             multiply what it holds)"
                .into(),
        ));
    }
    Ok(())
}

/// Whether the member `f` is stored as it is (neither compressed nor
/// encrypted): its bytes are a slice of the archive.
pub(crate) fn is_stored(f: &ZipFile<'_, '_>) -> bool {
    f.compression() == ::zip::CompressionMethod::Stored && !f.encrypted()
}

/// The bytes of the stored member `f` (named `member`) within the
/// archive's bytes `data`; an error unless they lie within them and match
/// the member's CRC-32.
pub(crate) fn stored<'a>(
    member: &str,
    data: &'a [u8],
    f: &ZipFile<'_, 'a>,
) -> Result<&'a [u8], Error> {
    let size = f.size();
    let bytes = f
        .data_start()
        .filter(|_| f.compressed_size() == size)
        .and_then(|start| {
            let start = usize::try_from(start).ok()?;
            data.get(start..start.checked_add(usize::try_from(size).ok()?)?)
        })
        .ok_or_else(|| {
            Error::Damaged(format!("member '{member}': its data lies outside the file"))
        })?;
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    if crc.sum() != f.crc32() {
        let why = format!("member '{member}': its bytes do not match its CRC-32");
        return Err(Error::Damaged(why));
    }
    Ok(bytes)
}

/// Reads the rest of the member `f` (named `member`, of `size` bytes,
/// `head` of them read already) to its end, within `budget`, where the
/// zip reader checks its CRC-32: an error when they do not match or the
/// member gives another number of bytes; else its size and SHA-256, head
/// included.
pub(crate) fn rest(
    member: &str,
    head: &[u8],
    f: &mut dyn Read,
    size: u64,
    budget: &mut Budget,
) -> Result<Seen, Error> {
    let left = size.saturating_sub(head.len() as u64);
    budget.charge(member, left)?;
    let mut sha = Hashing::<_, Sha256>::new(std::io::sink());
    sha.digest.update(head);
    let n = std::io::copy(&mut f.take(left.saturating_add(1)), &mut sha).map_err(|e| {
        match e.to_string().contains("checksum") {
            true => Error::Damaged(format!(
                "member '{member}': its bytes do not match its CRC-32"
            )),
            false => Error::Member {
                member: member.to_string(),
                doing: "cannot be inflated",
                source: e.into(),
            },
        }
    })?;
    if n != left {
        let why = format!(
            "member '{member}' inflates to {} bytes, not the {size} it declares",
            (head.len() as u64).saturating_add(n)
        );
        return Err(Error::Damaged(why));
    }
    Ok((size, sha.digest.finalize().into()))
}

/// The size and SHA-256 of `b`.
pub(crate) fn seen(b: &[u8]) -> Seen {
    (b.len() as u64, Sha256::digest(b).into())
}
