//! NVMe Flush on the flash device. With the volatile write cache off (`ftl.write_cache =
//! false`) every write completed once programmed, so a flush has nothing to wait for. With it
//! on, the FTL pads every partly filled page of its open blocks (so each unit in the buffer is
//! in a page that gets programmed), and the flush completes once every block's last written
//! page, GC's included, is programmed (a block's pages are programmed in order).

use super::{Ctx, FlashDevice};
use crate::ids::{BlockId, CmdId};
use crate::media::Out;
use crate::stats::Component;

/// A flush waiting for programs: the last written page of each block not yet programmed,
/// with the block's erase count then (a block erased since holds nothing to wait for: GC
/// found its data invalid, and the array dropped its queued programs).
pub(super) struct PendingFlush {
    id: CmdId,
    pages: Vec<(BlockId, u32, u64)>,
}

impl FlashDevice {
    /// Flush `id` has reached the drive.
    pub(super) fn flush(&mut self, ctx: &mut Ctx, id: CmdId) {
        if self.uncached.is_some() {
            ctx.at(ctx.now, Out::Done { cmd: id });
            return;
        }
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        let padded = self.ftl.pad_open_pages(&mut |op| ops.push(op));
        // The padding waits in the buffer as data would, until its page is programmed.
        for (pool, units) in padded.into_iter().enumerate() {
            let part = if self.buffer_used.len() == 1 { 0 } else { pool };
            self.buffer_used[part] += units;
            self.padded_units += units;
        }
        self.ops = ops;
        self.submit_ops(ctx.now);
        self.apply(ctx);
        let pages: Vec<(BlockId, u32, u64)> = (0..self.ftl.geometry().blocks())
            .map(BlockId)
            .filter_map(|b| {
                let written = self.ftl.written_pages(b);
                (written > 0 && !self.array.is_programmed(b, written - 1)).then(|| (b, written - 1, self.array.erasures(b)))
            })
            .collect();
        self.flushes.push(PendingFlush { id, pages });
        self.flushes_progress(ctx);
    }

    /// Host units of padding flushes wrote so far.
    pub fn flush_padding(&self) -> u64 {
        self.padded_units
    }

    /// Flushes whose pages are all programmed (or erased) complete now.
    pub(super) fn flushes_progress(&mut self, ctx: &mut Ctx) {
        let array = &self.array;
        self.flushes.retain_mut(|f| {
            f.pages.retain(|&(b, p, erased)| !array.is_programmed(b, p) && array.erasures(b) == erased);
            if f.pages.is_empty() {
                ctx.cmds[f.id].account(Component::Media, ctx.now);
                ctx.at(ctx.now, Out::Done { cmd: f.id });
            }
            !f.pages.is_empty()
        });
    }
}
