//! `offload-kit split` of NVIDIA's nvJPEG wheel (cubins for sm_50 to
//! sm_121, PTX for sm_121; issue #74): each group's wheel holds, member
//! by member and header by header, what `prune --keep GROUP -o` writes,
//! but for its `variant.json` and that file's RECORD row; each passes
//! `check --require` of its group; `--per-gpu` covers every target and
//! image of the input; two runs give the same bytes; a group the wheel
//! does not serve, and an input that is not a wheel, are refused by name
//! with nothing written.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};

use crate::real_libs::{Cache, fetched};
use crate::util::{ours, ours_json, run, tempdir, same};

pub(super) const NVJPEG: &str =
    "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl";
pub(super) const STEM: &str = "nvidia_nvjpeg_cu12-12.4.0.76-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64";
const PYTHON: &str = "/usr/bin/python3";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(nvjpeg_groups_hold_what_prune_keeps, &[PYTHON]),
        trial!(nvjpeg_per_gpu_covers_every_target, &[PYTHON]),
        trial!(unserved_groups_and_other_inputs_write_nothing, &[PYTHON]),
    ]
}

/// The cache `scripts/real-libs.sh --prune` fills.
pub(super) fn downloads() -> Result<PathBuf, Failed> {
    static DIR: Cache = Cache::new();
    fetched(&DIR, &["--prune"])
}

/// Compares the wheel `split` with `pruned` as the module says: the same
/// members in the same order with the same headers and bytes, but for
/// `split`'s `variant.json` (whose variants must be `{label: …}`) and its
/// RECORD, which is `pruned`'s plus the variant.json's row, true.
const SAME_BUT_VARIANT: &str = "import base64, hashlib, json, struct, sys, zipfile
def raw(z, i):
    with open(z.filename, 'rb') as f:
        f.seek(i.header_offset)
        n, m = struct.unpack('<HH', f.read(30)[26:30])
        f.seek(i.header_offset + 30 + n + m)
        return f.read(i.compress_size)
a, b, label = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2]), sys.argv[3]
na = [i.filename for i in a.infolist()]
nb = [i.filename for i in b.infolist()]
vj = [n for n in na if n.endswith('.dist-info/variant.json')]
assert len(vj) == 1 and [n for n in na if n != vj[0]] == nb, (na, nb)
rec = vj[0][:-len('variant.json')] + 'RECORD'
for n in nb:
    ia, ib = a.getinfo(n), b.getinfo(n)
    head = lambda i: (i.compress_type, i.date_time, i.external_attr, i.create_system)
    assert head(ia) == head(ib), n
    if n == rec:
        continue
    assert (ia.CRC, ia.compress_size) == (ib.CRC, ib.compress_size), n
    assert raw(a, ia) == raw(b, ib), n
v = a.read(vj[0])
sha = base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()
row = '%s,sha256=%s,%d\\n' % (vj[0], sha, len(v))
assert a.read(rec).decode() == b.read(rec).decode() + row, a.read(rec)
doc = json.loads(v)
assert list(doc['variants']) == [label], doc['variants']
assert doc['providers']['nvidia'] == {'requires': ['nvidia-variant-provider>=0.0.1,<1.0.0'],
    'plugin-api': 'nvidia_variant_provider.plugin:NvidiaVariantPlugin'}
print(json.dumps(doc['variants'][label]))
";

/// Every file under `dir`, by path relative to it, with its bytes.
fn files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, Failed> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir)?.to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p)?));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// nvJPEG split into three groups, twice (on every CPU, then with
/// `--threads 1`): the same bytes both times;
/// each group's wheel is prune's output but for variant.json (with the
/// group's properties) and its RECORD row, and passes `check --require`
/// of its group; pip's index of each group holds that wheel under the
/// input's own name; the null wheel holds the input's members.
fn nvjpeg_groups_hold_what_prune_keeps() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(NVJPEG), d.join(NVJPEG))?;
    let groups = [("sm_80", "sm80"), ("sm_86,sm_90", "sm86.sm90"), ("sm_120", "sm120")];
    let mut args = vec!["split"];
    for (g, _) in &groups {
        args.extend(["--gpus", g]);
    }
    let doc = ours_json(&[&args[..], &["--json", "-d", "a", NVJPEG]].concat(), d)?;
    // A second run, its outputs written one after another on one thread.
    run(&ours(), &[&args[..], &["--threads", "1", "-d", "b", NVJPEG]].concat(), d).ok()?;
    let (a, b) = (files(&d.join("a"))?, files(&d.join("b"))?);
    if a != b || a.is_empty() {
        return Err("two splits (every CPU, --threads 1) gave different files".into());
    }
    let outputs = doc["files"][0]["outputs"].as_array().cloned().unwrap_or_default();
    if outputs.len() != groups.len() + 1 || outputs[groups.len()]["label"] != "null" {
        return Err(format!("outputs: {outputs:?}").into());
    }
    for (group, label) in groups {
        let pruned = format!("p-{label}");
        std::fs::create_dir(d.join(&pruned))?;
        let out = format!("{pruned}/{NVJPEG}");
        run(&ours(), &["prune", "--keep", group, "-o", &out, NVJPEG], d).ok()?;
        let split = format!("a/{STEM}-{label}.whl");
        let r = run(Path::new(PYTHON), &["-c", SAME_BUT_VARIANT, &split, &out, label], d).ok()?;
        let props = String::from_utf8_lossy(&r.stdout).into_owned();
        for sm in group.split(',') {
            let real = format!("\"{}_real\"", sm.trim_start_matches("sm_"));
            if !props.contains(&real) {
                return Err(format!("{label}: {props} lacks {real}").into());
            }
            run(&ours(), &["check", "--require", sm, &split], d).ok()?;
        }
        let pip = format!("a/index/{label}/nvidia-nvjpeg-cu12/{NVJPEG}");
        if std::fs::read(d.join(&pip))? != std::fs::read(d.join(&split))? {
            return Err(format!("{pip} is not {split}").into());
        }
    }
    let null = format!("a/{STEM}-null.whl");
    let r = run(Path::new(PYTHON), &["-c", SAME_BUT_VARIANT, &null, NVJPEG, "null"], d).ok()?;
    if String::from_utf8_lossy(&r.stdout).trim() != "{}" {
        return Err(format!("null variant: {}", String::from_utf8_lossy(&r.stdout)).into());
    }
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("a/nvidia_nvjpeg_cu12-12.4.0.76-variants.json"))?)?;
    let labels: Vec<&String> = index["variants"].as_object().map(|m| m.keys().collect()).unwrap_or_default();
    if labels != ["null", "sm120", "sm80", "sm86.sm90"] {
        return Err(format!("variants.json lists {labels:?}").into());
    }
    split_again(d, &groups)
}

/// Each variant wheel of `a/` (below `d`) split again for its own group:
/// the same bytes, one wheel and no null variant (it serves its own GPUs
/// only); the null variant split again is the same bytes too; and a
/// variant narrowed to one of its GPUs holds one `variant.json`, of the
/// new label, listed once in its RECORD.
fn split_again(d: &Path, groups: &[(&str, &str)]) -> Result<(), Failed> {
    for (group, label) in groups.iter().copied().chain([("sm_50", "null")]) {
        let wheel = format!("{STEM}-{label}.whl");
        let again = format!("again-{label}");
        let mut args = vec!["split", "--json", "-d", &again, "--gpus", group];
        let from = format!("a/{wheel}");
        args.push(&from);
        if label == "null" {
            // The null variant holds every GPU's code: --gpus names one.
            args.splice(4..6, []);
            args.insert(4, "--per-gpu");
        }
        let doc = ours_json(&args, d)?;
        let outputs = doc["files"][0]["outputs"].as_array().cloned().unwrap_or_default();
        let labels: Vec<&str> = outputs.iter().filter_map(|o| o["label"].as_str()).collect();
        if label != "null" {
            same(&format!("{wheel} split again: outputs"), labels, vec![label])?;
            same(&format!("{wheel} split again: its bytes"), std::fs::read(d.join(&again).join(&wheel))? == std::fs::read(d.join(&from))?, true)?;
        } else if labels.last() != Some(&"null") {
            return Err(format!("the null variant split again: outputs {labels:?}").into());
        } else {
            same("the null variant split again: its bytes", std::fs::read(d.join(&again).join(&wheel))? == std::fs::read(d.join(&from))?, true)?;
        }
    }
    let r = run(&ours(), &["split", "--gpus", "sm_90", "-d", "narrow", &format!("a/{STEM}-sm86.sm90.whl")], d).ok()?;
    same("narrowed: says", String::from_utf8_lossy(&r.stdout).contains(": split into 1 wheel\n"), true)?;
    let check = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nv = [n for n in z.namelist() if n.endswith('/variant.json')]\nrec = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')][0]\nrows = [l for l in z.read(rec).decode().splitlines() if '/variant.json,' in l]\nassert len(v) == 1 and len(rows) == 1, (v, rows)\nprint(list(__import__('json').loads(z.read(v[0]))['variants']))";
    let r = run(Path::new(PYTHON), &["-c", check, &format!("narrow/{STEM}-sm90.whl")], d).ok()?;
    same("narrowed: its variant.json", String::from_utf8_lossy(&r.stdout).trim(), "['sm90']")
}

/// `--per-gpu`: one output per SASS target of nvJPEG (15), every device
/// target served by an output naming it, every image group held by some
/// output, and each output passing `check --require` of its target.
fn nvjpeg_per_gpu_covers_every_target() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(NVJPEG), d.join(NVJPEG))?;
    let doc = ours_json(&["split", "--per-gpu", "--json", "-d", "o", NVJPEG], d)?;
    let f = &doc["files"][0];
    let targets = f["targets"].as_array().cloned().unwrap_or_default();
    let want = [50, 52, 60, 61, 70, 75, 80, 86, 89, 90, 100, 101, 103, 120, 121];
    let names: Vec<String> = want.iter().map(|n| format!("sm_{n}")).collect();
    let got: Vec<&str> = targets.iter().filter_map(|t| t["what"].as_str()).collect();
    if got != names {
        return Err(format!("targets {got:?}").into());
    }
    for (t, n) in targets.iter().zip(want) {
        let own = format!("sm{n}");
        if !t["outputs"].as_array().is_some_and(|o| o.iter().any(|l| l == own.as_str())) {
            return Err(format!("{} is not served by {own}: {t}", t["what"]).into());
        }
        run(&ours(), &["check", "--require", &format!("sm_{n}"), &format!("o/{STEM}-{own}.whl")], d)
            .ok()?;
    }
    for i in f["images"].as_array().into_iter().flatten() {
        if i["outputs"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("held by no output: {i}").into());
        }
    }
    Ok(())
}

/// A group nvJPEG does not serve (`gfx942`, `sm_35`) is refused by name,
/// exit 2, and the output directory stays empty; so is a file that is not
/// a wheel.
fn unserved_groups_and_other_inputs_write_nothing() -> Result<(), Failed> {
    let cache = downloads()?;
    let t = tempdir();
    let d = t.path();
    std::fs::copy(cache.join(NVJPEG), d.join(NVJPEG))?;
    std::fs::create_dir(d.join("o"))?;
    for bad in ["gfx942", "sm_35"] {
        let r = run(&ours(), &["split", "--gpus", "sm_80", "--gpus", bad, "-d", "o", NVJPEG], d);
        if r.code != 2 || !r.stderr.contains(&format!("'{bad}'")) {
            return Err(format!("--gpus {bad}: exit {}: {}", r.code, r.stderr).into());
        }
        if std::fs::read_dir(d.join("o"))?.next().is_some() {
            return Err(format!("--gpus {bad} left files in o/").into());
        }
    }
    std::fs::write(d.join("lib.so"), b"\x7fELF")?;
    let r = run(&ours(), &["split", "--per-gpu", "-d", "o", "lib.so"], d);
    if r.code != 2 || !r.stderr.contains("lib.so") || !r.stderr.contains("no device target") {
        return Err(format!("lib.so: exit {}: {}", r.code, r.stderr).into());
    }
    if std::fs::read_dir(d.join("o"))?.next().is_some() {
        return Err("a refused input left files in o/".into());
    }
    Ok(())
}
