//! A flush (NVMe Flush with a volatile write cache): the FTL closes every partly filled page
//! of its open blocks with padding, so that each unit in the write buffer is in a page that
//! gets programmed. The padding slots hold nothing (no map entry points at them, and their
//! block counts them written but not valid, as GC will find).
//!
//! Leaves out: a drive that keeps the partial page in power-loss protected memory instead.

use super::{array_block, BlockId, FlashOp, Ftl, NIL};

impl Ftl {
    /// Pads every open block's partly filled page (a superblock's: the die's share of it) and
    /// programs it (reported to `sink`). Returns, per pool, the host units of padding written.
    pub fn pad_open_pages(&mut self, sink: &mut impl FnMut(FlashOp)) -> Vec<u64> {
        let spp = self.g.slots_per_page;
        let spb = self.g.slots_per_block();
        let bpp = self.g.blocks_per_plane;
        let (group, die_planes) = (self.group, self.pg.planes);
        let die_units = die_planes * self.pg.slots_per_page;
        let step = if group == 1 { spp } else { die_units };
        let mut padded = vec![0u64; self.pools.len()];
        for (p, pad) in padded.iter_mut().enumerate() {
            for stream in 0..self.pools[p].streams.len() {
                let is_gc = self.is_gc_stream(stream);
                for plane in 0..self.pools[p].streams[stream].active.len() {
                    let s = &mut self.pools[p].streams[stream];
                    let (block, w) = (s.active[plane], s.written[plane]);
                    if block == NIL || w % step == 0 {
                        continue;
                    }
                    let written = (w / step + 1) * step;
                    s.written[plane] = written;
                    let offset = written - 1;
                    if group == 1 {
                        sink(FlashOp::Program { block: BlockId(block), page: offset / spp, gc: is_gc });
                    } else {
                        let first = array_block(bpp, group, block, (offset % spp) / die_units * die_planes);
                        sink(FlashOp::ProgramPlanes { block: BlockId(first), page: offset / spp, gc: is_gc, planes: die_planes });
                    }
                    if !is_gc {
                        *pad += u64::from(written - w);
                    }
                    if written == spb {
                        self.pools[p].streams[stream].active[plane] = NIL;
                        self.close(block);
                    }
                }
            }
        }
        padded
    }
}
