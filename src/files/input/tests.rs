use super::*;
use crate::files::Output;

/// Gives `data`, in reads of odd sizes, then fails when `fail` says.
struct Source<'a> {
    data: &'a [u8],
    at: usize,
    fail_at: Option<usize>,
}

impl Read for Source<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.fail_at.is_some_and(|f| self.at >= f) {
            return Err(io::Error::other("the read broke"));
        }
        let n = buf.len().min(77_777).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Takes `room` bytes, then fails.
struct Full {
    got: Vec<u8>,
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.got.len() + buf.len() > self.room {
            return Err(io::Error::other("the disk is full"));
        }
        self.got.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn pieces_are_copied_in_order_and_either_side_failing_stops_both() {
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
    let src = |fail_at| Source {
        data: &data,
        at: 0,
        fail_at,
    };
    let mut out = Full {
        got: Vec::new(),
        room: usize::MAX,
    };
    assert_eq!(copy_in_pieces(&mut src(None), &mut out).unwrap(), 5_000_000);
    assert!(out.got == data);
    let mut out = Full {
        got: Vec::new(),
        room: usize::MAX,
    };
    let e = copy_in_pieces(&mut src(Some(1_000_000)), &mut out).unwrap_err();
    assert_eq!(e.to_string(), "the read broke");
    let mut out = Full {
        got: Vec::new(),
        room: 2_000_000,
    };
    let e = copy_in_pieces(&mut src(None), &mut out).unwrap_err();
    assert_eq!(e.to_string(), "the disk is full");
    assert!(out.got.len() <= 2_000_000);
}

/// `data` written to a file in `dir`, opened as an input.
fn mapped(dir: &tempfile::TempDir, data: &[u8]) -> Input {
    let path = dir.path().join("in");
    std::fs::write(&path, data).unwrap();
    Input::open(path.to_str().unwrap()).unwrap()
}

#[test]
fn pages_given_back_read_the_same_and_writes_land_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i * 7 + (i >> 12)).to_le_bytes()[0])
        .collect();
    let input = mapped(&dir, &data);
    // Released ranges (page-aligned or not, and slices not from the
    // mapping) read the same afterwards.
    input.release(&input.bytes()[10..2_000_000]);
    input.release(&data[..100]);
    assert_eq!(input.bytes(), &data[..]);
    let out = tempfile::tempfile().unwrap();
    out.set_len(4_000_000).unwrap();
    let sum = input
        .with_mapped_output(&out, 4_000_000, |src, dst| {
            // Long enough for the helper thread to give pages back
            // between the copies.
            for (k, chunk) in src.chunks(500_000).enumerate() {
                dst[k * 500_000..][..chunk.len()].copy_from_slice(chunk);
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            dst[3_000_000..3_000_004].copy_from_slice(b"tail");
            src.iter().map(|&b| u64::from(b)).sum::<u64>()
        })
        .unwrap();
    assert_eq!(sum, data.iter().map(|&b| u64::from(b)).sum::<u64>());
    let mut written = Vec::new();
    (&out).read_to_end(&mut written).unwrap();
    assert_eq!(&written[..3_000_000], &data[..]);
    assert_eq!(&written[3_000_000..3_000_004], b"tail");
}

#[test]
fn copies_to_a_pipe() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let input = mapped(&dir, &vec![7u8; 2 << 20]);
    assert!(input.file().is_some());
    let mut child = Command::new("wc")
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stdin);
    // As `-o /dev/stdout` on a pipe reaches it: written in place.
    let mut out = Output::create(Path::new(&format!("/proc/self/fd/{fd}"))).unwrap();
    // Aligned source, and misaligned.
    input.copy_to(input.bytes(), &mut out).unwrap();
    input.copy_to(&input.bytes()[1..], &mut out).unwrap();
    out.commit().unwrap();
    drop(stdin);
    let got = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "4194303");
}

#[test]
fn an_input_that_shrinks_is_an_error_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let input = mapped(&dir, &vec![7u8; 4 << 20]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("in"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    // Written from the mapping (misaligned), and copied file to file.
    for (from, prefix) in [(1, 1), (0, 0)] {
        let mut out = tempfile::tempfile().unwrap();
        out.write_all(&b"x"[..prefix]).unwrap();
        let e = input.copy_to(&input.bytes()[from..], &mut out).unwrap_err();
        assert_eq!(e.to_string(), "input file shrank while reading", "{from}");
    }
}

#[test]
fn copies_aligned_and_misaligned_ranges_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    // Over two chunks, with a tail that is not a whole page.
    let len = 2 * COPY_CHUNK + 12_345;
    let data: Vec<u8> = (0..u32::try_from(len).unwrap())
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    let input = mapped(&dir, &data);
    assert!(input.file().is_some());
    // (source start, destination prefix): both aligned (file-to-file
    // copy), either one misaligned (written from the mapping).
    for (from, prefix) in [(0, 0), (4096, 8192), (4096, 100), (200, 4096), (13, 7)] {
        let sub = &input.bytes()[from..];
        let mut out = tempfile::tempfile().unwrap();
        out.write_all(&vec![0xAB; prefix]).unwrap();
        input.copy_to(sub, &mut out).unwrap();
        out.write_all(b"end").unwrap();
        let mut written = Vec::new();
        out.seek(SeekFrom::Start(0)).unwrap();
        out.read_to_end(&mut written).unwrap();
        assert_eq!(written.len(), prefix + sub.len() + 3, "{from} {prefix}");
        assert!(written[..prefix].iter().all(|&b| b == 0xAB));
        assert!(
            written[prefix..prefix + sub.len()] == data[from..],
            "{from} {prefix}"
        );
        assert_eq!(&written[prefix + sub.len()..], b"end");
    }
    // The input reads the same after its pages were given back.
    assert!(input.bytes() == &data[..]);
}
