use super::*;
use crate::Limits;
use crate::offload_binary;

#[test]
fn device_args_for_triples() {
    let t = "x86_64-unknown-linux-gnu";
    assert_eq!(for_triple("-x=y", t), Some("-x=y"));
    assert_eq!(for_triple("DL", t), Some("DL"));
    assert_eq!(for_triple("x86_64-unknown-linux-gnu=-a=b", t), Some("-a=b"));
    assert_eq!(for_triple("aarch64-unknown-linux-gnu=Q", t), None);
    // Exact strings: a triple LLVM would normalize to the same is not it.
    assert_eq!(for_triple("x86_64-unknown-linux=Q", t), None);
    // LLVM's quirk: a triple with no value applies itself to every link.
    assert_eq!(
        for_triple("amdgcn-amd-amdhsa=", t),
        Some("amdgcn-amd-amdhsa")
    );
    assert_eq!(
        for_triple("amdgcn-amd-amdhsa", t),
        Some("amdgcn-amd-amdhsa")
    );
    assert_eq!(for_triple("k=v", t), Some("k=v"));
    assert_eq!(for_triple("-Lx", t), Some("-Lx"));
}

#[test]
fn gpu_link_commands() {
    let mut link = DeviceLink {
        triple: "amdgcn-amd-amdhsa".into(),
        arch: "gfx90a:xnack+".into(),
        plugin_opts: vec!["-a".into(), "-b".into()],
        mllvm: vec!["-a".into()],
        lto_save_temps: true,
        inputs: vec!["m.o".into()],
        output: "o.img".into(),
        executable: "x".into(),
        ..DeviceLink::default()
    };
    let host = [
        HostArg::Input("lib.a".into()),
        HostArg::LinkerArg("LA".into()),
    ];
    assert_eq!(
        link.command(&host, |_| true).join(" "),
        "--no-default-config -o o.img -dumpdir x.amdgcn.gfx90a:xnack+.img. \
         --target=amdgcn-amd-amdhsa -mcpu=gfx90a:xnack+ -flto -Xlinker --plugin-opt=-a \
         -Xlinker --plugin-opt=-b -Wl,--no-undefined m.o -Xlinker -mllvm=-a \
         -Wl,--save-temps -Xlinker LA"
    );
    // SPIR-V for SYCL: no --no-undefined, the sycl linker's arguments.
    link.triple = "spirv64-unknown-unknown".into();
    link.arch = String::new();
    link.plugin_opts.clear();
    link.mllvm.clear();
    link.lto_save_temps = false;
    link.sycl = true;
    link.embed_bitcode = true;
    assert_eq!(
        link.command(&[], |_| true).join(" "),
        "--no-default-config -o o.img -dumpdir x.spirv64..img. \
         --target=spirv64-unknown-unknown m.o -Wl,--lto-emit-llvm --sycl-link \
         -Xlinker -triple=spirv64-unknown-unknown -Xlinker -arch="
    );
    assert!(linker_does_lto("nvptx64-nvidia-cuda", "/usr/bin/ld"));
    assert!(!linker_does_lto("x86_64-unknown-linux-gnu", "/usr/bin/ld"));
    assert!(linker_does_lto(
        "x86_64-unknown-linux-gnu",
        "/usr/bin/ld.lld"
    ));
    assert!(!linker_does_lto("spirv64-intel", "/usr/bin/ld.lld"));
}

#[test]
fn lld_link_output() {
    let host = [
        HostArg::Verbatim("-out:a.exe".into()),
        HostArg::Input("m.obj".into()),
    ];
    assert_eq!(executable(&host), "a.exe");
    assert_eq!(
        host_command(&host, &["w.o".into()]).join(" "),
        "-out:a.exe w.o m.obj"
    );
    assert_eq!(executable(&[]), "a.out");
}

#[test]
fn cpu_triples() {
    assert!(is_cpu_triple("x86_64-unknown-linux-gnu"));
    assert!(is_cpu_triple("aarch64-unknown-linux-gnu"));
    assert!(!is_cpu_triple("amdgcn-amd-amdhsa"));
    assert!(!is_cpu_triple("nvptx64-nvidia-cuda"));
    assert!(!is_cpu_triple("spirv64-intel"));
}

#[test]
fn commands_in_llvm_order() {
    let host = vec![
        HostArg::Verbatim("-pie".into()),
        HostArg::Output("out".into()),
        HostArg::Input("main.o".into()),
        HostArg::LibraryPath("lib".into()),
        HostArg::Library("omptarget".into()),
        HostArg::Input("lib/libomptarget.so".into()),
        HostArg::WholeArchive,
        HostArg::Rpath {
            dir: "/x".into(),
            long: false,
        },
        HostArg::NoWholeArchive,
        HostArg::LinkerArg("LA".into()),
        HostArg::CompilerArg("CA".into()),
    ];
    let link = DeviceLink {
        triple: "x86_64-unknown-linux-gnu".into(),
        inputs: vec!["main-x.o".into()],
        output: "out.x86_64..img".into(),
        executable: executable(&host).into(),
        ..DeviceLink::default()
    };
    let mut cmd = link.command(&host, |f| f.ends_with(".so"));
    add_device_args(
        &mut cmd,
        &link.triple,
        &host,
        &["DL".into()],
        &["x86_64-unknown-linux-gnu=DC".into()],
    );
    assert_eq!(
        cmd.join(" "),
        "--no-default-config -o out.x86_64..img -dumpdir out.x86_64..img. \
         --target=x86_64-unknown-linux-gnu -Wl,--no-undefined main-x.o -Wl,-Bsymbolic \
         -shared -L lib -l omptarget lib/libomptarget.so -Wl,--whole-archive -rpath /x \
         -Wl,--no-whole-archive -Xlinker LA -Xlinker DL CA DC"
    );
    assert_eq!(
        host_command(&host, &["w.o".into()]).join(" "),
        "-pie -o out w.o main.o -L lib -l omptarget lib/libomptarget.so --whole-archive \
         -rpath /x --no-whole-archive --linker-arg=LA --compiler-arg=CA"
    );
    assert_eq!(
        print_command("/usr/bin/ld", &["-o".into(), "a".into()]),
        " \"/usr/bin/ld\" -o a"
    );
}

#[test]
fn packed_image_reads_back() {
    let img = b"\x7fELF linked image".to_vec();
    let spec = linked_image_spec("x86_64-unknown-linux-gnu", "", false, img.len() as u64);
    let mut out = Vec::new();
    offload_binary::layout_v1(&[spec])
        .unwrap()
        .write_to(&mut out, &[&img])
        .unwrap();
    let found = offload_binary::find_images(&out, &Limits::default()).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].image.triple(), b"x86_64-unknown-linux-gnu");
    assert_eq!(found[0].image.arch(), b"");
    assert_eq!(&found[0].image.image[..], &img[..]);
}

#[test]
fn override_triples() {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[18] = 62;
    assert_eq!(override_triple(&h).as_deref(), Some("x86_64--"));
    h[18] = 183;
    assert_eq!(override_triple(&h).as_deref(), Some("aarch64--"));
    assert_eq!(override_triple(b"hello"), None);
}

#[test]
fn images_sorted_like_llvm() {
    let dl = |triple: &str, arch: &str| DeviceLink {
        triple: triple.into(),
        arch: arch.into(),
        ..DeviceLink::default()
    };
    let order = |v: &[DeviceLink]| -> Vec<String> {
        v.iter()
            .map(|d| format!("{}/{}", d.triple, d.arch))
            .collect()
    };
    // What LLVM 22 bundled for links in the order gfx1030, gfx90a, gfx942.
    let mut v = vec![
        dl("amdgcn-amd-amdhsa", "gfx1030"),
        dl("amdgcn-amd-amdhsa", "gfx90a"),
        dl("amdgcn-amd-amdhsa", "gfx942"),
    ];
    sort_like_llvm(&mut v);
    assert_eq!(
        order(&v),
        [
            "amdgcn-amd-amdhsa/gfx942",
            "amdgcn-amd-amdhsa/gfx90a",
            "amdgcn-amd-amdhsa/gfx1030"
        ]
    );
    let mut v = vec![
        dl("aarch64-unknown-linux-gnu", ""),
        dl("x86_64-unknown-linux-gnu", ""),
    ];
    sort_like_llvm(&mut v);
    assert_eq!(
        order(&v),
        ["x86_64-unknown-linux-gnu/", "aarch64-unknown-linux-gnu/"]
    );
}

#[test]
fn relocatable_objcopy_suffix() {
    // What LLVM 22 prints under --dry-run: the MD5 of no bytes.
    let md5 = crate::bundle::ccob::truncated_md5(b"");
    let args = relocatable_objcopy_args("rel.o", md5);
    assert_eq!(
        args.join(" "),
        "rel.o --remove-section .llvm.offloading --rename-section \
         llvm_offload_entries=llvm_offload_entries_4b2008fd98c1dd4 --redefine-sym \
         __start_llvm_offload_entries=__start_llvm_offload_entries_4b2008fd98c1dd4 \
         --redefine-sym __stop_llvm_offload_entries=__stop_llvm_offload_entries_4b2008fd98c1dd4"
    );
}
