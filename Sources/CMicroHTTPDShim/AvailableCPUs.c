#define _GNU_SOURCE
#include "CMicroHTTPDShim.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// The whole CPUs this process may use: the CPUs of its affinity mask (taskset, a container's --cpuset-cpus), at most
/// its cgroup v2 CPU quota rounded up (a container's --cpus), at least 1. The number of CPUs online
/// (_SC_NPROCESSORS_ONLN) counts the machine's, whatever the process is allowed.
int cmhd_available_cpus(void) {
    int count = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        count = CPU_COUNT(&set);
    }
    if (count <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        count = online > 0 ? (int)online : 1;
    }
    // cgroup v2: "max <period>" (no quota) or "<quota> <period>", in microseconds.
    FILE *file = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (file != NULL) {
        char quota[32];
        long period = 0;
        if (fscanf(file, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max") != 0 && period > 0) {
            long limit = (atol(quota) + period - 1) / period;
            if (limit >= 1 && limit < count) {
                count = (int)limit;
            }
        }
        fclose(file);
    }
    return count;
}
