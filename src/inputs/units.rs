//! What the scanner commands scan: each input file, or, for a package (a
//! wheel or other zip archive, a tar archive, a Debian package, a
//! compressed file; see [`crate::package`]), each regular file inside it,
//! named `pkg.whl!/torch/lib/libtorch_hip.so` (a compressed file's one
//! member `libfoo.so.gz!/libfoo.so`). Packages inside packages (a conda
//! package's `pkg-*.tar.zst`) are opened in turn.
//!
//! Members stored as they are stay slices of the mapped package; a
//! compressed member is inflated — into memory up to
//! [`SPOOL_IN_MEMORY`] bytes (as standard input), else into an unnamed temporary file that is
//! mapped — one at a time, so memory never holds a whole package. The
//! pages of a member spooled to a file are given back while it is read, so
//! memory does not hold a whole member either.

use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use sha2::Digest as _;

use crate::package::records::Ledger;
use crate::package::{self, Contents};
use crate::scan::Unread;

use super::oci::{self, ImageError};
use super::source::{self, Source};
use crate::files::{Input, SPOOL_IN_MEMORY};

/// [`Options::max_uncompressed`] when none was given: the budget of each
/// file then follows its size ([`for_size`]).
///
/// [`Options::max_uncompressed`]: crate::scan::Options::max_uncompressed
/// [`for_size`]: super::for_size
pub(crate) const BY_SIZE: u64 = u64::MAX;

/// How deeply packages may nest.
pub const MAX_PACKAGE_DEPTH: u32 = 4;

/// One thing to scan.
pub(crate) struct Unit<'a> {
    /// The name reports show: the path, or `package!/member`.
    pub(crate) name: String,
    /// Whether the user did not name it (found walking a directory, or
    /// inside a package): then reports may leave it out when it holds
    /// nothing.
    pub(crate) found: bool,
    /// The file a thin archive's member names are relative to (`None`
    /// inside a package, where they cannot be looked up).
    pub(crate) thin_base: Option<&'a Path>,
}

/// A unit's bytes.
pub(crate) struct Data<'a> {
    /// What to scan.
    pub(crate) bytes: &'a [u8],
    /// The input `bytes` lie in (for file-to-file copies out of it).
    pub(crate) input: &'a Input,
}

/// What a unit gives to a command.
pub(crate) type Visit<'f, T> = dyn FnMut(&Unit<'_>, Result<Data<'_>, Unread>) -> T + 'f;

/// Calls `f` for each unit of `src`, in order: the file itself, or each
/// member of a package. What cannot be read (the file, a corrupt package, a
/// member) is given to `f` as the error, in its place. `limit` bounds the
/// bytes inflated out of one input (`--max-uncompressed`; [`BY_SIZE`]:
/// the input's size decides, as for a scan).
///
pub(crate) fn for_each<T>(src: &Source, limit: u64, f: &mut Visit<'_, T>) -> Vec<T> {
    let unit = Unit {
        name: src.name(),
        found: src.in_dir,
        thin_base: Some(&src.path),
    };
    let mut out = Vec::new();
    if src.layout {
        layout_units(src, &unit, limit, f, &mut out);
        return out;
    }
    match src.open() {
        Err(e) => out.push(f(&unit, Err(e))),
        Ok(input) => {
            let limit = if limit == BY_SIZE {
                crate::scan::default_max_uncompressed(input.bytes().len() as u64)
            } else {
                limit
            };
            let mut w = Walk {
                f,
                out: &mut out,
                budget: limit,
                limit,
                layers_read: Default::default(),
            };
            if !w.saved_images(&unit, &input) {
                w.unit(&unit, input.bytes(), &input, 0);
            }
            input.close();
        }
    }
    out
}

/// The units of the OCI image layout `src`: each image's files as a
/// container sees them ([`image`]), named `LAYOUT!/usr/lib/libfoo.so`
/// (`LAYOUT:NAME!/…` when the layout holds several images).
fn layout_units<T>(
    src: &Source,
    unit: &Unit<'_>,
    limit: u64,
    f: &mut Visit<'_, T>,
    out: &mut Vec<T>,
) {
    let images = match oci::layout_images(&src.path) {
        Ok(images) => images,
        Err(e) => return out.push(f(unit, Err(Unread::from(e)))),
    };
    let limit = if limit == BY_SIZE {
        // Each blob once, however many times the images name it.
        let blobs: std::collections::BTreeMap<_, _> = images
            .iter()
            .flat_map(|i| &i.layers)
            .map(|l| (&l.blob, l.size.unwrap_or(0)))
            .collect();
        let size = blobs.values().fold(0u64, |a, &b| a.saturating_add(b));
        crate::scan::default_max_uncompressed(size)
    } else {
        limit
    };
    let mut w = Walk {
        f,
        out,
        budget: limit,
        limit,
        layers_read: Default::default(),
    };
    w.images(unit, &images, &LayerBytes::Blobs);
}

/// Where the bytes of an image's layers are.
enum LayerBytes<'a> {
    /// In a layout's blob files.
    Blobs,
    /// In a `docker save` archive's members (`input`, or the archive
    /// decompressed into it).
    Members {
        index: &'a oci::TarIndex<'a>,
        input: &'a Input,
    },
}

impl<T> Walk<'_, '_, T> {
    /// Reads `images`, whose layers' bytes are `from`: each image's files
    /// as a container sees them are members of `unit` ([`image_unit`]).
    /// A layer that cannot be read ends its image, with its error. A
    /// layer an image names again (the same blob, checked against the
    /// same digest and size) is read once: every file of its lower copy
    /// lies below the same file of the upper one, hidden, so only its
    /// diff ID is checked, against what the first reading hashed to.
    fn images(&mut self, unit: &Unit<'_>, images: &[oci::Image], from: &LayerBytes<'_>) {
        for img in images {
            let unit = image_unit(unit, img);
            let mut shadow = oci::Shadow::default();
            let mut read_here = std::collections::HashMap::new();
            for (i, layer) in img.layers.iter().enumerate().rev() {
                let key = (&layer.blob, layer.sha256, layer.size);
                if let Some(sha) = read_here.get(&key) {
                    if let Err(e) = diff_id_matches(sha, i, layer) {
                        let name = layer.blob.to_string_lossy();
                        let e = e.at(format!("the layer '{name}'"));
                        let r = (self.f)(&unit, Err(Unread::from(e)));
                        self.out.push(r);
                        break;
                    }
                    continue;
                }
                let mut read = |bytes: &[u8], input: &Input| {
                    layer.check(bytes)?;
                    self.layer(&unit, bytes, input, &mut shadow, (i, layer))
                };
                let (read, name) = match from {
                    LayerBytes::Blobs => (
                        Input::open(&layer.blob)
                            .map_err(|e| ImageError::Unread(source::cannot_open(&e)))
                            .and_then(|input| {
                                let r = read(input.bytes(), &input);
                                input.close();
                                r
                            }),
                        crate::files::shown(&layer.blob).to_string(),
                    ),
                    LayerBytes::Members { index, input } => {
                        let name = layer.blob.to_string_lossy().into_owned();
                        let r = index
                            .get(&name)
                            .ok_or(ImageError::NoMember)
                            .and_then(|b| read(b, input));
                        (r, name)
                    }
                };
                match read {
                    Ok(sha) => {
                        read_here.insert(key, sha);
                    }
                    Err(e) => {
                        let e = e.at(format!("the layer '{name}'"));
                        let r = (self.f)(&unit, Err(Unread::from(e)));
                        self.out.push(r);
                        break;
                    }
                }
            }
        }
    }
}

/// The unit an image's files are named below.
fn image_unit<'a>(input: &Unit<'a>, img: &oci::Image) -> Unit<'a> {
    Unit {
        name: match &img.name {
            Some(n) => format!("{}:{n}", input.name),
            None => input.name.clone(),
        },
        found: input.found,
        thin_base: None,
    }
}

/// A walk through one input and the packages in it.
struct Walk<'w, 'f, T> {
    f: &'w mut Visit<'f, T>,
    out: &'w mut Vec<T>,
    /// Bytes that may still be inflated.
    budget: u64,
    /// The limit the budget started from, for messages.
    limit: u64,
    /// The layers read so far (of any image), by their blob.
    layers_read: std::collections::HashSet<std::path::PathBuf>,
}

impl<T> Walk<'_, '_, T> {
    fn unit(&mut self, unit: &Unit<'_>, bytes: &[u8], input: &Input, depth: u32) {
        self.unit_fed(unit, bytes, input, depth, None);
    }

    /// [`Walk::unit`], a package's members handed to `feed` (the ledger
    /// of the package this one is part of: a `.conda`'s inner tar) where
    /// given, else to its own ledger.
    fn unit_fed(
        &mut self,
        unit: &Unit<'_>,
        bytes: &[u8],
        input: &Input,
        depth: u32,
        feed: Option<&mut Ledger>,
    ) {
        let Some(kind) = package::detect(bytes) else {
            // A format not read is no file without device code.
            let data = match crate::scan::unread_format(bytes) {
                Some(format) => Err(Unread::new(format.why())),
                None => Ok(Data { bytes, input }),
            };
            let unread = data.is_err();
            let r = (self.f)(unit, data);
            self.out.push(r);
            // A zip with bytes in front of it (a self-extracting archive, a
            // program or document that carries one): the file is scanned as
            // it is, above, and the zip's members below its name, so that
            // compressed members are never passed over.
            if !unread && package::zip_prefix(bytes).is_some() {
                self.package(unit, bytes, input, depth, (package::Kind::Zip, None));
            }
            return;
        };
        self.package(unit, bytes, input, depth, (kind, feed));
    }

    /// The members of the package `bytes` (of kind `kind`), each a unit
    /// below `unit`; each checked against the package's record of its
    /// files ([`Ledger`]: its own, or `feed`, that of the package it is
    /// part of), a wrong row making the package the error.
    fn package(
        &mut self,
        unit: &Unit<'_>,
        bytes: &[u8],
        input: &Input,
        depth: u32,
        (kind, feed): (package::Kind, Option<&mut Ledger>),
    ) {
        if depth >= MAX_PACKAGE_DEPTH {
            let e = format!("packages nested more than {MAX_PACKAGE_DEPTH} deep");
            let r = (self.f)(unit, Err(Unread::new(e)));
            self.out.push(r);
            return;
        }
        let fed = feed.is_some();
        let mut own = None;
        if !fed {
            match Ledger::of(bytes, kind, &mut self.budget) {
                Ok(l) => own = l,
                Err(e) => {
                    let r = (self.f)(unit, Err(Unread::from(e)));
                    return self.out.push(r);
                }
            }
        }
        let ledger = match feed {
            Some(l) => Some(l),
            None => own.as_mut(),
        };
        let mut members = Members {
            walk: self,
            parent: unit,
            input,
            bytes,
            overlaps: package::Overlaps::default(),
            depth,
            ledger,
            fed,
        };
        // The package's own pages too (its compressed data, read once
        // from start to end) are given back as it is read.
        let read = with_pages_given_back(input, || package::members(bytes, kind, &mut members));
        if let Err(e) = read.and_then(|()| own.map_or(Ok(()), Ledger::finish)) {
            let r = (self.f)(unit, Err(Unread::from(e)));
            self.out.push(r);
        }
    }
}

impl<T> Walk<'_, '_, T> {
    /// Reads layer `i` of an image (`bytes`, in `input`), the layers above
    /// it read before: each file the container sees is a member of `unit`.
    /// What it decompresses to must be its diff ID, hashed as it is read;
    /// that hash is returned. The bytes it decompresses to count against
    /// the budget (with those its members inflate to: the more of the
    /// two), so that a layer read again and again cannot cost more.
    fn layer(
        &mut self,
        unit: &Unit<'_>,
        bytes: &[u8],
        input: &Input,
        shadow: &mut oci::Shadow,
        (i, of): (usize, &oci::Layer),
    ) -> Result<[u8; 32], ImageError> {
        let mut sha = sha2::Sha256::new();
        let c = match package::detect(bytes) {
            // A compressed tar of no entries (its first block is the end)
            // is no tar header when decompressed.
            Some(package::Kind::Tar(c) | package::Kind::Compressed(c)) => c,
            None if bytes.iter().all(|&b| b == 0) => {
                sha.update(bytes);
                let sha = sha.finalize().into();
                return diff_id_matches(&sha, i, of).map(|()| sha);
            }
            _ => return Err(ImageError::NotTar),
        };
        let mut layer = Layer {
            members: Members {
                walk: self,
                parent: unit,
                input,
                bytes,
                overlaps: package::Overlaps::default(),
                depth: 0,
                ledger: None,
                fed: false,
            },
            shadow,
        };
        // A tar stored as it is costs nothing to decompress the first
        // time; read again (for another image), it does.
        let first_plain = c == package::Compression::None
            && layer.members.walk.layers_read.insert(of.blob.clone());
        let before = layer.members.walk.budget;
        let limit = layer.members.walk.limit;
        let mut tap = Counted {
            sha: &mut sha,
            n: 0,
            max: if first_plain { u64::MAX } else { before },
            limit,
        };
        let r = with_pages_given_back(input, || {
            package::tar_members_tapped(bytes, c, &mut layer, &mut tap)
        });
        let streamed = if first_plain { 0 } else { tap.n };
        layer.shadow.next_layer();
        let spent = before.saturating_sub(layer.members.walk.budget);
        layer.members.walk.budget = before.saturating_sub(streamed.max(spent));
        r.map_err(|e| ImageError::Unread(Unread::from(e)))?;
        let sha = sha.finalize().into();
        diff_id_matches(&sha, i, of).map(|()| sha)
    }

    /// When `input` is a `docker save` archive (a tar, plain or
    /// compressed, holding a `manifest.json` that lists images), reads
    /// its images' files as a container sees them, named as a layout's
    /// are, and says so; `false` for any other input. A compressed one is
    /// decompressed once, into memory or a temporary file as a member is,
    /// when its first entry is named as such archives' are.
    fn saved_images(&mut self, unit: &Unit<'_>, input: &Input) -> bool {
        let bytes = input.bytes();
        let c = match package::detect(bytes) {
            Some(package::Kind::Tar(package::Compression::None)) => {
                return self.saved_in(unit, bytes, input);
            }
            Some(package::Kind::Tar(c)) => c,
            _ => return false,
        };
        if !package::decoder(bytes, c).is_ok_and(oci::starts_as_saved) {
            return false;
        }
        let plain = with_pages_given_back(input, || {
            package::decoder(bytes, c).and_then(|mut r| Input::spool(&mut r, self.budget))
        });
        // One that cannot be decompressed within the budget is read as a
        // compressed tar, which says why.
        let Ok(Some(plain)) = plain else {
            return false;
        };
        let len = plain.bytes().len() as u64;
        self.budget = self.budget.saturating_sub(len);
        let saved = with_pages_given_back(&plain, || self.saved_in(unit, plain.bytes(), &plain));
        if !saved {
            self.budget = self.budget.saturating_add(len);
        }
        plain.close();
        saved
    }

    /// [`Walk::saved_images`] of the plain tar `bytes`, in `input`.
    fn saved_in(&mut self, unit: &Unit<'_>, bytes: &[u8], input: &Input) -> bool {
        let Some(members) = oci::TarIndex::read(bytes) else {
            return false;
        };
        let images = match oci::saved_images(&members) {
            None => return false,
            Some(Ok(images)) => images,
            Some(Err(e)) => {
                let r = (self.f)(unit, Err(Unread::from(e)));
                self.out.push(r);
                return true;
            }
        };
        let from = LayerBytes::Members {
            index: &members,
            input,
        };
        self.images(unit, &images, &from);
        true
    }
}

/// What a layer decompresses to, on its way to its hash: counted, and an
/// error past `max` bytes (what is left of the budget).
struct Counted<'s> {
    sha: &'s mut sha2::Sha256,
    n: u64,
    max: u64,
    /// The budget's limit, for the message.
    limit: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.n = self.n.saturating_add(buf.len() as u64);
        if self.n > self.max {
            let why = format!(
                "it decompresses to more than the {} bytes left of {} (--max-uncompressed)",
                self.max, self.limit
            );
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, why));
        }
        self.sha.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `sha`, what layer `i` decompressed to hashes to, is the diff
/// ID its image config gives it.
fn diff_id_matches(sha: &[u8; 32], i: usize, layer: &oci::Layer) -> Result<(), ImageError> {
    match layer.diff_id {
        Some(want) if want != *sha => Err(ImageError::DiffId {
            got: *sha,
            index: i,
            want,
        }),
        _ => Ok(()),
    }
}

/// One layer's members: those a container sees handed on to the walk.
struct Layer<'l, 'm, 'w, 'f, T> {
    members: Members<'m, 'w, 'f, T>,
    shadow: &'l mut oci::Shadow,
}

impl<T> package::Members for Layer<'_, '_, '_, '_, T> {
    fn member(
        &mut self,
        path: &str,
        contents: Result<Contents<'_, '_>, String>,
    ) -> crate::error::Result<()> {
        let path = match oci::normal(path) {
            Ok(p) => p,
            Err(e) => {
                let name = format!("{}!/{path}", self.members.parent.name);
                let unit = Unit {
                    name,
                    found: true,
                    thin_base: None,
                };
                let r = (self.members.walk.f)(&unit, Err(Unread::from(e)));
                self.members.walk.out.push(r);
                return Ok(());
            }
        };
        match self.shadow.entry(path.clone(), false) {
            oci::Seen::Hidden => Ok(()),
            oci::Seen::Visible => self.members.member(&path, contents),
        }
    }

    fn skipped(&mut self, path: &str, dir: bool) {
        if let Ok(p) = oci::normal(path) {
            self.shadow.entry(p, dir);
        }
    }
}

/// The members of one package, handed on to the walk.
struct Members<'m, 'w, 'f, T> {
    walk: &'m mut Walk<'w, 'f, T>,
    parent: &'m Unit<'m>,
    /// The package's input (stored members are slices of it).
    input: &'m Input,
    /// The package's bytes.
    bytes: &'m [u8],
    /// Its stored members seen so far: one whose bytes another gave
    /// already costs budget to read again.
    overlaps: package::Overlaps,
    depth: u32,
    /// Where each member read is handed to be checked against its
    /// package's record ([`Ledger`]).
    ledger: Option<&'m mut Ledger>,
    /// Whether that ledger is another package's (this one being part of
    /// it).
    fed: bool,
}

impl<T> Members<'_, '_, '_, T> {
    /// The member `path` (as `unit`), whose bytes are `bytes` in `input`:
    /// handed to the ledger, then walked (as a package part of this one,
    /// for a `.conda`'s inner tars).
    fn walk_member(&mut self, (unit, path): (&Unit<'_>, &str), bytes: &[u8], input: &Input) {
        let next = self.depth + 1;
        let fed = self.fed;
        let feed = self.ledger.as_deref_mut().and_then(|l| {
            l.member(path, bytes, fed);
            (!fed && l.feeds(path)).then_some(l)
        });
        self.walk.unit_fed(unit, bytes, input, next, feed);
    }
}

impl<T> package::Members for Members<'_, '_, '_, T> {
    fn member(
        &mut self,
        path: &str,
        contents: Result<Contents<'_, '_>, String>,
    ) -> crate::error::Result<()> {
        let path = match path {
            "" => package::decompressed_name(&self.parent.name),
            p => p.trim_start_matches('/'),
        }
        .to_string();
        let path = path.as_str();
        let unit = Unit {
            name: format!("{}!/{path}", self.parent.name),
            found: true,
            thin_base: None,
        };
        let limit = self.walk.limit;
        let too_much = move || {
            io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("its members inflate to more than {limit} bytes (--max-uncompressed)"),
            )
        };
        let (reader, size) = match contents {
            Ok(Contents::Stored(bytes)) => {
                let cost = self.overlaps.cost(self.bytes, bytes);
                if cost > self.walk.budget {
                    return Err(repeated(path, limit).into());
                }
                self.walk.budget -= cost;
                self.walk_member((&unit, path), bytes, self.input);
                return Ok(());
            }
            Ok(Contents::Stream { reader, size }) => (reader, Some(size)),
            Ok(Contents::Unsized(reader)) => (reader, None),
            Err(e) => {
                let r = (self.walk.f)(&unit, Err(Unread::new(format!("cannot read: {e}"))));
                self.walk.out.push(r);
                return Ok(());
            }
        };
        if size.is_some_and(|size| size > self.walk.budget) {
            return Err(too_much().into());
        }
        match inflate(reader, size, self.walk.budget) {
            Ok(None) => Err(too_much().into()),
            Ok(Some(input)) => {
                self.walk.budget -= input.bytes().len() as u64;
                with_pages_given_back(&input, || {
                    self.walk_member((&unit, path), input.bytes(), &input);
                });
                Ok(())
            }
            // A compressed stream that breaks breaks what follows too:
            // the package is the error.
            Err(e) => Err(io::Error::new(e.kind(), format!("cannot inflate '{path}': {e}")).into()),
        }
    }
}

/// The error for the stored member `path` whose bytes other members gave
/// before, when reading them again would pass the budget `limit`.
fn repeated(path: &str, limit: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "member '{path}' gives bytes other members gave before; read again, its members \
             inflate to more than {limit} bytes (--max-uncompressed)"
        ),
    )
}

/// How often the pages of a member spooled to a file are given back while
/// it is read.
const RELEASE_EVERY: Duration = Duration::from_millis(10);

/// Runs `f` while a helper thread gives back the resident pages of
/// `input` every [`RELEASE_EVERY`], when it is a mapped file (a member
/// spooled to a temporary file): a scan that hashes a 1.3 GB library then
/// holds in memory only what it read in the last moments, not all it read
/// (the pages come back from the page cache when read again). Nothing
/// changes what the bytes read; when the thread cannot be started, `f`
/// runs all the same.
fn with_pages_given_back<R>(input: &Input, f: impl FnOnce() -> R) -> R {
    if input.file().is_none() {
        return f();
    }
    let (stop, stopped) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new().spawn_scoped(s, move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(RELEASE_EVERY) {
                input.release(input.bytes());
            }
        });
        let r = f();
        drop(stop);
        drop(helper);
        r
    })
}

/// Reads a member from `reader`: into memory when small, else into an
/// unnamed temporary file that is then mapped. A member of a declared
/// `size` that gives more or fewer bytes is an error; one of no declared
/// size is read to its end, `None` if that is more than `budget` bytes.
fn inflate(reader: &mut dyn Read, size: Option<u64>, budget: u64) -> io::Result<Option<Input>> {
    let Some(size) = size else {
        return Input::spool(reader, budget);
    };
    let mut r = reader.take(size.saturating_add(1));
    let short = |n: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it gives {n} bytes where the package says {size}"),
        )
    };
    if size <= SPOOL_IN_MEMORY {
        let mut v = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        r.read_to_end(&mut v)?;
        if v.len() as u64 != size {
            return Err(short(v.len() as u64));
        }
        return Ok(Some(Input::from_vec(v)));
    }
    let mut file = tempfile::tempfile()?;
    let n = crate::files::copy_in_pieces(&mut r, &mut file)?;
    if n != size {
        return Err(short(n));
    }
    file.flush()?;
    Input::from_temp_file(file).map(Some)
}
