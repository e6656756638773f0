"""The benchmark suite: matrix generators and sources, timing, baselines, records and the runner.

``clspmv bench`` (see :mod:`clspmv.cli`) drives :class:`clspmv.bench.runner.Runner`
over the baselines and operations of :mod:`clspmv.bench.registry`; everything it
measures becomes :class:`clspmv.bench.records.Record` objects, and :mod:`clspmv.report` turns
saved records into tables and plots.
"""
