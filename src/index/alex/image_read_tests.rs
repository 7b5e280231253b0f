//! Tests of opening an image read into memory (`image_read.rs`): the same index as the mapped
//! image gives, writable without touching the file, and every damaged chunk refused.

use super::image::{chunks, ImageError, CHUNK_SLOTS};
use super::*;

/// Keys in runs of different densities, so the index has model nodes, data nodes of several
/// chunks and an image of several 2 MiB reads.
fn rows() -> Vec<(i64, u64)> {
    (0..400_000i64)
        .map(|i| {
            let k = if i % 4 == 0 { i * 1_000 } else { i * 7 + (1 << 40) };
            (k, i as u64)
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

fn write(dir: &std::path::Path, b: &[u8]) -> std::path::PathBuf {
    let path = dir.join("read.alex");
    std::fs::write(&path, b).unwrap();
    path
}

/// A data node's record fields: (slots offset, capacity, bitmap offset).
fn data_record(b: &[u8], id: usize) -> (usize, usize, usize) {
    let r = 128 + 112 * id;
    let u = |at: usize| u64::from_le_bytes(b[r + at..r + at + 8].try_into().unwrap()) as usize;
    (u(8), u(16), u(24))
}

#[test]
fn an_image_read_into_memory_is_the_index_and_writes_leave_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let rows = rows();
    let t = Alex::bulk_load(&rows).unwrap();
    let b = t.to_image([7, 8, 9, 10], |_| true).unwrap();
    assert!(b.len() > 3 * (2 << 20), "an image of {} bytes", b.len());
    let path = write(dir.path(), &b);
    let (mut a, tag) = Alex::<i64>::read_image(&path).unwrap();
    assert_eq!(tag, [7, 8, 9, 10]);
    assert!(a.lazy.is_none());
    assert_eq!(a.stats().image_bytes, b.len());
    assert_eq!(a.iter().collect::<Vec<_>>(), rows);
    a.check_invariants().unwrap();
    // Updates, inserts and removes across the whole index, as a replay makes them.
    let mut model: std::collections::BTreeMap<i64, u64> = rows.iter().copied().collect();
    for (i, &(k, _)) in rows.iter().enumerate().step_by(97) {
        match i % 3 {
            0 => {
                a.remove(k);
                model.remove(&k);
            }
            1 => {
                a.upsert(k, 1 << 50 | i as u64);
                model.insert(k, 1 << 50 | i as u64);
            }
            _ => {
                a.upsert(k + 1, i as u64);
                model.insert(k + 1, i as u64);
            }
        }
    }
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        model.into_iter().collect::<Vec<_>>()
    );
    a.check_invariants().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b);
    // Nothing of it is a file page: nothing to promote.
    assert!(!a.image.as_ref().unwrap().promotion_pending());
}

/// One byte changed anywhere in the data nodes' arrays (the first slot of the first node, a
/// slot and a bitmap word in the middle chunk of the largest node, the last bitmap word of
/// the last node) or in a model node's children: the read refuses the image, naming the node.
#[test]
fn reading_an_image_refuses_every_damaged_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let t = Alex::bulk_load(&rows()).unwrap();
    let b = t.to_image([0; 4], |_| true).unwrap();
    let data: Vec<usize> = (0..t.nodes.len())
        .filter(|&id| matches!(t.nodes[id], Node::Data(_)))
        .collect();
    let model = (0..t.nodes.len())
        .find(|&id| matches!(t.nodes[id], Node::Model(_)))
        .expect("a model node");
    let largest = *data.iter().max_by_key(|&&id| data_record(&b, id).1).unwrap();
    let (so, cap, bo) = data_record(&b, largest);
    assert!(chunks(cap) >= 3, "a node of {cap} slots");
    let mid = chunks(cap) / 2;
    let (first, last) = (data[0], *data.last().unwrap());
    let (last_bo, last_cap) = (data_record(&b, last).2, data_record(&b, last).1);
    let children = {
        let r = 128 + 112 * model;
        u64::from_le_bytes(b[r + 40..r + 48].try_into().unwrap()) as usize
    };
    let cases = [
        (data_record(&b, first).0, first),
        (so + 16 * (mid * CHUNK_SLOTS + 5) + 8, largest),
        (bo + 8 * (mid * CHUNK_SLOTS / 64) + 3, largest),
        (last_bo + 8 * (last_cap.div_ceil(64) - 1), last),
        (children, model),
    ];
    for (at, node) in cases {
        let mut d = b.clone();
        d[at] ^= 0x04;
        let path = write(dir.path(), &d);
        match Alex::<i64>::read_image(&path) {
            Err(ImageError::Checksum(what)) => assert_eq!(what, format!("node {node}"), "byte {at}"),
            other => panic!("byte {at}: {:?}", other.map(|_| ())),
        }
    }
    // And the undamaged image is read.
    assert!(Alex::<i64>::read_image(&write(dir.path(), &b)).is_ok());
}

/// A file cut short, or empty, is refused, not read past its end.
#[test]
fn a_short_image_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = Alex::bulk_load(&rows())
        .unwrap()
        .to_image([0; 4], |_| true)
        .unwrap();
    for len in [0, 100, 4096, b.len() / 2, b.len() - 1] {
        match Alex::<i64>::read_image(&write(dir.path(), &b[..len])) {
            Err(ImageError::Invalid(_)) => {}
            other => panic!("{len} bytes: {:?}", other.map(|_| ())),
        }
    }
}
