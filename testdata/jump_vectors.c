/*
 * Generates testdata/jump_vectors.txt, the reference outputs that
 * TestJumpHashVectors checks JumpHash against.
 *
 * JumpConsistentHash is the C++ function printed in Lamping and Veach,
 * "A Fast, Minimal Memory, Consistent Hash Algorithm" (arXiv:1406.2294,
 * 2014), figure 1, written here in C99.
 *
 * Regenerate with:
 *   gcc -O2 -std=c99 -o /tmp/jv testdata/jump_vectors.c && /tmp/jv > testdata/jump_vectors.txt
 */
#include <inttypes.h>
#include <stdio.h>

static int32_t JumpConsistentHash(uint64_t key, int32_t num_buckets) {
	int64_t b = -1, j = 0;
	while (j < num_buckets) {
		b = j;
		key = key * 2862933555777941757ULL + 1;
		j = (b + 1) * ((double)(1LL << 31) / (double)((key >> 33) + 1));
	}
	return b;
}

/* Keys come from a SplitMix64 stream, plus hand-picked edge values. */
static uint64_t state = 0;

static uint64_t next(void) {
	uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

int main(void) {
	static const int32_t buckets[] = {
		1, 2, 3, 5, 7, 8, 10, 11, 16, 64, 100, 127, 1000, 1024, 65536,
		1000003, 16777216, 2147483647,
	};
	static const uint64_t edge[] = {
		0, 1, 2, 3, 255, 256, 1ULL << 32, (1ULL << 63) - 1, 1ULL << 63,
		0xffffffffffffffffULL, 0xdeadbeefULL,
	};
	int nb = sizeof buckets / sizeof buckets[0];
	int ne = sizeof edge / sizeof edge[0];
	printf("# key buckets JumpConsistentHash(key, buckets), from jump_vectors.c (gcc 12.2, x86-64)\n");
	for (int i = 0; i < ne; i++)
		for (int j = 0; j < nb; j++)
			printf("%" PRIu64 " %" PRId32 " %" PRId32 "\n", edge[i], buckets[j],
			       JumpConsistentHash(edge[i], buckets[j]));
	for (int i = 0; i < 100; i++) {
		uint64_t k = next();
		for (int j = 0; j < nb; j++)
			printf("%" PRIu64 " %" PRId32 " %" PRId32 "\n", k, buckets[j],
			       JumpConsistentHash(k, buckets[j]));
	}
	/* Random bucket counts, small and large. */
	for (int i = 0; i < 200; i++) {
		uint64_t k = next();
		int32_t n = (int32_t)(next() % (i < 100 ? 5000 : 2147483647)) + 1;
		printf("%" PRIu64 " %" PRId32 " %" PRId32 "\n", k, n, JumpConsistentHash(k, n));
	}
	return 0;
}
