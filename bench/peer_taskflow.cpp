// peer_taskflow: the Taskflow column of bench_exec (scheduling overhead, empty tasks).
//
// Not part of the library and never built by default: Taskflow is not a Debian package, so
// the bench takes it from the outside. Configure with -DAF_TASKFLOW_DIR=/path/to/taskflow (the
// directory holding taskflow/taskflow.hpp) to build this program, then give its path to
// bench_exec (--taskflow PATH or AF_TASKFLOW_PEER=PATH).
//
// Protocol: bench_exec writes one graph per run on stdin, the exact edge set its executor runs:
//   "<nodes> <edges> <threads> <rounds> <reps>" then <edges> lines "<from> <to>".
// This program builds a tf::Taskflow with one empty task per node and those edges, warms up
// with run_n(10), then per repetition measures run_n(rounds).wait() and prints one line
//   "cpu_ns_per_node <median over reps> wall_ns_per_node <median>"
// CPU time is the whole process's (CLOCK_PROCESS_CPUTIME_ID: every worker's spinning and
// sleeping included), the same clock bench_exec reads for arenaflow.
#include <taskflow/taskflow.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <vector>

static double now_ns(clockid_t c)
{
    timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main()
{
    long n, m, threads, rounds, reps;
    if (std::scanf("%ld %ld %ld %ld %ld", &n, &m, &threads, &rounds, &reps) != 5 || n < 1 ||
        m < 0 || threads < 1 || rounds < 1 || reps < 1 || reps > 100) {
        std::fprintf(stderr, "peer_taskflow: bad header on stdin\n");
        return 2;
    }
    tf::Executor ex((size_t)threads);
    tf::Taskflow flow;
    std::atomic<unsigned long long> calls{0};
    std::vector<tf::Task> task((size_t)n);
    for (long i = 0; i < n; i++)
        task[(size_t)i] = flow.emplace([&calls] { calls.fetch_add(1, std::memory_order_relaxed); });
    for (long e = 0; e < m; e++) {
        long a, b;
        if (std::scanf("%ld %ld", &a, &b) != 2 || a < 0 || a >= n || b < 0 || b >= n) {
            std::fprintf(stderr, "peer_taskflow: bad edge %ld\n", e);
            return 2;
        }
        task[(size_t)a].precede(task[(size_t)b]);
    }
    ex.run_n(flow, 10).wait();
    calls = 0;
    std::vector<double> cpu, wall;
    for (long r = 0; r < reps; r++) {
        double c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
        ex.run_n(flow, (size_t)rounds).wait();
        cpu.push_back((now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0) / ((double)rounds * (double)n));
        wall.push_back((now_ns(CLOCK_MONOTONIC) - w0) / ((double)rounds * (double)n));
    }
    if (calls.load() != (unsigned long long)(reps * rounds * n)) {
        std::fprintf(stderr, "peer_taskflow: %llu task calls, expected %ld\n", calls.load(),
                     reps * rounds * n);
        return 1;
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(wall.begin(), wall.end());
    std::printf("cpu_ns_per_node %.1f wall_ns_per_node %.1f\n", cpu[cpu.size() / 2],
                wall[wall.size() / 2]);
    return 0;
}
