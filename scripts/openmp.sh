# shellcheck shell=bash
# Sourced by setup.sh, test.sh and run.sh (never run): how OpenMP threads wait for work.
#
# torch's wheels use GNU OpenMP, whose idle threads spin for a while before they sleep. This
# project runs two CPU-heavy processes at once on small machines (the suite's two parts, set-up's
# classifier training beside the vLLM venv's install, the main job's judge beside LIBERO): a
# spinning thread holds a core the other process needs, and a 2-thread parallel region then waits
# for its descheduled thread at every barrier. PASSIVE makes idle threads sleep instead: the same
# threads and the same numbers; alone a process pays about 3%, within the noise (benchmark 17,
# benchmarks/bench_openmp_wait.py). A value set by the caller is kept.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
