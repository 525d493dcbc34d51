//! Where the runs write: only inside their output folder. A file name
//! made from what an input says (a bundle entry's ID, a URI's file name)
//! is one path component ([`file_name`]); it is written through
//! [`Output::create_in`] on the folder, never through a symbolic link
//! already there ([`write_in`]). The scripts join such names into paths
//! and write wherever they lead.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

use crate::files::Output;

/// `name` made one path component: each `/` becomes `%2F`, each NUL
/// `%00` and each `%` `%25` (so that two names stay two files); every
/// other byte stays. A name that would still be `.` or `..` (or nothing)
/// has its first byte encoded too. Names without those bytes (every
/// entry ID a compiler writes) are unchanged.
pub(super) fn file_name(name: &[u8]) -> OsString {
    let mut out = Vec::with_capacity(name.len());
    for &b in name {
        match b {
            b'/' | b'%' | 0 => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
            _ => out.push(b),
        }
    }
    match out.as_slice() {
        b"" => out = b"%00".to_vec(),
        b"." | b".." => {
            out.splice(..1, b"%2E".iter().copied());
        }
        _ => {}
    }
    OsString::from_vec(out)
}

/// Writes `bytes` as the file `name` (one path component: see
/// [`file_name`]) in the folder `dir` (`""`: the current one), in one
/// step. A symbolic link at that name is refused, not followed nor
/// replaced; so is a name that is no single component.
pub(super) fn write_in(dir: &str, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    let dir = Path::new(if dir.is_empty() { "." } else { dir });
    let b = name.as_bytes();
    if b.is_empty() || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not one file name: not written",
        ));
    }
    if std::fs::symlink_metadata(dir.join(name)).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "a symbolic link is in the way: not written",
        ));
    }
    let mut out = Output::create_in(dir, name)?;
    out.write_all(bytes)?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_component_and_distinct() {
        let id = |s: &[u8]| file_name(s).into_vec();
        assert_eq!(
            id(b"lib.so:1.hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
            b"lib.so:1.hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"
        );
        assert_eq!(id(b"a/../../etc/x"), b"a%2F..%2F..%2Fetc%2Fx");
        assert_eq!(id(b"a%2Fb"), b"a%252Fb");
        assert_eq!(id(b".."), b"%2E.");
        assert_eq!(id(b"."), b"%2E");
        assert_eq!(id(b""), b"%00");
        assert_eq!(id(b"a\0b"), b"a%00b");
        assert_eq!(id(b"\xff"), b"\xff");
    }

    #[test]
    fn a_link_in_the_way_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        std::os::unix::fs::symlink(&target, d.path().join("x.co")).unwrap();
        let dir = d.path().to_str().unwrap();
        let e = write_in(dir, OsStr::new("x.co"), b"evil").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert!(write_in(dir, OsStr::new("../y"), b"evil").is_err());
        write_in(dir, OsStr::new("ok.co"), b"fine").unwrap();
        assert_eq!(std::fs::read(d.path().join("ok.co")).unwrap(), b"fine");
    }
}
