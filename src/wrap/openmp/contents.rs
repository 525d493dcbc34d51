//! The OpenMP object's contents: `.data.rel.ro` (the image array, the
//! descriptor, the image infos) and `.text.startup` (the constructor and
//! destructor), with their relocations.

use super::parts::{DESC, INFO, Parts};
use crate::error::{Error, Result};
use crate::num::len64;
use crate::wrap::arch::{Arg, Call, CpuInfo, Function, Target, addend, internal};
use crate::wrap::elf_object::reloc;
use crate::wrap::model::{InputShape, STRUCT_SIZE, align_up};
use crate::wrap::relocatable::{Relocatable, SymbolId};

/// `.data.rel.ro`'s contents (in the CPU's byte order) and relocations:
/// the image array, the descriptor, the image infos.
pub(super) fn data(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    images: &[InputShape],
    placed: &[(u64, u64)],
    parts: &Parts<'_>,
) -> Result<()> {
    let Parts { s, syms, rt, at } = *parts;
    use object::Endian as _;
    let too_many = || Error::usage("too many images");
    let n_i32 = i32::try_from(at.n).map_err(|_| too_many())?;
    let mut bytes = vec![0u8; usize::try_from(at.len()).map_err(|_| too_many())?];
    let mut put = |off: u64, field: &[u8]| {
        let off = usize::try_from(off).unwrap_or(usize::MAX);
        bytes[off..off + field.len()].copy_from_slice(field);
    };
    let e = cpu.endian;
    let by_symbol = syms.labels.is_some();
    // (offset, symbol, addend) of each pointer.
    let mut relocs = Vec::with_capacity(4 * images.len() + 3 + syms.infos.len());
    let desc = at.desc();
    if by_symbol {
        relocs.push((desc + 8, syms.array, 0));
    } else {
        relocs.push((desc + 8, syms.data, addend(at.images())?));
    }
    relocs.push((desc + 16, rt.start, 0));
    relocs.push((desc + 24, rt.stop, 0));
    for (i, (img, &(off, _))) in images.iter().zip(placed).enumerate() {
        let base = at.images() + STRUCT_SIZE * u64::try_from(i).map_err(|_| too_many())?;
        // From the section's start, or from the image's own symbol.
        let (image, off) = match by_symbol {
            true => (syms.images[i], 0),
            false => (syms.offloading, off),
        };
        relocs.push((base, image, addend(off + img.image.start)?));
        relocs.push((base + 8, image, addend(off + img.image.end)?));
        relocs.push((base + 16, rt.start, 0));
        relocs.push((base + 24, rt.stop, 0));
    }
    put(desc, &e.write_i32(n_i32));
    for (i, info) in syms.infos.iter().enumerate() {
        let number = i32::try_from(i).map_err(|_| too_many())?;
        // __tgt_image_info: version 1, image number, image count, padding,
        // offload_arch, compile_opts (null).
        put(info.off, &e.write_i32(1));
        put(info.off + 4, &e.write_i32(number));
        put(info.off + 8, &e.write_i32(n_i32));
        relocs.push((info.off + 16, info.list_sym, addend(info.arch_off)?));
    }
    obj.set_bytes(s.data, bytes);
    // In offset order, as llc lists them, however the structures lie.
    relocs.sort_by_key(|r| r.0);
    for (off, symbol, add) in relocs {
        reloc(obj, s.data, off, symbol, add, cpu.abs64);
    }
    Ok(())
}

/// The constructor (at 0) and destructor of `.text.startup`, their
/// relocations and symbols' extents, the structures as `at` lays them out
/// in `.data.rel.ro`; returns them and the destructor's offset.
///
/// A structure in one of llc's merged globals is passed as an offset from
/// the global's first member (its anchor, [`Locals::anchors`]); the
/// relocations against an anchor are written against the section symbol,
/// the global's offset added, as llc writes them.
pub(super) fn functions(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    parts: &Parts<'_>,
) -> Result<(Function, Function, u64)> {
    let Parts { s, syms, rt, at } = *parts;
    let arg = |k: usize, symbol: SymbolId| -> Result<Arg> {
        let off = at.merge.at[k];
        Ok(match at.merge.group[k] {
            Some(g) => {
                let &(anchor, base) = syms
                    .anchors
                    .get(g)
                    .ok_or_else(|| internal("a merged global without a symbol"))?;
                Arg::Data {
                    symbol,
                    section: anchor,
                    offset: off - base,
                    merged: true,
                }
            }
            None => Arg::Data {
                symbol,
                section: syms.data,
                offset: off,
                merged: false,
            },
        })
    };
    let desc_arg = arg(DESC, syms.desc)?;
    let mut reg_calls = Vec::with_capacity(syms.infos.len() + 2);
    if let Some(callee) = rt.register_info {
        for (i, info) in syms.infos.iter().enumerate() {
            reg_calls.push(Call {
                callee,
                arg: arg(INFO + i, info.sym)?,
            });
        }
    }
    reg_calls.push(Call {
        callee: rt.register,
        arg: desc_arg,
    });
    let unreg_calls = [Call {
        callee: rt.unregister,
        arg: desc_arg,
    }];
    // The constructor's size does not depend on where `unreg` lands, so
    // encode it once to learn its size, then again with the real offset.
    let with_atexit = |unreg_off: u64| {
        let mut calls = reg_calls.clone();
        if let Some(atexit) = rt.atexit {
            calls.push(Call {
                callee: atexit,
                arg: Arg::Code {
                    section: syms.startup,
                    offset: unreg_off,
                },
            });
        }
        calls
    };
    let probe = cpu.code.function(0, &with_atexit(0))?;
    let unreg_off = align_up(len64(&probe.code), cpu.code_align)?;
    let reg_fn = cpu.code.function(0, &with_atexit(unreg_off))?;
    let unreg_fn = cpu.code.function(unreg_off, &unreg_calls)?;
    debug_assert_eq!(reg_fn.code.len(), probe.code.len());

    let mut code = reg_fn.code.clone();
    let pad = usize::try_from(unreg_off - len64(&code)).unwrap_or(0);
    code.extend(cpu.code.padding(pad));
    code.extend_from_slice(&unreg_fn.code);
    obj.set_bytes(s.startup, code);
    relocate(obj, parts, [(&reg_fn, 0), (&unreg_fn, unreg_off)])?;
    obj.set_extent(syms.reg, 0, len64(&reg_fn.code));
    obj.set_extent(syms.unreg, unreg_off, len64(&unreg_fn.code));
    if let Some(labels) = &syms.labels {
        obj.set_extent(labels.starts[1], unreg_off, 0);
    }
    Ok((reg_fn, unreg_fn, unreg_off))
}

/// The relocations of the constructor and the destructor (`functions`,
/// each with its offset in `.text.startup`), against the symbols `parts`
/// holds; the `.Lpcrel_hiN` labels placed as they are met.
fn relocate(
    obj: &mut Relocatable,
    parts: &Parts<'_>,
    functions: [(&Function, u64); 2],
) -> Result<()> {
    let Parts { s, syms, rt, .. } = *parts;
    for (k, (f, base)) in functions.into_iter().enumerate() {
        let mut pcrel = 0;
        for r in &f.relocs {
            let offset = base + r.offset;
            let mut r_addend = r.addend;
            let symbol = match (r.target, rt.toc, &syms.labels) {
                (Target::Symbol(sym), _, _) => match syms.anchors.iter().find(|a| a.0 == sym) {
                    Some(&(_, base)) => {
                        r_addend += addend(base)?;
                        syms.data
                    }
                    None => sym,
                },
                (Target::Runtime(name), Some((toc, sym)), _) if name == toc => sym,
                // The next `.Lpcrel_hiN` laid out for this function.
                (Target::Label(at, _), _, Some(labels)) if pcrel < labels.pcrel[k].len() => {
                    let sym = labels.pcrel[k][pcrel];
                    pcrel += 1;
                    obj.set_extent(sym, base + at, 0);
                    sym
                }
                _ => return Err(internal("a function refers to a symbol the object lacks")),
            };
            reloc(obj, s.startup, offset, symbol, r_addend, r.r_type);
        }
    }
    Ok(())
}
