#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

// Swift Testing starts every test at once unless told otherwise. Hundreds of tests then share
// the two threads of Swift's cooperative pool, and a test's next step can wait minutes behind
// the others: a download paused "in the middle" has finished by then (CI failed so, 12 tests,
// on a loaded machine). Eight tests per CPU keep the machine busy (most tests wait on servers
// and processes) and a step's wait short. This runs when the test bundle loads, before Swift
// Testing reads its environment; a width set by the caller is kept.
__attribute__((constructor)) static void ctestsupport_bound_parallel_tests(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  char width[32];
  snprintf(width, sizeof width, "%ld", 8 * (cpus > 0 ? cpus : 1));
  setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}
