/* The cost of one random 4 KiB pread from the OS page cache, and of touching a random byte of
 * the same file through mmap: the floor under any read that leaves process memory
 * (docs/ARCHITECTURE.md, "Point reads when the table is larger than the caches").
 *
 *   cc -O2 scripts/pread_cost.c -o /tmp/pread_cost && /tmp/pread_cost [FILE]
 *
 * Writes a 1.3 GB scratch file (default ./pread_cost.tmp), reads it once so the page cache
 * holds it, times 1,000,000 preads of random 4 KiB blocks, then random byte reads through a
 * mapping, and deletes the file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static unsigned long long xorshift(unsigned long long *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "pread_cost.tmp";
  const size_t size = (size_t)1300 << 20, step = 1 << 20, n = 1000000;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  char *buf = aligned_alloc(4096, step);
  if (fd < 0 || !buf) { perror(path); return 1; }
  for (size_t i = 0; i < step; i++) buf[i] = (char)rand();
  for (size_t o = 0; o < size; o += step)
    if (pwrite(fd, buf, step, o) != (ssize_t)step) { perror("pwrite"); return 1; }
  fsync(fd);
  for (size_t o = 0; o < size; o += step) (void)pread(fd, buf, step, o);

  unsigned long long x = 88172645463325252ULL;
  long sum = 0;
  double t0 = now_ns();
  for (size_t i = 0; i < n; i++) {
    if (pread(fd, buf, 4096, (xorshift(&x) % (size / 4096)) * 4096) != 4096) { perror("pread"); return 1; }
    sum += buf[7];
  }
  printf("pread of a random 4 KiB block from the page cache: %.3f us\n", (now_ns() - t0) / n / 1000);

  const char *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) { perror("mmap"); return 1; }
  for (int pass = 1; pass <= 2; pass++) {
    t0 = now_ns();
    for (size_t i = 0; i < n; i++) sum += m[xorshift(&x) % size];
    printf("random byte through mmap, pass %d: %.3f us\n", pass, (now_ns() - t0) / n / 1000);
  }
  printf("(checksum %ld)\n", sum);
  unlink(path);
  return 0;
}
