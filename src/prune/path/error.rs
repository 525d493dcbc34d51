//! Why a file could not be pruned: [`PathError`], the file and what
//! failed.
//!
//! Each error is its message's first part (`'lib.so': cannot write`) and,
//! as its [`source`](std::error::Error::source), the cause (the I/O error,
//! the library's [`Error`]); the command line joins the chain with ": ",
//! every I/O error as the C library words it.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind};

/// What failed, for callers that branch on it ([`PathError::kind`]).
///
/// # Examples
///
/// A tar archive is not rewritten: holding an image the rules drop, it is
/// refused and stays as it was:
///
/// ```
/// use offload_kit::bundle::{self, Format};
/// use offload_kit::prune::{Destination, PathErrorKind, PathOptions, Ptx, Rules, Selection, prune_path};
/// use offload_kit::scan::Rule;
///
/// let dir = tempfile::tempdir()?;
/// let (host, gfx942) = (b"host".to_vec(), vec![2u8; 64]);
/// let entries = [
///     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
///     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// ];
/// let mut k = Vec::new();
/// bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut k, &[&host, &gfx942])?;
/// let mut tar = tar::Builder::new(Vec::new());
/// let mut header = tar::Header::new_gnu();
/// header.set_size(k.len() as u64);
/// tar.append_data(&mut header, "k.hipfb", &k[..])?;
/// let path = dir.path().join("k.tar");
/// std::fs::write(&path, tar.into_inner()?)?;
///
/// let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let mut opts = PathOptions::default();
/// opts.destination = Destination::InPlace;
/// let e = prune_path(&path, &keep, &opts).unwrap_err();
/// assert_eq!(e.kind(), PathErrorKind::Refused);
/// assert!(e.to_string().contains("it is a tar archive holding 1 device image(s) the rules drop"));
/// assert!(e.to_string().ends_with("prune does not rewrite such archives \
///                                  (unpack it, prune its files, pack it again)"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathErrorKind {
    /// The file (or a thin archive's member) could not be opened or read.
    Open,
    /// The pruned file could not be written, or given the input's metadata,
    /// or copied through the input's other hard links.
    Write,
    /// The file is of a kind that is not pruned (a tar archive, a cpio
    /// package, a zip with bytes in front of it), or not as asked (a thin
    /// archive but in place; a signed wheel or `.deb` that would change),
    /// or an output name cannot be made from it, or in place its owner,
    /// mode or an extended attribute cannot be given to the pruned file.
    Refused,
    /// What the file holds could not be pruned: damaged data, a rewrite
    /// the library refuses, a limit reached (the
    /// [`source`](std::error::Error::source) says which, where it is the
    /// library's [`Error`]).
    Content,
    /// Any other I/O failure (a temporary file, the metadata of a file
    /// just written).
    Io,
}

/// Why a file could not be pruned: which file, and what failed.
///
/// Its `Display` is the message's first part, naming the file (or the
/// member of an archive or wheel, `lib.a(k.o)`, `w.whl!/pkg/k.so`) and
/// what was being done; its source is the cause. Joined with ": " (each
/// I/O error without Rust's ` (os error N)`), they make the line the
/// command line prints after `error: `.
///
/// # Examples
///
/// ```
/// use offload_kit::prune::{PathErrorKind, PathOptions, Ptx, Rules, Selection, prune_path};
/// use offload_kit::scan::Rule;
///
/// let dir = tempfile::tempdir()?;
/// let missing = dir.path().join("missing.hipfb");
/// let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let e = prune_path(&missing, &keep, &PathOptions::default()).unwrap_err();
/// assert_eq!(e.kind(), PathErrorKind::Open);
/// assert_eq!(e.path(), missing);
/// assert_eq!(e.to_string(), format!("'{}': cannot open", missing.display()));
/// let cause = std::error::Error::source(&e).ok_or("no cause")?;
/// assert!(cause.downcast_ref::<std::io::Error>().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PathError {
    /// The file the failure is about.
    path: PathBuf,
    /// The message and its cause.
    inner: Inner,
}

/// A [`PathError`]'s message and cause: each variant words one way of
/// failing.
#[derive(Debug, thiserror::Error)]
enum Inner {
    #[error("'{name}': cannot open")]
    Open {
        name: String,
        #[source]
        source: io::Error,
    },
    #[error("'{name}': cannot write")]
    Write {
        name: String,
        #[source]
        source: Option<io::Error>,
    },
    /// The library's error on the bytes of `name`.
    #[error("'{name}'")]
    Content {
        name: String,
        #[source]
        source: Error,
    },
    /// A wheel the zip reader or writer fails on.
    #[error("'{name}'")]
    Zip {
        name: String,
        #[source]
        source: zip::result::ZipError,
    },
    /// A wheel's member failing as `what` says (`cannot be inflated`).
    #[error("'{name}': member '{member}' {what}")]
    Member {
        name: String,
        member: String,
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An I/O error about the file `name`, as the C library words it.
    #[error("'{name}': {}", OsText(.source))]
    Io {
        kind: PathErrorKind,
        name: String,
        #[source]
        source: io::Error,
    },
    /// `'NAME': WHY`, of the kind given.
    #[error("'{name}': {why}")]
    Said {
        kind: PathErrorKind,
        name: String,
        why: String,
    },
}

/// An I/O error as the C library words it: without Rust's ` (os error N)`
/// or whatever a library added after it (the path of a temporary file).
struct OsText<'a>(&'a io::Error);

impl fmt::Display for OsText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.0.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code).to_string(),
            None => self.0.to_string(),
        };
        f.write_str(s.rfind(" (os error ").map_or(s.as_str(), |i| &s[..i]))
    }
}

impl PathError {
    /// The file the failure is about: the input, the output, or a thin
    /// archive's member.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What failed.
    pub fn kind(&self) -> PathErrorKind {
        match &self.inner {
            Inner::Open { .. } => PathErrorKind::Open,
            Inner::Write { .. } => PathErrorKind::Write,
            Inner::Content { .. } | Inner::Zip { .. } => PathErrorKind::Content,
            Inner::Member { .. } => PathErrorKind::Content,
            Inner::Io { kind, .. } | Inner::Said { kind, .. } => *kind,
        }
    }

    /// Whether the file was refused, rather than failed: it is of a kind,
    /// or asks for a rewrite, that prune does not do (a tar archive, a
    /// signed wheel or PE image that would change, a container that would
    /// lose every image, something pointing past a container that would
    /// shrink), and nothing is wrong with it. `false` when it cannot be
    /// read or written, holds damaged data, or passes a limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use offload_kit::bundle::{self, Format};
    /// use offload_kit::prune::{PathOptions, Ptx, Rules, Selection, prune_path};
    /// use offload_kit::scan::Rule;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
    /// let missing = prune_path(&dir.path().join("missing.so"), &keep, &PathOptions::default());
    /// assert!(!missing.unwrap_err().refused());
    /// // A zip with bytes in front of it (a self-extracting archive),
    /// // holding a HIP bundle whose gfx942 entry the rules drop.
    /// let (gfx90a, gfx942) = (vec![1u8; 64], vec![2u8; 64]);
    /// let entries = [
    ///     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), 64),
    ///     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), 64),
    /// ];
    /// let mut hipfb = Vec::new();
    /// bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut hipfb, &[&gfx90a, &gfx942])?;
    /// let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    /// zip.start_file("k.hipfb", zip::write::SimpleFileOptions::default())?;
    /// std::io::Write::write_all(&mut zip, &hipfb)?;
    /// let mut sfx = b"#!/bin/sh\nexit 0\n".to_vec();
    /// sfx.extend_from_slice(&zip.finish()?.into_inner());
    /// let path = dir.path().join("k.sfx");
    /// std::fs::write(&path, sfx)?;
    /// assert!(prune_path(&path, &keep, &PathOptions::default()).unwrap_err().refused());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refused(&self) -> bool {
        let refusal = |e: &Error| {
            matches!(
                e.kind(),
                ErrorKind::Usage(_)
                    | ErrorKind::Unsupported(_)
                    | ErrorKind::UnsupportedTriple { .. }
            )
        };
        match &self.inner {
            Inner::Said { kind, .. } | Inner::Io { kind, .. } => *kind == PathErrorKind::Refused,
            Inner::Content { source, .. } => refusal(source),
            Inner::Member { source, .. } => source.downcast_ref::<Error>().is_some_and(refusal),
            Inner::Open { .. } | Inner::Write { .. } | Inner::Zip { .. } => false,
        }
    }

    fn new(path: &Path, inner: Inner) -> PathError {
        PathError {
            path: path.to_path_buf(),
            inner,
        }
    }

    /// `path` cannot be opened or read.
    pub(crate) fn open(path: &Path, source: io::Error) -> PathError {
        let name = crate::files::shown(path).into_owned();
        PathError::new(path, Inner::Open { name, source })
    }

    /// `path` cannot be written (`source`: why, where there is an I/O
    /// error to say it).
    pub(crate) fn write(path: &Path, source: impl Into<Option<io::Error>>) -> PathError {
        let name = crate::files::shown(path).into_owned();
        let source = source.into();
        PathError::new(path, Inner::Write { name, source })
    }

    /// The library fails on the bytes of `name` (`path`, or a member of
    /// it).
    pub(crate) fn content(path: &Path, name: &str, source: Error) -> PathError {
        let name = name.to_string();
        PathError::new(path, Inner::Content { name, source })
    }

    /// The zip crate fails on the wheel `path`.
    pub(crate) fn zip(path: &Path, source: zip::result::ZipError) -> PathError {
        let name = crate::files::shown(path).into_owned();
        PathError::new(path, Inner::Zip { name, source })
    }

    /// The zip `path` fails as the zip layer says: each of its errors
    /// made the one prune gave before that layer was its own.
    pub(crate) fn zip_file(path: &Path, e: crate::package::zipfile::Error) -> PathError {
        use crate::package::zipfile::Error as E;
        match e {
            E::Zip(e) => PathError::zip(path, e),
            E::Damaged(why) => PathError::said(
                PathErrorKind::Content,
                path,
                &crate::files::shown(path),
                why,
            ),
            E::Member {
                member,
                doing,
                source,
            } => PathError::member(path, &member, doing, source),
            E::Write(e) => PathError::io(PathErrorKind::Write, path, e),
        }
    }

    /// A rewrite of the zip `path` that stopped: on the zip
    /// ([`PathError::zip_file`]), or on prune's own error.
    pub(crate) fn failed(path: &Path, e: crate::package::zipfile::Failed<PathError>) -> PathError {
        match e {
            crate::package::zipfile::Failed::Package(e) => PathError::zip_file(path, e),
            crate::package::zipfile::Failed::Caller(e) => e,
        }
    }

    /// The member `member` of the wheel `path` fails as `what` says.
    pub(crate) fn member(
        path: &Path,
        member: &str,
        what: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> PathError {
        let (name, member) = (crate::files::shown(path).into_owned(), member.to_string());
        let source = source.into();
        PathError::new(
            path,
            Inner::Member {
                name,
                member,
                what,
                source,
            },
        )
    }

    /// An I/O error about `path`, of the kind given: the file, then the
    /// error as the C library words it.
    pub(crate) fn io(kind: PathErrorKind, path: &Path, source: io::Error) -> PathError {
        let name = crate::files::shown(path).into_owned();
        PathError::new(path, Inner::Io { kind, name, source })
    }

    /// `'NAME': WHY`, about `path`, of the kind given (`name`: `path`, or
    /// a member of it).
    pub(crate) fn said(
        kind: PathErrorKind,
        path: &Path,
        name: &str,
        why: impl Into<String>,
    ) -> PathError {
        let (name, why) = (name.to_string(), why.into());
        PathError::new(path, Inner::Said { kind, name, why })
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl PathError {
    /// The error and its causes joined by ": ", as the command line prints
    /// them (but for the C library's wording of I/O errors).
    pub(crate) fn chain(&self) -> String {
        let mut parts = vec![self.to_string()];
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            parts.push(c.to_string());
            cause = c.source();
        }
        parts.join(": ")
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.inner)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `e` and its causes joined by ": " ([`PathError::chain`]).
    pub(crate) fn chain(e: &PathError) -> String {
        e.chain()
    }

    #[test]
    fn each_error_names_its_file_and_what_failed() {
        let p = Path::new("dir/x.so");
        let e = PathError::open(p, io::Error::other("gone"));
        assert_eq!(
            (e.kind(), chain(&e).as_str()),
            (PathErrorKind::Open, "'dir/x.so': cannot open: gone")
        );
        let e = PathError::write(p, None);
        assert_eq!(
            (e.kind(), chain(&e).as_str()),
            (PathErrorKind::Write, "'dir/x.so': cannot write")
        );
        let e = PathError::said(PathErrorKind::Refused, p, "dir/x.so(m.o)", "no");
        assert_eq!(
            (e.kind(), chain(&e).as_str()),
            (PathErrorKind::Refused, "'dir/x.so(m.o)': no")
        );
        let e = PathError::content(p, "dir/x.so", Error::invalid("bundle", "bad"));
        assert_eq!(chain(&e), "'dir/x.so': invalid bundle: bad");
        assert_eq!(e.path(), p);
        // A member's I/O error stays an I/O error to its reader (the
        // command line words it as the C library does).
        let e = PathError::member(p, "m.so", "cannot be inflated", io::Error::other("short"));
        assert_eq!(
            chain(&e),
            "'dir/x.so': member 'm.so' cannot be inflated: short"
        );
        let cause = std::error::Error::source(&e).unwrap();
        assert!(cause.downcast_ref::<io::Error>().is_some());
    }

    #[test]
    fn an_io_error_names_its_file_and_is_worded_as_the_c_library_words_it() {
        let wrapped = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} at path \"/d/.tmp1\"", io::Error::from_raw_os_error(2)),
        );
        let e = PathError::io(PathErrorKind::Io, Path::new("x"), wrapped);
        assert_eq!(e.to_string(), "'x': No such file or directory");
        let e = PathError::io(
            PathErrorKind::Io,
            Path::new("x"),
            io::Error::from_raw_os_error(13),
        );
        assert_eq!(e.to_string(), "'x': Permission denied");
    }
}
