//! How a die starts its next operation: which one it takes (reads first, a suspended program
//! or erase resumed, a pool's fair share), what the array does for it (a sense, with
//! multi-plane partners, register reuse and retry steps; a program, with multi-plane
//! partners; an erase), and how it occupies the channel and the array.

use super::Event;
use super::{DieId, NandArray, Op, Output, Phase, Running, Work};
use crate::sim::{SimDuration, SimTime};

/// What the die does for its next operation: how many planes act together, the bytes its
/// command moves in over the channel (a program's data), and the array time.
#[derive(Clone, Copy, Debug)]
struct Plan {
    planes: u32,
    channel_bytes: u64,
    array: SimDuration,
}

impl NandArray {
    /// Starts the next operation of `die`, if it is idle.
    pub(super) fn start(&mut self, die: DieId, now: SimTime, out: &mut Vec<Output>) {
        if self.dies[die.index()].running.is_some() {
            return;
        }
        let Some(mut op) = self.next_op(die, now, out) else { return };
        if self.cache_program && !matches!(op.work, Work::Program { .. }) && self.dies[die.index()].array_free > now {
            // A read or erase needs the array, still programming: try again when it is free.
            self.requeue(die, op);
            out.push(Output::At(self.dies[die.index()].array_free, Event::Start { die }));
            return;
        }
        if !self.take_power(die, &op) {
            // The power budget is spent: the op waits at the head of the die's queue.
            self.requeue(die, op);
            return;
        }
        self.dies[die.index()].gc_wait(&mut op, now);
        let cost = if self.share.is_some() { self.nominal(&op.work).as_ps() as f64 } else { 0.0 };
        if let Some(sh) = &mut self.share {
            sh.charge(die, usize::from(op.pool), cost);
        }
        let plan = match op.work {
            Work::HostRead { .. } | Work::GcRead | Work::Prefetch { .. } | Work::MapLoad { .. } => self.sense(die, &op, now),
            Work::Erase => {
                self.dies[die.index()].registers.fill(None);
                Plan { planes: 1, channel_bytes: 0, array: self.erase }
            }
            Work::MapProgram => {
                self.dies[die.index()].registers.fill(None);
                Plan { planes: 1, channel_bytes: self.g.page_size, array: self.program_time(op.page) }
            }
            Work::Program { .. } => {
                self.dies[die.index()].registers.fill(None);
                let planes = self.gather_programs(die, &op);
                Plan { planes, channel_bytes: self.g.page_size * u64::from(planes), array: self.page_program_time(op.page) }
            }
        };
        if plan.planes > 1 {
            // A multi-plane operation's array time is shared by the ops merged into it.
            if let Some(sh) = &mut self.share {
                let each = cost / f64::from(plan.planes);
                sh.charge(die, usize::from(op.pool), each - cost);
                for o in &self.dies[die.index()].merged {
                    sh.charge(die, usize::from(o.pool), each);
                }
            }
        }
        self.launch(die, op, plan, now, out);
    }

    /// The op `die` takes next: a queued read first (read-priority), else a suspended program
    /// or erase, which resumes here (`None` then: it runs again), else the next of the other
    /// ops (a pool's fair share picks among them; ops already merged into a multi-plane
    /// program are skipped).
    fn next_op(&mut self, die: DieId, now: SimTime, out: &mut Vec<Output>) -> Option<Op> {
        let d = &mut self.dies[die.index()];
        if self.read_first {
            if let Some(op) = d.reads.pop_front() {
                return Some(op);
            }
        }
        if let Some((mut r, remaining)) = d.suspended.take() {
            // Resume the suspended program/erase (it takes the page registers again).
            d.registers.fill(None);
            let resume = self.suspend.unwrap_or(SimDuration::ZERO);
            r.end = now + resume + remaining;
            d.occupy(&mut self.totals, r.op.work, now, r.end);
            d.running = Some(r);
            out.push(Output::At(r.end, Event::ArrayDone { die, gen: d.gen }));
            return None;
        }
        loop {
            let at = self.share.as_ref().map_or(0, |sh| sh.pick(die, d.other.front_pool(), |p| d.other.first_of(p)));
            let (op, taken) = d.other.remove(at)?;
            if let Some(sh) = &mut self.share {
                sh.dequeued(die, usize::from(op.pool));
            }
            if !taken {
                return Some(op);
            }
        }
    }

    /// A read senses its page: from the plane's page register when it still holds the page
    /// (register reuse: no tR); else with the queued host reads of the same page offset on
    /// the die's other planes (multi-plane read: one tR, their data moved out after its), and
    /// with the retry steps the worst of them needs (each senses, moves out and decodes again).
    fn sense(&mut self, die: DieId, op: &Op, now: SimTime) -> Plan {
        let reusable = matches!(op.work, Work::HostRead { .. } | Work::GcRead | Work::Prefetch { .. });
        if reusable && self.register_reuse && !self.cache_read && self.dies[die.index()].registers[self.plane_of(op.block)] == Some((op.block, op.page)) {
            // The page is still in its plane's page register: its data goes out again
            // without sensing (a change of read column, no tR).
            self.counters.register_hits += 1;
            return Plan { planes: 1, channel_bytes: 0, array: SimDuration::ZERO };
        }
        let mut planes = 1;
        // (Not while a suspended multi-plane program keeps its partners.)
        if self.multiplane && self.read_first && !self.cache_read && matches!(op.work, Work::HostRead { .. }) && self.dies[die.index()].merged.is_empty() {
            let d = &mut self.dies[die.index()];
            let shape = self.shape;
            let plane = |o: &Op| shape.plane_in_die(o.block);
            // The planes taken, as bits (at most 16 planes).
            let mut taken = 1u32 << plane(op);
            let mut i = 0;
            while i < d.reads.len() && planes < self.g.planes {
                let mut o = d.reads[i];
                if o.page == op.page && matches!(o.work, Work::HostRead { .. }) && taken & (1 << plane(&o)) == 0 {
                    taken |= 1 << plane(&o);
                    planes += 1;
                    d.reads.remove(i);
                    d.gc_wait(&mut o, now);
                    d.merged.push(o);
                } else {
                    i += 1;
                }
            }
            if planes > 1 {
                self.counters.multiplane_reads += 1;
            }
        }
        let mut k = self.retries(op, now);
        self.counters.read_retries += u64::from(k);
        for i in 0..self.dies[die.index()].merged.len() {
            let o = self.dies[die.index()].merged[i];
            let ko = self.retries(&o, now);
            self.counters.read_retries += u64::from(ko);
            k = k.max(ko);
        }
        let step = self.read_time(op.page) + self.transfer_time(self.read_bytes(op.work)) + self.ecc;
        let p = self.plane_of(op.block);
        let d = &mut self.dies[die.index()];
        // A translation page's place is nominal: it leaves the register unknown.
        d.registers[p] = if matches!(op.work, Work::MapLoad { .. }) { None } else { Some((op.block, op.page)) };
        for i in 0..d.merged.len() {
            let o = d.merged[i];
            d.registers[self.shape.plane_in_die(o.block) as usize] = Some((o.block, o.page));
        }
        Plan { planes, channel_bytes: 0, array: self.read_time(op.page) + step * u64::from(k) }
    }

    /// Multi-plane program: programs of the same page offset already queued for the die's
    /// other planes join `op` (oldest first); returns the planes programmed together.
    fn gather_programs(&mut self, die: DieId, op: &Op) -> u32 {
        if !self.multiplane {
            return 1;
        }
        let (own, planes) = (self.shape.plane_in_die(op.block), self.g.planes);
        let d = &mut self.dies[die.index()];
        d.other.gather(op.page, 1 << own, planes, &mut d.merged)
    }

    /// `op` goes: its command (and a program's data) on the channel, then the array. With
    /// cache program, the array takes a program's data when the previous program ends and
    /// the die can take its next op from then on.
    fn launch(&mut self, die: DieId, op: Op, plan: Plan, now: SimTime, out: &mut Vec<Output>) {
        let ch = self.shape.channel_of_die(die) as usize;
        let on_channel = self.overhead + self.transfer_time(plan.channel_bytes);
        let g = self.channels[ch].reserve(now, on_channel);
        if self.cache_program && matches!(op.work, Work::Program { .. }) {
            let d = &mut self.dies[die.index()];
            let array_start = g.end.max(d.array_free);
            let end = array_start + plan.array;
            d.occupy(&mut self.totals, op.work, now.max(d.array_free), end);
            d.array_free = end;
            let spare = d.spare_lists.pop().unwrap_or_default();
            let mut ops = std::mem::replace(&mut d.merged, spare);
            ops.push(op);
            d.in_array.push_back(ops);
            if plan.planes > 1 {
                self.counters.multiplane_programs += 1;
            }
            d.running = Some(Running { op, end: array_start, phase: Phase::Transfer, service: SimDuration::ZERO });
            out.push(Output::At(array_start, Event::TransferDone { die }));
            out.push(Output::At(end, Event::ProgramDone { die }));
            return;
        }
        let end = g.end + plan.array;
        let d = &mut self.dies[die.index()];
        d.occupy(&mut self.totals, op.work, now, end);
        let service = g.end.since(g.start) + plan.array;
        d.running = Some(Running { op, end, phase: Phase::Array, service });
        if plan.planes > 1 && matches!(op.work, Work::Program { .. }) {
            self.counters.multiplane_programs += 1;
        }
        out.push(Output::At(end, Event::ArrayDone { die, gen: d.gen }));
    }
}
