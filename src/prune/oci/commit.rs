//! The rewritten layout written: new blobs staged under temporary names
//! ([`Stage`]), then put in place in the order that keeps the layout
//! whole at every instant (see [`super`]).

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::super::path::{Destination, PathError, PathErrorKind, PathOptions, PathReport};
use super::layer::{self, Method};
use crate::files::{Allowance, Output, TempTree};
use crate::package::oci::{self, Index, reachable};
use crate::prune::anchor::LayoutAt;

/// The name a layer's blob is given until its digest is known (it is
/// written to a file with no name, or a temporary one, until then).
const TEMPORARY: &str = ".offload-kit-layer";

/// Where the new blobs go until the rewrite is complete.
pub(super) struct Stage {
    /// The directory they are written in: the layout's `blobs/sha256` in
    /// place, the temporary layout's otherwise.
    blobs: PathBuf,
    /// For a new layout: its temporary directory, and where it goes.
    new: Option<(TempTree, PathBuf)>,
    /// The new blobs, each an output named after its digest, not yet
    /// committed (files with no name until then, or temporary files a
    /// signal removes).
    staged: Vec<Output>,
    /// In place, the layout's directory and blob store as the walk
    /// reached them ([`LayoutAt`]): blobs and `index.json` are then
    /// written, and old blobs removed, through these handles alone.
    at: Option<LayoutAt>,
    /// What every byte written counts against: the layout's
    /// [`Allowance`] (`--max-uncompressed`).
    allowance: Arc<Allowance>,
}

/// An I/O error writing `path`.
fn cannot(path: &Path) -> impl Fn(std::io::Error) -> PathError + '_ {
    move |e| PathError::write(path, e)
}

impl Stage {
    /// The stage for `opts`'s destination; `None` in a dry run. A new
    /// layout's destination must not exist. In place, `at` holds the
    /// layout's handles, where it was reached through them. What it
    /// writes counts against the allowance of a layout of `size` bytes.
    pub(super) fn new(
        opts: &PathOptions,
        input: &Path,
        at: Option<LayoutAt>,
        size: u64,
    ) -> Result<Option<Stage>, PathError> {
        let allowance = Allowance::for_input(size, opts.prune.max_uncompressed);
        let dest = match &opts.destination {
            Destination::DryRun => return Ok(None),
            Destination::InPlace => {
                return Ok(Some(Stage {
                    blobs: input.join("blobs").join("sha256"),
                    new: None,
                    staged: Vec::new(),
                    at,
                    allowance,
                }));
            }
            other => match opts.output_path(input)? {
                Some(d) if *other != Destination::InPlace => d,
                _ => return Ok(None),
            },
        };
        if dest.symlink_metadata().is_ok() {
            let name = crate::files::shown(&dest).into_owned();
            let why = "it exists: prune writes an image layout as a new directory";
            return Err(PathError::said(PathErrorKind::Refused, &dest, &name, why));
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let tmp = TempTree::new_in(parent).map_err(cannot(&dest))?;
        let blobs = tmp.path().join("blobs").join("sha256");
        std::fs::create_dir_all(&blobs).map_err(cannot(&dest))?;
        Ok(Some(Stage {
            blobs,
            new: Some((tmp, dest)),
            staged: Vec::new(),
            at: None,
            allowance,
        }))
    }

    /// The handle of the blob store, in place where the layout was
    /// reached through handles; fails when it has none.
    fn store(&self) -> Option<Result<&Arc<OwnedFd>, PathError>> {
        let at = self.at.as_ref()?;
        Some(at.blobs.as_ref().ok_or_else(|| {
            let e = std::io::Error::from(std::io::ErrorKind::NotFound);
            PathError::write(&self.blobs, e)
        }))
    }

    /// A scratch file with no name beside the blobs.
    pub(super) fn scratch(&self, input: &Path) -> Result<File, PathError> {
        let io = |e| PathError::io(PathErrorKind::Io, input, e);
        match self.store() {
            Some(dir) => crate::files::unnamed_file(dir?).map_err(io),
            None => tempfile::tempfile_in(&self.blobs).map_err(io),
        }
    }

    /// A new blob being written beside the others, to be named `name`
    /// (with mode 0644, as umoci and skopeo write blobs).
    fn output(&self, name: &str) -> Result<Output, PathError> {
        let mut out = match self.store() {
            Some(dir) => Output::create_at(Arc::clone(dir?), OsStr::new(name)),
            None => Output::create_in(&self.blobs, OsStr::new(name)),
        }
        .map_err(cannot(&self.blobs))?
        .within(&self.allowance);
        temp_file(&mut out)?
            .set_permissions(blob_mode())
            .map_err(cannot(&self.blobs))?;
        Ok(out)
    }

    /// Stages the blob `bytes`, whose digest's hex is `hex`.
    pub(super) fn put(&mut self, hex: &str, bytes: &[u8]) -> Result<(), PathError> {
        let mut out = self.output(hex)?;
        out.write_all(bytes).map_err(cannot(&self.blobs))?;
        temp_file(&mut out)?
            .sync_all()
            .map_err(cannot(&self.blobs))?;
        self.staged.push(out);
        Ok(())
    }

    /// Stages the layer whose tar is `tar`, compressed with `m`: its
    /// digest's hex and size.
    pub(super) fn pack(
        &mut self,
        input: &Path,
        tar: &mut File,
        m: Method,
        threads: u32,
    ) -> Result<(String, u64), PathError> {
        // Named once its digest is known.
        let mut out = self.output(TEMPORARY)?;
        let (hex, size) = layer::pack(tar, m, temp_file(&mut out)?, threads)
            .map_err(|e| PathError::io(PathErrorKind::Write, input, e))?;
        // Counted now, as it is staged: written into the file, not
        // through the output.
        out.settle().map_err(cannot(&self.blobs))?;
        temp_file(&mut out)?
            .sync_all()
            .map_err(cannot(&self.blobs))?;
        out.rename(OsStr::new(&hex));
        self.staged.push(out);
        Ok((hex, size))
    }

    /// Puts the staged blobs in place under their digests.
    fn place(&mut self) -> Result<(), PathError> {
        for out in self.staged.drain(..) {
            out.commit().map_err(cannot(&self.blobs))?;
        }
        match self.store() {
            Some(dir) => sync_fd(dir?, &self.blobs),
            None => sync_dir(&self.blobs),
        }
    }

    /// Writes the layout: `new_index` (`None` when nothing changed) in
    /// place of `old`'s, in `input` or a new layout; the sizes after go
    /// into `rep`.
    pub(super) fn commit(
        mut self,
        input: &Path,
        old: &Index,
        new_index: Option<&[u8]>,
        rep: &mut PathReport,
    ) -> Result<(), PathError> {
        let Some((tmp, dest)) = self.new.take() else {
            let Some(new_index) = new_index else {
                rep.disk_after = Some(rep.disk_before);
                return Ok(());
            };
            return self.in_place(input, old, new_index, rep);
        };
        let root = tmp.path().to_path_buf();
        std::fs::copy(input.join("oci-layout"), root.join("oci-layout")).map_err(cannot(&dest))?;
        let index = new_index.unwrap_or(&old.bytes);
        self.allowance
            .take(index.len() as u64)
            .map_err(cannot(&dest))?;
        std::fs::write(root.join("index.json"), index).map_err(cannot(&dest))?;
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .map_err(cannot(&dest))?;
        self.place()?;
        let (theirs, ours) = (input.join("blobs").join("sha256"), self.blobs.clone());
        let read =
            |hex: &str| small_blob(&ours.join(hex)).or_else(|| small_blob(&theirs.join(hex)));
        for (hex, mt) in reachable(index, &read) {
            let (from, to) = (theirs.join(&hex), ours.join(&hex));
            if to.exists() || (layer::is_foreign(&mt) && !from.exists()) {
                continue;
            }
            let len = std::fs::metadata(&from).map_err(cannot(&dest))?.len();
            self.allowance.take(len).map_err(cannot(&dest))?;
            std::fs::copy(&from, &to).map_err(cannot(&dest))?;
        }
        tmp.persist(&dest).map_err(cannot(&dest))?;
        self.sizes(&dest, rep)
    }

    /// Writes the layout `input` in place: the staged blobs, then
    /// `new_index` over `old`'s, then the blobs only `old` reached
    /// removed. Where the layout was reached through handles, all of it
    /// in them, once they are checked to still be its directory and blob
    /// store ([`LayoutAt::still`]).
    fn in_place(
        mut self,
        input: &Path,
        old: &Index,
        new_index: &[u8],
        rep: &mut PathReport,
    ) -> Result<(), PathError> {
        #[cfg(test)]
        crate::prune::race::at(crate::prune::race::Phase::Commit, input);
        if let Some(at) = &self.at {
            at.still().map_err(|e| e.error(input))?;
        }
        self.place()?;
        let path = input.join("index.json");
        let index = OsStr::new("index.json");
        let (out, mode) = match &self.at {
            Some(at) => (
                Output::create_at(Arc::clone(&at.dir), index),
                rustix::fs::statat(&*at.dir, index, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map(|st| st.st_mode)
                    .ok(),
            ),
            None => (
                Output::create(&path),
                std::fs::metadata(&path).ok().map(|m| m.mode()),
            ),
        };
        let mut out = out.map_err(cannot(&path))?.within(&self.allowance);
        // Its read, write and execute bits: the new file is the
        // runner's, so setuid or setgid kept would be theirs (issue #71).
        let mode = mode.map_or_else(blob_mode, |m| {
            std::os::unix::fs::PermissionsExt::from_mode(m & 0o777)
        });
        temp_file(&mut out)?
            .set_permissions(mode)
            .map_err(cannot(&path))?;
        out.write_all(new_index).map_err(cannot(&path))?;
        temp_file(&mut out)?.sync_all().map_err(cannot(&path))?;
        out.commit().map_err(cannot(&path))?;
        match &self.at {
            Some(at) => sync_fd(&at.dir, input)?,
            None => sync_dir(input)?,
        }
        // Only now: the blobs the old index reached and the new does not.
        let blobs = input.join("blobs").join("sha256");
        let store = self.store().transpose()?.cloned();
        let read = |hex: &str| match &store {
            Some(dir) => small_blob_at(dir, hex),
            None => small_blob(&blobs.join(hex)),
        };
        let before = reachable(&old.bytes, &read);
        let after = reachable(new_index, &read);
        for hex in before.keys().filter(|h| !after.contains_key(*h)) {
            let gone = match &store {
                Some(dir) => {
                    rustix::fs::unlinkat(&**dir, hex.as_str(), rustix::fs::AtFlags::empty())
                        .map_err(std::io::Error::from)
                }
                None => std::fs::remove_file(blobs.join(hex)),
            };
            match gone {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(PathError::write(&blobs.join(hex), e));
                }
                _ => {}
            }
        }
        self.sizes(input, rep)
    }

    /// Notes the layout `dir` written, with its sizes, in `rep`.
    fn sizes(&self, dir: &Path, rep: &mut PathReport) -> Result<(), PathError> {
        let (bytes, disk) = layout_size(dir, self.at.as_ref());
        rep.output = Some(crate::files::shown(dir).into_owned());
        rep.bytes_after = bytes;
        rep.disk_after = Some(disk);
        rep.package_written();
        Ok(())
    }
}

/// The file `out` is being written to.
fn temp_file(out: &mut Output) -> Result<&File, PathError> {
    out.temp_file().ok_or_else(|| {
        PathError::write(
            Path::new("."),
            std::io::Error::other("a blob is written to no file"),
        )
    })
}

/// The mode of a new blob: 0644, as umoci and skopeo write them.
fn blob_mode() -> std::fs::Permissions {
    std::os::unix::fs::PermissionsExt::from_mode(0o644)
}

/// Flushes the directory `dir`'s entries to disk.
fn sync_dir(dir: &Path) -> Result<(), PathError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| PathError::write(dir, e))
}

/// Flushes the entries of the directory whose handle is `dir` (`shown`
/// in messages) to disk.
fn sync_fd(dir: &OwnedFd, shown: &Path) -> Result<(), PathError> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, ".", flags, Mode::empty())
        .map_err(|e| PathError::write(shown, std::io::Error::from(e)))?;
    File::from(fd)
        .sync_all()
        .map_err(|e| PathError::write(shown, e))
}

/// The small blob at `path`, when it is a regular file within
/// [`oci::MAX_JSON`] (a FIFO or a link to a device is none).
fn small_blob(path: &Path) -> Option<Vec<u8>> {
    crate::files::read_small(crate::files::open_regular(path), oci::MAX_JSON).ok()
}

/// The small blob `hex` in the blob store whose handle is `dir`, when it
/// is a regular file there (a symbolic link is not followed) within
/// [`oci::MAX_JSON`].
fn small_blob_at(dir: &OwnedFd, hex: &str) -> Option<Vec<u8>> {
    let opened = crate::files::open_regular_at(dir, OsStr::new(hex));
    crate::files::read_small(opened, oci::MAX_JSON).ok()
}

/// The bytes of the layout `dir` (`oci-layout`, `index.json` and its
/// blobs), and the bytes they take on disk; listed and measured through
/// its handles `at` where it has them (no link followed).
pub(super) fn layout_size(dir: &Path, at: Option<&LayoutAt>) -> (u64, u64) {
    if let Some(at) = at {
        return layout_size_at(at);
    }
    let mut files: Vec<PathBuf> = vec![dir.join("oci-layout"), dir.join("index.json")];
    if let Ok(rd) = std::fs::read_dir(dir.join("blobs").join("sha256")) {
        files.extend(rd.flatten().map(|e| e.path()));
    }
    files
        .iter()
        .filter_map(|f| std::fs::symlink_metadata(f).ok())
        .filter(std::fs::Metadata::is_file)
        .fold((0, 0), |(b, d), m| (b + m.len(), d + m.blocks() * 512))
}

/// [`layout_size`] through the handles of the layout's directory and
/// blob store: each name's own metadata, a link's not followed.
fn layout_size_at(at: &LayoutAt) -> (u64, u64) {
    use rustix::fs::{AtFlags, FileType};
    let size = |dir: &OwnedFd, name: &OsStr| {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let regular = FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
        regular.then_some((st.st_size as u64, st.st_blocks as u64 * 512))
    };
    let mut all: Vec<(u64, u64)> = ["oci-layout", "index.json"]
        .iter()
        .filter_map(|n| size(&at.dir, OsStr::new(n)))
        .collect();
    if let Some(store) = &at.blobs {
        let names = crate::prune::anchor::names(store).unwrap_or_default();
        all.extend(names.iter().filter_map(|n| size(store, n)));
    }
    all.iter().fold((0, 0), |(b, d), (l, k)| (b + l, d + k))
}
