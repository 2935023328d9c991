//! The host's share of the device among tenants: the cgroup v2 I/O controllers.
//!
//! `host.share` picks one:
//! - `"none"`: every tenant's I/O goes straight on (Linux with no io controller; blk-mq's
//!   `none` scheduler, the default for NVMe).
//! - `"weight"`: `io.weight` as the `io.cost` controller (blk-iocost) enforces it. A linear
//!   device model (`io.cost.model`: the `host.cost_*` keys) prices every I/O in device time: a
//!   4 KiB random read costs 1 / `cost_rrandiops`, a sequential one 1 / `cost_rseqiops`, and
//!   every further 4 KiB page 4 KiB / `cost_rbps` (writes alike). A global virtual clock runs
//!   at the model's speed times `vrate`; a tenant's I/O goes when the tenant's own virtual time,
//!   advanced by the I/O's cost divided by its share of the active weights (hweight), stays
//!   within `cost_margin` of the global clock, and otherwise waits in the tenant's FIFO. A
//!   tenant that was idle cannot bank more than the margin. So while the device keeps up with
//!   the model, tenants get the model's capacity in proportion to their weights; when the
//!   device is slower than the model (an aged drive priced as a clean one), the clock never
//!   holds anyone back, requests queue inside the device instead, and the weights stop
//!   mattering. With `cost_qos_latency` set, `vrate` follows the device as iocost's QoS does:
//!   every `cost_qos_period`, if the `cost_qos_percentile` completion latency (from issue to
//!   completion, host queueing left out) exceeded the target, vrate drops by a quarter, and if
//!   it was met while some tenant waited for the clock, it rises by an eighth, within
//!   [`cost_qos_min`, 1].
//! - `"max"`: `io.max` (blk-throttle): each tenant's reads and writes are held to its
//!   `riops`/`wiops`/`rbps`/`wbps` limits by token buckets that hold `throttle_slice` worth of
//!   tokens.
//!
//! Leaves out: nested cgroups, iocost's donation of unused hweight (a tenant's share is that of
//! the weights of the tenants with I/O pending or in flight), its debt and delay of
//! already-issued I/O, BFQ's budget-and-idling scheduler, and `io.latency`.

use std::collections::VecDeque;

use super::config::{HostConfig, ShareMode};
use crate::ids::CmdId;
use crate::ids::TenantId;
use crate::io::Op;
use crate::sim::{SimDuration, SimTime, PS_PER_S};

/// 4 KiB: the page size of iocost's model.
const MODEL_PAGE: u64 = 4096;
/// An I/O starting within this many bytes of where its tenant's previous one of the same
/// direction ended counts as sequential (iocost's `LCOEF_RANDIO_PAGES`, 4096 pages).
const SEQ_WINDOW: u64 = 4096 * MODEL_PAGE;

/// A token bucket (`io.max`): `rate` tokens a second, at most `cap`.
#[derive(Clone, Debug)]
struct Bucket {
    rate: f64,
    cap: f64,
    tokens: f64,
    at: SimTime,
}

impl Bucket {
    fn new(rate: f64, slice: SimDuration) -> Option<Self> {
        (rate > 0.0).then(|| {
            let cap = (rate * slice.as_secs_f64()).max(1.0);
            Bucket { rate, cap, tokens: cap, at: SimTime::ZERO }
        })
    }

    fn refill(&mut self, now: SimTime) {
        let dt = now.since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * self.rate).min(self.cap);
        self.at = now;
    }

    /// When `need` tokens will be there (now if they are). A need above the cap waits for a
    /// full bucket and overdraws it.
    fn ready_at(&mut self, now: SimTime, need: f64) -> SimTime {
        self.refill(now);
        let need = need.min(self.cap);
        if self.tokens >= need {
            now
        } else {
            now + SimDuration::from_ps(((need - self.tokens) / self.rate * PS_PER_S as f64).ceil() as u64)
        }
    }

    fn take(&mut self, need: f64) {
        self.tokens -= need;
    }
}

/// A tenant's cgroup (and its queue pairs' NVMe class), as the host knows it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cgroup {
    /// `io.weight`.
    pub weight: u32,
    /// `io.max`: read and write IOPS, read and write bytes per second (0 = no limit).
    pub riops: u64,
    pub wiops: u64,
    pub rbps: f64,
    pub wbps: f64,
    /// The NVMe arbitration class of its queue pairs.
    pub class: crate::nvme::WrrClass,
}

/// One tenant's state.
#[derive(Clone, Debug)]
struct Tenant {
    weight: f64,
    /// Virtual time, in ps of model time.
    vtime: f64,
    /// I/Os held back, oldest first.
    waiting: VecDeque<CmdId>,
    inflight: u32,
    /// Where its last read and last write ended (sequential detection).
    last_end: [u64; 2],
    /// `io.max`: read IOPS, write IOPS, read bytes, write bytes.
    buckets: [Option<Bucket>; 4],
    /// When a wake-up for its queue is armed.
    armed: Option<SimTime>,
}

/// What [`Share::offer`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// The I/O goes on now.
    Go,
    /// It waits in its tenant's queue; if `Some`, arm a wake-up for the tenant then.
    Wait(Option<SimTime>),
}

/// The proportional-share or limit controller.
pub struct Share {
    mode: ShareMode,
    tenants: Vec<Tenant>,
    /// Model cost coefficients in ps: per sequential I/O, per random I/O, per 4 KiB page
    /// after the first; reads then writes.
    seq_cost: [f64; 2],
    rand_cost: [f64; 2],
    page_cost: [f64; 2],
    margin: f64,
    /// Global virtual time at `vclock_at`, and its rate (`vrate`).
    vclock: f64,
    vclock_at: SimTime,
    vrate: f64,
    /// QoS: target, percentile, period, floor; latencies seen in the current period; whether
    /// a tenant waited for the clock in it.
    qos_target: Option<SimDuration>,
    qos_percentile: f64,
    pub qos_period: SimDuration,
    qos_min: f64,
    qos_lat: Vec<u64>,
    qos_waited: bool,
    /// Counters: I/Os held back, and their total wait.
    pub held: u64,
    pub held_time: SimDuration,
}

/// Bytes an I/O takes from a bandwidth limit: blk-throttle counts a discard as one sector
/// (`throtl_bio_data_size`), whatever its length.
fn throttled_bytes(op: Op, len: u64) -> f64 {
    if op == Op::Trim {
        512.0
    } else {
        len as f64
    }
}

/// Model cost in ps of an I/O at `iops` per second (the 4 KiB page's part taken out).
fn per_io(iops: f64, page: f64) -> f64 {
    (PS_PER_S as f64 / iops - page).max(0.0)
}

impl Share {
    /// The controller of `host.share` for `tenants` (none with `share = "none"` or a single
    /// tenant).
    pub fn new(h: &HostConfig, tenants: &[Cgroup]) -> Option<Self> {
        if h.share == ShareMode::None || tenants.is_empty() {
            return None;
        }
        let s = PS_PER_S as f64;
        let page = [s * MODEL_PAGE as f64 / h.cost_rbps.0, s * MODEL_PAGE as f64 / h.cost_wbps.0];
        let slice = h.throttle_slice;
        Some(Share {
            mode: h.share,
            tenants: tenants
                .iter()
                .map(|t| Tenant {
                    weight: f64::from(t.weight),
                    vtime: 0.0,
                    waiting: VecDeque::new(),
                    inflight: 0,
                    last_end: [u64::MAX; 2],
                    buckets: [Bucket::new(t.riops as f64, slice), Bucket::new(t.wiops as f64, slice), Bucket::new(t.rbps, slice), Bucket::new(t.wbps, slice)],
                    armed: None,
                })
                .collect(),
            seq_cost: [per_io(h.cost_rseqiops, page[0]), per_io(h.cost_wseqiops, page[1])],
            rand_cost: [per_io(h.cost_rrandiops, page[0]), per_io(h.cost_wrandiops, page[1])],
            page_cost: page,
            margin: h.cost_margin.as_ps() as f64,
            vclock: 0.0,
            vclock_at: SimTime::ZERO,
            vrate: 1.0,
            qos_target: (h.cost_qos_latency > SimDuration::ZERO).then_some(h.cost_qos_latency),
            qos_percentile: h.cost_qos_percentile,
            qos_period: h.cost_qos_period,
            qos_min: h.cost_qos_min,
            qos_lat: Vec::new(),
            qos_waited: false,
            held: 0,
            held_time: SimDuration::ZERO,
        })
    }

    /// Whether QoS adjusts vrate (and so wants a periodic tick).
    pub fn has_qos(&self) -> bool {
        self.mode == ShareMode::Weight && self.qos_target.is_some()
    }

    pub fn vrate(&self) -> f64 {
        self.vrate
    }

    fn clock(&mut self, now: SimTime) -> f64 {
        self.vclock += now.since(self.vclock_at).as_ps() as f64 * self.vrate;
        self.vclock_at = now;
        self.vclock
    }

    /// The model cost of an I/O in ps (before the tenant's share divides it).
    fn cost(&self, t: &Tenant, op: Op, offset: u64, len: u64) -> f64 {
        let d = op.data_dir();
        let seq = t.last_end[d] != u64::MAX && offset.abs_diff(t.last_end[d]) <= SEQ_WINDOW;
        let base = if seq { self.seq_cost[d] } else { self.rand_cost[d] };
        base + self.page_cost[d] * len.div_ceil(MODEL_PAGE).max(1) as f64
    }

    /// The tenant's share of the active weights (its own counting as active).
    fn hweight(&self, t: usize) -> f64 {
        let active: f64 = self.tenants.iter().enumerate().filter(|(i, x)| *i == t || x.inflight > 0 || !x.waiting.is_empty()).map(|(_, x)| x.weight).sum();
        self.tenants[t].weight / active
    }

    /// When the head I/O of tenant `t` (`op`, `offset`, `len`) may go, at the earliest `now`.
    /// `arriving`: the tenant had nothing waiting, so an idle tenant's virtual time first
    /// catches up to within the margin of the clock (it cannot bank idle time); an I/O already
    /// waiting keeps the virtual time it was judged by, so that one costing more than the margin
    /// still goes once the clock reaches it.
    fn ready_at(&mut self, t: usize, now: SimTime, (op, offset, len): (Op, u64, u64), arriving: bool) -> SimTime {
        match self.mode {
            ShareMode::None => now,
            ShareMode::Weight => {
                let v = self.clock(now);
                let charge = self.cost(&self.tenants[t], op, offset, len) / self.hweight(t);
                let x = &mut self.tenants[t];
                if arriving {
                    x.vtime = x.vtime.max(v - self.margin);
                }
                let over = x.vtime + charge - self.margin - v;
                if over <= 0.0 {
                    now
                } else {
                    now + SimDuration::from_ps((over / self.vrate).ceil() as u64)
                }
            }
            ShareMode::Max => {
                let d = op.data_dir();
                let x = &mut self.tenants[t];
                let mut at = now;
                if let Some(b) = &mut x.buckets[d] {
                    at = at.max(b.ready_at(now, 1.0));
                }
                if let Some(b) = &mut x.buckets[2 + d] {
                    at = at.max(b.ready_at(now, throttled_bytes(op, len)));
                }
                at
            }
        }
    }

    /// Charges an I/O that goes now.
    fn charge(&mut self, t: usize, op: Op, offset: u64, len: u64) {
        match self.mode {
            ShareMode::None => {}
            ShareMode::Weight => {
                let charge = self.cost(&self.tenants[t], op, offset, len) / self.hweight(t);
                self.tenants[t].vtime += charge;
            }
            ShareMode::Max => {
                let d = op.data_dir();
                let x = &mut self.tenants[t];
                if let Some(b) = &mut x.buckets[d] {
                    b.take(1.0);
                }
                if let Some(b) = &mut x.buckets[2 + d] {
                    b.take(throttled_bytes(op, len));
                }
            }
        }
        let x = &mut self.tenants[t];
        x.last_end[op.data_dir()] = offset + len;
        x.inflight += 1;
    }

    /// Offers an I/O of tenant `t` at `now`: it goes if its tenant has nothing waiting and its
    /// share allows, else it queues.
    pub fn offer(&mut self, t: TenantId, id: CmdId, now: SimTime, (op, offset, len): (Op, u64, u64)) -> Admit {
        let i = t.index();
        if self.tenants[i].waiting.is_empty() {
            let at = self.ready_at(i, now, (op, offset, len), true);
            if at <= now {
                self.charge(i, op, offset, len);
                return Admit::Go;
            }
            self.tenants[i].waiting.push_back(id);
            self.qos_waited = true;
            return Admit::Wait(self.arm(i, at));
        }
        self.tenants[i].waiting.push_back(id);
        Admit::Wait(None)
    }

    /// Arms a wake-up of tenant `t` at `at` unless one at or before it is armed.
    fn arm(&mut self, t: usize, at: SimTime) -> Option<SimTime> {
        match self.tenants[t].armed {
            Some(a) if a <= at => None,
            _ => {
                self.tenants[t].armed = Some(at);
                Some(at)
            }
        }
    }

    /// A wake-up of tenant `t` armed for `now`: the I/Os at the head of its queue that may go
    /// now, in order, into `out` (with their (op, offset, len) from `io_of`); returns when to
    /// wake it next, if it still has some waiting. A stale wake-up does nothing.
    pub fn wake(&mut self, t: TenantId, now: SimTime, io_of: impl Fn(CmdId) -> (Op, u64, u64), out: &mut Vec<CmdId>) -> Option<SimTime> {
        let i = t.index();
        if self.tenants[i].armed != Some(now) {
            return None;
        }
        self.tenants[i].armed = None;
        self.release(i, now, &io_of, out)
    }

    fn release(&mut self, i: usize, now: SimTime, io_of: &impl Fn(CmdId) -> (Op, u64, u64), out: &mut Vec<CmdId>) -> Option<SimTime> {
        while let Some(&id) = self.tenants[i].waiting.front() {
            let (op, offset, len) = io_of(id);
            let at = self.ready_at(i, now, (op, offset, len), false);
            if at > now {
                self.qos_waited = true;
                return self.arm(i, at);
            }
            self.tenants[i].waiting.pop_front();
            self.charge(i, op, offset, len);
            out.push(id);
        }
        None
    }

    /// An I/O of tenant `t` completed, `latency` after it left the host's queue. If the
    /// tenant goes idle, the others' shares grow: returns the tenants whose queues should be
    /// looked at again now.
    pub fn completed(&mut self, t: TenantId, latency: SimDuration) -> bool {
        if self.has_qos() {
            self.qos_lat.push(latency.as_ps());
        }
        let x = &mut self.tenants[t.index()];
        x.inflight = x.inflight.saturating_sub(1);
        x.inflight == 0 && x.waiting.is_empty() && self.tenants.iter().any(|o| !o.waiting.is_empty())
    }

    /// Looks at every waiting tenant again at `now` (shares changed): I/Os that may go into
    /// `out`, and the wake-ups to arm as (tenant, time).
    pub fn revisit(&mut self, now: SimTime, io_of: impl Fn(CmdId) -> (Op, u64, u64), out: &mut Vec<CmdId>, arms: &mut Vec<(TenantId, SimTime)>) {
        for i in 0..self.tenants.len() {
            if self.tenants[i].waiting.is_empty() {
                continue;
            }
            // Drop the armed time so that an earlier one can be armed.
            self.tenants[i].armed = None;
            if let Some(at) = self.release(i, now, &io_of, out) {
                arms.push((TenantId(i as u16), at));
            }
        }
    }

    /// The end of a QoS period at `now`: vrate moves as the period's latencies say.
    pub fn qos_tick(&mut self, now: SimTime) {
        let Some(target) = self.qos_target else { return };
        self.clock(now);
        let mut lat = std::mem::take(&mut self.qos_lat);
        let waited = std::mem::replace(&mut self.qos_waited, self.tenants.iter().any(|t| !t.waiting.is_empty()));
        if lat.is_empty() {
            return;
        }
        let k = ((lat.len() as f64 * self.qos_percentile / 100.0).ceil() as usize).clamp(1, lat.len()) - 1;
        let (_, p, _) = lat.select_nth_unstable(k);
        let next = if *p > target.as_ps() {
            Some((self.vrate * 0.75).max(self.qos_min))
        } else if waited {
            Some((self.vrate * 1.125).min(1.0))
        } else {
            None
        };
        if let Some(v) = next {
            self.vrate = v;
        }
        lat.clear();
        self.qos_lat = lat;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Bandwidth;

    fn weighted(iops: f64) -> (Share, Vec<Cgroup>) {
        let h = HostConfig { share: ShareMode::Weight, cost_wrandiops: iops, cost_wseqiops: iops, cost_wbps: Bandwidth(iops * 4096.0), ..HostConfig::default() };
        let t = vec![Cgroup { weight: 1, ..Cgroup::default() }, Cgroup { weight: 3, ..Cgroup::default() }];
        (Share::new(&h, &t).expect("a controller"), t)
    }

    #[test]
    fn an_io_costing_more_than_the_margin_goes_once_the_clock_reaches_it() {
        // 1000 IOPS and 4 MB/s: a 1 MiB write costs 256 ms of model time, far above the 1 ms
        // margin. Alone, the tenant's hweight is 1: its first such write waits until the clock
        // is within the margin of 256 ms, and the next one 256 ms after that.
        let (mut sh, _) = weighted(1000.0);
        let io = (Op::Write, 0, 1 << 20);
        let Admit::Wait(Some(at)) = sh.offer(TenantId(0), CmdId(0), SimTime::ZERO, io) else { panic!("it waits") };
        assert_eq!(at, SimTime::ZERO + SimDuration::from_ms(255));
        let mut out = Vec::new();
        assert_eq!(sh.wake(TenantId(0), at, |_| io, &mut out), None);
        assert_eq!(out, vec![CmdId(0)], "it goes when the clock reaches it (it does not chase the clock)");
        let Admit::Wait(Some(next)) = sh.offer(TenantId(0), CmdId(1), at, io) else { panic!("the next waits") };
        assert_eq!(next, SimTime::ZERO + SimDuration::from_ms(511));
    }

    #[test]
    fn backlogged_tenants_issue_in_proportion_to_their_weights() {
        // Both tenants always have an I/O waiting: over a simulated second the clock hands out
        // 10000 4 KiB writes (plus each tenant's first margin's worth), a quarter to weight 1
        // and three quarters to weight 3.
        let (mut sh, _) = weighted(10_000.0);
        let io = (Op::Write, 0, 4096);
        let mut issued = [0u32; 2];
        let mut next_id = 0u32;
        let mut wakes: Vec<(SimTime, usize)> = Vec::new();
        // Offers I/Os of tenant `t` at `now` until one has to wait.
        let mut fill = |sh: &mut Share, t: usize, now: SimTime, issued: &mut [u32; 2], wakes: &mut Vec<(SimTime, usize)>| loop {
            next_id += 1;
            match sh.offer(TenantId(t as u16), CmdId(next_id), now, io) {
                Admit::Go => issued[t] += 1,
                Admit::Wait(at) => {
                    if let Some(at) = at {
                        wakes.push((at, t));
                    }
                    break;
                }
            }
        };
        for t in 0..2 {
            fill(&mut sh, t, SimTime::ZERO, &mut issued, &mut wakes);
        }
        let start = issued;
        let end = SimTime::ZERO + SimDuration::from_ms(1000);
        while let Some(i) = (0..wakes.len()).min_by_key(|&i| wakes[i].0) {
            let (at, t) = wakes.swap_remove(i);
            if at > end {
                break;
            }
            let mut out = Vec::new();
            if let Some(n) = sh.wake(TenantId(t as u16), at, |_| io, &mut out) {
                wakes.push((n, t));
            }
            issued[t] += out.len() as u32;
            if !out.is_empty() && wakes.iter().all(|w| w.1 != t) {
                fill(&mut sh, t, at, &mut issued, &mut wakes);
            }
        }
        let got = [f64::from(issued[0] - start[0]), f64::from(issued[1] - start[1])];
        assert!((got[0] + got[1] - 10_000.0).abs() < 30.0, "{issued:?} after {start:?}");
        assert!((got[1] / got[0] - 3.0).abs() < 0.03, "{issued:?} after {start:?}");
    }
}
