use crate::schema::Issues;
use crate::sim::time::MAX_PARAM;
use crate::sim::SimDuration;
use crate::units::{Bytes, Frequency};
use crate::{config_enum, config_struct};

config_enum! {
    /// Who runs the NVMe command path inside the controller.
    pub enum Mode {
        /// Embedded cores run firmware for every step, sharing one pool of cores.
        Firmware = "firmware",
        /// A dedicated pipelined hardware engine per step (OpenExpress-style automation).
        Hardware = "hardware",
    }
}

config_struct! {
    /// Firmware mode: `cores` embedded cores at `clock`, and the cycles each step costs.
    pub struct FirmwareConfig {
        /// Embedded cores that run the command path, 1 to 256. Default: `4`.
        cores: u32 = 4,
        /// Core clock. Default: `1GHz`.
        clock: Frequency = Frequency(1_000_000_000),
        /// Cycles to handle a doorbell and issue one SQE fetch. Default: `600`.
        fetch_cycles: u64 = 600,
        /// Cycles to decode a fetched SQE. Default: `400`.
        parse_cycles: u64 = 400,
        /// Cycles to start walking a command's PRPs. Default: `300`.
        prp_cycles: u64 = 300,
        /// Cycles per PRP-list entry walked. Default: `16`.
        prp_entry_cycles: u64 = 16,
        /// Cycles of address translation per media access of a command. Default: `500`.
        translate_cycles: u64 = 500,
        /// Cycles to build and post a CQE and raise the interrupt. Default: `500`.
        completion_cycles: u64 = 500,
        /// Cycles of a write's firmware work per mapping unit it writes: a buffer slot and
        /// the map update; charged with the write's translation, before its data is fetched.
        /// Default: `0`.
        write_cycles: u64 = 0,
        /// Cycles of a write's firmware work per journal record it opens: the power-loss
        /// journal logs runs of logical blocks (start, length, where they went), and a write
        /// that starts where one of the `journal_extents` most recent runs ends extends that
        /// run instead (sequential writes open one record per stream, random writes one
        /// each). Charged with `write_cycles`. Default: `0`.
        extent_cycles: u64 = 0,
        /// The firmware acknowledges a write before its write work (`write_cycles`,
        /// `extent_cycles`): the work still takes a core, once the write's completion has
        /// been built, but off the write's path (firmware that power-loss protection lets
        /// update its map after the acknowledgement). Default: `false`.
        defer_write_work: bool = false,
        /// Journal runs kept open for writes to extend (the most recent ones), 1 to 1024.
        /// Default: `8`.
        journal_extents: u32 = 8,
        /// Cycles of firmware work per mapping unit that garbage collection moves (flash): its
        /// read and program issue, buffer and map update. It takes the same cores as host
        /// commands when GC moves the unit (GC itself is not held up by busy cores).
        /// Default: `0`.
        gc_move_cycles: u64 = 0,
    }
}

config_struct! {
    /// Hardware mode: one pipelined engine per step at `clock`; each engine takes `*_cycles`
    /// of latency and accepts a new command every `issue_interval` cycles.
    pub struct HardwareConfig {
        /// Engine clock. Default: `250MHz`.
        clock: Frequency = Frequency(250_000_000),
        /// Cycles between two commands entering the same engine. Default: `1`.
        issue_interval: u64 = 1,
        /// Doorbell handling and SQE fetch issue. Default: `8`.
        fetch_cycles: u64 = 8,
        /// SQE decode. Default: `4`.
        parse_cycles: u64 = 4,
        /// PRP handling per command. Default: `6`.
        prp_cycles: u64 = 6,
        /// PRP-list walk per entry. Default: `1`.
        prp_entry_cycles: u64 = 1,
        /// Address translation per media access. Default: `4`.
        translate_cycles: u64 = 4,
        /// CQE build/post and interrupt. Default: `6`.
        completion_cycles: u64 = 6,
    }
}

config_enum! {
    /// How the controller's DMA engine moves data to and from the host.
    pub enum DmaQueues {
        /// Not modelled: every data transfer goes straight to the link.
        None = "none",
        /// One request queue and engine: reads' and writes' data move one transfer at a time.
        Shared = "shared",
        /// Separate read and write queues with an engine each, so both link directions carry
        /// data at once (Moneta).
        Split = "split",
    }
}

config_enum! {
    /// Which command's next piece the transfer engine takes.
    pub enum Split {
        /// The oldest command's: a large request goes through whole before the next.
        Fifo = "fifo",
        /// Each command's in turn: large requests are split and re-queued round robin, so small
        /// ones are not starved (Moneta).
        RoundRobin = "rr",
    }
}

config_struct! {
    /// The NVMe controller.
    pub struct CtrlConfig {
        /// `"firmware"` or `"hardware"`. Default: `"firmware"`.
        mode: Mode = Mode::Firmware,
        /// Commands the controller holds at once (tags/scoreboard), 1 to 65536. Default: `256`.
        max_inflight: u32 = 256,
        /// DMA queues: `"none"`, `"shared"` or `"split"`. Default: `"none"`.
        dma_queues: DmaQueues = DmaQueues::None,
        /// Transfer engine for reads (NVM media): pieces (chunks) in flight at once over all
        /// commands; 0 = no engine, every piece goes at once. Default: `0`.
        transfer_window: u32 = 0,
        /// Host-memory reads the controller has in flight at once: SQE fetches, PRP-list
        /// fetches and write-data fetches share them, each held from its request until its last
        /// completion has arrived; 1 serialises every payload coming into the device
        /// (0 = unlimited). Default: `0`.
        fetch_engines: u32 = 0,
        /// Bytes the controller's internal data path moves per cycle of its clock
        /// (`hardware.clock` or `firmware.clock`, by `mode`), each way: every data transfer to
        /// or from the host streams through it, so it bounds bandwidth once it is slower than
        /// the link; a fraction is an average (a 2-byte path busy 3 cycles in 4 is 1.5)
        /// (0 = not modelled). Default: `0`.
        datapath_bytes: f64 = 0.0,
        /// Bytes per cycle the data path takes of write data (from the host), where writes
        /// cross it slower than reads (an encoder in their way); in the same DMA engines as
        /// reads (0 = `datapath_bytes`). Default: `0`.
        write_datapath_bytes: f64 = 0.0,
        /// Overlap check, in bytes (aligned units; 0 = off): commands whose data ranges share
        /// a unit reach the media one at a time, in arrival order; a later one waits before its
        /// media access until the earlier one has posted its completion. Default: `0`.
        overlap: Bytes = Bytes(0),
        /// Transfer engine order: `"fifo"` or `"rr"`. Default: `"fifo"`.
        split: Split = Split::Fifo,
        /// Costs in firmware mode.
        firmware: FirmwareConfig = FirmwareConfig::default(),
        /// Costs in hardware mode.
        hardware: HardwareConfig = HardwareConfig::default(),
    }
}

impl CtrlConfig {
    pub fn validate(&self, issues: &mut Issues) {
        issues.check((1..=65_536).contains(&self.max_inflight), "ctrl.max_inflight", self.max_inflight, "must be between 1 and 65536");
        issues.check((0.0..=4096.0).contains(&self.datapath_bytes), "ctrl.datapath_bytes", self.datapath_bytes, "must be between 0 and 4096 (0 = not modelled)");
        issues.check(
            (0.0..=4096.0).contains(&self.write_datapath_bytes) && (self.write_datapath_bytes == 0.0 || self.datapath_bytes > 0.0),
            "ctrl.write_datapath_bytes",
            self.write_datapath_bytes,
            "must be between 0 and 4096 (0 = ctrl.datapath_bytes), and needs ctrl.datapath_bytes",
        );
        issues.check(self.overlap.0.is_multiple_of(512), "ctrl.overlap", self.overlap, "must be 0 (off) or a multiple of 512B");
        issues.check(self.fetch_engines <= 65_536, "ctrl.fetch_engines", self.fetch_engines, "must be at most 65536 (0 = unlimited)");
        let fw = &self.firmware;
        issues.check((1..=256).contains(&fw.cores), "ctrl.firmware.cores", fw.cores, "must be between 1 and 256");
        issues.check(fw.clock.0 > 0, "ctrl.firmware.clock", fw.clock, "must be greater than zero");
        issues.check((1..=1024).contains(&fw.journal_extents), "ctrl.firmware.journal_extents", fw.journal_extents, "must be between 1 and 1024");
        let hw = &self.hardware;
        issues.check(hw.clock.0 > 0, "ctrl.hardware.clock", hw.clock, "must be greater than zero");
        issues.check(hw.issue_interval >= 1, "ctrl.hardware.issue_interval", hw.issue_interval, "must be at least 1 cycle");
        // Every count of cycles (`*_cycles`, `issue_interval`) must give a time that fits.
        let blocks = [("firmware", fw.clock, toml::Table::try_from(fw)), ("hardware", hw.clock, toml::Table::try_from(hw))];
        for (block, clock, table) in blocks {
            for (key, n) in table.iter().flatten().filter(|(k, _)| k.ends_with("_cycles") || *k == "issue_interval").filter_map(|(k, v)| Some((k, u64::try_from(v.as_integer()?).ok()?))) {
                let d = SimDuration::cycles(n, clock.0);
                issues.check(
                    d <= MAX_PARAM,
                    &format!("ctrl.{block}.{key}"),
                    n,
                    format!("at ctrl.{block}.clock = {clock} this takes {:.0} s, which overflows simulated time (at most {MAX_PARAM})", n as f64 / clock.0 as f64),
                );
            }
        }
    }
}
