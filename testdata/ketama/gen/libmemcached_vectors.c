/*
 * libmemcached_vectors prints reference placements computed by the system's
 * libmemcached (memcached_generate_hash), for chash's ketama tests. It needs
 * no memcached server: placement is computed from the server list alone.
 *
 * Build and run (Debian 12, libmemcached-dev 1.1.4-1):
 *   cc -O2 -o /tmp/lmv libmemcached_vectors.c -lmemcached
 *   /tmp/lmv > ../libmemcached.tsv
 *
 * Every set is configured as PHP's Memcached::OPT_LIBKETAMA_COMPATIBLE and
 * most C and Python clients configure "ketama": MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED
 * on, which also selects MD5 for keys and points. Sets whose name starts with
 * "S" then switch the distribution to MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY,
 * libmemcached's emulation of spymemcached's point strings ("/host:port-k").
 *
 * Output: "#set NAME SPEC..." lines (SPEC is host:port=weight, in the order
 * given to libmemcached), a header row, then one row per key: the key and,
 * for each set, the 0-based index of the chosen server in that set's list.
 */
#include <libmemcached/memcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS 10000
#define MAXSERVERS 128

struct server {
  char host[64];
  unsigned port, weight;
};

struct set {
  const char *name;
  int n;
  struct server s[MAXSERVERS];
  memcached_st *memc;
};

static void uniform(struct set *st, const char *name, int n, unsigned port) {
  st->name = name;
  st->n = n;
  for (int i = 0; i < n; i++) {
    snprintf(st->s[i].host, sizeof st->s[i].host, "10.0.0.%d", i + 1);
    st->s[i].port = port;
    st->s[i].weight = 1;
  }
}

static void build(struct set *st) {
  memcached_st *m = memcached_create(NULL);
  if (m == NULL) {
    fprintf(stderr, "memcached_create failed\n");
    exit(1);
  }
  if (memcached_behavior_set(m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1) != MEMCACHED_SUCCESS) {
    fprintf(stderr, "KETAMA_WEIGHTED failed\n");
    exit(1);
  }
  if (st->name[0] == 'S' &&
      memcached_behavior_set(m, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                             MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY) != MEMCACHED_SUCCESS) {
    fprintf(stderr, "KETAMA_SPY failed\n");
    exit(1);
  }
  for (int i = 0; i < st->n; i++) {
    memcached_return_t rc = memcached_server_add_with_weight(m, st->s[i].host, (in_port_t) st->s[i].port, st->s[i].weight);
    if (rc != MEMCACHED_SUCCESS) {
      fprintf(stderr, "%s: adding %s: %s\n", st->name, st->s[i].host, memcached_strerror(m, rc));
      exit(1);
    }
  }
  if (memcached_server_count(m) != (uint32_t) st->n) {
    fprintf(stderr, "%s: server count mismatch\n", st->name);
    exit(1);
  }
  st->memc = m;
}

int main(void) {
  static struct set sets[32];
  int ns = 0;
  static const unsigned w5[] = {1, 1, 2, 3, 5};
  static const unsigned w8[] = {1, 2, 3, 4, 5, 6, 7, 8};
  static const char *hosts8[] = {"cache-a.example.com", "cache-b.example.com", "cache-c.example.com",
                                 "cache-d.example.com", "cache-e.example.com", "cache-f.example.com",
                                 "cache-g.example.com", "cache-h.example.com"};

  uniform(&sets[ns++], "U3", 3, 11211);
  uniform(&sets[ns++], "U5", 5, 11211);
  uniform(&sets[ns++], "U10", 10, 11211);
  uniform(&sets[ns++], "U11", 11, 11211);
  uniform(&sets[ns++], "U25", 25, 11211);
  uniform(&sets[ns++], "U61", 61, 11211);
  uniform(&sets[ns++], "U100", 100, 11211);
  uniform(&sets[ns++], "P10", 10, 22122);

  /* U11 with its middle server, 10.0.0.6, removed. */
  uniform(&sets[ns], "R10", 11, 11211);
  memmove(&sets[ns].s[5], &sets[ns].s[6], 5 * sizeof(struct server));
  sets[ns++].n = 10;

  uniform(&sets[ns], "W5", 5, 11211);
  for (int i = 0; i < 5; i++) sets[ns].s[i].weight = w5[i];
  ns++;

  /* Host names, two ports, weights 1 to 8. */
  sets[ns].name = "W8";
  sets[ns].n = 8;
  for (int i = 0; i < 8; i++) {
    snprintf(sets[ns].s[i].host, sizeof sets[ns].s[i].host, "%s", hosts8[i]);
    sets[ns].s[i].port = i % 2 ? 11212 : 11211;
    sets[ns].s[i].weight = w8[i];
  }
  ns++;

  /* Non-default port: libmemcached then hashes "host:port-k", the string
   * libketama hashes, so these sets also check the libketama variant. */
  uniform(&sets[ns++], "Q3", 3, 22122);
  uniform(&sets[ns++], "Q5", 5, 22122);
  uniform(&sets[ns++], "Q11", 11, 22122);
  uniform(&sets[ns++], "Q25", 25, 22122);
  uniform(&sets[ns], "QR10", 11, 22122);
  memmove(&sets[ns].s[5], &sets[ns].s[6], 5 * sizeof(struct server));
  sets[ns++].n = 10;
  uniform(&sets[ns], "QW5", 5, 22122);
  for (int i = 0; i < 5; i++) sets[ns].s[i].weight = w5[i];
  ns++;

  uniform(&sets[ns++], "S3", 3, 11211);
  uniform(&sets[ns++], "S10", 10, 11211);
  uniform(&sets[ns], "SW5", 5, 11211);
  for (int i = 0; i < 5; i++) sets[ns].s[i].weight = w5[i];
  ns++;

  printf("# Placements computed by libmemcached %s (Debian package libmemcached-dev 1.1.4-1)\n",
         LIBMEMCACHED_VERSION_STRING);
  printf("# with testdata/ketama/gen/libmemcached_vectors.c: MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED,\n");
  printf("# MD5 keys and points; S* sets use MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY.\n");
  for (int i = 0; i < ns; i++) {
    build(&sets[i]);
    printf("#set %s", sets[i].name);
    for (int j = 0; j < sets[i].n; j++) {
      printf(" %s:%u=%u", sets[i].s[j].host, sets[i].s[j].port, sets[i].s[j].weight);
    }
    printf("\n");
  }
  printf("key");
  for (int i = 0; i < ns; i++) printf("\t%s", sets[i].name);
  printf("\n");
  for (int k = 0; k < NKEYS; k++) {
    char key[32];
    int len = snprintf(key, sizeof key, "key-%d", k);
    printf("%s", key);
    for (int i = 0; i < ns; i++) {
      printf("\t%u", memcached_generate_hash(sets[i].memc, key, (size_t) len));
    }
    printf("\n");
  }
  for (int i = 0; i < ns; i++) memcached_free(sets[i].memc);
  return 0;
}
