"""`tvmfork conformance`: cases the series was not written for, on stock TVM and on the fork.

Suites are data (`suites`), each case runs isolated in a worker process of its side
(`runner`, `worker`), and the report (`report`) names every regression: a case that works on
stock and not on the fork blocks a release.
"""
