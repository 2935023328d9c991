//! Block-trace targets: each text format through its own parser (`trace-<format>`), format
//! detection through compressed files (`trace-detect`), and the canonical Parquet
//! (`trace-parquet`). Seeds: the samples in ../shared/data/traces when they are there, and
//! the documented example line of every format.

use std::io::{Cursor, Read, Write};
use std::sync::Arc;

use rand::RngExt;
use ssdlab_core::io::Op;
use ssdlab_core::trace::{Format, ReadOptions, TraceReader};
use ssdlab_core::Error;

use crate::engine::{self, Rng, Seeds, Verdict};

/// Example lines of each format (FORMATS.md's examples, or the samples' first lines).
const EXAMPLES: &[(Format, &str)] = &[
    (Format::Msr, "128166385295514663,hm,0,Write,9056014336,2048,2833\n128166385296327366,hm,0,Read,3154166272,4096,18192\n"),
    (Format::Spc, "0,20941264,8192,W,0.551706,Alpha/NT\n1,3436288,15872,W,1.250720,0x123,5.99,test\n0,303567,3584,w,0.000000\n"),
    (Format::Fiu, "89968195792462 20782 gzip 283193184 8 R 6 0 56f11b711d91a065a2b6458eca924523\n"),
    (Format::Alibaba, "device_id,opcode,offset,length,timestmap\n0,R,126703661056,4096,1577808000000046\n"),
    (Format::Tencent, "1538323200,4247200,128,1,1058\n1538323200,4247328,8,0,1058\n"),
    (Format::Blkparse, "259,0    3        3     0.000000299  1867  D   W 763360912 + 8 [dmcrypt_write/2]\n259,0    1        1     0.000000000  1867  Q  FWFS [kworker]\nCPU0 (nvme0n1):\n"),
    (Format::FioV2, "fio version 2 iolog\n/tmp/f add\n/tmp/f open\n/tmp/f write 0 4096\n/tmp/f wait 1000 0\n/tmp/f trim 8192 4096\n/tmp/f close\n"),
    (Format::FioV3, "fio version 3 iolog\n0 /tmp/fiotest/f1g add\n19376 /tmp/fiotest/f1g read 64757760 4096\n"),
    (Format::Mqsim, "938513000 4 264719034 16 0\n938600000 4 1024 8 1\n"),
    (Format::Disksim, "12.504000 0 1032 16 1\n13.0 2 8 8 0x80\n"),
];

/// The samples of ../shared/data/traces, per format (the first 4,000 lines of each).
fn samples(format: Format) -> Vec<Vec<u8>> {
    let names: &[&str] = match format {
        Format::Msr => &["msr-cambridge1-sample.csv"],
        Format::Tencent => &["tencent-cbs-cloud_storage-sample.bz2"],
        Format::Blkparse => &["blkparse-nvme0n1.blktrace.txt"],
        Format::FioV2 => &["fio-v2-handwritten.iolog"],
        Format::FioV3 => &["fio-3.33-randrw-v3.iolog"],
        Format::Mqsim => &["mqsim_tpcc-small.trace", "mqsim_wsrch-small.trace"],
        _ => &[],
    };
    let mut out = Vec::new();
    for name in names {
        let Some(p) = crate::shared(&format!("traces/{name}")) else { continue };
        let raw = std::fs::read(&p).expect("read a sample");
        let mut text = Vec::new();
        if std::path::Path::new(name).extension().is_some_and(|e| e == "bz2") {
            bzip2::read::MultiBzDecoder::new(&raw[..]).take(1 << 20).read_to_end(&mut text).expect("unpack a sample");
        } else {
            text = raw;
        }
        out.push(text.split_inclusive(|&c| c == b'\n').take(4000).collect::<Vec<_>>().concat());
    }
    out
}

/// Seeds of one format: its samples and examples, and every other format's examples (so that
/// the parser meets its neighbours' lines).
fn seeds(format: Format) -> Seeds {
    let own = EXAMPLES.iter().filter(|(f, _)| *f == format).map(|(_, t)| t.as_bytes().to_vec());
    let others = EXAMPLES.iter().filter(|(f, _)| *f != format).map(|(_, t)| t.as_bytes().to_vec());
    Seeds::new(samples(format).into_iter().chain(own).chain(others), 40)
}

/// Reads every record of `input` as `format`; checks what a reader promises of its records.
fn read_text(input: &[u8], format: Format, strict: bool) -> Result<(), Error> {
    let mut r = TraceReader::from_reader("fuzz", Box::new(Cursor::new(input.to_vec())), format, strict);
    drain(&mut r, Some(input))
}

/// Reads every record; `text` (the input when it is plain text) bounds the line counts.
fn drain(r: &mut TraceReader, text: Option<&[u8]>) -> Result<(), Error> {
    let mut records = 0u64;
    while let Some(rec) = r.next_record()? {
        records += 1;
        assert!(rec.len > 0 || rec.op == Op::Flush, "a zero-length {:?} was not dropped", rec.op);
    }
    let _ = r.device_names();
    if let Some(input) = text {
        let lines = input.split_inclusive(|&c| c == b'\n').count() as u64;
        assert!(records + r.counts.bad_lines + r.counts.zero_length <= r.counts.lines && r.counts.lines <= lines, "{records} records of {lines} lines: {:?}", r.counts);
    }
    Ok(())
}

/// The check of `trace-<format>`: lenient reading never fails; strict reading accepts or
/// names the bad line.
pub fn check_format(format: Format, input: &[u8]) -> Verdict {
    if let Err(e) = read_text(input, format, false) {
        panic!("lenient reading failed: {e}");
    }
    match read_text(input, format, true) {
        Ok(()) => Verdict::Accepted,
        Err(Error::Trace { location, .. }) => {
            assert!(location.starts_with("fuzz:"), "{location}");
            Verdict::Rejected
        }
        Err(e) => panic!("not a trace error: {e}"),
    }
}

/// Opens `input` as a file, as `ssdlab trace` does (detection, decompression, Parquet).
fn check_file(input: &[u8], name: &str) -> Verdict {
    let path = engine::scratch(&format!("{name}-{:?}", std::thread::current().id()));
    std::fs::write(&path, input).expect("write the scratch trace");
    let v = match TraceReader::open(&path, &ReadOptions { strict: false, ..ReadOptions::default() }).and_then(|mut r| drain(&mut r, None)) {
        Ok(()) => Verdict::Accepted,
        Err(Error::Trace { .. } | Error::Io { .. }) => Verdict::Rejected,
        Err(e) => panic!("not a trace or I/O error: {e}"),
    };
    let _ = std::fs::remove_file(&path);
    v
}

pub fn check_detect(input: &[u8]) -> Verdict {
    check_file(input, "detect")
}

pub fn check_parquet(input: &[u8]) -> Verdict {
    check_file(input, "parquet")
}

/// A mutated text, often compressed (gzip, bzip2, zstd) and then perhaps damaged, or behind
/// xz's magic (xz has no encoder in this build: its decoder meets garbage only).
fn compressed(seeds: &Seeds, rng: &mut Rng) -> Vec<u8> {
    let text = seeds.mutate(rng);
    let mut out = match rng.random_range(0..8) {
        0 => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&text).expect("gzip");
            e.finish().expect("gzip")
        }
        1 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(&text).expect("bzip2");
            e.finish().expect("bzip2")
        }
        2 => zstd::encode_all(&text[..], 1).expect("zstd"),
        3 => [&[0xfd, b'7', b'z', b'X', b'Z', 0][..], &text].concat(),
        _ => return text,
    };
    if rng.random_bool(0.5) {
        seeds.damage(&mut out, rng);
    }
    out
}

macro_rules! format_targets {
    ($($test:ident: $format:expr),* $(,)?) => {$(
        #[test]
        fn $test() {
            let s = seeds($format);
            engine::run(&format!("trace-{}", $format), engine::parser_cases(), |rng| s.mutate(rng), |i| check_format($format, i));
        }
    )*};
}

format_targets!(
    trace_msr: Format::Msr,
    trace_spc: Format::Spc,
    trace_fiu: Format::Fiu,
    trace_alibaba: Format::Alibaba,
    trace_tencent: Format::Tencent,
    trace_blkparse: Format::Blkparse,
    trace_fio_v2: Format::FioV2,
    trace_fio_v3: Format::FioV3,
    trace_mqsim: Format::Mqsim,
    trace_disksim: Format::Disksim,
);

#[test]
fn trace_detect() {
    let all: Vec<Vec<u8>> = Format::ALL.iter().flat_map(|(f, _)| samples(*f)).chain(EXAMPLES.iter().map(|(_, t)| t.as_bytes().to_vec())).collect();
    let s = Seeds::new(all, 80);
    engine::run("trace-detect", engine::parser_cases(), |rng| compressed(&s, rng), check_detect);
}

/// A canonical Parquet trace of a few rows, written with the parquet crate's own writer (the
/// CLI writes it with pyarrow): `dev` as names or as numbers, with or without metadata.
fn parquet_seed(named: bool, meta: Option<&str>) -> Vec<u8> {
    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;

    let dev = if named { "required binary dev (UTF8);" } else { "required int32 dev;" };
    let schema = format!("message trace {{ required int64 time_ns; required binary op (UTF8); required int64 offset; required int64 len; {dev} }}");
    let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema).expect("schema"));
    let props = WriterProperties::builder().set_key_value_metadata(meta.map(|m| vec![KeyValue::new("ssdlab.trace".into(), m.to_string())])).build();
    let mut buf = Vec::new();
    let mut w = SerializedFileWriter::new(&mut buf, schema, Arc::new(props)).expect("writer");
    for group in 0..2i64 {
        let mut rg = w.next_row_group().expect("row group");
        let mut i = 0;
        while let Some(mut col) = rg.next_column().expect("column") {
            match i {
                1 => col.typed::<ByteArrayType>().write_batch(&[ByteArray::from("read"), ByteArray::from("write"), ByteArray::from("trim")], None, None),
                4 if named => col.typed::<ByteArrayType>().write_batch(&[ByteArray::from("hm_0"), ByteArray::from("7"), ByteArray::from("hm_0")], None, None),
                4 => col.typed::<Int32Type>().write_batch(&[0, 3, -1], None, None),
                _ => col.typed::<Int64Type>().write_batch(&[group * 100, 4096, i64::MAX], None, None),
            }
            .expect("write a column");
            col.close().expect("close a column");
            i += 1;
        }
        rg.close().expect("close a row group");
    }
    w.close().expect("close the file");
    buf
}

#[test]
fn trace_parquet() {
    let s = Seeds::new(
        [
            parquet_seed(true, Some(r#"{"schema_version": 2, "time_origin_ns": 128166385295514663, "devices": ["hm_0", "x"], "format": "msr"}"#)),
            parquet_seed(true, Some(r#"{"schema_version": 2, "device_ids": true}"#)),
            parquet_seed(false, None),
        ],
        usize::MAX,
    );
    engine::run("trace-parquet", engine::parser_cases(), |rng| s.mutate(rng), check_parquet);
}

/// The seeds' own readers accept them (else a target fuzzes error paths only).
#[test]
fn seeds_parse() {
    for (format, text) in EXAMPLES {
        assert_eq!(check_format(*format, text.as_bytes()), Verdict::Accepted, "{format}");
        for s in samples(*format) {
            assert_eq!(check_format(*format, &s), Verdict::Accepted, "{format} sample");
        }
    }
    assert_eq!(check_parquet(&parquet_seed(false, None)), Verdict::Accepted);
}
