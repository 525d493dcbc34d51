//! Our objects against llc's, byte for byte: every host CPU, the legacy
//! and ROCm ABIs (IR written as LLVM would), other OSes, many inputs.

use super::*;

/// The vendor-OS parts of the hosts' other triples whose OS changes the
/// object (`EI_OSABI`; no `.note.GNU-stack` on Solaris).
const OSES: &[&str] = &[
    "unknown-freebsd",
    "unknown-openbsd",
    "pc-solaris2.11",
    "unknown-hermit",
    "scei-ps4",
    "unknown-netbsd",
];

/// Known differences from LLVM's objects, not yet fixed, so left out of
/// `other_oses` (none at present).
const NOT_YET_LLVM: &[&str] = &[];

/// `big.so` in `d`: the app's device library `so` followed by 1.5 MiB of
/// filler, an input of more than 1 MiB.
fn write_big_image(d: &Path, so: &str) -> Result<(), Failed> {
    let mut big = std::fs::read(so).map_err(|e| e.to_string())?;
    big.extend((0..(3u32 << 19) + 7).map(|i| (i % 251) as u8));
    std::fs::write(d.join("big.so"), &big).map_err(|e| e.to_string().into())
}

/// For the same inputs our object for `host` and LLVM's are the same
/// bytes. OpenMP: one OffloadBinary; several inputs mixing raw images and
/// OffloadBinaries (one holding two images, whose first the runtime gets);
/// an empty image first (which moves AArch64's `$d`); and, with
/// `--llc-layout`, an input of more than 1 MiB, which by default starts at
/// a 64 KiB multiple in the file instead and is otherwise unchanged. CUDA
/// and HIP: any one input, embedded as it is (a tiny one keeps the byte
/// array's alignment). The objects of every kind and OpenMP ABI read clean
/// and link into a shared library with ld.lld.
fn same_bytes_as_llc(host: &'static Host) -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let triple = host.triple;
    let ob = fx.path("app-dev.ob");
    let so = fx.path("app-dev.so");
    let raw = &raw_fixture()[..];
    let image =
        |f: &str, arch: &str| format!("--image=file={f},triple={TRIPLE},arch={arch},kind=openmp");
    sh(
        d,
        llvm("llvm-offload-binary"),
        &["-o", "two.ob", &image(&so, "a"), &image(raw, "b")],
    )?;
    write_big_image(d, &so)?;
    std::fs::write(d.join("empty.bin"), b"").map_err(|e| e.to_string())?;
    let cases: [(&str, Vec<&str>, &[&str]); 4] = [
        ("one", vec![&ob], &[]),
        ("mixed", vec![raw, &ob, "two.ob", &so], &[]),
        ("empty-first", vec!["empty.bin", &ob], &[]),
        ("big", vec![raw, "big.so"], &["--llc-layout"]),
    ];
    for (name, inputs, extra) in &cases {
        same_as_llvm(d, "openmp", triple, name, extra, inputs)?;
    }
    std::fs::write(d.join("tiny.bin"), b"\x50\xed\x55\xba\x01\0\x10\0\0")
        .map_err(|e| e.to_string())?;
    std::fs::write(d.join("tiny4.bin"), b"\x50\xed\x55\xba").map_err(|e| e.to_string())?;
    for kind in ["cuda", "hip"] {
        for (input, extra) in [
            (raw, &[][..]),
            (&ob[..], &[]),
            ("tiny.bin", &[]),
            ("tiny4.bin", &[]),
            ("empty.bin", &[]),
            ("big.so", &["--llc-layout"]),
        ] {
            let name = format!("{kind}-{}", input.replace('/', "_"));
            same_as_llvm(d, kind, triple, &name, extra, &[input])?;
        }
        readelf_ok_but(d, &format!("{kind}-tiny4.bin.o"), host.readelf_known)?;
        link_shared(d, host, &format!("{kind}-tiny4.bin.o"))?;
    }
    default_layout_moves_only_the_image(d, triple, raw)?;
    for (name, abi) in [
        ("llvm", "--abi=llvm"),
        ("legacy", "--abi=legacy"),
        ("rocm", "--abi=rocm"),
    ] {
        if name != "llvm" && !host.legacy_abis {
            continue;
        }
        let out = format!("{name}-abi.o");
        let mut args = vec!["-o", &out[..], abi];
        if name == "rocm" {
            args.push("--offload-arch=gfx90a");
        }
        args.push(&ob);
        wrap_for(d, "openmp", triple, &args)?;
        readelf_ok_but(d, &out, host.readelf_known)?;
        link_shared(d, host, &out)?;
    }
    Ok(())
}

/// Without `--llc-layout` only the image section's place differs from
/// LLVM's `big.llvm.o` (made by [`same_bytes_as_llc`] in `d`).
fn default_layout_moves_only_the_image(d: &Path, triple: &str, raw: &str) -> Result<(), Failed> {
    wrap_for(d, "openmp", triple, &["-o", "big-default.o", raw, "big.so"])?;
    let ours = std::fs::read(d.join("big-default.o")).map_err(|e| e.to_string())?;
    let f = object::File::parse(&*ours).map_err(|e| e.to_string())?;
    let s = f
        .section_by_name(".llvm.offloading")
        .ok_or("no .llvm.offloading")?;
    let theirs = std::fs::read(d.join("big.llvm.o")).map_err(|e| e.to_string())?;
    let g = object::File::parse(&*theirs).map_err(|e| e.to_string())?;
    let their_s = g.section_by_name(".llvm.offloading").ok_or("no section")?;
    let (off, their_off) = (s.file_range().unwrap().0, their_s.file_range().unwrap().0);
    if off % (64 << 10) != 0 || their_off % (64 << 10) == 0 || s.data().ok() != their_s.data().ok()
    {
        return Err(
            format!("default layout: image section at {off:#x}, llc's at {their_off:#x}").into(),
        );
    }
    Ok(())
}

/// Links `host`'s object `obj` alone into a shared library with ld.lld,
/// which must say nothing.
fn link_shared(d: &Path, host: &Host, obj: &str) -> Result<(), Failed> {
    let lib = format!("{obj}.so");
    let stderr = sh(
        d,
        llvm("ld.lld"),
        &["-m", host.lld_emulation, "-shared", "-o", &lib, obj],
    )?;
    if !stderr.is_empty() {
        return Err(format!("ld.lld {obj}:\n{stderr}").into());
    }
    Ok(())
}

/// The legacy IR (LLVM ≤ 19's shape) made from LLVM 22's wrapper module
/// `ll` (llvm-dis text): the old module id and entry section, a global
/// hidden dummy declared before the bounds, priority-1 constructor and
/// destructor instead of `atexit`.
fn legacy_ir(ll: &str) -> Result<String, Failed> {
    // Each line but the images' bytes (which may spell the names too).
    let lines: Vec<String> = ll
        .lines()
        .map(|l| {
            if l.contains(" x i8] c\"") {
                l.to_string()
            } else {
                legacy_line(l)
            }
        })
        .collect();
    let ll = lines.join("\n") + "\n";
    let ll = ll
        .replace(
            "{ i32 101, ptr @.omp_offloading.descriptor_reg, ptr null }]",
            "{ i32 1, ptr @.omp_offloading.descriptor_reg, ptr null }]\n\
             @llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] \
             [{ i32, ptr, ptr } { i32 1, ptr @.omp_offloading.descriptor_unreg, ptr null }]",
        )
        .replace(
            "  %0 = call i32 @atexit(ptr @.omp_offloading.descriptor_unreg)\n",
            "",
        )
        .replace("declare i32 @atexit(ptr)\n", "");
    let mut lines: Vec<&str> = ll.lines().collect();
    let dummy = lines
        .iter()
        .position(|l| l.starts_with("@__dummy."))
        .ok_or("no dummy in the wrapper module")?;
    let dummy = lines.remove(dummy);
    let start = lines
        .iter()
        .position(|l| l.starts_with("@__start_"))
        .ok_or("no bounds in the wrapper module")?;
    lines.insert(start, dummy);
    Ok(lines.join("\n") + "\n")
}

/// One line of the module with the legacy names.
fn legacy_line(l: &str) -> String {
    l.replace("\"offload.wrapper.module\"", "\"offload.wrapper.object\"")
        .replace("llvm_offload_entries", "omp_offloading_entries")
        .replace(
            "@__dummy.omp_offloading_entries = internal constant",
            "@__dummy.omp_offloading.entry = hidden constant",
        )
        .replace(
            "ptr @__dummy.omp_offloading_entries",
            "ptr @__dummy.omp_offloading.entry",
        )
}

/// `--abi=legacy` on every host that writes it: llc 22's bytes for the
/// legacy IR ([`legacy_ir`]), GlobalMerge's layout on powerpc64le
/// included (small inputs merged, large ones not).
fn legacy_like_llc() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let raw = raw_fixture();
    std::fs::write(d.join("s3.bin"), b"abc").map_err(|e| e.to_string())?;
    let big: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.join("big.bin"), big).map_err(|e| e.to_string())?;
    let sets: [Vec<&str>; 3] = [
        vec![&ob],
        vec!["s3.bin", &raw, &ob],
        vec!["big.bin", "s3.bin", &ob],
    ];
    for host in HOSTS.iter().filter(|h| h.legacy_abis) {
        for (i, inputs) in sets.iter().enumerate() {
            let mut a = vec!["--kind=openmp", "--triple", host.triple, "-o", "l.bc"];
            a.extend(inputs);
            sh(d, llvm("llvm-offload-wrapper"), &a)?;
            sh(d, llvm("llvm-dis"), &["l.bc", "-o", "l.ll"])?;
            let ll = std::fs::read_to_string(d.join("l.ll")).map_err(|e| e.to_string())?;
            std::fs::write(d.join("legacy.ll"), legacy_ir(&ll)?).map_err(|e| e.to_string())?;
            let theirs = format!("{}-{i}.llvm.o", host.arch());
            let pic = ["-filetype=obj", "-relocation-model=pic", "legacy.ll", "-o"];
            let mut a = pic.to_vec();
            a.push(&theirs);
            a.extend(llc_cpu_flags(host.triple));
            sh(d, llvm("llc"), &a)?;
            let ours = format!("{}-{i}.o", host.arch());
            let mut a = vec!["--abi=legacy", "-o", &ours[..]];
            a.extend(inputs);
            wrap_for(d, "openmp", host.triple, &a)?;
            let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
            if read(&ours)? != read(&theirs)? {
                return Err(format!("{ours}: differs from llc's {theirs} ({inputs:?})").into());
            }
        }
    }
    Ok(())
}

/// The ROCm IR (the AMD clang-offload-wrapper's shape, docs/formats/wrapper-objects.md
/// §7.3) made from the legacy IR `ll` ([`legacy_ir`]) and each image's
/// target ID: per image, after the descriptor, its target ID in
/// `.offload_arch_list` (`__offload_arch_N`) and an internal
/// `__tgt_image_info` pointing at it (`.offload_image_info_N`), each
/// passed to `__tgt_register_image_info` before `__tgt_register_lib`.
fn rocm_ir(ll: &str, archs: &[&str]) -> Result<String, Failed> {
    let n = archs.len();
    let mut out = Vec::new();
    let mut found = 0;
    for l in ll.lines() {
        if l.starts_with("  call void @__tgt_register_lib(") {
            found += 1;
            for i in 0..n {
                out.push(format!(
                    "  call void @__tgt_register_image_info(ptr @.offload_image_info_{i})"
                ));
            }
        } else if l.starts_with("declare void @__tgt_register_lib(") {
            found += 1;
            out.push("declare void @__tgt_register_image_info(ptr)\n".into());
        }
        out.push(l.to_string());
        if l.starts_with("%__tgt_bin_desc = type") {
            found += 1;
            out.push("%__tgt_image_info = type { i32, i32, i32, ptr, ptr }".into());
        } else if l.starts_with("@.omp_offloading.descriptor = ") {
            found += 1;
            for (i, arch) in archs.iter().enumerate() {
                out.push(format!(
                    "@__offload_arch_{i} = internal constant [{} x i8] c\"{arch}\\00\", \
                     section \".offload_arch_list\"",
                    arch.len() + 1
                ));
                out.push(format!(
                    "@.offload_image_info_{i} = internal constant %__tgt_image_info \
                     {{ i32 1, i32 {i}, i32 {n}, ptr @__offload_arch_{i}, ptr null }}"
                ));
            }
        }
    }
    if found != 4 {
        return Err("the legacy module is not shaped as expected".into());
    }
    Ok(out.join("\n") + "\n")
}

/// `--abi=rocm` on every host that writes it: llc 22's object for the
/// ROCm IR ([`rocm_ir`]) for one image, several (an empty one among them),
/// and target IDs of more than 16 bytes (which llc aligns to 16).
/// Writes `d/rocm.ll`: the ROCm IR for `triple` made from LLVM 22's
/// wrapper module of `inputs` (through [`legacy_ir`] and [`rocm_ir`]), one
/// target ID from `archs` per input.
fn write_rocm_ll(d: &Path, triple: &str, inputs: &[&str], archs: &[&str]) -> Result<(), Failed> {
    let mut a = vec!["--kind=openmp", "--triple", triple, "-o", "r.bc"];
    a.extend(inputs);
    sh(d, llvm("llvm-offload-wrapper"), &a)?;
    sh(d, llvm("llvm-dis"), &["r.bc", "-o", "r.ll"])?;
    let ll = std::fs::read_to_string(d.join("r.ll")).map_err(|e| e.to_string())?;
    let ir = rocm_ir(&legacy_ir(&ll)?, archs)?;
    std::fs::write(d.join("rocm.ll"), ir).map_err(|e| e.to_string())?;
    Ok(())
}

fn rocm_like_llc() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    let raw = raw_fixture();
    std::fs::write(d.join("s3.bin"), b"abc").map_err(|e| e.to_string())?;
    std::fs::write(d.join("empty.bin"), b"").map_err(|e| e.to_string())?;
    let sets: [Vec<(&str, &str)>; 3] = [
        vec![(&ob, "gfx90a:xnack+")],
        vec![
            ("s3.bin", "gfx906"),
            ("empty.bin", "gfx1030"),
            (&raw, "gfx90a"),
        ],
        vec![
            (&raw, "gfx90a:sramecc+:xnack+"),
            ("s3.bin", "gfx9"),
            (&ob, "gfx940:sramecc-:xnack-"),
        ],
    ];
    for host in HOSTS.iter().filter(|h| h.legacy_abis) {
        for (i, set) in sets.iter().enumerate() {
            let inputs: Vec<&str> = set.iter().map(|s| s.0).collect();
            let archs: Vec<&str> = set.iter().map(|s| s.1).collect();
            write_rocm_ll(d, host.triple, &inputs, &archs)?;
            let theirs = format!("{}-rocm-{i}.llvm.o", host.arch());
            let mut a = vec!["-filetype=obj", "-relocation-model=pic", "rocm.ll", "-o"];
            a.push(&theirs);
            a.extend(llc_cpu_flags(host.triple));
            sh(d, llvm("llc"), &a)?;
            let ours = format!("{}-rocm-{i}.o", host.arch());
            let flags: Vec<String> = archs
                .iter()
                .map(|a| format!("--offload-arch={a}"))
                .collect();
            let mut a = vec!["--abi=rocm", "-o", &ours[..]];
            for (flag, input) in flags.iter().zip(&inputs) {
                a.extend([&flag[..], input]);
            }
            wrap_for(d, "openmp", host.triple, &a)?;
            let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
            if read(&ours)? != read(&theirs)? {
                return Err(format!("{ours}: differs from llc's {theirs} ({set:?})").into());
            }
        }
    }
    Ok(())
}

/// Hosts whose OS changes the object (each host CPU with each of
/// [`OSES`]): our objects are LLVM's bytes for each kind.
fn other_oses() -> Result<(), Failed> {
    let fx = fixture()?;
    let t = tempdir();
    let d = t.path();
    let ob = fx.path("app-dev.ob");
    for host in HOSTS {
        for os in OSES {
            let triple = format!("{}-{os}", host.arch());
            if NOT_YET_LLVM.contains(&&triple[..]) {
                continue;
            }
            for kind in ["openmp", "cuda", "hip"] {
                same_as_llvm(d, kind, &triple, &format!("{triple}-{kind}"), &[], &[&ob])?;
            }
        }
    }
    Ok(())
}

/// Hundreds of inputs with a low limit on open files: small inputs are only
/// mapped, so the wrap succeeds, and gives LLVM's bytes. Then more than
/// 1022 inputs for powerpc64le, where the image array and the descriptor
/// no longer fit in one merged global (GlobalMerge's 0x7fff bytes): llc's
/// bytes for the LLVM and the legacy ABI. And the ROCm ABI on
/// powerpc64le, whose image infos merge too, about each count where
/// llc's layout changes: llc's bytes for the ROCm IR ([`rocm_ir`]).
fn many_inputs() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let mut names = Vec::new();
    for i in 0..2047u32 {
        let name = format!("i{i:04}.bin");
        let bytes = [b"img\0\0".as_slice(), &i.to_le_bytes(), b"tail"].concat();
        std::fs::write(d.join(&name), bytes).map_err(|e| e.to_string())?;
        names.push(name);
    }
    let all: Vec<&str> = names.iter().map(String::as_str).collect();
    let inputs = &all[..600];
    let script = format!(
        "ulimit -n 64 && exec \"$0\" wrap --kind=openmp --triple={TRIPLE} -o many.o {}",
        inputs.join(" ")
    );
    let ours_bin = ours();
    sh(d, "bash", &["-c", &script, ours_bin.to_str().unwrap()])?;
    let theirs = llvm_wrap(d, "many.llvm.o", inputs)?;
    let ours = std::fs::read(d.join("many.o")).map_err(|e| e.to_string())?;
    if ours != theirs {
        return Err("600 inputs: ours differs from LLVM's".into());
    }
    let ppc = "powerpc64le-unknown-linux-gnu";
    for n in [1023, 1100] {
        same_as_llvm(d, "openmp", ppc, &format!("ppc-{n}"), &[], &all[..n])?;
    }
    let all = &all[..1100];
    let mut a = vec!["--kind=openmp", "--triple", ppc, "-o", "l.bc"];
    a.extend(all);
    sh(d, llvm("llvm-offload-wrapper"), &a)?;
    sh(d, llvm("llvm-dis"), &["l.bc", "-o", "l.ll"])?;
    let ll = std::fs::read_to_string(d.join("l.ll")).map_err(|e| e.to_string())?;
    std::fs::write(d.join("legacy.ll"), legacy_ir(&ll)?).map_err(|e| e.to_string())?;
    let pic = ["-filetype=obj", "-relocation-model=pic", "legacy.ll"];
    sh(
        d,
        llvm("llc"),
        &[&pic[..], &["-o", "legacy.llvm.o"]].concat(),
    )?;
    let mut a = vec!["--abi=legacy", "-o", "legacy.o"];
    a.extend(all);
    wrap_for(d, "openmp", ppc, &a)?;
    let read = |f: &str| std::fs::read(d.join(f)).map_err(|e| e.to_string());
    if read("legacy.o")? != read("legacy.llvm.o")? {
        return Err("1100 inputs, legacy ABI, powerpc64le: ours differs from llc's".into());
    }
    // ROCm on powerpc64le. Up to 511 images the array, the descriptor and
    // the infos make one merged global; from 512 the array is left alone;
    // at 1023 the last info too; from 1024 (the array then too large to
    // merge) the infos past the 1022nd fill further merged globals (a
    // third at 2047, whose target IDs, two in three longer than 16 bytes,
    // fill two).
    let short = ["gfx906", "gfx90a:sramecc+:xnack-", "gfx1030"];
    let long = [
        "gfx90a:sramecc+:xnack-",
        "gfx942:sramecc+:xnack+",
        "gfx1030",
    ];
    let names: Vec<String> = (0..2047u32).map(|i| format!("i{i:04}.bin")).collect();
    for n in [511, 512, 1022, 1023, 1024, 2047] {
        let cycle = if n == 2047 { long } else { short };
        let archs: Vec<&str> = (0..n).map(|i| cycle[i % 3]).collect();
        let inputs: Vec<&str> = names[..n].iter().map(String::as_str).collect();
        write_rocm_ll(d, ppc, &inputs, &archs)?;
        let pic = ["-filetype=obj", "-relocation-model=pic", "rocm.ll"];
        sh(d, llvm("llc"), &[&pic[..], &["-o", "rocm.llvm.o"]].concat())?;
        let flags: Vec<String> = archs
            .iter()
            .map(|a| format!("--offload-arch={a}"))
            .collect();
        let mut a = vec!["--abi=rocm", "-o", "rocm.o"];
        for (flag, input) in flags.iter().zip(&inputs) {
            a.extend([&flag[..], input]);
        }
        wrap_for(d, "openmp", ppc, &a)?;
        if read("rocm.o")? != read("rocm.llvm.o")? {
            let e = format!("{n} inputs, ROCm ABI, powerpc64le: ours differs from llc's");
            return Err(e.into());
        }
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut v = Vec::new();
    for host in HOSTS {
        v.push(trial!(
            same_bytes_as_llc["{}", host.arch()],
            &base(&[
                "llvm-offload-wrapper",
                "llc",
                "ld.lld",
                "readelf",
                "llvm-readelf",
            ]),
            move || same_bytes_as_llc(host),
        ));
    }
    v.push(trial!(legacy_like_llc, &base(&["llvm-offload-wrapper", "llvm-dis", "llc"])));
    v.push(trial!(rocm_like_llc, &base(&["llvm-offload-wrapper", "llvm-dis", "llc"])));
    v.push(trial!(other_oses, &base(&["llvm-offload-wrapper", "llc"])));
    v.push(trial!(many_inputs, &["bash", "llvm-offload-wrapper", "llc", "llvm-dis"]));
    v
}
