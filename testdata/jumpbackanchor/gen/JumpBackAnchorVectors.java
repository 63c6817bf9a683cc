// Prints the JumpBackAnchor test vectors of chash
// (testdata/jumpbackanchor/vectors.tsv) from hash4j itself:
// ConsistentHashing.jumpBackAnchorHash(PseudoRandomGeneratorProvider.splitMix64_V1()),
// compiled from hash4j's sources (see README.md beside this file).
//
// Each scenario starts from a new bucket set and applies operations; every
// line is one operation or observation, tab-separated:
//   new <scenario>                      a new ConsistentBucketSetHasher
//   add <scenario> <buckets>            addBucket() calls returned these
//                                       buckets (a run as first-last)
//   remove <scenario> <bucket> <ok>     removeBucket(bucket) returned ok (1/0)
//   state <scenario> <hex>              getState() in hex
//   bucket <scenario> <key_hex> <b>     getBucket(key) returned b
//   setstate <hex> <ok>                 setState(bytes) accepted (1) or threw (0)
import com.dynatrace.hash4j.consistent.ConsistentBucketSetHasher;
import com.dynatrace.hash4j.consistent.ConsistentHashing;
import com.dynatrace.hash4j.random.PseudoRandomGeneratorProvider;

public class JumpBackAnchorVectors {
  static final long PHI = 0x9e3779b97f4a7c15L;
  static final StringBuilder out = new StringBuilder();
  static long rng = 20241105L;

  static long next() {
    rng += PHI;
    long z = rng;
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
    return z ^ (z >>> 31);
  }

  static ConsistentBucketSetHasher fresh(String name) {
    out.append("new\t").append(name).append('\n');
    return ConsistentHashing.jumpBackAnchorHash(PseudoRandomGeneratorProvider.splitMix64_V1());
  }

  // add calls addBucket times times and prints the buckets it returned,
  // comma-separated, a run of consecutive ones as first-last.
  static void add(ConsistentBucketSetHasher h, String name, int times) {
    out.append("add\t").append(name).append('\t');
    int first = -1, last = -1;
    for (int i = 0; i <= times; i++) {
      int b = i < times ? h.addBucket() : -2;
      if (first >= 0 && b == last + 1) {
        last = b;
        continue;
      }
      if (first >= 0) {
        out.append(first);
        if (last != first) out.append('-').append(last);
        if (b != -2) out.append(',');
      }
      first = last = b;
    }
    out.append('\n');
  }

  static void remove(ConsistentBucketSetHasher h, String name, int b) {
    boolean ok = h.removeBucket(b);
    out.append("remove\t").append(name).append('\t').append(b).append('\t').append(ok ? 1 : 0).append('\n');
  }

  static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02x", x));
    return s.toString();
  }

  // observe prints the state and the buckets of keys: the first `fixed`
  // of key_i = (i+1)*PHI, then `random` random keys.
  static void observe(ConsistentBucketSetHasher h, String name, int fixed, int random) {
    out.append("state\t").append(name).append('\t').append(hex(h.getState())).append('\n');
    if (h.getNumBuckets() == 0) return;
    for (int i = 0; i < fixed + random; i++) {
      long key = i < fixed ? (i + 1) * PHI : next();
      out.append("bucket\t").append(name).append('\t').append(String.format("%016x", key))
          .append('\t').append(h.getBucket(key)).append('\n');
    }
  }

  static void setState(byte[] state) {
    boolean ok = true;
    try {
      ConsistentHashing.jumpBackAnchorHash(PseudoRandomGeneratorProvider.splitMix64_V1()).setState(state);
    } catch (IllegalArgumentException e) {
      ok = false;
    }
    out.append("setstate\t").append(hex(state)).append('\t').append(ok ? 1 : 0).append('\n');
  }

  static byte[] ints(int... v) {
    byte[] b = new byte[4 * v.length];
    for (int i = 0; i < v.length; i++) {
      for (int j = 0; j < 4; j++) b[4 * i + j] = (byte) (v[i] >>> (8 * j));
    }
    return b;
  }

  public static void main(String[] args) {
    // The shared sample's scenarios: 10 buckets, removals in several
    // orders, and a re-add after each.
    int[][] orders = {{}, {7}, {3, 7}, {7, 3}, {3, 7, 0}, {9}, {9, 8}, {0, 9, 8, 2}, {5, 5, 10, -1}};
    for (int[] order : orders) {
      String name = "add10";
      for (int b : order) name += "-rm" + b;
      ConsistentBucketSetHasher h = fresh(name);
      add(h, name, 10);
      for (int b : order) remove(h, name, b);
      observe(h, name, 16, 16);
      add(h, name, 1);
      observe(h, name, 0, 16);
    }
    // Random histories: removals of random buckets (some not working) and
    // additions, observed after every step.
    int[] sizes = {1, 2, 3, 5, 16, 100, 1000, 5000};
    for (int n : sizes) {
      String name = "random" + n;
      ConsistentBucketSetHasher h = fresh(name);
      add(h, name, n);
      observe(h, name, 4, 4);
      for (int step = 0; step < 24; step++) {
        long r = next();
        if (h.getNumBuckets() > 1 && (r & 3) != 0) {
          int[] bs = h.getBuckets();
          int b = (r & 0xF0) == 0 ? (int) ((r >>> 32) % (n + 2)) : bs[(int) ((r >>> 32) % bs.length)];
          remove(h, name, b);
        } else {
          add(h, name, 1 + (int) ((r >>> 8) & 1));
        }
        observe(h, name, 0, 6);
      }
    }
    // Most buckets removed in a random order, observed on the way.
    {
      String name = "drain200";
      ConsistentBucketSetHasher h = fresh(name);
      add(h, name, 200);
      int[] order = new int[200];
      for (int i = 0; i < 200; i++) order[i] = i;
      for (int i = 199; i > 0; i--) {
        int j = (int) Long.remainderUnsigned(next(), i + 1);
        int t = order[i]; order[i] = order[j]; order[j] = t;
      }
      for (int i = 0; i < 199; i++) {
        remove(h, name, order[i]);
        if (i == 19 || i == 99 || i == 179 || i == 198) observe(h, name, 8, 24);
      }
      remove(h, name, order[199]); // the last: the set starts afresh
      observe(h, name, 0, 0);
      add(h, name, 3);
      observe(h, name, 0, 8);
    }
    // hash4j's slow order: 0, then max-1 down to 2.
    {
      String name = "slow64";
      ConsistentBucketSetHasher h = fresh(name);
      add(h, name, 64);
      remove(h, name, 0);
      for (int b = 63; b >= 2; b--) remove(h, name, b);
      observe(h, name, 8, 24);
    }
    // States setState accepts and refuses.
    setState(ints(0));
    setState(ints(10));
    setState(ints(10, 3, 7));
    setState(ints(10, 10));
    setState(ints(10, -1));
    setState(ints(10, 3, 3));
    setState(ints(-1));
    setState(new byte[] {1, 0, 0});
    setState(new byte[] {});
    setState(new byte[] {10, 0, 0, 0, 1});
    setState(ints(3, 0, 1));
    System.out.print(out);
  }
}
