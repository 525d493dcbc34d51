//! What [`prune_path`](crate::prune::prune_path) is asked: where the pruned file
//! goes ([`Destination`]) and how ([`PathOptions`]).

use std::path::{Path, PathBuf};

use super::error::{PathError, PathErrorKind};
use crate::prune::model::Options;

/// Where [`prune_path`](crate::prune::prune_path) puts the pruned file.
///
/// # Examples
///
/// A dry run says what would go and writes nothing; in place, the file
/// is replaced:
///
/// ```
/// use offload_kit::prune::{Destination, PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
///
/// let mut opts = PathOptions::default();
/// assert_eq!(opts.destination, Destination::DryRun);
/// let would = prune_path(&input, &keep, &opts)?;
/// assert_eq!((would.output, std::fs::read(&input)?), (None, file.clone()));
///
/// opts.destination = Destination::InPlace;
/// let did = prune_path(&input, &keep, &opts)?;
/// assert_eq!(did.freed, would.freed);
/// assert_eq!(std::fs::metadata(&input)?.len(), file.len() as u64 - did.freed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Destination {
    /// Nowhere: say what would be removed, write nothing.
    #[default]
    DryRun,
    /// This file (replaced whole if it exists).
    File(PathBuf),
    /// This directory, under the input's own file name.
    Directory(PathBuf),
    /// Over the input (a thin archive's members over themselves).
    InPlace,
}

/// How [`prune_path`](crate::prune::prune_path) prunes a file and where it writes it.
///
/// # Examples
///
/// In place, through every hard link of the file, letting the bundle
/// lose every device image:
///
/// ```
/// use offload_kit::prune::{Destination, PathOptions, prune_path};
/// # use offload_kit::bundle::{self, Format};
/// # use offload_kit::prune::{Ptx, Rules, Selection};
/// # use offload_kit::scan::Rule;
/// # let dir = tempfile::tempdir()?;
/// # let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
/// # let entries = [
/// #     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
/// #     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
/// # ];
/// # let mut file = Vec::new();
/// # bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
/// # let input = dir.path().join("kernels.hipfb");
/// # std::fs::write(&input, &file)?;
/// # let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
/// let link = dir.path().join("link.hipfb");
/// std::fs::hard_link(&input, &link)?;
///
/// let mut opts = PathOptions::default();
/// opts.destination = Destination::InPlace;
/// opts.keep_hard_links = true;
/// opts.prune.allow_empty = true;
/// let none = Selection { rules: Rules::Keep(vec![Rule::parse("gfx1100")?]), ptx: Ptx::Newest };
/// let report = prune_path(&input, &none, &opts)?;
/// assert_eq!((report.hard_links, report.kept.len(), report.dropped.len()), (2, 0, 2));
/// assert_eq!(std::fs::read(&link)?, std::fs::read(&input)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PathOptions {
    /// Where the pruned file goes.
    pub destination: Destination,
    /// In place, a file that has other hard links is rewritten through
    /// them, so that every link sees the pruned file (the whole of it is
    /// made first, then copied over the old contents); otherwise it is
    /// replaced by a new file, and the other links keep the old one.
    pub keep_hard_links: bool,
    /// Keep a file that is device code alone, every image of which the
    /// rules drop (a code object, a cubin, a bundle, fatbin or
    /// OffloadBinary file), refusing it as any file that would keep no
    /// device image; without it such a file is removed whole (in place;
    /// reported so in a dry run; refused with a file or directory to
    /// write to), and so is such a file of a wheel or `.deb`
    /// ([`PathReport::removed`](super::PathReport::removed)).
    pub keep_files: bool,
    /// A file of a package (a wheel or `.deb`) that prune refuses — of a
    /// kind it does not rewrite, sections it cannot take out of a linked
    /// file, a signed DLL — fails the whole package, and nothing is
    /// written. Without it such a file stays byte for byte as it was,
    /// named with the reason in
    /// [`PathReport::members_refused`](super::PathReport::members_refused),
    /// and the rest of the package is pruned.
    pub strict: bool,
    /// Take the bytes of a package's files as they are where its record
    /// of them disagrees (a wheel's `RECORD`, a `.deb`'s `md5sums`, an
    /// installed package's `*.dist-info/RECORD` or `conda-meta/*.json` in
    /// a directory): the file is pruned, its row rewritten to the new
    /// bytes, and each such row named in
    /// [`PathReport::records_wrong`](super::PathReport::records_wrong).
    /// Without it a row its file does not match refuses the package as
    /// damaged (in a directory, the file, left as it was): rewriting the
    /// row would hide whatever changed the file.
    pub trust_bytes: bool,
    /// How the file's bytes are pruned.
    pub prune: Options,
    /// The file's place in a tree [`prune_tree`] walked (in place or in a
    /// dry run): it is then opened through its directory's handle, and
    /// in place replaced and removed there, never by its path
    /// ([`anchor`](crate::prune::anchor)).
    ///
    /// [`prune_tree`]: crate::prune::prune_tree
    pub(crate) anchor: Option<crate::prune::anchor::Anchor>,
    /// In place, the access time the file had before the run first read
    /// it (the walk's `lstat`, made before its first bytes were read):
    /// given to the pruned file, rather than the one the run's own reads
    /// left (`relatime` sets it on a read). `None`: the time of the
    /// `fstat` made before the file is read for its prune.
    pub(crate) accessed: Option<std::time::SystemTime>,
}

impl PathOptions {
    pub(crate) fn in_place(&self) -> bool {
        self.destination == Destination::InPlace
    }

    /// The file's [`anchor`](Self::anchor), in place.
    pub(crate) fn anchored(&self) -> Option<&crate::prune::anchor::Anchor> {
        self.anchor.as_ref().filter(|_| self.in_place())
    }

    /// The file's [`anchor`](Self::anchor) to read it through, in place
    /// or in a dry run.
    pub(crate) fn reading(&self) -> Option<&crate::prune::anchor::Anchor> {
        self.anchor.as_ref()
    }

    pub(crate) fn dry_run(&self) -> bool {
        self.destination == Destination::DryRun
    }

    /// Where the pruned form of `input` goes; `None` in a dry run.
    pub(crate) fn output_path(&self, input: &Path) -> Result<Option<PathBuf>, PathError> {
        Ok(match &self.destination {
            Destination::DryRun => None,
            Destination::File(o) => Some(o.clone()),
            Destination::Directory(d) => {
                let name = input.file_name().ok_or_else(|| {
                    let name = crate::files::shown(input).into_owned();
                    PathError::said(PathErrorKind::Refused, input, &name, "no file name")
                })?;
                Some(d.join(name))
            }
            Destination::InPlace => Some(input.to_path_buf()),
        })
    }
}
