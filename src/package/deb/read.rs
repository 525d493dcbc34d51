//! A `.deb`'s skeleton and lists, read before anything is rewritten: its
//! `ar` members, which of them is the control and which the data
//! archive, and the control archive's `conffiles` and `md5sums`.
//!
//! A `.deb` is an `ar` archive: `debian-binary`, `control.tar[.gz|.xz|.zst]`
//! (the package's metadata, `md5sums` among it), `data.tar[…]` (the files),
//! in that order (`deb(5)`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;

use super::error::{Error, LIST_MAX};
use super::md5sums;
use crate::host::ar;
use crate::package::tar::walk::Walk;
use crate::package::{self, Compression};

/// The MD5 `md5sums` gives each file (lowercase hexadecimal), by path.
type Md5s = BTreeMap<Vec<u8>, String>;

/// A `.deb` read: its members, and its control archive's lists.
pub(crate) struct Package<'a> {
    /// The package's bytes.
    pub(crate) data: &'a [u8],
    /// Its `ar` members, in their order.
    pub(crate) entries: Vec<ar::RawEntry<'a>>,
    /// Which of them is `control.tar[…]`, if one is.
    pub(crate) control: Option<usize>,
    /// Which of them is `data.tar[…]`.
    pub(crate) data_at: usize,
    /// The paths `conffiles` lists, as `md5sums` gives paths (no leading
    /// `/`): files dpkg keeps a user's changes to.
    pub(crate) conffiles: BTreeSet<Vec<u8>>,
    /// The MD5 `md5sums` gives each file, by path.
    pub(crate) md5sums: Md5s,
}

impl<'a> Package<'a> {
    /// Reads the package `data`: its `ar` members, and the lists of its
    /// control archive within `limit` bytes inflated (which it leaves as
    /// it was: the small archive is read again, and charged, when it is
    /// rewritten). A package with no `data.tar` member is damaged.
    pub(crate) fn open(data: &'a [u8], limit: u64) -> Result<Package<'a>, Error> {
        let entries = ar::entries(data).map_err(|e| Error::Damaged(e.to_string()))?;
        let find = |prefix: &[u8]| entries.iter().position(|e| name(e).starts_with(prefix));
        let data_at =
            find(b"data.tar").ok_or_else(|| Error::Damaged("it has no data.tar member".into()))?;
        let control = find(b"control.tar");
        let mut p = Package {
            data,
            entries,
            control,
            data_at,
            conffiles: BTreeSet::new(),
            md5sums: BTreeMap::new(),
        };
        if let Some(at) = control {
            (p.conffiles, p.md5sums) = lists(&p, at, limit)?;
        }
        Ok(p)
    }

    /// The name of the member `i` (without the `/` GNU `ar` ends names
    /// with), for messages.
    pub(crate) fn name(&self, i: usize) -> String {
        String::from_utf8_lossy(name(&self.entries[i])).into_owned()
    }

    /// The bytes of the member `i`.
    pub(crate) fn bytes(&self, i: usize) -> &'a [u8] {
        bytes(self.data, &self.entries[i])
    }

    /// The name of the first signature member (`_gpgorigin`, `_gpgbuilder`),
    /// if the package has one: a rewritten package's signature would not
    /// verify.
    pub(crate) fn signature(&self) -> Option<String> {
        let e = self.entries.iter().find(|e| name(e).starts_with(b"_gpg"))?;
        Some(String::from_utf8_lossy(name(e)).into_owned())
    }
}

/// A member's name without the `/` GNU `ar` ends names with.
fn name<'a>(e: &ar::RawEntry<'a>) -> &'a [u8] {
    e.name.strip_suffix(b"/").unwrap_or(e.name)
}

/// A member's bytes in the package `data`.
pub(super) fn bytes<'a>(data: &'a [u8], e: &ar::RawEntry<'_>) -> &'a [u8] {
    let start = usize::try_from(e.data).unwrap_or(usize::MAX);
    let end = usize::try_from(e.data.saturating_add(e.size)).unwrap_or(usize::MAX);
    data.get(start..end).unwrap_or_default()
}

/// The compression of a member holding a tar archive, by its first bytes.
pub(crate) fn method(bytes: &[u8]) -> Option<Compression> {
    if package::is_tar_header(bytes) {
        return Some(Compression::None);
    }
    package::compression_of(bytes)
}

/// The paths `conffiles` in the control archive (member `at` of `p`)
/// lists, and the MD5 `md5sums` gives each file; none when it has none
/// or the member is not a tar archive read here.
fn lists(p: &Package<'_>, at: usize, limit: u64) -> Result<(BTreeSet<Vec<u8>>, Md5s), Error> {
    let member = p.name(at);
    let bytes = p.bytes(at);
    let mut out = BTreeSet::new();
    let mut sums = BTreeMap::new();
    let Some(c) = method(bytes) else {
        return Ok((out, sums));
    };
    let fault = |f| Error::fault(&member, f);
    let reader = package::decoder(bytes, c).map_err(|e| Error::Member {
        member: member.clone(),
        doing: "cannot be read",
        source: e.into(),
    })?;
    let mut walk = Walk::new(reader, std::io::sink(), limit);
    while let Some(h) = walk.next().map_err(fault)? {
        let listed = h.path == b"conffiles" || h.path == b"md5sums";
        if !(h.is_file() && listed) {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        // A list too large to read is refused, never taken as empty: its
        // rows would go unchecked (`check` calls it damage too).
        if h.size > LIST_MAX {
            return Err(Error::too_large(
                &member,
                &String::from_utf8_lossy(&h.path),
                h.size,
            ));
        }
        let mut text = Vec::new();
        walk.body()
            .read_to_end(&mut text)
            .map_err(|e| fault(crate::package::tar::Fault::Read(e)))?;
        walk.skip_body().map_err(fault)?;
        if h.path == b"md5sums" {
            sums = md5sums::parse(&text);
            continue;
        }
        for line in text.split(|&b| b == b'\n') {
            // `remove-on-upgrade /etc/x` names a conffile too.
            let path = line.rsplit(|&b| b == b' ').next().unwrap_or_default();
            let path = path.strip_suffix(b"\r").unwrap_or(path);
            let mut path = path.trim_ascii();
            while let Some(p) = path.strip_prefix(b"/") {
                path = p;
            }
            if !path.is_empty() {
                out.insert(path.to_vec());
            }
        }
    }
    Ok((out, sums))
}
