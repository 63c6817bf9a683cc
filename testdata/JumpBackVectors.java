// Prints test vectors for chash.JumpBackHash: Ertl's JumpBackHash (2024)
// with SplitMix64, written from the paper's algorithm in Java so that the
// vectors carry Java's semantics (32-bit int, shift counts taken mod 32 for
// int and mod 64 for long), as hash4j's implementation does.
//
//   java testdata/JumpBackVectors.java > testdata/jumpback_vectors.tsv
//
// Columns: the 64-bit key (hex), the bucket count, the bucket.
public class JumpBackVectors {
  static final long PHI = 0x9e3779b97f4a7c15L;

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  static int bucket(long key, int n) {
    if (n <= 1) return 0;
    long state = key + PHI;
    long r = mix(state);
    int x = ((int) (r ^ (r >>> 32))) & (0xFFFFFFFF >>> Integer.numberOfLeadingZeros(n - 1));
    for (; x != 0; ) {
      int lo = 1 << ~Integer.numberOfLeadingZeros(x); // the shift count is taken mod 32
      int b = lo + ((int) (r >>> (Integer.bitCount(x) << 5)) & (lo - 1)); // mod 64
      if (b < n) return b;
      int mask = (lo << 1) - 1;
      boolean lower = false;
      while (!lower) {
        state += PHI;
        long s = mix(state);
        for (int half = 0; half < 2 && !lower; half++) {
          b = (int) (half == 0 ? s : s >>> 32) & mask;
          if (b < lo) lower = true;
          else if (b < n) return b;
        }
      }
      x ^= lo;
    }
    return 0;
  }

  public static void main(String[] args) {
    StringBuilder out = new StringBuilder("key_hex\tbuckets\tbucket\n");
    long seed = 42;
    int[] fixed = {1, 2, 3, 4, 5, 7, 8, 9, 10, 16, 17, 63, 64, 65, 100, 1000, 1023, 1024, 1025,
        65535, 65536, 65537, 1000000, 1 << 20, (1 << 30) - 1, 1 << 30, (1 << 30) + 1, Integer.MAX_VALUE};
    for (int i = 0; i < 2000; i++) {
      seed += PHI;
      long key = mix(seed);
      if (i == 0) key = 0;
      if (i == 1) key = -1L;
      int n;
      if (i % 3 == 0) {
        n = fixed[(i / 3) % fixed.length];
      } else {
        // Bucket counts spread over every width from 1 to 31 bits.
        seed += PHI;
        long r = mix(seed);
        int width = 1 + (int) ((r >>> 40) % 31);
        n = 1 + (int) ((r & 0x7FFFFFFFL) >>> (31 - width));
        if (n <= 0) n = Integer.MAX_VALUE;
      }
      out.append(String.format("%016x\t%d\t%d\n", key, n, bucket(key, n)));
    }
    System.out.print(out);
  }
}
