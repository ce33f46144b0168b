"""The head-to-head benchmark suite: Tomii with every shipped scheduler against oneTBB, Rayon and
Dask on the same workloads and kernels (bench/README.md "Head-to-head"; run bench/suite/run.sh).

Modules: plan (what is measured), workloads (graphs and their task DAGs), runtimes (one run of
one runtime), pykernels (the Python-kernel comparison with Dask), metrics, records (the CSV),
report (the markdown), plots and environment. Nothing here is imported by the `tomii` package.
"""
