// Prints the FlipHash test vectors of chash (testdata/fliphash/vectors.tsv)
// from Datadog's Rust crate fliphash (github.com/DataDog/fliphash-rs, the
// integer path fliphash_64_with_seed), whose src/lib.rs this program
// includes as a module: see README.md beside it for how to build and run it.
//
// Columns: key (hex), seed (hex), range_end, result =
// fliphash_64_with_seed(key, seed, ..=range_end).

#[allow(unused_attributes, dead_code)]
#[path = "fliphash-rs/src/lib.rs"]
mod fliphash;

// SplitMix64, to draw keys and range ends reproducibly.
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

fn main() {
    let mut rng = Rng(20240917);
    let seeds = [0u64, 0x75bcd15, 0xffffffffffffffff];
    let mut ends: Vec<u64> = (0..=70).collect();
    for s in 7..64 {
        let p = 1u64 << s;
        ends.extend_from_slice(&[p - 2, p - 1, p, p + 1]);
    }
    ends.extend_from_slice(&[999, 1000, 999_999, 1_000_000, 999_999_999_999, u64::MAX - 1, u64::MAX]);
    let special = [0u64, 1, 2, 0xffffffffffffffff, 0x8000000000000000, 0x7fffffffffffffff, 1234];
    println!("key_hex\tseed_hex\trange_end\tresult");
    let mut line = 0usize;
    for i in 0..3000u64 {
        let key = if (i as usize) < special.len() {
            special[i as usize]
        } else {
            (i + 1).wrapping_mul(0x9e3779b97f4a7c15)
        };
        let seed = seeds[(i % 3) as usize];
        let end = if i % 2 == 0 {
            ends[line % ends.len()]
        } else {
            // A range end of a random width from 1 to 64 bits.
            let r = rng.next();
            let width = 1 + (r >> 58) as u32; // 1 to 64
            rng.next() >> (64 - width)
        };
        line += 1;
        let got = fliphash::fliphash_64_with_seed(key, seed, ..=end);
        println!("{:016x}\t{:016x}\t{}\t{}", key, seed, end, got);
    }
}
