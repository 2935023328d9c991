//! The preset library: annotated TOML files under `presets/`, compiled into the binary so that
//! a preset name works anywhere. Each file cites the source of every number it sets.

/// The preset `ssdlab run` uses when given no config.
pub const DEFAULT: &str = "default";

/// `(name, TOML text)` of every preset, in listing order.
pub const PRESETS: &[(&str, &str)] = &[
    ("default", include_str!("../../../../presets/default.toml")),
    ("default-hw", include_str!("../../../../presets/default-hw.toml")),
    ("dram-polled", include_str!("../../../../presets/dram-polled.toml")),
    ("tlc", include_str!("../../../../presets/tlc.toml")),
    ("tlc-aged", include_str!("../../../../presets/tlc-aged.toml")),
    ("zns", include_str!("../../../../presets/zns.toml")),
    ("slc", include_str!("../../../../presets/slc.toml")),
    ("mlc", include_str!("../../../../presets/mlc.toml")),
    ("qlc", include_str!("../../../../presets/qlc.toml")),
    ("znand", include_str!("../../../../presets/znand.toml")),
    ("ops-isolation", include_str!("../../../../presets/ops-isolation.toml")),
    ("mqsim", include_str!("../../../../presets/mqsim.toml")),
    ("p4800x", include_str!("../../../../presets/p4800x.toml")),
    ("sz985", include_str!("../../../../presets/sz985.toml")),
    ("p4500", include_str!("../../../../presets/p4500.toml")),
    ("p4500-1tb", include_str!("../../../../presets/p4500-1tb.toml")),
    ("p4500-4tb", include_str!("../../../../presets/p4500-4tb.toml")),
    ("p3700", include_str!("../../../../presets/p3700.toml")),
    ("micron9100", include_str!("../../../../presets/micron9100.toml")),
    ("970pro", include_str!("../../../../presets/970pro.toml")),
    ("pm9a3", include_str!("../../../../presets/pm9a3.toml")),
    ("optane", include_str!("../../../../presets/optane.toml")),
    ("pcm", include_str!("../../../../presets/pcm.toml")),
    ("mram", include_str!("../../../../presets/mram.toml")),
    ("stt-mram", include_str!("../../../../presets/stt-mram.toml")),
    ("dram", include_str!("../../../../presets/dram.toml")),
    ("openexpress-fw", include_str!("../../../../presets/openexpress-fw.toml")),
    ("openexpress-hw", include_str!("../../../../presets/openexpress-hw.toml")),
    ("moneta", include_str!("../../../../presets/moneta.toml")),
    ("moneta-nosched", include_str!("../../../../presets/moneta-nosched.toml")),
    ("moneta-atomic", include_str!("../../../../presets/moneta-atomic.toml")),
    ("moneta-spin", include_str!("../../../../presets/moneta-spin.toml")),
];

/// The TOML text of a preset.
pub fn get(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|p| p.0 == name).map(|p| p.1)
}

/// Every preset name.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}
