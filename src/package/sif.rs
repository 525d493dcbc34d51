//! Singularity/Apptainer images (SIF, `.sif`): a 128-byte global header
//! (after a 32-byte launch line, the magic `SIF_MAGIC`, the version `01`,
//! then counts and offsets, all little-endian), a table of fixed-size
//! descriptors, one for each data object, and the objects. A container's
//! root filesystem is a partition object holding a squashfs: its files are
//! the image's members, named by their paths. Other squashfs partitions
//! (overlays, data) are walked too, their members under
//! `.sif/partition-ID/`. Partitions in other filesystems (ext3, raw,
//! encrypted squashfs) are members that cannot be read; every other object
//! (definition file, labels, signatures, SBOM, OCI blobs…) is handed over
//! whole as a member `.sif/ID.TYPE`, to be scanned as any file is.
//!
//! Every count, offset and size is checked against the file before use.

use super::squashfs;
use super::types::{Contents, Kind, Members, corrupt};
use crate::bytes::le_at;
use crate::error::Result;
use crate::num::{u64_from, usize_from};

/// Where the magic lies, after the launch line.
const MAGIC_AT: usize = 32;

/// The magic (with its NUL).
const MAGIC: &[u8] = b"SIF_MAGIC\0";

/// The global header's length.
const HEADER: usize = 128;

/// A descriptor's length: type (4), used (1), ID, group and link (4
/// each), offset, size, size with padding, two times, two owner ids (8
/// each), a 128-byte name and 384 bytes that depend on the type.
const DESCRIPTOR: usize = 585;

/// The most descriptors a table may have (siftool makes 48): bounds the
/// work a lying count asks for.
const MAX_DESCRIPTORS: u64 = 1 << 16;

/// The partition object type, and the squashfs filesystem type.
const PARTITION: i32 = 0x4004;
const FS_SQUASH: i32 = 1;

/// The primary system partition's type (the container's root).
const PART_PRIMARY: i32 = 2;

/// Whether `bytes` start with a SIF global header's magic.
pub(crate) fn is_sif(bytes: &[u8]) -> bool {
    bytes.get(MAGIC_AT..).is_some_and(|b| b.starts_with(MAGIC))
}

/// One used descriptor: the object's type, ID, place and, for a
/// partition, its filesystem and partition types.
struct Object {
    kind: i32,
    id: u32,
    at: usize,
    len: usize,
    fs: i32,
    part: i32,
}

/// Reads the descriptors of `bytes`, each object's place checked.
fn objects(bytes: &[u8]) -> std::result::Result<Vec<Object>, String> {
    let header = bytes.get(..HEADER).ok_or_else(|| {
        format!(
            "its global header is cut short ({} of {HEADER} bytes)",
            bytes.len()
        )
    })?;
    if !is_sif(header) {
        return Err("it does not carry the SIF magic at byte 32".into());
    }
    if &header[42..45] != b"01\0" {
        return Err(format!(
            "it is SIF version '{}'; offload-kit reads version 01",
            String::from_utf8_lossy(&header[42..44])
        ));
    }
    let i64_at = |b: &[u8], at| le_at::<u64>(b, at).unwrap_or(u64::MAX);
    let (total, table) = (i64_at(header, 88), i64_at(header, 96));
    if total > MAX_DESCRIPTORS {
        return Err(format!("its header gives {total} descriptors"));
    }
    let end = table.checked_add(total * DESCRIPTOR as u64);
    if end.is_none_or(|e| e > u64_from(bytes.len())) {
        return Err(format!(
            "its {total} descriptors at {table} reach past its end ({} bytes)",
            bytes.len()
        ));
    }
    let mut out = Vec::new();
    for i in 0..usize_from(total) {
        let at = usize_from(table) + i * DESCRIPTOR;
        let d = &bytes[at..at + DESCRIPTOR];
        if d[4] == 0 {
            continue;
        }
        let i32_at = |at| le_at::<i32>(d, at).unwrap_or(0);
        let id = le_at::<u32>(d, 5).unwrap_or(0);
        let (offset, size) = (i64_at(d, 17), i64_at(d, 25));
        let inside = offset
            .checked_add(size)
            .is_some_and(|e| e <= u64_from(bytes.len()));
        if !inside {
            return Err(format!(
                "its object {id} ({size} bytes at {offset}) reaches past its end ({} bytes)",
                bytes.len()
            ));
        }
        out.push(Object {
            kind: i32_at(0),
            id,
            at: usize_from(offset),
            len: usize_from(size),
            fs: i32_at(0xc9),
            part: i32_at(0xcd),
        });
    }
    Ok(out)
}

/// A data object type's name, for the member it is handed over as.
fn type_name(kind: i32) -> String {
    match kind {
        0x4001 => "deffile".into(),
        0x4002 => "envvar".into(),
        0x4003 => "labels".into(),
        0x4004 => "partition".into(),
        0x4005 => "signature".into(),
        0x4006 => "json".into(),
        0x4007 => "generic".into(),
        0x4008 => "cryptmessage".into(),
        0x4009 => "sbom".into(),
        0x400a => "oci-index".into(),
        0x400b => "oci-blob".into(),
        k => format!("type-{k:#x}"),
    }
}

/// Hands every member of the SIF `bytes` to `to`: the files of its
/// squashfs partitions (the primary one's by their paths), then its other
/// objects.
pub(super) fn sif_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let objects = objects(bytes).map_err(|e| corrupt(Kind::Sif, e))?;
    let squash = |o: &&Object| o.kind == PARTITION && o.fs == FS_SQUASH;
    let primary = objects
        .iter()
        .filter(squash)
        .find(|o| o.part == PART_PRIMARY)
        .or_else(|| objects.iter().find(squash))
        .map(|o| o.id);
    for o in &objects {
        let data = &bytes[o.at..o.at + o.len];
        if o.kind == PARTITION && o.fs == FS_SQUASH {
            if Some(o.id) == primary {
                squashfs::squashfs_members(data, Kind::Sif, to)?;
            } else {
                let prefix = format!(".sif/partition-{}/", o.id);
                let mut under = Prefixed { prefix, to };
                squashfs::squashfs_members(data, Kind::Sif, &mut under)?;
            }
        } else if o.kind == PARTITION {
            let name = format!(".sif/partition-{}", o.id);
            let why = match o.fs {
                2 => "an ext3 partition, which offload-kit does not read".into(),
                5 => "an encrypted squashfs partition, which offload-kit does not read".into(),
                fs => {
                    format!("a partition of filesystem type {fs}, which offload-kit does not read")
                }
            };
            to.member(&name, Err(why))?;
        } else {
            let name = format!(".sif/{}.{}", o.id, type_name(o.kind));
            to.member(&name, Ok(Contents::Stored(data)))?;
        }
    }
    Ok(())
}

/// Hands members on under a prefix.
struct Prefixed<'t> {
    prefix: String,
    to: &'t mut dyn Members,
}

impl Members for Prefixed<'_> {
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()> {
        self.to.member(&format!("{}{path}", self.prefix), contents)
    }
}

/// A piece of a rewritten SIF ([`rebuild`]), in the order written.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// These bytes (the header and descriptors, or padding).
    Bytes(Vec<u8>),
    /// These bytes of the old file (an object kept as it was).
    Copy(std::ops::Range<usize>),
    /// The new system partition.
    Partition,
}

/// A SIF to be written anew: its pieces, and how many signature objects
/// were left out.
#[derive(Debug)]
pub(crate) struct Rebuilt {
    pub(crate) pieces: Vec<Piece>,
    pub(crate) unsigned: usize,
}

/// The signature object type.
const SIGNATURE: i32 = 0x4005;

/// The alignment `siftool` gives a partition.
const PAGE: u64 = 4096;

/// Where the system partition of the SIF `bytes` lies (its squashfs, the
/// one prune rewrites), or why it is not rewritten: damaged (`Err(true,
/// why)`), or refused (`Err(false, why)`: no squashfs partition, or more
/// than one).
pub(crate) fn system_partition(
    bytes: &[u8],
) -> std::result::Result<std::ops::Range<usize>, (bool, String)> {
    let objects = objects(bytes).map_err(|e| (true, e))?;
    let squash: Vec<&Object> = objects
        .iter()
        .filter(|o| o.kind == PARTITION && o.fs == FS_SQUASH)
        .collect();
    match squash[..] {
        [o] => Ok(o.at..o.at + o.len),
        [] => Err((false, "it holds no squashfs partition".into())),
        _ => Err((
            false,
            format!(
                "it holds {} squashfs partitions: prune rewrites a SIF with one",
                squash.len()
            ),
        )),
    }
}

/// The SIF `bytes` with its one squashfs partition replaced by `new_len`
/// new bytes: the objects in their order, each after the padding its
/// alignment asks (a page where it started on one), every descriptor's
/// offset, size and size with padding true, the header's data length
/// true, and every signature object left out (its descriptor emptied and
/// counted free): a signature of the old partition would not verify.
/// SIF descriptors hold no hash of their object.
pub(crate) fn rebuild(bytes: &[u8], new_len: u64) -> std::result::Result<Rebuilt, String> {
    let objects = objects(bytes)?;
    let at = |b: &[u8], at| le_at::<u64>(b, at).unwrap_or(u64::MAX);
    let (free, table, data) = (at(bytes, 80), at(bytes, 96), at(bytes, 112));
    let total = at(bytes, 88);
    let table_end = table + total * DESCRIPTOR as u64;
    if table < u64_from(HEADER) || table_end > data || data > u64_from(bytes.len()) {
        return Err(format!(
            "its descriptors ({table}..{table_end}) do not lie between its header and its data \
             ({data})"
        ));
    }
    let mut head = bytes[..usize_from(data)].to_vec();
    let mut order: Vec<(usize, &Object)> = (0..usize_from(total))
        .filter_map(|i| {
            let d = usize_from(table) + i * DESCRIPTOR;
            let id = le_at::<u32>(bytes, d + 5)?;
            let o = objects.iter().find(|o| o.id == id && bytes[d + 4] != 0)?;
            Some((d, o))
        })
        .collect();
    order.sort_by_key(|(_, o)| o.at);
    let (mut pos, mut pieces, mut unsigned) = (data, Vec::new(), 0);
    let mut last_end = usize_from(data);
    for (d, o) in order {
        if o.at < last_end {
            return Err(format!(
                "its object {} overlaps another or its header",
                o.id
            ));
        }
        last_end = o.at + o.len;
        if o.kind == SIGNATURE {
            head[d..d + DESCRIPTOR].fill(0);
            unsigned += 1;
            continue;
        }
        let squash = o.kind == PARTITION && o.fs == FS_SQUASH;
        let align = if o.kind == PARTITION || u64_from(o.at).is_multiple_of(PAGE) {
            PAGE
        } else {
            1
        };
        let start = pos.div_ceil(align) * align;
        let len = if squash { new_len } else { u64_from(o.len) };
        head[d + 17..d + 25].copy_from_slice(&start.to_le_bytes());
        head[d + 25..d + 33].copy_from_slice(&len.to_le_bytes());
        head[d + 33..d + 41].copy_from_slice(&(len + start - pos).to_le_bytes());
        if start > pos {
            pieces.push(Piece::Bytes(vec![0; usize_from(start - pos)]));
        }
        pieces.push(match squash {
            true => Piece::Partition,
            false => Piece::Copy(o.at..o.at + o.len),
        });
        pos = start + len;
    }
    head[80..88].copy_from_slice(&(free + u64_from(unsigned)).to_le_bytes());
    head[120..128].copy_from_slice(&(pos - data).to_le_bytes());
    pieces.insert(0, Piece::Bytes(head));
    Ok(Rebuilt { pieces, unsigned })
}

#[cfg(test)]
mod tests {
    use super::{DESCRIPTOR, HEADER, Piece, rebuild, system_partition};

    /// A SIF of three objects from 4096: a squashfs system partition of
    /// 100 bytes, a definition file of 10, a signature of 20.
    fn sif() -> Vec<u8> {
        let mut b = vec![0u8; 4096 + 130];
        b[32..42].copy_from_slice(b"SIF_MAGIC\0");
        b[42..45].copy_from_slice(b"01\0");
        for (at, v) in [
            (80, 45u64),
            (88, 3),
            (96, 128),
            (104, 3 * 585),
            (112, 4096),
            (120, 130),
        ] {
            b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        let objects = [
            (0x4004i32, 1u32, 4096u64, 100u64),
            (0x4001, 2, 4196, 10),
            (0x4005, 3, 4206, 20),
        ];
        for (i, (kind, id, at, len)) in objects.into_iter().enumerate() {
            let d = HEADER + i * DESCRIPTOR;
            b[d..d + 4].copy_from_slice(&kind.to_le_bytes());
            b[d + 4] = 1;
            b[d + 5..d + 9].copy_from_slice(&id.to_le_bytes());
            b[d + 17..d + 25].copy_from_slice(&at.to_le_bytes());
            b[d + 25..d + 33].copy_from_slice(&len.to_le_bytes());
            if kind == 0x4004 {
                b[d + 0xc9..d + 0xcd].copy_from_slice(&1i32.to_le_bytes());
                b[d + 0xcd..d + 0xd1].copy_from_slice(&2i32.to_le_bytes());
            }
        }
        b
    }

    /// A little-endian u64 of `b` at `at`.
    fn u64_at(b: &[u8], at: usize) -> u64 {
        crate::bytes::le_at::<u64>(b, at).unwrap()
    }

    #[test]
    fn the_partition_is_replaced_and_the_descriptors_made_true() {
        let b = sif();
        assert_eq!(system_partition(&b).unwrap(), 4096..4196);
        let r = rebuild(&b, 5000).unwrap();
        assert_eq!(r.unsigned, 1);
        let [Piece::Bytes(head), Piece::Partition, Piece::Copy(def)] = &r.pieces[..] else {
            panic!("{:?}", &r.pieces[1..]);
        };
        assert_eq!(def, &(4196..4206));
        assert_eq!(head.len(), 4096);
        // The partition where it was, 5000 bytes; the definition file after it.
        assert_eq!(u64_at(head, HEADER + 17), 4096);
        assert_eq!(u64_at(head, HEADER + 25), 5000);
        let d = HEADER + DESCRIPTOR;
        assert_eq!((u64_at(head, d + 17), u64_at(head, d + 25)), (9096, 10));
        // The signature's descriptor emptied and counted free; the data
        // size what the objects take.
        assert!(
            head[HEADER + 2 * DESCRIPTOR..][..DESCRIPTOR]
                .iter()
                .all(|&x| x == 0)
        );
        assert_eq!(u64_at(head, 80), 46);
        assert_eq!(u64_at(head, 120), 5010);
    }

    #[test]
    fn overlapping_objects_are_damaged() {
        let mut b = sif();
        let d = HEADER + DESCRIPTOR;
        b[d + 17..d + 25].copy_from_slice(&4100u64.to_le_bytes());
        assert!(rebuild(&b, 5000).unwrap_err().contains("overlaps"));
    }
}
