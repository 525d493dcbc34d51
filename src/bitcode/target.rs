//! What a bitcode module is built for: its target triple (the module
//! block's `TRIPLE` record) and the processor its functions are compiled
//! for (the first `"target-cpu"` string attribute of its attribute
//! groups), read without an IR reader. LLVM's writer puts the attribute
//! groups and the triple near the start of the module block, before the
//! bulk of it (functions, constants, metadata: blocks passed over by their
//! declared lengths).
//!
//! Every top-level block is also checked to lie within the data, so that
//! a truncated file is told apart from a whole one.

use super::stream::{BLOCKINFO_BLOCK, Bits, Cursor, Entry, Res};

/// `bitc::MODULE_BLOCK_ID`, `bitc::PARAMATTR_GROUP_BLOCK_ID`.
const MODULE_BLOCK: u64 = 8;
const PARAMATTR_GROUP_BLOCK: u64 = 10;
/// `bitc::MODULE_CODE_TRIPLE`: the triple's characters, one per operand.
const MODULE_CODE_TRIPLE: u64 = 2;
/// `bitc::PARAMATTR_GRP_CODE_ENTRY`: [group id, index, attributes…],
/// where a string attribute with a value is `4`, the key's characters, `0`,
/// the value's characters, `0` (`3`: a key alone, then `0`).
const PARAMATTR_GRP_CODE_ENTRY: u64 = 3;
/// The most operands a record of interest may have (a long
/// `"target-features"` string is a few thousand).
const MAX_OPERANDS: usize = 1 << 20;
/// The key of the processor attribute.
const TARGET_CPU: &[u8] = b"target-cpu";

/// A module's target, as far as it says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Target {
    /// The triple (`amdgcn-amd-amdhsa`), if the module has one.
    pub triple: Option<String>,
    /// The first `"target-cpu"` attribute's value (`gfx90a`, `sm_80`).
    pub cpu: Option<String>,
}

/// The target of the bitcode `data` (a wrapper header allowed), and what
/// is damaged, if something is: the bitstream is not bitcode, or a
/// top-level block runs past its end. What was read before the damage is
/// kept.
pub(crate) fn target(data: &[u8]) -> (Target, Option<&'static str>) {
    let mut t = Target::default();
    let damage = read(data, &mut t).err();
    (t, damage)
}

fn read(data: &[u8], t: &mut Target) -> Res<()> {
    // Bitcode cut at a byte that ends no word is read as far as its words
    // go, and is damaged.
    let (bc, cut) = match super::wrapper::unwrap(data) {
        Ok(bc) => (bc, Ok(())),
        Err(e) if data.starts_with(b"BC\xc0\xde") && !data.len().is_multiple_of(4) => {
            (&data[..data.len() / 4 * 4], Err(e))
        }
        Err(e) => return Err(e),
    };
    let mut module = None;
    let whole = cut.and(blocks(bc, &mut module));
    // A module cut short still says what it is built for.
    let Some(at) = module else {
        return whole.and(Err("no module"));
    };
    let read = module_target(bc, at, t);
    whole.and(read)
}

/// Walks the top level of the bitstream `bc`, checking that each block
/// lies within it, and notes where the first module block starts.
fn blocks(bc: &[u8], module: &mut Option<u64>) -> Res<()> {
    let mut cur = Cursor::new(Bits::new(bc));
    cur.bits.seek(32)?;
    loop {
        // LLVM stops when at most 8 bytes remain (tolerating padding).
        let byte = cur.bits.pos() / 8;
        if byte.saturating_add(8) >= crate::num::len64(bc) {
            return Ok(());
        }
        match cur.next()? {
            Entry::Block(id) => {
                if id == MODULE_BLOCK && module.is_none() {
                    *module = Some(cur.bits.pos());
                }
                cur.skip()?;
            }
            Entry::Record(id) => cur.record(id)?.skip_rest()?,
            Entry::End => return Err("malformed block"),
        }
    }
}

/// Reads the module block that starts at bit `at` of `bc` as far as its
/// triple.
fn module_target(bc: &[u8], at: u64, t: &mut Target) -> Res<()> {
    let mut cur = Cursor::new(Bits::new(bc));
    cur.bits.seek(at)?;
    cur.enter(MODULE_BLOCK)?;
    let mut ops = Vec::new();
    loop {
        match cur.next()? {
            Entry::End => return Ok(()),
            Entry::Block(BLOCKINFO_BLOCK) => cur.read_block_info()?,
            Entry::Block(PARAMATTR_GROUP_BLOCK) if t.cpu.is_none() => {
                cur.enter(PARAMATTR_GROUP_BLOCK)?;
                t.cpu = attribute_groups(&mut cur, &mut ops)?;
            }
            Entry::Block(_) => cur.skip()?,
            Entry::Record(id) => {
                let mut r = cur.record(id)?;
                if r.code() != MODULE_CODE_TRIPLE {
                    r.skip_rest()?;
                    continue;
                }
                r.values(&mut ops, MAX_OPERANDS)?;
                t.triple = Some(chars(&ops));
                // What is wanted comes before the triple.
                return Ok(());
            }
        }
    }
}

/// The first `"target-cpu"` value in the attribute group block the cursor
/// has entered, read to its end.
fn attribute_groups(cur: &mut Cursor<'_>, ops: &mut Vec<u64>) -> Res<Option<String>> {
    let mut cpu = None;
    loop {
        match cur.next()? {
            Entry::End => return Ok(cpu),
            Entry::Block(_) => cur.skip()?,
            Entry::Record(id) => {
                let mut r = cur.record(id)?;
                if r.code() != PARAMATTR_GRP_CODE_ENTRY || cpu.is_some() {
                    r.skip_rest()?;
                    continue;
                }
                r.values(ops, MAX_OPERANDS)?;
                cpu = string_attribute(ops.get(2..).unwrap_or_default(), TARGET_CPU);
            }
        }
    }
}

/// The value of the string attribute `key` among `attrs` (a group's
/// attributes, as operands): `4`, the key, `0`, the value, `0`. The
/// attributes' other encodings are not decoded: the key is looked for as
/// that run of operands, which no other attribute holds (an integer
/// attribute's operands are a kind and a value, never a NUL-ended
/// string).
fn string_attribute(attrs: &[u64], key: &[u8]) -> Option<String> {
    let n = key.len();
    (0..attrs.len()).find_map(|i| {
        let head = attrs.get(i..i + n + 2)?;
        let matches = head[0] == 4
            && head[1..=n]
                .iter()
                .zip(key)
                .all(|(&a, &k)| a == u64::from(k))
            && head[n + 1] == 0;
        if !matches {
            return None;
        }
        let value = &attrs[i + n + 2..];
        let end = value.iter().position(|&v| v == 0)?;
        Some(chars(&value[..end]))
    })
}

/// Operands that are characters, as text (one that is no byte is `?`).
fn chars(ops: &[u64]) -> String {
    ops.iter()
        .map(|&c| u8::try_from(c).map_or('?', char::from))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bitcode::stream::testing::Writer;

    /// Text as operands, one character each.
    fn text(s: &[u8]) -> impl Iterator<Item = u64> + '_ {
        s.iter().map(|&b| u64::from(b))
    }

    /// A bitcode file of one module (version 2) with an attribute group
    /// holding `"target-cpu"="cpu"` and a `TRIPLE` record, each if given,
    /// then a `DATALAYOUT` record, in the order LLVM's writer puts them.
    pub(crate) fn module(triple: Option<&str>, cpu: Option<&str>) -> Vec<u8> {
        let mut w = Writer::default();
        w.raw(b"BC\xc0\xde");
        let m = w.enter(2, MODULE_BLOCK, 3);
        w.record(3, 1, &[2]);
        if let Some(cpu) = cpu {
            let g = w.enter(3, PARAMATTR_GROUP_BLOCK, 3);
            let mut ops = vec![1, u64::from(u32::MAX), 0, 18, 4];
            ops.extend(text(TARGET_CPU));
            ops.push(0);
            ops.extend(text(cpu.as_bytes()));
            ops.push(0);
            w.record(3, PARAMATTR_GRP_CODE_ENTRY, &ops);
            w.end(3, g);
        }
        if let Some(t) = triple {
            w.record(
                3,
                MODULE_CODE_TRIPLE,
                &text(t.as_bytes()).collect::<Vec<_>>(),
            );
        }
        // A DATALAYOUT record, as LLVM writes after the triple.
        w.record(3, 3, &[b'e'.into(); 32]);
        w.end(3, m);
        w.bytes
    }

    #[test]
    fn triple_and_processor_of_a_module() {
        let bc = module(Some("amdgcn-amd-amdhsa"), Some("gfx90a"));
        let want = Target {
            triple: Some("amdgcn-amd-amdhsa".into()),
            cpu: Some("gfx90a".into()),
        };
        assert_eq!(target(&bc), (want.clone(), None));
        // Behind a wrapper header (magic, version, offset, size, CPU).
        let mut wrapped = Vec::new();
        for w in [0x0B17_C0DE_u32, 0, 20, u32::try_from(bc.len()).unwrap(), 0] {
            wrapped.extend(w.to_le_bytes());
        }
        wrapped.extend(&bc);
        assert_eq!(target(&wrapped), (want, None));
        let none = target(&module(None, None));
        assert_eq!(none, (Target::default(), None));
        // Cut short: what was read stays, and the damage is said.
        let (t, damage) = target(&bc[..bc.len() - 4]);
        assert_eq!(t.triple.as_deref(), Some("amdgcn-amd-amdhsa"));
        assert_eq!(damage, Some("block extends past the end"));
        let (t, damage) = target(&bc[..bc.len() - 3]);
        assert_eq!(t.triple.as_deref(), Some("amdgcn-amd-amdhsa"));
        assert_eq!(damage, Some("size is not a multiple of 4 bytes"));
        for n in 0..bc.len() {
            let _ = target(&bc[..n]);
        }
    }

    fn ops(parts: &[&[u8]]) -> Vec<u64> {
        parts
            .iter()
            .flat_map(|p| p.iter().map(|&b| u64::from(b)))
            .collect()
    }

    #[test]
    fn the_processor_among_other_attributes() {
        // An enum attribute (0, kind), an integer one (1, kind, value),
        // a key-only string (3, key, 0), then the processor (as
        // llvm-bcanalyzer dumps clang-22's HIP device bitcode).
        let attrs = ops(&[
            &[0, 18, 1, 2, 8, 3],
            b"frame-pointer",
            &[0, 4],
            b"target-cpu",
            &[0],
            b"gfx90a",
            &[0, 4],
            b"target-features",
            &[0],
            b"+x",
            &[0],
        ]);
        assert_eq!(
            string_attribute(&attrs, TARGET_CPU).as_deref(),
            Some("gfx90a")
        );
        // The key alone, or a value that never ends, is no value.
        assert_eq!(
            string_attribute(&ops(&[&[3], b"target-cpu", &[0]]), TARGET_CPU),
            None
        );
        assert_eq!(
            string_attribute(&ops(&[&[4], b"target-cpu", &[0], b"sm_80"]), TARGET_CPU),
            None
        );
        assert_eq!(string_attribute(&[], TARGET_CPU), None);
    }

    #[test]
    fn not_bitcode_or_cut_short() {
        let (t, damage) = target(b"not bitcode at all");
        assert_eq!((t, damage.is_some()), (Target::default(), true));
        // A module block that declares more words than there are.
        let mut bc = b"BC\xc0\xde".to_vec();
        // abbrev width 2: ENTER_SUBBLOCK (1), block id 8 (vbr8), new
        // width 3 (vbr4), aligned, then a length of 0x100 words.
        bc.extend([0x21, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00]);
        bc.extend([0; 12]);
        let (t, damage) = target(&bc);
        assert_eq!(
            (t, damage),
            (Target::default(), Some("block extends past the end"))
        );
    }
}
