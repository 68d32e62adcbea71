// The command line and the statistic shared by the CUDA micro-benchmarks.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The value of `--flag N` (N > 0), `fallback` without it; -1 after printing the usage
// for anything else.
inline int count_arg(int argc, char **argv, const char *flag, int fallback, const char *name)
{
    int n = fallback;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], flag) && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            n = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [%s N]  (N > 0)\n", name, flag);
            return -1;
        }
    }
    return n;
}

template <typename T> T median(std::vector<T> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
