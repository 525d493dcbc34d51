//! Lists the OffloadBinary images in a file: a raw pack, an ELF or COFF
//! object, an executable, a shared library or an archive.
//!
//! ```sh
//! cargo run --example list_images -- app.o
//! ```

use offload_kit::Limits;
use offload_kit::offload_binary::find_images;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: list_images FILE")?;
    let data = std::fs::read(&path)?;
    let images = find_images(&data, &Limits::default()).map_err(|e| format!("'{path}': {e}"))?;
    for (i, f) in images.iter().enumerate() {
        let img = &f.image;
        println!(
            "{i}: {} {} triple={} arch={} {} bytes{}",
            img.offload_kind,
            img.image_kind,
            String::from_utf8_lossy(img.triple()),
            String::from_utf8_lossy(img.arch()),
            img.image.len(),
            f.member
                .as_deref()
                .map(|m| format!(" (member {m})"))
                .unwrap_or_default(),
        );
    }
    if images.is_empty() {
        eprintln!("'{path}': no OffloadBinary here");
    }
    Ok(())
}
