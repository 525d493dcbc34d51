//! Two builds' device code compared: [`compare`] takes the scan
//! [`Report`]s of an old and a new file (with the kernels of their images,
//! when they were read: [`Side::with_kernels`]) and returns a
//! [`FileDiff`]: per target, the images added, removed and changed, the
//! bytes before and after, and the kernels added, removed and changed.
//! Nothing here prints; `offload-kit diff` pairs the files of two
//! directories or packages and prints what this returns.
//!
//! # Matching
//!
//! Only innermost device images count (as [`size`](crate::scan::size)
//! counts them: an OffloadBinary image that holds a fatbin counts through
//! the fatbin's entries; bundles' host entries are no device code). They
//! are grouped by target key: offload kind, triple, target ID and image
//! kind, so a CUDA arch's cubins and PTX are apart. A real library holds
//! thousands of images under one key (one per translation unit and
//! target), so within a key:
//!
//! 1. images whose contents are the same on both sides (the same
//!    [hash](crate::scan::Options::hash); an image without one, its bytes
//!    unavailable, by its size) are paired first, as a multiset: each old
//!    image with the first new one of the same contents not yet paired;
//! 2. the images left are paired in the order the scans found them (the
//!    link order of the translation units): each pair is a changed image;
//! 3. the old images still left are removed, the new ones added.
//!
//! So the counts are exact whatever the order (an image moved is no
//! change; `n` images that differ, `n` changes or additions), and a
//! library rebuilt from the same objects in the same order pairs each
//! image with itself.
//!
//! Kernels are compared per target key, not per image (a kernel that
//! moved to another translation unit is no change): each side's kernels
//! are those of all its images under the key, by name (a name found in
//! several images: the first image's). A kernel is changed when one of
//! its resource figures ([`Resources::figures`]) differs. A target key
//! found on one side only lists no kernels: the target itself is added or
//! removed.
//!
//! # Examples
//!
//! ```
//! use offload_kit::{diff, scan};
//!
//! # let bytes = b"not a binary";
//! let mut opts = scan::Options::default();
//! opts.hash = Some(scan::HashAlgo::Xxh3_128);
//! let old = scan::scan(bytes, &opts);
//! let new = scan::scan(bytes, &opts);
//! let d = diff::compare(diff::Side::new(&old), diff::Side::new(&new));
//! assert!(!d.differs());
//! ```

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use crate::kernels::{ImageKernels, Kernel, Listing, Resources};
use crate::scan::sort::arch_cmp;
use crate::scan::{Content, Digest, Image, Offload, Report};

#[cfg(feature = "files")]
pub(crate) mod paths;
#[cfg(test)]
mod tests;

/// One side of a comparison: a file's scan report, and the kernels of its
/// images when they were read ([`kernels::Collect`](crate::kernels::Collect)).
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    report: &'a Report,
    kernels: Option<&'a [ImageKernels]>,
}

impl<'a> Side<'a> {
    /// A report alone: kernels are not compared.
    pub fn new(report: &'a Report) -> Side<'a> {
        Side {
            report,
            kernels: None,
        }
    }

    /// A report and the kernels of its images (kernels are compared when
    /// both sides have them).
    pub fn with_kernels(report: &'a Report, kernels: &'a [ImageKernels]) -> Side<'a> {
        Side {
            report,
            kernels: Some(kernels),
        }
    }
}

/// Images and their bytes (decompressed: a compressed CUDA fatbin entry
/// counts what it decompresses to).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Count {
    /// How many images.
    pub images: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Count {
    fn add(&mut self, bytes: u64) {
        self.images += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }
}

/// Whether something is on both sides and the same, or what happened to
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// On both sides, the same.
    Same,
    /// On both sides, different.
    Changed,
    /// Only on the new side.
    Added,
    /// Only on the old side.
    Removed,
}

/// One image, on one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImageRef {
    /// Its id in its side's [`Report::images`].
    pub id: usize,
    /// Its bytes (decompressed).
    pub size: u64,
    /// Its content hash, when the scan took one.
    pub hash: Option<Digest>,
}

/// Something on both sides that differs: an image (its old and new
/// [`ImageRef`]s), a resource figure (its old and new values, `None`
/// where a side does not record it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change<T> {
    /// What it was.
    pub old: T,
    /// What it is.
    pub new: T,
}

/// A kernel on both sides whose resources differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KernelChange {
    /// Its (mangled) name.
    pub name: String,
    /// Its demangled name, when the new side's listing was demangled
    /// ([`Listing::demangle`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    /// The figures that differ, by [`Resources::figures`]'s names (in
    /// byte order).
    pub figures: BTreeMap<String, Change<Option<u64>>>,
}

/// The kernels of one target key compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct KernelDiff {
    /// Kernels only on the new side, by name.
    pub added: Vec<Kernel>,
    /// Kernels only on the old side, by name.
    pub removed: Vec<Kernel>,
    /// Kernels on both sides whose figures differ, by name.
    pub changed: Vec<KernelChange>,
}

impl KernelDiff {
    /// Whether any kernel was added, removed or changed.
    pub fn differs(&self) -> bool {
        !(self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty())
    }
}

/// The images of one target key compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TargetDiff {
    /// Offload kind.
    pub offload_kind: Offload,
    /// Target triple.
    pub triple: String,
    /// Target ID (`gfx90a:xnack+`, `sm_80`).
    pub target_id: String,
    /// Image kind (`None`: not known).
    pub image_kind: Option<Content>,
    /// Same, changed, or only on one side.
    pub status: Status,
    /// The old side's images of this key.
    pub old: Count,
    /// The new side's.
    pub new: Count,
    /// Images only on the new side, in scan order.
    pub added: Vec<ImageRef>,
    /// Images only on the old side, in scan order.
    pub removed: Vec<ImageRef>,
    /// Images paired across the sides whose contents differ, in the old
    /// side's scan order.
    pub changed: Vec<Change<ImageRef>>,
    /// The kernels compared, when both sides' kernels were read, the key
    /// is on both sides and none of its images has damaged symbols.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels: Option<KernelDiff>,
}

impl TargetDiff {
    /// Whether any image or kernel of this key differs.
    pub fn differs(&self) -> bool {
        self.status != Status::Same || self.kernels.as_ref().is_some_and(KernelDiff::differs)
    }
}

/// One file's device code compared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct FileDiff {
    /// The old side's device images.
    pub old: Count,
    /// The new side's.
    pub new: Count,
    /// Every target key of either side, in order: offload kind, triple,
    /// target ID (architectures in version order: gfx900 < gfx90a <
    /// gfx1030, sm_90 < sm_100), image kind.
    pub targets: Vec<TargetDiff>,
}

impl FileDiff {
    /// Whether any target differs.
    pub fn differs(&self) -> bool {
        self.targets.iter().any(TargetDiff::differs)
    }
}

/// Compares the device code of two files ([module docs](self)).
pub fn compare(old: Side<'_>, new: Side<'_>) -> FileDiff {
    let mut groups: HashMap<GroupKey, Group<'_>> = HashMap::new();
    for (side, s) in [(0, &old), (1, &new)] {
        for img in s.report.images.iter().filter(|i| is_device_code(i)) {
            let key = GroupKey::of(img);
            groups.entry(key).or_default().images[side].push(img);
        }
    }
    let mut keys: Vec<GroupKey> = groups.keys().cloned().collect();
    keys.sort_by(GroupKey::order);
    let listings = [listings(&old), listings(&new)];
    let mut out = FileDiff::default();
    for key in keys {
        let Some(g) = groups.remove(&key) else {
            continue;
        };
        let t = compare_group(key, &g, &listings);
        out.old.images += t.old.images;
        out.old.bytes = out.old.bytes.saturating_add(t.old.bytes);
        out.new.images += t.new.images;
        out.new.bytes = out.new.bytes.saturating_add(t.new.bytes);
        out.targets.push(t);
    }
    out
}

/// Whether an image counts: innermost, read, not a bundle's host entry.
fn is_device_code(img: &Image) -> bool {
    img.is_leaf() && img.is_read() && !img.offload_kind.is_host()
}

/// An image's bytes, decompressed.
fn bytes_of(img: &Image) -> u64 {
    img.uncompressed_size.unwrap_or(img.size)
}

/// The listings of a side's images by image id (`None` for the whole
/// side: kernels not read; for one image: its symbols are damaged).
fn listings<'a>(side: &Side<'a>) -> Option<HashMap<usize, Option<&'a Listing>>> {
    let kernels = side.kernels?;
    Some(
        kernels
            .iter()
            .map(|k| (k.image, k.listing.as_ref().ok()))
            .collect(),
    )
}

/// What images are grouped by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    offload: Offload,
    triple: String,
    target_id: String,
    kind: Option<Content>,
}

impl GroupKey {
    fn of(img: &Image) -> GroupKey {
        GroupKey {
            offload: img.offload_kind.clone(),
            triple: img.triple.clone(),
            target_id: img.target_id.clone(),
            kind: img.image_kind,
        }
    }

    fn order(a: &GroupKey, b: &GroupKey) -> Ordering {
        let kind = |k: &GroupKey| k.kind.map(|c| c.to_string()).unwrap_or_default();
        a.offload
            .to_string()
            .cmp(&b.offload.to_string())
            .then_with(|| a.triple.cmp(&b.triple))
            .then_with(|| arch_cmp(&a.target_id, &b.target_id))
            .then_with(|| kind(a).cmp(&kind(b)))
            // Keys that display alike (an unknown image kind `unknown-9`
            // declared by an OffloadBinary or a fatbin entry): a total
            // order all the same, whatever the map's.
            .then_with(|| format!("{a:?}").cmp(&format!("{b:?}")))
    }
}

/// The images of one key: old, then new, each in scan order.
#[derive(Default)]
struct Group<'r> {
    images: [Vec<&'r Image>; 2],
}

/// What pairs images of the same contents: the hash, else the size.
#[derive(PartialEq, Eq, Hash)]
enum Identity {
    Hash(Digest),
    Size(u64),
}

fn identity(img: &Image) -> Identity {
    match img.hash {
        Some(h) => Identity::Hash(h),
        None => Identity::Size(bytes_of(img)),
    }
}

fn image_ref(img: &Image) -> ImageRef {
    ImageRef {
        id: img.id,
        size: bytes_of(img),
        hash: img.hash,
    }
}

/// The images of `old` and `new` not paired with one of the same
/// contents, each in scan order.
fn unpaired<'r>(old: &[&'r Image], new: &[&'r Image]) -> (Vec<&'r Image>, Vec<&'r Image>) {
    let mut pool: HashMap<Identity, VecDeque<usize>> = HashMap::new();
    for (j, img) in new.iter().enumerate() {
        pool.entry(identity(img)).or_default().push_back(j);
    }
    let mut paired = vec![false; new.len()];
    let mut old_left = Vec::new();
    for img in old {
        match pool.get_mut(&identity(img)).and_then(VecDeque::pop_front) {
            Some(j) => paired[j] = true,
            None => old_left.push(*img),
        }
    }
    let new_left = new
        .iter()
        .zip(&paired)
        .filter(|(_, p)| !**p)
        .map(|(i, _)| *i)
        .collect();
    (old_left, new_left)
}

fn compare_group(
    key: GroupKey,
    g: &Group<'_>,
    listings: &[Option<HashMap<usize, Option<&Listing>>>; 2],
) -> TargetDiff {
    let [old, new] = &g.images;
    let mut t = TargetDiff {
        offload_kind: key.offload,
        triple: key.triple,
        target_id: key.target_id,
        image_kind: key.kind,
        status: Status::Same,
        old: Count::default(),
        new: Count::default(),
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
        kernels: None,
    };
    old.iter().for_each(|i| t.old.add(bytes_of(i)));
    new.iter().for_each(|i| t.new.add(bytes_of(i)));
    let (old_left, new_left) = unpaired(old, new);
    let n = old_left.len().min(new_left.len());
    t.changed = old_left
        .iter()
        .zip(&new_left)
        .map(|(o, n)| Change {
            old: image_ref(o),
            new: image_ref(n),
        })
        .collect();
    t.removed = old_left[n..].iter().map(|i| image_ref(i)).collect();
    t.added = new_left[n..].iter().map(|i| image_ref(i)).collect();
    t.status = match (old.is_empty(), new.is_empty()) {
        (true, _) => Status::Added,
        (_, true) => Status::Removed,
        _ if old_left.is_empty() && new_left.is_empty() => Status::Same,
        _ => Status::Changed,
    };
    // An image whose symbols are damaged would make its kernels look
    // removed or added: such a key's kernels are not compared.
    let readable = |imgs: &[&Image], l: &HashMap<usize, Option<&Listing>>| {
        imgs.iter().all(|i| !matches!(l.get(&i.id), Some(None)))
    };
    if let [Some(lo), Some(ln)] = listings
        && !old.is_empty()
        && !new.is_empty()
        && readable(old, lo)
        && readable(new, ln)
    {
        t.kernels = Some(compare_kernels(&kernels_of(old, lo), &kernels_of(new, ln)));
    }
    t
}

/// The kernels of `images` by name: of a name in several images, the
/// first image's.
fn kernels_of<'a>(
    images: &[&Image],
    listings: &HashMap<usize, Option<&'a Listing>>,
) -> BTreeMap<&'a str, &'a Kernel> {
    let mut out = BTreeMap::new();
    for img in images {
        let listing = listings.get(&img.id).copied().flatten();
        for k in listing.iter().flat_map(|l| &l.kernels) {
            out.entry(k.name.as_str()).or_insert(k);
        }
    }
    out
}

fn compare_kernels(old: &BTreeMap<&str, &Kernel>, new: &BTreeMap<&str, &Kernel>) -> KernelDiff {
    let mut d = KernelDiff::default();
    for (name, k) in old {
        match new.get(name) {
            None => d.removed.push((*k).clone()),
            Some(n) => {
                let figures = figure_changes(&k.resources, &n.resources);
                if !figures.is_empty() {
                    d.changed.push(KernelChange {
                        name: (*name).to_string(),
                        demangled: n.demangled.clone(),
                        figures,
                    });
                }
            }
        }
    }
    d.added = new
        .iter()
        .filter(|(name, _)| !old.contains_key(*name))
        .map(|(_, k)| (*k).clone())
        .collect();
    d
}

/// The figures of `old` and `new` that differ.
fn figure_changes(old: &Resources, new: &Resources) -> BTreeMap<String, Change<Option<u64>>> {
    let (old, new) = (old.figures(), new.figures());
    let value = |v: &[(String, u64)], name: &str| v.iter().find(|(n, _)| n == name).map(|f| f.1);
    let mut out = BTreeMap::new();
    for (name, _) in old.iter().chain(&new) {
        let c = Change {
            old: value(&old, name),
            new: value(&new, name),
        };
        if c.old != c.new {
            out.insert(name.clone(), c);
        }
    }
    out
}
