//! ATC address-trace targets: the text/CSV reader (`atc-text`, with and without `skip_bad`)
//! and the raw little-endian reader (`atc-raw`, through a file as the CLI reads it).

use rand::RngExt;
use ssdlab_core::ats::trace::{Format, RawReader, TextReader};
use ssdlab_core::Error;

use crate::engine::{self, Seeds, Verdict};

const EXAMPLES: &[&str] = &[
    "0x1000\n4096 # comment\n\n  8192\n",
    "kind,addr,size,pasid\nsq,0x10,64,1\ndata,0x2000,4096,2\ncq,0x3000,16,1\n",
    "# iova trace\naddress len vm queue\n0x7f0000001000 4096 3 data\n0x7f0000002000 512 3 pin\n",
    "addr\n0x1_0000\n65536\n0XFFFF\n",
];

pub fn check_text(input: &[u8]) -> Verdict {
    let skipping = TextReader::new("fuzz".into(), input, true).collect::<Result<Vec<_>, _>>();
    let strict = TextReader::new("fuzz".into(), input, false).collect::<Result<Vec<_>, _>>();
    match (skipping, strict) {
        (_, Ok(_)) => Verdict::Accepted,
        (_, Err(Error::Trace { location, .. })) => {
            assert!(location.starts_with("fuzz:"), "{location}");
            Verdict::Rejected
        }
        (_, Err(Error::Io { .. })) => Verdict::Rejected,
        (_, Err(e)) => panic!("not a trace or I/O error: {e}"),
    }
}

pub fn check_raw(input: &[u8]) -> Verdict {
    let path = engine::scratch(&format!("atc-{:?}.bin", std::thread::current().id()));
    std::fs::write(&path, input).expect("write the scratch trace");
    assert_eq!(Format::detect(&path), Format::Raw);
    let v = match RawReader::open(&path).and_then(Iterator::collect::<Result<Vec<_>, _>>) {
        Ok(a) => {
            assert_eq!(a.len(), input.len() / 8);
            Verdict::Accepted
        }
        Err(Error::Trace { .. }) => Verdict::Rejected,
        Err(e) => panic!("not a trace error: {e}"),
    };
    let _ = std::fs::remove_file(&path);
    v
}

#[test]
fn atc_text() {
    let s = Seeds::new(EXAMPLES.iter().map(|t| t.as_bytes().to_vec()), 40);
    engine::run("atc-text", engine::parser_cases(), |rng| s.mutate(rng), check_text);
}

#[test]
fn atc_raw() {
    engine::run(
        "atc-raw",
        engine::parser_cases(),
        |rng| {
            let n = rng.random_range(0..200);
            (0..n).map(|_| rng.random()).collect()
        },
        check_raw,
    );
}
