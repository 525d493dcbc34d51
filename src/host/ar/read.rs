//! `ar` archives, as readers of device code walk them: the members in
//! order, without the symbol and long-name tables, each with its name
//! (GNU `/123` long names and BSD `#1/N` names resolved, as `object` and
//! LLVM read them), where its bytes lie, and its bytes, or for a thin
//! archive the file that holds them.
//!
//! Regular (`!<arch>\n`), thin (`!<thin>\n`) and AIX big (`<bigaf>\n`)
//! archives are read through `object`'s archive reader; this module adds
//! the checks every caller needs (a member that runs past the end of the
//! file, a thin member file of the wrong size) and one error type.

use std::fmt;
use std::path::{Path, PathBuf};

use object::read::archive::{ArchiveFile, ArchiveMember};

/// The magic at the start of every archive.
pub(crate) const MAGIC: &[u8; 8] = b"!<arch>\n";
/// The magic of a thin archive (GNU `ar rcT`).
pub(crate) const THIN_MAGIC: &[u8; 8] = b"!<thin>\n";

/// What is wrong with an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArError {
    /// The archive's structure cannot be read (a bad magic, a header that
    /// is not one, a name that points nowhere): `object`'s words.
    Malformed(String),
    /// A member whose bytes run past the end of the archive.
    Truncated {
        /// The member's name.
        name: String,
        /// Where its bytes start.
        offset: u64,
        /// How many its header says it has.
        size: u64,
        /// How many the file still holds from `offset`.
        remaining: u64,
    },
    /// A thin archive's member file that does not have the size the
    /// archive records.
    ThinSize {
        /// The member's name.
        name: String,
        /// The file's size.
        got: u64,
        /// The archive's.
        recorded: u64,
    },
}

impl fmt::Display for ArError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArError::Malformed(what) => f.write_str(what),
            ArError::Truncated {
                name,
                offset,
                size,
                remaining,
            } => write!(
                f,
                "member '{name}' at offset {offset:#x} has {size} bytes, but only {remaining} \
                 remain"
            ),
            ArError::ThinSize {
                name,
                got,
                recorded,
            } => write!(
                f,
                "the thin archive's member file '{name}' has {got} bytes, the archive says \
                 {recorded}"
            ),
        }
    }
}

impl std::error::Error for ArError {}

impl From<object::read::Error> for ArError {
    fn from(e: object::read::Error) -> ArError {
        ArError::Malformed(e.to_string())
    }
}

/// Whether `data` starts as an archive this module reads.
pub fn is_archive(data: &[u8]) -> bool {
    [&MAGIC[..], THIN_MAGIC, b"<bigaf>\n"]
        .iter()
        .any(|m| data.starts_with(m))
}

/// Whether `data` starts as a thin archive.
pub fn is_thin(data: &[u8]) -> bool {
    data.starts_with(THIN_MAGIC)
}

/// The file of a thin archive's member `name`: relative to the archive's
/// directory unless absolute, as `ar`, linkers and LLVM resolve it.
pub fn thin_member_path(archive: &Path, name: &str) -> PathBuf {
    archive.parent().unwrap_or(Path::new("")).join(name)
}

/// One entry of a regular (GNU or System V) archive as it lies in the
/// file, tables included: what a writer that keeps the archive's layout
/// needs ([`entries`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry<'data> {
    /// Where its 60-byte header starts.
    pub header: u64,
    /// The header's name field, trailing spaces removed (`/` is the symbol
    /// table, `/SYM64/` the 64-bit one, `//` the long-name table).
    pub name: &'data [u8],
    /// Where its bytes start.
    pub data: u64,
    /// How many bytes its header says it has.
    pub size: u64,
    /// Whether those bytes are in the archive: always, except for a thin
    /// archive's members (files of their own).
    pub in_file: bool,
}

/// The size of an archive member header.
pub const HEADER_LEN: u64 = 60;

/// Every entry of the regular or thin archive `data` (`!<arch>\n`,
/// `!<thin>\n`), in order, with the symbol and long-name tables: where
/// each header and each entry's bytes lie. BSD names (`#1/N`, whose bytes
/// start the entry's data) and other kinds of archive are errors.
pub fn entries(data: &[u8]) -> Result<Vec<RawEntry<'_>>, ArError> {
    let thin = is_thin(data);
    let magic: &[u8] = if thin { THIN_MAGIC } else { &MAGIC[..] };
    if !data.starts_with(magic) {
        return Err(ArError::Malformed("not a GNU or System V archive".into()));
    }
    let mut out = Vec::new();
    let mut at = magic.len() as u64;
    let len = data.len() as u64;
    while at < len {
        let bad = |what: &str| ArError::Malformed(format!("the member header at {at:#x} {what}"));
        let h = data
            .get(usize::try_from(at).unwrap_or(usize::MAX)..)
            .and_then(|d| d.get(..60))
            .ok_or_else(|| bad("is cut short"))?;
        if &h[58..60] != b"`\n" {
            return Err(bad("does not end as a header does"));
        }
        let size: u64 = std::str::from_utf8(&h[48..58])
            .ok()
            .and_then(|t| t.trim_end().parse().ok())
            .ok_or_else(|| bad("has no size"))?;
        let name_end = h[..16]
            .iter()
            .rposition(|&b| b != b' ')
            .map_or(0, |p| p + 1);
        let name = &h[..name_end];
        if name.starts_with(b"#1/") {
            let field = String::from_utf8_lossy(name);
            return Err(bad(&format!(
                "has a BSD name field ('{field}'): BSD archives are not rewritten"
            )));
        }
        let start = at + HEADER_LEN;
        let in_file = !thin || matches!(name, b"/" | b"//" | b"/SYM64/");
        if in_file && size > len - start.min(len) {
            return Err(ArError::Truncated {
                name: String::from_utf8_lossy(name).into_owned(),
                offset: start,
                size,
                remaining: len.saturating_sub(start),
            });
        }
        out.push(RawEntry {
            header: at,
            name,
            data: start,
            size,
            in_file,
        });
        at = if in_file {
            start + size + size % 2
        } else {
            start
        };
    }
    Ok(out)
}

/// An archive being read.
pub struct Archive<'data> {
    data: &'data [u8],
    file: ArchiveFile<'data>,
}

impl<'data> Archive<'data> {
    /// Reads the archive's global header and tables.
    pub fn parse(data: &'data [u8]) -> Result<Archive<'data>, ArError> {
        Ok(Archive {
            data,
            file: ArchiveFile::parse(data)?,
        })
    }

    /// Whether it is a thin archive (its members' bytes are files beside
    /// it).
    #[cfg(test)]
    pub fn is_thin(&self) -> bool {
        self.file.is_thin()
    }

    /// Its members, in order. After the first error the archive cannot be
    /// walked further, and the iterator ends.
    pub fn members(&self) -> impl Iterator<Item = Result<Member<'data>, ArError>> + '_ {
        let mut inner = self.file.members();
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let m = inner.next()?;
            Some(match m {
                Ok(m) => Ok(Member {
                    archive: self.data,
                    m,
                }),
                Err(e) => {
                    failed = true;
                    Err(e.into())
                }
            })
        })
    }
}

/// One member of an [`Archive`].
pub struct Member<'data> {
    archive: &'data [u8],
    m: ArchiveMember<'data>,
}

impl<'data> Member<'data> {
    /// Its name as the archive gives it (long names resolved).
    pub fn name(&self) -> &'data [u8] {
        self.m.name()
    }

    /// Its name, any bytes that are not UTF-8 replaced.
    pub fn name_lossy(&self) -> String {
        String::from_utf8_lossy(self.m.name()).into_owned()
    }

    /// Where its bytes start in the archive (for a thin member, where they
    /// would), and how many its header says it has.
    pub fn range(&self) -> (u64, u64) {
        self.m.file_range()
    }

    /// Whether its bytes are a file of its own (a thin archive's member).
    pub fn is_thin(&self) -> bool {
        self.m.is_thin()
    }

    /// Its bytes, inside the archive. A thin member has none here
    /// ([`Member::thin_data`] checks the file that holds them).
    pub fn data(&self) -> Result<&'data [u8], ArError> {
        if self.m.is_thin() {
            return Err(ArError::Malformed(format!(
                "the member '{}' of a thin archive is a file of its own",
                self.name_lossy()
            )));
        }
        self.m.data(self.archive).map_err(|_| {
            let (offset, size) = self.m.file_range();
            ArError::Truncated {
                name: self.name_lossy(),
                offset,
                size,
                remaining: (self.archive.len() as u64).saturating_sub(offset),
            }
        })
    }

    /// The bytes of a thin member's file, `file`, once checked to have
    /// the size the archive records.
    pub fn thin_data<'f>(&self, file: &'f [u8]) -> Result<&'f [u8], ArError> {
        let recorded = self.m.size();
        if file.len() as u64 != recorded {
            return Err(ArError::ThinSize {
                name: self.name_lossy(),
                got: file.len() as u64,
                recorded,
            });
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_lie_where_the_headers_say() {
        let a = archive(b"!<arch>\n", &[("a.o", b"abc"), ("b.o", b"wxyz")], false);
        let e = entries(&a).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].header, e[0].data, e[0].size), (8, 68, 3));
        assert_eq!(e[0].name, b"a.o/");
        // Odd sizes are padded to even.
        assert_eq!((e[1].header, e[1].data, e[1].size), (72, 132, 4));
        let mut cut = a.clone();
        cut.truncate(a.len() - 1);
        assert!(matches!(entries(&cut), Err(ArError::Truncated { .. })));
        assert_eq!(entries(b"!<thin>\n").unwrap(), vec![]);
        assert!(entries(b"<bigaf>\n").is_err());
        let thin = archive(b"!<thin>\n", &[("a.o", b"abc"), ("b.o", b"wxyz")], true);
        let e = entries(&thin).unwrap();
        assert_eq!((e[1].header, e[1].size, e[1].in_file), (68, 4, false));
        let mut bad = a.clone();
        bad[8 + 58] = b'x';
        assert!(entries(&bad).is_err());
    }

    fn header(name: &str, size: usize) -> Vec<u8> {
        let mut h =
            format!("{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n", 0, 0, 0, 644).into_bytes();
        assert_eq!(h.len(), 60);
        h.shrink_to_fit();
        h
    }

    fn archive(magic: &[u8], members: &[(&str, &[u8])], thin: bool) -> Vec<u8> {
        let mut a = magic.to_vec();
        for (name, data) in members {
            a.extend(header(&format!("{name}/"), data.len()));
            if !thin {
                a.extend_from_slice(data);
                if data.len() % 2 == 1 {
                    a.push(b'\n');
                }
            }
        }
        a
    }

    #[test]
    fn members_in_order_with_their_ranges() {
        let a = archive(b"!<arch>\n", &[("a.o", b"abc"), ("b.o", b"defg")], false);
        let ar = Archive::parse(&a).unwrap();
        assert!(!ar.is_thin() && is_archive(&a) && !is_thin(&a));
        let got: Vec<_> = ar.members().map(|m| m.unwrap()).collect();
        assert_eq!(got[0].name(), b"a.o");
        assert_eq!(got[0].data().unwrap(), b"abc");
        assert_eq!(got[0].range(), (68, 3));
        assert_eq!(got[1].name_lossy(), "b.o");
        assert_eq!(got[1].data().unwrap(), b"defg");
    }

    #[test]
    fn a_member_past_the_end_is_truncated_with_its_numbers() {
        let mut a = archive(b"!<arch>\n", &[("a.o", b"abcdef")], false);
        a.truncate(a.len() - 2);
        let ar = Archive::parse(&a).unwrap();
        let m = ar.members().next().unwrap().unwrap();
        let e = m.data().unwrap_err();
        assert_eq!(
            e,
            ArError::Truncated {
                name: "a.o".into(),
                offset: 68,
                size: 6,
                remaining: 4
            }
        );
        assert_eq!(
            e.to_string(),
            "member 'a.o' at offset 0x44 has 6 bytes, but only 4 remain"
        );
    }

    #[test]
    fn thin_members_are_files_of_the_recorded_size() {
        let a = archive(b"!<thin>\n", &[("x.o", b"12345")], true);
        let ar = Archive::parse(&a).unwrap();
        assert!(ar.is_thin() && is_thin(&a));
        let m = ar.members().next().unwrap().unwrap();
        assert!(m.is_thin() && m.data().is_err());
        assert_eq!(m.thin_data(b"12345").unwrap(), b"12345");
        assert_eq!(
            m.thin_data(b"123").unwrap_err().to_string(),
            "the thin archive's member file 'x.o' has 3 bytes, the archive says 5"
        );
        assert_eq!(
            thin_member_path(Path::new("lib/libx.a"), "x.o"),
            Path::new("lib/x.o")
        );
        assert_eq!(
            thin_member_path(Path::new("libx.a"), "/abs/x.o"),
            Path::new("/abs/x.o")
        );
    }

    #[test]
    fn a_broken_header_ends_the_walk_with_one_error() {
        let mut a = archive(b"!<arch>\n", &[("a.o", b"ab"), ("b.o", b"cd")], false);
        // The second header's terminator.
        let second = 8 + 60 + 2;
        a[second + 58] = b'X';
        let ar = Archive::parse(&a).unwrap();
        let all: Vec<_> = ar.members().collect();
        assert_eq!(all.len(), 2);
        assert!(all[0].is_ok());
        assert!(matches!(all[1], Err(ArError::Malformed(_))));
        assert!(Archive::parse(b"!<arch>").is_err() || !is_archive(b"!<arch>"));
    }
}
