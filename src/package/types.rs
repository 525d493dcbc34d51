//! What every package reader shares: the kinds of package, a member's
//! contents and the receiver of members, and the error for a package whose
//! structure cannot be read.

use std::io::Read;

use super::compression::Compression;
use crate::error::{Error, Result};

/// What kind of package bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A zip archive (a wheel, a `.jar`, a `.conda`).
    Zip,
    /// A tar archive, compressed or not.
    Tar(Compression),
    /// A Debian package.
    Deb,
    /// One file compressed, not a tar archive (`libfoo.so.gz`): its one
    /// member is what it decompresses to.
    Compressed(Compression),
    /// A cpio archive in the portable ASCII formats (`newc`, `crc`,
    /// `odc`): initramfs images, what `rpm2cpio` writes.
    Cpio,
    /// An RPM package: its members are those of its compressed cpio
    /// payload.
    Rpm,
    /// A squashfs filesystem (version 4): its members are its files.
    Squashfs,
    /// A Singularity/Apptainer image (SIF): its members are the files of
    /// its squashfs partitions, and its other data objects.
    Sif,
    /// An AppImage (type 2): its members are the files of the squashfs
    /// after its runtime.
    AppImage,
}

impl Kind {
    /// One of each kind, for the formats `--help` lists ([`formats`]).
    const EACH: [Kind; 9] = [
        Kind::Zip,
        Kind::Deb,
        Kind::Rpm,
        Kind::Squashfs,
        Kind::Sif,
        Kind::AppImage,
        Kind::Tar(Compression::None),
        Kind::Cpio,
        Kind::Compressed(Compression::Gzip),
    ];

    /// The packages of this kind, as `--help` lists them.
    fn help(self) -> String {
        let methods = || {
            let names: Vec<&str> = super::compression::METHODS
                .iter()
                .map(|(c, _)| c.name())
                .collect();
            names.join(", ")
        };
        match self {
            Kind::Zip => "zip archives (wheels, .conda packages)".into(),
            Kind::Deb => "Debian .deb packages".into(),
            Kind::Tar(_) => format!(
                "tar archives, plain or compressed ({}; conda's .tar.bz2 included)",
                methods()
            ),
            Kind::Cpio => "cpio archives (newc, crc, odc: initramfs, rpm2cpio's output)".into(),
            Kind::Rpm => "RPM packages (.rpm; payloads in gzip, bzip2, xz, LZMA or zstd)".into(),
            Kind::Compressed(_) => format!("single compressed files ({})", methods()),
            Kind::Squashfs => "squashfs filesystems (gzip, lzo, xz, lz4 or zstd; snaps)".into(),
            Kind::Sif => "Singularity/Apptainer SIF images".into(),
            Kind::AppImage => "AppImages (type 2)".into(),
        }
    }
}

/// The packages the scanners and prune read, told by their contents, as
/// `--help` lists them: each [`Kind`], with every compression method
/// [`compression_of`](super::compression_of) tells.
pub(crate) fn formats() -> String {
    let kinds: Vec<String> = Kind::EACH.iter().map(|k| k.help()).collect();
    kinds.join("; ")
}

impl Kind {
    /// The indefinite article its name ([`Display`](std::fmt::Display))
    /// takes as it is said: "an RPM package", "an xz-compressed tar
    /// archive", "a zip archive".
    pub(crate) fn article(&self) -> &'static str {
        match self {
            Kind::Rpm
            | Kind::Sif
            | Kind::AppImage
            | Kind::Tar(
                Compression::Xz | Compression::Lzma | Compression::Lz4 | Compression::Lzip,
            )
            | Kind::Compressed(
                Compression::Xz | Compression::Lzma | Compression::Lz4 | Compression::Lzip,
            ) => "an",
            _ => "a",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kind::Zip => f.write_str("zip archive"),
            Kind::Tar(Compression::None) => f.write_str("tar archive"),
            Kind::Tar(c) => write!(f, "{}-compressed tar archive", c.name()),
            Kind::Deb => f.write_str("Debian package"),
            Kind::Compressed(c) => write!(f, "{}-compressed file", c.name()),
            Kind::Cpio => f.write_str("cpio archive"),
            Kind::Rpm => f.write_str("RPM package"),
            Kind::Squashfs => f.write_str("squashfs filesystem"),
            Kind::Sif => f.write_str("SIF image"),
            Kind::AppImage => f.write_str("AppImage"),
        }
    }
}

/// A member's contents.
pub enum Contents<'a, 'r> {
    /// Stored as is: the bytes, within the package's.
    Stored(&'a [u8]),
    /// Compressed: a stream of the member's bytes, and how many it says
    /// it has. The stream fails if the member is corrupt.
    Stream {
        /// Gives the member's bytes.
        reader: &'r mut dyn Read,
        /// The size the package declares.
        size: u64,
    },
    /// The one member of a compressed file: a stream of its bytes, whose
    /// number nothing declares (gzip keeps it modulo 2^32 only). The
    /// reader must bound what it takes. The stream fails if the data is
    /// corrupt.
    Unsized(&'r mut dyn Read),
}

/// What [`members`](super::members) does with each regular file of a package.
pub trait Members {
    /// One member: its path inside the package, and its contents or why
    /// they cannot be read (the walk goes on with the next member). An
    /// error returned here stops the walk and is returned by
    /// [`members`](super::members).
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()>;

    /// An entry of a tar archive that [`members`](super::members) does not
    /// hand over, being no regular file: a directory (`dir`), a link or a
    /// special file, by its path. A reader that must know every path (a
    /// container image's layers, where any entry hides a lower layer's
    /// file of that path) notes it here; by default nothing is done.
    fn skipped(&mut self, path: &str, dir: bool) {
        let _ = (path, dir);
    }
}

/// The error for a package whose structure cannot be read.
pub(super) fn corrupt(kind: Kind, what: impl std::fmt::Display) -> Error {
    Error::invalid(kind.to_string(), what.to_string())
}
