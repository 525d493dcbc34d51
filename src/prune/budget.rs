//! The bytes the members of one package may inflate to, together
//! ([`Budget`]), and a member inflated within them ([`inflate`]): what
//! wheels, `.deb`s and the packages prune only reads share.

use std::io::{Read, Write as _};
use std::path::Path;

use super::path::error::{PathError, PathErrorKind};
use crate::files::{Input, SPOOL_IN_MEMORY};

/// `'WHEEL': WHY` about the wheel `path` and what it holds.
pub(crate) fn said(path: &Path, why: String) -> PathError {
    PathError::said(
        PathErrorKind::Content,
        path,
        &crate::files::shown(path),
        why,
    )
}

/// The bytes the members of one package may still inflate to, together:
/// the zip layer's, with prune's limits and errors.
pub(crate) use crate::package::Budget;

impl Budget {
    /// The budget of a wheel of `size` bytes: `given` (`--max-uncompressed`),
    /// else what a scan of a file that size gets.
    pub(crate) fn new(size: u64, given: Option<u64>) -> Budget {
        if let Some(left) = given {
            return Budget {
                left,
                why: "--max-uncompressed",
            };
        }
        let left = crate::scan::default_max_uncompressed(size);
        let why = match size.checked_mul(1024) {
            Some(n) if n == left => "1024 times the file's size; --max-uncompressed sets it",
            _ if left == 128 << 20 => {
                "128M, the least whatever the file's size; --max-uncompressed sets it"
            }
            _ => "16G, the most whatever the file's size; --max-uncompressed sets it",
        };
        Budget { left, why }
    }

    /// Takes the `size` bytes the member `member` of the wheel `path`
    /// declares, or says that they are more than is left.
    pub(crate) fn take(&mut self, path: &Path, member: &str, size: u64) -> Result<(), PathError> {
        self.charge(member, size)
            .map_err(|e| said(path, e.to_string()))
    }

    /// The error for the member `member` of the wheel `path`, which
    /// inflates to `size` bytes, more than are left.
    pub(crate) fn passed(&self, path: &Path, member: &str, size: u64) -> PathError {
        said(path, self.overdrawn(member, size))
    }
}

/// Inflates the member `member` of the wheel `path` from `reader`, whose
/// first bytes, `head`, were already read: into memory up to
/// [`SPOOL_IN_MEMORY`] bytes, else into a temporary file. It must give
/// the `size` bytes it declares, no more and no fewer.
pub(crate) fn inflate(
    path: &Path,
    member: &str,
    head: &[u8],
    reader: &mut dyn Read,
    size: u64,
) -> Result<Input, PathError> {
    let cannot = |e: std::io::Error| PathError::member(path, member, "cannot be inflated", e);
    let rest = size.saturating_sub(head.len() as u64);
    let mut r = reader.take(rest.saturating_add(1));
    let (input, n) = if size <= SPOOL_IN_MEMORY {
        let mut v = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        v.extend_from_slice(head);
        r.read_to_end(&mut v).map_err(cannot)?;
        let n = v.len() as u64;
        (Input::from_vec(v), n)
    } else {
        let mut spool = tempfile::tempfile().map_err(cannot)?;
        spool.write_all(head).map_err(cannot)?;
        let n = crate::files::copy_in_pieces(&mut r, &mut spool).map_err(cannot)?;
        let spooled =
            Input::from_temp_file(spool).map_err(|e| PathError::io(PathErrorKind::Io, path, e))?;
        (spooled, n + head.len() as u64)
    };
    if n > size {
        let why = format!("member '{member}' inflates to more than the {size} bytes it declares");
        return Err(said(path, why));
    }
    if n < size {
        let why =
            format!("member '{member}' inflates to {n} bytes, fewer than the {size} it declares");
        return Err(said(path, why));
    }
    Ok(input)
}
