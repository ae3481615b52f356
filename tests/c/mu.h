// tests/c/mu.h: a ten-line test harness (minunit style): failures print file:line and the check
// SPDX-License-Identifier: BSD-3-Clause
#ifndef MU_H
#define MU_H
#include <stdio.h>
#define mu_check(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)
#define mu_run(test)                                                                               \
    do {                                                                                           \
        int r_ = test();                                                                           \
        printf("%s %s\n", r_ ? "FAIL" : "ok  ", #test);                                            \
        failures += r_;                                                                            \
    } while (0)
#endif
