//! After the first pass: from the operands of `llvm.embedded.objects` to
//! the globals and the initializers they stand for, read again where the
//! first pass left them.

use super::codes::{CST_CODE_CSTRING, CST_CODE_DATA, CST_CODE_STRING};
use super::{At, Decode, EmbeddedObject, Md, Module, Ty, Val};
use crate::bitcode::stream::{Res, Value};

impl Module<'_> {
    /// What value ID `id` is.
    fn value(&self, id: u64) -> Option<Val> {
        let i = self.values.partition_point(|r| r.first + r.count <= id);
        self.values
            .get(i)
            .filter(|r| r.first <= id && id - r.first < r.count)
            .map(|r| r.what)
    }

    /// The objects, from the operands of `llvm.embedded.objects`.
    pub(super) fn resolve(&mut self) -> Res<Vec<EmbeddedObject>> {
        let mut out = Vec::new();
        let named = std::mem::take(&mut self.named);
        for md in named {
            let at = match self.md(md) {
                Some(Md::Node(at)) => at,
                // Debug-info nodes are nodes too, but never of this form.
                Some(Md::Other) => continue,
                Some(Md::String | Md::Value(_)) => {
                    return Err("an operand of llvm.embedded.objects is not a metadata node");
                }
                None => {
                    return Err("an operand of llvm.embedded.objects names no metadata");
                }
            };
            if let Some(object) = self.object(at)? {
                out.push(object);
            }
        }
        Ok(out)
    }

    /// The object the node at `at` stands for, if any.
    fn object(&mut self, at: At) -> Res<Option<EmbeddedObject>> {
        let abbrevs = self
            .md_blocks
            .get(at.block)
            .ok_or("metadata block lost")?
            .clone();
        let mut r = self.cur.reread(&abbrevs, at.pos, at.id)?;
        // Operands are metadata IDs + 1 (0: null).
        let (Some(Value::Scalar(gv)), Some(Value::Scalar(section))) = (r.next()?, r.next()?) else {
            return Ok(None);
        };
        let is_offloading = section
            .checked_sub(1)
            .is_some_and(|s| self.offloading.binary_search(&s).is_ok());
        if !is_offloading {
            return Ok(None);
        }
        let Some(Md::Value(value)) = gv.checked_sub(1).and_then(|g| self.md(g)) else {
            return Ok(None);
        };
        let Some(Val::Global { name, init }) = self.value(value) else {
            return Ok(None);
        };
        let Some(init) = init.checked_sub(1) else {
            // A declaration.
            return Ok(None);
        };
        let (code, at, ty) = match self.value(init) {
            Some(Val::Data { code, at, ty }) => (code, at, ty),
            Some(_) => return Ok(None),
            None => return Err("a global's initializer names no value"),
        };
        let decode = match code {
            CST_CODE_STRING => Decode::Bytes,
            CST_CODE_CSTRING => Decode::CString,
            CST_CODE_DATA => Decode::Elements(self.element_size(ty)?),
            // An aggregate of this reader does not read.
            _ => {
                if self.data_sequence(ty) {
                    return Err(
                        "an embedded object's initializer is an aggregate constant of \
                                simple elements, which this reader does not read",
                    );
                }
                return Ok(None);
            }
        };
        let abbrevs = self
            .const_blocks
            .get(at.block)
            .ok_or("constants block lost")?
            .clone();
        let mut r = self.cur.reread(&abbrevs, at.pos, at.id)?;
        let mut count = 0u64;
        while let Some(v) = r.next()? {
            count = count.saturating_add(match v {
                Value::Scalar(_) => 1 + r.skip_array()?,
                Value::Blob(b) => crate::num::len64(b),
            });
        }
        if count == 0 {
            return Err("empty data constant (LLVM rejects it)");
        }
        let size = match decode {
            Decode::Bytes => count,
            Decode::CString => count.saturating_add(1),
            Decode::Elements(w) => count.saturating_mul(u64::from(w)),
        };
        let global = self
            .strtab
            .and_then(|t| {
                let start = usize::try_from(name.0).ok()?;
                let end = start.checked_add(usize::try_from(name.1).ok()?)?;
                t.get(start..end)
            })
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        Ok(Some(EmbeddedObject {
            global,
            size,
            at,
            decode,
        }))
    }

    /// The element size of a `DATA` constant of type `ty`, as LLVM's
    /// reader takes it (integers of 8 to 64 bits, half, bfloat, float,
    /// double).
    fn element_size(&self, ty: Option<u64>) -> Res<u8> {
        let elt = match ty.and_then(|t| self.ty(t)) {
            Some(Ty::Sequence(elt)) => self.ty(elt),
            _ => return Err("DATA constant not of an array or vector type"),
        };
        match elt {
            Some(Ty::Int(8)) => Ok(1),
            Some(Ty::Int(16)) => Ok(2),
            Some(Ty::Int(32)) => Ok(4),
            Some(Ty::Int(64)) => Ok(8),
            Some(Ty::Float(w)) => Ok(w),
            _ => Err("DATA constant of an element type LLVM does not take"),
        }
    }

    /// Whether `ty` is an array or vector of elements that a data array
    /// can hold.
    fn data_sequence(&self, ty: Option<u64>) -> bool {
        match ty.and_then(|t| self.ty(t)) {
            Some(Ty::Sequence(elt)) => {
                matches!(self.ty(elt), Some(Ty::Int(8 | 16 | 32 | 64) | Ty::Float(_)))
            }
            _ => false,
        }
    }

    fn ty(&self, id: u64) -> Option<Ty> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.types.get(i))
            .copied()
    }
}
