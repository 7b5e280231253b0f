//! Opening an index image by reading it into memory rather than mapping it: for an open that is
//! about to write into most of the image (a dense replay after an unclean stop). One sequential
//! read of the file into anonymous memory (`Mapping::anonymous`) takes the place of the checksum
//! pass over a mapping and of the copy-on-write of each of its pages that the writes would
//! cause; every chunk of every data node is checked as it lands, so no byte of the result is
//! unchecked, and an image that fails is refused exactly as `Alex::from_image` with
//! `Checks::All` refuses it.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::data_node::Slot;
use super::image::{
    chunk_span, chunk_sum, chunks, hash, table_end, DataArrays, ImageError, ImageTag, Parsed,
};
use super::{Alex, AlexKey};
use crate::index::mapped::{advise_sequential, Mapping};

/// Bytes read per `pread`: one huge page, so that what was just read is checked while it is
/// still in the processor's caches.
const PIECE: usize = 2 << 20;

/// A check to make once the image is read up to `ready`: hash a chunk's slots, or finish a
/// chunk's checksum with its bitmap words (after its slots: `Finish` sorts after `Slots`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Slots,
    Finish,
}

/// One check of the read: `step` over the bytes `range` of chunk `chunk` (its index in the
/// chunk table) of data node `id`, once the image is read up to `ready`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Check {
    ready: usize,
    step: Step,
    chunk: usize,
    id: usize,
    range: (usize, usize),
}

fn io(path: &Path, what: &str, e: std::io::Error) -> ImageError {
    ImageError::Invalid(format!("{}: {what}: {e}", path.display()))
}

impl<K: AlexKey> Alex<K> {
    /// Opens an index from the image file at `path`, read into anonymous memory (advised to
    /// be transparent huge pages) instead of mapped: its arrays lie in that memory, which
    /// writes change without copying a page. Checks everything `Alex::from_image` with
    /// `Checks::All` does, each data node's chunk as soon as it is read. Returns the image's
    /// tag.
    pub(crate) fn read_image(path: &Path) -> Result<(Self, ImageTag), ImageError> {
        let file = File::open(path).map_err(|e| io(path, "open", e))?;
        let total = file.metadata().map_err(|e| io(path, "metadata", e))?.len() as usize;
        if total == 0 {
            return Err(ImageError::Invalid(format!(
                "{}: empty image file",
                path.display()
            )));
        }
        advise_sequential(&file);
        let mut map = Mapping::anonymous(total).map_err(|e| io(path, "allocate", e))?;
        let buf = map.bytes_mut();
        let mut landed = 0;
        let read_to = |landed: &mut usize, to: usize, buf: &mut [u8]| -> Result<(), ImageError> {
            while *landed < to {
                let end = (*landed + PIECE).min(to);
                file.read_exact_at(&mut buf[*landed..end], *landed as u64)
                    .map_err(|e| io(path, "read", e))?;
                *landed = end;
            }
            Ok(())
        };
        // The header, then the directory and the chunk table it gives the size of.
        read_to(&mut landed, PIECE.min(total), buf)?;
        let head = table_end(&buf[..landed]).unwrap_or(0).min(total);
        let to = head.max(landed);
        read_to(&mut landed, to, buf)?;
        let parsed = Parsed::<K>::parse(&buf[..landed], total)?;
        let mut checks = data_checks::<K>(&parsed.data_arrays());
        checks.sort_unstable();
        let mut slot_hash = vec![0u64; parsed.sums.len()];
        let mut next = 0;
        loop {
            while let Some(c) = checks.get(next).filter(|c| c.ready <= landed) {
                let bytes = &buf[c.range.0..c.range.1];
                match c.step {
                    Step::Slots => slot_hash[c.chunk] = hash(bytes),
                    Step::Finish => {
                        if chunk_sum(slot_hash[c.chunk], bytes) != parsed.sums[c.chunk] {
                            return Err(ImageError::Checksum(format!("node {}", c.id)));
                        }
                    }
                }
                next += 1;
            }
            if landed == total {
                break;
            }
            let to = (landed + PIECE).min(total);
            read_to(&mut landed, to, buf)?;
        }
        parsed.check_models(buf)?;
        parsed.assemble(Arc::new(map), None)
    }
}

/// The checks of every data node's chunks (`image::chunk_sum`: the hash of the chunk's
/// slots, then the hash of its bitmap words seeded with it), each ready once the bytes it
/// reads are read.
fn data_checks<K: AlexKey>(nodes: &[DataArrays]) -> Vec<Check> {
    let slot = std::mem::size_of::<Slot<K>>();
    let mut out = Vec::new();
    for d in nodes {
        let cap = (d.slots.1 - d.slots.0) / slot;
        let words = (d.bitmap.1 - d.bitmap.0) / 8;
        for c in 0..chunks(cap) {
            let (s, w) = chunk_span(cap, words, c);
            let slots = (d.slots.0 + s.start * slot, d.slots.0 + s.end * slot);
            let bitmap = (d.bitmap.0 + w.start * 8, d.bitmap.0 + w.end * 8);
            let chunk = d.first_chunk + c;
            out.push(Check {
                ready: slots.1,
                step: Step::Slots,
                chunk,
                id: d.id,
                range: slots,
            });
            out.push(Check {
                ready: slots.1.max(bitmap.1),
                step: Step::Finish,
                chunk,
                id: d.id,
                range: bitmap,
            });
        }
    }
    out
}
