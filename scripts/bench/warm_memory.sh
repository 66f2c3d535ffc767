# Sourced by the benchmarks that time a process against a peer: warm_memory touches
# WARM_MEMORY_GB (default 6) of memory once and frees it, before the first trial. On a virtual
# machine the host may back guest memory only when it is first touched, and take idle memory back
# (this one: a kernel daemon pages out what has gone unused): a first touch there costs about
# 30 ms per 16 MB, against 2 ms for memory in use a moment before. A benchmark on a fresh machine
# would then time where each process found its memory, not its work: ipurun's 16 MB outputs of the
# 2048^3 MatMul took 28-40 ms each to stream out on cold memory, 2 ms warm, while numpy, run next,
# wrote its products into the pages ipurun had just freed.
warm_memory() {
  /usr/bin/python3 -c 'import sys, numpy; numpy.ones(int(float(sys.argv[1]) * 2**30), numpy.uint8)' \
    "${WARM_MEMORY_GB:-6}"
}
