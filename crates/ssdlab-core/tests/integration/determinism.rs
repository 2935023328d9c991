//! Same config and seed, same results, bit for bit.

use crate::run;

fn without_wall(s: &ssdlab_core::Summary) -> String {
    let mut v = serde_json::to_value(s).unwrap();
    v.as_object_mut().unwrap().remove("wall_time_s");
    v.to_string()
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_does_not() {
    let settings = [("workload.rw", "randrw"), ("workload.numjobs", "3"), ("workload.bssplit", "4k/50:64k/50"), ("workload.number_ios", "20000")];
    let a = run(&settings);
    let b = run(&settings);
    assert_eq!(without_wall(&a), without_wall(&b));
    let mut other = settings.to_vec();
    other.push(("workload.randseed", "2"));
    let c = run(&other);
    assert_ne!(without_wall(&a), without_wall(&c));
}

#[test]
fn simulations_coexist_in_threads() {
    let handles: Vec<_> = (0..2).map(|_| std::thread::spawn(|| without_wall(&run(&[("workload.number_ios", "20000")])))).collect();
    let out: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(out[0], out[1]);
}
