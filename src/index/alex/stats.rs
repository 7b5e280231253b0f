//! Node statistics, with memory counted from the nodes' actual allocations.

use super::{Alex, AlexKey, Node};

/// Counts of structural operations since the index was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub expansions: u64,
    pub contractions: u64,
    pub splits_sideways: u64,
    pub splits_downward: u64,
    pub parent_expansions: u64,
    pub root_expansions: u64,
}

/// A snapshot of the structure.
#[derive(Clone, Debug, PartialEq)]
pub struct AlexStats {
    pub num_keys: usize,
    pub model_nodes: usize,
    pub data_nodes: usize,
    /// Nodes on the longest root-to-data-node path (a lone data-node root is depth 1).
    pub max_depth: usize,
    /// Mean depth over data nodes.
    pub avg_depth: f64,
    /// Mean depth over keys (what a uniformly chosen present key's lookup traverses).
    pub avg_key_depth: f64,
    /// Heap bytes held by the structure: the node arena's capacity plus every heap-allocated
    /// slot, bitmap and child array (exact allocation sizes), plus the free list.
    pub bytes: usize,
    /// Bytes of the arrays still lying in a mapped image (`Alex::from_image`), or in an image
    /// read into memory (`Alex::read_image`), not on the heap.
    pub mapped_bytes: usize,
    /// Length of the mapped image this index reads from (0 without one): it stays mapped while
    /// any node lies in it, including the bytes of nodes rebuilt on the heap since.
    pub image_bytes: usize,
    /// Total slots of all data nodes (keys + gaps).
    pub data_slots: usize,
    /// `num_keys / data_slots`.
    pub density: f64,
    pub root_fanout: usize,
    pub max_fanout: usize,
    pub counters: Counters,
}

impl<K: AlexKey> Alex<K> {
    pub(crate) fn compute_stats(&self) -> AlexStats {
        let mut st = AlexStats {
            num_keys: self.len,
            model_nodes: 0,
            data_nodes: 0,
            max_depth: 0,
            avg_depth: 0.0,
            avg_key_depth: 0.0,
            bytes: self.nodes.capacity() * std::mem::size_of::<Node<K>>()
                + self.free.capacity() * std::mem::size_of::<u32>(),
            mapped_bytes: 0,
            image_bytes: self.image.as_ref().map_or(0, |m| m.len()),
            data_slots: 0,
            density: 0.0,
            root_fanout: 1,
            max_fanout: 0,
            counters: self.counters,
        };
        let mut depth_sum = 0usize;
        let mut key_depth_sum = 0f64;
        let mut stack = vec![(self.root, 1usize)];
        while let Some((id, depth)) = stack.pop() {
            match &self.nodes[id as usize] {
                Node::Model(m) => {
                    st.model_nodes += 1;
                    let b = std::mem::size_of_val(&*m.children);
                    if m.children.is_mapped() {
                        st.mapped_bytes += b;
                    } else {
                        st.bytes += b;
                    }
                    st.max_fanout = st.max_fanout.max(m.fanout());
                    if id == self.root {
                        st.root_fanout = m.fanout();
                    }
                    let mut prev = u32::MAX;
                    for &c in m.children.iter() {
                        if c != prev {
                            stack.push((c, depth + 1));
                            prev = c;
                        }
                    }
                }
                Node::Data(d) => {
                    st.data_nodes += 1;
                    let (heap, mapped) = d.array_bytes();
                    st.bytes += heap;
                    st.mapped_bytes += mapped;
                    st.data_slots += d.cap();
                    st.max_depth = st.max_depth.max(depth);
                    depth_sum += depth;
                    key_depth_sum += (depth * d.num_keys) as f64;
                }
                Node::Free => {}
            }
        }
        if st.data_nodes > 0 {
            st.avg_depth = depth_sum as f64 / st.data_nodes as f64;
        }
        if st.num_keys > 0 {
            st.avg_key_depth = key_depth_sum / st.num_keys as f64;
        }
        if st.data_slots > 0 {
            st.density = st.num_keys as f64 / st.data_slots as f64;
        }
        st
    }
}
