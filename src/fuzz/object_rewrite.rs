//! The fuzz body of the bundler's ELF editor (`bundle::object` on the host
//! layer's `host::object` rewrite).

use super::bundle_read::{elf_section_count, fits_in_memory, has_program_headers};

/// The object-bundle rewrite (llvm-objcopy's, emulated) on `data`: the host
/// extraction and bundling two sections into it. Must never panic; and
/// when the input reads as an object without segments, what either returns
/// must read again:
/// no bundle section left after stripping, the added sections last after
/// bundling, and both rewritten once more without a new error. (Contents the
/// rewrite copies as they are, such as a malformed `SHT_DYNSYM`, keep an
/// unreadable input unreadable.)
pub fn object_rewrite(data: &[u8]) {
    use crate::bundle::object::{self, HOST_MARKER, NewSection};
    use crate::host::object::Aligned;

    let readable = Aligned::copy_of(data);
    // Sections inside segments are copied with their segment, not
    // rewritten (llvm-objcopy's rule): a name table there goes stale, so
    // only unlinked objects must read back.
    let linked =
        ::object::File::parse(readable.bytes()).is_err() || has_program_headers(readable.bytes());
    if linked || object::entries(readable.bytes()).is_err() {
        for w in [object::strip(data), object::bundle(data, &[])]
            .into_iter()
            .flatten()
        {
            if fits_in_memory(&w, data.len()) {
                let out = w.to_vec(&[data]).expect("spans of the rewrite resolve");
                assert_eq!(out.len() as u64, w.layout.size);
            }
        }
        return;
    }
    if let Ok(w) = object::strip(data)
        && fits_in_memory(&w, data.len())
    {
        let out = w
            .to_vec(&[data])
            .expect("spans of the stripped object resolve");
        assert_eq!(out.len() as u64, w.layout.size);
        assert!(
            reparse(&out).0.is_empty(),
            "bundle sections survived stripping"
        );
        object::strip(&out).expect("the stripped object strips again");
    }
    let device: &[u8] = b"DEVICE-IMAGE";
    let added = [
        NewSection {
            id: "host-x86_64-unknown-linux-gnu-",
            data: HOST_MARKER,
        },
        NewSection {
            id: "openmp-amdgcn-amd-amdhsa--gfx90a",
            data: device,
        },
    ];
    if let Ok(w) = object::bundle(data, &added)
        && fits_in_memory(&w, data.len())
    {
        let out = w
            .to_vec(&[data, HOST_MARKER, device])
            .expect("spans of the bundle resolve");
        assert_eq!(out.len() as u64, w.layout.size);
        let (found, has_sections) = reparse(&out);
        if !has_sections {
            return;
        }
        let n = found.len();
        assert!(n >= 2, "the added sections are read back");
        assert_eq!(
            (found[n - 2].id, found[n - 2].data),
            (added[0].id.as_bytes(), HOST_MARKER)
        );
        assert_eq!(
            (found[n - 1].id, found[n - 1].data),
            (added[1].id.as_bytes(), device)
        );
        // The added sections hold no symbols: the bundle strips when the
        // input does, unless an input section has an added section's name
        // (llvm-objcopy's `--set-section-flags` then makes it
        // `readonly,exclude` too, which can turn a dynamic relocation
        // section into a plain one that LLVM refuses as well).
        let renamed = object::entries(data).is_ok_and(|found| {
            found
                .iter()
                .any(|f| added.iter().any(|a| f.id == a.id.as_bytes()))
        });
        match object::strip(&out) {
            Ok(stripped) => {
                let back = stripped.to_vec(&[&out]).expect("spans resolve");
                assert!(reparse(&back).0.is_empty());
            }
            Err(e) => assert!(
                renamed || object::strip(data).is_err(),
                "only the bundle fails: {e}"
            ),
        }
    }
}

/// The entries of a rewritten object, and whether it has sections
/// (llvm-objcopy writes no section headers for an input without a
/// section-name table). Its ELF header and section table must read;
/// the object crate's whole-file reader is not asked, because it
/// refuses shapes llvm-objcopy accepts and writes again, such as a
/// relocation section that applies to another relocation section.
fn reparse(out: &[u8]) -> (Vec<crate::bundle::Found<'_>>, bool) {
    let copy = crate::host::object::Aligned::copy_of(out);
    let has_sections = elf_section_count(copy.bytes())
        .expect("the rewritten object's ELF header and section table read")
        > 0;
    let found = crate::bundle::object::entries(out).expect("the rewritten object's sections read");
    (found, has_sections)
}
