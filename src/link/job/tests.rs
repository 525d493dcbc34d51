use super::*;
use crate::link::select::TargetId;

const AMD: &str = "amdgcn-amd-amdhsa";
const NV: &str = "nvptx64-nvidia-cuda";
const X86: &str = "x86_64-unknown-linux-gnu";

/// An environment that answers itself: every program is in `/llvm/bin`
/// but those named `missing`; temporary names are LLVM's pattern with a
/// fixed tag; `.a` and `.so` inputs are libraries.
#[derive(Default)]
struct Fake {
    missing: Vec<&'static str>,
    asked: Vec<String>,
}

impl Env for Fake {
    fn program(&self, name: &str) -> Option<String> {
        (!self.missing.contains(&name)).then(|| format!("/llvm/bin/{name}"))
    }
    fn llvm_tool(&self, name: &str) -> Option<String> {
        self.program(name)
    }
    fn fatbinary(&self, cuda_path: Option<&str>) -> Option<String> {
        let root = cuda_path.unwrap_or("/usr/local/cuda");
        (!self.missing.contains(&"fatbinary")).then(|| format!("{root}/bin/fatbinary"))
    }
    fn temp(&mut self, prefix: &str, suffix: &str) -> Result<String, Failure> {
        self.asked.push(format!("{prefix}{suffix}"));
        Ok(format!("/tmp/{prefix}-XXXXXX{suffix}"))
    }
    fn is_library(&self, path: &str) -> bool {
        path.ends_with(".a") || path.ends_with(".so")
    }
}

fn found(input: &str, triple: &str, arch: &str, kind: OffloadKind) -> Found {
    Found {
        input: input.into(),
        binary: Binary {
            target: TargetId::new(triple, arch),
            kind,
            lazy: false,
        },
    }
}

/// A link of `main.o` to `app` with `ld`, for `--host-triple=x86_64…`.
fn options(extra: &[HostArg]) -> Options {
    let mut host = vec![
        HostArg::Output("app".into()),
        HostArg::Input("main.o".into()),
    ];
    host.extend_from_slice(extra);
    Options {
        host_triple: Some(X86.into()),
        linker_path: Some("/usr/bin/ld".into()),
        host,
        ..Options::default()
    }
}

/// The plan's steps, each as one line: what it runs or does.
fn shape(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .map(|s| match s {
            Step::WriteInput { image, path } => format!("write {image} {path}"),
            Step::DeviceLinks(c) => format!(
                "links {}",
                c.iter()
                    .map(|c| c.output.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Step::Run(c) => format!("run {} > {}", c.name, c.output),
            Step::WrapOpenMp {
                images,
                overrides,
                output,
            } => format!("wrap openmp {} + {:?} > {output}", images.len(), overrides),
            Step::WrapFatbin {
                kind,
                fatbin,
                output,
            } => format!("wrap {kind:?} {fatbin} > {output}"),
            Step::WrapSycl { image, output } => format!("wrap sycl {} > {output}", image.output),
            Step::PackImage { image, output } => format!("pack {} > {output}", image.output),
            Step::EmitFatbin { fatbin, output } => format!("emit {fatbin} > {output}"),
            Step::Checksum { output } => format!("md5 {output}"),
            Step::RenameEntries { output, .. } => format!("objcopy {output}"),
            Step::Fail(f) => format!("fail {}", f.llvm),
        })
        .collect()
}

#[test]
fn openmp_gfx90a_link() {
    let o = options(&[]);
    let f = [found("main.o", AMD, "gfx90a", OffloadKind::OFK_OpenMP)];
    let plan = plan(&o, &f, &mut Fake::default());
    assert_eq!(plan.host_triple, X86);
    assert_eq!(
        shape(&plan),
        [
            "write 0 /tmp/main-amdgcn-amd-amdhsa-gfx90a-XXXXXX.o",
            "links /tmp/app.amdgcn.gfx90a-XXXXXX.img",
            "wrap openmp 1 + [] > /tmp/app.openmp.image.wrapper-XXXXXX.o",
            "run ld > app",
        ]
    );
    assert_eq!(
        plan.dry_run_text(),
        [
            " \"/llvm/bin/clang\" --no-default-config -o /tmp/app.amdgcn.gfx90a-XXXXXX.img \
             -dumpdir app.amdgcn.gfx90a.img. --target=amdgcn-amd-amdhsa -mcpu=gfx90a -flto \
             -Wl,--no-undefined /tmp/main-amdgcn-amd-amdhsa-gfx90a-XXXXXX.o",
            " \"/usr/bin/ld\" -o app /tmp/app.openmp.image.wrapper-XXXXXX.o main.o",
        ]
    );
    // What each step writes.
    let produced: Vec<Vec<&str>> = plan.steps.iter().map(Step::produces).collect();
    assert_eq!(produced[1], ["/tmp/app.amdgcn.gfx90a-XXXXXX.img"]);
    assert_eq!(produced[3], ["app"]);
}

#[test]
fn hip_link_bundles_in_llvms_order() {
    let o = Options {
        compress: true,
        compression_level: Some("9".into()),
        ..options(&[])
    };
    let f = [
        found("a.o", AMD, "gfx90a", OffloadKind::OFK_HIP),
        found("b.o", AMD, "gfx942", OffloadKind::OFK_HIP),
    ];
    let plan = plan(&o, &f, &mut Fake::default());
    assert_eq!(
        shape(&plan),
        [
            "write 0 /tmp/a-amdgcn-amd-amdhsa-gfx90a-XXXXXX.o",
            "write 1 /tmp/b-amdgcn-amd-amdhsa-gfx942-XXXXXX.o",
            "links /tmp/app.amdgcn.gfx90a-XXXXXX.img /tmp/app.amdgcn.gfx942-XXXXXX.img",
            "run clang-offload-bundler > /tmp/app-XXXXXX.hipfb",
            "wrap Hip /tmp/app-XXXXXX.hipfb > /tmp/app.hip.image.wrapper-XXXXXX.o",
            "run ld > app",
        ]
    );
    let text = plan.dry_run_text();
    assert_eq!(
        text[2],
        " \"/llvm/bin/clang-offload-bundler\" -type=o -bundle-align=4096 -compress \
         -compression-level=9 \
         -targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx942,\
         hip-amdgcn-amd-amdhsa--gfx90a -input=/dev/null \
         -input=/tmp/app.amdgcn.gfx942-XXXXXX.img -input=/tmp/app.amdgcn.gfx90a-XXXXXX.img \
         -output=/tmp/app-XXXXXX.hipfb"
    );
}

#[test]
fn cuda_link_runs_fatbinary() {
    let o = Options {
        cuda_path: Some("/opt/cuda".into()),
        save_temps: true,
        ..options(&[])
    };
    let f = [found("k.o", NV, "sm_70", OffloadKind::OFK_Cuda)];
    let mut env = Fake::default();
    let plan = plan(&o, &f, &mut env);
    // --save-temps: LLVM's names, none asked of the environment.
    assert!(env.asked.is_empty());
    assert_eq!(
        shape(&plan),
        [
            "write 0 k-nvptx64-nvidia-cuda-sm_70.o",
            "links app.nvptx64.sm_70.img",
            "run fatbinary > app.fatbin",
            "wrap Cuda app.fatbin > app.cuda.image.wrapper.o",
            "run ld > app",
        ]
    );
    assert_eq!(
        plan.dry_run_text(),
        [
            " \"/llvm/bin/clang\" --no-default-config -o app.nvptx64.sm_70.img \
             -dumpdir app.nvptx64.sm_70.img. --target=nvptx64-nvidia-cuda -march=sm_70 \
             k-nvptx64-nvidia-cuda-sm_70.o -Wl,--save-temps",
            " \"/opt/cuda/bin/fatbinary\" -64 --create app.fatbin \
             --image3=kind=elf,sm=70,file=app.nvptx64.sm_70.img",
            " \"/usr/bin/ld\" -o app app.cuda.image.wrapper.o main.o",
        ]
    );
    // A 32-bit host.
    assert_eq!(
        fatbinary_command("i686-unknown-linux-gnu", &[], "f")[0],
        "-32"
    );
}

#[test]
fn cpu_link_takes_the_host_libraries() {
    let o = options(&[
        HostArg::Input("libm.a".into()),
        HostArg::Input("x.o".into()),
    ]);
    let f = [found("main.o", X86, "", OffloadKind::OFK_OpenMP)];
    let text = plan(&o, &f, &mut Fake::default()).dry_run_text();
    assert_eq!(
        text[0],
        " \"/llvm/bin/clang\" --no-default-config -o /tmp/app.x86_64.-XXXXXX.img \
         -dumpdir app.x86_64..img. --target=x86_64-unknown-linux-gnu -Wl,--no-undefined \
         /tmp/main-x86_64-unknown-linux-gnu--XXXXXX.o -Wl,-Bsymbolic -shared libm.a"
    );
}

#[test]
fn failures_where_llvm_meets_them() {
    // A link LLVM refuses: the links before it run first.
    let o = options(&[]);
    let f = [
        found("a.o", AMD, "gfx90a", OffloadKind::OFK_OpenMP),
        found(
            "b.o",
            "riscv64-unknown-linux-gnu",
            "",
            OffloadKind::OFK_OpenMP,
        ),
    ];
    assert_eq!(
        shape(&plan(&o, &f, &mut Fake::default())),
        [
            "write 0 /tmp/a-amdgcn-amd-amdhsa-gfx90a-XXXXXX.o",
            "links /tmp/app.amdgcn.gfx90a-XXXXXX.img",
            "fail riscv64 linking is not supported",
        ]
    );
    // No clang: an error, unless it is a dry run (the bare name).
    let mut env = Fake {
        missing: vec!["clang"],
        ..Fake::default()
    };
    let p = plan(&o, &f[..1], &mut env);
    assert_eq!(shape(&p), ["fail Unable to find 'clang' in path"]);
    let dry = Options {
        dry_run: true,
        ..options(&[])
    };
    let p = plan(&dry, &f[..1], &mut env);
    assert!(p.dry_run_text()[0].starts_with(" \"clang\" --no-default-config"));
    // No linker path: after the wrapper objects.
    let o = Options {
        linker_path: None,
        ..options(&[])
    };
    let s = shape(&plan(&o, &f[..1], &mut Fake::default()));
    assert_eq!(
        s.last().unwrap(),
        "fail linker path missing, must pass 'linker-path'"
    );
    assert!(s[s.len() - 2].starts_with("wrap openmp"));
    // --emit-fatbin-only for OpenMP takes one image.
    let o = Options {
        emit_fatbin_only: true,
        ..options(&[])
    };
    let two = [
        found("a.o", AMD, "gfx90a", OffloadKind::OFK_OpenMP),
        found("b.o", AMD, "gfx942", OffloadKind::OFK_OpenMP),
    ];
    assert_eq!(
        shape(&plan(&o, &two, &mut Fake::default())).last().unwrap(),
        "fail Expected a single bundled image for direct fat binary output"
    );
    assert_eq!(
        shape(&plan(&o, &two[..1], &mut Fake::default()))[2..],
        [
            "pack /tmp/app.amdgcn.gfx90a-XXXXXX.img > /tmp/app-XXXXXX.openmp.bundle",
            "emit /tmp/app-XXXXXX.openmp.bundle > app",
        ]
    );
    // No fatbinary.
    let mut env = Fake {
        missing: vec!["fatbinary"],
        ..Fake::default()
    };
    let cu = [found("k.o", NV, "sm_70", OffloadKind::OFK_Cuda)];
    assert_eq!(
        shape(&plan(&options(&[]), &cu, &mut env)).last().unwrap(),
        "fail Unable to find 'fatbinary' in path"
    );
}

#[test]
fn relocatable_links_rename_their_entries() {
    let o = Options {
        relocatable: true,
        ..options(&[HostArg::Verbatim("--relocatable".into())])
    };
    let p = plan(&o, &[], &mut Fake::default());
    assert_eq!(shape(&p), ["run ld > app", "md5 app", "objcopy app"]);
    assert_eq!(
        p.dry_run_text()[1],
        " \"/llvm/bin/llvm-objcopy\" app --remove-section .llvm.offloading \
         --rename-section llvm_offload_entries=llvm_offload_entries_4b2008fd98c1dd4 \
         --redefine-sym __start_llvm_offload_entries=__start_llvm_offload_entries_4b2008fd98c1dd4 \
         --redefine-sym __stop_llvm_offload_entries=__stop_llvm_offload_entries_4b2008fd98c1dd4"
    );
    // Not for a COFF host, after the host link.
    let coff = Options {
        host_triple: Some("x86_64-pc-windows-msvc".into()),
        ..o
    };
    assert_eq!(
        shape(&plan(&coff, &[], &mut Fake::default())),
        [
            "run ld > app",
            "fail Relocatable linking is not supported on COFF targets"
        ]
    );
}

#[test]
fn override_images_and_sycl() {
    let o = Options {
        override_images: vec!["cpu.so".into()],
        ..options(&[])
    };
    assert_eq!(
        shape(&plan(&o, &[], &mut Fake::default())),
        [
            "wrap openmp 0 + [\"cpu.so\"] > /tmp/app.openmp.image.wrapper-XXXXXX.o",
            "run ld > app",
        ]
    );
    let f = [found(
        "s.o",
        "spirv64-unknown-unknown",
        "",
        OffloadKind::OFK_SYCL,
    )];
    let s = shape(&plan(&options(&[]), &f, &mut Fake::default()));
    assert_eq!(
        s[2],
        "wrap sycl /tmp/app.spirv64.-XXXXXX.img > /tmp/app.sycl.image.wrapper-XXXXXX.o"
    );
}
