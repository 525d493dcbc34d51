//! The tags of a rewritten RPM made true again: in the main header, the
//! per-file arrays (a removed file's value dropped from each, a rewritten
//! file's size and digest), the installed size, the payload's digests and
//! size; in the signature header, the digests of the main header, the
//! sizes of header and payload, and the MD5 of both. Signatures, which no
//! longer verify, are removed and named.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sha2::Digest as _;

use super::error::Error;
use super::header::{BIN, Header, I18NSTRING, INT32, INT64, STRING, STRING_ARRAY};
use super::write::{Item, Owned};

/// Main header tags.
const SIZE: u32 = 1009;
const FILESIZES: u32 = 1028;
const FILEMODES: u32 = 1030;
const FILEDIGESTS: u32 = 1035;
const ARCHIVESIZE: u32 = 1046;
const FILEDEVICES: u32 = 1095;
const FILEINODES: u32 = 1096;
const DIRINDEXES: u32 = 1116;
const BASENAMES: u32 = 1117;
const DIRNAMES: u32 = 1118;
const LONGFILESIZES: u32 = 5008;
const LONGSIZE: u32 = 5009;
const FILEDIGESTALGO: u32 = 5011;
const PAYLOADDIGEST: u32 = 5092;
const PAYLOADDIGESTALGO: u32 = 5093;
const PAYLOADDIGESTALT: u32 = 5097;

/// The main header's tags that hold one value per file (rpm's `rpmtag.h`),
/// each of whose values a removed file loses.
const PER_FILE: &[u32] = &[
    1027, 1028, 1029, 1030, 1031, 1032, 1033, 1034, 1035, 1036, 1037, 1039, 1040, 1045, 1095, 1096,
    1097, 1116, 1117, 1119, 1120, 1140, 1141, 1143, 1144, 1147, 1177, 1187, 5008, 5010, 5045, 5090,
];

/// Array tags known to hold something other than one value per file
/// (dependencies, scripts, triggers, the change log, directories and
/// dictionaries), however many values they hold.
const NOT_PER_FILE: &[u32] = &[
    100, 1017, 1018, 1019, 1047, 1048, 1049, 1050, 1051, 1052, 1053, 1054, 1055, 1059, 1060, 1061,
    1062, 1065, 1066, 1067, 1068, 1069, 1080, 1081, 1082, 1085, 1086, 1087, 1088, 1089, 1090, 1091,
    1092, 1098, 1099, 1112, 1113, 1114, 1115, 1118, 1121, 1142, 1145, 1148, 1149, 1150, 1153, 1154,
    5027, 5030, 5031, 5032, 5033, 5035, 5036, 5037, 5046, 5047, 5048, 5049, 5050, 5051, 5052, 5053,
    5054, 5055, 5056, 5057, 5066, 5067, 5068, 5069, 5070, 5071, 5072, 5076, 5077, 5078, 5079, 5080,
    5081, 5082, 5084, 5085, 5092, 5097, 5105, 5106,
];

/// Signatures, in either header, which a rewritten package can no longer
/// carry: their tags and names.
const SIGNATURES: &[(u32, &str)] = &[
    (267, "DSA header signature"),
    (268, "RSA header signature"),
    (274, "file signatures"),
    (275, ""),
    (276, "fs-verity signatures"),
    (277, ""),
    (278, "OpenPGP signature"),
    (1002, "PGP signature"),
    (1005, "GPG signature"),
    (1006, "PGP5 signature"),
];

/// The main header's own signatures: of its files (IMA, and their
/// length) and fs-verity's (and their algorithm). (Its tags 1002, 1005,
/// 1006 are the release, the description, the build time.)
const MAIN_SIGNATURES: &[(u32, &str)] = &[
    (276, "fs-verity signatures"),
    (277, ""),
    (5090, "file signatures"),
    (5091, ""),
];

/// Signature header tags.
const SIG_SIZE: u32 = 1000;
const SIG_MD5: u32 = 1004;
const SIG_PAYLOADSIZE: u32 = 1007;
const SIG_SHA1: u32 = 269;
const SIG_LONGSIZE: u32 = 270;
const SIG_LONGARCHIVESIZE: u32 = 271;
const SIG_SHA256: u32 = 273;
/// The zeros rpm (4.14 and later) leaves in a signature header so that
/// `rpmsign` can sign the package in place.
const SIG_RESERVEDSPACE: u32 = 1008;

/// A digest algorithm, as rpm numbers them.
#[derive(Clone, Copy)]
pub(super) enum Algo {
    Md5,
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Algo {
    /// The algorithm rpm numbers `n`.
    fn of(n: u64) -> Option<Algo> {
        Some(match n {
            1 => Algo::Md5,
            2 => Algo::Sha1,
            8 => Algo::Sha256,
            9 => Algo::Sha384,
            10 => Algo::Sha512,
            _ => return None,
        })
    }

    /// A new hasher.
    pub(super) fn hasher(self) -> Hasher {
        match self {
            Algo::Md5 => Hasher::Md5(md5::Md5::new()),
            Algo::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algo::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algo::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            Algo::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }
}

/// A digest being computed.
pub(super) enum Hasher {
    Md5(md5::Md5),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    /// Hashes `b`.
    pub(super) fn update(&mut self, b: &[u8]) {
        match self {
            Hasher::Md5(h) => h.update(b),
            Hasher::Sha1(h) => h.update(b),
            Hasher::Sha256(h) => h.update(b),
            Hasher::Sha384(h) => h.update(b),
            Hasher::Sha512(h) => h.update(b),
        }
    }

    /// The digest's bytes.
    pub(super) fn finish(self) -> Vec<u8> {
        match self {
            Hasher::Md5(h) => h.finalize().to_vec(),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Sha384(h) => h.finalize().to_vec(),
            Hasher::Sha512(h) => h.finalize().to_vec(),
        }
    }
}

/// The lowercase hex of `bytes`.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The main header's files, as the payload's entries are matched to them.
pub(super) struct Files {
    /// Each file's index, by its path as the payload names it (`./usr/…`
    /// without the dot).
    index: HashMap<Vec<u8>, usize>,
    /// Each file's size, as the header gives it.
    pub(super) sizes: Vec<u64>,
    /// Each file's mode.
    modes: Vec<u64>,
    /// Each file's device and inode, where the header gives them: files
    /// that share them are hard links.
    links: Option<(Vec<u64>, Vec<u64>)>,
    /// The algorithm of `FILEDIGESTS`.
    pub(super) algo: Algo,
    /// Each file's digest as `FILEDIGESTS` gives it (in hex; empty for a
    /// file that has none), where the header has them.
    digests: Option<Vec<Vec<u8>>>,
    /// The algorithm of the payload's digests.
    pub(super) payload_algo: Algo,
}

impl Files {
    /// The files `h` lists.
    pub(super) fn of(h: &Header<'_>) -> Result<Files, Error> {
        let bases = h
            .strings(BASENAMES)
            .map_err(Error::Damaged)?
            .unwrap_or_default();
        let dirs = h
            .strings(DIRNAMES)
            .map_err(Error::Damaged)?
            .unwrap_or_default();
        let n = bases.len();
        let per_file = |what: &str, v: Option<Vec<u64>>| match v {
            Some(v) if v.len() == n => Ok(v),
            Some(v) => Err(Error::Damaged(format!(
                "its header lists {n} files but {} {what}",
                v.len()
            ))),
            None => Err(Error::Damaged(format!("its header lists no {what}"))),
        };
        let num = |r: Result<Option<Vec<u64>>, String>| r.map_err(Error::Damaged);
        let dir_of = per_file("DIRINDEXES", num(h.int32s(DIRINDEXES))?)?;
        let sizes = match num(h.int64s(LONGFILESIZES))? {
            Some(v) => per_file("LONGFILESIZES", Some(v))?,
            None => per_file("FILESIZES", num(h.int32s(FILESIZES))?)?,
        };
        let modes = per_file("FILEMODES", num(h.int16s(FILEMODES))?)?;
        let links = match (num(h.int32s(FILEDEVICES))?, num(h.int32s(FILEINODES))?) {
            (Some(d), Some(i)) if d.len() == n && i.len() == n => Some((d, i)),
            _ => None,
        };
        let digests = match h.strings(FILEDIGESTS).map_err(Error::Damaged)? {
            Some(v) if v.len() == n => Some(v.into_iter().map(<[u8]>::to_vec).collect()),
            Some(v) => {
                return Err(Error::Damaged(format!(
                    "its header lists {n} files but {} FILEDIGESTS",
                    v.len()
                )));
            }
            None => None,
        };
        let mut index = HashMap::with_capacity(n);
        for (i, base) in bases.iter().enumerate() {
            let dir = usize::try_from(dir_of[i])
                .ok()
                .and_then(|d| dirs.get(d))
                .ok_or_else(|| Error::Damaged(format!("file {i} is in no directory it lists")))?;
            index.insert([*dir, *base].concat(), i);
        }
        let algo_of = |tag: u32, default: Algo| -> Result<Algo, Error> {
            match num(h.int32s(tag))?.and_then(|v| v.first().copied()) {
                None => Ok(default),
                Some(n) => Algo::of(n).ok_or_else(|| {
                    Error::Refused(format!(
                        "its tag {tag} names digest algorithm {n}, which prune does not compute"
                    ))
                }),
            }
        };
        Ok(Files {
            index,
            sizes,
            modes,
            links,
            digests,
            algo: algo_of(FILEDIGESTALGO, Algo::Md5)?,
            payload_algo: algo_of(PAYLOADDIGESTALGO, Algo::Sha256)?,
        })
    }

    /// The index of the file the payload names `name` (`./usr/lib64/x`).
    pub(super) fn find(&self, name: &[u8]) -> Option<usize> {
        let path = name.strip_prefix(b".").unwrap_or(name);
        self.index.get(path).copied()
    }

    /// The files hard-linked with file `i` (itself among them), or it alone.
    pub(super) fn group(&self, i: usize) -> Vec<usize> {
        let regular = |j: usize| self.modes[j] & 0o170_000 == 0o100_000;
        match &self.links {
            Some((d, ino)) if regular(i) => (0..self.sizes.len())
                .filter(|&j| regular(j) && d[j] == d[i] && ino[j] == ino[i])
                .collect(),
            _ => vec![i],
        }
    }

    /// Checks that `bytes`, the file `i` (at `path`) as the payload holds
    /// it, are what its `FILEDIGESTS` row says, before that row is written
    /// again for new bytes: a row is never made to vouch for bytes that did
    /// not match it. A file without a digest in the header is not checked.
    pub(super) fn check_digest(&self, i: usize, path: &str, bytes: &[u8]) -> Result<(), Error> {
        let Some(said) = self.digests.as_ref().map(|d| &d[i]) else {
            return Ok(());
        };
        if said.is_empty() {
            return Ok(());
        }
        let mut h = self.algo.hasher();
        h.update(bytes);
        let got = hex(&h.finish());
        if said.eq_ignore_ascii_case(got.as_bytes()) {
            return Ok(());
        }
        Err(Error::Damaged(format!(
            "its file '{path}' does not match the digest its header gives (it says {}, its \
             bytes hash to {got}): prune gives no new digest to a file that did not match its \
             own",
            String::from_utf8_lossy(said)
        )))
    }

    /// Whether file `i` is a regular file.
    pub(super) fn regular(&self, i: usize) -> bool {
        self.modes[i] & 0o170_000 == 0o100_000
    }
}

/// What changed in the payload, for the main header.
pub(super) struct Changes<'a> {
    /// The new size and digest (hex) of each file rewritten, hard links
    /// included.
    pub(super) rewritten: &'a BTreeMap<usize, (u64, String)>,
    /// The files removed.
    pub(super) removed: &'a BTreeSet<usize>,
    /// The installed size the package gains (or loses, below zero).
    pub(super) size_delta: i128,
    /// The payload's digest compressed and uncompressed (hex), and its
    /// uncompressed size.
    pub(super) payload: (String, String, u64),
}

/// A string array entry of `values`.
fn strings(tag: u32, values: &[&[u8]]) -> Item {
    let data: Vec<u8> = values.iter().flat_map(|v| [*v, b"\0"].concat()).collect();
    Item {
        tag,
        kind: STRING_ARRAY,
        count: u32::try_from(values.len()).unwrap_or(u32::MAX),
        data,
    }
}

/// The main header `main` (of `files`) made true of the changes `c`; the
/// names of the signatures it loses.
pub(super) fn main(
    main: &Header<'_>,
    files: &Files,
    c: &Changes<'_>,
) -> Result<(Owned, Vec<&'static str>), Error> {
    let mut o = Owned::of(main).map_err(Error::Damaged)?;
    let n = files.sizes.len();
    let damaged = Error::Damaged;
    o.map(|i| match i.tag {
        FILEDIGESTS => {
            let mut v: Vec<&[u8]> = i
                .values()?
                .into_iter()
                .map(|s| s.strip_suffix(b"\0").unwrap_or(s))
                .collect();
            if v.len() != n {
                return Err(format!(
                    "its header lists {n} files but {} FILEDIGESTS",
                    v.len()
                ));
            }
            for (&f, (_, digest)) in c.rewritten {
                v[f] = digest.as_bytes();
            }
            Ok(Some(strings(FILEDIGESTS, &v)))
        }
        FILESIZES | LONGFILESIZES => {
            let wide = i.tag == LONGFILESIZES;
            let mut data = Vec::with_capacity(i.data.len());
            for (f, &old) in files.sizes.iter().enumerate() {
                let size = c.rewritten.get(&f).map_or(old, |r| r.0);
                match wide {
                    true => data.extend_from_slice(&size.to_be_bytes()),
                    false => data.extend_from_slice(
                        &u32::try_from(size)
                            .map_err(|_| "a file grew past 4 GiB")?
                            .to_be_bytes(),
                    ),
                }
            }
            Ok(Some(Item { data, ..i.clone() }))
        }
        SIZE | LONGSIZE => {
            let old = match i.kind {
                INT32 if i.data.len() == 4 => u64::from(crate::bytes::be::<u32>([
                    i.data[0], i.data[1], i.data[2], i.data[3],
                ])),
                INT64 if i.data.len() == 8 => {
                    crate::bytes::be::<u64>(i.data[..8].try_into().unwrap_or_default())
                }
                _ => return Err(format!("its tag {} is not one number", i.tag)),
            };
            let new = u64::try_from((i128::from(old) + c.size_delta).max(0)).unwrap_or(0);
            Ok(Some(Item::number(i.tag, i.kind == INT64, new)))
        }
        ARCHIVESIZE => Ok(Some(Item::number(ARCHIVESIZE, false, c.payload.2))),
        PAYLOADDIGEST => Ok(Some(strings(PAYLOADDIGEST, &[c.payload.0.as_bytes()]))),
        PAYLOADDIGESTALT => Ok(Some(strings(PAYLOADDIGESTALT, &[c.payload.1.as_bytes()]))),
        _ => Ok(None),
    })
    .map_err(damaged)?;
    let removed = unsign(&mut o, MAIN_SIGNATURES);
    if !c.removed.is_empty() {
        drop_files(&mut o, n, c.removed)?;
    }
    Ok((o, removed))
}

/// Drops the values of the files `removed` (of `n`) from each per-file
/// array of `o`; an array of `n` values that is not known either way is
/// refused, never guessed at.
fn drop_files(o: &mut Owned, n: usize, removed: &BTreeSet<usize>) -> Result<(), Error> {
    if removed.len() >= n {
        return Err(Error::Refused(
            "every file of it would be removed, and rpm writes no package without files: remove \
             the package instead"
                .into(),
        ));
    }
    let keep: Vec<bool> = (0..n).map(|i| !removed.contains(&i)).collect();
    for i in o.items() {
        let scalar = matches!(i.kind, STRING | BIN | I18NSTRING);
        let per_file = PER_FILE.contains(&i.tag);
        if !per_file && !scalar && i.count as usize == n && !NOT_PER_FILE.contains(&i.tag) {
            return Err(Error::Refused(format!(
                "its header's tag {} holds {n} values, one per file perhaps, and prune does not \
                 know the tag: it removes no file from such a package",
                i.tag
            )));
        }
    }
    o.map(|i| match PER_FILE.contains(&i.tag) {
        true => i.keeping(&keep).map(Some),
        false => Ok(None),
    })
    .map_err(Error::Damaged)
}

/// Removes the entries of `tags` from `o`; the names of those it had.
fn unsign(o: &mut Owned, tags: &[(u32, &'static str)]) -> Vec<&'static str> {
    tags.iter()
        .filter(|(tag, _)| o.remove(*tag))
        .filter_map(|(_, name)| (!name.is_empty()).then_some(*name))
        .collect()
}

/// The signature header `sig` made true of the new main header `main`
/// (its bytes), a payload of `payload_len` bytes compressed and
/// `archive_len` uncompressed, and `md5` (of header and payload): its
/// signatures removed, their names returned.
pub(super) fn signature(
    sig: &Header<'_>,
    main: &[u8],
    (payload_len, archive_len): (u64, u64),
    md5: &[u8],
) -> Result<(Owned, Vec<&'static str>), Error> {
    let mut o = Owned::of(sig).map_err(Error::Damaged)?;
    let was = o.to_bytes().map_err(Error::Refused)?.len();
    let removed = unsign(&mut o, SIGNATURES);
    if o.get(SIG_SHA1).is_some() {
        o.set(Item::string(SIG_SHA1, &hex(&sha1::Sha1::digest(main))));
    }
    if o.get(SIG_SHA256).is_some() {
        o.set(Item::string(SIG_SHA256, &hex(&sha2::Sha256::digest(main))));
    }
    if o.get(SIG_MD5).is_some() {
        o.set(Item::bin(SIG_MD5, md5));
    }
    let total = main.len() as u64 + payload_len;
    size_pair(&mut o, (SIG_SIZE, SIG_LONGSIZE), total);
    size_pair(&mut o, (SIG_PAYLOADSIZE, SIG_LONGARCHIVESIZE), archive_len);
    if !removed.is_empty() {
        reserve(&mut o, was)?;
    }
    Ok((o, removed))
}

/// The names of the signatures the signature header `sig` has: those a
/// rewrite removes.
pub(super) fn signatures_of(sig: &Header<'_>) -> Result<Vec<&'static str>, Error> {
    let mut o = Owned::of(sig).map_err(Error::Damaged)?;
    Ok(unsign(&mut o, SIGNATURES))
}

/// As `rpmsign --delsign` does: the reserved space of `o`, if it has one,
/// grown by the bytes the signatures removed took, so that the header is
/// `was` bytes long again and `rpmsign --addsign` can sign in place. Where
/// no reserved space makes it so, the space stays as it was.
fn reserve(o: &mut Owned, was: usize) -> Result<(), Error> {
    let Some(old) = o.get(SIG_RESERVEDSPACE).cloned() else {
        return Ok(());
    };
    let mut count = old.data.len();
    // Data laid out after it may move by its alignment: a few tries.
    for _ in 0..4 {
        let now = o.to_bytes().map_err(Error::Refused)?.len();
        if now == was {
            return Ok(());
        }
        match (count + was).checked_sub(now) {
            Some(n) if n > 0 => count = n,
            _ => break,
        }
        o.set(Item::bin(SIG_RESERVEDSPACE, &vec![0; count]));
    }
    o.set(old);
    Ok(())
}

/// Sets the size `n` in the 32-bit tag and the 64-bit tag of `pair` that
/// `o` has; a 32-bit tag too small for it gives way to the 64-bit one.
fn size_pair(o: &mut Owned, (narrow, wide): (u32, u32), n: u64) {
    if o.get(narrow).is_some() {
        match u32::try_from(n) {
            Ok(_) => o.set(Item::number(narrow, false, n)),
            Err(_) => {
                o.remove(narrow);
                o.set(Item::number(wide, true, n));
            }
        }
    }
    if o.get(wide).is_some() {
        o.set(Item::number(wide, true, n));
    }
}
