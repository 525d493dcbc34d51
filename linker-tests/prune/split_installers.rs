//! Stock installers take what `offload-kit split` writes for a wheel
//! (PEP 825 variant wheels; issue #74, facts in the shared spec
//! split-formats.md §1), with the tools of scripts/variant-tools.sh run at
//! test time on local files only:
//! - variantlib 0.2.2 reads every variant wheel's `variant.json` (with the
//!   label of its file name, listed true in RECORD) and the
//!   `-variants.json`, which equals the index variantlib's own
//!   `generate-index-json` makes of the same wheels;
//! - uv 0.13.8 (`--preview-features wheel-variants`, its built-in NVIDIA
//!   provider forced to a compute capability) installs, from the split's
//!   directory served on 127.0.0.1, the variant that serves the GPU, and
//!   the `null` variant for a GPU no variant serves; the documents carry an
//!   `amd` provider that no nvJPEG variant uses, and uv takes them;
//! - pip 26.3 installs each group's wheel from that group's PEP 503 index
//!   directory (`file://…/index/<label>/`);
//! - for AMD, which uv has no provider for, uv installs `null` and
//!   variantlib's resolver, with a stand-in provider forcing a gfx name,
//!   picks the label serving it (a HIP wheel made here, and bitsandbytes'
//!   wheel, whose variants use both namespaces).

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::{Failed, Trial};

use super::split::{NVJPEG, STEM, downloads};
use super::src;
use crate::util::{Run, ours, ours_json, run, run_within_env, tempdir, unzip};
use crate::windows_libs::{BNB_LINUX, windows_downloads};

/// The venv of scripts/variant-tools.sh.
const PY: &str = "/opt/offload-kit/variant-tools/bin/python";
const UV: &str = "/opt/offload-kit/variant-tools/bin/uv";
const PIP: &str = "/opt/offload-kit/variant-tools/bin/pip";
const PYTHON3: &str = "/usr/bin/python3";

/// nvJPEG's library, the member whose bytes tell the variants apart.
const LIB: &str = "nvidia/nvjpeg/lib/libnvjpeg.so.12";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(nvjpeg_variants_pass_variantlib, &[PY, PYTHON3]),
        trial!(uv_installs_the_variant_serving_the_forced_gpu, &[PY, UV, PYTHON3]),
        trial!(pip_installs_each_group_from_its_index, &[PIP, PYTHON3]),
        trial!(amd_variants_resolve_by_gfx_name_and_uv_takes_null, &[PY, UV, PYTHON3]),
        trial!(bitsandbytes_cuda_and_hip_variants_resolve_per_vendor, &[PY, UV, PYTHON3]),
    ]
}

/// The groups nvJPEG is split into: sm_80 and sm_86 both serve an sm_86
/// device (uv must prefer sm86), and sm_75, which nvJPEG serves, is in no
/// group (uv must take null).
const GROUPS: [(&str, &str); 3] = [("sm_80", "sm80"), ("sm_86", "sm86"), ("sm_90", "sm90")];

/// nvJPEG split into [`GROUPS`] in `d/out`; the split's JSON report.
fn split_nvjpeg(d: &Path) -> Result<serde_json::Value, Failed> {
    std::fs::copy(downloads()?.join(NVJPEG), d.join(NVJPEG))?;
    let mut args = vec!["split"];
    for (g, _) in GROUPS {
        args.extend(["--gpus", g]);
    }
    ours_json(&[&args[..], &["--json", "-d", "out", NVJPEG]].concat(), d)
}

/// `variant_check.py` with `args` under the venv's Python, in `d`: its
/// standard output parsed as JSON.
fn check(d: &Path, args: &[&str]) -> Result<serde_json::Value, Failed> {
    let script = src("variant_check.py");
    let r = run_within_env(60, Path::new(PY), &[&[script.as_str()], args].concat(), &[], d)?;
    let r = said(&format!("variant_check.py {args:?}"), r)?;
    Ok(serde_json::from_slice(&r.stdout)?)
}

/// `r`, unless it exited other than 0: then what it said, as `what`'s.
fn said(what: &str, r: Run) -> Result<Run, Failed> {
    if r.code != 0 {
        let out = String::from_utf8_lossy(&r.stdout);
        return Err(format!("{what}: exit {}: {}{out}", r.code, r.stderr).into());
    }
    Ok(r)
}

/// variantlib validates each variant wheel and the `-variants.json` (the
/// same as its own `generate-index-json` makes), with the properties each
/// group's images call for; its resolver, with a stand-in NVIDIA provider,
/// orders them as uv should: sm86 then sm80 for an sm_86 device, only null
/// for sm_75.
fn nvjpeg_variants_pass_variantlib() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    split_nvjpeg(d)?;
    let got = check(d, &["validate", "out", "nvidia_nvjpeg_cu12", "12.4.0.76"])?;
    let want = serde_json::json!({
        "null": [],
        "sm80": ["nvidia :: sm_arch :: 80_real"],
        // sm_86's group keeps the sm_80 SASS an sm_86 device also loads.
        "sm86": ["nvidia :: sm_arch :: 80_real", "nvidia :: sm_arch :: 86_real"],
        "sm90": ["nvidia :: sm_arch :: 90_real"],
    });
    if got != want {
        return Err(format!("variantlib read {got}, want {want}").into());
    }
    let index = "out/nvidia_nvjpeg_cu12-12.4.0.76-variants.json";
    for (sm, want) in [("8.6", &["sm86", "sm80", "null"][..]), ("7.5", &["null"])] {
        let picked = check(d, &["resolve", index, "nvidia", sm])?;
        if picked != serde_json::json!(want) {
            return Err(format!("variantlib's resolver for {sm}: {picked}, want {want:?}").into());
        }
    }
    Ok(())
}

/// A static file server on 127.0.0.1 (Python's `http.server` over a
/// directory), killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Serves `dir` on a free port, once it answers (within 20 s).
    fn start(dir: &Path) -> Result<Server, Failed> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let child = Command::new(PYTHON3)
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let server = Server {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("http.server on port {port} did not answer in 20 s").into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// uv installs `project` into `d/target` from the flat index at `links`
/// (no other index, no dependencies, its own cache, no configuration
/// read), with `env`.
fn uv_install(d: &Path, links: &str, project: &str, env: &[(&str, &str)]) -> Result<Run, Failed> {
    let target = d.join("target");
    if target.exists() {
        std::fs::remove_dir_all(&target)?;
    }
    let cache = d.join("uv-cache").to_string_lossy().into_owned();
    let mut all = vec![
        ("UV_CACHE_DIR", cache.as_str()),
        ("UV_NO_CONFIG", "1"),
        ("UV_PYTHON_DOWNLOADS", "never"),
    ];
    all.extend_from_slice(env);
    let args = [
        "pip", "install", "--preview-features", "wheel-variants", "--no-deps", "--no-index", "--find-links",
        links, "--python", PY, "--target", "target", project,
    ];
    run_within_env(60, Path::new(UV), &args, &all, d)
}

/// The label of the one `*.dist-info/variant.json` installed in
/// `d/target`.
fn installed_label(d: &Path) -> Result<String, Failed> {
    let mut labels = Vec::new();
    for e in std::fs::read_dir(d.join("target"))? {
        let p = e?.path().join("variant.json");
        if p.exists() {
            let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&p)?)?;
            let m = doc["variants"].as_object().cloned().unwrap_or_default();
            labels.extend(m.keys().cloned());
        }
    }
    match &labels[..] {
        [one] => Ok(one.clone()),
        _ => Err(format!("installed variant.json labels: {labels:?}").into()),
    }
}

/// Fails unless `installed` (under `d`) holds the bytes of `member` of the
/// wheel `wheel` (under `d`).
fn same_member(d: &Path, wheel: &str, member: &str, installed: &str) -> Result<(), Failed> {
    unzip(&d.join(wheel), member, d, "member.bin")?;
    if std::fs::read(d.join("member.bin"))? != std::fs::read(d.join(installed))? {
        return Err(format!("{installed} is not {member} of {wheel}").into());
    }
    Ok(())
}

/// uv 0.13.8 from the split's directory served on 127.0.0.1 (a flat index
/// holding the wheels and the `-variants.json`): NVIDIA's provider forced
/// to 8.6 installs sm86 (its library the sm86 wheel's, not sm80's, which
/// also serves 8.6); 9.0 installs sm90; 7.5, which no group serves, the
/// null variant (the input's library). The documents list an `amd`
/// provider that no variant uses.
fn uv_installs_the_variant_serving_the_forced_gpu() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    split_nvjpeg(d)?;
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("out/nvidia_nvjpeg_cu12-12.4.0.76-variants.json"))?)?;
    if doc["providers"].get("amd").is_none() || doc.to_string().contains("gfx_arch") {
        return Err(format!("expected an amd provider that no variant uses: {doc}").into());
    }
    let server = Server::start(&d.join("out"))?;
    for (sm, label) in [("8.6", "sm86"), ("9.0", "sm90"), ("7.5", "null")] {
        let env = [
            ("NV_VARIANT_PROVIDER_FORCE_SM_ARCH", sm),
            ("NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION", "12.8"),
        ];
        let r = uv_install(d, &server.url, "nvidia-nvjpeg-cu12", &env)?;
        let r = said(&format!("uv for {sm}"), r)?;
        let got = installed_label(d)?;
        if got != label {
            return Err(format!("uv for {sm} installed {got}, want {label}: {}", r.stderr).into());
        }
        same_member(d, &format!("out/{STEM}-{label}.whl"), LIB, &format!("target/{LIB}"))?;
    }
    drop(server);
    Ok(())
}

/// pip 26.3 (which reads no variants) installs from each group's PEP 503
/// index directory that group's wheel: the library it installs is the
/// group's variant's, different for each group.
fn pip_installs_each_group_from_its_index() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    split_nvjpeg(d)?;
    let mut seen = Vec::new();
    for (_, label) in GROUPS {
        let target = format!("pip-{label}");
        let url = format!("file://{}/", d.join("out/index").join(label).display());
        let args = [
            "install", "--disable-pip-version-check", "--no-cache-dir", "--isolated", "--no-deps",
            "--index-url", &url, "--target", &target, "nvidia-nvjpeg-cu12",
        ];
        let r = run_within_env(60, Path::new(PIP), &args, &[], d)?;
        said(&format!("pip from index/{label}"), r)?;
        let installed = format!("{target}/{LIB}");
        same_member(d, &format!("out/{STEM}-{label}.whl"), LIB, &installed)?;
        seen.push(std::fs::read(d.join(&installed))?);
    }
    seen.dedup();
    if seen.len() != GROUPS.len() {
        return Err("two groups' indexes installed the same library".into());
    }
    Ok(())
}

/// A HIP wheel made here (one bundle: a gfx90a and a gfx942 image, the
/// gfx942 one larger), split `--per-gpu`: variantlib validates gfx90a,
/// gfx942 and null; its resolver with a stand-in AMD provider picks gfx942
/// for gfx942, gfx90a for gfx90a, null for gfx1100; uv, which has no AMD
/// provider, installs null without an error.
fn amd_variants_resolve_by_gfx_name_and_uv_takes_null() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_wheel(d)?;
    let doc = ours_json(&["split", "--per-gpu", "--json", "-d", "out", HIP_WHEEL], d)?;
    let labels: Vec<&str> = doc["files"][0]["outputs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["label"].as_str())
        .collect();
    if labels != ["gfx90a", "gfx942", "null"] {
        return Err(format!("split --per-gpu labels: {labels:?}").into());
    }
    let got = check(d, &["validate", "out", "hip_demo", "1.0"])?;
    let want = serde_json::json!({
        "gfx90a": ["amd :: gfx_arch :: gfx90a"],
        "gfx942": ["amd :: gfx_arch :: gfx942"],
        "null": [],
    });
    if got != want {
        return Err(format!("variantlib read {got}, want {want}").into());
    }
    let index = "out/hip_demo-1.0-variants.json";
    for (gfx, want) in [
        ("gfx942", &["gfx942", "null"][..]),
        ("gfx90a", &["gfx90a", "null"]),
        ("gfx1100", &["null"]),
    ] {
        let picked = check(d, &["resolve", index, "amd", gfx])?;
        if picked != serde_json::json!(want) {
            return Err(format!("variantlib's resolver for {gfx}: {picked}, want {want:?}").into());
        }
    }
    let links = d.join("out").to_string_lossy().into_owned();
    said("uv with no GPU provider", uv_install(d, &links, "hip-demo", &[])?)?;
    let got = installed_label(d)?;
    if got != "null" {
        return Err(format!("uv installed {got}, want null").into());
    }
    same_member(d, HIP_WHEEL, "hip_demo/libk.so", "target/hip_demo/libk.so")
}

/// bitsandbytes 0.50.2's Linux wheel (CUDA, ROCm and SYCL libraries) split into
/// sm_86, gfx942 and gfx90a: variantlib validates the four wheels and the
/// index (both namespaces used); its resolver picks sm86 for an sm_86
/// device and each gfx label for its GPU (stand-in providers), null for
/// gfx1100; uv installs sm86 with NVIDIA's provider forced to 8.6 and null
/// with no GPU provider (an AMD machine).
fn bitsandbytes_cuda_and_hip_variants_resolve_per_vendor() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::copy(windows_downloads()?.join(BNB_LINUX), d.join(BNB_LINUX))?;
    let args = ["split", "--gpus", "sm_86", "--gpus", "gfx942", "--gpus", "gfx90a"];
    // Its Intel SYCL libraries are refused and left as they were (exit 1,
    // as prune does), and nothing else is.
    let r = run(&ours(), &[&args[..], &["-d", "out", BNB_LINUX]].concat(), d);
    let out = String::from_utf8_lossy(&r.stdout);
    let refused: Vec<&str> = out.lines().filter(|l| l.contains("refused")).collect();
    if r.code != 1 || refused.len() != 2 || refused.iter().any(|l| !l.contains("_xpu20")) {
        return Err(format!("split exit {}: {}{out}", r.code, r.stderr).into());
    }
    let got = check(d, &["validate", "out", "bitsandbytes", "0.50.2"])?;
    let want = serde_json::json!({
        "gfx90a": ["amd :: gfx_arch :: gfx90a"],
        "gfx942": ["amd :: gfx_arch :: gfx942"],
        "null": [],
        "sm86": ["nvidia :: sm_arch :: 80_real", "nvidia :: sm_arch :: 86_real"],
    });
    if got != want {
        return Err(format!("variantlib read {got}, want {want}").into());
    }
    let index = "out/bitsandbytes-0.50.2-variants.json";
    for (ns, gpu, want) in [
        ("nvidia", "8.6", &["sm86", "null"][..]),
        ("amd", "gfx942", &["gfx942", "null"]),
        ("amd", "gfx90a", &["gfx90a", "null"]),
        ("amd", "gfx1100", &["null"]),
    ] {
        let picked = check(d, &["resolve", index, ns, gpu])?;
        if picked != serde_json::json!(want) {
            return Err(format!("variantlib's resolver for {gpu}: {picked}, want {want:?}").into());
        }
    }
    let links = d.join("out").to_string_lossy().into_owned();
    let forced = [
        ("NV_VARIANT_PROVIDER_FORCE_SM_ARCH", "8.6"),
        ("NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION", "12.8"),
    ];
    for (env, label) in [(&forced[..], "sm86"), (&[], "null")] {
        said(&format!("uv for {label}"), uv_install(d, &links, "bitsandbytes", env)?)?;
        let got = installed_label(d)?;
        if got != label {
            return Err(format!("uv installed {got}, want {label}").into());
        }
    }
    Ok(())
}

/// The HIP wheel of [`hip_wheel`].
const HIP_WHEEL: &str = "hip_demo-1.0-py3-none-any.whl";

/// Makes `d/`[`HIP_WHEEL`]: `hip_demo/libk.so`, an object holding one HIP
/// bundle (a host entry, a gfx90a and a gfx942 image) registered by
/// `wrap`, with its METADATA, WHEEL and a true RECORD.
fn hip_wheel(d: &Path) -> Result<PathBuf, Failed> {
    for (name, seed, len) in [("a.o", 1u64, 20_000), ("b.o", 2, 30_000)] {
        let mut elf = b"\x7fELF".to_vec();
        elf.extend(crate::util::bytes(seed, len).iter().map(|b| b % 8));
        std::fs::write(d.join(name), elf)?;
    }
    std::fs::write(d.join("h.o"), b"")?;
    let ours_ok = |args: &[&str]| run(&ours(), args, d).ok().map(drop);
    ours_ok(&[
        "bundle",
        "--type",
        "o",
        "-o",
        "b.hipfb",
        "host-x86_64-unknown-linux-gnu=h.o",
        "hip-amdgcn-amd-amdhsa--gfx90a=a.o",
        "hip-amdgcn-amd-amdhsa--gfx942=b.o",
    ])?;
    ours_ok(&["wrap", "--kind=hip", "-o", "lib.o", "b.hipfb"])?;
    let make = r#"import base64, hashlib, sys, zipfile
def row(n, b):
    d = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
    return '%s,sha256=%s,%d\n' % (n, d, len(b))
di = 'hip_demo-1.0.dist-info'
files = {
    'hip_demo/__init__.py': b'',
    'hip_demo/libk.so': open('lib.o', 'rb').read(),
    di + '/METADATA': b'Metadata-Version: 2.1\nName: hip-demo\nVersion: 1.0\n',
    di + '/WHEEL': b'Wheel-Version: 1.0\nGenerator: offload-kit-test\nRoot-Is-Purelib: false\nTag: py3-none-any\n',
}
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:
    for n, b in files.items():
        z.writestr(n, b)
    z.writestr(di + '/RECORD', ''.join(row(n, b) for n, b in files.items()) + di + '/RECORD,,\n')
"#;
    run(Path::new(PYTHON3), &["-c", make, HIP_WHEEL], d).ok()?;
    Ok(d.join(HIP_WHEEL))
}
