use super::*;

/// A file of `bytes` bytes of device code per target in `targets`.
fn report(path: &str, targets: &[(&str, u64)]) -> SizeReport {
    let mut r = SizeReport {
        path: path.into(),
        file_size: 1 << 20,
        ..SizeReport::default()
    };
    for (key, bytes) in targets {
        let t = Tally {
            images: 1,
            bytes: *bytes,
            stored: bytes / 2,
        };
        r.total.images += 1;
        r.total.bytes += bytes;
        r.total.stored += bytes / 2;
        r.by_target.insert((*key).to_string(), t.clone());
        let kind = key.rsplit(' ').next().unwrap_or_default().to_string();
        r.by_kind.insert(kind, t);
    }
    r
}

const SM90: &str = "cuda nvptx64-nvidia-cuda sm_90 cubin";
const GFX: &str = "hip amdgcn-amd-amdhsa gfx90a object";

fn html(reports: &[SizeReport], input: &str) -> String {
    let files: Vec<HtmlFile<'_>> = reports
        .iter()
        .map(|size| HtmlFile::new(input, size, None))
        .collect();
    let all = SizeReport::sum("(all inputs)", reports);
    size_html(&files, Some(&all))
}

#[test]
fn hostile_names_are_escaped() {
    let evil = "d/<script>alert(1)</script>\"'&\u{1b}[31m.so";
    let reports = [
        report(evil, &[(SM90, 5000)]),
        report(
            "d/</style><img src=x onerror=y>",
            &[("cuda <b>x\"y sm_1<a> cubin", 700)],
        ),
    ];
    let out = html(&reports, "d");
    assert!(!out.contains("<script"), "{out}");
    assert!(!out.contains("<img"), "{out}");
    assert!(!out.contains("<b>x"), "{out}");
    assert!(!out.contains('\u{1b}'));
    assert_eq!(out.matches("</style>").count(), 1);
    assert!(out.contains("d/&lt;script&gt;alert(1)&lt;/script&gt;&quot;&apos;&amp;\\e[31m.so"));
    // In a title, the path below the input.
    assert!(
        out.contains(
            "title=\"d › &lt;script&gt;alert(1)&lt;/script&gt;&quot;&apos;&amp;\\e[31m.so"
        )
    );
    // Nothing to fetch: no URL, no script.
    let plain = html(&[report("a.so", &[(SM90, 9)])], "a.so");
    for bad in [
        "http:", "https:", "url(", "src=", "href=", "@import", "<script", "<link",
    ] {
        assert!(!plain.contains(bad), "{bad} in the document");
    }
}

#[test]
fn same_reports_same_bytes() {
    let reports: Vec<SizeReport> = (0..40)
        .map(|i| {
            report(
                &format!("v/lib{i}.so"),
                &[(SM90, 1000 * (i + 1)), (GFX, 333 * i)],
            )
        })
        .collect();
    let a = html(&reports, "v");
    let b = html(&reports, "v");
    assert_eq!(a, b);
}

#[test]
fn tables_have_the_json_figures() {
    let reports = [
        report("in/a.so", &[(SM90, 4096), (GFX, 1000)]),
        SizeReport::unreadable("in/gone.so", "cannot open"),
    ];
    let out = html(&reports, "in");
    assert!(out.contains(
        "<tr class=\"file\"><td>in/a.so</td><td>1048576</td><td>2</td><td>5096</td><td>2548</td><td></td></tr>"
    ), "{out}");
    assert!(out.contains(
        "<td>in/gone.so</td><td>0</td><td>0</td><td>0</td><td>0</td><td>error: cannot open</td>"
    ));
    assert!(out.contains(
        "<tr class=\"total\"><td>(all inputs)</td><td>1048576</td><td>2</td><td>5096</td><td>2548</td>"
    ));
    // Targets in arch order, with their vendor.
    let gfx = out.find("<td>hip amdgcn-amd-amdhsa gfx90a object</td><td>AMD</td><td>1</td><td>1000</td><td>500</td>");
    let sm = out.find("<td>cuda nvptx64-nvidia-cuda sm_90 cubin</td><td>NVIDIA</td><td>1</td><td>4096</td><td>2048</td>");
    assert!(gfx.is_some() && sm.is_some(), "{out}");
    // Boxes: the input, its file, its two targets, labelled.
    assert!(out.contains("<b>sm_90 cubin</b>"));
    assert!(out.contains("<b>gfx90a object</b>"));
    assert!(out.contains("title=\"in › a.so › cuda nvptx64-nvidia-cuda sm_90 cubin&#10;4096 bytes (4.0 KiB) in 1 image(s)\""));
}

#[test]
fn a_big_tree_stays_small() {
    // 20,000 files, 400 with device code.
    let reports: Vec<SizeReport> = (0..20_000u64)
        .map(|i| {
            let name = format!("venv/lib/python3.12/site-packages/pkg{}/mod{i}.so", i % 97);
            if i % 50 == 0 {
                let key = format!("cuda nvptx64-nvidia-cuda sm_{} cubin", 50 + i % 40);
                report(&name, &[(&key, 10_000 + i), (GFX, 500)])
            } else {
                report(&name, &[])
            }
        })
        .collect();
    let out = html(&reports, "venv");
    assert!(out.len() < 5 << 20, "{} bytes", out.len());
    let boxes = out.matches("<div class=").count();
    assert!(boxes <= treemap::MAX_RECTS + 10, "{boxes} boxes");
    assert!(out.contains("other ("), "nothing folded");
}

#[test]
fn levels_below_the_input() {
    let l = |input, path| levels(input, path);
    assert_eq!(l("a.so", "a.so"), vec![]);
    assert_eq!(
        l("d", "d/x/y.so"),
        vec![(Level::Dir, "x"), (Level::File, "y.so")]
    );
    assert_eq!(l("d/", "d/y.so"), vec![(Level::File, "y.so")]);
    assert_eq!(
        l("d", "d/p.whl!/m/a.so"),
        vec![
            (Level::File, "p.whl"),
            (Level::Dir, "m"),
            (Level::Member, "a.so")
        ]
    );
    assert_eq!(
        l("p.deb", "p.deb!/data!/b.so"),
        vec![(Level::Member, "data"), (Level::Member, "b.so")]
    );
    assert_eq!(
        l("elsewhere", "/q/./r.so"),
        vec![(Level::Dir, "q"), (Level::File, "r.so")]
    );
}

#[test]
fn colours_by_vendor_and_target() {
    assert_eq!(vendor(SM90), "NVIDIA");
    assert_eq!(vendor(GFX), "AMD");
    assert_eq!(vendor("sycl spir64-unknown-unknown - spirv"), "SPIR-V");
    let keys = [
        "cuda nvptx64-nvidia-cuda sm_80 cubin",
        SM90,
        "cuda nvptx64-nvidia-cuda sm_90 ptx",
        GFX,
        "hip amdgcn-amd-amdhsa gfx942 object",
    ];
    let p = palette(keys);
    let distinct: std::collections::BTreeSet<&String> = p.values().collect();
    assert_eq!(distinct.len(), keys.len(), "{p:?}");
    assert_eq!(palette(keys), p);
}

/// A bare AMDGPU code object (HSA, code object v5) for gfx90a, `pad`
/// bytes longer.
fn code_object(pad: usize) -> Vec<u8> {
    let mut e = b"\x7fELF\x02\x01\x01\x40\x03".to_vec();
    e.resize(16, 0);
    e.extend_from_slice(&3u16.to_le_bytes());
    e.extend_from_slice(&224u16.to_le_bytes());
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&[0; 24]);
    e.extend_from_slice(&0x53fu32.to_le_bytes());
    for v in [64u16, 56, 0, 64, 0, 0] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e.resize(e.len() + pad, 0);
    e
}

#[test]
fn containers_from_the_scan() {
    let data = code_object(4000);
    let r = crate::scan::scan(&data, &crate::scan::Options::default());
    let size = crate::scan::size("in/k.co", data.len() as u64, &r);
    assert_eq!(size.total.images, 1, "{r:?}");
    let out = size_html(&[HtmlFile::new("in", &size, Some(&r))], None);
    let key = size.by_target.keys().next().cloned().unwrap_or_default();
    let title = format!(
        "title=\"in › k.co › image-file #0 › {key}&#10;{} bytes",
        size.total.bytes
    );
    assert!(out.contains(&title), "{title} not in {out}");
}
