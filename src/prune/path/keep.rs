//! The metadata a file pruned in place keeps: its owner and group, every
//! mode bit (setuid, setgid and sticky included), every extended
//! attribute (file capabilities, ACLs, SELinux labels, `user.*`,
//! `trusted.*`) and its times, given to the pruned file before it takes
//! the old one's place ([`keep_all`]); what cannot be given is said
//! ([`NotKept`]), and the file is then refused and left as it was.
//!
//! The order matters: a change of owner clears setuid, setgid and file
//! capabilities, so the owner comes first, then the mode, then the
//! attributes.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;

use rustix::fs::{Gid, Mode, Uid, XattrFlags};
use rustix::io::Errno;

/// A piece of a file's metadata that could not be given to the pruned
/// file: `what` it is, in words, and why.
#[derive(Debug)]
pub(super) struct NotKept {
    /// What could not be kept (`its owner and group (0:0)`).
    pub(super) what: String,
    /// The failure.
    pub(super) source: io::Error,
}

impl NotKept {
    fn new(what: impl Into<String>, source: impl Into<io::Error>) -> NotKept {
        NotKept {
            what: what.into(),
            source: source.into(),
        }
    }

    /// What could not be kept and the error, as the C library words it.
    pub(super) fn text(&self) -> String {
        let os = match self.source.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code).to_string(),
            None => self.source.to_string(),
        };
        let os = os.rfind(" (os error ").map_or(os.as_str(), |i| &os[..i]);
        format!("{} cannot be given to the pruned file ({os})", self.what)
    }

    /// Why the file is refused, in words: [`NotKept::text`], and that the
    /// file is left as it was.
    pub(super) fn reason(&self) -> String {
        format!("{}: left as it was, not pruned", self.text())
    }
}

/// Sets the extended attribute `name` of a file to `value`.
pub(super) type SetXattr<'a> = &'a dyn Fn(&File, &CStr, &[u8]) -> io::Result<()>;

/// [`SetXattr`] by `fsetxattr`.
pub(super) fn set_xattr(file: &File, name: &CStr, value: &[u8]) -> io::Result<()> {
    Ok(rustix::fs::fsetxattr(
        file,
        name,
        value,
        XattrFlags::empty(),
    )?)
}

/// Gives `file` (the pruned file, not yet in place) the owner, group, mode
/// bits, extended attributes (of `src`, the file it replaces; each set
/// through `set`) and times of `meta` (the metadata of `src` as read; the
/// access time `accessed` instead where given: the one `src` had before
/// the run read it), in that order; fails saying the first that cannot be
/// given.
pub(super) fn keep_all(
    file: &File,
    src: &File,
    meta: &std::fs::Metadata,
    accessed: Option<std::time::SystemTime>,
    set: SetXattr<'_>,
) -> Result<(), NotKept> {
    let (uid, gid) = (meta.uid(), meta.gid());
    let owner = format!("its owner and group ({uid}:{gid})");
    let chown = rustix::fs::fchown(file, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
    let st = rustix::fs::fstat(file).map_err(|e| NotKept::new(owner.as_str(), e))?;
    if (st.st_uid, st.st_gid) != (uid, gid) {
        return Err(NotKept::new(owner, chown.err().unwrap_or(Errno::PERM)));
    }
    let mode = meta.mode() & 0o7777;
    keep_mode(file, mode)?;
    let want = xattrs(src).map_err(|e| NotKept::new("its extended attributes", e))?;
    let have = xattrs(file).map_err(|e| NotKept::new("its extended attributes", e))?;
    // What the new file got of its own (an ACL from the directory's
    // default ACL, a label) and the old one has not, goes.
    for (name, _) in have
        .iter()
        .filter(|(n, _)| !want.iter().any(|(w, _)| w == n))
    {
        rustix::fs::fremovexattr(file, name.as_c_str())
            .map_err(|e| NotKept::new(format!("the lack of extended attribute {name:?}"), e))?;
    }
    for (name, value) in &want {
        if have.iter().any(|(n, v)| n == name && v == value) {
            continue;
        }
        set(file, name, value)
            .map_err(|e| NotKept::new(format!("its extended attribute {name:?}"), e))?;
    }
    // An ACL set above also sets the mode's group bits (to what they were:
    // the ACL's mask); the mode is checked once more.
    keep_mode(file, mode)?;
    times(meta, accessed)
        .and_then(|t| file.set_times(t))
        .map_err(|e| NotKept::new("its times", e))
}

/// The access and modification times of `meta` (the access time
/// `accessed` instead where given), to set on another file.
pub(super) fn times(
    meta: &std::fs::Metadata,
    accessed: Option<std::time::SystemTime>,
) -> io::Result<std::fs::FileTimes> {
    let accessed = match accessed {
        Some(t) => t,
        None => meta.accessed()?,
    };
    Ok(std::fs::FileTimes::new()
        .set_accessed(accessed)
        .set_modified(meta.modified()?))
}

/// Gives `file` the mode bits `mode` (`0o7777` of them), checking that
/// they stay (the kernel drops setgid, silently, for a user outside the
/// file's group).
fn keep_mode(file: &File, mode: u32) -> Result<(), NotKept> {
    let what = || format!("its mode ({mode:04o})");
    rustix::fs::fchmod(file, Mode::from_raw_mode(mode)).map_err(|e| NotKept::new(what(), e))?;
    let st = rustix::fs::fstat(file).map_err(|e| NotKept::new(what(), e))?;
    if st.st_mode & 0o7777 != mode {
        return Err(NotKept::new(what(), Errno::PERM));
    }
    Ok(())
}

/// The mode bits and extended attributes of a file written through in
/// place (its other hard links kept): writing to a file clears its file
/// capabilities (and, but for root, setuid and setgid), which
/// [`Saved::restore`] gives back once the pruned bytes are in.
pub(super) struct Saved {
    mode: u32,
    xattrs: Vec<(CString, Vec<u8>)>,
}

impl Saved {
    /// The mode bits and extended attributes of `file` now.
    pub(super) fn of(file: &File) -> io::Result<Saved> {
        let st = rustix::fs::fstat(file)?;
        Ok(Saved {
            mode: st.st_mode & 0o7777,
            xattrs: xattrs(file)?,
        })
    }

    /// Gives `file` back the mode bits and attributes saved, where they
    /// changed.
    pub(super) fn restore(&self, file: &File) -> Result<(), NotKept> {
        let now = xattrs(file).map_err(|e| NotKept::new("its extended attributes", e))?;
        for (name, value) in &self.xattrs {
            if !now.iter().any(|(n, v)| n == name && v == value) {
                set_xattr(file, name, value)
                    .map_err(|e| NotKept::new(format!("its extended attribute {name:?}"), e))?;
            }
        }
        keep_mode(file, self.mode)
    }
}

/// The extended attributes of `file` (those this user may list: only
/// root sees `trusted.*`), each name with its value, in the file system's
/// order; none where the file system has none.
pub(super) fn xattrs(file: &File) -> io::Result<Vec<(CString, Vec<u8>)>> {
    let mut out = Vec::new();
    for name in list(file)?.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = CString::new(name).map_err(io::Error::other)?;
        match value(file, &name) {
            Ok(v) => out.push((name, v)),
            // Removed since it was listed.
            Err(Errno::NODATA) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// How many times a list or value that grows between asking its size and
/// reading it is asked for again.
const TRIES: usize = 8;

/// The names of `file`'s extended attributes, each ending in a NUL.
fn list(file: &File) -> io::Result<Vec<u8>> {
    for _ in 0..TRIES {
        let n = match rustix::fs::flistxattr_query(file) {
            Ok(n) => n,
            Err(Errno::NOTSUP) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; n];
        match rustix::fs::flistxattr(file, &mut buf[..]) {
            Ok(k) => {
                buf.truncate(k);
                return Ok(buf);
            }
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(Errno::RANGE.into())
}

/// The value of `file`'s extended attribute `name`.
fn value(file: &File, name: &CStr) -> rustix::io::Result<Vec<u8>> {
    for _ in 0..TRIES {
        let n = rustix::fs::fgetxattr_query(file, name)?;
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; n];
        match rustix::fs::fgetxattr(file, name, &mut buf[..]) {
            Ok(k) => {
                buf.truncate(k);
                return Ok(buf);
            }
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::RANGE)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A file in `dir` with `user.test` set (the file system of the
    /// temporary directory must take user attributes).
    fn with_user_xattr(dir: &std::path::Path) -> File {
        let path = dir.join("src");
        std::fs::write(&path, b"old").unwrap();
        let f = File::open(&path).unwrap();
        set_xattr(&f, c"user.test", b"kept").unwrap();
        f
    }

    /// Every attribute, the mode and the times go over; an attribute the
    /// new file has of its own and the old one lacks goes.
    #[test]
    fn attributes_mode_and_times_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let src = with_user_xattr(dir.path());
        std::fs::set_permissions(dir.path().join("src"), PermissionsExt::from_mode(0o2751))
            .unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        src.set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
        let meta = src.metadata().unwrap();
        let new = tempfile::tempfile_in(dir.path()).unwrap();
        set_xattr(&new, c"user.other", b"new's own").unwrap();
        keep_all(&new, &src, &meta, None, &set_xattr).unwrap();
        let got = xattrs(&new).unwrap();
        assert_eq!(got, vec![(c"user.test".to_owned(), b"kept".to_vec())]);
        let m = new.metadata().unwrap();
        assert_eq!(m.mode() & 0o7777, 0o2751);
        assert_eq!(m.modified().unwrap(), old);
    }

    /// An attribute that cannot be set fails, naming it and the error.
    #[test]
    fn an_attribute_that_cannot_be_set_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let src = with_user_xattr(dir.path());
        let meta = src.metadata().unwrap();
        let new = tempfile::tempfile_in(dir.path()).unwrap();
        let refuse = |_: &File, name: &CStr, _: &[u8]| -> io::Result<()> {
            match name == c"user.test" {
                true => Err(io::Error::from_raw_os_error(95)), // EOPNOTSUPP
                false => Ok(()),
            }
        };
        let e = keep_all(&new, &src, &meta, None, &refuse).unwrap_err();
        assert_eq!(
            e.reason(),
            "its extended attribute \"user.test\" cannot be given to the pruned file \
             (Operation not supported): left as it was, not pruned"
        );
    }

    /// Written through, a file gets back the mode and attributes saved
    /// before.
    #[test]
    fn saved_attributes_and_mode_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let f = with_user_xattr(dir.path());
        std::fs::set_permissions(dir.path().join("src"), PermissionsExt::from_mode(0o640)).unwrap();
        let saved = Saved::of(&f).unwrap();
        rustix::fs::fremovexattr(&f, c"user.test").unwrap();
        rustix::fs::fchmod(&f, Mode::from_raw_mode(0o600)).unwrap();
        saved.restore(&f).unwrap();
        assert_eq!(xattrs(&f).unwrap().len(), 1);
        assert_eq!(f.metadata().unwrap().mode() & 0o7777, 0o640);
    }
}
