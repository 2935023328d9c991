//! Integrity mode (`ftl.integrity`): a shadow map of the version of every written unit and of
//! what each physical slot holds, checked on every host read, and a check of every invariant
//! of the map, the back pointers, the valid counts and the free blocks.

use std::collections::HashMap;

use super::{BlockId, Ftl, Lpn, State};

/// The shadow map of integrity mode: the version of every written unit, and the version each
/// physical slot holds; and what the checks of host reads found.
pub(super) struct Shadow {
    pub(super) version: HashMap<u64, u64>,
    pub(super) slot_version: HashMap<u64, u64>,
    pub(super) next: u64,
    pub(super) found: IntegrityCounts,
}

/// What integrity mode's checks of host reads found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IntegrityCounts {
    /// Mapping units read and checked against the shadow map.
    pub checked: u64,
    /// Units written (and not trimmed since) that the map no longer finds.
    pub lost: u64,
    /// Units that map to a slot holding another version than their last write (an older
    /// one, or data of a unit trimmed or never written).
    pub stale: u64,
    /// Units whose slot holds another unit (two units claim one slot).
    pub duplicated: u64,
}

impl Ftl {
    /// Turns on the shadow map (integrity mode). Call before any write (preconditioning
    /// records what it places).
    pub fn enable_integrity(&mut self) {
        self.shadow = Some(Shadow { version: HashMap::new(), slot_version: HashMap::new(), next: 1, found: IntegrityCounts::default() });
    }

    /// Integrity mode: checks that a host read of `lpn` finds its last written version (and
    /// nothing, if it was trimmed or never written).
    pub fn check_read(&mut self, lpn: Lpn) {
        let slot = self.lookup(lpn);
        let holder = slot.map(|s| self.p2l.get(self.block_of_slot(s), (s % u64::from(self.g.slots_per_block())) as u32));
        let Some(sh) = &mut self.shadow else { return };
        sh.found.checked += 1;
        match (sh.version.get(&lpn.0), slot) {
            (None, None) => {}
            (Some(_), None) => sh.found.lost += 1,
            (None, Some(_)) => sh.found.stale += 1,
            (Some(want), Some(s)) => {
                if holder != Some(lpn.0) {
                    sh.found.duplicated += 1;
                } else if sh.slot_version.get(&s) != Some(want) {
                    sh.found.stale += 1;
                }
            }
        }
    }

    /// Integrity mode: what the checks of host reads found (`None` when it is off).
    pub fn integrity_counts(&self) -> Option<IntegrityCounts> {
        self.shadow.as_ref().map(|s| s.found)
    }

    /// Checks every invariant; in integrity mode also that each unit maps to its last version.
    pub fn verify(&self) -> std::result::Result<(), String> {
        let spb = u64::from(self.g.slots_per_block());
        let mut valid = vec![0u32; self.blocks.len()];
        let mut seen = 0u64;
        for (lpn, slot) in self.l2p.iter() {
            let block = self.block_of_slot(slot);
            let offset = (slot % spb) as u32;
            if self.blocks[block as usize].state == State::Free {
                return Err(format!("lpn {lpn} maps to slot {slot} in free block {block}"));
            }
            if self.pool_of_block(BlockId(block)) != self.pool_of(lpn) {
                return Err(format!("lpn {lpn} of pool {} maps to block {block} of pool {}", self.pool_of(lpn), self.pool_of_block(BlockId(block))));
            }
            let back = self.p2l.get(block, offset);
            if back != lpn {
                return Err(format!("lpn {lpn} maps to slot {slot}, which holds lpn {back}"));
            }
            valid[block as usize] += 1;
            seen += 1;
            if let Some(s) = &self.shadow {
                let want = s.version.get(&lpn);
                let have = s.slot_version.get(&slot);
                if want != have {
                    return Err(format!("lpn {lpn}: last written version {want:?}, mapped slot holds {have:?}"));
                }
            }
        }
        if let Some(s) = &self.shadow {
            if s.version.len() as u64 != seen {
                return Err(format!("{} units written and not trimmed, {seen} mapped", s.version.len()));
            }
        }
        let mut free = vec![0u32; self.pools.len()];
        for (i, b) in self.blocks.iter().enumerate() {
            let (block, p) = (i as u32, usize::from(b.pool));
            let plane = self.g.plane_of(BlockId(block)) as usize;
            let in_span = self.moved_blocks > 0 || self.pools.get(p).is_some_and(|pool| pool.span.contains(&(block % self.g.blocks_per_plane)));
            if p >= self.pools.len() || !in_span {
                return Err(format!("block {i} is in pool {p}, which does not own it"));
            }
            if b.valid != valid[i] {
                return Err(format!("block {i} counts {} valid units, the map says {}", b.valid, valid[i]));
            }
            match b.state {
                State::Free => free[p] += 1,
                State::Open if self.pools[p].writer(plane, block).is_none() => {
                    return Err(format!("block {i} is open but no stream of pool {p} writes it"));
                }
                _ => {}
            }
            if b.valid > self.written_slots(block) {
                return Err(format!("block {i} has {} valid units in {} written slots", b.valid, self.written_slots(block)));
            }
        }
        for (p, (pool, &free)) in self.pools.iter().zip(&free).enumerate() {
            let listed = pool.listed_free();
            if free != pool.free_count || free as usize != listed {
                return Err(format!("pool {p}: {free} free blocks, counter says {}, lists hold {listed}", pool.free_count));
            }
        }
        Ok(())
    }
}
