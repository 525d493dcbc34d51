//! The HTML report of `size --html FILE` (issue #62), rendered by Debian's
//! headless Chromium: of a directory holding CuPy's wheel, NVIDIA's
//! libnvjpeg and Debian's librocrand `.deb`, the screenshot is not blank
//! (its PNG decoded here, its colours counted), every input and target
//! is in the DOM, every figure of the tables is `size --json`'s; of a tree
//! of 20,000 files (400 of them bare AMDGPU code objects), the document
//! stays under 5 MB and Chromium renders it in under 20 s.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::Path;
use std::time::{Duration, Instant};

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::real_libs::{CUPY, DEB, downloads};
use crate::reports::code_object;
use crate::util::{ours, ours_json, run, same, tempdir};

const CHROMIUM: &str = "/usr/bin/chromium";
const NVJPEG: &str = "/opt/offload-kit/cuda-tools/lib/libnvjpeg.so.12";

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(html_renders_every_input_target_and_json_figure, &["chromium", NVJPEG]),
        trial!(html_of_20000_files_is_small_and_renders_quickly, &["chromium"]),
    ]
}

/// Runs headless Chromium on `html` (in `dir`): the DOM it ends with, and
/// a screenshot of `size` pixels in `png`.
fn chromium(dir: &Path, html: &Path, png: &Path, size: &str) -> Result<String, Failed> {
    let url = format!("file://{}", html.display());
    let base = [
        "--headless".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        format!("--user-data-dir={}", dir.join("profile").display()),
    ];
    let mut dom_args = base.to_vec();
    dom_args.extend(["--dump-dom".into(), url.clone()]);
    let dom = run(Path::new(CHROMIUM), &dom_args, dir).ok()?;
    let mut shot_args = base.to_vec();
    shot_args.extend([
        format!("--screenshot={}", png.display()),
        format!("--window-size={size}"),
        url,
    ]);
    run(Path::new(CHROMIUM), &shot_args, dir).ok()?;
    Ok(String::from_utf8_lossy(&dom.stdout).into_owned())
}

/// The rows of the tables of class `class` in `dom`: each row's cells,
/// their text as Chromium writes it.
fn rows(dom: &str, class: &str) -> Vec<Vec<String>> {
    let open = format!("<tr class=\"{class}\">");
    dom.split(open.as_str())
        .skip(1)
        .map(|row| {
            let row = row.split("</tr>").next().unwrap_or_default();
            row.split("<td>")
                .skip(1)
                .map(|c| c.split("</td>").next().unwrap_or_default().to_string())
                .collect()
        })
        .collect()
}

/// A `size --json` file (or total) as a row of the files table.
fn file_row(f: &Value) -> Vec<String> {
    let n = |v: &Value| v.as_u64().map_or_else(|| "?".into(), |n| n.to_string());
    vec![
        f["path"].as_str().unwrap_or("?").to_string(),
        n(&f["file_size"]),
        n(&f["total"]["images"]),
        n(&f["total"]["bytes"]),
        n(&f["total"]["stored"]),
    ]
}

/// The number of distinct colours in the PNG `png`, and the share (in
/// thousandths) of its pixels that are not its top-left pixel's colour.
fn png_colours(png: &[u8]) -> Result<(usize, u64), Failed> {
    if png.get(..8) != Some(b"\x89PNG\r\n\x1a\n".as_slice()) {
        return Err("the screenshot is no PNG".into());
    }
    let (mut at, mut idat, mut head) = (8, Vec::new(), None);
    while at + 12 <= png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into()?) as usize;
        let kind = &png[at + 4..at + 8];
        let data = png.get(at + 8..at + 8 + len).ok_or("a PNG chunk past the end")?;
        match kind {
            b"IHDR" => head = Some(data.to_vec()),
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        at += 12 + len;
    }
    let head = head.ok_or("no IHDR")?;
    let width = u32::from_be_bytes(head[0..4].try_into()?) as usize;
    let height = u32::from_be_bytes(head[4..8].try_into()?) as usize;
    let bpp = match (head[8], head[9]) {
        (8, 2) => 3,
        (8, 6) => 4,
        other => return Err(format!("PNG depth and colour type {other:?} not read here").into()),
    };
    if head[12] != 0 {
        return Err("an interlaced PNG".into());
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(idat.as_slice()).read_to_end(&mut raw)?;
    let stride = width * bpp;
    if raw.len() != height * (stride + 1) {
        return Err(format!("PNG data of {} bytes for {width}x{height}", raw.len()).into());
    }
    let mut prev = vec![0u8; stride];
    let mut colours = BTreeSet::new();
    let (mut first, mut other) = (None, 0u64);
    for line in raw.chunks(stride + 1) {
        let mut cur = line[1..].to_vec();
        for i in 0..stride {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let (b, c) = (prev[i], if i >= bpp { prev[i - bpp] } else { 0 });
            let add = match line[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => return Err(format!("PNG filter {f}").into()),
            };
            cur[i] = cur[i].wrapping_add(add);
        }
        for px in cur.chunks(bpp) {
            let rgb = (px[0], px[1], px[2]);
            colours.insert(rgb);
            if *first.get_or_insert(rgb) != rgb {
                other += 1;
            }
        }
        prev = cur;
    }
    Ok((colours.len(), other * 1000 / (width * height).max(1) as u64))
}

/// The screenshot in `png` is a picture: many colours, much not white.
fn not_blank(png: &Path) -> Result<(), Failed> {
    let (colours, share) = png_colours(&std::fs::read(png)?)?;
    if colours < 16 || share < 100 {
        return Err(format!("the screenshot looks blank: {colours} colours, {share}/1000 drawn").into());
    }
    Ok(())
}

fn html_renders_every_input_target_and_json_figure() -> Result<(), Failed> {
    let cache = downloads()?;
    let tmp = tempdir();
    let dir = tmp.path().join("in");
    std::fs::create_dir(&dir)?;
    for (from, name) in [
        (cache.join(CUPY), CUPY),
        (cache.join(DEB), DEB),
        (Path::new(NVJPEG).to_path_buf(), "libnvjpeg.so.12"),
    ] {
        // A hard link where the cache is on the same file system.
        if std::fs::hard_link(&from, dir.join(name)).is_err() {
            std::fs::copy(&from, dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    let out = tmp.path().join("out.html");
    let r = run(&ours(), &["size", "in", "--html", "out.html"], tmp.path()).ok()?;
    let plain = run(&ours(), &["size", "in"], tmp.path()).ok()?;
    same("stdout with --html", r.stdout, plain.stdout)?;
    let html = std::fs::read(&out)?;
    run(&ours(), &["size", "in", "--html", "again.html"], tmp.path()).ok()?;
    if std::fs::read(tmp.path().join("again.html"))? != html {
        return Err("the HTML differs from run to run".into());
    }
    let json = ours_json(&["size", "in", "--json"], tmp.path())?;
    let png = tmp.path().join("shot.png");
    let dom = chromium(tmp.path(), &out, &png, "1600,1100")?;
    not_blank(&png)?;
    let files = json["files"].as_array().ok_or("no files in --json")?;
    let want: Vec<Vec<String>> = files.iter().map(file_row).collect();
    let got: Vec<Vec<String>> = rows(&dom, "file").into_iter().map(|r| r[..5].to_vec()).collect();
    same("the files table", got, want)?;
    let total: Vec<Vec<String>> = rows(&dom, "total").into_iter().map(|r| r[..5].to_vec()).collect();
    same("the total row", total, vec![file_row(&json["total"])])?;
    let targets = json["total"]["by_target"].as_object().ok_or("no by_target")?;
    let mut got: Vec<Vec<String>> = rows(&dom, "target");
    got.sort();
    let mut want: Vec<Vec<String>> = Vec::new();
    for (key, t) in targets {
        let n = |k: &str| t[k].as_u64().unwrap_or(u64::MAX).to_string();
        let cells = got.iter().find(|r| r[0] == *key).map(|r| r[1].clone());
        want.push(vec![key.clone(), cells.unwrap_or_default(), n("images"), n("bytes"), n("stored")]);
    }
    want.sort();
    same("the targets table", got, want)?;
    // Each file's own figures per target, as --json has them.
    let mut want: Vec<Vec<String>> = Vec::new();
    for f in files {
        let by = f["by_target"].as_object().ok_or("a file without by_target")?;
        for (key, t) in by {
            let n = |k: &str| t[k].as_u64().unwrap_or(u64::MAX).to_string();
            let path = f["path"].as_str().unwrap_or("?").to_string();
            want.push(vec![path, key.clone(), n("images"), n("bytes"), n("stored")]);
        }
    }
    let mut got: Vec<Vec<String>> = rows(&dom, "file-target")
        .into_iter()
        .map(|r| r.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, c)| c.clone()).collect())
        .collect();
    got.sort();
    want.sort();
    same("the table of targets per file", got, want)?;
    // Every input in the treemap's boxes, every target in the legend.
    for name in [CUPY, DEB, "libnvjpeg.so.12"] {
        if !dom.contains(&format!("title=\"in › {name}")) {
            return Err(format!("no box of {name} in the DOM").into());
        }
    }
    for key in targets.keys() {
        let mut parts = key.split(' ').skip(2);
        let short = format!("{} {}", parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        if !dom.contains(&format!("<b>{short}</b>")) {
            return Err(format!("{key} is in no box or legend line").into());
        }
    }
    Ok(())
}

fn html_of_20000_files_is_small_and_renders_quickly() -> Result<(), Failed> {
    let tmp = tempdir();
    let root = tmp.path().join("venv");
    for i in 0..20_000u32 {
        let dir = root.join(format!("site-packages/pkg{:03}/sub{}", i % 211, i % 7));
        if i < 211 * 7 {
            std::fs::create_dir_all(&dir)?;
        }
        if i % 50 == 0 {
            // gfx90a, gfx942, gfx1030 in turn, of different sizes.
            let mach = [0x3f, 0x4c, 0x36][(i / 50 % 3) as usize];
            let mut co = code_object(mach);
            co.resize(co.len() + (i as usize * 37) % 20_000, 0);
            std::fs::write(dir.join(format!("k{i}.co")), co)?;
        } else {
            std::fs::write(dir.join(format!("m{i}.py")), format!("x = {i}\n"))?;
        }
    }
    let json = ours_json(&["size", "venv", "--json"], tmp.path())?;
    let shown = json["files"].as_array().map_or(0, Vec::len);
    same("files with device code", shown, 400)?;
    run(&ours(), &["size", "venv", "--html", "out.html"], tmp.path()).ok()?;
    let out = tmp.path().join("out.html");
    let len = std::fs::metadata(&out)?.len();
    if len >= 5 << 20 {
        return Err(format!("the HTML takes {len} bytes").into());
    }
    let start = Instant::now();
    let png = tmp.path().join("shot.png");
    let dom = chromium(tmp.path(), &out, &png, "1600,1100")?;
    let took = start.elapsed();
    if took >= Duration::from_secs(20) {
        return Err(format!("Chromium took {took:?}").into());
    }
    not_blank(&png)?;
    same("file rows in the DOM", rows(&dom, "file").len(), 400)?;
    if !dom.contains("other (") {
        return Err("nothing folded in the treemap".into());
    }
    Ok(())
}
