//! Synthetic DMA address streams laid out the way real host stacks lay out their memory
//! (../shared/reference/figures.md), for ATC studies when no trace exists.
//!
//! Linux nvme-pci: one queue pair per CPU, each ring one contiguous DMA region (SQ 1024 × 64 B =
//! 16 pages, CQ 1024 × 16 B = 4 pages); PRP lists from a page-sized dma_pool reused LIFO; data
//! buffers either from an application buffer pool reused by O_DIRECT I/O (allocated in
//! physically contiguous chunks placed anywhere in memory), or page-cache pages scattered over
//! memory for buffered I/O. SPDK: 256-entry rings and a buffer pool inside 2 MiB hugepages.
//! Each command emits its device-order lookups: SQE fetch, PRP list (transfers over two pages),
//! one lookup per data page, CQE post. Several VMs each get their own address space (PASID).
//!
//! With `linux-iommu`, data buffers are mapped per I/O by dma-iommu: each CPU keeps freed IOVAs
//! (up to 128 KiB) and reuses the most recently freed first, allocating new ones top-down from
//! the 48-bit DMA limit only when its cache is empty; an I/O's IOVA is freed when it completes
//! (here: once `qd` newer I/Os of the queue are in flight).
//!
//! Several VMs slice one host (`split`, the default): the host's queue pairs (vCPUs), memory and
//! buffer pool are divided among them, each VM keeping at least one queue pair and one pool
//! chunk, and each VM's rings and buffers lie in its own address space. Without `split` every VM
//! is a whole copy of the host.
//!
//! Buffers are reused the way allocators hand them out (`reuse`): `lifo` takes the most recently
//! freed buffer of the VM's pool (glibc/jemalloc free lists, SPDK's per-core mempool caches), so
//! the buffers in use are about the I/Os in flight; `random` picks any buffer of the pool.
//!
//! Leaves out: interrupt (MSI-X) writes, admin queues, IOVA sizes above 128 KiB (allocated
//! fresh each time by Linux, here from the same cache).

use rand::{RngExt, SeedableRng};

use super::Access;
use crate::sim::{stream_seed, Rng};

crate::config_enum! {
    /// How the host lays out the memory the device DMAs to (`host.dma_layout`, and the stack a
    /// synthesised stream mimics).
    pub enum DmaLayout {
        /// Linux nvme-pci, O_DIRECT from an application buffer pool.
        LinuxDirect = "linux-direct" | "linux",
        /// Linux nvme-pci, buffered I/O through page-cache pages scattered over memory.
        LinuxBuffered = "linux-buffered",
        /// Linux nvme-pci behind an IOMMU: data at per-CPU reused IOVAs (dma-iommu).
        LinuxIommu = "linux-iommu",
        /// SPDK: hugepage rings and buffer pool.
        Spdk = "spdk",
    }
}

crate::config_enum! {
    /// How an application takes a buffer from its pool (`host.buffer_reuse`).
    pub enum BufferReuse {
        /// The most recently freed buffer first (allocator free lists).
        Lifo = "lifo",
        /// Any buffer of the pool, uniformly.
        Random = "random",
    }
}

/// What to synthesise.
#[derive(Clone, Debug)]
pub struct Synth {
    pub stack: DmaLayout,
    /// Queue pairs (CPUs) of the host (of each VM without `split`).
    pub queues: u32,
    /// I/O size in bytes.
    pub bs: u64,
    /// Commands to emit.
    pub ios: u64,
    /// Virtual machines, each its own address space.
    pub vms: u32,
    /// Memory of the host (of each VM without `split`); buffers and page cache lie within it.
    pub memory: u64,
    /// Application buffer pool of the host (of each VM without `split`), O_DIRECT and SPDK.
    pub buffer_pool: u64,
    /// Physically contiguous chunk the buffer pool is allocated in.
    pub pool_chunk: u64,
    /// I/Os in flight per queue (`linux-iommu`: how long an IOVA stays mapped).
    pub qd: u32,
    pub seed: u64,
    /// VMs divide the host's queues, memory and buffer pool (else each is a whole host).
    pub split: bool,
    /// How buffers are taken from the pool.
    pub reuse: BufferReuse,
}

impl Default for Synth {
    fn default() -> Self {
        Synth {
            stack: DmaLayout::LinuxDirect,
            queues: 8,
            bs: 4096,
            ios: 1_000_000,
            vms: 1,
            memory: 64 << 30,
            buffer_pool: 64 << 20,
            pool_chunk: 2 << 20,
            qd: 32,
            seed: 1,
            split: true,
            reuse: BufferReuse::Lifo,
        }
    }
}

const PAGE: u64 = 4096;

/// Where one address space keeps its queues and buffers.
pub struct Layout {
    pub sq: Vec<u64>,
    pub cq: Vec<u64>,
    /// Entries per ring.
    pub depth: u64,
    pub prp_pool: Vec<u64>,
    /// Base addresses of the application buffers (O_DIRECT, SPDK).
    pub buffers: Vec<u64>,
    /// Pages of memory page-cache pages are drawn from (buffered I/O).
    pub memory_pages: u64,
    pub stack: DmaLayout,
    pub reuse: BufferReuse,
    /// Free buffers of the pool, the most recently freed last (`reuse = lifo`).
    free: Vec<u64>,
    tail: Vec<u64>,
    /// Per queue, the buffers of its I/Os in flight (the synthesised stream), oldest first.
    busy: Vec<std::collections::VecDeque<u64>>,
    /// `linux-iommu`: per queue, freed IOVAs with their size (most recent last), the IOVAs
    /// in flight (oldest first), and the next fresh IOVA.
    iova_free: Vec<Vec<(u64, u64)>>,
    iova_busy: Vec<std::collections::VecDeque<u64>>,
    iova_next: u64,
}

impl Layout {
    /// The layout of address space `vm`: `queues` ring pairs, buffers of `buffer_size` bytes in
    /// a pool of `buffer_pool` bytes allocated in `pool_chunk` pieces, in `memory` bytes (all
    /// of them this VM's own), buffers taken by `reuse`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(stack: DmaLayout, reuse: BufferReuse, queues: u32, memory: u64, buffer_pool: u64, pool_chunk: u64, buffer_size: u64, seed: u64, vm: u32) -> Self {
        space(&Synth { stack, queues, bs: buffer_size, ios: 0, vms: vm + 1, memory, buffer_pool, pool_chunk, qd: 0, seed, split: false, reuse }, vm)
    }

    /// Takes a free buffer of the pool: the most recently freed (`lifo`, any when every buffer
    /// is in use) or any (`random`).
    pub fn take_buffer(&mut self, rng: &mut Rng) -> u64 {
        match (self.reuse, self.free.pop()) {
            (BufferReuse::Lifo, Some(b)) => b,
            _ => self.buffers[rng.random_range(0..self.buffers.len())],
        }
    }

    /// Returns a buffer to the pool's free list (`lifo`).
    pub fn free_buffer(&mut self, buf: u64) {
        if self.reuse == BufferReuse::Lifo && self.free.len() < self.buffers.len() {
            self.free.push(buf);
        }
    }

    /// `linux-iommu`: maps an I/O of `bytes` on queue `q` to an IOVA (a recently freed one of
    /// that queue if there is one, else a fresh one below the last).
    pub fn map_iova(&mut self, q: usize, bytes: u64) -> u64 {
        // Sizes round up to a power of two pages, as the IOVA caches keep them.
        let size = bytes.max(PAGE).next_power_of_two();
        let iova = if let Some(pos) = self.iova_free[q].iter().rposition(|&(_, s)| s == size) {
            self.iova_free[q].remove(pos).0
        } else {
            self.iova_next -= size;
            self.iova_next
        };
        self.iova_busy[q].push_back(iova);
        iova
    }

    /// `linux-iommu`: unmaps an I/O's IOVA into its queue's cache.
    pub fn unmap_iova(&mut self, q: usize, iova: u64, bytes: u64) {
        let size = bytes.max(PAGE).next_power_of_two();
        if let Some(pos) = self.iova_busy[q].iter().position(|&a| a == iova) {
            self.iova_busy[q].remove(pos);
        }
        self.iova_free[q].push((iova, size));
    }

    /// SQ and CQ ring ranges `(start, end)`.
    pub fn rings(&self) -> Vec<(u64, u64)> {
        self.sq.iter().zip(&self.cq).flat_map(|(&s, &c)| [(s, s + self.depth * 64), (c, c + self.depth * 16)]).collect()
    }

    /// Address of page `page` of a data buffer: `buf` is a buffer base, or (buffered I/O) a
    /// per-command number that picks page-cache pages.
    pub fn data_page(&self, buf: u64, page: u64) -> u64 {
        match self.stack {
            DmaLayout::LinuxBuffered => {
                let mut z = buf.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ page.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb);
                (z % self.memory_pages) * PAGE
            }
            _ => buf + page * PAGE,
        }
    }
}

use Layout as Space;

/// The address ranges of every SQ and CQ ring (to pin), per address space: `(pasid, start, end)`.
pub fn ring_ranges(s: &Synth) -> Vec<(u32, u64, u64)> {
    let mut out = Vec::new();
    for vm in 0..s.vms {
        let sp = space(s, vm);
        for q in 0..sp.sq.len() {
            out.push((vm, sp.sq[q], sp.sq[q] + sp.depth * 64));
            out.push((vm, sp.cq[q], sp.cq[q] + sp.depth * 16));
        }
    }
    out
}

/// What VM `vm` of `s` has of the host: `(queues, memory, buffer_pool)`.
fn share(s: &Synth, vm: u32) -> (u32, u64, u64) {
    if !s.split || s.vms <= 1 {
        return (s.queues, s.memory, s.buffer_pool);
    }
    let n = s.vms;
    // The host's queue pairs dealt out in turn: VM `vm` gets one more while any are left.
    let queues = (s.queues / n + u32::from(vm < s.queues % n)).max(1);
    let chunk = s.pool_chunk.max(PAGE);
    (queues, (s.memory / u64::from(n)).max(1024 * PAGE), (s.buffer_pool / u64::from(n)).max(chunk))
}

fn space(s: &Synth, vm: u32) -> Space {
    let (queues, memory, buffer_pool) = share(s, vm);
    let s = &Synth { queues, memory, buffer_pool, ..s.clone() };
    let mut rng = Rng::from_seed(stream_seed(s.seed, 0x5A00 + u64::from(vm)).to_le_bytes());
    let pages = (s.memory / PAGE).max(1024);
    let frame = |rng: &mut Rng, align: u64| (rng.random_range(0..pages * PAGE / align)) * align;
    let (depth, ring_align) = match s.stack {
        DmaLayout::Spdk => (256, 2 << 20),
        _ => (1024, PAGE),
    };
    // Each queue's CQ and SQ come from back-to-back coherent allocations: adjacent.
    let sq: Vec<u64> = (0..s.queues).map(|_| frame(&mut rng, ring_align.max(128 * 1024))).collect();
    let cq: Vec<u64> = sq.iter().map(|&a| a + depth * 64).collect();
    let prp_pool: Vec<u64> = (0..4).map(|_| frame(&mut rng, PAGE)).collect();
    let chunk = match s.stack {
        DmaLayout::Spdk => 2 << 20,
        _ => s.pool_chunk.max(PAGE),
    };
    let chunks = s.buffer_pool.div_ceil(chunk).max(1);
    let bufs_per_chunk = (chunk / s.bs.max(PAGE)).max(1);
    let mut buffers = Vec::new();
    for _ in 0..chunks {
        let base = frame(&mut rng, chunk.min(2 << 20));
        for b in 0..bufs_per_chunk {
            buffers.push(base + b * s.bs.max(PAGE));
        }
    }
    let iova_free = vec![Vec::new(); s.queues as usize];
    let iova_busy = vec![std::collections::VecDeque::new(); s.queues as usize];
    // The free list starts in pool order: the first buffer is taken first.
    let free = buffers.iter().rev().copied().collect();
    let busy = vec![std::collections::VecDeque::new(); s.queues as usize];
    Space { sq, cq, depth, prp_pool, buffers, memory_pages: pages, stack: s.stack, reuse: s.reuse, free, tail: vec![0; s.queues as usize], busy, iova_free, iova_busy, iova_next: 1 << 48 }
}

/// The stream, lazily.
pub fn stream(s: &Synth) -> impl Iterator<Item = Access> + '_ {
    let mut spaces: Vec<Space> = (0..s.vms.max(1)).map(|vm| space(s, vm)).collect();
    let mut rng = Rng::from_seed(stream_seed(s.seed, 0x5AFF).to_le_bytes());
    let pages_per_io = s.bs.div_ceil(PAGE);
    let mut pending: Vec<Access> = Vec::new();
    let mut issued = 0u64;
    std::iter::from_fn(move || {
        if pending.is_empty() {
            if issued >= s.ios {
                return None;
            }
            issued += 1;
            let vm = rng.random_range(0..spaces.len());
            let sp = &mut spaces[vm];
            let q = rng.random_range(0..sp.sq.len());
            let slot = sp.tail[q] % sp.depth;
            sp.tail[q] += 1;
            let pasid = vm as u32;
            // Device order, reversed so that `pop` yields it: CQE last.
            pending.push(Access { addr: sp.cq[q] + slot * 16, size: 16, pasid, pinned: true });
            let data: Vec<u64> = match s.stack {
                DmaLayout::LinuxBuffered => (0..pages_per_io).map(|_| rng.random_range(0..sp.memory_pages) * PAGE).collect(),
                DmaLayout::LinuxIommu => {
                    // The I/O `qd` back on this queue completes: its IOVA goes back to the cache.
                    if sp.iova_busy[q].len() >= s.qd.max(1) as usize {
                        if let Some(old) = sp.iova_busy[q].front().copied() {
                            sp.unmap_iova(q, old, s.bs);
                        }
                    }
                    let iova = sp.map_iova(q, s.bs);
                    (0..pages_per_io).map(|p| iova + p * PAGE).collect()
                }
                _ => {
                    // The I/O `qd` back on this queue completes: its buffer is freed.
                    if sp.busy[q].len() >= s.qd.max(1) as usize {
                        if let Some(old) = sp.busy[q].pop_front() {
                            sp.free_buffer(old);
                        }
                    }
                    let b = sp.take_buffer(&mut rng);
                    sp.busy[q].push_back(b);
                    (0..pages_per_io).map(|p| b + p * PAGE).collect()
                }
            };
            for &a in data.iter().rev() {
                pending.push(Access { addr: a, size: PAGE as u32, pasid, pinned: false });
            }
            if pages_per_io > 2 {
                let list = sp.prp_pool[rng.random_range(0..sp.prp_pool.len())];
                pending.push(Access { addr: list, size: ((pages_per_io - 1) * 8) as u32, pasid, pinned: false });
            }
            pending.push(Access { addr: sp.sq[q] + slot * 64, size: 64, pasid, pinned: true });
        }
        pending.pop()
    })
}
