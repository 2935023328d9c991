//! The controller's ECC decoder as a source of read tails: every codeword a read brings back
//! has raw bit errors; the fast (hard-decision) decoder corrects up to `hard_limit` of them,
//! and a codeword with more goes to the slow path (soft-decision decoding: soft bits sensed and
//! moved, then an iterative decode), which costs `soft_decode` more.
//!
//! A codeword of `n` bits at raw bit error rate `p` has Binomial(n, p) errors, so the chance
//! that it needs the slow path is the binomial upper tail P(K > t), and a read of `m`
//! codewords needs it with 1 − (1 − P(K > t))^m. Each read draws from that (seeded, so runs
//! repeat bit for bit); the tail is as long as the parameters make it, and zero when the raw
//! error rate is far below what hard decoding corrects.
//!
//! The controller has `soft_decoders` soft-decision decoders (0: as many as reads need). A
//! read that needs one while all are busy waits for the first to free, in the order reads ask
//! for them, so a burst of slow-path reads queues behind itself: at low load the slow path
//! costs `soft_decode`, under load it can cost several.
//!
//! Leaves out: error rates that vary by page, block, retention or temperature (NAND wear and
//! retention have their own mechanism, read retry), the hard decoders' queue (they keep up
//! with the media), and decode failures beyond soft decoding (no uncorrectable reads).

use rand::{RngExt, SeedableRng};

use crate::config_struct;
use crate::schema::Issues;
use crate::sim::{stream_seed, Rng, SimDuration, SimTime};
use crate::units::Bytes;

config_struct! {
    /// ECC decoding of media reads: raw bit errors per codeword against the hard-decision
    /// decoder's limit. Off while `rber` is 0.
    pub struct EccConfig {
        /// Data per codeword, a multiple of 512 B up to 64 KiB. Default: `4KiB`.
        codeword: Bytes = Bytes(4096),
        /// Raw bit error rate of the medium as read (0 = no errors, no slow path). Default: `0`.
        rber: f64 = 0.0,
        /// Bit errors per codeword the hard-decision decoder corrects. Default: `0`.
        hard_limit: u32 = 0,
        /// Extra time a read whose codeword exceeds `hard_limit` takes to decode (soft-decision
        /// decoding). Default: `0ns`.
        soft_decode: SimDuration = SimDuration::ZERO,
        /// Soft-decision decoders in the controller, each decoding one read at a time; a read
        /// that needs one while all are busy waits (0 = as many as needed). Default: `0`.
        soft_decoders: u32 = 0,
    }
}

impl EccConfig {
    pub fn validate(&self, issues: &mut Issues) {
        issues.check(self.codeword.0 >= 512 && self.codeword.0.is_multiple_of(512) && self.codeword.0 <= 64 << 10, "media.ecc.codeword", self.codeword, "must be a multiple of 512B up to 64KiB");
        issues.check((0.0..0.5).contains(&self.rber), "media.ecc.rber", self.rber, "must be at least 0 and below 0.5");
        issues.check(u64::from(self.hard_limit) <= self.codeword.0.saturating_mul(8), "media.ecc.hard_limit", self.hard_limit, "must be at most the codeword's bits");
        issues.check(self.soft_decode <= SimDuration::from_us(10_000), "media.ecc.soft_decode", self.soft_decode, "must be at most 10ms");
        issues.check(self.soft_decoders <= 1024, "media.ecc.soft_decoders", self.soft_decoders, "must be at most 1024 (0 = as many as needed)");
    }
}

/// P(K > t) for K ~ Binomial(n, p): the chance a codeword of `n` bits at raw bit error rate `p`
/// has more errors than the hard decoder corrects. Summed over the upper tail in log space, so
/// tails far below 1e-16 come out as their value rather than as 1 − (something close to 1).
pub fn binomial_tail(n: u64, p: f64, t: u64) -> f64 {
    if p <= 0.0 || t >= n {
        return 0.0;
    }
    // log pmf(k) = log C(n, k) + k log p + (n − k) log(1 − p), stepped from k = 0.
    let (lp, lq) = (p.ln(), (-p).ln_1p());
    let mut log_pmf = n as f64 * lq;
    for k in 0..=t {
        log_pmf += ((n - k) as f64 / (k + 1) as f64).ln() + lp - lq;
    }
    // Now log pmf(t + 1); sum the tail until its terms stop counting.
    let mut sum = 0.0;
    let mut k = t + 1;
    loop {
        let term = log_pmf.exp();
        sum += term;
        // Past the mode, stop once terms no longer count (or underflow to nothing).
        if k >= n || ((term < sum * 1e-17 || term == 0.0) && (k as f64) > n as f64 * p) {
            break;
        }
        log_pmf += ((n - k) as f64 / (k + 1) as f64).ln() + lp - lq;
        k += 1;
    }
    sum.min(1.0)
}

/// The decoder of one medium: draws which reads take the slow path.
pub struct Ecc {
    codeword: u64,
    /// P(a codeword needs soft decoding).
    p_codeword: f64,
    soft: SimDuration,
    rng: Rng,
    /// The last read size and its slow-path probability (reads mostly have one size; a read
    /// of 0 bytes, as a translation page's is reported, counts as one codeword).
    last: (u64, f64),
    /// When each soft decoder is next free (empty: as many decoders as needed).
    decoders: Vec<SimTime>,
    /// Reads that needed soft decoding, and the time they waited for a decoder.
    pub soft_decodes: u64,
    pub decoder_wait: SimDuration,
}

impl Ecc {
    pub fn new(c: &EccConfig, seed: u64) -> Self {
        let p_codeword = binomial_tail(c.codeword.0 * 8, c.rber, u64::from(c.hard_limit));
        Ecc {
            codeword: c.codeword.0,
            p_codeword,
            soft: c.soft_decode,
            rng: Rng::from_seed(stream_seed(seed, 0xECC).to_le_bytes()),
            last: (0, p_codeword),
            decoders: vec![SimTime::ZERO; c.soft_decoders as usize],
            soft_decodes: 0,
            decoder_wait: SimDuration::ZERO,
        }
    }

    /// P(a read of `bytes` needs the slow path): 1 − (1 − P(K > t))^codewords.
    pub fn p_read(&self, bytes: u64) -> f64 {
        let m = bytes.div_ceil(self.codeword).max(1);
        -(m as f64 * (-self.p_codeword).ln_1p()).exp_m1()
    }

    /// The extra decode time a read of `bytes` whose data reaches the decoder at `at` takes:
    /// when one of its codewords exceeds the hard limit, the wait for a soft decoder and
    /// `soft_decode`; else nothing.
    #[inline]
    pub fn draw(&mut self, bytes: u64, at: SimTime) -> SimDuration {
        if self.p_codeword <= 0.0 {
            return SimDuration::ZERO;
        }
        if self.last.0 != bytes {
            self.last = (bytes, self.p_read(bytes).min(1.0));
        }
        if self.rng.random_bool(self.last.1) {
            self.soft_decodes += 1;
            self.soft + self.take_decoder(at)
        } else {
            SimDuration::ZERO
        }
    }

    /// Takes the soft decoder that frees first for a decode that can start at `at`; returns
    /// the wait for it.
    fn take_decoder(&mut self, at: SimTime) -> SimDuration {
        let Some(d) = self.decoders.iter_mut().min() else { return SimDuration::ZERO };
        let start = (*d).max(at);
        *d = start + self.soft;
        let wait = start.since(at);
        self.decoder_wait += wait;
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tail_matches_direct_sums() {
        // n = 10, p = 0.5: P(K > 7) = (45 + 10 + 1) / 1024.
        assert!((binomial_tail(10, 0.5, 7) - 56.0 / 1024.0).abs() < 1e-12);
        assert!(binomial_tail(10, 0.0, 0) <= 0.0, "no errors, no tail");
        assert!(binomial_tail(10, 0.3, 10) <= 0.0, "a limit of every bit corrects everything");
        // P(K > 0) = 1 − (1 − p)^n.
        let p = 1e-4;
        assert!((binomial_tail(32_768, p, 0) - (1.0 - (1.0 - p).powi(32_768))).abs() < 1e-12);
        // Far tails stay positive and tiny rather than rounding to 0 or going negative.
        let far = binomial_tail(32_768, 1e-4, 40);
        assert!(far > 0.0 && far < 1e-20, "{far}");
    }

    #[test]
    fn the_slow_path_share_is_the_binomial_tail() {
        let c = EccConfig { codeword: Bytes(4096), rber: 1e-3, hard_limit: 45, soft_decode: SimDuration::from_us(20), soft_decoders: 0 };
        let mut e = Ecc::new(&c, 7);
        let p = e.p_read(4096);
        assert!(p > 1e-3 && p < 0.2, "{p}");
        let n = 200_000_u32;
        let slow = (0..n).filter(|_| e.draw(4096, SimTime::ZERO) > SimDuration::ZERO).count() as f64 / f64::from(n);
        let sd = (p * (1.0 - p) / f64::from(n)).sqrt();
        assert!((slow - p).abs() < 5.0 * sd, "measured {slow} vs {p}");
        // A read of two codewords is twice as likely (to first order) to take the slow path.
        assert!((e.p_read(8192) - (1.0 - (1.0 - p).powi(2))).abs() < 1e-12);
    }

    #[test]
    fn slow_path_reads_queue_for_a_finite_number_of_decoders() {
        // Every read takes the slow path (a hard limit of 0 at a high error rate).
        let c = EccConfig { codeword: Bytes(4096), rber: 1e-2, hard_limit: 0, soft_decode: SimDuration::from_us(10), soft_decoders: 2 };
        let mut e = Ecc::new(&c, 1);
        let t = SimTime::ZERO;
        // Four reads at once on two decoders: two start now, two wait one decode.
        let got: Vec<u64> = (0..4).map(|_| e.draw(4096, t).as_ps() / 1000).collect();
        assert_eq!(got, [10_000, 10_000, 20_000, 20_000]);
        assert_eq!(e.decoder_wait, SimDuration::from_us(20));
        // A read after both have freed waits for none.
        assert_eq!(e.draw(4096, t + SimDuration::from_us(20)), SimDuration::from_us(10));
        // With as many decoders as needed nobody waits.
        let mut free = Ecc::new(&EccConfig { soft_decoders: 0, ..c }, 1);
        assert!((0..4).all(|_| free.draw(4096, t) == SimDuration::from_us(10)));
    }
}
