// Prints testdata/binomial/vectors.tsv: BinomialHash buckets computed by
// the authors' Java BinomialEngine
// (SUPSI-DTI-ISIN/java-consistent-hashing-algorithms,
// src/main/java/ch/supsi/dti/isin/consistenthash/binomial/BinomialEngine.java)
// built for n buckets by its constructor, BinomialEngine(n, hash). See
// README.md beside this file.
//
// Output: a header line, then one line per key and bucket count:
//   <key_hex> <n> <bucket>
// where the engine's hash of a key is the 64-bit value itself, so that
// key_hex is what chash.BinomialHash takes. Keys are
// key_i = (i+1)·0x9E3779B97F4A7C15 (mod 2^64) for i < 48, and bucket counts
// 1 to 40, powers of two and their neighbours, and a few large ones.
// Fields are separated by tabs.

import ch.supsi.dti.isin.consistenthash.binomial.BinomialEngine;
import ch.supsi.dti.isin.hashfunction.HashFunction;

public class BinomialVectors {

    // The key, given as 16 hex digits, is its own hash.
    static final class Identity implements HashFunction {
        @Override public long hash(String key) { return Long.parseUnsignedLong(key, 16); }
    }

    public static void main(String[] args) {
        java.util.TreeSet<Integer> counts = new java.util.TreeSet<>();
        for (int n = 1; n <= 40; n++) counts.add(n);
        for (int s = 6; s <= 30; s += 3) {
            counts.add((1 << s) - 1);
            counts.add(1 << s);
            counts.add((1 << s) + 1);
        }
        for (int n : new int[] {100, 1000, 1000000, 65537, Integer.MAX_VALUE}) counts.add(n);
        StringBuilder out = new StringBuilder("key_hex\tn\tbucket\n");
        HashFunction h = new Identity();
        for (int i = 0; i < 48; i++) {
            long key = (i + 1) * 0x9E3779B97F4A7C15L;
            String hex = String.format("%016x", key);
            for (int n : counts) {
                BinomialEngine e = new BinomialEngine(n, h);
                out.append(hex).append('\t').append(n).append('\t').append(e.getBucket(hex)).append('\n');
            }
        }
        System.out.print(out);
    }
}
