//! The first pass over the top level and the module block: the version,
//! the string table, the global values, the type table and the constants.

use super::codes::{
    CONSTANTS_BLOCK, CST_CODE_AGGREGATE, CST_CODE_CSTRING, CST_CODE_DATA, CST_CODE_SETTYPE,
    CST_CODE_STRING, METADATA_BLOCK, MODULE_BLOCK, MODULE_CODE_ALIAS, MODULE_CODE_ALIAS_OLD,
    MODULE_CODE_FUNCTION, MODULE_CODE_GLOBALVAR, MODULE_CODE_IFUNC, MODULE_CODE_VERSION,
    STRTAB_BLOCK, TYPE_BLOCK, TYPE_CODE_ARRAY, TYPE_CODE_BFLOAT, TYPE_CODE_DOUBLE, TYPE_CODE_FLOAT,
    TYPE_CODE_HALF, TYPE_CODE_INTEGER, TYPE_CODE_NUMENTRY, TYPE_CODE_STRUCT_NAME, TYPE_CODE_VECTOR,
};
use super::{At, MAX_OPERANDS, Module, Run, Ty, Val, all_values};
use crate::bitcode::stream::{BLOCKINFO_BLOCK, Entry, Res};

impl<'a> Module<'a> {
    /// The top level, as `getBitcodeFileContents` walks it.
    pub(super) fn read_file(&mut self) -> Res<()> {
        self.cur.bits.seek(32)?;
        loop {
            // LLVM stops when at most 8 bytes remain (tolerating padding).
            let byte = self.cur.bits.pos() / 8;
            if byte.saturating_add(8) >= crate::num::len64(self.cur.bits.data()) {
                break;
            }
            match self.cur.next()? {
                Entry::Block(MODULE_BLOCK) => {
                    if self.modules > 0 {
                        return Err("more than one module (LLVM reads only single-module files)");
                    }
                    self.modules += 1;
                    self.read_module()?;
                }
                Entry::Block(STRTAB_BLOCK) if self.modules == 1 && self.strtab.is_none() => {
                    self.strtab = Some(self.read_strtab()?);
                }
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => self.cur.record(id)?.skip_rest()?,
                Entry::End => return Err("malformed block"),
            }
        }
        if self.modules == 0 {
            return Err("no module");
        }
        Ok(())
    }

    fn read_strtab(&mut self) -> Res<&'a [u8]> {
        self.cur.enter(STRTAB_BLOCK)?;
        let mut blob: &[u8] = &[];
        loop {
            match self.cur.next()? {
                Entry::End => return Ok(blob),
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    let b = r.values(&mut self.vals, MAX_OPERANDS)?;
                    // STRTAB_BLOB.
                    if code == 1 {
                        blob = b.unwrap_or(&[]);
                    }
                }
            }
        }
    }

    fn read_module(&mut self) -> Res<()> {
        self.cur.enter(MODULE_BLOCK)?;
        loop {
            match self.cur.next()? {
                Entry::End => break,
                Entry::Block(BLOCKINFO_BLOCK) => self.cur.read_block_info()?,
                Entry::Block(TYPE_BLOCK) => self.read_types()?,
                Entry::Block(CONSTANTS_BLOCK) => self.read_constants()?,
                Entry::Block(METADATA_BLOCK) => self.read_metadata()?,
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    match r.code() {
                        MODULE_CODE_VERSION => {
                            all_values(&mut r, &mut self.vals)?;
                            let v = *self.vals.first().ok_or("empty VERSION record")?;
                            self.version = Some(v);
                        }
                        MODULE_CODE_GLOBALVAR => {
                            all_values(&mut r, &mut self.vals)?;
                            self.global()?;
                        }
                        MODULE_CODE_FUNCTION
                        | MODULE_CODE_ALIAS
                        | MODULE_CODE_ALIAS_OLD
                        | MODULE_CODE_IFUNC => {
                            r.skip_rest()?;
                            self.push_value(Val::Other)?;
                        }
                        _ => r.skip_rest()?,
                    }
                }
            }
        }
        match self.version {
            Some(2) => Ok(()),
            Some(0 | 1) | None => Err(
                "module older than LLVM 5 (version 0 or 1, names in a value symbol table), \
                 which this reader does not read",
            ),
            Some(_) => Err("unknown module version"),
        }
    }

    /// A `GLOBALVAR` record (in `self.vals`): [strtab offset, size, type,
    /// flags, initid + 1, linkage, …].
    fn global(&mut self) -> Res<()> {
        if self.version != Some(2) {
            return Err("GLOBALVAR before a VERSION 2 record (bitcode older than LLVM 5?)");
        }
        if self.vals.len() < 8 {
            return Err("GLOBALVAR record too short");
        }
        let g = Val::Global {
            name: (self.vals[0], self.vals[1]),
            init: self.vals[4],
        };
        self.push_value(g)
    }

    fn push_value(&mut self, v: Val) -> Res<()> {
        let first = self.next_value;
        self.next_value = first.checked_add(1).ok_or("too many values")?;
        if let (Val::Other, Some(last)) = (v, self.values.last_mut())
            && matches!(last.what, Val::Other)
        {
            last.count += 1;
            return Ok(());
        }
        self.keep(1)?;
        self.values.push(Run {
            first,
            count: 1,
            what: v,
        });
        Ok(())
    }

    fn read_types(&mut self) -> Res<()> {
        self.cur.enter(TYPE_BLOCK)?;
        loop {
            match self.cur.next()? {
                Entry::End => return Ok(()),
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    if matches!(code, TYPE_CODE_NUMENTRY | TYPE_CODE_STRUCT_NAME) {
                        r.skip_rest()?;
                        continue;
                    }
                    all_values(&mut r, &mut self.vals)?;
                    let ty = match code {
                        TYPE_CODE_INTEGER => Ty::Int(*self.vals.first().ok_or("empty type")?),
                        TYPE_CODE_HALF | TYPE_CODE_BFLOAT => Ty::Float(2),
                        TYPE_CODE_FLOAT => Ty::Float(4),
                        TYPE_CODE_DOUBLE => Ty::Float(8),
                        TYPE_CODE_ARRAY | TYPE_CODE_VECTOR => {
                            Ty::Sequence(*self.vals.get(1).ok_or("array type too short")?)
                        }
                        _ => Ty::Other,
                    };
                    self.keep(1)?;
                    self.types.push(ty);
                }
            }
        }
    }

    fn read_constants(&mut self) -> Res<()> {
        self.cur.enter(CONSTANTS_BLOCK)?;
        let block = self.const_blocks.len();
        let mut ty = None;
        loop {
            match self.cur.next()? {
                Entry::End => {
                    self.const_blocks.push(self.cur.take_closed());
                    return Ok(());
                }
                Entry::Block(_) => self.cur.skip()?,
                Entry::Record(id) => {
                    let pos = self.cur.bits.pos();
                    let mut r = self.cur.record(id)?;
                    let code = r.code();
                    if code == CST_CODE_SETTYPE {
                        all_values(&mut r, &mut self.vals)?;
                        ty = Some(*self.vals.first().ok_or("empty SETTYPE record")?);
                        continue;
                    }
                    r.skip_rest()?;
                    let v = match code {
                        CST_CODE_STRING | CST_CODE_CSTRING | CST_CODE_DATA | CST_CODE_AGGREGATE => {
                            Val::Data {
                                code,
                                at: At { block, pos, id },
                                ty,
                            }
                        }
                        _ => Val::Other,
                    };
                    self.push_value(v)?;
                }
            }
        }
    }
}
