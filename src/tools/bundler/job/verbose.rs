//! LLVM 22's `-verbose` reports of the bundler, made from the statistics the
//! library returns ([`CompressReport`], [`Decompressed`]), with numbers
//! formatted as LLVM prints them.

use std::time::Duration;

use crate::bundle::ccob::{
    CompressReport, Decompressed, Header, Method, Streamed, hex_hash, truncated_md5,
};

/// The lines LLVM 22 prints with `-verbose` after compressing, each ending
/// in `\n`. `elapsed` is the time spent compressing (LLVM times the
/// compressor alone, not the hash).
pub fn compress_report(r: &CompressReport, elapsed: Duration) -> String {
    let h = &r.header;
    let rate = h.uncompressed_size as f64 / r.compressed_size as f64;
    format!(
        "Compressed bundle format version: {}\n\
         Total file size (including headers): {} bytes\n\
         Compression method used: {}\n\
         Compression level: {}\n\
         Binary size before compression: {} bytes\n\
         Binary size after compression: {} bytes\n\
         Compression rate: {}\n\
         Compression ratio: {}%\n\
         Compression speed: {} MB/s\n\
         Truncated MD5 hash: {}\n",
        h.version,
        with_commas(h.total_size.unwrap_or_default()),
        if h.method == Method::ZSTD {
            "zstd"
        } else {
            "zlib"
        },
        r.level,
        with_commas(h.uncompressed_size),
        with_commas(r.compressed_size),
        printf_2f(rate),
        printf_2f(100.0 / rate),
        printf_2f(speed(h.uncompressed_size, elapsed)),
        hex_hash(h.hash),
    )
}

/// The lines LLVM 22 prints with `-verbose` after decompressing `d`, each
/// ending in `\n`. `elapsed` is the decompression time (for the speed
/// line). Computes the hash if it was skipped.
pub fn decompress_report(d: &Decompressed, elapsed: Duration) -> String {
    let computed = d.computed_hash.unwrap_or_else(|| truncated_md5(&d.data));
    report(&d.header, d.compressed_size, computed, elapsed)
}

/// [`decompress_report`] for a CCOB decompressed as a stream, with its
/// hash computed.
pub fn decompress_report_streamed(s: &Streamed, elapsed: Duration) -> String {
    report(
        &s.header,
        s.compressed_size,
        s.computed_hash.unwrap_or_default(),
        elapsed,
    )
}

/// The lines of the decompression report.
fn report(h: &Header, compressed_size: u64, computed: u64, elapsed: Duration) -> String {
    let mut s = format!("Compressed bundle format version: {}\n", h.version);
    if let Some(total) = h.total_size {
        s += &format!(
            "Total file size (from header): {} bytes\n",
            with_commas(total)
        );
    }
    let rate = h.uncompressed_size as f64 / compressed_size as f64;
    s += &format!(
        "Decompression method: {}\n\
         Size before decompression: {} bytes\n\
         Size after decompression: {} bytes\n\
         Compression rate: {}\n\
         Compression ratio: {}%\n\
         Decompression speed: {} MB/s\n\
         Stored hash: {}\n\
         Recalculated hash: {}\n\
         Hashes match: {}\n",
        if h.method == Method::ZLIB {
            "zlib"
        } else {
            "zstd"
        },
        with_commas(compressed_size),
        with_commas(h.uncompressed_size),
        printf_2f(rate),
        printf_2f(100.0 / rate),
        printf_2f(speed(h.uncompressed_size, elapsed)),
        hex_hash(h.hash),
        hex_hash(computed),
        if computed == h.hash { "Yes" } else { "No" },
    );
    s
}

// ---------------------------------------------------------------------------
// Number formatting, as LLVM prints it

/// `1234567` → `"1,234,567"`, as LLVM's `formatWithCommas`.
fn with_commas(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A double as glibc's `printf("%.2lf")`. Rust rounds ties to even like
/// glibc; NaN differs: on x86-64 every NaN reaching LLVM's lines (0/0,
/// then propagated) has its sign set, which glibc prints `-nan`.
fn printf_2f(x: f64) -> String {
    if x.is_nan() {
        "-nan".into()
    } else {
        format!("{x:.2}")
    }
}

/// MB/s as LLVM computes it: MiB over seconds.
fn speed(bytes: u64, elapsed: Duration) -> f64 {
    (bytes as f64 / (1024.0 * 1024.0)) / elapsed.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::ccob::Header;

    /// The facts of the CCOB `clang-offload-bundler` 22 makes from a
    /// 257-byte bundle (see the library's CCOB tests).
    fn llvm_header(version: u16, total_size: Option<u64>) -> Header {
        Header {
            version,
            method: Method::ZSTD,
            total_size,
            uncompressed_size: 257,
            hash: 0xb327_753c_1dff_9eb8,
        }
    }

    fn decompressed(header: Header, compressed_size: u64, computed: Option<u64>) -> Decompressed {
        Decompressed {
            offset: 0,
            header,
            size: header.size() + compressed_size,
            compressed_size,
            data: vec![0; 4],
            computed_hash: computed,
        }
    }

    #[test]
    fn compression_report_matches_llvm() {
        let r = CompressReport {
            header: llvm_header(3, Some(178)),
            level: 3,
            compressed_size: 146,
        };
        // 257 B in 100 µs: 257 / 2^20 / 1e-4 = 2.45 MB/s.
        assert_eq!(
            compress_report(&r, Duration::from_micros(100)),
            "Compressed bundle format version: 3\n\
             Total file size (including headers): 178 bytes\n\
             Compression method used: zstd\n\
             Compression level: 3\n\
             Binary size before compression: 257 bytes\n\
             Binary size after compression: 146 bytes\n\
             Compression rate: 1.76\n\
             Compression ratio: 56.81%\n\
             Compression speed: 2.45 MB/s\n\
             Truncated MD5 hash: 0xb327753c1dff9eb8\n"
        );
        let r = CompressReport { level: -5, ..r };
        assert!(compress_report(&r, Duration::from_secs(1)).contains("Compression level: -5\n"));
    }

    #[test]
    fn decompression_report_matches_llvm() {
        for (v, total) in [(3, 178), (2, 170)] {
            let d = decompressed(
                llvm_header(v, Some(total)),
                146,
                Some(0xb327_753c_1dff_9eb8),
            );
            assert_eq!(
                decompress_report(&d, Duration::from_secs(0)),
                format!(
                    "Compressed bundle format version: {v}\n\
                     Total file size (from header): {total} bytes\n\
                     Decompression method: zstd\n\
                     Size before decompression: 146 bytes\n\
                     Size after decompression: 257 bytes\n\
                     Compression rate: 1.76\n\
                     Compression ratio: 56.81%\n\
                     Decompression speed: inf MB/s\n\
                     Stored hash: 0xb327753c1dff9eb8\n\
                     Recalculated hash: 0xb327753c1dff9eb8\n\
                     Hashes match: Yes\n"
                )
            );
        }
    }

    #[test]
    fn decompression_report_without_total_size_or_hash() {
        // v1 has no total size line.
        for m in [Method::ZSTD, Method::ZLIB] {
            let h = Header {
                method: m,
                ..llvm_header(1, None)
            };
            let r = decompress_report(&decompressed(h, 146, None), Duration::from_secs(1));
            assert!(r.starts_with(&format!(
                "Compressed bundle format version: 1\nDecompression method: {m}\n"
            )));
        }
        // A mismatch, computed or not (then it is computed for the report).
        let h = Header {
            hash: 0xb327_753c_1dff_9e47,
            ..llvm_header(3, Some(178))
        };
        let r = decompress_report(
            &decompressed(h, 146, Some(0xb327_753c_1dff_9eb8)),
            Duration::from_secs(1),
        );
        assert!(r.ends_with(
            "Stored hash: 0xb327753c1dff9e47\n\
             Recalculated hash: 0xb327753c1dff9eb8\n\
             Hashes match: No\n"
        ));
        let d = decompressed(h, 146, None);
        let r = decompress_report(&d, Duration::from_secs(1));
        assert!(r.ends_with(&format!(
            "Recalculated hash: {}\nHashes match: No\n",
            hex_hash(truncated_md5(&d.data))
        )));
    }

    #[test]
    fn empty_payload_report() {
        // 0 / 0 is a NaN with its sign set on x86-64: glibc prints "-nan".
        let h = Header {
            version: 3,
            method: Method::ZSTD,
            total_size: Some(32),
            uncompressed_size: 0,
            hash: truncated_md5(b""),
        };
        let d = Decompressed {
            data: Vec::new(),
            ..decompressed(h, 0, Some(truncated_md5(b"")))
        };
        assert_eq!(
            decompress_report(&d, Duration::from_secs(1)),
            "Compressed bundle format version: 3\n\
             Total file size (from header): 32 bytes\n\
             Decompression method: zstd\n\
             Size before decompression: 0 bytes\n\
             Size after decompression: 0 bytes\n\
             Compression rate: -nan\n\
             Compression ratio: -nan%\n\
             Decompression speed: 0.00 MB/s\n\
             Stored hash: 0x4b2008fd98c1dd4\n\
             Recalculated hash: 0x4b2008fd98c1dd4\n\
             Hashes match: Yes\n"
        );
    }

    #[test]
    fn number_formatting() {
        assert_eq!(with_commas(0), "0");
        assert_eq!(with_commas(999), "999");
        assert_eq!(with_commas(1000), "1,000");
        assert_eq!(with_commas(1_234_567), "1,234,567");
        assert_eq!(with_commas(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(printf_2f(1.125), "1.12");
        assert_eq!(printf_2f(f64::INFINITY), "inf");
        assert_eq!(printf_2f(f64::NAN), "-nan");
        // 150 B into 101 B (the spec's example): rate 1.49, ratio 67.33%.
        assert_eq!(printf_2f(150.0 / 101.0), "1.49");
        assert_eq!(printf_2f(100.0 / (150.0 / 101.0)), "67.33");
    }
}
