//! What every part of the walk shares: the [`Walker`] (one scan's state),
//! where a byte range lies ([`Loc`]) and what it should hold ([`Expect`]),
//! the limits and the budget, recording problems, containers and images,
//! and the helpers the container kinds have in common. The parts (the
//! files beside this one) each add the walk of one kind to the `Walker`;
//! `walk.rs` above them starts a scan and tells what a file is.

use crate::error::{Error, ErrorKind};
use crate::host::elf;
use crate::offload_binary::ImageKind;
use crate::scan::magic::{Finders, Magic};
use crate::scan::{
    Container, ContainerKind, Content, Image, Limit, MAX_WHOLE, Options, Parent, Problem,
    ProblemKind, Report, Visit,
};

/// Where a byte range lies.
#[derive(Debug, Clone, Default)]
pub(super) struct Loc {
    /// File offset of its first byte (`None` inside decompressed data).
    pub(super) abs: Option<u64>,
    pub(super) section: Option<String>,
    pub(super) member: Option<String>,
    /// What containers found in it lie in.
    pub(super) parent: Option<Parent>,
    /// Containers around it.
    pub(super) depth: u32,
    pub(super) in_compressed: bool,
}

impl Loc {
    /// The same place, `off` bytes further on.
    pub(super) fn at(&self, off: u64) -> Loc {
        Loc {
            abs: self.abs.and_then(|a| a.checked_add(off)),
            ..self.clone()
        }
    }
}

/// What a byte range is expected to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expect {
    /// Containers back to back, zero padding allowed (a section's contents,
    /// an image that starts with a magic, decompressed contents). Anything
    /// else is a problem. `whole`: the range may be one text bundle.
    Sequence { whole: bool },
    /// Anything; candidates that fail are skipped (a raw scan).
    Raw { whole: bool },
    /// OffloadBinaries among other data: the bytes between them are not
    /// read, but a candidate that fails is damage, as in a sequence.
    Among,
}

impl Expect {
    /// Whether the range may be one text bundle.
    pub(super) fn whole(self) -> bool {
        matches!(
            self,
            Expect::Sequence { whole: true } | Expect::Raw { whole: true }
        )
    }
}

/// One scan's state: its options and visitor, the report so far, and what
/// is left of its limits.
pub(super) struct Walker<'a> {
    pub(super) opts: &'a Options,
    pub(super) finders: &'a Finders,
    pub(super) visit: &'a mut dyn Visit,
    pub(super) report: Report,
    /// Decompression still allowed, in bytes.
    pub(super) budget: u64,
    /// The thin archives' member files being read now, outermost first: a
    /// name met again is a cycle (an archive naming itself), read once.
    pub(super) thin_chain: Vec<String>,
    /// Thin archives' member files still allowed to be read in this scan
    /// (archives of many members naming each other would otherwise fan
    /// out exponentially up to the depth limit).
    pub(super) thin_reads: u32,
    /// Buffers that held images handed to the visitor, emptied, for the
    /// next ones (see `stream.rs`).
    pub(super) spare: Vec<Vec<u8>>,
    /// The buffers of each thread that decodes compressed CUDA fatbin
    /// entries, kept from one batch of entries to the next (see
    /// `cuda_fatbin.rs`).
    pub(super) decoding: Vec<Buffers>,
    /// The fatbin wrappers whose data pointer must lead to a container
    /// the scan found (see `wrappers.rs`).
    pub(super) wrapper_checks: Vec<Check>,
}

/// A name or string of the input as text.
pub(super) fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `gfx90a:xnack+:sramecc-` → (`gfx90a`, [`xnack+`, `sramecc-`]).
pub(super) fn split_target_id(t: &str) -> (String, Vec<String>) {
    let mut parts = t.split(':');
    let arch = parts.next().unwrap_or_default().to_string();
    (arch, parts.map(str::to_string).collect())
}

/// The bytes [`sniff`] needs to tell every kind it knows (the longest
/// magic, a bundle's, is 24 bytes; an ELF machine is at 18).
pub(super) const SNIFF_HEAD: usize = 24;

/// What the bytes of a bundle entry are, told from its first bytes.
pub(super) fn sniff(b: &[u8]) -> Content {
    if b.is_empty() {
        Content::Image(ImageKind::IMG_None)
    } else if b.starts_with(&object::elf::ELFMAG) {
        if elf::peek(b).and_then(|p| p.machine()) == Some(object::elf::EM_CUDA) {
            Content::Image(ImageKind::IMG_Cubin)
        } else {
            Content::Image(ImageKind::IMG_Object)
        }
    } else if crate::offload_binary::kinds::is_bitcode(b) {
        Content::Image(ImageKind::IMG_Bitcode)
    } else if crate::offload_binary::kinds::is_spirv(b) {
        Content::Image(ImageKind::IMG_SPIRV)
    } else if b.starts_with(crate::host::ar::MAGIC) {
        Content::Archive
    } else {
        match Magic::at_start(b) {
            Some(Magic::Fatbin) => Content::Image(ImageKind::IMG_Fatbinary),
            Some(Magic::OffloadBinary) => Content::OffloadBinary,
            Some(Magic::Bundle) => Content::Bundle,
            Some(Magic::Ccob) => Content::Ccob,
            None => Content::Unknown,
        }
    }
}

impl Walker<'_> {
    /// Reports damage at `loc` (in container `container`, if known).
    pub(super) fn problem(&mut self, loc: &Loc, container: Option<usize>, message: String) {
        self.problem_of(ProblemKind::Damage, loc, container, message);
    }

    /// Reports a problem of `kind` at `loc`; nothing once the scan stopped.
    pub(super) fn problem_of(
        &mut self,
        kind: ProblemKind,
        loc: &Loc,
        container: Option<usize>,
        message: String,
    ) {
        if self.stopped() {
            return;
        }
        self.record_problem(kind, loc, container, message);
    }

    /// Reports a problem of `kind` at `loc`, stopped or not: for work a
    /// limit met later does not undo (see `cuda_fatbin.rs`).
    pub(super) fn record_problem(
        &mut self,
        kind: ProblemKind,
        loc: &Loc,
        container: Option<usize>,
        message: String,
    ) {
        self.report.problems.push(Problem {
            offset: loc.abs,
            section: loc.section.clone(),
            member: loc.member.clone(),
            container,
            message,
            kind,
            within: loc.parent,
            whole_file: false,
        });
    }

    /// Reports damage at `loc` (in container `container`, if known) that
    /// makes the file (or archive member) it lies in unbelievable, such as
    /// headers whose tables lie outside it: every image found in it lies
    /// in damaged data ([`Report::in_damaged_data`]).
    pub(super) fn damaged_file(&mut self, loc: &Loc, container: Option<usize>, message: String) {
        if self.stopped() {
            return;
        }
        self.record_problem(ProblemKind::Damage, loc, container, message);
        if let Some(p) = self.report.problems.last_mut() {
            p.whole_file = true;
        }
    }

    /// Whether a limit stopped the scan: every walk returns at once.
    pub(super) fn stopped(&self) -> bool {
        self.report.stopped.is_some()
    }

    /// Stops the scan at `limit` (the first limit reached is the one
    /// reported).
    pub(super) fn stop(&mut self, limit: Limit) {
        if self.report.stopped.is_none() {
            self.report.stopped = Some(limit);
        }
    }

    /// Whether compressed data declaring `declared` bytes may be held in
    /// memory whole ([`MAX_WHOLE`]); stops the scan when not.
    pub(super) fn whole(&mut self, declared: u64) -> bool {
        if declared > MAX_WHOLE {
            self.stop(Limit::Whole(declared));
            return false;
        }
        true
    }

    /// Whether a stream declaring `declared` bytes may be decompressed
    /// whole within what is left of the budget; stops the scan when not.
    pub(super) fn fits(&mut self, declared: u64) -> bool {
        if declared > self.budget {
            self.stop(Limit::Uncompressed {
                limit: self.opts.max_uncompressed,
                declared,
            });
            return false;
        }
        true
    }

    /// Charges the budget for setting up one decoder (of a compressed
    /// container or entry, before any byte is decoded): [`DECODER_SETUP`]
    /// bytes, what decoding that much costs. Without it, many small
    /// candidates that each fail at once (a stream of repeated compressed
    /// headers, a few KiB of file) would each set up a decoder for free.
    /// `false` (the scan stopped, naming the stream's own `declared`
    /// size) when the budget cannot pay.
    pub(super) fn setup(&mut self, declared: u64) -> bool {
        if DECODER_SETUP > self.budget {
            self.stop(Limit::Uncompressed {
                limit: self.opts.max_uncompressed,
                declared,
            });
            return false;
        }
        self.budget -= DECODER_SETUP;
        true
    }
}

impl Walker<'_> {
    /// Reports a container of `kind` at `loc` (`relative_offset` into the
    /// bytes it was found in, `size` bytes); returns its id. Past
    /// [`Options::max_containers`] the scan stops.
    pub(super) fn new_container(
        &mut self,
        kind: ContainerKind,
        version: Option<u32>,
        loc: &Loc,
        relative_offset: u64,
        size: u64,
    ) -> usize {
        let id = self.report.containers.len();
        if id >= self.opts.max_containers {
            self.stop(Limit::Containers(self.opts.max_containers));
        }
        self.report.containers.push(Container {
            id,
            kind,
            version,
            parent: loc.parent,
            member: loc.member.clone(),
            section: loc.section.clone(),
            offset: loc.abs,
            relative_offset,
            size,
            compression: None,
            wrapper: None,
            images: 0,
        });
        id
    }

    /// Records an image, hashes it, hands it to the visitor, and walks the
    /// containers inside it. `loc` is where its bytes lie.
    pub(super) fn push_image(
        &mut self,
        mut image: Image,
        bytes: Option<&[u8]>,
        loc: &Loc,
    ) -> usize {
        let id = self.report.images.len();
        if id >= self.opts.max_images {
            self.stop(Limit::Images(self.opts.max_images));
        }
        // Past a limit the image is recorded (its id is used) but nothing
        // more is done for it.
        let bytes = bytes.filter(|_| !self.stopped());
        image.id = id;
        if let (Some(h), Some(b)) = (self.opts.hash, bytes) {
            image.hash = Some(h.digest(b));
        }
        let leafy = image.uncompressed_size.is_some();
        self.report.containers[image.container].images += 1;
        self.report.images.push(image);
        let Some(b) = bytes else { return id };
        if self.visit.wants(&self.report.images[id]) {
            let img = &self.report.images[id];
            match self.visit.reader(img) {
                Some(mut r) => {
                    r.read(b);
                    self.visit.read(img, r, Ok(()));
                }
                None => self.visit.image(img, b),
            }
        }
        if !leafy && Magic::at_start(b).is_some() {
            let before = self.report.containers.len();
            let l = Loc {
                parent: Some(Parent::Image(id)),
                ..loc.clone()
            };
            self.region(b, &l, Expect::Sequence { whole: false });
            if self.report.containers.len() > before {
                self.report.images[id].nested = Some(before);
            }
        }
        id
    }
}

/// Byte ranges of one container's entries, walked at most once each: an
/// entry whose non-empty range overlaps one accepted before it is damage
/// (no tool writes such entries; they are how a few kilobytes fan out to
/// millions of images), reported and left unread.
#[derive(Debug, Default)]
pub(super) struct Ranges {
    /// Accepted ranges by start: (end, entry).
    taken: std::collections::BTreeMap<u64, (u64, usize)>,
}

impl Ranges {
    /// Accepts `start..end` for entry `entry`, or returns the earlier entry
    /// it overlaps.
    pub(super) fn take(&mut self, start: u64, end: u64, entry: usize) -> Option<usize> {
        if end <= start {
            return None;
        }
        if let Some((_, &(e, j))) = self.taken.range(..end).next_back()
            && e > start
        {
            return Some(j);
        }
        self.taken.insert(start, (end, entry));
        None
    }
}

/// The problem message for entry `i` (`start..end`) overlapping entry `j`.
pub(super) fn overlap_message(i: usize, j: usize, start: u64, end: u64) -> String {
    format!(
        "entry {i} (bytes {start:#x}..{end:#x}) overlaps entry {j}: entries of one container \
         never share bytes, so entry {i} is not read"
    )
}

/// What setting up one decoder costs the budget, in decompressed bytes:
/// about what decoding this much takes (zstd's context alone is some
/// 100 KiB to set up).
pub(crate) const DECODER_SETUP: u64 = 32 << 10;

/// The error of a stream declaring `declared` bytes where `left` remain of
/// the budget (the scan has stopped; it is never reported).
pub(super) fn over_budget(declared: u64, left: u64) -> Error {
    ErrorKind::LimitExceeded {
        what: format!("decompressed data of {declared} bytes"),
        limit: left,
    }
    .into()
}

/// What one decoding thread keeps from entry to entry.
#[derive(Default)]
pub(super) struct Buffers {
    /// Decoded bytes on their way to the taps ([`tap::pump`](crate::scan::tap::pump)).
    pub(super) chunk: Vec<u8>,
    /// A whole entry, for a visitor's reader ([`tap::pump_whole`](crate::scan::tap::pump_whole)).
    pub(super) whole: Vec<u8>,
}

/// A wrapper whose data pointer must lead to a container the scan found:
/// one of a file read whole (not a thin archive's member, whose pointers
/// are left member-relative), and not a `hipk` wrapper (rocm-kpack moved
/// its device code out of the file).
pub(super) struct Check {
    /// The wrapper's container id.
    pub(super) id: usize,
    /// Where the wrapper lies.
    pub(super) loc: Loc,
    /// The pointer as stored.
    pub(super) stored: u64,
    /// Whether a pointer that leads to no file offset is wrong too: in a
    /// linked PE image every pointer is an address in the image (an ELF
    /// object may point at a symbol that another file defines).
    pub(super) must_resolve: bool,
}
