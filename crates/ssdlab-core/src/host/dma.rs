//! Host memory as the device's DMAs see it: where each queue's SQ and CQ rings, PRP lists and
//! data buffers live, laid out as `host.dma_layout` says (Linux nvme-pci with O_DIRECT buffers,
//! the page cache, or dma-iommu IOVAs; SPDK hugepages), one address space per VM.
//!
//! Leaves out: the host's own accesses to these pages (only device-initiated DMAs have
//! addresses), and IOVA allocation failures.

use rand::SeedableRng;

use super::HostConfig;
use crate::ats::synth::{DmaLayout, Layout};
use crate::ats::Access;
use crate::cmd::Command;
use crate::ids::TenantId;
use crate::nvme::{CQE_BYTES, PRP_ENTRY_BYTES, SQE_BYTES};
use crate::pcie::Tlp;

/// Bytes of one host memory page.
const PAGE: u64 = 4096;

/// The DMA address spaces of the host: one layout per VM. With `[[tenants]]` each tenant is a
/// VM and its jobs its queues; otherwise job `j` is queue `j / vms` of VM `j mod vms`.
pub struct HostMemory {
    layouts: Vec<Layout>,
    /// Per job: its VM (address space, PASID) and its queue there.
    places: Vec<(usize, usize)>,
    /// Per job: SQ entries written so far (the next slot).
    tails: Vec<u64>,
    rng: crate::sim::Rng,
    seq: u64,
}

impl HostMemory {
    /// The memory of host `h` for its jobs: without tenants `jobs` jobs spread over `host.vms`
    /// VMs; with tenants (`tenants`: each job's), one VM per tenant. Buffers are sized for I/Os
    /// of up to `max_bs` bytes; `seed` seeds the layouts' random choices.
    pub fn new(h: &HostConfig, jobs: usize, tenants: Option<&[TenantId]>, max_bs: u64, seed: u64) -> Self {
        let places: Vec<(usize, usize)> = match tenants {
            None => {
                let vms = (h.vms as usize).clamp(1, jobs.max(1));
                (0..jobs).map(|j| (j % vms, j / vms)).collect()
            }
            Some(tenants) => {
                let mut found: Vec<(TenantId, usize)> = Vec::new();
                tenants
                    .iter()
                    .map(|t| {
                        if let Some(i) = found.iter().position(|(tenant, _)| tenant == t) {
                            found[i].1 += 1;
                            (i, found[i].1 - 1)
                        } else {
                            found.push((*t, 1));
                            (found.len() - 1, 0)
                        }
                    })
                    .collect()
            }
        };
        let vms = places.iter().map(|p| p.0 + 1).max().unwrap_or(1);
        let layouts = (0..vms)
            .map(|vm| {
                // The VMs slice the host: each has its share of the memory and buffer pool.
                let queues = places.iter().filter(|p| p.0 == vm).count() as u32;
                let n = vms as u64;
                let (memory, pool) = ((h.memory.0 / n).max(4 << 20), (h.buffer_pool.0 / n).max(2 << 20));
                Layout::new(h.dma_layout, h.buffer_reuse, queues.max(1), memory, pool, 2 << 20, max_bs.max(4096), seed, vm as u32)
            })
            .collect();
        HostMemory { layouts, places, tails: vec![0; jobs], rng: crate::sim::Rng::from_seed(crate::sim::stream_seed(seed, 0xD4A).to_le_bytes()), seq: 0 }
    }

    /// The SQ and CQ ring ranges of every VM, as `(pasid, start, end)`.
    pub fn rings(&self) -> Vec<(u32, u64, u64)> {
        self.layouts.iter().enumerate().flat_map(|(vm, l)| l.rings().into_iter().map(move |(s, e)| (vm as u32, s, e))).collect()
    }

    /// Distinct STU pages (of `2^(12 + stu)` bytes) the SQ/CQ rings of every VM cover: what
    /// pinning them takes of an ATC.
    pub fn ring_pages(&self, stu: u32) -> usize {
        let shift = 12 + stu;
        let mut pages: Vec<(u32, u64)> = self.rings().into_iter().flat_map(|(vm, s, e)| ((s >> shift)..=((e - 1) >> shift)).map(move |p| (vm, p))).collect();
        pages.sort_unstable();
        pages.dedup();
        pages.len()
    }

    /// The address space (PASID) and queue of a job.
    fn place(&self, job: usize) -> (usize, usize) {
        self.places[job]
    }

    /// Gives a new command of `job` its SQ slot and its data buffer.
    pub fn assign(&mut self, job: usize, c: &mut Command) {
        let (vm, q) = self.place(job);
        let lay = &mut self.layouts[vm];
        c.slot = self.tails[job] % lay.depth;
        self.tails[job] += 1;
        self.seq += 1;
        c.buf = match lay.stack {
            DmaLayout::LinuxBuffered => self.seq,
            DmaLayout::LinuxIommu => lay.map_iova(q, mapped_len(c)),
            _ => lay.take_buffer(&mut self.rng),
        };
    }

    /// The driver unmaps a finished command's buffer (dma-iommu).
    pub fn release(&mut self, c: &Command) {
        let (vm, q) = self.place(c.job.index());
        match self.layouts[vm].stack {
            DmaLayout::LinuxIommu => self.layouts[vm].unmap_iova(q, c.buf, mapped_len(c)),
            DmaLayout::LinuxBuffered => {}
            _ => self.layouts[vm].free_buffer(c.buf),
        }
    }

    /// The host pages a device DMA of `tlp` for `c` touches, appended to `out`.
    pub fn accesses(&self, c: &Command, tlp: Tlp, out: &mut Vec<Access>) {
        let (vm, q) = self.place(c.job.index());
        let pasid = vm as u32;
        let lay = &self.layouts[vm];
        let mut data = |from: u64, len: u64| {
            let mut at = from;
            while at < from + len {
                let page_end = (at / PAGE + 1) * PAGE;
                let n = page_end.min(from + len) - at;
                out.push(Access { addr: lay.data_page(c.buf, at / PAGE) + at % PAGE, size: n as u32, pasid, pinned: false });
                at += n;
            }
        };
        match tlp {
            Tlp::SqeRead => out.push(Access { addr: lay.sq[q] + (c.slot % lay.depth) * SQE_BYTES, size: SQE_BYTES as u32, pasid, pinned: true }),
            Tlp::Cqe => out.push(Access { addr: lay.cq[q] + (c.slot % lay.depth) * CQE_BYTES, size: CQE_BYTES as u32, pasid, pinned: true }),
            Tlp::PrpRead => out.push(Access { addr: lay.prp_pool[(c.slot as usize) % lay.prp_pool.len()], size: (c.prp_entries * PRP_ENTRY_BYTES) as u32, pasid, pinned: false }),
            Tlp::DataRead => data(0, c.data_len()),
            Tlp::DataOut { len, at } => data(u64::from(at), u64::from(len)),
            Tlp::SqDoorbell | Tlp::SqeData | Tlp::PrpData | Tlp::DataIn => {}
        }
    }
}
/// Bytes the driver maps for a command's data: a trim's is its range list.
fn mapped_len(c: &Command) -> u64 {
    if c.kind == crate::io::Kind::Deallocate {
        c.data_len()
    } else {
        c.len
    }
}
