// Prints the ConsistentChooseK test vectors of chash
// (testdata/choosek/vectors.tsv) from github/rust-gems' crate
// consistent-choose-k (formerly consistent-hashing), whose source modules
// this program includes: see README.md beside it for how to build and run
// it. A key k is the hasher hk(k): std's DefaultHasher (SipHash-1-3 with
// zero keys) after k.hash(), i.e. after writing k's 8 little-endian bytes.
//
// Lines, tab-separated:
//   prev <key_hex> <n> <h>          ConsistentHasher::new(hk(key)).prev(n) = h
//   rank <key_hex> <n> <r0,r1,...>  ConsistentChooseKHasher::new(hk(key), n)
//                                   yields r0, r1, ... (the first k, all if n <= 24)
//   map <name> <total> <deleted>    a ConsistentNodeMap of total slots with the
//                                   deleted ones (comma-separated, "-" if none)
//   get <name> <key_hex> <slot> <top>  map.get(hk(key)) = slot; top is the
//                                   first 5 active slots of the ranking

#[allow(dead_code)]
#[path = "consistent-choose-k/src/consistent_hash.rs"]
mod consistent_hash;
#[allow(dead_code)]
#[path = "consistent-choose-k/src/choose_k.rs"]
mod choose_k;
#[allow(dead_code)]
#[path = "consistent-choose-k/src/node_map.rs"]
mod node_map;

pub use choose_k::ConsistentChooseKHasher;
pub use consistent_hash::{ConsistentHasher, HashSeqBuilder, HashSequence, ManySeqBuilder};
pub use node_map::ConsistentNodeMap;

use std::hash::{DefaultHasher, Hash};

fn hk(key: u64) -> DefaultHasher {
    let mut h = DefaultHasher::default();
    key.hash(&mut h);
    h
}

// SplitMix64, to draw keys and sizes reproducibly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
}

fn join(v: &[usize]) -> String {
    if v.is_empty() {
        return "-".to_string();
    }
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn key(i: u64, rng: &mut Rng) -> u64 {
    if i < 4 {
        [0, 1, u64::MAX, 1 << 63][i as usize]
    } else if i % 2 == 0 {
        (i + 1).wrapping_mul(0x9e3779b97f4a7c15)
    } else {
        rng.next()
    }
}

fn main() {
    let mut rng = Rng(20260521);
    // prev: bucket counts 1 to 40, around powers of two, and large ones.
    let mut ns: Vec<usize> = (1..=40).collect();
    for s in 6..40 {
        ns.extend_from_slice(&[(1usize << s) - 1, 1 << s, (1 << s) + 1]);
    }
    for i in 0..600u64 {
        let k = key(i, &mut rng);
        let n = ns[(i as usize) % ns.len()];
        let got = ConsistentHasher::new(hk(k)).prev(n).unwrap();
        println!("prev\t{:016x}\t{}\t{}", k, n, got);
    }
    // rank: the ranking's prefix.
    let rank_ns = [1usize, 2, 3, 4, 5, 8, 10, 16, 17, 24, 50, 64, 100, 1000, 65536, 1000000];
    for i in 0..800u64 {
        let k = key(i, &mut rng);
        let n = rank_ns[(i as usize) % rank_ns.len()];
        let take = if n <= 24 { n } else { 1 + (i as usize / rank_ns.len()) % 12 };
        let r: Vec<usize> = ConsistentChooseKHasher::new(hk(k), n).take(take).collect();
        println!("rank\t{:016x}\t{}\t{}", k, n, join(&r));
    }
    // NodeMaps: slots removed at random (10%, 50%, 90%, all but a few),
    // the shared sample's 20-rm3,7,18,19, and removals in the middle.
    let mut maps: Vec<(String, usize, Vec<usize>)> = vec![
        ("20-rm3,7,18,19".into(), 20, vec![3, 7, 18, 19]),
        ("10-rm0".into(), 10, vec![0]),
        ("10-rm5".into(), 10, vec![5]),
        ("10-rm9,5".into(), 10, vec![9, 5]),
        ("3-rm0,1".into(), 3, vec![0, 1]),
    ];
    for &(n, pct) in &[(100usize, 10usize), (100, 50), (100, 90), (1000, 10), (1000, 50), (1000, 90), (1000, 99), (64, 0)] {
        let mut slots: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            slots.swap(i, j);
        }
        maps.push((format!("{}-{}pct", n, pct), n, slots[..n * pct / 100].to_vec()));
    }
    for (name, total, deleted) in &maps {
        let mut m = ConsistentNodeMap::new();
        for _ in 0..*total {
            m.add();
        }
        for &d in deleted {
            m.remove(d);
        }
        let mut del: Vec<usize> = (0..m.slot_count()).filter(|&s| !m.is_active(s)).collect();
        del.sort();
        println!("map\t{}\t{}\t{}", name, m.slot_count(), join(&del));
        let keys = if *total >= 1000 { 60 } else { 40 };
        for i in 0..keys {
            let k = key(i, &mut rng);
            let slot = m.get(hk(k)).unwrap();
            let top: Vec<usize> = ConsistentChooseKHasher::new(hk(k), m.slot_count())
                .filter(|&s| m.is_active(s))
                .take(5)
                .collect();
            assert_eq!(slot, top[0]);
            println!("get\t{}\t{:016x}\t{}\t{}", name, k, slot, join(&top));
        }
    }
}
