//! What editing reads of a linked host file's headers, apart from the
//! scan, each read once ([`Facts`]): the parts a rewrite must leave as
//! they are ([`fixed::Fixed`]), which the plan checks its edits against
//! and shrinking its moves, and a PE image's headers ([`pe::PeImage`]),
//! which give its fixed parts and which its rewrite edits.

use std::cell::OnceCell;

use super::checked::Refusal;
use crate::error::{Error, Result};

pub(crate) mod fixed;
pub(crate) mod pe;

use fixed::Fixed;
use pe::PeImage;

/// The headers of one host file, read when first asked for and kept: the
/// plan and the rewrite that follows it read them from here, never from
/// the file again. A read that fails is not kept (the first failure ends
/// the prune of the file).
#[derive(Debug)]
pub(crate) struct Facts<'a> {
    data: &'a [u8],
    /// The file's host format, as the scan read it.
    kind: Option<object::FileKind>,
    fixed: OnceCell<Vec<Fixed>>,
    pe: OnceCell<PeImage>,
}

impl<'a> Facts<'a> {
    /// The facts of `data`, whose host format the scan read as `kind`
    /// (the scan report's `host`); nothing is read yet.
    pub(crate) fn new(data: &'a [u8], kind: Option<object::FileKind>) -> Facts<'a> {
        Facts {
            data,
            kind,
            fixed: OnceCell::new(),
            pe: OnceCell::new(),
        }
    }

    /// The parts of the linked ELF file or PE image that must stay
    /// ([`Fixed`]); an error when its headers cannot be read (then what a
    /// rewrite would overwrite cannot be told).
    pub(crate) fn fixed(&self) -> Result<&[Fixed]> {
        if let Some(parts) = self.fixed.get() {
            return Ok(parts);
        }
        let parts = match self.kind {
            Some(object::FileKind::Pe32 | object::FileKind::Pe64) => self
                .pe()
                .map(fixed::pe_parts)
                .map_err(|why| Error::unsupported(format!("{why}: nothing is pruned")))?,
            kind => fixed::elf_parts(self.data, kind)?,
        };
        Ok(self.fixed.get_or_init(|| parts))
    }

    /// The headers of the PE image, or why they cannot be read (it is no
    /// PE image, or they are damaged).
    pub(crate) fn pe(&self) -> std::result::Result<&PeImage, Refusal> {
        if let Some(image) = self.pe.get() {
            return Ok(image);
        }
        let image = match self.kind {
            Some(k) => PeImage::read(self.data, k)?,
            None => return Err("it is no PE image".into()),
        };
        Ok(self.pe.get_or_init(|| image))
    }
}
