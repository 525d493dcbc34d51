//! A layer's tar copied once more with the data of some of its files
//! replaced ([`replace_files`]): how a layer is finished once the
//! package records inside it (a wheel's `RECORD`, a conda
//! `conda-meta/*.json`) are brought up to date after its first rewrite.
//! Every other entry's header and data are copied as they were.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Seek as _, SeekFrom, Write as _};

use sha2::{Digest as _, Sha256};

use super::digests::hex;
use super::whiteout::{OutOfRoot, normal};
use crate::package::Hashing;
use crate::package::tar::walk::{Fault, Walk};

/// Why [`replace_files`] stopped; the caller words it.
#[derive(Debug)]
pub(crate) enum ReplaceError {
    /// Seeking in the tars, or flushing the new one, failed.
    Io(std::io::Error),
    /// The walk of the tar failed.
    Fault(Fault),
    /// An entry's path leads out of the layer's root.
    OutOfRoot(OutOfRoot),
    /// The file at this path, one whose data is replaced, has its size
    /// given in a pax header, which is not rewritten here.
    PaxSize(String),
    /// Writing a file's new data failed.
    Write(std::io::Error),
}

/// Copies the layer's tar `tar` (read from its start) to `out`, the data
/// of each regular file whose path (made normal) `new` holds replaced by
/// the bytes it gives there, its header's size with them. Returns the new
/// tar, rewound to its start, and its SHA-256 as a digest (`sha256:…`:
/// the layer's new diff_id).
pub(crate) fn replace_files(
    tar: &mut File,
    out: File,
    new: &BTreeMap<String, Vec<u8>>,
) -> Result<(File, String), ReplaceError> {
    use ReplaceError::{Fault as Walked, Io};
    tar.seek(SeekFrom::Start(0)).map_err(Io)?;
    let sink = Hashing::<_, Sha256>::new(BufWriter::with_capacity(1 << 20, &out));
    let mut walk = Walk::new(BufReader::with_capacity(1 << 20, &*tar), sink, u64::MAX);
    while let Some(h) = walk.next().map_err(Walked)? {
        let path = normal(&h.path_lossy()).map_err(ReplaceError::OutOfRoot)?;
        let Some(bytes) = new.get(&path).filter(|_| h.is_file()) else {
            walk.copy(&h).map_err(Walked)?;
            continue;
        };
        if h.size_in_pax {
            return Err(ReplaceError::PaxSize(path));
        }
        walk.skip_body().map_err(Walked)?;
        walk.write_header(&h, bytes.len() as u64).map_err(Walked)?;
        let n = bytes.len() as u64;
        walk.out().write_all(bytes).map_err(ReplaceError::Write)?;
        walk.pad(n).map_err(Walked)?;
    }
    let Hashing {
        out: mut inner,
        digest: sha,
        ..
    } = walk.into_inner();
    inner.flush().map_err(Io)?;
    drop(inner);
    let sha = sha.finalize();
    let mut out = out;
    out.seek(SeekFrom::Start(0)).map_err(Io)?;
    Ok((out, format!("sha256:{}", hex(&sha))))
}
