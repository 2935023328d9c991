//! Where the next unit of a write stream goes: the stream's open block on the plane its
//! cursor points at (a free block opened when it has none), page by page over the planes in
//! striping order; a page that fills is reported for programming, and a block that fills is
//! closed and listed with its pool's victims.

use super::{array_block, div_rem, divides, Block, Error, Ftl, P2l, Pool, Result, State, NIL};
use crate::ids::BlockId;
use crate::media::nand::FlashOp;

/// A slot given to a write: its number, and its block and offset in that block.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub at: u64,
    pub block: u32,
    pub offset: u32,
}

impl Ftl {
    /// The next free slot of `stream` of pool `p`; reports a program when a page fills.
    // Inlined into its two callers (a host write, a GC move): a call's saving and restoring of
    // registers cost as much as its common path.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub(super) fn allocate(&mut self, p: usize, stream: usize, sink: &mut impl FnMut(FlashOp)) -> Result<Slot> {
        let s = &self.pools[p].streams[stream];
        let mut plane = self.order[s.cursor] as usize;
        let mut block = s.active[plane];
        if block == NIL {
            (plane, block) = self.open_block(p, stream)?;
        }
        Ok(self.take_slot(p, stream, plane, block, sink))
    }

    /// The plane the stream's cursor reaches first, in striping order, that has an open block
    /// or a free block to open (which it opens); the cursor is left at that plane.
    #[inline(never)]
    fn open_block(&mut self, p: usize, stream: usize) -> Result<(usize, u32)> {
        let bpp = self.g.blocks_per_plane;
        let Ftl { pools, order, blocks, p2l, .. } = self;
        open_next(&mut pools[p], stream, order, blocks, p2l, bpp).ok_or_else(|| Error::Invariant { component: "ftl", detail: "no free block in any plane: GC could not keep up".into() })
    }

    /// Takes the next slot of `block`, the stream's open block on `plane`: reports a program
    /// when a page (or a die's share of a superblock's page) fills, moves the cursor on when a
    /// page fills, and closes the block when it is full.
    // Inlined into `allocate`, so that the common path makes no call.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn take_slot(&mut self, p: usize, stream: usize, plane: usize, block: u32, sink: &mut impl FnMut(FlashOp)) -> Slot {
        let spp = self.g.slots_per_page;
        let spb = self.g.slots_per_block();
        let planes = self.order.len();
        let s = &mut self.pools[p].streams[stream];
        let offset = s.written[plane];
        let written = offset + 1;
        s.written[plane] = written;
        let page_full = divides(spp, written);
        if page_full {
            s.cursor = if s.cursor + 1 == planes { 0 } else { s.cursor + 1 };
        }
        let full = written == spb;
        if full {
            s.active[plane] = NIL;
        }
        // (The sink sees nothing of the FTL's state, so reporting after the stream moved on
        // is as reporting before.)
        if self.group == 1 {
            if page_full {
                sink(FlashOp::Program { block: BlockId(block), page: div_rem(u64::from(offset), u64::from(spp)).0 as u32, gc: self.is_gc_stream(stream) });
            }
        } else {
            let (die_planes, bpp) = (self.pg.planes, self.g.blocks_per_plane);
            if divides(die_planes * self.pg.slots_per_page, written) {
                // A die's share of the page is full: its planes program it together (block `k`
                // of each plane; a superblock's dies in turn).
                let die_units = die_planes * self.pg.slots_per_page;
                let first = array_block(bpp, self.group, block, (offset % spp) / die_units * die_planes);
                sink(FlashOp::ProgramPlanes { block: BlockId(first), page: offset / spp, gc: self.is_gc_stream(stream), planes: die_planes });
            }
        }
        if full {
            self.close(block);
        }
        Slot { at: u64::from(block) * u64::from(spb) + u64::from(offset), block, offset }
    }

    /// Marks an open block full and lists it with its pool's victims.
    pub(super) fn close(&mut self, block: u32) {
        self.closed_seq = self.closed_seq.wrapping_add(1);
        let b = &mut self.blocks[block as usize];
        b.state = State::Full;
        b.closed = self.closed_seq;
        let (valid, p) = (b.valid, usize::from(b.pool));
        self.pools[p].victims.list(&mut self.links, block, valid);
    }
}

/// [`Ftl::open_block`] on the fields it needs, borrowed apart (for a caller that holds others):
/// none if no plane has an open or a free block.
#[inline]
pub(super) fn open_next(pool: &mut Pool, stream: usize, order: &[u32], blocks: &mut [Block], p2l: &mut P2l, bpp: u32) -> Option<(usize, u32)> {
    let planes = order.len();
    let mut cursor = pool.streams[stream].cursor;
    for _ in 0..=planes {
        let plane = order[cursor] as usize;
        let s = &mut pool.streams[stream];
        let block = s.active[plane];
        if block != NIL {
            s.cursor = cursor;
            return Some((plane, block));
        }
        if let Some(b) = pool.take_free(plane, bpp) {
            blocks[b as usize].state = State::Open;
            p2l.open(b);
            let s = &mut pool.streams[stream];
            s.cursor = cursor;
            s.active[plane] = b;
            s.written[plane] = 0;
            return Some((plane, b));
        }
        // This plane has no free block: try the next one in order.
        cursor = if cursor + 1 == planes { 0 } else { cursor + 1 };
    }
    pool.streams[stream].cursor = cursor;
    None
}
