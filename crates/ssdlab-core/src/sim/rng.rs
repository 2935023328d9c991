//! Seeded random streams.
//!
//! A run has one master seed (`workload.randseed`). Every consumer (each host job, each
//! policy that draws) gets its own stream derived from the master seed and a fixed stream
//! id, so adding a consumer never perturbs the numbers another one draws. The generator is
//! PCG64-MCG, named explicitly so its output cannot change under us with a library upgrade.

/// The generator every model uses.
pub type Rng = rand_pcg::Pcg64Mcg;

/// Derives the seed of stream `stream` from the master seed (`SplitMix64` finaliser, which maps
/// nearby inputs to unrelated outputs).
pub fn stream_seed(master: u64, stream: u64) -> u128 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let a = mix(master.wrapping_add(0x9e37_79b9_7f4a_7c15).wrapping_add(stream.wrapping_mul(0xd1b5_4a32_d192_ed03)));
    let b = mix(a ^ stream.rotate_left(17));
    (u128::from(a) << 64) | u128::from(b) | 1
}
