//! [`Report`]: everything found in one file, and what it answers about
//! its images.

use super::{Container, Image, Limit, Parent, Problem, ProblemKind, UnreadFormat};

/// Everything found in one file. Serializes as the `format`, `scan`,
/// `containers`, `images` and `problems` of one file in the
/// `inspect --json` schema ([`JsonDocument`](super::JsonDocument)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// What the file is: `ELF64`, `COFF`, `Mach-O`, `archive`, `data`, a
    /// container's name; `ptx`, `spirv`, `bitcode` for a file that is one
    /// such image; `unread` for a format not read ([`Report::unread`]).
    pub format: &'static str,
    /// Whether section headers were used.
    pub used_sections: bool,
    /// Whether (part of) the file was raw-scanned.
    pub used_raw_scan: bool,
    /// Containers, in the order found (parents before children).
    pub containers: Vec<Container>,
    /// Images, in the order found.
    pub images: Vec<Image>,
    /// Problems.
    pub problems: Vec<Problem>,
    /// The limit that stopped the scan early, if one did: the report is
    /// then incomplete, and a command should treat the file as unreadable.
    pub stopped: Option<Limit>,
    /// Bytes produced by decompression, every pass counted (the work the
    /// scan did beyond reading the file).
    pub decompressed: u64,
    /// CUDA fatbins that lie in the file's other data sections (`.rodata`,
    /// `.data` …) when it was read through its section headers, as
    /// (section name, how many): fatbins the file's own code loads (cuFFT
    /// keeps its kernels so), which no CUDA runtime registers and
    /// `cuobjdump` does not read. Counted by their headers, not walked:
    /// they are not in `containers` or `images`; [`Mode::Raw`](super::Mode::Raw) lists them.
    pub fatbins_elsewhere: Vec<(String, u64)>,
    /// The format of [`UNREAD_FORMATS`](super::UNREAD_FORMATS) the file
    /// (or a member of its static archive) is, if it is one: a package,
    /// image or compressed file the scan recognises but does not read
    /// (a squashfs, an ISO 9660 image, a 7-Zip archive …), so whether it holds
    /// device code is not known. Its bytes are not searched, its
    /// [`images`](Report::images) are not its contents: a [`Problem`] of
    /// kind [`ProblemKind::Damage`] says so (the report is
    /// [`damaged`](Report::damaged)), [`check`](super::check()) judges the
    /// file unreadable even with
    /// [`allow_corrupt`](super::Requirements::allow_corrupt), and the
    /// `inspect --json` document gives the format as `unread`.
    pub unread: Option<UnreadFormat>,
    /// Where the [`unread`](Report::unread) format lies: the archive
    /// member, `None` for the file itself.
    pub(crate) unread_member: Option<String>,
    /// The host format of the file as a whole (ELF, COFF, PE, Mach-O),
    /// read once by the scan for the commands that go on to edit the
    /// file; `None` for anything else.
    pub(crate) host: Option<object::FileKind>,
}

impl Report {
    /// [`Report::fatbins_elsewhere`] in words, for the commands' notes and
    /// prune's refusal: `18227 CUDA fatbin(s) in .data (18215), .ldata
    /// (12)`, or with one section `23983 CUDA fatbin(s) in .ldata`; `None`
    /// when there are none.
    pub(crate) fn fatbins_elsewhere_said(&self) -> Option<String> {
        let [(first, _), more @ ..] = &self.fatbins_elsewhere[..] else {
            return None;
        };
        let total: u64 = self.fatbins_elsewhere.iter().map(|(_, n)| n).sum();
        let wheres = if more.is_empty() {
            first.clone()
        } else {
            let each: Vec<String> = self
                .fatbins_elsewhere
                .iter()
                .map(|(s, n)| format!("{s} ({n})"))
                .collect();
            each.join(", ")
        };
        Some(format!("{total} CUDA fatbin(s) in {wheres}"))
    }

    /// What a report says of those fatbins: `18227 CUDA fatbin(s) in
    /// .data, which the file loads itself, not read (--raw reads them)`;
    /// `None` when there are none.
    pub(crate) fn elsewhere_note(&self) -> Option<String> {
        self.fatbins_elsewhere_said()
            .map(|t| format!("{t}, which the file loads itself, not read (--raw reads them)"))
    }

    /// Whether anything read was damaged: a [`Problem`] of kind
    /// [`ProblemKind::Damage`], a scan [stopped](Report::stopped) at a
    /// limit, or a format [not read](Report::unread).
    pub fn damaged(&self) -> bool {
        self.stopped.is_some()
            || self.unread.is_some()
            || self.problems.iter().any(|p| p.kind == ProblemKind::Damage)
    }

    /// Why the file cannot be judged when it is (or its static archive
    /// holds) a format the scan does not read ([`Report::unread`]), as
    /// errors say it: `it is a squashfs image, a format offload-kit does
    /// not read: …`, after `member 'x.sqfs': ` for an archive member;
    /// `None` when the file was read.
    pub fn unread_why(&self) -> Option<String> {
        let f = self.unread?;
        Some(match &self.unread_member {
            Some(m) => format!("member '{m}': {}", f.why()),
            None => f.why(),
        })
    }

    /// For each image (by id), whether it lies in damaged data: in a
    /// container with a [`ProblemKind::Damage`] problem (or in the
    /// decompressed contents of one), in a container inside such an image
    /// or container at any depth, holding, at any depth, a container that
    /// is damaged or damaged data that is no container, or in a file (or
    /// archive member) whose headers are damaged. `extract` keeps none of
    /// them.
    pub fn in_damaged_data(&self) -> Vec<bool> {
        let n = self.containers.len();
        let mut damaged = vec![false; n];
        let mut bad = vec![false; self.images.len()];
        for p in self
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::Damage)
        {
            if p.whole_file && p.within.is_none() {
                for (b, img) in bad.iter_mut().zip(&self.images) {
                    *b |= img.member == p.member;
                }
            }
            match (p.container, p.within) {
                (Some(c), _) | (None, Some(Parent::Container(c))) => {
                    if let Some(d) = damaged.get_mut(c) {
                        *d = true;
                    }
                }
                (None, Some(Parent::Image(i))) => {
                    if let Some(b) = bad.get_mut(i) {
                        *b = true;
                    }
                }
                (None, None) => {}
            }
        }
        // Upward: what holds damage, through the images whose bytes hold
        // it. Containers come after what they lie in.
        let container_of = |i: usize| self.images.get(i).map(|img| img.container);
        let mut holds = damaged.clone();
        for (i, &b) in bad.iter().enumerate() {
            if let Some(h) = container_of(i).filter(|_| b).and_then(|c| holds.get_mut(c)) {
                *h = true;
            }
        }
        for c in (0..n).rev() {
            if !holds[c] {
                continue;
            }
            let up = match self.containers[c].parent {
                Some(Parent::Image(i)) => {
                    if let Some(b) = bad.get_mut(i) {
                        *b = true;
                    }
                    container_of(i)
                }
                Some(Parent::Container(p)) => Some(p),
                None => None,
            };
            if let Some(h) = up.filter(|&u| u < c).and_then(|u| holds.get_mut(u)) {
                *h = true;
            }
        }
        // Downward: everything inside a damaged container.
        let mut tainted = damaged;
        for c in 0..n {
            let up = match self.containers[c].parent {
                Some(Parent::Image(i)) => container_of(i),
                Some(Parent::Container(p)) => Some(p),
                None => None,
            };
            if up.is_some_and(|u| u < c && tainted[u]) {
                tainted[c] = true;
            }
        }
        self.images
            .iter()
            .zip(bad)
            .map(|(img, b)| b || tainted.get(img.container).copied().unwrap_or(false))
            .collect()
    }
}
