//! The treemap of `size --html`: a tree of device-code bytes (input →
//! file → package member → container → target), its small children folded
//! into one "other" node each ([`Node::fold`]), laid out as squarified
//! rectangles ([`squarify`], [`place`]).

use std::collections::BTreeMap;

/// What a node of the tree stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Level {
    /// Everything (the tree's root, not drawn).
    Root,
    /// An input named.
    Input,
    /// A directory, on disk or in a package.
    Dir,
    /// A file on disk (found in a directory, or named).
    File,
    /// A file inside a package.
    Member,
    /// A container of device images (the outermost one in the file).
    Container,
    /// A target: the images of one row of `size`'s target table.
    Target,
    /// Children folded together.
    Other,
}

impl Level {
    /// The word for several nodes of this level, in an "other" node's
    /// label.
    fn plural(self) -> &'static str {
        match self {
            Level::Root | Level::Other => "items",
            Level::Input => "inputs",
            Level::Dir => "directories",
            Level::File => "files",
            Level::Member => "members",
            Level::Container => "containers",
            Level::Target => "targets",
        }
    }
}

/// A node of the tree: its bytes and images are those of its children
/// added up (a target's, its images').
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Node {
    pub(super) label: String,
    pub(super) level: Level,
    pub(super) bytes: u64,
    pub(super) images: u64,
    /// A target's row key (`cuda nvptx64-nvidia-cuda sm_90 cubin`).
    pub(super) target: Option<String>,
    pub(super) children: Vec<Node>,
}

/// A tree being built, children found by level and label.
#[derive(Default)]
pub(super) struct Builder {
    bytes: u64,
    images: u64,
    children: BTreeMap<(Level, String), Builder>,
}

impl Builder {
    /// Counts `images` images of `bytes` bytes under the nodes of `path`
    /// (each a level and a label), the last one a target.
    pub(super) fn add(&mut self, path: &[(Level, &str)], bytes: u64, images: u64) {
        let mut at = self;
        at.bytes = at.bytes.saturating_add(bytes);
        at.images = at.images.saturating_add(images);
        for (level, label) in path {
            at = at
                .children
                .entry((*level, (*label).to_string()))
                .or_default();
            at.bytes = at.bytes.saturating_add(bytes);
            at.images = at.images.saturating_add(images);
        }
    }

    /// The tree, each node's children largest first (then by label).
    pub(super) fn build(self, label: &str, level: Level) -> Node {
        let mut children: Vec<Node> = self
            .children
            .into_iter()
            .map(|((level, label), b)| b.build(&label, level))
            .collect();
        children.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.label.cmp(&b.label)));
        Node {
            label: label.to_string(),
            level,
            bytes: self.bytes,
            images: self.images,
            target: (level == Level::Target).then(|| label.to_string()),
            children,
        }
    }
}

/// `n` bytes for people: `512 B`, `12.3 KiB`, `4.0 GiB`.
pub(super) fn human(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

impl Node {
    /// Joins each directory that holds one thing only (another directory,
    /// a file, a member) with it: `usr/lib/x86_64-linux-gnu/libfoo.so`
    /// is one box, not four nested.
    pub(super) fn collapse(&mut self) {
        for c in &mut self.children {
            c.collapse();
        }
        if self.level == Level::Dir
            && let [only] = self.children.as_mut_slice()
            && matches!(only.level, Level::Dir | Level::File | Level::Member)
        {
            let only = std::mem::replace(only, Node::empty());
            self.label = format!("{}/{}", self.label, only.label);
            self.level = only.level;
            self.children = only.children;
        }
    }

    fn empty() -> Node {
        Node {
            label: String::new(),
            level: Level::Other,
            bytes: 0,
            images: 0,
            target: None,
            children: Vec::new(),
        }
    }

    /// Folds small children, at every level: beyond the `keep` largest,
    /// and those under 1/1000 of their parent, go into one "other (k files,
    /// X MiB)" node (when there are two or more of them); children of no
    /// bytes are dropped (they have no area).
    pub(super) fn fold(&mut self, keep: usize) {
        self.children.retain(|c| c.bytes > 0);
        let parent = self.bytes;
        let cut = self
            .children
            .iter()
            .enumerate()
            .position(|(i, c)| i >= keep || u128::from(c.bytes) * 1000 < u128::from(parent))
            .unwrap_or(self.children.len())
            .max(1);
        if self.children.len() >= cut + 2 {
            let rest: Vec<Node> = self.children.drain(cut..).collect();
            let bytes = rest.iter().fold(0u64, |a, c| a.saturating_add(c.bytes));
            let images = rest.iter().fold(0u64, |a, c| a.saturating_add(c.images));
            let level = rest.first().map_or(Level::Other, |c| c.level);
            self.children.push(Node {
                label: format!(
                    "other ({} {}, {})",
                    rest.len(),
                    level.plural(),
                    human(bytes)
                ),
                level: Level::Other,
                bytes,
                images,
                target: None,
                children: Vec::new(),
            });
        }
        for c in &mut self.children {
            c.fold(keep);
        }
    }
}

/// A rectangle, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Rect {
    pub(super) x: f64,
    pub(super) y: f64,
    pub(super) w: f64,
    pub(super) h: f64,
}

/// The worst aspect ratio of a row of `areas` (adding up to `sum`) laid
/// along a side of `side` pixels.
fn worst(areas: &[f64], sum: f64, side: f64) -> f64 {
    let (s2, sum2) = (side * side, sum * sum);
    areas
        .iter()
        .map(|&a| (s2 * a / sum2).max(sum2 / (s2 * a)))
        .fold(0.0, f64::max)
}

/// The squarified treemap (Bruls, Huizing, van Wijk) of `weights`
/// (largest first, none zero) in `area`: one rectangle per weight, in
/// order, their areas in proportion to the weights, together filling
/// `area`. Rows go along the shorter side of what is left, each grown
/// while that improves its worst aspect ratio.
pub(super) fn squarify(weights: &[u64], area: Rect) -> Vec<Rect> {
    let total = weights.iter().map(|&w| w as f64).sum::<f64>();
    if total <= 0.0 || area.w <= 0.0 || area.h <= 0.0 {
        return vec![
            Rect {
                w: 0.0,
                h: 0.0,
                ..area
            };
            weights.len()
        ];
    }
    let scale = area.w * area.h / total;
    let areas: Vec<f64> = weights.iter().map(|&w| w as f64 * scale).collect();
    let mut out = Vec::with_capacity(areas.len());
    let mut rest = area;
    let mut i = 0;
    while i < areas.len() {
        let side = rest.w.min(rest.h);
        let mut j = i + 1;
        let mut sum = areas[i];
        let mut best = worst(&areas[i..j], sum, side);
        while j < areas.len() {
            let next = worst(&areas[i..=j], sum + areas[j], side);
            if next > best {
                break;
            }
            best = next;
            sum += areas[j];
            j += 1;
        }
        // The last row takes what is left, whatever rounding did.
        let thick = if j == areas.len() {
            if rest.w >= rest.h { rest.w } else { rest.h }
        } else {
            sum / side
        };
        let mut along = 0.0;
        for (k, &a) in areas[i..j].iter().enumerate() {
            let len = if i + k + 1 == j {
                side - along
            } else {
                a / thick
            };
            out.push(if rest.w >= rest.h {
                Rect {
                    x: rest.x,
                    y: rest.y + along,
                    w: thick,
                    h: len,
                }
            } else {
                Rect {
                    x: rest.x + along,
                    y: rest.y,
                    w: len,
                    h: thick,
                }
            });
            along += len;
        }
        if rest.w >= rest.h {
            rest.x += thick;
            rest.w = (rest.w - thick).max(0.0);
        } else {
            rest.y += thick;
            rest.h = (rest.h - thick).max(0.0);
        }
        i = j;
    }
    out
}

/// A node's rectangle, and the labels of the nodes above it.
pub(super) struct Placed<'a> {
    pub(super) node: &'a Node,
    pub(super) rect: Rect,
    /// The labels from the first input down to this node.
    pub(super) path: Vec<&'a str>,
    /// Whether its children are drawn inside it.
    pub(super) opened: bool,
}

/// The height of a group's label, above its children.
pub(super) const HEADER: f64 = 15.0;
/// The space around a group's children.
const PAD: f64 = 2.0;
/// At most this many rectangles are drawn (the rest stay inside their
/// parents, counted in their figures).
pub(super) const MAX_RECTS: usize = 6000;

/// Where `node`'s children go inside `r`: below its label, inset.
pub(super) fn inner(r: Rect) -> Rect {
    Rect {
        x: r.x + PAD,
        y: r.y + HEADER,
        w: (r.w - 2.0 * PAD).max(0.0),
        h: (r.h - HEADER - PAD).max(0.0),
    }
}

/// The rectangles of the tree under `root` in `area`: each node's
/// children inside it ([`inner`]) when it is large enough to hold them,
/// parents before children, level by level; rectangles smaller than a
/// pixel are left out, and none past [`MAX_RECTS`].
pub(super) fn place(root: &Node, area: Rect) -> Vec<Placed<'_>> {
    let mut out: Vec<Placed<'_>> = Vec::new();
    let mut queue: Vec<(&Node, Rect, Vec<&str>)> = vec![(root, area, Vec::new())];
    let mut next = Vec::new();
    while !queue.is_empty() {
        for (node, r, path) in queue.drain(..) {
            let weights: Vec<u64> = node.children.iter().map(|c| c.bytes).collect();
            for (c, cr) in node.children.iter().zip(squarify(&weights, r)) {
                if cr.w < 1.0 || cr.h < 1.0 || out.len() >= MAX_RECTS {
                    continue;
                }
                let mut cpath = path.clone();
                cpath.push(c.label.as_str());
                let opened = !c.children.is_empty() && cr.w >= 24.0 && cr.h >= HEADER + 10.0;
                out.push(Placed {
                    node: c,
                    rect: cr,
                    path: cpath.clone(),
                    opened,
                });
                if opened {
                    next.push((c, inner(cr), cpath));
                }
            }
        }
        std::mem::swap(&mut queue, &mut next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn squarify_fills_the_area_in_proportion() {
        let area = Rect {
            x: 10.0,
            y: 20.0,
            w: 600.0,
            h: 400.0,
        };
        let weights = [6000u64, 6000, 4000, 3000, 2000, 2000, 1000, 7];
        let rects = squarify(&weights, area);
        let total: u64 = weights.iter().sum();
        for (w, r) in weights.iter().zip(&rects) {
            let want = *w as f64 / total as f64 * area.w * area.h;
            assert!(
                close(r.w * r.h, want),
                "{w}: {r:?} has {} not {want}",
                r.w * r.h
            );
            assert!(r.x >= area.x - 1e-9 && r.y >= area.y - 1e-9);
            assert!(r.x + r.w <= area.x + area.w + 1e-6 && r.y + r.h <= area.y + area.h + 1e-6);
        }
        // No two overlap.
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let ox = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let oy = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(ox <= 1e-6 || oy <= 1e-6, "{a:?} overlaps {b:?}");
            }
        }
        assert!(squarify(&[], area).is_empty());
        assert_eq!(squarify(&[5], area), vec![area]);
    }

    fn tree() -> Node {
        let mut b = Builder::default();
        for i in 0..50u64 {
            let file = format!("f{i:02}.so");
            let bytes = 1000 + i * 100;
            b.add(
                &[
                    (Level::Input, "in"),
                    (Level::File, &file),
                    (Level::Container, "cuda-fatbin #0"),
                    (Level::Target, "cuda nvptx64-nvidia-cuda sm_90 cubin"),
                ],
                bytes,
                1,
            );
        }
        b.add(
            &[
                (Level::Input, "big.so"),
                (Level::Target, "hip amdgcn-amd-amdhsa gfx90a object"),
            ],
            90_000,
            3,
        );
        b.build("(all inputs)", Level::Root)
    }

    #[test]
    fn small_children_fold_into_other() {
        let mut t = tree();
        let before = (t.bytes, t.images);
        t.fold(10);
        assert_eq!((t.bytes, t.images), before);
        assert_eq!(t.children[1].label, "big.so");
        let dir = &t.children[0];
        assert_eq!(dir.children.len(), 11);
        let other = &dir.children[10];
        assert_eq!(other.level, Level::Other);
        assert_eq!(other.label, "other (40 files, 115.2 KiB)");
        assert_eq!(dir.children.iter().map(|c| c.bytes).sum::<u64>(), dir.bytes);
        assert_eq!(dir.children.iter().map(|c| c.images).sum::<u64>(), 50);
        // The largest kept, largest first.
        assert_eq!(dir.children[0].label, "f49.so");
        assert!(
            dir.children
                .windows(2)
                .take(9)
                .all(|w| w[0].bytes >= w[1].bytes)
        );
    }

    #[test]
    fn children_are_placed_inside_their_parents_by_their_bytes() {
        let mut t = tree();
        t.fold(10);
        let area = Rect {
            x: 0.0,
            y: 0.0,
            w: 900.0,
            h: 600.0,
        };
        let placed = place(&t, area);
        assert!(!placed.is_empty());
        for p in &placed {
            // Its parent: the opened rectangle whose path is its path but
            // the last.
            let parent = placed.iter().find(|q| {
                q.opened && q.path.len() + 1 == p.path.len() && q.path[..] == p.path[..q.path.len()]
            });
            let (outer, parent_bytes) = match parent {
                Some(q) => (inner(q.rect), q.node.bytes),
                None => (area, t.bytes),
            };
            let r = p.rect;
            assert!(
                r.x >= outer.x - 1e-6 && r.y >= outer.y - 1e-6,
                "{:?}",
                p.path
            );
            assert!(r.x + r.w <= outer.x + outer.w + 1e-6, "{:?}", p.path);
            assert!(r.y + r.h <= outer.y + outer.h + 1e-6, "{:?}", p.path);
            let want = p.node.bytes as f64 / parent_bytes as f64 * outer.w * outer.h;
            assert!(
                close(r.w * r.h, want),
                "{:?}: {} not {want}",
                p.path,
                r.w * r.h
            );
        }
        assert!(placed.iter().any(|p| p.node.level == Level::Target));
    }

    #[test]
    fn lone_directories_join_what_they_hold() {
        let mut b = Builder::default();
        let t = (Level::Target, "hip amdgcn-amd-amdhsa gfx90a object");
        b.add(
            &[
                (Level::Input, "p.deb"),
                (Level::Dir, "usr"),
                (Level::Dir, "lib"),
                (Level::Member, "a.so"),
                t,
            ],
            5,
            1,
        );
        b.add(
            &[
                (Level::Input, "d"),
                (Level::Dir, "x"),
                (Level::File, "a.so"),
                t,
            ],
            5,
            1,
        );
        b.add(
            &[
                (Level::Input, "d"),
                (Level::Dir, "x"),
                (Level::File, "b.so"),
                t,
            ],
            5,
            1,
        );
        let mut root = b.build("(all inputs)", Level::Root);
        root.collapse();
        let deb = &root.children[1].children[0];
        assert_eq!(
            (deb.label.as_str(), deb.level),
            ("usr/lib/a.so", Level::Member)
        );
        assert_eq!(deb.children[0].level, Level::Target);
        let dir = &root.children[0].children[0];
        assert_eq!(
            (dir.label.as_str(), dir.level, dir.children.len()),
            ("x", Level::Dir, 2)
        );
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(1023), "1023 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(13 << 30), "13.0 GiB");
        assert_eq!(human(u64::MAX), "16384.0 PiB");
    }
}
