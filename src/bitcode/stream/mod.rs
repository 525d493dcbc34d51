//! LLVM's bitstream container, read (`llvm/Bitstream/BitstreamReader.h`,
//! `docs/BitCodeFormat.rst`): a bit cursor, variable-width integers, blocks
//! with their abbreviation width, abbreviations defined in a block or for a
//! block ID in the `BLOCKINFO` block, and records read operand by operand
//! (scalars, arrays, blobs), so that a caller can stream a large array
//! without holding its values as 64-bit words.
//!
//! Every read is bounded: by the data (each operand but a literal takes at
//! least one bit of it), by a budget of literal operands proportional to
//! the data (an abbreviation of many literals costs a few bits per use),
//! and by a nesting limit. Errors are static strings naming what is wrong;
//! callers add where.
//!
//! The bit cursor ([`Bits`]) and the reads' result ([`Res`]) are in
//! `bits.rs`; the bitstream writer the
//! tests build inputs with in `testing.rs`.

use std::collections::HashMap;
use std::rc::Rc;

mod bits;

use bits::EOF;
pub(crate) use bits::{Bits, Res};

/// `bitc::BLOCKINFO_BLOCK_ID`.
pub(crate) const BLOCKINFO_BLOCK: u64 = 0;
/// `bitc::BLOCKINFO_CODE_SETBID`.
const SETBID: u64 = 1;
/// The abbreviation ID of an unabbreviated record.
pub(crate) const UNABBREV_RECORD: u64 = 3;
/// The deepest blocks [`Cursor::enter`] enters.
const MAX_DEPTH: usize = 32;

/// An abbreviation operand (`BitCodeAbbrevOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Literal(u64),
    Fixed(u32),
    Vbr(u32),
    Array,
    Char6,
    Blob,
}

/// An abbreviation: its operands, the first giving the record code.
pub(crate) type Abbrev = Rc<[Op]>;

/// Reads a `DEFINE_ABBREV` body.
pub(crate) fn read_abbrev(bits: &mut Bits<'_>) -> Res<Abbrev> {
    let n = bits.vbr(5)?;
    let mut ops = Vec::new();
    for _ in 0..n {
        if bits.read(1)? == 1 {
            ops.push(Op::Literal(bits.vbr(8)?));
            continue;
        }
        let op = match bits.read(3)? {
            e @ (1 | 2) => {
                let w = bits.vbr(5)?;
                match (e, u32::try_from(w)) {
                    // Zero-width fields read as literal zero, as in LLVM.
                    (_, Ok(0)) => Op::Literal(0),
                    (1, Ok(w @ 1..=64)) => Op::Fixed(w),
                    (2, Ok(w @ 2..=64)) => Op::Vbr(w),
                    _ => return Err("invalid abbreviation operand width"),
                }
            }
            3 => Op::Array,
            4 => Op::Char6,
            5 => Op::Blob,
            _ => return Err("invalid abbreviation encoding"),
        };
        ops.push(op);
    }
    if ops.is_empty() {
        return Err("abbreviation with no operands");
    }
    Ok(ops.into())
}

/// The abbreviations of a block: those its ID has in the `BLOCKINFO`
/// block (shared), then those it defines.
#[derive(Debug, Clone, Default)]
pub(crate) struct Abbrevs {
    shared: Rc<[Abbrev]>,
    own: Vec<Abbrev>,
}

impl Abbrevs {
    /// Abbreviation `id` (the first is 4).
    pub(crate) fn get(&self, id: u64) -> Res<&Abbrev> {
        let i = id
            .checked_sub(4)
            .and_then(|i| usize::try_from(i).ok())
            .ok_or("undefined abbreviation")?;
        match i.checked_sub(self.shared.len()) {
            None => self.shared.get(i),
            Some(own) => self.own.get(own),
        }
        .ok_or("undefined abbreviation")
    }
}

/// What comes next in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The block ends (the cursor is back in the outer block).
    End,
    /// A block with this ID starts: [`Cursor::enter`] or [`Cursor::skip`].
    Block(u64),
    /// A record with this abbreviation ID: [`Cursor::record`].
    Record(u64),
}

struct Scope {
    width: u32,
    abbrevs: Abbrevs,
}

/// A cursor over blocks and records.
pub(crate) struct Cursor<'a> {
    /// The bits.
    pub(crate) bits: Bits<'a>,
    width: u32,
    abbrevs: Abbrevs,
    outer: Vec<Scope>,
    info: HashMap<u64, Rc<[Abbrev]>>,
    closed: Option<Abbrevs>,
    literals: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor at `bits`, at the top level (abbreviation width 2).
    pub(crate) fn new(bits: Bits<'a>) -> Self {
        // Two literal operands per bit of data: more than any real file
        // uses, and a bound on the work of abbreviations made of literals.
        let literals = bits.len().saturating_mul(2).saturating_add(1 << 16);
        Cursor {
            bits,
            width: 2,
            abbrevs: Abbrevs::default(),
            outer: Vec::new(),
            info: HashMap::new(),
            closed: None,
            literals,
        }
    }

    /// How many blocks the cursor is in.
    #[cfg(test)]
    pub(crate) fn depth(&self) -> usize {
        self.outer.len()
    }

    /// The next entry of the current block; abbreviation definitions are
    /// taken in on the way.
    pub(crate) fn next(&mut self) -> Res<Entry> {
        loop {
            match self.bits.read(self.width)? {
                0 => {
                    let outer = self.outer.pop().ok_or("malformed block")?;
                    self.bits.align32()?;
                    self.width = outer.width;
                    self.closed = Some(std::mem::replace(&mut self.abbrevs, outer.abbrevs));
                    return Ok(Entry::End);
                }
                1 => return Ok(Entry::Block(self.bits.vbr(8)?)),
                2 => {
                    let a = read_abbrev(&mut self.bits)?;
                    self.abbrevs.own.push(a);
                }
                id => return Ok(Entry::Record(id)),
            }
        }
    }

    /// The abbreviations of the block [`Entry::End`] last closed.
    pub(crate) fn take_closed(&mut self) -> Abbrevs {
        self.closed.take().unwrap_or_default()
    }

    /// Enters the block [`Entry::Block`] announced, with the abbreviations
    /// `BLOCKINFO` gave its ID.
    pub(crate) fn enter(&mut self, id: u64) -> Res<()> {
        let width = self.bits.vbr(4)?;
        let width = u32::try_from(width)
            .ok()
            .filter(|w| (1..=32).contains(w))
            .ok_or("invalid abbreviation width")?;
        self.bits.align32()?;
        self.bits.read(32)?;
        if self.outer.len() >= MAX_DEPTH {
            return Err("blocks nested too deeply");
        }
        let shared = self.info.get(&id).cloned().unwrap_or_else(|| Rc::new([]));
        let abbrevs = Abbrevs {
            shared,
            own: Vec::new(),
        };
        self.outer.push(Scope {
            width: self.width,
            abbrevs: std::mem::replace(&mut self.abbrevs, abbrevs),
        });
        self.width = width;
        Ok(())
    }

    /// Skips the block [`Entry::Block`] announced.
    pub(crate) fn skip(&mut self) -> Res<()> {
        self.bits.vbr(4)?;
        self.bits.align32()?;
        let words = self.bits.read(32)?;
        let to = words
            .checked_mul(32)
            .and_then(|n| n.checked_add(self.bits.pos()))
            .filter(|&to| to <= self.bits.len())
            .ok_or("block extends past the end")?;
        self.bits.seek(to)
    }

    /// Reads the `BLOCKINFO` block [`Entry::Block`] announced: its
    /// abbreviations are then those of the blocks it names. A second one
    /// replaces the first, as in LLVM's bitcode reader.
    pub(crate) fn read_block_info(&mut self) -> Res<()> {
        self.enter(BLOCKINFO_BLOCK)?;
        let mut info: HashMap<u64, Vec<Abbrev>> = HashMap::new();
        let mut current: Option<u64> = None;
        let mut ops = Vec::new();
        loop {
            match self.bits.read(self.width)? {
                0 => {
                    let outer = self.outer.pop().ok_or("malformed block")?;
                    self.bits.align32()?;
                    self.width = outer.width;
                    self.abbrevs = outer.abbrevs;
                    break;
                }
                1 => {
                    self.bits.vbr(8)?;
                    self.skip()?;
                }
                2 => {
                    let a = read_abbrev(&mut self.bits)?;
                    let id = current.ok_or("abbreviation in BLOCKINFO before SETBID")?;
                    info.entry(id).or_default().push(a);
                }
                id => {
                    let mut r = self.record(id)?;
                    let code = r.code();
                    r.values(&mut ops, 1 << 10)?;
                    if code == SETBID {
                        current = Some(*ops.first().ok_or("SETBID without a block ID")?);
                    }
                }
            }
        }
        self.info = info.into_iter().map(|(k, v)| (k, v.into())).collect();
        Ok(())
    }

    /// The record [`Entry::Record`] announced, to be read to its end before
    /// the next entry.
    pub(crate) fn record(&mut self, id: u64) -> Res<Record<'_, 'a>> {
        let abbrev = if id == UNABBREV_RECORD {
            None
        } else {
            Some(self.abbrevs.get(id)?.clone())
        };
        Record::start(&mut self.bits, abbrev, &mut self.literals)
    }

    /// A record read again, `at` the bit after its abbreviation ID, in
    /// `abbrevs` (those of its block when it was read).
    pub(crate) fn reread(&mut self, abbrevs: &Abbrevs, at: u64, id: u64) -> Res<Record<'_, 'a>> {
        self.bits.seek(at)?;
        let abbrev = if id == UNABBREV_RECORD {
            None
        } else {
            Some(abbrevs.get(id)?.clone())
        };
        Record::start(&mut self.bits, abbrev, &mut self.literals)
    }
}

/// An operand of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// A scalar (a character of a char6 array decoded).
    Scalar(u64),
    /// A blob.
    Blob(&'a [u8]),
}

enum Shape {
    Unabbreviated {
        left: u64,
    },
    Abbreviated {
        ops: Abbrev,
        next: usize,
        array: Option<(u64, Op)>,
    },
}

/// A record being read: its code, then its operands one at a time.
pub(crate) struct Record<'c, 'a> {
    bits: &'c mut Bits<'a>,
    literals: &'c mut u64,
    code: u64,
    shape: Shape,
}

impl<'c, 'a> Record<'c, 'a> {
    fn start(
        bits: &'c mut Bits<'a>,
        abbrev: Option<Abbrev>,
        literals: &'c mut u64,
    ) -> Res<Record<'c, 'a>> {
        let Some(ops) = abbrev else {
            let code = bits.vbr(6)?;
            let left = bits.vbr(6)?;
            return Ok(Record {
                bits,
                literals,
                code,
                shape: Shape::Unabbreviated { left },
            });
        };
        let first = *ops.first().ok_or("abbreviation with no operands")?;
        let code = match first {
            Op::Array | Op::Blob => return Err("abbreviation starts with an array or a blob"),
            op => scalar(bits, op, literals)?,
        };
        Ok(Record {
            bits,
            literals,
            code,
            shape: Shape::Abbreviated {
                ops,
                next: 1,
                array: None,
            },
        })
    }

    /// The record's code.
    pub(crate) fn code(&self) -> u64 {
        self.code
    }

    /// The next operand, or `None` at the end of the record.
    pub(crate) fn next(&mut self) -> Res<Option<Value<'a>>> {
        let (ops, next, array) = match &mut self.shape {
            Shape::Unabbreviated { left } => {
                if *left == 0 {
                    return Ok(None);
                }
                *left -= 1;
                return Ok(Some(Value::Scalar(self.bits.vbr(6)?)));
            }
            Shape::Abbreviated { ops, next, array } => (ops, next, array),
        };
        loop {
            if let Some((left, elt)) = array {
                if *left > 0 {
                    *left -= 1;
                    return Ok(Some(Value::Scalar(scalar(self.bits, *elt, self.literals)?)));
                }
                *array = None;
            }
            let Some(&op) = ops.get(*next) else {
                return Ok(None);
            };
            *next += 1;
            match op {
                Op::Array => {
                    let n = self.bits.vbr(6)?;
                    if *next + 1 != ops.len() {
                        return Err("array operand is not second to last");
                    }
                    let elt = ops[*next];
                    if matches!(elt, Op::Literal(_) | Op::Array | Op::Blob) {
                        return Err("invalid array element encoding");
                    }
                    *next += 1;
                    *array = Some((n, elt));
                }
                Op::Blob => {
                    let n = self.bits.vbr(6)?;
                    self.bits.align32()?;
                    let start = self.bits.pos() / 8;
                    let end = start.checked_add(n).ok_or("blob too long")?;
                    let padded = end.checked_next_multiple_of(4).ok_or("blob too long")?;
                    if padded > self.bits.len() / 8 {
                        return Err("blob extends past the end");
                    }
                    let range = usize::try_from(start).ok().zip(usize::try_from(end).ok());
                    let blob = range
                        .and_then(|(s, e)| self.bits.data().get(s..e))
                        .ok_or("blob extends past the end")?;
                    self.bits.seek(padded * 8)?;
                    return Ok(Some(Value::Blob(blob)));
                }
                op => return Ok(Some(Value::Scalar(scalar(self.bits, op, self.literals)?))),
            }
        }
    }

    /// Steps over the rest of the array being read when its elements have
    /// a fixed width, returning how many there were (0 otherwise: those
    /// of variable width are read by [`Record::next`]).
    pub(crate) fn skip_array(&mut self) -> Res<u64> {
        let Shape::Abbreviated {
            array: Some((left, elt)),
            ..
        } = &mut self.shape
        else {
            return Ok(0);
        };
        let width = match *elt {
            Op::Fixed(w) => u64::from(w),
            Op::Char6 => 6,
            _ => return Ok(0),
        };
        let n = *left;
        self.bits.skip(n.checked_mul(width).ok_or(EOF)?)?;
        *left = 0;
        Ok(n)
    }

    /// Appends the rest of the array being read to `out` when its
    /// elements are 8-bit fixed fields (bytes), returning whether it did.
    pub(crate) fn array_bytes(&mut self, out: &mut Vec<u8>) -> Res<bool> {
        let Shape::Abbreviated {
            array: Some((left, Op::Fixed(8))),
            ..
        } = &mut self.shape
        else {
            return Ok(false);
        };
        if *left == 0 {
            return Ok(false);
        }
        self.bits.read_bytes(*left, out)?;
        *left = 0;
        Ok(true)
    }

    /// Reads the rest of the record into `out` (cleared first): at most
    /// `max` scalars; returns its blob, if any.
    pub(crate) fn values(&mut self, out: &mut Vec<u64>, max: usize) -> Res<Option<&'a [u8]>> {
        out.clear();
        let mut blob = None;
        while let Some(v) = self.next()? {
            match v {
                Value::Scalar(s) => {
                    if out.len() >= max {
                        return Err("record has too many operands");
                    }
                    out.push(s);
                }
                Value::Blob(b) => blob = Some(b),
            }
        }
        Ok(blob)
    }

    /// Reads past the rest of the record; arrays of fixed-width elements
    /// are stepped over without reading them.
    pub(crate) fn skip_rest(&mut self) -> Res<()> {
        loop {
            self.skip_array()?;
            if self.next()?.is_none() {
                return Ok(());
            }
        }
    }
}

fn scalar(bits: &mut Bits<'_>, op: Op, literals: &mut u64) -> Res<u64> {
    match op {
        Op::Literal(v) => {
            *literals = literals
                .checked_sub(1)
                .ok_or("too many literal operands for the size of the bitcode")?;
            Ok(v)
        }
        Op::Fixed(w) => bits.read(w),
        Op::Vbr(w) => bits.vbr(w),
        Op::Char6 => Ok(u64::from(char6(bits.read(6)?))),
        Op::Array | Op::Blob => Err("invalid scalar operand"),
    }
}

/// The character a 6-bit value stands for in a char6 field.
fn char6(v: u64) -> u8 {
    const TABLE: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";
    TABLE[usize::try_from(v & 63).unwrap_or(0)]
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
