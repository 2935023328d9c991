//! Where writes go and who pays for GC: the host and GC streams (FDP's reclaim unit handles,
//! by tenant or by placement identifier, with a GC stream per handle when isolation is
//! persistent), and the attribution of every unit GC moves to the tenant whose write paid for
//! the move and to the tenant that owns it.

use super::{Ftl, GC, HOST, UNMAPPED};

/// GC attribution among tenants: every unit GC moves is counted by the tenant whose write
/// earned the move (or idle time, for background GC) and by the tenant that owns the unit.
/// Tenants own contiguous LPN ranges, so a unit's owner follows from its LPN.
#[derive(Clone, Debug)]
pub struct Attribution {
    /// First LPN of every tenant's range, ascending.
    starts: Vec<u64>,
    /// Host units written, per tenant.
    pub host: Vec<u64>,
    /// Units moved, `moved[payer * tenants + owner]`; the payer row `tenants` is background GC.
    pub moved: Vec<u64>,
    /// The tenant paying for the GC work under way.
    pub(super) payer: usize,
}

impl Attribution {
    pub(super) fn new(starts: Vec<u64>) -> Self {
        let n = starts.len();
        Attribution { starts, host: vec![0; n], moved: vec![0; (n + 1) * n], payer: 0 }
    }

    /// Tenants.
    pub fn tenants(&self) -> usize {
        self.starts.len()
    }

    #[inline]
    pub(super) fn owner(&self, lpn: u64) -> usize {
        self.starts.partition_point(|&s| s <= lpn).saturating_sub(1)
    }

    /// Units that GC moved on behalf of `payer` (a tenant, or `tenants()` for background GC)
    /// and that belong to `owner`.
    pub fn moved_by(&self, payer: usize, owner: usize) -> u64 {
        self.moved[payer * self.tenants() + owner]
    }

    pub(super) fn reset(&mut self) {
        self.host.iter_mut().for_each(|x| *x = 0);
        self.moved.iter_mut().for_each(|x| *x = 0);
    }
}

impl Ftl {
    /// Attributes GC among tenants whose LPN ranges start at `starts` (ascending, the first
    /// at 0); each tenant's range ends where the next begins.
    pub fn set_tenants(&mut self, starts: Vec<u64>) {
        self.attribution = (starts.len() > 1).then(|| Box::new(Attribution::new(starts)));
    }

    /// FDP: each tenant (set by [`Ftl::set_tenants`]) writes through its own reclaim unit
    /// handle, a host stream of its own; `persistent` handles also get a GC stream each. Call
    /// before any write.
    pub fn enable_placement(&mut self, persistent: bool) {
        let n = self.attribution.as_ref().map_or(0, |a| a.tenants());
        if n < 2 {
            return;
        }
        self.handles = n;
        self.persistent = persistent;
        for pool in &mut self.pools {
            pool.add_streams(n - 1 + if persistent { n } else { 0 });
        }
    }

    /// FDP with `n` reclaim unit handles that host writes pick by placement identifier
    /// ([`Ftl::write_placed_by`]), each a host stream of its own, initially isolated (GC moves
    /// every handle's data into one GC stream). Call before any write.
    pub fn enable_handles(&mut self, n: usize) {
        if n < 2 {
            return;
        }
        self.handles = n;
        self.by_pid = true;
        for pool in &mut self.pools {
            pool.add_streams(n - 1);
        }
    }

    /// FDP reclaim unit handles (0 without placement).
    pub fn placement_handles(&self) -> usize {
        self.handles
    }

    /// The host stream of the tenant owning `lpn` (FDP), else the host stream.
    #[inline]
    pub(super) fn host_stream(&self, lpn: u64) -> usize {
        if self.by_pid {
            return HOST;
        }
        match (&self.attribution, self.handles) {
            (Some(a), h) if h > 1 => match a.owner(lpn) {
                0 => HOST,
                t => 1 + t,
            },
            _ => HOST,
        }
    }

    /// The GC stream for moving `lpn`: its handle's with persistently isolated FDP.
    #[inline]
    pub(super) fn gc_stream(&self, lpn: u64) -> usize {
        match &self.attribution {
            Some(a) if self.persistent && self.handles > 1 => self.handles + 1 + a.owner(lpn),
            _ => GC,
        }
    }

    /// Whether `stream` holds data moved by GC.
    #[inline]
    pub(super) fn is_gc_stream(&self, stream: usize) -> bool {
        stream == GC || (self.handles > 1 && stream > self.handles)
    }

    /// Full or open blocks holding valid units, and those of them holding units of more than
    /// one tenant (0 without tenants).
    pub fn mixed_blocks(&self) -> (u64, u64) {
        let Some(a) = &self.attribution else { return (0, 0) };
        let spb = self.g.slots_per_block();
        let (mut with_data, mut mixed) = (0, 0);
        for (i, b) in self.blocks.iter().enumerate() {
            if b.valid == 0 {
                continue;
            }
            with_data += 1;
            let mut owner = None;
            for offset in 0..spb {
                let lpn = self.p2l.get(i as u32, offset);
                if lpn == UNMAPPED {
                    continue;
                }
                let t = a.owner(lpn);
                if owner.is_some_and(|o| o != t) {
                    mixed += 1;
                    break;
                }
                owner = Some(t);
            }
        }
        (with_data, mixed)
    }

    /// GC attribution among tenants, if set.
    pub fn attribution(&self) -> Option<&Attribution> {
        self.attribution.as_deref()
    }
}
