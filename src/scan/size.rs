//! Bytes of device code per target and per kind: [`size`] turns a scan
//! [`Report`] into a [`SizeReport`]; [`SizeReport::sum`] adds reports up.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Image, Parent, ProblemKind, Report};

/// Images and bytes counted together.
#[derive(Debug, Serialize, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// How many images.
    pub images: u64,
    /// Their size (decompressed: a compressed CUDA fatbin entry counts
    /// its uncompressed size).
    pub bytes: u64,
    /// What they take in the file: each image's share of the nearest
    /// compressed container around it (an estimate), else its size.
    pub stored: u64,
}

// Sums saturate: a damaged or hostile file can declare sizes near 2^64
// (a compressed fatbin entry's uncompressed size), and two of them must
// not overflow the total.
impl Tally {
    fn add(&mut self, bytes: u64, stored: u64) {
        self.images = self.images.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes);
        self.stored = self.stored.saturating_add(stored);
    }

    fn merge(&mut self, t: &Tally) {
        self.images = self.images.saturating_add(t.images);
        self.bytes = self.bytes.saturating_add(t.bytes);
        self.stored = self.stored.saturating_add(t.stored);
    }
}

/// The device code of one file (or of several, [`SizeReport::sum`]),
/// counting innermost images only. Serializes as the `size --json` schema
/// (`offload-kit/size/1`) shows a file.
#[derive(Debug, Serialize, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SizeReport {
    /// The file, as named.
    pub path: String,
    /// Its size.
    pub file_size: u64,
    /// Every innermost device image (bundles' host entries are no device
    /// images: they are counted in [`SizeReport::host`]).
    pub total: Tally,
    /// Per target and kind: `<offload kind> <triple> <target ID> <image
    /// kind>` (`-` for an empty or unknown part), so a CUDA arch's cubins
    /// and PTX are separate rows.
    pub by_target: BTreeMap<String, Tally>,
    /// Per image kind (`-` when not known).
    pub by_kind: BTreeMap<String, Tally>,
    /// Bundles' host entries (what a bundle holds for the host: usually
    /// empty), counted apart from the device images.
    pub host: Tally,
    /// Why the file could not be read (then nothing else is counted).
    pub error: Option<String>,
    /// What the scan found damaged or could not finish (its problems of
    /// kind [`ProblemKind::Damage`], the limit that stopped it): the
    /// counts above are then of what could be read, never a sign that the
    /// rest holds no device code. Left out of the JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damage: Vec<String>,
    /// What the scan says of the CUDA fatbins in the file's other data
    /// sections, which it counts but does not read (the reports note it;
    /// `size --json` lists them apart, as `fatbins_elsewhere`).
    #[serde(skip)]
    pub(crate) elsewhere: Option<String>,
}

impl SizeReport {
    /// The report of a file that could not be read, and why.
    pub fn unreadable(path: &str, error: &str) -> SizeReport {
        SizeReport {
            path: path.into(),
            error: Some(error.into()),
            ..SizeReport::default()
        }
    }

    /// What the reports note beside the figures: why the file could not
    /// be read, what the scan found damaged, the bundles' host entries not
    /// counted, the CUDA fatbins in other data sections not read.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.error.iter().map(|e| format!("error: {e}")).collect();
        notes.extend(
            self.damage
                .iter()
                .map(|d| format!("damaged: {d} (counted: what could be read)")),
        );
        if self.host.images > 0 {
            notes.push(format!(
                "{} bundle host entr{} ({} bytes) not counted",
                self.host.images,
                if self.host.images == 1 { "y" } else { "ies" },
                self.host.bytes
            ));
        }
        notes.extend(self.elsewhere.clone());
        notes
    }

    /// The reports added up, under the name `path`.
    pub fn sum<'a>(path: &str, reports: impl IntoIterator<Item = &'a SizeReport>) -> SizeReport {
        let mut all = SizeReport {
            path: path.into(),
            ..SizeReport::default()
        };
        let mut damaged = 0usize;
        for r in reports {
            all.file_size = all.file_size.saturating_add(r.file_size);
            for (k, t) in &r.by_target {
                all.by_target.entry(k.clone()).or_default().merge(t);
            }
            for (k, t) in &r.by_kind {
                all.by_kind.entry(k.clone()).or_default().merge(t);
            }
            all.total.merge(&r.total);
            all.host.merge(&r.host);
            damaged += usize::from(!r.damage.is_empty());
        }
        if damaged > 0 {
            all.damage.push(format!("{damaged} file(s) not read whole"));
        }
        all
    }
}

/// What an image takes in the file: its share of the nearest compressed
/// container around it (in proportion to its size: compression is not per
/// image, so this is an estimate), else its size (for a compressed CUDA
/// fatbin entry, its compressed size).
pub fn stored_size(r: &Report, img: &Image) -> u64 {
    let mut c = Some(img.container);
    while let Some(id) = c {
        let cont = &r.containers[id];
        if let Some(z) = &cont.compression
            && z.uncompressed_size > 0
        {
            let share = u128::from(img.size) * u128::from(z.compressed_size)
                / u128::from(z.uncompressed_size);
            return u64::try_from(share).unwrap_or(u64::MAX);
        }
        c = match cont.parent {
            Some(Parent::Container(p)) => Some(p),
            Some(Parent::Image(i)) => Some(r.images[i].container),
            None => None,
        };
    }
    img.size
}

fn dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// The row of [`SizeReport::by_target`] that `img` counts in: `<offload
/// kind> <triple> <target ID> <image kind>`, `-` for an empty or unknown
/// part.
pub(crate) fn target_key(img: &Image) -> String {
    let kind = img.image_kind.map_or_else(|| "-".into(), |k| k.to_string());
    format!(
        "{} {} {} {kind}",
        img.offload_kind,
        dash(&img.triple),
        dash(&img.target_id)
    )
}

/// The size report of the file `path` of `file_size` bytes, scanned into
/// `r`.
pub fn size(path: &str, file_size: u64, r: &Report) -> SizeReport {
    let mut rep = SizeReport {
        path: path.into(),
        file_size,
        ..SizeReport::default()
    };
    rep.damage = r
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::Damage)
        .map(|p| p.message.clone())
        .chain(r.stopped.map(|l| format!("the scan stopped: {l}")))
        .collect();
    rep.elsewhere = r.elsewhere_note();
    for img in r.images.iter().filter(|i| i.is_leaf() && i.is_read()) {
        let stored = stored_size(r, img);
        // A compressed CUDA fatbin entry counts what it decompresses to.
        let bytes = img.uncompressed_size.unwrap_or(img.size);
        if img.offload_kind.is_host() {
            rep.host.add(bytes, stored);
            continue;
        }
        let kind = img.image_kind.map_or_else(|| "-".into(), |k| k.to_string());
        let target = target_key(img);
        rep.total.add(bytes, stored);
        rep.by_target.entry(target).or_default().add(bytes, stored);
        rep.by_kind.entry(kind).or_default().add(bytes, stored);
    }
    rep
}
