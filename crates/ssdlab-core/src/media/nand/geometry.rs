//! The shape of the NAND array as the FTL sees it, and the operations the FTL asks of it.

use crate::ids::{BlockId, DieId};
use crate::media::NandConfig;

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
