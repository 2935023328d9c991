//! Trace readers against the real samples in ../shared/data/traces (read in place), the
//! documented example lines of the formats without a sample, and mutated input.

use std::fmt::Write;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use rand::{RngExt, SeedableRng};
use ssdlab_core::io::Op;
use ssdlab_core::trace::stats::{stats_file, TraceStats};
use ssdlab_core::trace::{detect, Format, ReadOptions, Record, TraceReader};

fn sample(name: &str) -> Option<PathBuf> {
    crate::shared(&format!("traces/{name}"))
}

fn read_all(path: &Path, format: Option<Format>) -> (Format, Vec<Record>) {
    let mut r = TraceReader::open(path, &ReadOptions { format, ..ReadOptions::default() }).expect("open");
    let recs: Vec<Record> = r.by_ref().collect::<Result<_, _>>().expect("every line parses");
    (r.format, recs)
}

fn text(format: Format, body: &str, strict: bool) -> (Vec<Record>, TraceReader) {
    let mut r = TraceReader::from_reader("inline", Box::new(Cursor::new(body.as_bytes().to_vec())), format, strict);
    let recs = r.by_ref().collect::<Result<Vec<_>, _>>().expect("parses");
    (recs, r)
}

#[test]
fn mqsim_samples_0_is_write_and_no_final_newline() {
    let Some(p) = sample("mqsim_tpcc-small.trace") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::Mqsim);
    assert_eq!(recs.len(), 6999);
    assert_eq!(recs[0], Record { time_ns: 938_513_000, op: Op::Write, offset: 264_719_034 * 512, len: 16 * 512, dev: 4 });
    let Some(p) = sample("mqsim_wsrch-small.trace") else { return };
    let (_, recs) = read_all(&p, None);
    assert_eq!(recs.len(), 24_783, "the last line has no newline and still counts");
    assert_eq!(recs.iter().filter(|r| r.op == Op::Read).count(), 24_779);
}

#[test]
fn msr_cambridge_sample() {
    let Some(p) = sample("msr-cambridge1-sample.csv") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::Msr);
    assert_eq!(recs.len(), 1000);
    assert_eq!(recs[0], Record { time_ns: 128_166_385_295_514_663 * 100, op: Op::Write, offset: 9_056_014_336, len: 2048, dev: 0 });
    let (_, s) = stats_file(&p, &ReadOptions::default(), 5, |_| true).unwrap();
    assert_eq!(s.per_device[0].name.as_deref(), Some("hm_0"));
}

#[test]
fn tencent_sample_is_bzip2_with_non_monotonic_seconds() {
    let Some(p) = sample("tencent-cbs-cloud_storage-sample.bz2") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::Tencent);
    assert_eq!(recs.len(), 50_000);
    assert_eq!(recs[0], Record { time_ns: 1_538_323_200 * 1_000_000_000, op: Op::Write, offset: 4_247_200 * 512, len: 128 * 512, dev: 1058 });
    let (_, s) = stats_file(&p, &ReadOptions::default(), 3, |_| true).unwrap();
    assert_eq!((s.reads, s.writes, s.devices), (24_521, 25_479, 2038));
    assert!(s.out_of_order > 0, "1538323200 is followed by 1538323199");
}

#[test]
fn blkparse_sample_keeps_one_action_and_skips_the_summary() {
    let Some(p) = sample("blkparse-nvme0n1.blktrace.txt") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::Blkparse);
    assert_eq!(recs.len(), 142, "one record per D (issue) event");
    assert!(recs.iter().any(|r| r.op == Op::Flush && r.len == 0));
    let mut q = TraceReader::open(&p, &ReadOptions { blk_action: b'Q', ..ReadOptions::default() }).unwrap();
    assert_eq!(q.by_ref().count(), 248, "or one per Q (queue) event");
    let first = recs[0];
    assert_eq!(first.dev, (259 << 20), "device 259,0");
}

#[test]
fn fio_iologs_v2_and_v3() {
    let Some(p) = sample("fio-3.33-randrw-v3.iolog") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::FioV3);
    assert_eq!(recs.len(), 2000, "fio ran number_ios=2000");
    assert_eq!(recs[0], Record { time_ns: 19_376_000, op: Op::Read, offset: 64_757_760, len: 4096, dev: 0 });
    let reads = recs.iter().filter(|r| r.op == Op::Read).count() as f64 / 2000.0;
    assert!((reads - 0.7).abs() < 0.05, "rwmixread=70: {reads}");
    let Some(p) = sample("fio-v2-handwritten.iolog") else { return };
    let (f, recs) = read_all(&p, None);
    assert_eq!(f, Format::FioV2);
    let ops: Vec<(Op, u64, u64)> = recs.iter().map(|r| (r.op, r.time_ns, r.len)).collect();
    assert_eq!(ops, [(Op::Read, 0, 4096), (Op::Write, 1_000_000, 8192), (Op::Trim, 1_000_000, 65536), (Op::Read, 1_000_000, 4096)], "wait 1000 moves the clock 1 ms");
}

#[test]
fn formats_without_a_sample_read_their_documented_lines() {
    // FORMATS.md 1.2: the spec's examples and Financial1's first line (lowercase opcode).
    let (r, _) = text(Format::Spc, "0,20941264,8192,W,0.551706,Alpha/NT\n1,3436288,15872,W,1.250720,0x123,5.99,test\n0,303567,3584,w,0.000000\n", true);
    assert_eq!(r[0], Record { time_ns: 551_706_000, op: Op::Write, offset: 20_941_264 * 512, len: 8192, dev: 0 });
    assert_eq!((r[1].dev, r[1].time_ns), (1, 1_250_720_000));
    assert_eq!(r[2].op, Op::Write);
    // The spec's own typo is malformed, not silently misread.
    let mut bad = TraceReader::from_reader("spc", Box::new(Cursor::new(b"2,30862016,4096,W,2 448003\n".to_vec())), Format::Spc, true);
    let e = bad.next_record().unwrap_err().to_string();
    assert!(e.starts_with("spc:1: timestamp \"2 448003\""), "{e}");
    // 1.3 FIU.
    let (r, _) = text(Format::Fiu, "89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523\n", true);
    assert_eq!(r[0], Record { time_ns: 89_968_195_792_462, op: Op::Read, offset: 283_193_184 * 512, len: 4096, dev: 6 << 20 });
    // 1.4 Alibaba (with the README's misspelt header).
    let (r, _) = text(Format::Alibaba, "device_id,opcode,offset,length,timestmap\n0,R,126703661056,4096,1577808000000046\n", true);
    assert_eq!(r, [Record { time_ns: 1_577_808_000_000_046_000, op: Op::Read, offset: 126_703_661_056, len: 4096, dev: 0 }]);
    // 1.9 DiskSim: float ms, hex flags, bit 0 = read.
    let (r, _) = text(Format::Disksim, "12.504000 0 1032 16 1\n13.0 2 8 8 0x80\n", true);
    assert_eq!(r[0], Record { time_ns: 12_504_000, op: Op::Read, offset: 1032 * 512, len: 8192, dev: 0 });
    assert_eq!(r[1].op, Op::Write);
}

#[test]
fn detection_tells_the_formats_apart() {
    for (name, f) in [
        ("mqsim_tpcc-small.trace", Format::Mqsim),
        ("msr-cambridge1-sample.csv", Format::Msr),
        ("tencent-cbs-cloud_storage-sample.bz2", Format::Tencent),
        ("blkparse-nvme0n1.blktrace.txt", Format::Blkparse),
        ("fio-3.33-randrw-v3.iolog", Format::FioV3),
        ("fio-v2-handwritten.iolog", Format::FioV2),
    ] {
        let Some(p) = sample(name) else { continue };
        assert_eq!(detect(&p).unwrap(), f, "{name}");
    }
    let dir = crate::scratch_dir("detect");
    for (body, f) in [
        ("0,303567,3584,w,0.000000\n0,303575,512,r,0.01\n", Format::Spc),
        ("0,R,126703661056,4096,1577808000000046\n", Format::Alibaba),
        ("12.504000 0 1032 16 1\n", Format::Disksim),
        ("89968195792462 20782 gzip 283193184 8 R 6 0 56f1\n", Format::Fiu),
    ] {
        let p = dir.join("t.txt");
        std::fs::write(&p, body).unwrap();
        assert_eq!(detect(&p).unwrap(), f, "{body}");
    }
    let p = dir.join("junk.txt");
    std::fs::write(&p, "hello world\n").unwrap();
    let e = detect(&p).unwrap_err().to_string();
    assert!(e.contains("junk.txt:1") && e.contains("--format"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn strict_stops_at_file_line_lenient_skips_and_counts_zero_length_is_dropped() {
    let body = "1 0 8 8 1\n2 0 x 8 1\n3 0 16 0 1\n4 0 24 8 2\n5 0 32 8 0\n";
    let mut strict = TraceReader::from_reader("t.trace", Box::new(Cursor::new(body.as_bytes().to_vec())), Format::Mqsim, true);
    assert!(strict.next_record().unwrap().is_some());
    let e = strict.next_record().unwrap_err().to_string();
    assert_eq!(e, "t.trace:2: lba \"x\" is not valid (mqsim trace): \"2 0 x 8 1\"");
    let (recs, r) = text(Format::Mqsim, body, false);
    assert_eq!(recs.len(), 2);
    assert_eq!((r.counts.bad_lines, r.counts.zero_length, r.counts.lines), (2, 1, 5));
    assert!(r.counts.first_bad.as_deref().unwrap().starts_with("inline:2:"));
}

#[test]
fn stats_match_a_count_by_hand() {
    // Two devices; the second request of dev 0 continues the first; 8 KiB at 4 KiB spans 2 pages.
    let body = "0 0 0 8 1\n1000 0 8 16 0\n3000 1 0 8 1\n2000 1 800 8 1\n";
    let (recs, r) = text(Format::Mqsim, body, true);
    let mut s = TraceStats::default();
    for rec in &recs {
        s.add(rec);
    }
    let sum = s.summary(&r.counts, 10);
    assert_eq!((sum.ios, sum.reads, sum.writes), (4, 3, 1));
    assert_eq!(sum.footprint_bytes, (3 + 2) * 4096, "dev 0: pages 0..=2; dev 1: pages 0 and 100");
    assert!((sum.sequential_ratio - 0.25).abs() < 1e-12);
    assert_eq!(sum.out_of_order, 1);
    assert_eq!(sum.devices, 2);
    assert_eq!(sum.size_histogram.iter().map(|b| (b.le_bytes, b.count)).collect::<Vec<_>>(), [(4096, 3), (8192, 1)]);
}

#[test]
fn a_bad_line_among_the_first_is_reported_under_its_own_number_or_skipped() {
    let dir = crate::scratch_dir("detect-bad");
    let p = dir.join("msr.csv");
    let mut body = String::new();
    for i in 0..20u64 {
        writeln!(body, "{},hm,0,Read,{},4096,100", 128_166_372_000_000_000 + i, i * 4096).unwrap();
    }
    body.insert_str(body.match_indices('\n').nth(6).unwrap().0 + 1, "128166372000000007,hm,0,Read,zebra,4096,100\n");
    std::fs::write(&p, &body).unwrap();
    assert_eq!(detect(&p).unwrap(), Format::Msr);
    let strict = TraceReader::open(&p, &ReadOptions::default()).unwrap().collect::<Result<Vec<_>, _>>().unwrap_err().to_string();
    assert!(strict.contains("msr.csv:8:") && strict.contains("zebra"), "{strict}");
    let mut lenient = TraceReader::open(&p, &ReadOptions { strict: false, ..ReadOptions::default() }).unwrap();
    assert_eq!(lenient.by_ref().count(), 20);
    assert_eq!(lenient.counts.bad_lines, 1);
    assert!(lenient.counts.first_bad.as_deref().unwrap().contains("msr.csv:8:"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stats_of_a_petabyte_request_take_bounded_memory() {
    let dir = crate::scratch_dir("stats-huge");
    let p = dir.join("huge.csv");
    // A request past 64-bit byte addresses is a malformed line.
    std::fs::write(&p, "0,hm,0,Read,0,4096,100\n1,hm,0,Write,8192,18446744073709551615,100\n").unwrap();
    let e = stats_file(&p, &ReadOptions::default(), 10, |_| true).unwrap_err().to_string();
    assert!(e.contains("huge.csv:2:") && e.contains("beyond 64-bit"), "{e}");
    let (_, s) = stats_file(&p, &ReadOptions { strict: false, ..ReadOptions::default() }, 10, |_| true).unwrap();
    assert_eq!((s.ios, s.bad_lines, s.footprint_bytes), (1, 1, 4096));
    // 1 PiB and the largest request that fits are counted (the set keeps whole chunks as
    // intervals, so this takes kilobytes, not 32 GiB of bitmaps).
    // The last request ends exactly at 2^64 bytes.
    let (far, tail) = (1u64 << 60, u64::MAX - (1 << 60) + 1);
    std::fs::write(&p, format!("0,hm,0,Read,0,4096,100\n1,hm,0,Write,8192,{},100\n2,hm,0,Write,{far},{tail},100\n", 1u64 << 50)).unwrap();
    let (_, s) = stats_file(&p, &ReadOptions::default(), 10, |_| true).unwrap();
    assert_eq!((s.ios, s.bytes_written), (3, (1 << 50) + tail));
    // Page 0, 2^38 pages from page 2, and every page from 2^48 up.
    assert_eq!(s.footprint_bytes, (1 + (1 << 38) + ((1 << 52) - (1 << 48))) * 4096);
    std::fs::remove_dir_all(&dir).ok();
}

/// Random bytes and mutated sample lines never panic any parser; every line is a record, a
/// non-record, or counted as bad.
#[test]
fn parsers_survive_random_and_mutated_lines() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(42);
    let seeds = [
        "938513000 4 264719034 16 0",
        "128166385295514663,hm,0,Write,9056014336,2048,2833",
        "1538323200,4247200,128,1,1058",
        "259,0    3        3     0.000000299  1867  D   W 763360912 + 8 [dmcrypt_write/2]",
        "19376 /tmp/fiotest/f1g read 64757760 4096",
        "/tmp/f wait 1000 0",
        "0,20941264,8192,W,0.551706,Alpha/NT",
        "89968195792462 20782 gzip 283193184 8 R 6 0 56f11b",
        "0,R,126703661056,4096,1577808000000046",
        "12.504000 0 1032 16 1",
    ];
    for (format, _) in Format::ALL {
        let mut body = Vec::new();
        for _ in 0..3000 {
            let mut line: Vec<u8> = seeds[rng.random_range(0..seeds.len())].as_bytes().to_vec();
            match rng.random_range(0..5u32) {
                0 => line = (0..rng.random_range(0..60)).map(|_| rng.random::<u8>()).collect(),
                1 => line.truncate(rng.random_range(0..=line.len())),
                2 => {
                    for _ in 0..3 {
                        let i = rng.random_range(0..line.len().max(1));
                        if i < line.len() {
                            line[i] = rng.random();
                        }
                    }
                }
                3 => line.extend_from_slice(b"99999999999999999999999999"),
                _ => {}
            }
            line.retain(|&c| c != b'\n');
            body.extend_from_slice(&line);
            body.push(b'\n');
        }
        let mut r = TraceReader::from_reader("fuzz", Box::new(Cursor::new(body)), format, false);
        let n = r.by_ref().flatten().count() as u64;
        assert_eq!(r.counts.lines, 3000);
        assert!(n + r.counts.bad_lines + r.counts.zero_length <= 3000);
        let mut s = TraceStats::default();
        let edge = b"1,h,0,Read,18446744073709551615,4096,1\n1,h,0,Read,18446744073709547520,4096,1\n".to_vec();
        let mut r = TraceReader::from_reader("fuzz", Box::new(Cursor::new(edge)), Format::Msr, false);
        for rec in r.by_ref().flatten() {
            s.add(&rec);
        }
        // The first ends past 2^64 bytes (a bad line), the second at 2^64.
        assert_eq!((s.summary(&r.counts, 1).ios, r.counts.bad_lines), (1, 1), "offsets at the end of the address space");
    }
}
