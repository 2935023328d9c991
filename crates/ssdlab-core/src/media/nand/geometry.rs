//! The shape of the NAND array as the FTL sees it, and the operations the FTL asks of it.

use crate::ids::{BlockId, DieId};
use crate::media::NandConfig;
use crate::sim::Divisor;

/// The shape of the flash array as the FTL sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    /// Dies per channel (ways × dies per chip).
    pub dies_per_channel: u32,
    pub planes: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_size: u64,
    /// Mapping unit (logical page) in bytes.
    pub unit: u64,
    /// Mapping units per flash page.
    pub slots_per_page: u32,
}

impl Geometry {
    pub fn new(nand: &NandConfig, unit: u64) -> Self {
        Geometry {
            channels: nand.channels,
            dies_per_channel: nand.ways * nand.dies_per_chip,
            planes: nand.planes,
            blocks_per_plane: nand.blocks_per_plane,
            pages_per_block: nand.pages_per_block,
            page_size: nand.page_size.0,
            unit,
            slots_per_page: (nand.page_size.0 / unit.max(1)) as u32,
        }
    }
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }
    pub fn all_planes(&self) -> u32 {
        self.dies() * self.planes
    }
    pub fn blocks(&self) -> u32 {
        self.all_planes() * self.blocks_per_plane
    }
    pub fn slots_per_block(&self) -> u32 {
        self.pages_per_block * self.slots_per_page
    }
    pub fn raw_slots(&self) -> u64 {
        u64::from(self.blocks()) * u64::from(self.slots_per_block())
    }
    /// Global plane index of a block.
    #[inline]
    pub fn plane_of(&self, block: BlockId) -> u32 {
        block.0 / self.blocks_per_plane
    }
    /// Die of a block; die `d` sits on channel `d mod channels`.
    #[inline]
    pub fn die_of(&self, block: BlockId) -> DieId {
        DieId(block.0 / (self.blocks_per_plane * self.planes))
    }
    #[inline]
    pub fn channel_of_die(&self, die: DieId) -> u32 {
        die.0 % self.channels
    }
}

/// The geometry's divisors, ready for the arithmetic of every op (a block's die and plane, a
/// die's channel) without a hardware division: the same answers as [`Geometry`]'s.
#[derive(Clone, Copy, Debug)]
pub(super) struct Shape {
    per_plane: Divisor,
    planes: Divisor,
    per_die: Divisor,
    channels: Divisor,
}

impl Shape {
    pub(super) fn new(g: &Geometry) -> Self {
        Shape { per_plane: Divisor::new(g.blocks_per_plane), planes: Divisor::new(g.planes), per_die: Divisor::new(g.blocks_per_plane * g.planes), channels: Divisor::new(g.channels) }
    }

    /// [`Geometry::die_of`].
    #[inline]
    pub(super) fn die_of(self, block: BlockId) -> DieId {
        DieId(self.per_die.quotient(block.0))
    }

    /// [`Geometry::channel_of_die`].
    #[inline]
    pub(super) fn channel_of_die(self, die: DieId) -> u32 {
        self.channels.remainder(die.0)
    }

    /// The plane of a block within its die: [`Geometry::plane_of`] modulo the planes.
    #[inline]
    pub(super) fn plane_in_die(self, block: BlockId) -> u32 {
        self.planes.remainder(self.per_plane.quotient(block.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_answers_as_the_geometry() {
        for (channels, dies_per_channel, planes, blocks_per_plane) in [(8, 4, 2, 128), (3, 5, 3, 7), (1, 1, 1, 1), (6, 2, 4, 4096), (5, 3, 6, 1000)] {
            let g = Geometry { channels, dies_per_channel, planes, blocks_per_plane, pages_per_block: 8, page_size: 16_384, unit: 4096, slots_per_page: 4 };
            let s = Shape::new(&g);
            for b in 0..g.blocks() {
                let block = BlockId(b);
                let die = g.die_of(block);
                assert_eq!(s.die_of(block), die, "{g:?} block {b}");
                assert_eq!(s.plane_in_die(block), g.plane_of(block) % planes, "{g:?} block {b}");
                assert_eq!(s.channel_of_die(die), g.channel_of_die(die), "{g:?} die {die:?}");
            }
        }
    }
}

/// A flash operation the FTL asks of the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashOp {
    /// Program page `page` of `block` (all its slots are filled). `gc` marks GC writes.
    Program { block: BlockId, page: u32, gc: bool },
    /// Program page `page` of block `block` and of the blocks at its index in the next
    /// `planes - 1` planes of its die, all queued before any starts (a multi-plane program).
    ProgramPlanes { block: BlockId, page: u32, gc: bool, planes: u32 },
    /// GC reads page `page` of `block` to move its valid units.
    Read { block: BlockId, page: u32 },
    /// Erase `block`.
    Erase { block: BlockId },
    /// Load translation page `tpage` into the map cache (a page read).
    MapRead { tpage: u64 },
    /// Read translation page `tpage`'s unchanged entries before a write-back of a cache of
    /// single entries (a page read in the background).
    MapMerge { tpage: u64 },
    /// Write translation page `tpage` back (a page program).
    MapWrite { tpage: u64 },
}
