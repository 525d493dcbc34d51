//! The main header's list of files, which names the entries of a payload in
//! the stripped cpio form (rpm ≥ 4.12 writes it for packages holding a file
//! of 4 GiB or more): each entry there carries only its index into this
//! list, its path and size come from here.

use std::collections::HashMap;

use super::header::Header;

/// Header tags of the file list.
const FILESIZES: u32 = 1028;
const FILEMODES: u32 = 1030;
const FILEDEVICES: u32 = 1095;
const FILEINODES: u32 = 1096;
const DIRINDEXES: u32 = 1116;
const BASENAMES: u32 = 1117;
const DIRNAMES: u32 = 1118;
const LONGFILESIZES: u32 = 5008;

/// The file type bits of a mode, those of a regular file and of a link.
const S_IFMT: u64 = 0o170_000;
const S_IFREG: u64 = 0o100_000;
const S_IFLNK: u64 = 0o120_000;

/// One file of the list, as a stripped payload entry stands for it.
pub(super) struct File {
    /// Its path, as the package installs it (`/usr/lib64/libx.so`).
    pub(super) path: String,
    /// How many bytes of data its payload entry carries.
    pub(super) size: u64,
    /// Whether it is a regular file (whose data is handed over).
    pub(super) regular: bool,
    /// Its mode, as `FILEMODES` gives it.
    pub(super) mode: u64,
}

/// The main header's files, by index.
pub(super) struct FileList {
    files: Vec<File>,
}

impl FileList {
    /// The files `h` lists: `BASENAMES`, each in the directory of
    /// `DIRNAMES` that `DIRINDEXES` gives, its size from `LONGFILESIZES`
    /// or else `FILESIZES`, its type from `FILEMODES`. Every array must
    /// have one value per file, every directory index name a directory.
    /// Of regular files sharing a device and inode (hard links), only the
    /// last carries data in the payload, as rpm writes them.
    pub(super) fn of(h: &Header<'_>) -> Result<FileList, String> {
        let missing = |tag: &str| format!("its payload names files by index, but it has no {tag}");
        let bases = h.strings(BASENAMES)?.ok_or_else(|| missing("BASENAMES"))?;
        let dirs = h.strings(DIRNAMES)?.ok_or_else(|| missing("DIRNAMES"))?;
        let n = bases.len();
        let per_file = |what: &str, v: Option<Vec<u64>>| match v {
            Some(v) if v.len() == n => Ok(v),
            Some(v) => Err(format!("it lists {n} files but {} {what}", v.len())),
            None => Err(missing(what)),
        };
        let dir_of = per_file("DIRINDEXES", h.int32s(DIRINDEXES)?)?;
        let sizes = match h.int64s(LONGFILESIZES)? {
            Some(v) => per_file("LONGFILESIZES", Some(v))?,
            None => per_file("FILESIZES", h.int32s(FILESIZES)?)?,
        };
        let modes = per_file("FILEMODES", h.int16s(FILEMODES)?)?;
        let links = match (h.int32s(FILEDEVICES)?, h.int32s(FILEINODES)?) {
            (Some(d), Some(i)) if d.len() == n && i.len() == n => Some((d, i)),
            _ => None,
        };
        // The last index of each regular file's device and inode.
        let mut last = HashMap::new();
        if let Some((devices, inodes)) = &links {
            for i in (0..n).filter(|&i| modes[i] & S_IFMT == S_IFREG) {
                last.insert((devices[i], inodes[i]), i);
            }
        }
        let mut files = Vec::with_capacity(n);
        for (i, base) in bases.iter().enumerate() {
            let dir = usize::try_from(dir_of[i])
                .ok()
                .and_then(|d| dirs.get(d))
                .ok_or_else(|| {
                    format!(
                        "file {i} is in directory {} of a list of {}",
                        dir_of[i],
                        dirs.len()
                    )
                })?;
            let regular = modes[i] & S_IFMT == S_IFREG;
            let linked_later = links
                .as_ref()
                .is_some_and(|(d, ino)| last.get(&(d[i], ino[i])).is_some_and(|&l| l != i));
            // Only regular files and symbolic links (their target) carry
            // data; the other entries are headers alone.
            let size = match modes[i] & S_IFMT {
                S_IFREG if linked_later => 0,
                S_IFREG | S_IFLNK => sizes[i],
                _ => 0,
            };
            let mut path = String::from_utf8_lossy(dir).into_owned();
            path.push_str(&String::from_utf8_lossy(base));
            files.push(File {
                path,
                size,
                regular,
                mode: modes[i],
            });
        }
        Ok(FileList { files })
    }

    /// The file of index `fx`, which a payload entry names.
    pub(super) fn get(&self, fx: u64) -> Result<&File, String> {
        usize::try_from(fx)
            .ok()
            .and_then(|i| self.files.get(i))
            .ok_or_else(|| {
                format!(
                    "a payload entry names file {fx}, but the header lists {} files",
                    self.files.len()
                )
            })
    }
}
