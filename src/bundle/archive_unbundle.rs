//! Unbundling a static library of bundles (`clang-offload-bundler -unbundle
//! -type=a`): one device archive per requested target.
//!
//! What LLVM 22 does (`OffloadBundler::UnbundleArchive` and
//! `CheckHeterogeneousArchive` in `clang/lib/Driver/OffloadBundler.cpp`,
//! checked against the installed tools; docs/formats/bundles.md
//! §8):
//!
//! - Members are read in archive order. A compressed member (CCOB) is
//!   decompressed first. Its bundle is read as an object bundle if it is an
//!   object file, else as a binary bundle; text bundles are not recognised,
//!   and members without bundle entries are skipped.
//! - Each entry (in the reader's order: sections, or hash order for binary
//!   bundles) goes to **every** requested target it is compatible with
//!   ([`BundleId::serves`]), not just the first.
//! - The entry becomes a member named `stem-<ID as stored>stem<ext>`, with
//!   every `:` replaced by `_`, where `stem` is the archive member's file
//!   stem and `ext` is `.bc` if the entry's target ID contains `gfx`,
//!   `.cubin` if it contains `sm_`, and the member's own extension
//!   otherwise. An object member's host entry (one zero byte) yields the
//!   member without its bundle sections.
//! - Requests are keyed by normalized ID: requests that normalize alike
//!   share one list, holding each entry once per such request.
//!
//! Writing the output archives (and the error for a target nothing matched)
//! is left to the caller, with [`crate::archive::layout_gnu`].

use std::rc::Rc;

use super::id::{BundleId, conflicting_target_ids};
use super::object::{self, HOST_MARKER};
use super::{Format, Found};
use crate::error::{Error, Result};
use crate::host::ar::{self, ArError, Archive};
use crate::host::object::Aligned;

/// The message LLVM's archive reader gives for anything that does not start
/// with an archive magic, whatever its size.
pub const NOT_AN_ARCHIVE: &str = "file too small to be an archive";

/// One member of the input archive.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    /// The member's name as the archive gives it.
    pub name: &'a [u8],
    /// Its bytes.
    pub data: &'a [u8],
}

/// The names of a thin archive's members, in order (paths, relative to the
/// archive's directory unless absolute), or `None` for a regular archive:
/// the files the caller reads for [`members`].
pub fn thin_member_names(data: &[u8]) -> Result<Option<Vec<String>>> {
    if !ar::is_thin(data) {
        return Ok(None);
    }
    let file = Archive::parse(data).map_err(malformed)?;
    let mut names = Vec::new();
    for m in file.members() {
        names.push(m.map_err(malformed)?.name_lossy());
    }
    Ok(Some(names))
}

fn malformed(e: ArError) -> Error {
    Error::invalid("archive", format!("truncated or malformed archive ({e})"))
}

/// The members of the `ar` archive in `data`, in order, without the symbol
/// and long-name tables. Anything without an archive magic is
/// [`NOT_AN_ARCHIVE`]; a member running past the end of the file is an
/// error (LLVM 22 reads past its buffer there). A thin archive's members
/// are `thin`, the contents of the files [`thin_member_names`] names, in
/// order; each must have the size the archive records.
pub fn members<'a>(data: &'a [u8], thin: &[&'a [u8]]) -> Result<Vec<Member<'a>>> {
    if !ar::is_archive(data) {
        return Err(Error::usage(NOT_AN_ARCHIVE));
    }
    let file = Archive::parse(data).map_err(malformed)?;
    let mut out = Vec::new();
    for (i, m) in file.members().enumerate() {
        let m = m.map_err(malformed)?;
        let bytes = if m.is_thin() {
            let bytes = *thin.get(i).ok_or_else(|| {
                Error::invalid(
                    "archive",
                    format!(
                        "the thin archive's member file '{}' was not read",
                        m.name_lossy()
                    ),
                )
            })?;
            m.thin_data(bytes)
                .map_err(|e| Error::invalid("archive", e.to_string()))?
        } else {
            m.data().map_err(malformed)?
        };
        out.push(Member {
            name: m.name(),
            data: bytes,
        });
    }
    Ok(out)
}

/// LLVM's `sys::path::filename` for a member name (POSIX separators).
fn filename(name: &str) -> &str {
    match name.rsplit_once('/') {
        None => name,
        Some((_, "")) => ".",
        Some((_, last)) => last,
    }
}

/// LLVM's `sys::path::stem` and `extension` of a file name: split at the
/// last `.`, except for `.` and `..`.
fn stem_and_extension(file: &str) -> (&str, &str) {
    if file == "." || file == ".." {
        return (file, "");
    }
    match file.rfind('.') {
        None => (file, ""),
        Some(i) => (&file[..i], &file[i..]),
    }
}

/// The name LLVM gives the extracted entry `id` (as stored), with target ID
/// `target_id` (as parsed), of the archive member `member`.
pub fn entry_member_name(member: &str, id: &str, target_id: &str) -> String {
    let (stem, own_ext) = stem_and_extension(filename(member));
    let ext = if target_id.contains("gfx") {
        ".bc"
    } else if target_id.contains("sm_") {
        ".cubin"
    } else {
        own_ext
    };
    format!("{stem}-{id}{stem}{ext}").replace(':', "_")
}

/// Bytes of an extracted entry: a slice of the input archive, or a copy
/// (from a decompressed member, a stripped host object, or an object that
/// must be aligned for the archive writer to read its symbols).
#[derive(Debug, Clone)]
enum Blob<'a> {
    Borrowed(&'a [u8]),
    Owned(Rc<Aligned>),
}

/// One member of an output archive.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Extracted<'a> {
    /// Its name, as LLVM names the entries it extracts:
    /// `<stem>-<entry ID><stem><ext>` with every `:` as `_`, where `<stem>`
    /// is the archive member's, and `<ext>` `.bc` for an AMDGPU target ID,
    /// `.cubin` for a CUDA one, else the member's extension.
    pub name: String,
    data: Blob<'a>,
}

impl<'a> Extracted<'a> {
    /// Its bytes.
    pub fn data(&self) -> &[u8] {
        match &self.data {
            Blob::Borrowed(b) => b,
            Blob::Owned(a) => a.bytes(),
        }
    }

    /// Its bytes when they are a slice of the input archive.
    pub fn borrowed(&self) -> Option<&'a [u8]> {
        match self.data {
            Blob::Borrowed(b) => Some(b),
            Blob::Owned(_) => None,
        }
    }
}

/// How each archive member's bytes are to be read.
pub trait Inflate {
    /// The member decompressed if it is a compressed bundle (LLVM's test:
    /// it starts with the `CCOB` magic and holds a whole common header), or
    /// `None`.
    fn inflate(&mut self, member: &Member<'_>) -> Result<Option<Vec<u8>>>;
}

impl<F: FnMut(&Member<'_>) -> Result<Option<Vec<u8>>>> Inflate for F {
    fn inflate(&mut self, member: &Member<'_>) -> Result<Option<Vec<u8>>> {
        self(member)
    }
}

/// The entries of one member's bundle: object or binary, never text.
/// `kind` is the member's format ([`object_kind`](super::object_kind)).
fn member_entries(data: &[u8], kind: Option<::object::FileKind>) -> Result<Vec<Found<'_>>> {
    let format = if kind.is_some() {
        Format::Object
    } else {
        Format::Binary
    };
    super::entries_of(data, format, kind)
}

fn in_member(name: &[u8], e: Error) -> Error {
    Error::invalid(
        format!("archive member '{}'", String::from_utf8_lossy(name)),
        e.to_string(),
    )
}

/// Unbundles the archive `archive` for `requests` (in `-targets` order):
/// for each request, the members of its output archive, in order.
///
/// Requests that normalize to the same ID get the same list, holding each
/// matching entry once per such request, as LLVM 22 builds it.
pub fn unbundle<'a>(
    archive: &'a [u8],
    thin: &[&'a [u8]],
    requests: &[BundleId],
    hip_openmp_compatible: bool,
    inflate: impl Inflate,
) -> Result<Vec<Vec<Extracted<'a>>>> {
    unbundle_with(
        archive,
        thin,
        requests,
        hip_openmp_compatible,
        inflate,
        HostObjects::Strip,
    )
}

/// What an object member's host entry becomes.
pub enum HostObjects<'f> {
    /// The member without its bundle sections, as llvm-objcopy writes it.
    Strip,
    /// An empty member, after calling the function with the archive
    /// member: what LLVM leaves with `-###`, where it prints the
    /// llvm-objcopy command (once per host entry) instead of running it.
    Empty(&'f mut dyn FnMut(&Member<'_>)),
}

/// [`unbundle`], with the host entries of object members made as `hosts`
/// says.
pub fn unbundle_with<'a>(
    archive: &'a [u8],
    thin: &[&'a [u8]],
    requests: &[BundleId],
    hip_openmp_compatible: bool,
    mut inflate: impl Inflate,
    mut hosts: HostObjects<'_>,
) -> Result<Vec<Vec<Extracted<'a>>>> {
    let keys: Vec<String> = requests.iter().map(BundleId::normalized).collect();
    // One list per distinct key, in first-appearance order.
    let mut key_slot: Vec<usize> = Vec::with_capacity(keys.len());
    let mut distinct: Vec<&str> = Vec::new();
    let mut slot_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for k in &keys {
        let slot = *slot_of.entry(k).or_insert_with(|| {
            distinct.push(k);
            distinct.len() - 1
        });
        key_slot.push(slot);
    }
    let mut lists: Vec<Vec<Extracted<'a>>> = vec![Vec::new(); distinct.len()];

    for member in members(archive, thin)? {
        let inflated = inflate.inflate(&member)?;
        let name = String::from_utf8_lossy(member.name).into_owned();
        let data: &[u8] = inflated.as_deref().unwrap_or(member.data);
        // The member's format, read once for its entries and its host's
        // object.
        let kind = super::object_kind(data);
        let found = member_entries(data, kind).map_err(|e| in_member(member.name, e))?;
        for entry in &found {
            let id_text = String::from_utf8_lossy(entry.id);
            let code_object = BundleId::parse(&id_text)
                .map_err(|_| Error::usage("Invalid bundle id read from code object"))?;
            let compatible: Vec<usize> = (0..requests.len())
                .filter(|&i| code_object.serves(&requests[i], hip_openmp_compatible))
                .collect();
            if compatible.is_empty() {
                continue;
            }
            // An object member's host entry: the object it is read as.
            let host_object = kind.filter(|_| entry.data == HOST_MARKER);
            let blob = if let (Some(_), HostObjects::Empty(report)) = (host_object, &mut hosts) {
                report(&member);
                Blob::Owned(Rc::new(Aligned::copy_of(&[])))
            } else if let Some(kind) = host_object {
                let stripped = object::strip_of(data, kind)
                    .and_then(|w| w.to_vec(&[data]))
                    .map_err(|e| in_member(member.name, e))?;
                Blob::Owned(Rc::new(Aligned::copy_of(&stripped)))
            } else {
                // Entries of members read in place are slices of the archive.
                match sub_of(archive, entry.data) {
                    Some(d) if inflated.is_none() && !needs_alignment(d) => Blob::Borrowed(d),
                    _ => Blob::Owned(Rc::new(Aligned::copy_of(entry.data))),
                }
            };
            let extracted = Extracted {
                name: entry_member_name(&name, &id_text, &code_object.target_id),
                data: blob,
            };
            for i in compatible {
                lists[key_slot[i]].push(extracted.clone());
            }
        }
    }
    Ok(key_slot.iter().map(|&s| lists[s].clone()).collect())
}

/// `sub` as a slice with the lifetime of `whole`, when it lies within it.
fn sub_of<'a>(whole: &'a [u8], sub: &[u8]) -> Option<&'a [u8]> {
    let start = (sub.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    whole.get(start..start.checked_add(sub.len())?)
}

/// Whether the archive writer would parse `data` as an ELF file that is not
/// aligned for object's reader.
fn needs_alignment(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF") && !crate::host::object::is_aligned(data)
}

/// LLVM's `-check-input-archive`: for each member (not decompressed), the
/// set of its bundle IDs must pass the target-ID conflict rule applied to
/// whole IDs. Fails with LLVM's message, naming the member and
/// `archive_name`.
pub fn check_archive(archive: &[u8], thin: &[&[u8]], archive_name: &str) -> Result<()> {
    for member in members(archive, thin)? {
        let kind = super::object_kind(member.data);
        let found = member_entries(member.data, kind).map_err(|e| in_member(member.name, e))?;
        let ids: Vec<String> = found
            .iter()
            .map(|f| String::from_utf8_lossy(f.id).into_owned())
            .collect();
        if let Some((a, b)) = conflicting_target_ids(ids.iter().map(String::as_str)) {
            return Err(Error::usage(format!(
                "conflicting TargetIDs [{a}, {b}] found in {} of {archive_name}",
                String::from_utf8_lossy(member.name)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::binary::{EntrySpec, layout};

    fn binary_bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let specs: Vec<EntrySpec> = entries
            .iter()
            .map(|(id, d)| EntrySpec {
                id: (*id).into(),
                size: d.len() as u64,
            })
            .collect();
        let mut out = Vec::new();
        let data: Vec<&[u8]> = entries.iter().map(|e| e.1).collect();
        layout(&specs, 1)
            .unwrap()
            .write_to(&mut out, &data)
            .unwrap();
        out
    }

    fn archive_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let m: Vec<crate::archive::Member> = members
            .iter()
            .map(|(n, d)| crate::archive::Member {
                name: (*n).into(),
                data: d,
            })
            .collect();
        let l = crate::archive::layout_gnu(&m, true).unwrap();
        let mut out = Vec::new();
        let data: Vec<&[u8]> = members.iter().map(|m| m.1).collect();
        l.write_to(&mut out, &data).unwrap();
        out
    }

    fn none(_: &Member<'_>) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    #[test]
    fn names_follow_llvm() {
        assert_eq!(
            entry_member_name(
                "f2.o",
                "openmp-amdgcn-amd-amdhsa--gfx906:xnack+",
                "gfx906:xnack+"
            ),
            "f2-openmp-amdgcn-amd-amdhsa--gfx906_xnack+f2.bc"
        );
        assert_eq!(
            entry_member_name("r2.o", "openmp-nvptx64-nvidia-cuda-unknown-sm_70", "sm_70"),
            "r2-openmp-nvptx64-nvidia-cuda-unknown-sm_70r2.cubin"
        );
        assert_eq!(
            entry_member_name("r2.o", "openmp-x86_64-unknown-linux-gnu-", ""),
            "r2-openmp-x86_64-unknown-linux-gnu-r2.o"
        );
        assert_eq!(
            entry_member_name("dir/x.tar.gz", "hip-amdgcn-amd-amdhsa--", ""),
            "x.tar-hip-amdgcn-amd-amdhsa--x.tar.gz"
        );
        assert_eq!(
            entry_member_name("noext", "a-b-c-d-e-", ""),
            "noext-a-b-c-d-e-noext"
        );
    }

    #[test]
    fn every_compatible_target_gets_the_entry() {
        let b = binary_bundle(&[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hip-amdgcn-amd-amdhsa--gfx906", b"DEV906"),
        ]);
        let a = archive_of(&[("one.o", &b), ("plain.txt", b"hello")]);
        let reqs: Vec<BundleId> = [
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
            "hip-amdgcn-amd-amdhsa--gfx90a",
        ]
        .iter()
        .map(|t| BundleId::parse(t).unwrap())
        .collect();
        let out = unbundle(&a, &[], &reqs, false, none).unwrap();
        assert_eq!(out[0].len(), 1);
        assert_eq!(out[1].len(), 1);
        assert!(out[2].is_empty());
        assert_eq!(out[0][0].name, "one-hip-amdgcn-amd-amdhsa--gfx906one.bc");
        assert_eq!(out[0][0].data(), b"DEV906");
        assert!(out[0][0].borrowed().is_some());
    }

    #[test]
    fn requests_that_normalize_alike_share_a_doubled_list() {
        let b = binary_bundle(&[("openmp-amdgcn-amd-amdhsa--", b"X")]);
        let a = archive_of(&[("m.o", &b)]);
        let reqs: Vec<BundleId> = [
            "openmp-amdgcn-amd-amdhsa-gfx906",
            "openmp-amdgcn-amd-amdhsa-gfx908",
        ]
        .iter()
        .map(|t| BundleId::parse(t).unwrap())
        .collect();
        let out = unbundle(&a, &[], &reqs, false, none).unwrap();
        assert_eq!(out[0].len(), 2);
        assert_eq!(out[1].len(), 2);
    }

    #[test]
    fn non_archives_and_bad_members() {
        for d in [&b""[..], b"abc", b"\x7fELF and more bytes than eight"] {
            assert_eq!(members(d, &[]).unwrap_err().to_string(), NOT_AN_ARCHIVE);
        }
        assert!(members(b"!<arch>\n", &[]).unwrap().is_empty());
        let a = archive_of(&[("m.o", b"0123456789")]);
        let mut lying = a.clone();
        let at = lying.len() - 10 - 60 + 48;
        lying[at..at + 10].copy_from_slice(b"99999     ");
        let e = members(&lying, &[]).unwrap_err().to_string();
        assert!(e.contains("m.o"), "{e}");
        for cut in 0..a.len() {
            let _ = members(&a[..cut], &[]);
            let _ = check_archive(&a[..cut], &[], "x.a");
            let _ = unbundle(&a[..cut], &[], &[], false, none);
        }
    }

    #[test]
    fn conflict_check_uses_whole_ids() {
        let b = binary_bundle(&[
            ("hip-amdgcn-amd-amdhsa--gfx906", b"1"),
            ("hip-amdgcn-amd-amdhsa--gfx906:xnack+", b"2"),
        ]);
        let a = archive_of(&[("m.o", &b)]);
        assert_eq!(
            check_archive(&a, &[], "lib.a").unwrap_err().to_string(),
            "conflicting TargetIDs [hip-amdgcn-amd-amdhsa--gfx906, \
             hip-amdgcn-amd-amdhsa--gfx906:xnack+] found in m.o of lib.a"
        );
    }

    #[test]
    fn bad_ids_are_llvm_errors() {
        let b = binary_bundle(&[("not-an-id", b"1")]);
        let a = archive_of(&[("m.o", &b)]);
        let e = unbundle(&a, &[], &[], false, none).unwrap_err().to_string();
        assert_eq!(e, "Invalid bundle id read from code object");
    }
}
