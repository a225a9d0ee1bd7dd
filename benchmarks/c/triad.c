/* A STREAM triad, a[i] = b[i] + s * c[i], timed in C as the reference for
 * benchmarks/timing.py. Written for this course after McCalpin's STREAM; it counts bytes
 * as STREAM does (three words per element, no write-allocate traffic) and reports the best
 * of its repeats in bytes per second on one line.
 *
 * Build: cc -O3 -march=native -fopenmp triad.c -o triad   (OpenMP optional)
 * Run:   ./triad N REPEATS
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000000L;
    int repeats = argc > 2 ? atoi(argv[2]) : 10;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory for n = %ld\n", n);
        return 1;
    }
#pragma omp parallel for
    for (long i = 0; i < n; i++) {
        a[i] = 1.0;
        b[i] = 2.0;
        c[i] = 0.5;
    }
    double best = 1e30, scalar = 3.0;
    for (int r = 0; r < repeats; r++) {
        double start = now();
#pragma omp parallel for
        for (long i = 0; i < n; i++) a[i] = b[i] + scalar * c[i];
        double elapsed = now() - start;
        if (elapsed < best) best = elapsed;
    }
    double checksum = 0;
    for (long i = 0; i < n; i += n / 16 + 1) checksum += a[i];
    printf("%.6e %.3f\n", 3.0 * sizeof(double) * n / best, checksum);
    free(a);
    free(b);
    free(c);
    return 0;
}
