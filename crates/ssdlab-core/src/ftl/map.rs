//! The logical-to-physical map, sparse so that its memory follows the touched footprint: a
//! directory of fixed-size leaves, a leaf allocated on the first write into its range. A 16 TiB
//! drive costs 8 B of directory per 16 MiB of logical space (at 4 KiB units) plus 32 KiB per
//! touched leaf.

/// A slot value meaning "not mapped".
pub const UNMAPPED: u64 = u64::MAX;

const LEAF_BITS: u32 = 12;
const LEAF: usize = 1 << LEAF_BITS;

/// An all-unmapped leaf, built on the heap (32 KiB is too much for the stack).
fn new_leaf() -> Box<[u64; LEAF]> {
    vec![UNMAPPED; LEAF].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("the vector has LEAF entries"))
}

/// Logical page → physical slot.
pub struct L2p {
    leaves: Vec<Option<Box<[u64; LEAF]>>>,
    mapped: u64,
}

impl L2p {
    /// A map for `units` logical pages, all unmapped.
    pub fn new(units: u64) -> Self {
        let n = units.div_ceil(LEAF as u64) as usize;
        let mut leaves = Vec::with_capacity(n);
        leaves.resize_with(n, || None);
        L2p { leaves, mapped: 0 }
    }

    #[inline]
    pub fn get(&self, lpn: u64) -> u64 {
        match &self.leaves[(lpn >> LEAF_BITS) as usize] {
            Some(leaf) => leaf[(lpn as usize) & (LEAF - 1)],
            None => UNMAPPED,
        }
    }

    /// Sets the slot of `lpn` and returns the previous one.
    #[inline]
    pub fn set(&mut self, lpn: u64, slot: u64) -> u64 {
        let leaf = self.leaves[(lpn >> LEAF_BITS) as usize].get_or_insert_with(new_leaf);
        let old = std::mem::replace(&mut leaf[(lpn as usize) & (LEAF - 1)], slot);
        match (old == UNMAPPED, slot == UNMAPPED) {
            (true, false) => self.mapped += 1,
            (false, true) => self.mapped -= 1,
            _ => {}
        }
        old
    }

    /// Maps an `lpn` known to be unmapped (bulk construction: a store, no read of the old slot).
    #[inline]
    pub fn insert_new(&mut self, lpn: u64, slot: u64) {
        let leaf = self.leaves[(lpn >> LEAF_BITS) as usize].get_or_insert_with(new_leaf);
        leaf[(lpn as usize) & (LEAF - 1)] = slot;
        self.mapped += 1;
    }

    /// Logical pages currently mapped.
    pub fn mapped(&self) -> u64 {
        self.mapped
    }

    /// Bytes held by allocated leaves and the directory.
    pub fn heap_bytes(&self) -> usize {
        self.leaves.len() * 8 + self.leaves.iter().filter(|l| l.is_some()).count() * LEAF * 8
    }

    /// Every mapped `(lpn, slot)` (for integrity checks).
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.leaves.iter().enumerate().filter_map(|(i, l)| l.as_ref().map(|l| (i, l))).flat_map(|(i, leaf)| {
            leaf.iter().enumerate().filter(|(_, s)| **s != UNMAPPED).map(move |(j, s)| (((i as u64) << LEAF_BITS) + j as u64, *s))
        })
    }
}

/// Physical slot → logical page, kept only for blocks that hold data: one chunk of
/// `slots_per_block` entries per written block, recycled when the block is erased.
pub struct P2l {
    chunk: usize,
    index: Vec<u32>,
    pool: Vec<u64>,
    spare: Vec<u32>,
}

const NO_CHUNK: u32 = u32::MAX;

impl P2l {
    pub fn new(blocks: usize, slots_per_block: usize) -> Self {
        P2l { chunk: slots_per_block, index: vec![NO_CHUNK; blocks], pool: Vec::new(), spare: Vec::new() }
    }

    /// Gives `block` an all-invalid chunk (when it is opened for writing).
    pub fn open(&mut self, block: u32) {
        let c = if let Some(c) = self.spare.pop() {
            let s = c as usize * self.chunk;
            self.pool[s..s + self.chunk].fill(UNMAPPED);
            c
        } else {
            self.pool.resize(self.pool.len() + self.chunk, UNMAPPED);
            (self.pool.len() / self.chunk - 1) as u32
        };
        self.index[block as usize] = c;
    }

    /// Releases the chunk of an erased block.
    pub fn close(&mut self, block: u32) {
        let c = std::mem::replace(&mut self.index[block as usize], NO_CHUNK);
        if c != NO_CHUNK {
            self.spare.push(c);
        }
    }

    #[inline]
    fn at(&self, block: u32) -> usize {
        self.index[block as usize] as usize * self.chunk
    }

    #[inline]
    pub fn get(&self, block: u32, offset: u32) -> u64 {
        if self.index[block as usize] == NO_CHUNK {
            return UNMAPPED;
        }
        self.pool[self.at(block) + offset as usize]
    }

    #[inline]
    pub fn set(&mut self, block: u32, offset: u32, lpn: u64) {
        let at = self.at(block) + offset as usize;
        self.pool[at] = lpn;
    }

    pub fn heap_bytes(&self) -> usize {
        self.index.len() * 4 + self.pool.capacity() * 8 + self.spare.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_map_allocates_only_touched_leaves() {
        let mut m = L2p::new(1 << 32); // 16 TiB of 4 KiB pages
        assert!(m.heap_bytes() < 9 << 20);
        assert_eq!(m.get(123_456_789), UNMAPPED);
        assert_eq!(m.set(123_456_789, 7), UNMAPPED);
        assert_eq!(m.set(123_456_789, 8), 7);
        assert_eq!(m.get(123_456_789), 8);
        assert_eq!(m.mapped(), 1);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![(123_456_789, 8)]);
        m.set(123_456_789, UNMAPPED);
        assert_eq!(m.mapped(), 0);
    }

    #[test]
    fn p2l_chunks_are_recycled() {
        let mut p = P2l::new(4, 8);
        p.open(2);
        p.set(2, 3, 99);
        assert_eq!(p.get(2, 3), 99);
        p.close(2);
        p.open(1);
        assert_eq!(p.get(1, 3), UNMAPPED, "a recycled chunk starts invalid");
        assert_eq!(p.pool.len(), 8);
    }
}
